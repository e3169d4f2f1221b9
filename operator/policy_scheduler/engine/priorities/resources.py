"""Resource priorities: how full a node would be with the pod on it.

kube-scheduler's legacy ``ResourceAllocationPriority`` family (v1.13-v1.17), each a plain
per-node map with no reduce step:

* **LeastRequestedPriority** — per resource ``(capacity - requested) * 10 // capacity``
  (0 when the capacity is 0 or the request exceeds it), cpu and memory averaged with
  integer division: spreads pods over empty nodes.
* **MostRequestedPriority** — per resource ``requested * 10 // capacity`` with the same
  guards, averaged: packs pods onto full nodes.
* **BalancedResourceAllocation** — ``int((1 - |cpuFraction - memFraction|) * 10)`` with
  float64 fractions (a zero capacity counts as a full fraction of 1); 0 as soon as either
  fraction reaches 1.
* **ResourceLimitsPriority** — 1 when the pod's cpu limit or memory limit is non-zero and
  fits the node's (non-zero) allocatable, else 0.
* **RequestedToCapacityRatioPriority** — utilization ``100 - (capacity - requested) * 100
  // capacity`` (100 when the capacity is 0 or exceeded) fed through a broken linear
  function of (utilization, score) points, Go integer arithmetic throughout. The
  built-in uses the shape ``{0: 10, 100: 0}``; the ``requestedToCapacityRatioArguments``
  factory takes a shape and optional weighted resources.

"requested" is what the node already holds plus what the pod adds. For cpu and memory it
is the *non-zero* request (a container that does not mention cpu counts 100m, one that
does not mention memory 200Mi, an explicit "0" stays 0): ``NodeInfo.nonzero_*`` plus
``Pod.nonzero_*``. Other resources of RequestedToCapacityRatio use the real requests.
Capacity is always the node's allocatable.

How RequestedToCapacityRatio combines per-resource scores follows v1.16/v1.17, the
versions that have the ``resources`` argument: every resource in the weight map (cpu
and memory, weight 1 each, when the argument names none) whose score is positive adds
``score * weight``; the total is divided by the summed weights of those resources and
rounded half away from zero (Go's ``math.Round``); no positive score gives 0. v1.15 had
no weights and returned ``(cpu + memory) // 2``; both agree on upstream's test tables,
and differ only when a resource scores 0 or the average has a half.

Every map here reads the pod and its one node only: all are hinted ``node_local`` for
the fast path's equivalence cache; ResourceLimitsPriority is a constant 0 for a pod
without limits. LeastRequested, MostRequested and BalancedResourceAllocation also have a
``batch`` form, the same arithmetic over a list of nodes in one loop, inline (a node
without capacity or overcommitted goes through the maps' own steps); LeastRequested's
and BalancedResourceAllocation's are computed together, once per attempt.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ... import names
from ...objects import CPU, EPHEMERAL_STORAGE, MEMORY, Pod, is_scalar_resource
from ..functions import (
    CycleState,
    Priority,
    go_div,
    hint,
    mapped,
    priority_factory,
    register_priority,
)
from ..nodeinfo import MEMO_LIMIT, NodeInfo, memo_key

MAX_PRIORITY: Final = names.MAX_PRIORITY
MAX_UTILIZATION: Final = 100

#: The weights RequestedToCapacityRatio uses when its argument names no resources.
DEFAULT_RATIO_RESOURCES: Final[Mapping[str, int]] = {CPU: 1, MEMORY: 1}


def _nonzero_requested(pod: Pod, info: NodeInfo) -> tuple[int, int]:
    """cpu (millicores) and memory (bytes) on the node with the pod, defaults applied."""
    return info.nonzero_cpu + pod.nonzero_cpu, info.nonzero_memory + pod.nonzero_memory


# -- LeastRequested / MostRequested -------------------------------------------------------


def least_requested_score(requested: int, capacity: int) -> int:
    """Share of the capacity left free, 0..10; 0 for no capacity or an overcommit."""
    if capacity == 0 or requested > capacity:
        return 0
    if capacity > 0:
        # Both operands non-negative: Go's truncation is floor division, without a call.
        return (capacity - requested) * MAX_PRIORITY // capacity
    return go_div((capacity - requested) * MAX_PRIORITY, capacity)


def most_requested_score(requested: int, capacity: int) -> int:
    """Share of the capacity used, 0..10; 0 for no capacity or an overcommit."""
    if capacity == 0 or requested > capacity:
        return 0
    return go_div(requested * MAX_PRIORITY, capacity)


def least_requested(pod: Pod, info: NodeInfo, cycle: CycleState) -> int:
    allocatable = info.node.allocatable
    total = least_requested_score(
        info.nonzero_cpu + pod.nonzero_cpu, allocatable.milli_cpu
    ) + least_requested_score(info.nonzero_memory + pod.nonzero_memory, allocatable.memory)
    return total // 2 if total >= 0 else go_div(total, 2)


def most_requested(pod: Pod, info: NodeInfo, cycle: CycleState) -> int:
    cpu, memory = _nonzero_requested(pod, info)
    allocatable = info.node.allocatable
    return go_div(
        most_requested_score(cpu, allocatable.milli_cpu)
        + most_requested_score(memory, allocatable.memory),
        2,
    )


def _resource_pairs(pod: Pod, nodes: Sequence[NodeInfo]) -> list[tuple[int, int]]:
    """LeastRequested and BalancedResourceAllocation of each node for the pod's non-zero
    requests, the maps' arithmetic step for step, inline in one loop; each node's pair is
    kept in its ``scores`` under the requests (see :mod:`..nodeinfo`): what the pair reads
    of the node changes only with its pods or itself, which replace that dict."""
    pod_cpu, pod_memory = pod.nonzero_cpu, pod.nonzero_memory
    key = memo_key((_PAIR, pod_cpu, pod_memory))
    out: list[tuple[int, int]] = []
    append = out.append
    for info in nodes:
        memo = info.scores
        pair = memo.get(key)
        if pair is not None:
            append(pair)
            continue
        allocatable = info.allocatable
        cpu_capacity = allocatable.milli_cpu
        memory_capacity = allocatable.memory
        cpu = info.nonzero_cpu + pod_cpu
        memory = info.nonzero_memory + pod_memory
        if (
            cpu_capacity > 0
            and cpu <= cpu_capacity
            and memory_capacity > 0
            and memory <= memory_capacity
        ):
            # Both least-requested scores are non-negative: their sum halves by floor
            # division. Neither fraction reaches 1 unless the request fills the capacity.
            cpu_fraction = float(cpu) / float(cpu_capacity)
            memory_fraction = float(memory) / float(memory_capacity)
            pair = (
                (
                    (cpu_capacity - cpu) * MAX_PRIORITY // cpu_capacity
                    + (memory_capacity - memory) * MAX_PRIORITY // memory_capacity
                )
                // 2,
                0
                if cpu_fraction >= 1 or memory_fraction >= 1
                else int((1 - abs(cpu_fraction - memory_fraction)) * MAX_PRIORITY),
            )
        else:
            pair = _edge_pair(cpu, cpu_capacity, memory, memory_capacity)
        if len(memo) >= MEMO_LIMIT:
            memo.clear()
        memo[key] = pair
        append(pair)
    return out


#: What a node's ``scores`` holds the resource pair under (with the pod's requests).
_PAIR: Final = "priorities.resources.pair"


def _edge_pair(cpu: int, cpu_capacity: int, memory: int, memory_capacity: int) -> tuple[int, int]:
    """The pair for a node without capacity or overcommitted, as the maps compute it."""
    total = least_requested_score(cpu, cpu_capacity) + least_requested_score(
        memory, memory_capacity
    )
    least = total // 2 if total >= 0 else go_div(total, 2)
    cpu_fraction = fraction_of_capacity(cpu, cpu_capacity)
    memory_fraction = fraction_of_capacity(memory, memory_capacity)
    if cpu_fraction >= 1 or memory_fraction >= 1:
        return least, 0
    return least, int((1 - abs(cpu_fraction - memory_fraction)) * MAX_PRIORITY)


_PAIRS_MEMO: Final = "priorities.resources.pairs"


def _attempt_pairs(pod: Pod, nodes: Sequence[NodeInfo], cycle: CycleState) -> list[tuple[int, int]]:
    """:func:`_resource_pairs` once per attempt and list of nodes: both priorities score
    the same feasible nodes. (Held with the list itself, so that its id is not reused.)"""
    by_list: dict[int, tuple[Sequence[NodeInfo], list[tuple[int, int]]]] = cycle.memo(
        _PAIRS_MEMO, dict
    )
    known = by_list.get(id(nodes))
    if known is not None and known[0] is nodes:
        return known[1]
    pairs = _resource_pairs(pod, nodes)
    by_list[id(nodes)] = (nodes, pairs)
    return pairs


def least_requested_batch(pod: Pod, nodes: Sequence[NodeInfo], cycle: CycleState) -> list[int]:
    """``least_requested`` over ``nodes`` (:func:`_resource_pairs`)."""
    return [pair[0] for pair in _attempt_pairs(pod, nodes, cycle)]


def most_requested_batch(pod: Pod, nodes: Sequence[NodeInfo], cycle: CycleState) -> list[int]:
    """``most_requested`` over ``nodes``: inline where both capacities hold the request."""
    pod_cpu, pod_memory = pod.nonzero_cpu, pod.nonzero_memory
    out: list[int] = []
    for info in nodes:
        allocatable = info.allocatable
        cpu_capacity = allocatable.milli_cpu
        memory_capacity = allocatable.memory
        cpu = info.nonzero_cpu + pod_cpu
        memory = info.nonzero_memory + pod_memory
        if (
            cpu_capacity > 0
            and 0 <= cpu <= cpu_capacity
            and memory_capacity > 0
            and 0 <= memory <= memory_capacity
        ):
            out.append(
                (cpu * MAX_PRIORITY // cpu_capacity + memory * MAX_PRIORITY // memory_capacity) // 2
            )
        else:
            out.append(most_requested(pod, info, cycle))
    return out


# -- BalancedResourceAllocation -----------------------------------------------------------


def fraction_of_capacity(requested: int, capacity: int) -> float:
    """float64(requested) / float64(capacity); a node without the resource counts as full."""
    if capacity == 0:
        return 1.0
    return float(requested) / float(capacity)


def balanced_resource_allocation(pod: Pod, info: NodeInfo, cycle: CycleState) -> int:
    allocatable = info.node.allocatable
    cpu_fraction = fraction_of_capacity(info.nonzero_cpu + pod.nonzero_cpu, allocatable.milli_cpu)
    memory_fraction = fraction_of_capacity(
        info.nonzero_memory + pod.nonzero_memory, allocatable.memory
    )
    if cpu_fraction >= 1 or memory_fraction >= 1:
        # An overcommitted (or resource-less) node is never "balanced".
        return 0
    # Go converts the float64 product to int64 by truncation.
    return int((1 - abs(cpu_fraction - memory_fraction)) * MAX_PRIORITY)


def balanced_resource_allocation_batch(
    pod: Pod, nodes: Sequence[NodeInfo], cycle: CycleState
) -> list[int]:
    """``balanced_resource_allocation`` over ``nodes`` (:func:`_resource_pairs`)."""
    return [pair[1] for pair in _attempt_pairs(pod, nodes, cycle)]


# -- ResourceLimitsPriority ---------------------------------------------------------------


def _limit_fits(limit: int, allocatable: int) -> bool:
    return limit != 0 and allocatable != 0 and limit <= allocatable


def resource_limits(pod: Pod, info: NodeInfo, cycle: CycleState) -> int:
    """1 when either the cpu or the memory limit of the pod fits the node, else 0."""
    allocatable = info.node.allocatable
    if _limit_fits(pod.limit_cpu, allocatable.milli_cpu) or _limit_fits(
        pod.limit_memory, allocatable.memory
    ):
        return 1
    return 0


# -- RequestedToCapacityRatioPriority -----------------------------------------------------


@dataclass(frozen=True, slots=True)
class ShapePoint:
    """One point of a RequestedToCapacityRatio shape: utilization (%) -> score."""

    utilization: int
    score: int


#: Least utilized nodes first: an empty node scores 10, a full one 0.
DEFAULT_SHAPE: Final[tuple[ShapePoint, ...]] = (
    ShapePoint(0, MAX_PRIORITY),
    ShapePoint(MAX_UTILIZATION, 0),
)


def broken_linear(shape: Sequence[ShapePoint], p: int) -> int:
    """The piecewise-linear function through ``shape``, flat beyond its ends.

    Integer arithmetic as Go does it: the interpolation divides with truncation toward
    zero, so on a falling segment the score is rounded *up* (10 -> 0 over 0..100 gives
    3 at 75, not 2).
    """
    for i, point in enumerate(shape):
        if p <= point.utilization:
            if i == 0:
                return point.score
            prev = shape[i - 1]
            return prev.score + go_div(
                (point.score - prev.score) * (p - prev.utilization),
                point.utilization - prev.utilization,
            )
    return shape[-1].score


def utilization(requested: int, capacity: int) -> int:
    """Percent of the capacity requested, rounded up; 100 for no capacity or an overcommit."""
    if capacity == 0 or requested > capacity:
        return MAX_UTILIZATION
    return MAX_UTILIZATION - go_div((capacity - requested) * MAX_UTILIZATION, capacity)


def go_round(x: float) -> int:
    """Go's math.Round: to the nearest integer, halves away from zero."""
    truncated = math.trunc(x)
    if abs(x - truncated) >= 0.5:
        truncated += 1 if x > 0 else -1
    return truncated


def _requested_and_capacity(pod: Pod, info: NodeInfo, resource: str) -> tuple[int, int]:
    """calculateResourceAllocatableRequest: (requested with the pod, allocatable)."""
    allocatable = info.node.allocatable
    if resource == CPU:
        return info.nonzero_cpu + pod.nonzero_cpu, allocatable.milli_cpu
    if resource == MEMORY:
        return info.nonzero_memory + pod.nonzero_memory, allocatable.memory
    if resource == EPHEMERAL_STORAGE:
        return (
            info.requested_ephemeral + pod.request.ephemeral_storage,
            allocatable.ephemeral_storage,
        )
    if is_scalar_resource(resource):
        return (
            info.requested_scalar.get(resource, 0) + pod.request.scalar.get(resource, 0),
            allocatable.scalar.get(resource, 0),
        )
    # Anything else (e.g. "pods") is not counted by upstream: it reads as (0, 0), which
    # is "no capacity" and therefore maximal utilization.
    return 0, 0


MapFn = Callable[[Pod, NodeInfo, CycleState], int]


def requested_to_capacity_ratio_map(
    shape: Sequence[ShapePoint], weights: Mapping[str, int]
) -> MapFn:
    """The per-node map for one shape and resource weight map."""
    points = tuple(shape)
    resources = tuple(weights.items())

    def score(pod: Pod, info: NodeInfo, cycle: CycleState) -> int:
        total = 0
        weight_sum = 0
        for resource, weight in resources:
            requested, capacity = _requested_and_capacity(pod, info, resource)
            resource_score = broken_linear(points, utilization(requested, capacity))
            # A resource scoring 0 does not drag the average down (v1.16+).
            if resource_score > 0:
                total += resource_score * weight
                weight_sum += weight
        if weight_sum == 0:
            return 0
        return go_round(float(total) / float(weight_sum))

    return score


@priority_factory("requestedToCapacityRatioArguments")
def requested_to_capacity_ratio_arguments(argument: Any) -> Priority:
    """A RequestedToCapacityRatio priority from the policy's argument.

    ``argument.shape`` lists ``utilization``/``score`` points (validated by the policy
    model: strictly increasing utilization in 0..100, scores 0..10); ``argument.resources``
    optionally lists ``name``/``weight`` pairs — absent or empty means cpu and memory,
    weight 1 each. A repeated name keeps its last weight and a weight of 0 counts as 1,
    as the legacy factory built its map.
    """
    shape = tuple(ShapePoint(int(p.utilization), int(p.score)) for p in argument.shape)
    weights: dict[str, int] = {}
    for resource in getattr(argument, "resources", None) or ():
        weights[str(resource.name)] = int(resource.weight) or 1
    return mapped(
        hint(
            requested_to_capacity_ratio_map(shape, weights or DEFAULT_RATIO_RESOURCES),
            node_local=True,
        )
    )


def _without_limits(pod: Pod) -> int | None:
    """ResourceLimits scores 0 everywhere for a pod without a cpu or memory limit."""
    return 0 if pod.limit_cpu == 0 and pod.limit_memory == 0 else None


register_priority(
    names.LEAST_REQUESTED,
    mapped(hint(least_requested, node_local=True, batch=least_requested_batch)),
)
register_priority(
    names.MOST_REQUESTED,
    mapped(hint(most_requested, node_local=True, batch=most_requested_batch)),
)
register_priority(
    names.BALANCED_RESOURCE_ALLOCATION,
    mapped(
        hint(
            balanced_resource_allocation,
            node_local=True,
            batch=balanced_resource_allocation_batch,
        )
    ),
)
register_priority(
    names.RESOURCE_LIMITS,
    mapped(hint(resource_limits, node_local=True, constant=_without_limits)),
)
register_priority(
    names.REQUESTED_TO_CAPACITY_RATIO,
    mapped(
        hint(
            requested_to_capacity_ratio_map(DEFAULT_SHAPE, DEFAULT_RATIO_RESOURCES),
            node_local=True,
        )
    ),
)
