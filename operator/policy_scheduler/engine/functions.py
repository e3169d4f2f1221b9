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

**Hints** (:func:`hint`) are what a predicate or a priority's map function declares
about itself so that the fast path (``PolicySettings.fast``) can plan a pod's attempt,
kube-scheduler's PreFilter "skip" and its old equivalence cache in one:

* ``never_fails(pod)`` — True when the predicate returns ``FITS`` on every node for this
  pod (a pod without volumes and a volume predicate): the plan drops it;
* ``fits_everywhere(pod, cycle)`` — the same, for this attempt's cluster
  (MatchInterPodAffinity when neither the pod nor any placed pod has a required
  (anti-)affinity term): the plan drops it too;
* ``constant(pod)`` — a map score every node gets for this pod (NodePreferAvoidPods for
  a pod without an RC/RS controller), or None: the plan fills the list without calling
  the map per node (the reduce still runs);
* ``node_local`` — the result depends only on the pod's scheduling-relevant fields
  (``Pod.fingerprint``), the policy settings and the one :class:`NodeInfo` (everything
  its ``generation`` versions): the algorithm may serve it from its equivalence cache;
* ``context(cycle)`` — for a node-local function that also reads something
  cluster-wide (ImageLocality's image spread): a hashable value computed once per
  attempt that becomes part of the cache key;
* ``screen(pod, nodes, cycle)`` — for a predicate: the positions (ascending) in
  ``nodes`` of the nodes where it *may* fail for this pod; it fits every other node.
  The algorithm calls the predicate itself only on those, so the reasons are always
  the predicate's own; a screen that cannot tell returns every position. One pass
  over a chunk of nodes instead of a call per node;
* ``batch(pod, nodes, cycle)`` — for a map function: the map's score for each of
  ``nodes``, in order, exactly ``[map(pod, node, cycle) for node in nodes]`` computed in
  one pass.

A hint must be exact: the plan's decision equals the plain definition's, reason for
reason and score for score (``tests/engine/test_fast_path.py`` compares both on
randomized clusters).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol, TypeVar

from ..objects import Pod
from .cluster import ClusterState
from .nodeinfo import NodeInfo

T = TypeVar("T")

FITS: Final[tuple[str, ...]] = ()
Reasons = Sequence[str]


class Unresolvable(str):
    """A failure reason no eviction can cure (kube-scheduler's UnschedulableAndUnresolvable).

    Still a ``str``: it reads, sorts and counts in messages as its text does. Preemption
    passes over a node refused with one. The legacy predicates' unresolvable reasons are
    listed by preemption instead (v1.17 kept such a list), and are plain strings.
    """

    __slots__ = ()


def is_unresolvable(reason: str) -> bool:
    return type(reason) is Unresolvable


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
    """One scheduling cycle of one pod: kube-scheduler's ``CycleState``.

    Created when the pod's attempt starts and handed on, with the decision, to the
    pod's binding cycle, so that what PreFilter computed is what Reserve, Permit and
    PreBind read. Two stores:

    * ``memo(key, factory)``: the engine's own per-attempt memo (computed once per pod,
      read for every node) for the built-in predicates and priorities;
    * ``read`` / ``write`` / ``delete``: plugins' data (kube-scheduler's
      ``Read``/``Write``/``Delete``), any value under a key of the plugin's choosing
      (by convention the plugin's name). ``read`` of a key never written raises
      ``KeyError``.

    ``skip_filter`` / ``skip_score``: the plugins whose PreFilter / PreScore returned
    Skip this cycle; the framework does not call their Filter / Score.
    """

    __slots__ = (
        "_data",
        "_memo",
        "cluster",
        "observe",
        "pod",
        "settings",
        "skip_filter",
        "skip_score",
    )

    def __init__(self, pod: Pod, cluster: ClusterState, settings: PolicySettings) -> None:
        self.pod = pod
        self.cluster = cluster
        self.settings = settings
        self._memo: dict[str, Any] = {}
        self._data: dict[str, Any] = {}
        self.skip_filter: set[str] = set()
        self.skip_score: set[str] = set()
        #: Set on the attempts whose plugin calls are timed for metrics (one in ten, as
        #: kube-scheduler samples them): ``(point, plugin, status code, seconds)``.
        self.observe: Callable[[str, str, str, float], None] | None = None

    def memo(self, key: str, factory: Callable[[], T]) -> T:
        try:
            value: T = self._memo[key]
        except KeyError:
            value = self._memo[key] = factory()
        return value

    def read(self, key: str) -> Any:
        """What a plugin wrote under ``key`` this cycle; ``KeyError`` if nothing was."""
        return self._data[key]

    def write(self, key: str, value: Any) -> None:
        self._data[key] = value

    def delete(self, key: str) -> None:
        self._data.pop(key, None)

    def written(self) -> dict[str, Any]:
        """What the plugins wrote so far, as a new dict (``PreFilterReplay`` records
        one plugin's writes as the difference of two of these)."""
        return dict(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._data


class Predicate(Protocol):
    """A filter: ``(pod, node_info, cycle) -> reasons``; empty when the pod fits."""

    def __call__(self, pod: Pod, node: NodeInfo, cycle: CycleState, /) -> Reasons: ...


class Priority(Protocol):
    """A score: ``(pod, feasible nodes, cycle) -> scores``, 0..10 in node order."""

    def __call__(self, pod: Pod, nodes: Sequence[NodeInfo], cycle: CycleState, /) -> list[int]: ...


MapFunction = Callable[[Pod, NodeInfo, CycleState], int]
#: A predicate's screen or a map's batch form (see the module doc's hints).
Screen = Callable[[Pod, Sequence[NodeInfo], CycleState], list[int]]
BatchMap = Callable[[Pod, Sequence[NodeInfo], CycleState], list[int]]
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
        if highest > 0 and min(scores) >= 0:
            # Non-negative operands (every legacy map): Go's truncating division is
            # Python's floor division, done in one comprehension instead of a call a node.
            if reverse:
                scores[:] = [max_priority - max_priority * s // highest for s in scores]
            else:
                scores[:] = [max_priority * s // highest for s in scores]
            return
        for i, score in enumerate(scores):
            scaled = go_div(max_priority * score, highest)
            scores[i] = max_priority - scaled if reverse else scaled

    return reduce


def go_div(a: int, b: int) -> int:
    """Integer division truncating toward zero, as Go's ``/`` on integers."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


# -- hints for the fast path --------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Hints:
    """What a predicate or a map function declares about itself (see the module doc)."""

    never_fails: Callable[[Pod], bool] | None = None
    constant: Callable[[Pod], int | None] | None = None
    node_local: bool = False
    context: Callable[[CycleState], Hashable] | None = None
    fits_everywhere: Callable[[Pod, CycleState], bool] | None = None
    screen: Screen | None = None
    batch: BatchMap | None = None


NO_HINTS: Final = Hints()

#: Function -> its hints. Weak keys: a factory's closures go with the policy compiled
#: from them.
_HINTS: weakref.WeakKeyDictionary[Callable[..., Any], Hints] = weakref.WeakKeyDictionary()

F = TypeVar("F", bound=Callable[..., Any])


def hint(
    fn: F,
    *,
    never_fails: Callable[[Pod], bool] | None = None,
    constant: Callable[[Pod], int | None] | None = None,
    node_local: bool = False,
    context: Callable[[CycleState], Hashable] | None = None,
    fits_everywhere: Callable[[Pod, CycleState], bool] | None = None,
    screen: Screen | None = None,
    batch: BatchMap | None = None,
) -> F:
    """Attach hints to a predicate or a map function; returns the function unchanged."""
    _HINTS[fn] = Hints(never_fails, constant, node_local, context, fits_everywhere, screen, batch)
    return fn


def every_position(pod: Pod, nodes: Sequence[NodeInfo], cycle: CycleState) -> list[int]:
    """The screen of a predicate that may fail anywhere for this pod."""
    return list(range(len(nodes)))


def no_position(pod: Pod, nodes: Sequence[NodeInfo], cycle: CycleState) -> list[int]:
    """The screen of a predicate that cannot fail for this pod."""
    return []


def hints_of(fn: Callable[..., Any]) -> Hints:
    try:
        return _HINTS.get(fn, NO_HINTS)
    except TypeError:  # not weak-referenceable: nothing was declared for it
        return NO_HINTS


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
