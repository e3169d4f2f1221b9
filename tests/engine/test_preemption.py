"""Preemption through the engine API, ported from kube-scheduler's legacy tables.

``pkg/scheduler/core/generic_scheduler_test.go`` (v1.16-v1.18): TestSelectNodesForPreemption
(victims per node), TestPickOneNodeForPreemption (which node), TestNodesWherePreemptionMightHelp
(which failures removing pods cannot cure) and TestPreempt (the whole of ``Preempt``);
the ids name the upstream case. Upstream's fixtures are kept: nodes of 5 CPUs (500m for
the node-picking table) and 5 x 200Mi of memory; containers small (100m, 200Mi), medium,
large and very large (2x, 3x, 5x); priorities -100, 0, 100, 1000, 10000; upstream's fake
predicates (always false, always true, "pod name equals node name") are predicates of a
CompiledPolicy here too.

Victims are compared as lists, most important first (the order preemption reports);
upstream compared sets and checked the priority order. Every evaluation must leave the
cluster exactly as it found it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import pytest

from builders import cluster, cluster_picture, node, pod
from builders import pod_disruption_budget as budget
from policy_scheduler.engine.cluster import ClusterState
from policy_scheduler.engine.compiler import (
    CompiledPolicy,
    CompiledPredicate,
    compile_policy,
)
from policy_scheduler.engine.functions import CycleState, PolicySettings, Reasons
from policy_scheduler.engine.nodeinfo import NodeInfo
from policy_scheduler.engine.preemption import (
    UNRESOLVABLE_REASONS,
    Preemption,
    Victims,
    nodes_where_preemption_might_help,
    pdb_violation_split,
    pick_one_node_for_preemption,
    preempt,
    select_nodes_for_preemption,
)
from policy_scheduler.objects import Pod, parse_pod, parse_pod_disruption_budget
from policy_scheduler.policy import parse_policy

SMALL = {"cpu": "100m", "memory": "200Mi"}
MEDIUM = {"cpu": "200m", "memory": "400Mi"}
LARGE = {"cpu": "300m", "memory": "600Mi"}
VERY_LARGE = {"cpu": "500m", "memory": "1000Mi"}
NEG, LOW, MID, HIGH, VERY_HIGH = -100, 0, 100, 1000, 10000
START = "2019-01-01T01:01:01Z"


def day(n: int) -> str:
    return f"2019-01-0{n}T01:01:01Z"


def placed(
    name: str,
    node_name: str,
    priority: int,
    requests: Mapping[str, str] | None = None,
    *,
    start: str | None = None,
    labels: Mapping[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A running pod as upstream's tables write them (uid = name)."""
    obj = pod(
        name, node_name=node_name, priority=priority, requests=requests, labels=labels, **spec
    )
    obj["metadata"]["uid"] = name
    obj["status"] = {"phase": "Running"}
    if start is not None:
        obj["status"]["startTime"] = start
    return obj


def incoming(
    name: str, priority: int, requests: Mapping[str, str] | None = None, **spec: Any
) -> Pod:
    obj = pod(name, priority=priority, requests=requests, **spec)
    obj["metadata"]["uid"] = name
    return parse_pod(obj)


def machines(*names: str, cpu: str = "5") -> list[dict[str, Any]]:
    """Upstream's nodes: "name/zone/region" becomes the labels hostname, zone, region."""
    out = []
    for spec in names:
        parts = spec.split("/")
        labels = dict(zip(("hostname", "zone", "region"), parts, strict=False))
        out.append(node(parts[0], cpu=cpu, memory="1000Mi", pods=100, labels=labels))
    return out


def fake(name: str, fn: Callable[[Pod, NodeInfo, CycleState], Reasons]) -> CompiledPolicy:
    return CompiledPolicy(
        name="fake",
        scheduler_name="policy-scheduler",
        predicates=(CompiledPredicate(name, fn),),
        priorities=(),
        always_check_all_predicates=False,
        percentage_of_nodes_to_score=0,
        settings=PolicySettings(),
    )


FALSE = fake("false", lambda pod, info, cycle: ("fake predicate",))
TRUE = fake("true", lambda pod, info, cycle: ())
MATCHES = fake("matches", lambda pod, info, cycle: () if pod.name == info.name else ("no match",))


def named(*predicates: str) -> CompiledPolicy:
    return compile_policy(
        parse_policy(
            {
                "apiVersion": "policyscheduler.io/v1alpha1",
                "kind": "SchedulingPolicy",
                "metadata": {"name": "test"},
                "spec": {"predicates": [{"name": n} for n in predicates], "priorities": []},
            }
        )
    )


FITS = named("PodFitsResources")


def victims_by_node(found: Mapping[str, Victims]) -> dict[str, list[str]]:
    return {name: [p.name for p in victims.pods] for name, victims in found.items()}


async def select(
    preemptor: Pod, state: ClusterState, policy: CompiledPolicy
) -> dict[str, list[str]]:
    before = cluster_picture(state)
    found = await select_nodes_for_preemption(preemptor, state, policy, state.ordered_nodes())
    assert cluster_picture(state) == before, "the evaluation changed the cluster"
    return victims_by_node(found)


# -- TestSelectNodesForPreemption ---------------------------------------------------------

ANTI_AFFINITY_TO_PREEMPTOR = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "labelSelector": {
                    "matchExpressions": [
                        {"key": "pod", "operator": "In", "values": ["preemptor", "value2"]}
                    ]
                },
                "topologyKey": "hostname",
            }
        ]
    }
}


def spread_on(*keys: str) -> list[dict[str, Any]]:
    return [
        {
            "maxSkew": 1,
            "topologyKey": key,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchExpressions": [{"key": "foo", "operator": "Exists"}]},
        }
        for key in keys
    ]


SPREAD_PODS = [
    placed("pod-a1", "node-a", MID, labels={"foo": ""}),
    placed("pod-a2", "node-a", LOW, labels={"foo": ""}),
    placed("pod-b1", "node-b", LOW, labels={"foo": ""}),
    placed("pod-x1", "node-x", HIGH, labels={"foo": ""}),
    placed("pod-x2", "node-x", HIGH, labels={"foo": ""}),
]
SPREAD_NODES = ("node-a/zone1", "node-b/zone1", "node-x/zone2")


@pytest.mark.parametrize(
    ("policy", "nodes", "preemptor", "pods", "expected"),
    [
        pytest.param(
            FALSE,
            ("machine1", "machine2"),
            incoming("new", HIGH),
            [placed("a", "machine1", MID), placed("b", "machine2", MID)],
            {},
            id="a pod that does not fit on any machine",
        ),
        pytest.param(
            TRUE,
            ("machine1", "machine2"),
            incoming("new", HIGH),
            [placed("a", "machine1", MID), placed("b", "machine2", MID)],
            {"machine1": [], "machine2": []},
            id="a pod that fits with no preemption",
        ),
        pytest.param(
            MATCHES,
            ("machine1", "machine2"),
            incoming("machine1", HIGH),
            [placed("a", "machine1", MID), placed("b", "machine2", MID)],
            {"machine1": []},
            id="a pod that fits on one machine with no preemption",
        ),
        pytest.param(
            FITS,
            ("machine1", "machine2"),
            incoming("machine1", HIGH, LARGE),
            [placed("a", "machine1", MID, LARGE), placed("b", "machine2", MID, LARGE)],
            {"machine1": ["a"], "machine2": ["b"]},
            id="a pod that fits on both machines when lower priority pods are preempted",
        ),
        pytest.param(
            FITS,
            ("machine1", "machine2"),
            incoming("machine1", LOW, LARGE),
            [placed("a", "machine1", MID, LARGE), placed("b", "machine2", MID, LARGE)],
            {},
            id="a pod that would fit on the machines, but other pods running are higher priority",
        ),
        pytest.param(
            FITS,
            ("machine1", "machine2"),
            incoming("machine1", HIGH, LARGE),
            [
                placed("a", "machine1", LOW, SMALL),
                placed("b", "machine1", MID, LARGE),
                placed("c", "machine2", MID, LARGE),
            ],
            {"machine1": ["b"], "machine2": ["c"]},
            id="medium priority pod is preempted, but lower priority one stays as it is small",
        ),
        pytest.param(
            FITS,
            ("machine1", "machine2"),
            incoming("machine1", HIGH, LARGE),
            [
                placed("a", "machine1", MID, SMALL),
                placed("b", "machine1", LOW, SMALL),
                placed("c", "machine1", MID, MEDIUM),
                placed("d", "machine1", HIGH, SMALL),
                placed("e", "machine2", HIGH, LARGE),
            ],
            {"machine1": ["c", "b"]},
            id="mixed priority pods are preempted",
        ),
        pytest.param(
            FITS,
            ("machine1", "machine2"),
            incoming("machine1", HIGH, LARGE),
            [
                placed("a", "machine1", LOW, SMALL, start=day(7)),
                placed("b", "machine1", LOW, SMALL, start=day(6)),
                placed("c", "machine1", MID, MEDIUM, start=day(5)),
                placed("d", "machine1", HIGH, SMALL, start=day(4)),
                placed("e", "machine2", HIGH, LARGE, start=day(3)),
            ],
            {"machine1": ["c", "a"]},
            id="mixed priority pods are preempted, pick later StartTime one when priorities are "
            "equal",
        ),
        pytest.param(
            named("PodFitsResources", "MatchInterPodAffinity"),
            ("machine1", "machine2"),
            incoming("machine1", HIGH, SMALL, labels={"pod": "preemptor"}),
            [
                placed(
                    "a",
                    "machine1",
                    LOW,
                    SMALL,
                    labels={"service": "securityscan"},
                    affinity=ANTI_AFFINITY_TO_PREEMPTOR,
                ),
                placed("b", "machine1", MID, SMALL),
                placed("d", "machine1", HIGH, SMALL),
                placed("e", "machine2", HIGH, LARGE),
            ],
            {"machine1": ["a"], "machine2": []},
            id="pod with anti-affinity is preempted",
        ),
        pytest.param(
            named("EvenPodsSpread"),
            SPREAD_NODES,
            incoming("p", HIGH, labels={"foo": ""}, spread=spread_on("zone", "hostname")),
            SPREAD_PODS,
            {"node-a": ["pod-a2"], "node-b": ["pod-b1"]},
            id="preemption to resolve even pods spread FitError",
        ),
    ],
)
async def test_select_nodes_for_preemption(
    policy: CompiledPolicy,
    nodes: Sequence[str],
    preemptor: Pod,
    pods: list[dict[str, Any]],
    expected: dict[str, list[str]],
) -> None:
    state = cluster(machines(*nodes), pods)
    assert await select(preemptor, state, policy) == expected


# -- TestPickOneNodeForPreemption ----------------------------------------------------------


def at(name: str, node_name: str, priority: int, requests: Mapping[str, str], start: str = START):
    return placed(name, node_name, priority, requests, start=start)


@pytest.mark.parametrize(
    ("nodes", "preemptor", "pods", "expected"),
    [
        pytest.param(
            ("machine1",),
            incoming("machine1", HIGH, LARGE),
            [at("m1.1", "machine1", MID, SMALL)],
            "machine1",
            id="No node needs preemption",
        ),
        pytest.param(
            ("machine1", "machine2"),
            incoming("machine1", HIGH, LARGE),
            [at("m1.1", "machine1", MID, LARGE), at("m2.1", "machine2", MID, LARGE)],
            # Upstream accepts either; the first in node order is ours.
            "machine1",
            id="a pod that fits on both machines when lower priority pods are preempted",
        ),
        pytest.param(
            ("machine1", "machine2", "machine3"),
            incoming("machine1", HIGH, LARGE),
            [at("m1.1", "machine1", MID, LARGE), at("m2.1", "machine2", MID, LARGE)],
            "machine3",
            id="a pod that fits on a machine with no preemption",
        ),
        pytest.param(
            ("machine1", "machine2", "machine3"),
            incoming("machine1", HIGH, VERY_LARGE),
            [
                at("m1.1", "machine1", MID, MEDIUM),
                at("m1.2", "machine1", MID, LARGE),
                at("m2.1", "machine2", MID, MEDIUM),
                at("m2.2", "machine2", LOW, MEDIUM),
                at("m3.1", "machine3", LOW, MEDIUM),
                at("m3.2", "machine3", LOW, MEDIUM),
            ],
            "machine3",
            id="machine with min highest priority pod is picked",
        ),
        pytest.param(
            ("machine1", "machine2", "machine3"),
            incoming("machine1", HIGH, VERY_LARGE),
            [
                at("m1.1", "machine1", MID, MEDIUM),
                at("m1.2", "machine1", MID, LARGE),
                at("m2.1", "machine2", MID, LARGE),
                at("m2.2", "machine2", LOW, MEDIUM),
                at("m3.1", "machine3", MID, MEDIUM),
                at("m3.2", "machine3", MID, MEDIUM),
            ],
            "machine2",
            id="when highest priorities are the same, minimum sum of priorities is picked",
        ),
        pytest.param(
            ("machine1", "machine2", "machine3"),
            incoming("machine1", HIGH, VERY_LARGE),
            [
                at("m1.1", "machine1", MID, SMALL),
                at("m1.2", "machine1", NEG, SMALL),
                at("m1.3", "machine1", MID, SMALL),
                at("m1.4", "machine1", NEG, SMALL),
                at("m2.1", "machine2", MID, LARGE),
                at("m2.2", "machine2", NEG, MEDIUM),
                at("m3.1", "machine3", MID, MEDIUM),
                at("m3.2", "machine3", NEG, SMALL),
                at("m3.3", "machine3", LOW, SMALL),
            ],
            "machine2",
            id="when highest priority and sum are the same, minimum number of pods is picked",
        ),
        pytest.param(
            ("machine1", "machine2", "machine3"),
            incoming("machine1", HIGH, VERY_LARGE),
            [
                at("m1.1", "machine1", MID, SMALL),
                at("m1.2", "machine1", NEG, SMALL),
                at("m1.3", "machine1", NEG, SMALL),
                at("m2.1", "machine2", MID, LARGE),
                at("m2.2", "machine2", NEG, MEDIUM),
                at("m3.1", "machine3", MID, MEDIUM),
                at("m3.2", "machine3", NEG, SMALL),
                at("m3.3", "machine3", LOW, SMALL),
            ],
            "machine2",
            id="sum of adjusted priorities is considered",
        ),
        pytest.param(
            ("machine1", "machine2", "machine3", "machine4"),
            incoming("pod1", VERY_HIGH, VERY_LARGE),
            [
                at("m1.1", "machine1", MID, SMALL),
                at("m1.2", "machine1", LOW, SMALL),
                at("m1.3", "machine1", LOW, SMALL),
                at("m2.1", "machine2", HIGH, LARGE),
                at("m3.1", "machine3", MID, MEDIUM),
                at("m3.2", "machine3", LOW, SMALL),
                at("m3.3", "machine3", LOW, SMALL),
                at("m3.4", "machine3", LOW, MEDIUM),
                at("m4.1", "machine4", MID, MEDIUM),
                at("m4.2", "machine4", MID, SMALL),
                at("m4.3", "machine4", MID, SMALL),
                at("m4.4", "machine4", NEG, SMALL),
            ],
            "machine1",
            id="non-overlapping lowest high priority, sum priorities, and number of pods",
        ),
        pytest.param(
            ("machine1", "machine2", "machine3"),
            incoming("machine1", HIGH, VERY_LARGE),
            [
                at("m1.1", "machine1", MID, MEDIUM, day(3)),
                at("m1.2", "machine1", MID, MEDIUM, day(3)),
                at("m2.1", "machine2", MID, MEDIUM, day(4)),
                at("m2.2", "machine2", MID, MEDIUM, day(4)),
                at("m3.1", "machine3", MID, MEDIUM, day(2)),
                at("m3.2", "machine3", MID, MEDIUM, day(2)),
            ],
            "machine2",
            id="same priority, same number of victims, different start time for each machine's pod",
        ),
        pytest.param(
            ("machine1", "machine2", "machine3"),
            incoming("machine1", HIGH, VERY_LARGE),
            [
                at("m1.1", "machine1", MID, MEDIUM, day(5)),
                at("m1.2", "machine1", MID, MEDIUM, day(3)),
                at("m2.1", "machine2", MID, MEDIUM, day(6)),
                at("m2.2", "machine2", MID, MEDIUM, day(2)),
                at("m3.1", "machine3", MID, MEDIUM, day(4)),
                at("m3.2", "machine3", MID, MEDIUM, day(7)),
            ],
            "machine3",
            id="same priority, same number of victims, different start time for all pods",
        ),
        pytest.param(
            ("machine1", "machine2", "machine3"),
            incoming("machine1", HIGH, VERY_LARGE),
            [
                at("m1.1", "machine1", LOW, MEDIUM, day(5)),
                at("m1.2", "machine1", MID, MEDIUM, day(3)),
                at("m2.1", "machine2", MID, MEDIUM, day(7)),
                at("m2.2", "machine2", LOW, MEDIUM, day(2)),
                at("m3.1", "machine3", LOW, MEDIUM, day(4)),
                at("m3.2", "machine3", MID, MEDIUM, day(6)),
            ],
            "machine2",
            id="different priority, same number of victims, different start time for all pods",
        ),
    ],
)
async def test_pick_one_node_for_preemption(
    nodes: Sequence[str], preemptor: Pod, pods: list[dict[str, Any]], expected: str
) -> None:
    # Upstream's node-picking table uses 500m nodes: CPU binds as much as memory.
    state = cluster(machines(*nodes, cpu="500m"), pods)
    candidates = await select_nodes_for_preemption(preemptor, state, FITS, state.ordered_nodes())
    assert pick_one_node_for_preemption(candidates) == expected


def test_no_candidate_no_node() -> None:
    assert pick_one_node_for_preemption({}) is None


# -- TestNodesWherePreemptionMightHelp -----------------------------------------------------

AFFINITY_OR_ANTI = "node(s) didn't match pod affinity/anti-affinity"
AFFINITY_RULES = "node(s) didn't match pod affinity rules"
HOSTNAME = "node(s) didn't match the requested hostname"
SELECTOR = "node(s) didn't match node selector"
TAINTS = "node(s) had taints that the pod didn't tolerate"
LABELS = "node(s) didn't have the requested labels"
SPREAD = "node(s) didn't match pod topology spread constraints"


@pytest.mark.parametrize(
    ("failed", "expected"),
    [
        pytest.param(
            {"machine1": [SELECTOR], "machine2": [HOSTNAME], "machine3": [TAINTS]}
            | {"machine4": [LABELS]},
            [],
            id="No node should be attempted",
        ),
        pytest.param(
            {
                "machine1": [AFFINITY_OR_ANTI],
                "machine2": [HOSTNAME],
                "machine3": ["node(s) were unschedulable"],
            },
            ["machine1", "machine4"],
            id="ErrPodAffinityNotMatch should be tried as it indicates that the pod is "
            "unschedulable due to inter-pod affinity or anti-affinity",
        ),
        pytest.param(
            {"machine1": [AFFINITY_OR_ANTI], "machine2": [HOSTNAME]},
            ["machine1", "machine3", "machine4"],
            id="pod with both pod affinity and anti-affinity should be tried",
        ),
        pytest.param(
            {"machine1": [AFFINITY_RULES], "machine2": [AFFINITY_OR_ANTI]},
            ["machine2", "machine3", "machine4"],
            id="ErrPodAffinityRulesNotMatch should not be tried as it indicates that the pod is "
            "unschedulable due to inter-pod affinity, but ErrPodAffinityNotMatch should be tried",
        ),
        pytest.param(
            {
                "machine1": [SELECTOR, "node(s) had disk pressure", "Insufficient memory"],
                "machine2": [HOSTNAME, "node(s) had no available disk"],
                "machine3": ["Insufficient memory"],
                "machine4": [],
            },
            ["machine3", "machine4"],
            id="Mix of failed predicates works fine",
        ),
        pytest.param(
            {
                "machine1": ["node(s) had disk pressure"],
                "machine2": ["node(s) had pid pressure"],
                "machine3": ["node(s) had memory pressure"],
            },
            ["machine4"],
            id="Node condition errors should be considered unresolvable",
        ),
        pytest.param(
            {
                "machine1": ["node(s) were not ready"],
                "machine2": ["node(s) had unavailable network"],
                "machine3": ["node(s) had unknown conditions"],
            },
            ["machine4"],
            id="Node condition errors and ErrNodeUnknownCondition should be considered "
            "unresolvable",
        ),
        pytest.param(
            {
                "machine1": ["node(s) had no available volume zone"],
                "machine2": ["node(s) had volume node affinity conflict"],
                "machine3": ["node(s) didn't find available persistent volumes to bind"],
            },
            ["machine4"],
            id="ErrVolume... errors should not be tried as it indicates that the pod is "
            "unschedulable due to no matching volumes for pod on node",
        ),
        pytest.param(
            {"machine1": [SPREAD], "machine2": [HOSTNAME], "machine3": [SPREAD]},
            ["machine1", "machine3", "machine4"],
            id="ErrTopologySpreadConstraintsNotMatch should be tried as it indicates that the pod "
            "is unschedulable due to topology spread constraints",
        ),
        pytest.param(
            {
                "machine1": [AFFINITY_OR_ANTI, "node(s) didn't match pod anti-affinity rules"],
                "machine2": [
                    AFFINITY_OR_ANTI,
                    "node(s) didn't satisfy existing pods anti-affinity rules",
                ],
                "machine3": [AFFINITY_OR_ANTI, AFFINITY_RULES],
            },
            ["machine1", "machine2", "machine4"],
            id="anti-affinity failures as the predicate reports them are resolvable, affinity not",
        ),
    ],
)
def test_nodes_where_preemption_might_help(
    failed: dict[str, list[str]], expected: list[str]
) -> None:
    state = cluster(machines("machine1", "machine2", "machine3", "machine4"))
    found = nodes_where_preemption_might_help(state.ordered_nodes(), failed)
    assert [info.name for info in found] == expected


def test_every_unresolvable_reason_is_one_a_predicate_or_upstream_says() -> None:
    # A typo here would silently turn a hopeless node into a preemption candidate.
    assert len(UNRESOLVABLE_REASONS) == 15
    assert all(reason.startswith("node(s) ") for reason in UNRESOLVABLE_REASONS)


# -- TestPreempt -----------------------------------------------------------------------------

DEFAULT_FAILED = {
    "machine1": ["Insufficient memory"],
    "machine2": ["node(s) had no available disk"],
    "machine3": ["Insufficient memory"],
}


def basic_pods() -> list[dict[str, Any]]:
    return [
        placed("m1.1", "machine1", LOW, SMALL),
        placed("m1.2", "machine1", LOW, SMALL),
        placed("m2.1", "machine2", HIGH, LARGE),
        placed("m3.1", "machine3", MID, MEDIUM),
    ]


def extender_pods() -> list[dict[str, Any]]:
    return [
        placed("m1.1", "machine1", MID, SMALL),
        placed("m1.2", "machine1", LOW, SMALL),
        placed("m2.1", "machine2", MID, LARGE),
    ]


Hook = Callable[[Pod, dict[str, Victims]], Any]


def keep_only(*names: str) -> Hook:
    """An extender's preempt verb that allows only these nodes (upstream's FakeExtender)."""

    async def process(pod: Pod, candidates: dict[str, Victims]) -> dict[str, Victims]:
        return {name: v for name, v in candidates.items() if name in names}

    return process


PREEMPTOR = {"priority": HIGH, "requests": VERY_LARGE}


@pytest.mark.parametrize(
    ("preemptor", "pods", "hook", "expected_node", "expected_victims"),
    [
        pytest.param(
            incoming("pod1", preemptionPolicy="PreemptLowerPriority", **PREEMPTOR),
            basic_pods(),
            None,
            "machine1",
            ["m1.1", "m1.2"],
            id="basic preemption logic",
        ),
        pytest.param(
            incoming("pod1", preemptionPolicy="PreemptLowerPriority", **PREEMPTOR),
            basic_pods()[:3],
            None,
            "machine3",
            [],
            id="One node doesn't need any preemption",
        ),
        pytest.param(
            incoming("pod1", **PREEMPTOR),
            extender_pods(),
            keep_only("machine1"),
            "machine1",
            ["m1.1", "m1.2"],
            id="Scheduler extenders allow only machine1, otherwise machine3 would have been chosen",
        ),
        pytest.param(
            incoming("pod1", **PREEMPTOR),
            extender_pods(),
            keep_only(),
            None,
            [],
            id="Scheduler extenders do not allow any preemption",
        ),
        pytest.param(
            incoming("pod1", preemptionPolicy="Never", **PREEMPTOR),
            basic_pods(),
            None,
            None,
            [],
            id="no preempting in pod",
        ),
        pytest.param(
            incoming("pod1", **PREEMPTOR),
            basic_pods(),
            None,
            "machine1",
            ["m1.1", "m1.2"],
            id="PreemptionPolicy is nil",
        ),
    ],
)
async def test_preempt(
    preemptor: Pod,
    pods: list[dict[str, Any]],
    hook: Hook | None,
    expected_node: str | None,
    expected_victims: list[str],
) -> None:
    state = cluster(machines("machine1", "machine2", "machine3"), pods)
    before = cluster_picture(state)
    result = await preempt(preemptor, state, FITS, DEFAULT_FAILED, process=hook)
    assert cluster_picture(state) == before
    assert result.node == expected_node
    assert [victim.name for victim in result.victims] == expected_victims
    if result.node is None:
        return
    # Upstream then marks the victims terminating and the pod nominated: it must not
    # preempt any more while they are on their way out.
    for victim in result.victims:
        state.add_pod(replace(victim, deleting=True))
    state.set_nominated(preemptor, result.node)
    again = await preempt(preemptor, state, FITS, DEFAULT_FAILED, process=hook)
    assert again.node is None or not again.victims


async def test_preempt_for_topology_spread_constraints() -> None:
    pods = [
        placed("pod-a1", "node-a", HIGH, labels={"foo": ""}),
        placed("pod-a2", "node-a", HIGH, labels={"foo": ""}),
        placed("pod-b1", "node-b", LOW, labels={"foo": ""}),
        placed("pod-x1", "node-x", HIGH, labels={"foo": ""}),
        placed("pod-x2", "node-x", HIGH, labels={"foo": ""}),
    ]
    state = cluster(machines(*SPREAD_NODES), pods)
    preemptor = incoming("p", HIGH, labels={"foo": ""}, spread=spread_on("zone", "hostname"))
    failed = {name: [SPREAD] for name in ("node-a", "node-b", "node-x")}
    result = await preempt(preemptor, state, named("EvenPodsSpread"), failed)
    assert (result.node, [v.name for v in result.victims]) == ("node-b", ["pod-b1"])


# -- eligibility, nominations, budgets ---------------------------------------------------------


async def test_a_pod_with_a_terminating_victim_on_its_nominated_node_does_not_preempt_again() -> (
    None
):
    terminating = placed("old", "machine1", LOW, LARGE)
    terminating["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    state = cluster(
        machines("machine1", "machine2"), [terminating, placed("b", "machine2", LOW, LARGE)]
    )
    preemptor = incoming("pod1", HIGH, LARGE)
    state.set_nominated(preemptor, "machine1")
    result = await preempt(preemptor, state, FITS, {})
    assert result.node is None
    assert 'nominated to node "machine1"' in result.reason
    # Not nominated: it may (and, as upstream's legacy code, counts a terminating pod
    # among the possible victims).
    state.remove_nominated(preemptor.uid)
    assert decision_of(await preempt(preemptor, state, FITS, {})) == ("machine1", ["old"])


async def test_no_node_might_help_clears_the_pods_own_nomination() -> None:
    state = cluster(machines("machine1"), [placed("a", "machine1", LOW, LARGE)])
    preemptor = incoming("pod1", HIGH, LARGE)
    unresolvable = {"machine1": [SELECTOR]}
    assert (await preempt(preemptor, state, FITS, unresolvable)).clear == ()
    state.set_nominated(preemptor, "machine1")
    result = await preempt(preemptor, state, FITS, unresolvable)
    assert result.node is None and [p.name for p in result.clear] == ["pod1"]


async def test_a_higher_nominated_pod_keeps_its_room_and_lower_nominations_are_cleared() -> None:
    state = cluster(
        machines("machine1", "machine2"),
        [placed("a", "machine1", LOW, LARGE), placed("b", "machine2", MID, LARGE)],
    )
    preemptor = incoming("pod1", HIGH, LARGE)
    # Without nominations machine1 wins (its victim has the lower priority).
    assert (await preempt(preemptor, state, FITS, {})).node == "machine1"
    # A pod of equal priority waits for machine1: evicting "a" would not leave room.
    state.set_nominated(incoming("waiting", HIGH, LARGE), "machine1")
    result = await preempt(preemptor, state, FITS, {})
    assert (result.node, [v.name for v in result.victims]) == ("machine2", ["b"])
    # A lower-priority pod nominated to the chosen node loses its nomination.
    state.set_nominated(incoming("lower", LOW, SMALL), "machine2")
    result = await preempt(preemptor, state, FITS, {})
    assert [p.name for p in result.clear] == ["lower"]


@pytest.mark.parametrize(
    ("pdb", "violating"),
    [
        pytest.param(budget("db", {"app": "db"}, 0), ["db-0"], id="budget-exhausted"),
        pytest.param(budget("db", {"app": "db"}, 1), [], id="budget-allows-one"),
        pytest.param(budget("db", {"app": "db"}, -1), ["db-0"], id="budget-negative"),
        pytest.param(budget("web", {"app": "web"}, 0), ["web-0"], id="other-pods"),
        pytest.param(
            {**budget("db", {}, 0), "spec": {"selector": {}}}, [], id="empty-selector-none"
        ),
        pytest.param({**budget("db", {}, 0), "spec": {}}, [], id="no-selector-none"),
        pytest.param(
            {**budget("db", {"app": "db"}, 0), "metadata": {"name": "db", "namespace": "other"}},
            [],
            id="other-namespace",
        ),
        pytest.param(
            {k: v for k, v in budget("db", {"app": "db"}, 0).items() if k != "status"},
            ["db-0"],
            id="no-status-yet-allows-nothing",
        ),
    ],
)
def test_pdb_violation_split(pdb: dict[str, Any], violating: list[str]) -> None:
    pods = [
        parse_pod(placed("db-0", "n", LOW, labels={"app": "db"})),
        parse_pod(placed("web-0", "n", LOW, labels={"app": "web"})),
        parse_pod(placed("bare", "n", LOW)),
    ]
    bad, good = pdb_violation_split(pods, [parse_pod_disruption_budget(pdb)])
    assert [p.name for p in bad] == violating
    assert [p.name for p in good] == [p.name for p in pods if p.name not in violating]


async def test_a_budget_protected_pod_is_reprieved_first() -> None:
    # Either pod's eviction makes room. Without a budget the older one ("web") is more
    # important and stays; with a budget on "db", "db" is put back first and stays.
    pods = [
        placed("db", "machine1", LOW, MEDIUM, start=day(5), labels={"app": "db"}),
        placed("web", "machine1", LOW, MEDIUM, start=day(2), labels={"app": "web"}),
    ]
    state = cluster(machines("machine1"), pods)
    preemptor = incoming("pod1", HIGH, LARGE)
    assert await select(preemptor, state, FITS) == {"machine1": ["db"]}
    state.set_pdb(parse_pod_disruption_budget(budget("db", {"app": "db"}, 0)))
    assert await select(preemptor, state, FITS) == {"machine1": ["web"]}


async def test_fewest_budget_violations_beat_lower_priority() -> None:
    pods = [
        placed("db", "machine1", LOW, LARGE, labels={"app": "db"}),
        placed("web", "machine2", MID, LARGE, labels={"app": "web"}),
    ]
    state = cluster(machines("machine1", "machine2"), pods)
    preemptor = incoming("pod1", HIGH, LARGE)
    assert (await preempt(preemptor, state, FITS, {})).node == "machine1"
    state.set_pdb(parse_pod_disruption_budget(budget("db", {"app": "db"}, 0)))
    found = await select_nodes_for_preemption(preemptor, state, FITS, state.ordered_nodes())
    assert found["machine1"].num_pdb_violations == 1
    assert found["machine2"].num_pdb_violations == 0
    assert (await preempt(preemptor, state, FITS, {})).node == "machine2"


@pytest.mark.parametrize(
    ("candidates", "expected"),
    [
        pytest.param(
            {"a": [("x", MID, None)], "b": [("y", LOW, None), ("z", LOW, None)]},
            "b",
            id="lowest-most-important-victim",
        ),
        pytest.param(
            {"a": [("x", NEG, None), ("y", NEG, None)], "b": [("z", NEG, None)]},
            "b",
            id="negative-priorities-fewer-weigh-less",
        ),
        pytest.param(
            {"a": [("x", MID, day(3))], "b": [("y", MID, day(5))], "c": [("z", MID, day(4))]},
            "b",
            id="latest-start-of-the-most-important",
        ),
        pytest.param(
            {"a": [("x", MID, None)], "b": [("y", MID, day(5))]},
            "a",
            id="not-started-counts-as-now",
        ),
        pytest.param(
            {"a": [("x", MID, day(3))], "b": [("y", MID, day(3))]}, "a", id="tie-first-in-order"
        ),
    ],
)
def test_pick_rules_directly(
    candidates: dict[str, list[tuple[str, int, str | None]]], expected: str
) -> None:
    def victims(specs: list[tuple[str, int, str | None]]) -> Victims:
        return Victims(
            tuple(parse_pod(placed(n, "n", prio, start=start)) for n, prio, start in specs)
        )

    assert pick_one_node_for_preemption({k: victims(v) for k, v in candidates.items()}) == expected


async def test_victims_inter_pod_affinity_is_honoured_and_restored() -> None:
    # "guard" (low, on node-a) forbids the preemptor in zone1; "friend" (mid, on
    # node-b) is what the preemptor's required affinity needs, in zone1. On node-a,
    # evicting the guard opens zone1: a victim. On node-b, evicting the friend would
    # not help (the guard stays, the friend is gone): not a candidate. node-c is in
    # the wrong zone for the friend and has nothing to evict.
    zone_anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"role": "new"}}, "topologyKey": "zone"}
            ]
        }
    }
    needs_friend = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"role": "friend"}}, "topologyKey": "zone"}
            ]
        }
    }
    pods = [
        placed("guard", "node-a", LOW, SMALL, labels={"role": "guard"}, affinity=zone_anti),
        placed("friend", "node-b", MID, SMALL, labels={"role": "friend"}),
    ]
    state = cluster(machines("node-a/zone1", "node-b/zone1", "node-c/zone2"), pods)
    preemptor = incoming("new", HIGH, SMALL, labels={"role": "new"}, affinity=needs_friend)
    policy = named("PodFitsResources", "MatchInterPodAffinity")
    assert await select(preemptor, state, policy) == {"node-a": ["guard"]}
    # The cluster's inter-pod indexes are back: the guard still forbids zone1.
    assert (await preempt(preemptor, state, policy, {})).node == "node-a"
    assert any(t.topology_key == "zone" for t in state.required_anti_affinity_terms)


def decision_of(result: Preemption) -> tuple[str | None, list[str]]:
    return result.node, [v.name for v in result.victims]
