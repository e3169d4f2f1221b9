"""End-to-end decisions with the basic predicates, through the real policy and engine.

What a user sees: which node a pod lands on, which reasons each rejected node got, and
kube-scheduler's summary message (reason counts sorted as strings).
"""

from __future__ import annotations

from typing import Any

import pytest

from builders import cluster, decide, node, pod, policy
from policy_scheduler import names

SMALL = {"cpu": "1", "memory": "1Gi", "pods": "110"}


def small(name: str, **kwargs: Any) -> dict[str, Any]:
    return node(name, allocatable=SMALL, **kwargs)


def big(name: str, **kwargs: Any) -> dict[str, Any]:
    return node(name, allocatable={"cpu": "8", "memory": "16Gi", "pods": "110"}, **kwargs)


HUNGRY_SSD_POD = pod("web", requests={"cpu": "2"}, node_selector={"disk": "ssd"})
BASIC = [names.POD_FITS_RESOURCES, names.MATCH_NODE_SELECTOR]


def test_summary_message_format() -> None:
    state = cluster([small("a", labels={"disk": "ssd"}), big("b"), big("c")])
    decision = decide(HUNGRY_SSD_POD, state, policy(BASIC, []))
    assert decision.node is None
    assert decision.failed == {
        "a": ["Insufficient cpu"],
        "b": ["node(s) didn't match node selector"],
        "c": ["node(s) didn't match node selector"],
    }
    assert decision.message == (
        "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't match node selector."
    )


def test_summary_counts_sort_as_strings() -> None:
    # "10 node(s)..." sorts before "2 Insufficient cpu": kube-scheduler sorts the
    # formatted "<count> <reason>" strings, not the reasons nor the counts.
    nodes = [small(f"s{i}", labels={"disk": "ssd"}) for i in range(2)]
    nodes += [big(f"b{i:02d}") for i in range(10)]
    decision = decide(HUNGRY_SSD_POD, cluster(nodes), policy(BASIC, []))
    assert decision.message == (
        "0/12 nodes are available: 10 node(s) didn't match node selector, 2 Insufficient cpu."
    )


def test_the_only_fitting_node_is_chosen() -> None:
    state = cluster(
        [small("a", labels={"disk": "ssd"}), big("b", labels={"disk": "ssd"}), big("c")]
    )
    decision = decide(HUNGRY_SSD_POD, state, policy(BASIC, []))
    assert decision.node == "b"
    assert decision.feasible == ["b"]
    assert decision.message == ""


def test_always_check_all_predicates_lists_every_reason() -> None:
    state = cluster([small("a"), big("b", labels={"disk": "ssd"})])
    unfit = pod("web", requests={"cpu": "2"}, node_selector={"disk": "ssd"})
    decision = decide(unfit, state, policy(BASIC, [], alwaysCheckAllPredicates=True))
    assert decision.node == "b"
    assert decision.failed == {
        "a": ["Insufficient cpu", "node(s) didn't match node selector"],
    }


def test_always_check_all_predicates_counts_each_reason_in_the_summary() -> None:
    state = cluster([small("a"), small("b", labels={"disk": "ssd"}, unschedulable=True)])
    decision = decide(
        HUNGRY_SSD_POD,
        state,
        policy([*BASIC, names.CHECK_NODE_UNSCHEDULABLE], [], alwaysCheckAllPredicates=True),
    )
    assert decision.failed == {
        "a": ["Insufficient cpu", "node(s) didn't match node selector"],
        "b": ["Insufficient cpu", "node(s) were unschedulable"],
    }
    assert decision.message == (
        "0/2 nodes are available: 1 node(s) didn't match node selector, "
        "1 node(s) were unschedulable, 2 Insufficient cpu."
    )


@pytest.mark.parametrize(
    ("predicates", "reason"),
    [
        pytest.param(BASIC, "Insufficient cpu", id="resources first"),
        pytest.param(
            list(reversed(BASIC)), "node(s) didn't match node selector", id="selector first"
        ),
        pytest.param(
            [
                {"name": names.POD_FITS_RESOURCES, "order": 2},
                {"name": names.MATCH_NODE_SELECTOR, "order": 1},
            ],
            "node(s) didn't match node selector",
            id="order fields beat list order",
        ),
    ],
)
def test_first_failing_predicate_in_policy_order_is_the_only_reason(
    predicates: list[Any], reason: str
) -> None:
    decision = decide(HUNGRY_SSD_POD, cluster([small("a")]), policy(predicates, []))
    assert decision.failed == {"a": [reason]}
    assert decision.message == f"0/1 nodes are available: 1 {reason}."


def test_general_predicates_reports_all_its_parts_even_when_stopping_early() -> None:
    decision = decide(HUNGRY_SSD_POD, cluster([small("a")]), policy([names.GENERAL_PREDICATES], []))
    assert decision.failed == {"a": ["Insufficient cpu", "node(s) didn't match node selector"]}


def test_cordoned_node_is_skipped() -> None:
    state = cluster([node("cordoned", unschedulable=True), node("open")])
    decision = decide(pod("p"), state, policy([names.CHECK_NODE_UNSCHEDULABLE], []))
    assert decision.node == "open"
    assert decision.failed == {"cordoned": ["node(s) were unschedulable"]}


def test_cordoned_node_accepts_a_pod_tolerating_the_cordon() -> None:
    state = cluster([node("cordoned", unschedulable=True)])
    tolerant = pod(
        "p",
        tolerations=[
            {
                "key": "node.kubernetes.io/unschedulable",
                "operator": "Exists",
                "effect": "NoSchedule",
            }
        ],
    )
    decision = decide(tolerant, state, policy([names.CHECK_NODE_UNSCHEDULABLE], []))
    assert decision.node == "cordoned"
    # CheckNodeCondition of v1.13-v1.16 rejects the cordon whatever the pod tolerates.
    decision = decide(tolerant, state, policy([names.CHECK_NODE_CONDITION], []))
    assert decision.message == "0/1 nodes are available: 1 node(s) were unschedulable."


def test_not_ready_node_is_skipped_but_a_node_without_ready_condition_is_not() -> None:
    state = cluster([node("down", conditions={"Ready": "False"}), node("silent", conditions={})])
    decision = decide(pod("p"), state, policy([names.CHECK_NODE_CONDITION], []))
    assert decision.node == "silent"
    assert decision.failed == {"down": ["node(s) were not ready"]}


def test_only_not_ready_nodes() -> None:
    state = cluster(
        [node("a", conditions={"Ready": "Unknown"}), node("b", conditions={"Ready": "False"})]
    )
    decision = decide(pod("p"), state, policy([names.CHECK_NODE_CONDITION], []))
    assert decision.node is None
    assert decision.message == "0/2 nodes are available: 2 node(s) were not ready."


def test_taints_and_pressure_end_to_end() -> None:
    state = cluster(
        [
            node("tainted", taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]),
            node("pressured", conditions={"Ready": "True", "MemoryPressure": "True"}),
            node("fine"),
        ]
    )
    chosen = [names.POD_TOLERATES_NODE_TAINTS, names.CHECK_NODE_MEMORY_PRESSURE]
    decision = decide(pod("p"), state, policy(chosen, []))
    assert decision.node == "fine"
    assert decision.failed == {
        "tainted": ["node(s) had taints that the pod didn't tolerate"],
        "pressured": ["node(s) had memory pressure"],
    }


def test_pod_fits_ports_alias_behaves_as_pod_fits_host_ports() -> None:
    taken = pod("taken", host_ports=[8080], node_name="a")
    state = cluster([node("a"), node("b")], [taken])
    decision = decide(pod("p", host_ports=[8080]), state, policy(["PodFitsPorts"], []))
    assert decision.node == "b"
    assert decision.failed == {"a": ["node(s) didn't have free ports for the requested pod ports"]}


def test_assumed_pod_uses_up_the_node_for_the_next_decision() -> None:
    from policy_scheduler.objects import parse_pod

    state = cluster([small("a")])
    first = decide(pod("one", requests={"cpu": "600m"}), state, policy(BASIC, []))
    assert first.node == "a"
    placed = pod("one", requests={"cpu": "600m"}, node_name="a")
    state.add_pod(parse_pod(placed))
    second = decide(pod("two", requests={"cpu": "600m"}), state, policy(BASIC, []))
    assert second.message == "0/1 nodes are available: 1 Insufficient cpu."
