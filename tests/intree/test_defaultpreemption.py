"""DefaultPreemption (v1.30): default_preemption_test.go's tables, as objects.

TestPostFilter (the status and the nominated node), TestDryRunPreemption (the candidates
and their victims, the offset and the number of candidates), TestSelectBestCandidate,
TestPodEligibleToPreemptOthers and TestPreempt. Upstream's fixtures: nodes of 500m CPU
and 500 bytes of memory (32 pods) unless a row says otherwise, containers small (100m),
medium, large, very large (2x, 3x, 5x), priorities -100, 0, 100, 1000, 10000. The
filters are a compiled policy's: the resources rule (PodFitsResources, whose v1.30 twin
NodeResourcesFit says the same reasons), inter-pod affinity and topology spreading
where a row registers them, upstream's fake filters (always false, always true, "pod
name equals node name") as predicates. Upstream's random offset is drawn from
``rand.NewSource(4)`` (4, 1, 3, ... for five nodes): the rows pass those offsets.

Rows upstream runs with a plugin failing AddPod/RemovePod have no counterpart (a trial
cannot fail), nor have the newer PodGroup rows (not v1.30).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import pytest

from builders import cluster, cluster_picture, node, pod, pvc
from builders import pod_disruption_budget as budget
from policy_scheduler import pluginargs
from policy_scheduler.engine import preemption as legacy_preemption
from policy_scheduler.engine.builtins import PREEMPTION_KEY, PreemptionContext
from policy_scheduler.engine.cluster import ClusterState
from policy_scheduler.engine.compiler import CompiledPolicy, compile_policy, compiled_predicate
from policy_scheduler.engine.extenders import Victims
from policy_scheduler.engine.functions import CycleState, Reasons, Unresolvable
from policy_scheduler.engine.interface import Code, Status
from policy_scheduler.engine.intree.defaultpreemption import (
    NOT_ELIGIBLE_NEVER,
    NOT_ELIGIBLE_TERMINATING,
    OUTCOME_STATE_KEY,
    DefaultPreemption,
    PreemptionArgs,
    PreemptionOutcome,
    calculate_num_candidates,
    dry_run_preemption,
    eligible,
    pdb_violation_split,
    preempt,
)
from policy_scheduler.engine.intree.volumerestrictions import VolumeRestrictions
from policy_scheduler.engine.nodeinfo import NodeInfo
from policy_scheduler.objects import Pod, parse_pod, parse_pod_disruption_budget
from policy_scheduler.policy import parse_policy

NEG, LOW, MID, HIGH, VERY_HIGH = -100, 0, 100, 1000, 10000
SMALL = {"cpu": "100m", "memory": "100"}
MEDIUM = {"cpu": "200m", "memory": "200"}
LARGE = {"cpu": "300m", "memory": "300"}
VERY_LARGE = {"cpu": "500m", "memory": "500"}
NODE_RES = {"cpu": "200m", "memory": "400", "pods": 32}
ONE_POD = {"cpu": "0", "memory": "0", "pods": 1}
CAPACITY = {**VERY_LARGE, "pods": 32}
UNSCHEDULABLE = Status.unschedulable()
UNRESOLVABLE = Status.unresolvable()


def epoch(n: int) -> str:
    """upstream's epochTime<n>: n nanoseconds after the epoch (a second apart here)."""
    return f"1970-01-01T00:00:0{n}Z"


def mk(
    name: str,
    node_name: str | None = None,
    priority: int | None = None,
    req: Mapping[str, str] | None = None,
    *,
    labels: Mapping[str, str] | None = None,
    start: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """st.MakePod(): a pod named and uid'd ``name`` in the default namespace."""
    obj = pod(name, requests=req, priority=priority, node_name=node_name, labels=labels, **extra)
    obj["metadata"]["uid"] = name
    if start is not None:
        obj["status"] = {"startTime": start}
    return obj


def mk_node(spec: str, allocatable: Mapping[str, Any] = CAPACITY) -> dict[str, Any]:
    """A node named by the part of ``spec`` before "/", labelled hostname/zone/region
    by its parts (upstream's "node-a/zone1")."""
    parts = spec.split("/")
    labels = dict(zip(("hostname", "zone", "region"), parts, strict=False))
    obj = node(parts[0], allocatable=dict(allocatable), labels=labels)
    return obj


def legacy_policy(*predicates: str) -> CompiledPolicy:
    doc = {
        "apiVersion": "policyscheduler.io/v1alpha1",
        "kind": "SchedulingPolicy",
        "metadata": {"name": "test"},
        "spec": {"predicates": [{"name": p} for p in predicates], "priorities": []},
    }
    return compile_policy(parse_policy(doc))


FIT = legacy_policy("PodFitsResources")


def with_filters(*fns: Any) -> CompiledPolicy:
    return replace(
        FIT, predicates=tuple(compiled_predicate(f"F{i}", fn) for i, fn in enumerate(fns))
    )


def false_filter(pod: Pod, node: NodeInfo, cycle: CycleState) -> Reasons:
    return ("injecting failure for pod test-pod",)


def true_filter(pod: Pod, node: NodeInfo, cycle: CycleState) -> Reasons:
    return ()


def match_filter(pod: Pod, node: NodeInfo, cycle: CycleState) -> Reasons:
    return () if pod.name == node.name else ("pod name does not match node name",)


def world(
    nodes: Sequence[dict[str, Any]],
    pods: Sequence[dict[str, Any]],
    pdbs: Sequence[dict[str, Any]] = (),
) -> ClusterState:
    return cluster(nodes, pods, pdbs)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


# -- TestPostFilter ---------------------------------------------------------------------------


def statuses(**codes: Status) -> dict[str, Status]:
    return dict(codes)


VIOLATING = {"test.kubernetes.io/is-violating-pdb": "violating"}
NON_VIOLATING = {"test.kubernetes.io/is-violating-pdb": "non-violating"}


def pdb_obj(name: str, labels: Mapping[str, str], allowed: int) -> dict[str, Any]:
    obj = budget(name, labels, allowed)
    return obj


POST_FILTER = [
    pytest.param(
        mk("p", priority=HIGH),
        [mk_node("node1", ONE_POD)],
        [mk("p1", "node1")],
        [],
        statuses(node1=UNSCHEDULABLE),
        "node1",
        None,
        id="pod with higher priority can be made schedulable",
    ),
    pytest.param(
        mk("p"),
        [mk_node("node1", ONE_POD)],
        [mk("p1", "node1")],
        [],
        statuses(node1=UNSCHEDULABLE),
        None,
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
        id="pod with tied priority is still unschedulable",
    ),
    pytest.param(
        mk("p", priority=HIGH),
        [mk_node("node1", ONE_POD)],
        [mk("p1", "node1")],
        [],
        statuses(node1=UNRESOLVABLE),
        None,
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
        id="preemption should respect filteredNodesStatuses",
    ),
    pytest.param(
        mk("p", priority=HIGH),
        [mk_node("node1", ONE_POD)],
        [mk("p1", "node1")],
        [],
        statuses(),
        None,
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
        id="preemption should respect absent NodeToStatusReader entry "
        "meaning UnschedulableAndUnresolvable",
    ),
    pytest.param(
        mk("p", priority=MID),
        [mk_node("node1", ONE_POD), mk_node("node2", ONE_POD)],
        [mk("p1", "node1", HIGH), mk("p2", "node2", LOW)],
        [],
        statuses(node1=UNSCHEDULABLE, node2=UNSCHEDULABLE),
        "node2",
        None,
        id="pod can be made schedulable on one node",
    ),
    pytest.param(
        mk("p", priority=VERY_HIGH),
        [mk_node("node1", ONE_POD), mk_node("node2", ONE_POD)],
        [
            mk("p1", "node1", HIGH, labels=NON_VIOLATING),
            mk("p2", "node1", LOW, labels=VIOLATING),
            mk("p3", "node2", MID, labels=VIOLATING),
        ],
        [
            pdb_obj("violating-pdb", VIOLATING, 0),
            pdb_obj("non-violating-pdb", NON_VIOLATING, 2**31 - 1),
        ],
        statuses(node1=UNSCHEDULABLE, node2=UNSCHEDULABLE),
        "node2",
        None,
        id="pod can be made schedulable on minHighestPriority node",
    ),
    pytest.param(
        mk("p", priority=HIGH, req=LARGE),
        [mk_node("node1", NODE_RES), mk_node("node2", NODE_RES)],
        [mk("p1", "node1"), mk("p2", "node2")],
        [],
        statuses(node1=UNSCHEDULABLE, node2=UNSCHEDULABLE),
        None,
        "preemption: 0/2 nodes are available: 2 Insufficient cpu.",
        id="no candidate nodes found, no enough resource after removing low priority pods",
    ),
    pytest.param(
        mk("p", priority=HIGH, req=LARGE),
        [mk_node("node1", ONE_POD), mk_node("node2", NODE_RES), mk_node("node3", ONE_POD)],
        [mk("p1", "node1", HIGH), mk("p2", "node2"), mk("p3", "node3", HIGH)],
        [],
        statuses(node1=UNSCHEDULABLE, node2=UNSCHEDULABLE, node3=UNSCHEDULABLE),
        None,
        "preemption: 0/3 nodes are available: 1 Insufficient cpu, "
        "2 No preemption victims found for incoming pod.",
        id="no candidate nodes found with mixed reasons, no lower "
        "priority pod and no enough CPU resource",
    ),
    pytest.param(
        mk("p", priority=HIGH, req=LARGE),
        [mk_node(f"node{i}", NODE_RES) for i in range(1, 5)],
        [mk("p1", "node1"), mk("p2", "node2")],
        [],
        statuses(node1=UNSCHEDULABLE, node2=UNSCHEDULABLE, node4=UNRESOLVABLE),
        None,
        "preemption: 0/4 nodes are available: 2 Insufficient cpu, "
        "2 Preemption is not helpful for scheduling.",
        id="no candidate nodes found with mixed reason, 2 UnschedulableAndUnresolvable nodes "
        "and 2 nodes don't have enough CPU resource",
    ),
]


@pytest.mark.parametrize(
    ("incoming", "nodes", "pods", "pdbs", "given", "want_node", "want_message"), POST_FILTER
)
def test_post_filter(
    incoming: dict[str, Any],
    nodes: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    pdbs: list[dict[str, Any]],
    given: dict[str, Status],
    want_node: str | None,
    want_message: str | None,
) -> None:
    state = world(nodes, pods, pdbs)
    before = cluster_picture(state)
    the_pod = parse_pod(incoming)
    plugin = DefaultPreemption(None, None)  # type: ignore[arg-type]
    cycle = CycleState(the_pod, state, FIT.settings)
    cycle.write(PREEMPTION_KEY, PreemptionContext(unused_legacy, FIT, None))
    found, status = run(plugin.post_filter(cycle, the_pod, given))
    assert found is not None
    if want_node is None:
        assert found.node is None
        assert status is not None and status.code is Code.UNSCHEDULABLE
        assert status.reasons == (want_message,)
    else:
        assert status is None and found.node == want_node
        outcome: PreemptionOutcome = cycle.read(OUTCOME_STATE_KEY)
        assert outcome.victims == found.victims and found.victims
    assert cluster_picture(state) == before, "preemption changed the cluster"


def test_post_filter_needs_the_policy_in_the_cycle_state() -> None:
    state = world([mk_node("node1", ONE_POD)], [mk("p1", "node1")])
    the_pod = parse_pod(mk("p", priority=HIGH))
    found, status = run(
        DefaultPreemption(None, None).post_filter(
            CycleState(the_pod, state, FIT.settings), the_pod, {}
        )
    )  # type: ignore[arg-type]
    assert found is None
    assert isinstance(status, Status) and status.code is Code.ERROR


async def unused_legacy(pod: Any, failed: Any) -> Any:
    raise AssertionError("DefaultPreemption never runs legacy preemption")


def test_extenders_narrow_the_candidates() -> None:
    """TestPostFilter "preemption result filtered out by extenders": one keeping node1."""
    state = world(
        [mk_node("node1", ONE_POD), mk_node("node2", ONE_POD)],
        [mk("p1", "node1"), mk("p2", "node2")],
    )
    the_pod = parse_pod(mk("p", priority=HIGH))
    offered: list[list[str]] = []

    async def node1_only(pod: Pod, candidates: dict[str, Victims]) -> Mapping[str, Victims]:
        offered.append(sorted(candidates))
        return {name: v for name, v in candidates.items() if name == "node1"}

    outcome = run(
        preempt(
            the_pod,
            state,
            FIT,
            statuses(node1=UNSCHEDULABLE, node2=UNSCHEDULABLE),
            process=node1_only,
        )
    )
    assert offered == [["node1", "node2"]]
    assert outcome.node == "node1"
    assert [p.name for p in outcome.victims] == ["p1"]


def test_extenders_vetoing_every_node_leave_no_candidate() -> None:
    """TestPreempt "Scheduler extenders do not allow any preemption"."""
    state = world(
        [mk_node(n) for n in ("node1", "node2", "node3")],
        [
            mk("p1.1", "node1", MID, SMALL),
            mk("p1.2", "node1", LOW, SMALL),
            mk("p2.1", "node2", MID, LARGE),
        ],
    )
    the_pod = parse_pod(mk("p", priority=HIGH, req=VERY_LARGE))

    async def none(pod: Pod, candidates: dict[str, Victims]) -> Mapping[str, Victims]:
        return {}

    all_unschedulable = {n: UNSCHEDULABLE for n in ("node1", "node2", "node3")}
    outcome = run(preempt(the_pod, state, FIT, all_unschedulable, process=none))
    assert outcome.node is None
    assert outcome.status.reasons == ("preemption: no candidate node for preemption",)


# -- TestDryRunPreemption -------------------------------------------------------------------

ALL = ("node1", "node2")


def dry(
    policy: CompiledPolicy,
    node_specs: Sequence[str],
    incoming: dict[str, Any],
    pods: Sequence[dict[str, Any]],
    expected: dict[str, tuple[list[str], int]],
    *,
    pdbs: Sequence[dict[str, Any]] = (),
    args: PreemptionArgs | None = None,
    offset: int = 0,
) -> tuple[Any, ...]:
    return (policy, node_specs, incoming, pods, pdbs, args, offset, expected)


DRY_RUN = [
    pytest.param(
        *dry(
            with_filters(false_filter),
            ALL,
            mk("p", priority=HIGH),
            [mk("p1", "node1", MID), mk("p2", "node2", MID)],
            {},
        ),
        id="a pod that does not fit on any node",
    ),
    pytest.param(
        *dry(
            with_filters(true_filter),
            ALL,
            mk("p", priority=HIGH),
            [mk("p1", "node1", MID), mk("p2", "node2", MID)],
            {},
        ),
        id="a pod that fits with no preemption",
    ),
    pytest.param(
        *dry(
            with_filters(match_filter),
            ALL,
            mk("node1", priority=HIGH),
            [mk("p1", "node1", MID), mk("p2", "node2", MID)],
            {},
        ),
        id="a pod that fits on one node with no preemption",
    ),
    pytest.param(
        *dry(
            FIT,
            ALL,
            mk("p", priority=HIGH, req=LARGE),
            [mk("p1", "node1", MID, LARGE), mk("p2", "node2", MID, LARGE)],
            {"node1": (["p1"], 0), "node2": (["p2"], 0)},
        ),
        id="a pod that fits on both nodes when lower priority pods are preempted",
    ),
    pytest.param(
        *dry(
            FIT,
            ALL,
            mk("p", priority=LOW, req=LARGE),
            [mk("p1", "node1", MID, LARGE), mk("p2", "node2", MID, LARGE)],
            {},
        ),
        id="a pod that would fit on the nodes, but other pods running "
        "are higher priority, no preemption would happen",
    ),
    pytest.param(
        *dry(
            FIT,
            ALL,
            mk("p", priority=HIGH, req=LARGE),
            [
                mk("p1.1", "node1", LOW, SMALL),
                mk("p1.2", "node1", MID, LARGE),
                mk("p2", "node2", MID, LARGE),
            ],
            {"node1": (["p1.2"], 0), "node2": (["p2"], 0)},
        ),
        id="medium priority pod is preempted, but lower priority one stays as it is small",
    ),
    pytest.param(
        *dry(
            FIT,
            ALL,
            mk("p", priority=HIGH, req=LARGE),
            [
                mk("p1.1", "node1", MID, SMALL),
                mk("p1.2", "node1", LOW, SMALL),
                mk("p1.3", "node1", MID, MEDIUM),
                mk("p1.4", "node1", HIGH, SMALL),
                mk("p2", "node2", HIGH, LARGE),
            ],
            {"node1": (["p1.2", "p1.3"], 0)},
        ),
        id="mixed priority pods are preempted",
    ),
    pytest.param(
        *dry(
            FIT,
            ALL,
            mk("p", priority=HIGH, req=LARGE),
            [
                mk("p1.1", "node1", LOW, SMALL, start=epoch(5)),
                mk("p1.2", "node1", LOW, SMALL, start=epoch(4)),
                mk("p1.3", "node1", MID, MEDIUM, start=epoch(3)),
                mk("p1.4", "node1", HIGH, SMALL, start=epoch(2)),
                mk("p2", "node2", HIGH, LARGE, start=epoch(1)),
            ],
            {"node1": (["p1.1", "p1.3"], 0)},
        ),
        id="mixed priority pods are preempted, pick later StartTime one when priorities are equal",
    ),
    pytest.param(
        *dry(
            legacy_policy("PodFitsResources", "MatchInterPodAffinity"),
            ALL,
            mk("p", priority=HIGH, req=SMALL, labels={"foo": ""}),
            [
                mk(
                    "p1.1",
                    "node1",
                    LOW,
                    SMALL,
                    labels={"foo": ""},
                    affinity={
                        "podAntiAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": [
                                {
                                    "labelSelector": {
                                        "matchExpressions": [{"key": "foo", "operator": "Exists"}]
                                    },
                                    "topologyKey": "hostname",
                                }
                            ]
                        }
                    },
                ),
                mk("p1.2", "node1", MID, SMALL),
                mk("p1.3", "node1", HIGH, SMALL),
                mk("p2", "node2", HIGH, SMALL),
            ],
            {"node1": (["p1.1"], 0)},
        ),
        id="pod with anti-affinity is preempted",
    ),
    pytest.param(
        *dry(
            legacy_policy("EvenPodsSpread"),
            ("node-a/zone1", "node-b/zone1", "node-x/zone2"),
            mk(
                "p",
                priority=HIGH,
                labels={"foo": ""},
                topologySpreadConstraints=[
                    {
                        "maxSkew": 1,
                        "topologyKey": key,
                        "whenUnsatisfiable": "DoNotSchedule",
                        "labelSelector": {
                            "matchExpressions": [{"key": "foo", "operator": "Exists"}]
                        },
                    }
                    for key in ("zone", "hostname")
                ],
            ),
            [
                mk("pod-a1", "node-a", MID, labels={"foo": ""}),
                mk("pod-a2", "node-a", LOW, labels={"foo": ""}),
                mk("pod-b1", "node-b", LOW, labels={"foo": ""}),
                mk("pod-x1", "node-x", HIGH, labels={"foo": ""}),
                mk("pod-x2", "node-x", HIGH, labels={"foo": ""}),
            ],
            {"node-a": (["pod-a2"], 0), "node-b": (["pod-b1"], 0)},
        ),
        id="preemption to resolve pod topology spread filter failure",
    ),
    pytest.param(
        *dry(
            with_filters(false_filter),
            ALL,
            mk("p", priority=HIGH, req=LARGE),
            [mk("p1", "node1", MID, LARGE), mk("p2", "node2", MID, LARGE)],
            {},
        ),
        id="get Unschedulable in the preemption phase when the filter plugins filtering the nodes",
    ),
    pytest.param(
        *dry(
            FIT,
            ("node1",),
            mk("p", priority=HIGH, req=VERY_LARGE),
            [
                mk("p1.1", "node1", MID, MEDIUM, labels={"app": "foo"}),
                mk("p1.2", "node1", MID, MEDIUM, labels={"app": "foo"}),
            ],
            {"node1": (["p1.1", "p1.2"], 1)},
            pdbs=[budget("pdb", {"app": "foo"}, 1)],
        ),
        id="preemption with violation of same pdb",
    ),
    pytest.param(
        *dry(
            FIT,
            ("node1",),
            mk("p", priority=HIGH, req=VERY_LARGE),
            [
                mk("p1.1", "node1", MID, MEDIUM, labels={"app": "foo"}),
                mk("p1.2", "node1", MID, MEDIUM, labels={"app": "foo"}),
            ],
            {"node1": (["p1.1", "p1.2"], 1)},
            pdbs=[
                {
                    **budget("pdb", {"app": "foo"}, 1),
                    "status": {
                        "disruptionsAllowed": 1,
                        "disruptedPods": {"p2": "2024-01-01T00:00:00Z"},
                    },
                }
            ],
        ),
        id="preemption with violation of the pdb with pod whose "
        "eviction was processed, the victim doesn't belong to DisruptedPods",
    ),
    pytest.param(
        *dry(
            FIT,
            ("node1",),
            mk("p", priority=HIGH, req=VERY_LARGE),
            [
                mk("p1.1", "node1", MID, MEDIUM, labels={"app": "foo"}),
                mk("p1.2", "node1", MID, MEDIUM, labels={"app": "foo"}),
            ],
            {"node1": (["p1.1", "p1.2"], 0)},
            pdbs=[
                {
                    **budget("pdb", {"app": "foo"}, 1),
                    "status": {
                        "disruptionsAllowed": 1,
                        "disruptedPods": {"p1.2": "2024-01-01T00:00:00Z"},
                    },
                }
            ],
        ),
        id="preemption with violation of the pdb with pod whose "
        "eviction was processed, the victim belongs to DisruptedPods",
    ),
    pytest.param(
        *dry(
            FIT,
            ("node1",),
            mk("p", priority=HIGH, req=VERY_LARGE),
            [
                mk("p1.1", "node1", MID, MEDIUM, labels={"app": "foo"}),
                mk("p1.2", "node1", MID, MEDIUM, labels={"app": "foo"}),
                mk("p1.3", "node1", MID, MEDIUM, labels={"app": "foo"}),
            ],
            {"node1": (["p1.1", "p1.2", "p1.3"], 1)},
            pdbs=[
                {
                    **budget("pdb", {"app": "foo"}, 1),
                    "status": {
                        "disruptionsAllowed": 1,
                        "disruptedPods": {"p1.3": "2024-01-01T00:00:00Z"},
                    },
                }
            ],
        ),
        id="preemption with violation of the pdb with pod whose eviction was processed, "
        "the victim which belongs to DisruptedPods is treated as 'nonViolating'",
    ),
]

FIVE = tuple(f"node{i}" for i in range(1, 6))
LIMIT_TO_TWO = PreemptionArgs(40, 1)


def five_pods(*priorities: int, labelled: Sequence[int] = ()) -> list[dict[str, Any]]:
    return [
        mk(f"p{i}", f"node{i}", priority, LARGE, labels={"app": "foo"} if i in labelled else None)
        for i, priority in enumerate(priorities, start=1)
    ]


DRY_RUN += [
    pytest.param(
        *dry(
            FIT,
            FIVE,
            mk("p", priority=HIGH, req=LARGE),
            five_pods(MID, MID, MID, MID, MID),
            {"node1": (["p1"], 0), "node5": (["p5"], 0)},
            args=LIMIT_TO_TWO,
            offset=4,
        ),
        id="all nodes are possible candidates, but DefaultPreemptionArgs limits to 2",
    ),
    pytest.param(
        *dry(
            FIT,
            FIVE,
            mk("p", priority=HIGH, req=LARGE),
            five_pods(MID, VERY_HIGH, MID, MID, VERY_HIGH),
            {"node1": (["p1"], 0), "node3": (["p3"], 0)},
            args=LIMIT_TO_TWO,
            offset=4,
        ),
        id="some nodes are not possible candidates, DefaultPreemptionArgs limits to 2",
    ),
    pytest.param(
        *dry(
            FIT,
            FIVE,
            mk("p", priority=HIGH, req=LARGE),
            five_pods(MID, MID, MID, MID, MID, labelled=(1, 2, 5)),
            {"node1": (["p1"], 1), "node3": (["p3"], 0), "node5": (["p5"], 1)},
            pdbs=[budget("pdb", {"app": "foo"}, 0)],
            args=PreemptionArgs(40, 2),
            offset=4,
        ),
        id="preemption looks past numCandidates until a non-PDB violating node is found",
    ),
]


@pytest.mark.parametrize(
    ("policy", "node_specs", "incoming", "pods", "pdbs", "args", "offset", "expected"), DRY_RUN
)
def test_dry_run_preemption(
    policy: CompiledPolicy,
    node_specs: Sequence[str],
    incoming: dict[str, Any],
    pods: Sequence[dict[str, Any]],
    pdbs: Sequence[dict[str, Any]],
    args: PreemptionArgs | None,
    offset: int,
    expected: dict[str, tuple[list[str], int]],
) -> None:
    state = world([mk_node(spec) for spec in node_specs], pods, pdbs)
    before = cluster_picture(state)
    the_pod = parse_pod(incoming)
    nodes = sorted(state.nodes.values(), key=lambda info: info.name)
    budgets = [parse_pod_disruption_budget(p) for p in pdbs]
    number = calculate_num_candidates(len(nodes), args or PreemptionArgs())
    found = run(dry_run_preemption(the_pod, state, policy, nodes, budgets, offset, number))
    got = {
        c.node: (sorted(p.name for p in c.victims.pods), c.victims.num_pdb_violations)
        for c in found.candidates
    }
    assert got == expected
    assert cluster_picture(state) == before, "the dry run changed the cluster"


def test_offset_across_scheduling_cycles_and_wrap_around() -> None:
    """ "preemption offset across multiple scheduling cycles and wrap around": upstream's
    offsets 4, 1, 3 give node5+node1, node2+node3, node4+node5."""
    state = world([mk_node(n) for n in FIVE], five_pods(MID, MID, MID, MID, MID))
    nodes = sorted(state.nodes.values(), key=lambda info: info.name)
    got = []
    for name, offset in (("tp1", 4), ("tp2", 1), ("tp3", 3)):
        the_pod = parse_pod(mk(name, priority=HIGH, req=LARGE))
        found = run(dry_run_preemption(the_pod, state, FIT, nodes, [], offset, 2))
        got.append(sorted(c.node for c in found.candidates))
    assert got == [["node1", "node5"], ["node2", "node3"], ["node4", "node5"]]


@pytest.mark.parametrize(
    ("nodes", "percentage", "absolute", "expected"),
    [
        pytest.param(10, 10, 100, 10, id="defaults on a small cluster: every node"),
        pytest.param(5000, 10, 100, 500, id="defaults on 5000 nodes: 10%"),
        pytest.param(500, 10, 100, 100, id="defaults on 500 nodes: the absolute minimum"),
        pytest.param(5, 40, 1, 2, id="40% of five"),
        pytest.param(5, 0, 3, 3, id="only the absolute"),
        pytest.param(3, 100, 0, 3, id="every node"),
    ],
)
def test_calculate_num_candidates(
    nodes: int, percentage: int, absolute: int, expected: int
) -> None:
    assert calculate_num_candidates(nodes, PreemptionArgs(percentage, absolute)) == expected


def test_the_args_model_sets_the_candidate_numbers() -> None:
    model = pluginargs.DefaultPreemptionArgs(
        minCandidateNodesPercentage=40, minCandidateNodesAbsolute=1
    )
    assert DefaultPreemption(model, None).preemption_args == PreemptionArgs(40, 1)  # type: ignore[arg-type]
    assert DefaultPreemption.Args is pluginargs.DefaultPreemptionArgs
    defaults = DefaultPreemption(pluginargs.DefaultPreemptionArgs(), None)  # type: ignore[arg-type]
    assert defaults.preemption_args == PreemptionArgs(10, 100)


def test_args_from_a_model_or_a_mapping() -> None:
    assert PreemptionArgs.of(None) == PreemptionArgs(10, 100)
    assert PreemptionArgs.of({"minCandidateNodesPercentage": 40}) == PreemptionArgs(40, 100)

    class Model:
        min_candidate_nodes_percentage = 5
        min_candidate_nodes_absolute = 7

    assert PreemptionArgs.of(Model()) == PreemptionArgs(5, 7)


def test_offline_offsets_are_reproducible() -> None:
    class Offline:
        offline = True

    first = DefaultPreemption(None, Offline())  # type: ignore[arg-type]
    second = DefaultPreemption(None, Offline())  # type: ignore[arg-type]
    draws = [first.offsets(1000) for _ in range(5)]
    assert draws == [second.offsets(1000) for _ in range(5)]
    assert len(set(draws)) > 1


# -- TestSelectBestCandidate -------------------------------------------------------------------


def best(
    node_names: Sequence[str],
    incoming: dict[str, Any],
    pods: Sequence[dict[str, Any]],
    expected: set[str],
) -> tuple[Any, ...]:
    return (node_names, incoming, pods, expected)


E = epoch(0)
SELECT_BEST = [
    pytest.param(
        *best(
            ALL,
            mk("p", priority=HIGH, req=LARGE),
            [mk("p1", "node1", MID, LARGE, start=E), mk("p2", "node2", MID, LARGE, start=E)],
            {"node1", "node2"},
        ),
        id="a pod that fits on both nodes when lower priority pods are preempted",
    ),
    pytest.param(
        *best(
            ("node1", "node2", "node3"),
            mk("p", priority=HIGH, req=VERY_LARGE),
            [
                mk("p1.1", "node1", MID, MEDIUM, start=E),
                mk("p1.2", "node1", MID, LARGE, start=E),
                mk("p2.1", "node2", MID, MEDIUM, start=E),
                mk("p2.2", "node2", LOW, MEDIUM, start=E),
                mk("p3.1", "node3", LOW, MEDIUM, start=E),
                mk("p3.2", "node3", LOW, MEDIUM, start=E),
            ],
            {"node3"},
        ),
        id="node with min highest priority pod is picked",
    ),
    pytest.param(
        *best(
            ("node1", "node2", "node3"),
            mk("p", priority=HIGH, req=VERY_LARGE),
            [
                mk("p1.1", "node1", MID, MEDIUM, start=E),
                mk("p1.2", "node1", MID, LARGE, start=E),
                mk("p2.1", "node2", MID, LARGE, start=E),
                mk("p2.2", "node2", LOW, MEDIUM, start=E),
                mk("p3.1", "node3", MID, MEDIUM, start=E),
                mk("p3.2", "node3", MID, MEDIUM, start=E),
            ],
            {"node2"},
        ),
        id="when highest priorities are the same, minimum sum of priorities is picked",
    ),
    pytest.param(
        *best(
            ("node1", "node2", "node3"),
            mk("p", priority=HIGH, req=VERY_LARGE),
            [
                mk("p1.1", "node1", MID, SMALL, start=E),
                mk("p1.2", "node1", NEG, SMALL, start=E),
                mk("p1.3", "node1", MID, SMALL, start=E),
                mk("p1.4", "node1", NEG, SMALL, start=E),
                mk("p2.1", "node2", MID, LARGE, start=E),
                mk("p2.2", "node2", NEG, MEDIUM, start=E),
                mk("p3.1", "node3", MID, MEDIUM, start=E),
                mk("p3.2", "node3", NEG, SMALL, start=E),
                mk("p3.3", "node3", LOW, SMALL, start=E),
            ],
            {"node2"},
        ),
        id="when highest priority and sum are the same, minimum number of pods is picked",
    ),
    pytest.param(
        *best(
            ("node1", "node2", "node3"),
            mk("p", priority=HIGH, req=VERY_LARGE),
            [
                mk("p1.1", "node1", MID, SMALL, start=E),
                mk("p1.2", "node1", NEG, SMALL, start=E),
                mk("p1.3", "node1", NEG, SMALL, start=E),
                mk("p2.1", "node2", MID, LARGE, start=E),
                mk("p2.2", "node2", NEG, MEDIUM, start=E),
                mk("p3.1", "node3", MID, MEDIUM, start=E),
                mk("p3.2", "node3", NEG, SMALL, start=E),
                mk("p3.3", "node3", LOW, SMALL, start=E),
            ],
            {"node2"},
        ),
        id="sum of adjusted priorities is considered",
    ),
    pytest.param(
        *best(
            ("node1", "node2", "node3", "node4"),
            mk("p", priority=VERY_HIGH, req=VERY_LARGE),
            [
                mk("p1.1", "node1", MID, SMALL, start=E),
                mk("p1.2", "node1", LOW, SMALL, start=E),
                mk("p1.3", "node1", LOW, SMALL, start=E),
                mk("p2.1", "node2", HIGH, LARGE, start=E),
                mk("p3.1", "node3", MID, MEDIUM, start=E),
                mk("p3.2", "node3", LOW, SMALL, start=E),
                mk("p3.3", "node3", LOW, SMALL, start=E),
                mk("p3.4", "node3", LOW, MEDIUM, start=E),
                mk("p4.1", "node4", MID, MEDIUM, start=E),
                mk("p4.2", "node4", MID, SMALL, start=E),
                mk("p4.3", "node4", MID, SMALL, start=E),
                mk("p4.4", "node4", NEG, SMALL, start=E),
            ],
            {"node1"},
        ),
        id="non-overlapping lowest high priority, sum priorities, and number of pods",
    ),
    pytest.param(
        *best(
            ("node1", "node2", "node3"),
            mk("p", priority=HIGH, req=VERY_LARGE),
            [
                mk("p1.1", "node1", MID, MEDIUM, start=epoch(2)),
                mk("p1.2", "node1", MID, MEDIUM, start=epoch(2)),
                mk("p2.1", "node2", MID, MEDIUM, start=epoch(3)),
                mk("p2.2", "node2", MID, MEDIUM, start=epoch(3)),
                mk("p3.1", "node3", MID, MEDIUM, start=epoch(1)),
                mk("p3.2", "node3", MID, MEDIUM, start=epoch(1)),
            ],
            {"node2"},
        ),
        id="same priority, same number of victims, different start time for each node's pod",
    ),
    pytest.param(
        *best(
            ("node1", "node2", "node3"),
            mk("p", priority=HIGH, req=VERY_LARGE),
            [
                mk("p1.1", "node1", MID, MEDIUM, start=epoch(4)),
                mk("p1.2", "node1", MID, MEDIUM, start=epoch(2)),
                mk("p2.1", "node2", MID, MEDIUM, start=epoch(5)),
                mk("p2.2", "node2", MID, MEDIUM, start=epoch(1)),
                mk("p3.1", "node3", MID, MEDIUM, start=epoch(3)),
                mk("p3.2", "node3", MID, MEDIUM, start=epoch(6)),
            ],
            {"node3"},
        ),
        id="same priority, same number of victims, different start time for all pods",
    ),
    pytest.param(
        *best(
            ("node1", "node2", "node3"),
            mk("p", priority=HIGH, req=VERY_LARGE),
            [
                mk("p1.1", "node1", LOW, MEDIUM, start=epoch(4)),
                mk("p1.2", "node1", MID, MEDIUM, start=epoch(2)),
                mk("p2.1", "node2", MID, MEDIUM, start=epoch(6)),
                mk("p2.2", "node2", LOW, MEDIUM, start=epoch(1)),
                mk("p3.1", "node3", LOW, MEDIUM, start=epoch(3)),
                mk("p3.2", "node3", MID, MEDIUM, start=epoch(5)),
            ],
            {"node2"},
        ),
        id="different priority, same number of victims, different start time for all pods",
    ),
]


@pytest.mark.parametrize(("node_names", "incoming", "pods", "expected"), SELECT_BEST)
def test_select_best_candidate(
    node_names: Sequence[str],
    incoming: dict[str, Any],
    pods: Sequence[dict[str, Any]],
    expected: set[str],
) -> None:
    state = world([mk_node(n) for n in node_names], pods)
    the_pod = parse_pod(incoming)
    for offset in range(len(node_names)):  # whatever node the dry run starts from
        outcome = run(
            preempt(
                the_pod,
                state,
                FIT,
                {n: UNSCHEDULABLE for n in node_names},
                offsets=lambda n, o=offset: o,
            )
        )
        assert outcome.node in expected, f"offset {offset}: {outcome.node}"


# -- TestPodEligibleToPreemptOthers ------------------------------------------------------------


def terminating(obj: dict[str, Any], by_scheduler: bool) -> dict[str, Any]:
    obj = {**obj, "metadata": {**obj["metadata"], "deletionTimestamp": "2024-01-01T00:00:00Z"}}
    if by_scheduler:
        obj["status"] = {
            "conditions": [
                {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
            ]
        }
    return obj


NOMINATED = {"nominatedNodeName": "node1"}


def nominated(obj: dict[str, Any]) -> dict[str, Any]:
    return {**obj, "status": dict(NOMINATED)}


@pytest.mark.parametrize(
    ("incoming", "pods", "node1_status", "expected"),
    [
        pytest.param(
            nominated(mk("p", priority=HIGH)),
            [terminating(mk("p1", "node1", LOW), by_scheduler=True)],
            Status.unresolvable("node(s) had untolerated taint(s)"),
            None,
            id="Pod with nominated node",
        ),
        pytest.param(mk("p", priority=HIGH), [], None, None, id="Pod without nominated node"),
        pytest.param(
            mk("p", priority=HIGH, preemptionPolicy="Never"),
            [],
            None,
            NOT_ELIGIBLE_NEVER,
            id="Pod with 'PreemptNever' preemption policy",
        ),
        pytest.param(
            nominated(mk("p", priority=HIGH)),
            [terminating(mk("p1", "node1", LOW), by_scheduler=True)],
            None,
            NOT_ELIGIBLE_TERMINATING,
            id="preemption victim pod terminating, as indicated by the "
            "dedicated DisruptionTarget condition",
        ),
        pytest.param(
            nominated(mk("p", priority=HIGH)),
            [terminating(mk("p1", "node1", LOW), by_scheduler=False)],
            None,
            None,
            id="non-victim Pods terminating",
        ),
    ],
)
def test_pod_eligible_to_preempt_others(
    incoming: dict[str, Any],
    pods: list[dict[str, Any]],
    node1_status: Status | None,
    expected: str | None,
) -> None:
    state = world([mk_node("node1")], pods)
    given = {} if node1_status is None else {"node1": node1_status}
    assert eligible(parse_pod(incoming), state, given) == expected


def with_condition(
    obj: dict[str, Any], *, deleting: bool, status: str = "True", reason: str = ""
) -> dict[str, Any]:
    """A lower-priority pod on node1, maybe terminating, maybe carrying DisruptionTarget."""
    meta = dict(obj["metadata"])
    if deleting:
        meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    obj = {**obj, "metadata": meta}
    if reason:
        condition = {"type": "DisruptionTarget", "status": status, "reason": reason}
        obj["status"] = {"conditions": [condition]}
    return obj


@pytest.mark.parametrize(
    ("other", "v130_waits", "legacy_waits"),
    [
        pytest.param(
            with_condition(mk("p1", "node1", LOW), deleting=True, reason="PreemptionByScheduler"),
            True,
            True,
            id="terminating by preemption: both wait",
        ),
        pytest.param(
            with_condition(mk("p1", "node1", LOW), deleting=True),
            False,
            True,
            id="terminating otherwise: only v1.17 waits",
        ),
        pytest.param(
            with_condition(mk("p1", "node1", LOW), deleting=True, reason="DeletionByTaintManager"),
            False,
            True,
            id="terminating for a taint: only v1.17 waits",
        ),
        pytest.param(
            with_condition(
                mk("p1", "node1", LOW),
                deleting=True,
                status="False",
                reason="PreemptionByScheduler",
            ),
            False,
            True,
            id="a condition that is False: only v1.17 waits",
        ),
        pytest.param(
            with_condition(mk("p1", "node1", LOW), deleting=False, reason="PreemptionByScheduler"),
            False,
            False,
            id="marked but not deleted yet: neither waits",
        ),
        pytest.param(
            with_condition(mk("p1", "node1", HIGH), deleting=True, reason="PreemptionByScheduler"),
            False,
            False,
            id="terminating but not of lower priority: neither waits",
        ),
    ],
)
def test_which_terminating_pods_a_nominated_preemptor_waits_for(
    other: dict[str, Any], v130_waits: bool, legacy_waits: bool
) -> None:
    state = world([mk_node("node1")], [other])
    incoming = parse_pod(nominated(mk("p", priority=HIGH)))
    v130 = eligible(incoming, state, {"node1": UNSCHEDULABLE})
    assert v130 == (NOT_ELIGIBLE_TERMINATING if v130_waits else None)
    assert (legacy_preemption.eligible(incoming, state) is not None) is legacy_waits


def test_not_eligible_is_the_post_filter_answer() -> None:
    state = world([mk_node("node1", ONE_POD)], [mk("p1", "node1")])
    the_pod = parse_pod(mk("p", priority=HIGH, preemptionPolicy="Never"))
    outcome = run(preempt(the_pod, state, FIT, {"node1": UNSCHEDULABLE}))
    assert outcome.result() == Status.unschedulable(
        "preemption: not eligible due to preemptionPolicy=Never."
    )


# -- TestPreempt ---------------------------------------------------------------------------------


def test_basic_preemption_logic() -> None:
    state = world(
        [mk_node(n) for n in ("node1", "node2", "node3")],
        [
            mk("p1.1", "node1", LOW, SMALL),
            mk("p1.2", "node1", LOW, SMALL),
            mk("p2.1", "node2", HIGH, LARGE),
            mk("p3.1", "node3", MID, MEDIUM),
        ],
    )
    state.set_nominated(parse_pod(mk("lower", priority=LOW)), "node1")
    state.set_nominated(parse_pod(mk("higher", priority=VERY_HIGH)), "node1")
    the_pod = parse_pod(
        mk("p", priority=HIGH, req=VERY_LARGE, preemptionPolicy="PreemptLowerPriority")
    )
    outcome = run(
        preempt(the_pod, state, FIT, {n: UNSCHEDULABLE for n in ("node1", "node2", "node3")})
    )
    assert outcome.node == "node1"
    assert sorted(p.name for p in outcome.victims) == ["p1.1", "p1.2"]
    assert [p.name for p in outcome.clear] == ["lower"]


def test_preemption_for_topology_spread_constraints() -> None:
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": key,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchExpressions": [{"key": "foo", "operator": "Exists"}]},
        }
        for key in ("zone", "hostname")
    ]
    state = world(
        [mk_node(spec) for spec in ("node-a/zone1", "node-b/zone1", "node-x/zone2")],
        [
            mk("p-a1", "node-a", HIGH, labels={"foo": ""}),
            mk("p-a2", "node-a", HIGH, labels={"foo": ""}),
            mk("p-b1", "node-b", LOW, labels={"foo": ""}),
            mk("p-x1", "node-x", HIGH, labels={"foo": ""}),
            mk("p-x2", "node-x", HIGH, labels={"foo": ""}),
        ],
    )
    the_pod = parse_pod(
        mk("p", priority=HIGH, labels={"foo": ""}, topologySpreadConstraints=spread)
    )
    outcome = run(
        preempt(
            the_pod,
            state,
            legacy_policy("EvenPodsSpread"),
            {n: UNSCHEDULABLE for n in ("node-a", "node-b", "node-x")},
        )
    )
    assert outcome.node == "node-b"
    assert [p.name for p in outcome.victims] == ["p-b1"]


# -- v1.30 where it differs from the legacy preemption ------------------------------------------


def test_a_node_that_needs_no_victim_is_an_error_not_a_candidate() -> None:
    state = world([mk_node("node1")], [mk("p1", "node1", LOW)])
    the_pod = parse_pod(mk("p", priority=HIGH))
    outcome = run(preempt(the_pod, state, with_filters(true_filter), {"node1": UNSCHEDULABLE}))
    assert outcome.node is None
    assert outcome.status == Status.error(
        'preemption: expected at least one victim pod on node "node1"'
    )


def test_the_pdb_allowance_is_spent_victim_by_victim() -> None:
    """v1.17: a budget allowing one disruption covered every pod; v1.30 counts down."""
    pods = [parse_pod(mk(f"v{i}", "node1", LOW, labels={"app": "foo"})) for i in range(3)]
    allowing_one = [parse_pod_disruption_budget(budget("pdb", {"app": "foo"}, 1))]
    violating, others = pdb_violation_split(pods, allowing_one)
    assert [p.name for p in others] == ["v0"]
    assert [p.name for p in violating] == ["v1", "v2"]


def test_a_read_write_once_pod_claim_is_freed_by_evicting_its_user() -> None:
    """VolumeRestrictions' conflict is Unschedulable (v1.27+): preemption evicts the
    lower-priority pod holding the claim, and the trial's fresh cycle sees it gone."""
    claim = {"name": "data", "persistentVolumeClaim": {"claimName": "rwop"}}
    state = world(
        [mk_node("node1"), mk_node("node2")],
        [mk("holder", "node2", LOW, volumes=[claim]), mk("other", "node1", LOW)],
        [pvc("rwop", access_modes=["ReadWriteOncePod"])],
    )
    the_pod = parse_pod(mk("p", priority=HIGH, volumes=[claim]))
    policy = replace(
        FIT,
        predicates=(
            compiled_predicate("VolumeRestrictions", VolumeRestrictions(None, None).predicate()),
        ),
    )  # type: ignore[arg-type]
    outcome = run(preempt(the_pod, state, policy, {"node1": UNSCHEDULABLE, "node2": UNSCHEDULABLE}))
    assert outcome.node == "node2"
    assert [p.name for p in outcome.victims] == ["holder"]


def test_an_unresolvable_reason_keeps_preemption_off_the_node() -> None:
    state = world(
        [mk_node("node1", ONE_POD), mk_node("node2", ONE_POD)],
        [mk("p1", "node1"), mk("p2", "node2")],
    )
    the_pod = parse_pod(mk("p", priority=HIGH))
    from policy_scheduler.engine.intree.defaultpreemption import statuses_from_reasons

    given = statuses_from_reasons(
        {
            "node1": [Unresolvable("node(s) had no available volume zone")],
            "node2": ["Too many pods"],
        }
    )
    outcome = run(preempt(the_pod, state, FIT, given))
    assert outcome.node == "node2"
