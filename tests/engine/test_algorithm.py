"""The decision loop: how many nodes are looked at, where the search starts, node order."""

from __future__ import annotations

import asyncio

import pytest

from builders import cluster, decide, node, pod, policy
from policy_scheduler.engine.algorithm import Scheduler, num_feasible_nodes_to_find
from policy_scheduler.engine.cluster import ClusterState
from policy_scheduler.engine.parallel import parallelize_until
from policy_scheduler.objects import parse_node

ZONE = "topology.kubernetes.io/zone"


@pytest.mark.parametrize(
    ("nodes", "percentage", "expected"),
    [
        pytest.param(50, 0, 50, id="under 100 nodes: all"),
        pytest.param(99, 10, 99, id="99 nodes: all, whatever the percentage"),
        pytest.param(100, 0, 100, id="100 nodes adaptive: 50% but at least 100"),
        pytest.param(1000, 0, 420, id="1000 nodes adaptive: 42%"),
        pytest.param(5000, 0, 500, id="5000 nodes adaptive: 10%"),
        pytest.param(6000, 0, 300, id="6000 nodes adaptive: floor of 5%"),
        pytest.param(15000, 0, 750, id="15000 nodes adaptive: 5%"),
        pytest.param(1000, 30, 300, id="fixed 30%"),
        pytest.param(1000, 5, 100, id="fixed 5% but at least 100"),
        pytest.param(1000, 100, 1000, id="100%: all"),
    ],
)
def test_num_feasible_nodes_to_find(nodes: int, percentage: int, expected: int) -> None:
    assert num_feasible_nodes_to_find(nodes, percentage) == expected


def many(count: int, **labels: str) -> list[dict[str, object]]:
    return [node(f"n{i:03d}", cpu="8", memory="16Gi", labels=labels) for i in range(count)]


def test_sampling_stops_at_enough_feasible_nodes_and_the_next_pod_starts_after() -> None:
    state = cluster(many(200))
    scheduler = Scheduler()
    spec = policy(["PodFitsResources"], [])
    first = decide(pod("a"), state, spec, scheduler)
    # 200 nodes, adaptive: 50 - 200/125 = 49% -> 98, raised to the minimum of 100
    assert first.evaluated == 100 and len(first.feasible) == 100
    assert first.feasible[0] == state.ordered_nodes()[0].name
    second = decide(pod("b"), state, spec, scheduler)
    assert second.feasible[0] == state.ordered_nodes()[100].name


def test_failed_nodes_count_as_processed_for_the_next_start() -> None:
    nodes = many(150)
    for raw in nodes[:10]:
        raw["spec"]["unschedulable"] = True
    state = cluster(nodes)
    scheduler = Scheduler()
    decision = decide(pod("a"), state, policy(["CheckNodeUnschedulable"], []), scheduler)
    assert decision.evaluated == 110  # 10 refused + 100 feasible
    assert len(decision.failed) == 10
    assert scheduler.next_start == 110


def test_ties_rotate_round_robin_in_the_order_nodes_were_found() -> None:
    state = cluster(many(3))
    scheduler = Scheduler()
    spec = policy(["PodFitsResources"], [("EqualPriority", 1)])
    picks = [decide(pod(f"p{i}"), state, spec, scheduler).node for i in range(4)]
    assert picks == ["n000", "n001", "n002", "n000"]


def test_nodes_are_listed_one_zone_at_a_time_like_the_node_tree() -> None:
    state = ClusterState()
    for name, zone in [
        ("a1", "a"),
        ("a2", "a"),
        ("a3", "a"),
        ("b1", "b"),
        ("c1", "c"),
        ("b2", "b"),
    ]:
        state.set_node(parse_node(node(name, labels={ZONE: zone})))
    assert [n.name for n in state.ordered_nodes()] == ["a1", "b1", "c1", "a2", "b2", "a3"]
    state.remove_node("b1")
    assert [n.name for n in state.ordered_nodes()] == ["a1", "b2", "c1", "a2", "a3"]


def test_no_nodes_at_all() -> None:
    decision = decide(pod("p"), ClusterState())
    assert decision.node is None
    assert decision.message == "no nodes available to schedule pods"


def test_predicates_stop_at_the_first_failure_unless_asked_for_all() -> None:
    state = cluster([node("n", cpu="1", unschedulable=True)])
    spec = ["CheckNodeUnschedulable", "PodFitsResources"]
    big = pod("p", requests={"cpu": "2"})
    assert decide(big, state, policy(spec, [])).failed == {"n": ["node(s) were unschedulable"]}
    both = decide(big, state, policy(spec, [], alwaysCheckAllPredicates=True))
    assert both.failed == {"n": ["node(s) were unschedulable", "Insufficient cpu"]}
    assert both.message == (
        "0/1 nodes are available: 1 Insufficient cpu, 1 node(s) were unschedulable."
    )


async def test_parallelize_until_visits_in_order_yields_between_chunks_and_stops_early() -> None:
    seen: list[int] = []
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0)

    def work(lo: int, hi: int) -> bool:
        for i in range(lo, hi):
            seen.append(i)
            if i == 250:
                return False
        return True

    await parallelize_until(1000, work, chunk_size=64, workers=16)
    task.cancel()
    assert seen == list(range(251))  # in order, and nothing after the stop
    assert ticks >= 3  # other tasks ran between chunks


def test_v130_without_filter_plugins_takes_the_rotations_next_nodes() -> None:
    # A v1.30 profile with a Score plugin and no Filter plugin: each pod is offered the
    # rotation's next numFeasibleNodesToFind nodes (100 of 200), the next pod the 100
    # after them; the legacy cycle would offer every node to every pod.
    state = cluster([node(f"n{i:03}", cpu="4") for i in range(200)])
    doc = policy([], [("NodeResourcesBalancedAllocation", 1)])
    scheduler = Scheduler()
    first = decide(pod("a", requests={"cpu": "1"}), state, doc, scheduler)
    second = decide(pod("b", requests={"cpu": "1"}), state, doc, scheduler)
    assert (len(first.feasible), first.evaluated) == (100, 100)
    assert (len(second.feasible), second.evaluated) == (100, 100)
    assert not set(first.feasible) & set(second.feasible)
    assert first.node in first.feasible and second.node in second.feasible
