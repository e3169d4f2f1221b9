"""Nominated pods: the two-pass predicate check of kube-scheduler's ``podFitsOnNode``.

A node where pods of equal or higher priority are nominated is checked twice: with them
as if running (the pod must not take the room set aside for them), then without them
(they may go elsewhere; affinity must hold without them). Lower-priority nominations
and the pod's own are ignored. Decisions go through the real engine (fast path and
plain path both), and leave the cluster as they found it.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import pytest

from builders import cluster, cluster_picture, decide, node, pod, policy
from policy_scheduler.engine.algorithm import Decision, Scheduler, check_node
from policy_scheduler.engine.cluster import ClusterState
from policy_scheduler.engine.compiler import compile_policy
from policy_scheduler.objects import parse_pod
from policy_scheduler.policy import parse_policy

FITS_AND_AFFINITY = policy(["PodFitsResources", "MatchInterPodAffinity"], [])
INSUFFICIENT_CPU = ["Insufficient cpu"]


def nominate(state: ClusterState, node_name: str, name: str, priority: int, **kw: Any) -> None:
    state.set_nominated(parse_pod(pod(name, priority=priority, **kw)), node_name)


def both_ways(raw: dict[str, Any], state: ClusterState, policy_obj: dict[str, Any]) -> Decision:
    """Decide on the fast and on the plain path: same answer, cluster untouched."""
    before = cluster_picture(state)
    fast_policy = compile_policy(parse_policy(policy_obj))
    plain_policy = replace(fast_policy, settings=replace(fast_policy.settings, fast=False))
    incoming = parse_pod(raw)
    fast = asyncio.run(Scheduler().schedule(incoming, state, fast_policy))
    plain = asyncio.run(Scheduler().schedule(incoming, state, plain_policy))
    assert (fast.node, fast.failed) == (plain.node, plain.failed)
    assert cluster_picture(state) == before
    return fast


@pytest.mark.parametrize(
    ("nominated_priority", "pod_priority", "refused"),
    [
        pytest.param(1000, 0, True, id="higher-nominated-keeps-its-room"),
        pytest.param(1000, 1000, True, id="equal-nominated-keeps-its-room"),
        pytest.param(0, 1000, False, id="lower-nominated-is-ignored"),
    ],
)
def test_nominated_pods_of_equal_or_higher_priority_count_as_running(
    nominated_priority: int, pod_priority: int, refused: bool
) -> None:
    state = cluster([node("n1", cpu="1"), node("n2", cpu="1")])
    nominate(state, "n1", "waiting", nominated_priority, requests={"cpu": "600m"})
    nominate(state, "n2", "waiting-too", nominated_priority, requests={"cpu": "600m"})
    decision = both_ways(
        pod("p", priority=pod_priority, requests={"cpu": "600m"}),
        state,
        policy(["PodFitsResources"], []),
    )
    if refused:
        assert decision.node is None
        assert decision.failed == {"n1": INSUFFICIENT_CPU, "n2": INSUFFICIENT_CPU}
    else:
        assert decision.node is not None


@pytest.mark.parametrize(
    ("check_all", "reasons"),
    [
        pytest.param(False, INSUFFICIENT_CPU, id="first-rejection-stops"),
        pytest.param(
            True, [*INSUFFICIENT_CPU, "node(s) didn't match node selector"], id="check-all"
        ),
    ],
)
def test_a_nodes_checks_stop_at_its_first_rejection_unless_all_are_asked_for(
    check_all: bool, reasons: list[str]
) -> None:
    # n1 holds a nominated pod (the first of the two passes), n2 does not (the ordinary
    # check): on both, too little cpu and no matching label; Filter's rule on both paths.
    state = cluster([node("n1", cpu="1"), node("n2", cpu="500m"), node("n3", labels={"d": "s"})])
    nominate(state, "n1", "waiting", 1000, requests={"cpu": "600m"})
    decision = both_ways(
        pod("p", priority=0, requests={"cpu": "600m"}, node_selector={"d": "s"}),
        state,
        policy(["PodFitsResources", "MatchNodeSelector"], [], alwaysCheckAllPredicates=check_all),
    )
    assert decision.node == "n3"
    assert decision.failed == {"n1": reasons, "n2": reasons}


def test_the_pods_own_nomination_does_not_stand_in_its_way() -> None:
    state = cluster([node("n1", cpu="1")])
    raw = pod("p", priority=1000, requests={"cpu": "600m"})
    state.set_nominated(parse_pod(raw), "n1")
    assert decide(raw, state, policy(["PodFitsResources"], [])).node == "n1"


def test_only_the_nominated_node_is_taken() -> None:
    state = cluster([node("n1", cpu="1"), node("n2", cpu="1")])
    nominate(state, "n1", "waiting", 1000, requests={"cpu": "600m"})
    decision = both_ways(
        pod("p", priority=0, requests={"cpu": "600m"}), state, policy(["PodFitsResources"], [])
    )
    assert decision.node == "n2"
    assert decision.failed == {"n1": INSUFFICIENT_CPU}


def test_affinity_must_hold_without_the_nominated_pods_too() -> None:
    # Only the nominated pod is a "db": the first pass (with it) passes on n1, the
    # second (without it) fails, so the pod waits.
    state = cluster([node("n1"), node("n2")])
    nominate(state, "n1", "db", 1000, labels={"app": "db"})
    near_db = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"app": "db"}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }
    decision = both_ways(pod("web", priority=0, affinity=near_db), state, FITS_AND_AFFINITY)
    assert decision.node is None
    affinity_failed = [
        "node(s) didn't match pod affinity/anti-affinity",
        "node(s) didn't match pod affinity rules",
    ]
    assert decision.failed == {"n1": affinity_failed, "n2": affinity_failed}


def test_a_nominated_pods_anti_affinity_is_respected_in_the_first_pass() -> None:
    state = cluster([node("n1"), node("n2")])
    no_web_here = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"app": "web"}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }
    nominate(state, "n1", "loner", 1000, affinity=no_web_here)
    decision = both_ways(pod("web", priority=0, labels={"app": "web"}), state, FITS_AND_AFFINITY)
    assert decision.node == "n2"
    assert decision.failed == {
        "n1": [
            "node(s) didn't match pod affinity/anti-affinity",
            "node(s) didn't satisfy existing pods anti-affinity rules",
        ]
    }


def test_the_recheck_after_the_snapshot_counts_nominations() -> None:
    state = cluster([node("n1", cpu="1")])
    compiled = compile_policy(parse_policy(policy(["PodFitsResources"], [])))
    incoming = parse_pod(pod("p", priority=0, requests={"cpu": "600m"}))
    assert check_node(incoming, state, compiled, "n1") == []
    nominate(state, "n1", "waiting", 1000, requests={"cpu": "600m"})
    assert check_node(incoming, state, compiled, "n1") == INSUFFICIENT_CPU
    assert check_node(replace(incoming, priority=2000), state, compiled, "n1") == []


def test_a_stale_nomination_of_a_placed_pod_changes_nothing() -> None:
    # The nomination of a pod since bound elsewhere must not move nor duplicate it.
    state = cluster([node("n1", cpu="1"), node("n2", cpu="1")])
    bound = parse_pod(pod("bound", priority=1000, requests={"cpu": "600m"}, node_name="n2"))
    state.add_pod(bound)
    state.set_nominated(replace(bound, node_name=""), "n1")
    before = cluster_picture(state)
    decision = decide(pod("p", requests={"cpu": "600m"}), state, policy(["PodFitsResources"], []))
    assert decision.node == "n1"
    assert cluster_picture(state) == before
