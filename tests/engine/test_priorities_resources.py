"""Resource priorities: upstream's test tables (0..10 scale) plus the edge cases around them.

Ported from kube-scheduler's priorities package: TestLeastRequested, TestMostRequested,
TestBalancedResourceAllocation, TestResourceLimitsPriority, TestBrokenLinearFunction,
TestRequestedToCapacityRatio, TestResourceBinPackingSingleExtended and
TestResourceBinPackingMultipleExtended. Upstream's ``makeNode(name, milliCPU, memory)``
is :func:`mk`; its pod specs are the dicts below.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from builders import cluster, container, cycle, node, pod
from policy_scheduler import names
from policy_scheduler.engine import catalogue  # noqa: F401  (registers every family)
from policy_scheduler.engine.functions import REGISTRY, Priority
from policy_scheduler.engine.priorities.resources import (
    ShapePoint,
    broken_linear,
    go_round,
    utilization,
)
from policy_scheduler.objects import parse_pod
from policy_scheduler.policy import RequestedToCapacityRatioArguments

MB = 1024 * 1024


def mk(name: str, milli_cpu: int, memory: int) -> dict[str, Any]:
    return node(name, allocatable={"cpu": f"{milli_cpu}m", "memory": str(memory), "pods": 110})


def spec(*requests: Mapping[str, str], node_name: str | None = None) -> dict[str, Any]:
    """A pod with one container per request map (upstream's PodSpec fixtures)."""
    return pod(
        "p",
        containers=[container(dict(r)) for r in requests],
        node_name=node_name,
    )


def no_resources(node_name: str | None = None) -> dict[str, Any]:
    return pod("empty", containers=[], node_name=node_name)


def cpu_only(node_name: str | None = "machine1") -> dict[str, Any]:
    return spec(
        {"cpu": "1000m", "memory": "0"}, {"cpu": "2000m", "memory": "0"}, node_name=node_name
    )


def cpu_and_memory(node_name: str | None = "machine2") -> dict[str, Any]:
    return spec(
        {"cpu": "1000m", "memory": "2000"}, {"cpu": "2000m", "memory": "3000"}, node_name=node_name
    )


def big_cpu_and_memory() -> dict[str, Any]:
    return spec({"cpu": "2000m", "memory": "4000"}, {"cpu": "3000m", "memory": "5000"})


def run(
    priority: str | Priority,
    incoming: Mapping[str, Any],
    nodes: Sequence[Mapping[str, Any]],
    placed: Sequence[Mapping[str, Any]] = (),
) -> list[int]:
    """Scores of ``nodes`` (in their order) for the incoming pod, placed pods accounted."""
    fn = REGISTRY.priorities[priority] if isinstance(priority, str) else priority
    state = cluster(nodes, placed)
    p = parse_pod(incoming)
    infos = [state.nodes[n["metadata"]["name"]] for n in nodes]
    return fn(p, infos, cycle(p, state))


# Four placed pods without containers (upstream's machine1Spec / machine2Spec).
BARE_PODS = [
    no_resources("machine1"),
    no_resources("machine1"),
    no_resources("machine2"),
    no_resources("machine2"),
]
# cpuOnly x2 on machine1, cpuOnly2 and cpuAndMemory on machine2.
LOADED_PODS = [cpu_only("machine1"), cpu_only("machine1"), cpu_only("machine2"), cpu_and_memory()]
# cpuOnly on machine1, cpuAndMemory on machine2.
SOME_PODS = [cpu_only("machine1"), cpu_and_memory("machine2")]

SMALL = [mk("machine1", 4000, 10000), mk("machine2", 4000, 10000)]
DIFFERENT = [mk("machine1", 4000, 10000), mk("machine2", 6000, 10000)]
BIG = [mk("machine1", 10000, 20000), mk("machine2", 10000, 20000)]
BIG_DIFFERENT = [mk("machine1", 10000, 20000), mk("machine2", 10000, 50000)]
ZERO = [mk("machine1", 0, 0), mk("machine2", 0, 0)]


# -- LeastRequestedPriority ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("incoming", "nodes", "placed", "expected"),
    [
        pytest.param(no_resources(), SMALL, [], [10, 10], id="nothing-scheduled-nothing-requested"),
        # cpu (4000-3000)*10/4000=2, mem 5 -> 3; cpu 5, mem 5 -> 5
        pytest.param(cpu_and_memory(None), DIFFERENT, [], [3, 5], id="differently-sized-machines"),
        pytest.param(no_resources(), SMALL, BARE_PODS, [10, 10], id="no-requests-pods-scheduled"),
        # machine1: cpu 6000/10000 -> 4, mem 0 -> 10 => 7; machine2: 4, 15000/20000 -> 7 => 5
        pytest.param(no_resources(), BIG, LOADED_PODS, [7, 5], id="pods-scheduled-with-resources"),
        pytest.param(cpu_and_memory(None), BIG, SOME_PODS, [5, 4], id="requested-and-scheduled"),
        pytest.param(
            cpu_and_memory(None), BIG_DIFFERENT, SOME_PODS, [5, 6], id="requested-different-sizes"
        ),
        # cpu 6000 > 4000 -> 0 on both; memory 10 and 5
        pytest.param(cpu_only(None), SMALL, SOME_PODS, [5, 2], id="requests-exceed-capacity"),
        pytest.param(no_resources(), ZERO, SOME_PODS, [0, 0], id="zero-node-resources"),
    ],
)
def test_least_requested_upstream_table(
    incoming: dict[str, Any],
    nodes: list[dict[str, Any]],
    placed: list[dict[str, Any]],
    expected: list[int],
) -> None:
    assert run(names.LEAST_REQUESTED, incoming, nodes, placed) == expected


# -- MostRequestedPriority ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("incoming", "nodes", "placed", "expected"),
    [
        pytest.param(no_resources(), SMALL, [], [0, 0], id="nothing-scheduled-nothing-requested"),
        # cpu 3000*10/4000=7, mem 5 -> 6; 5, 5 -> 5
        pytest.param(cpu_and_memory(None), DIFFERENT, [], [6, 5], id="differently-sized-machines"),
        pytest.param(no_resources(), BIG, LOADED_PODS, [3, 4], id="pods-scheduled-with-resources"),
        pytest.param(cpu_and_memory(None), BIG, SOME_PODS, [4, 5], id="requested-and-scheduled"),
        # machine1: cpu 5000 > 4000 -> 0, mem 9 => 4; machine2: cpu 5, mem 9000 > 8000 -> 0 => 2
        pytest.param(
            big_cpu_and_memory(),
            [mk("machine1", 4000, 10000), mk("machine2", 10000, 8000)],
            [],
            [4, 2],
            id="requests-exceed-capacity",
        ),
        pytest.param(cpu_and_memory(None), ZERO, [], [0, 0], id="zero-node-resources"),
    ],
)
def test_most_requested_upstream_table(
    incoming: dict[str, Any],
    nodes: list[dict[str, Any]],
    placed: list[dict[str, Any]],
    expected: list[int],
) -> None:
    assert run(names.MOST_REQUESTED, incoming, nodes, placed) == expected


# -- BalancedResourceAllocation -----------------------------------------------------------


@pytest.mark.parametrize(
    ("incoming", "nodes", "placed", "expected"),
    [
        pytest.param(no_resources(), SMALL, [], [10, 10], id="nothing-scheduled-nothing-requested"),
        # 0.75 vs 0.5 -> 7; 0.5 vs 0.5 -> 10
        pytest.param(cpu_and_memory(None), DIFFERENT, [], [7, 10], id="differently-sized-machines"),
        pytest.param(no_resources(), SMALL, BARE_PODS, [10, 10], id="no-requests-pods-scheduled"),
        # 0.6 vs 0 -> 4; 0.6 vs 0.25 -> 6
        pytest.param(no_resources(), BIG, LOADED_PODS, [4, 6], id="pods-scheduled-with-resources"),
        # 0.6 vs 0.25 -> 6; 0.6 vs 0.5 -> 9
        pytest.param(cpu_and_memory(None), BIG, SOME_PODS, [6, 9], id="requested-and-scheduled"),
        pytest.param(
            cpu_and_memory(None), BIG_DIFFERENT, SOME_PODS, [6, 6], id="requested-different-sizes"
        ),
        pytest.param(cpu_only(None), SMALL, SOME_PODS, [0, 0], id="requests-exceed-capacity"),
        pytest.param(no_resources(), ZERO, SOME_PODS, [0, 0], id="zero-node-resources"),
        # Exactly full on cpu: a fraction of 1 already scores 0.
        pytest.param(
            spec({"cpu": "4", "memory": "5000"}), SMALL, [], [0, 0], id="fraction-of-one-is-zero"
        ),
    ],
)
def test_balanced_resource_allocation_upstream_table(
    incoming: dict[str, Any],
    nodes: list[dict[str, Any]],
    placed: list[dict[str, Any]],
    expected: list[int],
) -> None:
    assert run(names.BALANCED_RESOURCE_ALLOCATION, incoming, nodes, placed) == expected


# -- the non-zero requests the three share -----------------------------------------------


@pytest.mark.parametrize(
    ("incoming", "least", "most", "balanced"),
    [
        # No requests at all: 100m of 1000m and 200Mi of 1000Mi.
        # least: (9 + 8) // 2 = 8; most: (1 + 2) // 2 = 1; balanced: 1 - |0.1 - 0.2| -> 9
        pytest.param(pod("p"), 8, 1, 9, id="no-requests-count-100m-200Mi"),
        # Explicit zeros stay zero: an empty node.
        pytest.param(pod("p", requests={"cpu": "0", "memory": "0"}), 10, 0, 10, id="explicit-zero"),
        # cpu mentioned, memory not: 500m and the 200Mi default.
        # least: (5 + 8) // 2 = 6; most: (5 + 2) // 2 = 3; balanced: 1 - 0.3 -> 7
        pytest.param(pod("p", requests={"cpu": "500m"}), 6, 3, 7, id="memory-defaulted-only"),
    ],
)
def test_pods_without_requests_count_defaults(
    incoming: dict[str, Any], least: int, most: int, balanced: int
) -> None:
    nodes = [node("n1", cpu="1", memory="1000Mi")]
    assert run(names.LEAST_REQUESTED, incoming, nodes) == [least]
    assert run(names.MOST_REQUESTED, incoming, nodes) == [most]
    assert run(names.BALANCED_RESOURCE_ALLOCATION, incoming, nodes) == [balanced]


def test_placed_pods_without_requests_count_defaults_on_their_node() -> None:
    # Two request-less pods hold 200m / 400Mi of the 1000m / 1000Mi node.
    placed = [pod("a", node_name="n1"), pod("b", node_name="n1")]
    incoming = pod("p", requests={"cpu": "0", "memory": "0"})
    nodes = [node("n1", cpu="1", memory="1000Mi")]
    assert run(names.LEAST_REQUESTED, incoming, nodes, placed) == [(8 + 6) // 2]
    assert run(names.MOST_REQUESTED, incoming, nodes, placed) == [(2 + 4) // 2]


# -- ResourceLimitsPriority ---------------------------------------------------------------


def limits(*items: Mapping[str, str]) -> dict[str, Any]:
    return pod("p", containers=[container(limits=dict(i)) for i in items])


CPU_LIMITS = limits({"cpu": "1000m", "memory": "0"}, {"cpu": "2000m", "memory": "0"})
MEM_LIMITS = limits({"cpu": "0", "memory": "2000"}, {"cpu": "0", "memory": "3000"})
BOTH_LIMITS = limits({"cpu": "1000m", "memory": "2000"}, {"cpu": "2000m", "memory": "3000"})


@pytest.mark.parametrize(
    ("incoming", "nodes", "expected"),
    [
        pytest.param(
            no_resources(),
            [mk("m1", 4000, 10000), mk("m2", 4000, 0), mk("m3", 0, 10000), mk("m4", 0, 0)],
            [0, 0, 0, 0],
            id="pod-without-limits",
        ),
        pytest.param(
            CPU_LIMITS, [mk("m1", 3000, 10000), mk("m2", 2000, 10000)], [1, 0], id="cpu-limits-only"
        ),
        pytest.param(
            MEM_LIMITS,
            [mk("m1", 4000, 4000), mk("m2", 5000, 10000)],
            [0, 1],
            id="memory-limits-only",
        ),
        pytest.param(
            BOTH_LIMITS, [mk("m1", 4000, 4000), mk("m2", 5000, 10000)], [1, 1], id="both-limits"
        ),
        pytest.param(BOTH_LIMITS, [mk("m1", 0, 0)], [0], id="node-without-allocatable"),
        # An init container's larger limit is what the pod needs (max, not sum).
        pytest.param(
            pod(
                "p",
                containers=[container(limits={"cpu": "1"})],
                init_containers=[container(limits={"cpu": "3"})],
            ),
            [mk("m1", 2000, 10000), mk("m2", 3000, 10000)],
            [0, 1],
            id="init-container-limit-counts",
        ),
    ],
)
def test_resource_limits_upstream_table(
    incoming: dict[str, Any], nodes: list[dict[str, Any]], expected: list[int]
) -> None:
    assert run(names.RESOURCE_LIMITS, incoming, nodes) == expected


# -- RequestedToCapacityRatioPriority -----------------------------------------------------


@pytest.mark.parametrize(
    ("points", "assertions"),
    [
        pytest.param(
            [(10, 1), (90, 9)],
            [
                (-10, 1),
                (0, 1),
                (9, 1),
                (10, 1),
                (15, 1),
                (19, 1),
                (20, 2),
                (89, 8),
                (90, 9),
                (99, 9),
                (100, 9),
                (110, 9),
            ],
            id="rising",
        ),
        pytest.param(
            [(0, 2), (40, 10), (100, 0)],
            [(-10, 2), (0, 2), (20, 6), (30, 8), (40, 10), (70, 5), (100, 0), (110, 0)],
            id="rising-then-falling",
        ),
        pytest.param(
            [(0, 2), (40, 2), (100, 2)],
            [(-10, 2), (0, 2), (20, 2), (30, 2), (40, 2), (70, 2), (100, 2), (110, 2)],
            id="flat",
        ),
        # Falling segments truncate toward zero, i.e. round the score *up*: 2.5 -> 3, not 2.
        pytest.param(
            [(0, 10), (100, 0)],
            [(0, 10), (1, 10), (9, 10), (10, 9), (75, 3), (99, 1), (100, 0)],
            id="falling-truncates-toward-zero",
        ),
        pytest.param(
            [(0, 10), (30, 0), (100, 5)],
            [(29, 1), (31, 0), (99, 4)],
            id="falling-then-rising",
        ),
    ],
)
def test_broken_linear_function(
    points: list[tuple[int, int]], assertions: list[tuple[int, int]]
) -> None:
    shape = [ShapePoint(u, s) for u, s in points]
    assert [(p, broken_linear(shape, p)) for p, _ in assertions] == assertions


@pytest.mark.parametrize(
    ("requested", "capacity", "expected"),
    [
        pytest.param(0, 4000, 0, id="empty"),
        pytest.param(3000, 4000, 75, id="three-quarters"),
        # 100 - (3 - 1) * 100 // 3 = 100 - 66: utilization rounds up.
        pytest.param(1, 3, 34, id="rounds-up"),
        pytest.param(4000, 4000, 100, id="full"),
        pytest.param(4001, 4000, 100, id="overcommitted"),
        pytest.param(0, 0, 100, id="no-capacity"),
    ],
)
def test_utilization(requested: int, capacity: int, expected: int) -> None:
    assert utilization(requested, capacity) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [(0.5, 1), (1.5, 2), (2.5, 3), (2.4999, 2), (3.875, 4), (3.125, 3), (-0.5, -1), (0.0, 0)],
)
def test_go_round_halves_away_from_zero(value: float, expected: int) -> None:
    assert go_round(value) == expected


def used(node_name: str, milli_cpu: int, memory: int) -> dict[str, Any]:
    return pod(
        f"used-{node_name}",
        requests={"cpu": f"{milli_cpu}m", "memory": str(memory)},
        node_name=node_name,
    )


def asking(milli_cpu: int, memory: int) -> dict[str, Any]:
    return pod("p", requests={"cpu": f"{milli_cpu}m", "memory": str(memory)})


@pytest.mark.parametrize(
    ("incoming", "nodes", "placed", "expected"),
    [
        pytest.param(
            asking(0, 0),
            SMALL,
            [used("machine1", 0, 0), used("machine2", 0, 0)],
            [10, 10],
            id="nothing-scheduled-nothing-requested",
        ),
        # machine1: cpu util 75 -> 3, memory util 50 -> 5 => 4; machine2: 5 and 5 => 5
        pytest.param(
            asking(3000, 5000),
            DIFFERENT,
            [used("machine1", 0, 0), used("machine2", 0, 0)],
            [4, 5],
            id="resources-requested-differently-sized",
        ),
        pytest.param(
            asking(0, 0),
            DIFFERENT,
            [used("machine1", 3000, 5000), used("machine2", 3000, 5000)],
            [4, 5],
            id="pods-scheduled-with-resources",
        ),
        # Both resources overcommitted or absent: utilization 100 -> 0 on both.
        pytest.param(asking(5000, 20000), SMALL, [], [0, 0], id="overcommitted"),
        pytest.param(asking(0, 0), ZERO, [], [0, 0], id="zero-capacity"),
        # cpu util 100 scores 0 and is left out; memory util 20 scores 8 (v1.16+ weighting).
        pytest.param(asking(4000, 2000), SMALL, [], [8, 8], id="zero-score-resource-left-out"),
        # cpu util 10 -> 9, memory util 40 -> 6: 7.5 rounds half away from zero to 8.
        pytest.param(asking(400, 4000), SMALL, [], [8, 8], id="average-rounds-half-up"),
        # No requests: 100m / 200Mi defaults. cpu util 100-(900*100//1000)=10 -> 9;
        # memory 200Mi of 1000Mi: util 20 -> 8 => round(8.5) = 9
        pytest.param(pod("p"), [node("n1", cpu="1", memory="1000Mi")], [], [9], id="defaults"),
    ],
)
def test_requested_to_capacity_ratio_default_shape(
    incoming: dict[str, Any],
    nodes: list[dict[str, Any]],
    placed: list[dict[str, Any]],
    expected: list[int],
) -> None:
    assert run(names.REQUESTED_TO_CAPACITY_RATIO, incoming, nodes, placed) == expected


def ratio(shape: list[tuple[int, int]], resources: list[tuple[str, int]] | None = None) -> Priority:
    argument: dict[str, Any] = {"shape": [{"utilization": u, "score": s} for u, s in shape]}
    if resources is not None:
        argument["resources"] = [{"name": n, "weight": w} for n, w in resources]
    factory = REGISTRY.priority_factories["requestedToCapacityRatioArguments"]
    return factory(RequestedToCapacityRatioArguments.model_validate(argument))


BIN_PACKING = [(0, 0), (100, 10)]


def ext_node(name: str, **amounts: int) -> dict[str, Any]:
    alloc: dict[str, Any] = {"cpu": "4000m", "memory": str(10000 * MB), "pods": 110}
    alloc.update({f"intel.com/{k}": v for k, v in amounts.items()})
    return node(name, allocatable=alloc)


def ext_pod(node_name: str | None = None, **amounts: int) -> dict[str, Any]:
    return pod(
        f"ext-{node_name}",
        containers=[container({f"intel.com/{k}": str(v) for k, v in amounts.items()})],
        node_name=node_name,
    )


SINGLE_NODES = [ext_node("machine1", foo=8), ext_node("machine2", foo=4)]


@pytest.mark.parametrize(
    ("incoming", "placed", "expected"),
    [
        pytest.param(no_resources(), [], [0, 0], id="nothing-scheduled-nothing-requested"),
        # 2 of 8 -> util 25 -> 2; 2 of 4 -> 50 -> 5
        pytest.param(ext_pod(foo=2), [], [2, 5], id="requested-pods-scheduled-with-less"),
        pytest.param(
            ext_pod(foo=2), [ext_pod("machine2", foo=2)], [2, 10], id="existing-pod-on-machine2"
        ),
        pytest.param(ext_pod(foo=4), [], [5, 10], id="requested-more"),
    ],
)
def test_bin_packing_single_extended_resource(
    incoming: dict[str, Any], placed: list[dict[str, Any]], expected: list[int]
) -> None:
    priority = ratio(BIN_PACKING, [("intel.com/foo", 1)])
    assert run(priority, incoming, SINGLE_NODES, placed) == expected


MULTI_NODES = [ext_node("machine1", foo=8, bar=4), ext_node("machine2", foo=4, bar=8)]


@pytest.mark.parametrize(
    ("incoming", "placed", "expected"),
    [
        pytest.param(no_resources(), [], [0, 0], id="nothing-scheduled-nothing-requested"),
        # machine1: foo 2 (x3), bar 5 (x5) -> 31/8 = 3.875 -> 4; machine2: 25/8 -> 3
        pytest.param(ext_pod(foo=2, bar=2), [], [4, 3], id="requested-pods-scheduled-with-less"),
        # machine2: foo 10 (x3), bar 5 (x5) -> 55/8 = 6.875 -> 7
        pytest.param(
            ext_pod(foo=2, bar=2),
            [ext_pod("machine2", foo=2, bar=2)],
            [4, 7],
            id="existing-pod-on-machine2",
        ),
        pytest.param(ext_pod(foo=4, bar=2), [], [5, 5], id="requested-more"),
    ],
)
def test_bin_packing_multiple_extended_resources(
    incoming: dict[str, Any], placed: list[dict[str, Any]], expected: list[int]
) -> None:
    priority = ratio(BIN_PACKING, [("intel.com/foo", 3), ("intel.com/bar", 5)])
    assert run(priority, incoming, MULTI_NODES, placed) == expected


@pytest.mark.parametrize(
    ("shape", "resources", "incoming", "expected"),
    [
        # Without resources the argument means cpu and memory, weight 1 each; bin packing
        # prefers the node the pod fills most: cpu util 75 -> 7, memory 50 -> 5 => 6.
        pytest.param(BIN_PACKING, None, asking(3000, 5000), [6, 5], id="default-resources"),
        pytest.param(BIN_PACKING, [], asking(3000, 5000), [6, 5], id="empty-resources"),
        pytest.param(BIN_PACKING, [("cpu", 1)], asking(3000, 5000), [7, 5], id="cpu-only"),
        # A node without the extended resource reads as fully utilized.
        pytest.param(
            BIN_PACKING, [("example.com/gpu", 1)], asking(0, 0), [10, 10], id="absent-resource-full"
        ),
        # Resources upstream does not count ("pods") read as (0, 0): fully utilized.
        pytest.param(
            [(0, 10), (100, 0)], [("pods", 1)], asking(0, 0), [0, 0], id="pods-not-counted"
        ),
    ],
)
def test_requested_to_capacity_ratio_arguments(
    shape: list[tuple[int, int]],
    resources: list[tuple[str, int]] | None,
    incoming: dict[str, Any],
    expected: list[int],
) -> None:
    assert run(ratio(shape, resources), incoming, DIFFERENT) == expected


def test_ephemeral_storage_uses_real_requests() -> None:
    nodes = [node("n1", allocatable={"cpu": "1", "memory": "1Gi", "ephemeral-storage": "10Gi"})]
    placed = [
        pod("a", containers=[container({"ephemeral-storage": "4Gi"})], node_name="n1"),
    ]
    incoming = pod("p", containers=[container({"ephemeral-storage": "1Gi"})])
    # 5Gi of 10Gi -> utilization 50 -> 5 on the bin-packing shape.
    assert run(ratio(BIN_PACKING, [("ephemeral-storage", 1)]), incoming, nodes, placed) == [5]
