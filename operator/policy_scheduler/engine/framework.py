"""The shapes every predicate and priority share, and the per-attempt cycle state.

A **predicate** is a pure function ``(pod, node_info, cycle) -> reasons``: an empty
tuple when the pod fits, otherwise kube-scheduler's failure reasons in its words. A
predicate never raises for "does not fit"; an exception is a bug, never a reason.

A **priority** scores all feasible nodes at once: ``(pod, nodes, cycle) -> scores``,
integers 0..10 in the order of ``nodes``. Most legacy priorities are a per-node *map*
plus an optional *reduce* over all scores (normalisation); :func:`mapped` builds a
priority from those two parts. Weights are not a priority's business: the algorithm
applies them in one place.

The :class:`CycleState` lives for one scheduling attempt of one pod (kube-scheduler's
``CycleState`` / predicate metadata): whatever a predicate or priority can compute once
per pod rather than once per node goes into ``cycle.memo(key, factory)``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol, TypeVar

from ..objects import Pod
from .cluster import ClusterState
from .nodeinfo import NodeInfo

T = TypeVar("T")

FITS: Final[tuple[str, ...]] = ()
Reasons = Sequence[str]


@dataclass(frozen=True, slots=True)
class PolicySettings:
    """Policy-wide knobs some predicates and priorities read."""

    hard_pod_affinity_weight: int = 1
    #: Extended resources managed by an extender with ignoredByScheduler.
    ignored_resources: frozenset[str] = frozenset()
    #: Use the fast paths (indexes, per-pod shortcuts, caches). False runs the plain
    #: definitions; a test decides randomized clusters both ways and compares.
    fast: bool = True


class CycleState:
    """Per-attempt memo: computed once per pod, read for every node."""

    __slots__ = ("_memo", "cluster", "pod", "settings")

    def __init__(self, pod: Pod, cluster: ClusterState, settings: PolicySettings) -> None:
        self.pod = pod
        self.cluster = cluster
        self.settings = settings
        self._memo: dict[str, Any] = {}

    def memo(self, key: str, factory: Callable[[], T]) -> T:
        try:
            value: T = self._memo[key]
        except KeyError:
            value = self._memo[key] = factory()
        return value


class Predicate(Protocol):
    def __call__(self, pod: Pod, node: NodeInfo, cycle: CycleState, /) -> Reasons: ...


class Priority(Protocol):
    def __call__(self, pod: Pod, nodes: Sequence[NodeInfo], cycle: CycleState, /) -> list[int]: ...


MapFunction = Callable[[Pod, NodeInfo, CycleState], int]
ReduceFunction = Callable[[Pod, Sequence[NodeInfo], CycleState, list[int]], None]


@dataclass(frozen=True, slots=True)
class Mapped:
    """A priority made of a per-node map and an optional in-place reduce."""

    map: MapFunction
    reduce: ReduceFunction | None = None

    def __call__(self, pod: Pod, nodes: Sequence[NodeInfo], cycle: CycleState) -> list[int]:
        fn = self.map
        scores = [fn(pod, node, cycle) for node in nodes]
        if self.reduce is not None:
            self.reduce(pod, nodes, cycle, scores)
        return scores


def mapped(map_fn: MapFunction, reduce_fn: ReduceFunction | None = None) -> Priority:
    return Mapped(map_fn, reduce_fn)


def normalize_reduce(max_priority: int, *, reverse: bool) -> ReduceFunction:
    """Legacy NormalizeReduce: scale to 0..max by the highest score, optionally reversed."""

    def reduce(pod: Pod, nodes: Sequence[NodeInfo], cycle: CycleState, scores: list[int]) -> None:
        highest = max(scores, default=0)
        if highest == 0:
            if reverse:
                scores[:] = [max_priority] * len(scores)
            return
        for i, score in enumerate(scores):
            scaled = go_div(max_priority * score, highest)
            scores[i] = max_priority - scaled if reverse else scaled

    return reduce


def go_div(a: int, b: int) -> int:
    """Integer division truncating toward zero, as Go's ``/`` on integers."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


@dataclass(frozen=True, slots=True)
class Registry:
    """Names bound to functions; filled by the predicate and priority families."""

    predicates: dict[str, Predicate] = field(default_factory=dict)
    priorities: dict[str, Priority] = field(default_factory=dict)
    #: Argument kind -> factory taking the policy's argument model.
    predicate_factories: dict[str, Callable[[Any], Predicate]] = field(default_factory=dict)
    priority_factories: dict[str, Callable[[Any], Priority]] = field(default_factory=dict)


REGISTRY: Final = Registry()


def predicate(name: str) -> Callable[[Predicate], Predicate]:
    def register(fn: Predicate) -> Predicate:
        REGISTRY.predicates[name] = fn
        return fn

    return register


def register_priority(name: str, fn: Priority) -> Priority:
    REGISTRY.priorities[name] = fn
    return fn


def predicate_factory(
    kind: str,
) -> Callable[[Callable[[Any], Predicate]], Callable[[Any], Predicate]]:
    def register(fn: Callable[[Any], Predicate]) -> Callable[[Any], Predicate]:
        REGISTRY.predicate_factories[kind] = fn
        return fn

    return register


def priority_factory(kind: str) -> Callable[[Callable[[Any], Priority]], Callable[[Any], Priority]]:
    def register(fn: Callable[[Any], Priority]) -> Callable[[Any], Priority]:
        REGISTRY.priority_factories[kind] = fn
        return fn

    return register
