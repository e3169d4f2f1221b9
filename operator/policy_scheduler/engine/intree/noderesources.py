"""NodeResourcesFit and NodeResourcesBalancedAllocation, as kube-scheduler v1.30 has them.

**What counts.** A pod's request is ``resource.PodRequests``: the containers' sum,
sidecars (init containers with ``restartPolicy: Always``) added, raised to the largest
init step, plus ``spec.overhead`` (:class:`~...objects.InitDemands`; for a pod without
init containers, the legacy ``Pod.request``). A node's ``Requested`` is the sum of its
pods' requests counted the same way, its ``NonZeroRequested`` the same with 100m cpu /
200Mi memory for a container list that mentions neither: the engine's incremental
``NodeInfo.requested_*`` / ``nonzero_*`` plus ``NodeInfo.init_excess`` (what init
containers add; None on most nodes). A pod with pod-level ``spec.resources`` (v1.34)
has the amounts v1.34 counts for it in both its legacy fields and ``Pod.init``, no
excess: the same code reads them (the objects package says how they are computed).

**NodeResourcesFit** — PreFilter computes the request (here: lazily, per attempt);
Filter (``fitsRequest``) refuses a node with ``Too many pods`` when its pod count is
full, whatever the pod requests; then, unless the pod requests nothing at all,
``Insufficient cpu`` / ``memory`` / ``ephemeral-storage`` for each of those the pod
requests (above 0) beyond what the node has left, and ``Insufficient <name>`` for each
scalar resource it requests above 0 beyond what is left (absent from the node: 0
left), except extended resources named in ``ignoredResources`` or whose domain (the part
before "/") is in ``ignoredResourceGroups``. When the policy's extenders manage
resources with ``ignoredByScheduler``, those replace ``ignoredResources``, as
kube-scheduler rewrites the args when it builds its extenders. Upstream walks a map
there; the scalar reasons here are sorted by name. All Unschedulable (preemption can
help).

Score (``scoringStrategy``, over its ``resources`` with their weights; default
LeastAllocated over cpu and memory, weight 1): per resource, the node's allocatable and
its requested amount with the pod's added. For cpu and memory the *non-zero* amounts
(node ``NonZeroRequested``, the pod's request with the defaults applied to every
container), for ephemeral-storage and scalar resources the plain ones; a scalar resource
the pod does not request, or a resource the node does not list, is left out (so is
``pods``). A resource with allocatable 0 is left out of the sums.

* LeastAllocated: ``sum(weight * (alloc - req) * 100 // alloc) // sum(weight)``, a
  resource over its allocatable scoring 0;
* MostAllocated: ``sum(weight * min(req, alloc) * 100 // alloc) // sum(weight)``;
* RequestedToCapacityRatio: utilization ``req * 100 // alloc`` (100 when over or without
  allocatable) through the shape (its scores 0..10 scaled by 10 onto 0..100, Go integer
  interpolation), only resources scoring above 0 counting, ``round(sum(weight * score) /
  sum(weight))`` (halves away from zero); none above 0 gives 0.

No NormalizeScore.

**NodeResourcesBalancedAllocation** — Score only: over its ``resources`` (default cpu and
memory), the *plain* requested amounts (v1.30's ``useRequested``: node ``Requested``
plus the pod's ``PodRequests``), each fraction ``req / alloc`` capped at 1, resources
without allocatable (and scalar ones the pod does not request) left out; the score is
``int((1 - std) * 100)`` with ``std = |f1 - f2| / 2`` for two fractions, the population
standard deviation for more, 0 for fewer (v1.22+ formula). No NormalizeScore. A pod
that requests none of those resources (a best-effort pod, by default) is not scored:
PreScore skips it and every node scores 0 (v1.33+, kubernetes#129138: the balanced score
drew every best-effort pod onto the same node).

**Fast path.** Filter is node-local, screened over a chunk of nodes on the engine's free
amounts (a node with init-container excess, or a pod with scalar requests, is always a
suspect: the predicate decides). Both scores are node-local with a batch form; each
node's score is kept in its ``NodeInfo.scores`` (replaced whenever the node or its pods
change) under the plugin's settings and the pod's per-resource requests, which the pods
of one template share. Over cpu and memory alone (the defaults, whatever the weights),
LeastAllocated, MostAllocated and BalancedAllocation are computed inline, step for step
as the general per-resource loop.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final, cast

from ... import pluginargs
from ...objects import CPU, EPHEMERAL_STORAGE, MEMORY, Pod, Resources, is_extended_resource
from ...objects import is_scalar_resource as _is_scalar
from ..events import ActionType, ClusterEventWithHint
from ..functions import (
    FITS,
    CycleState,
    Predicate,
    Priority,
    Reasons,
    every_position,
    hint,
    mapped,
)
from ..interface import (
    FilterPlugin,
    Handle,
    NodeInfoView,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
    Status,
)
from ..nodeinfo import MEMO_LIMIT, NodeInfo, memo_key
from ..predicates.general import insufficient
from ..priorities.resources import ShapePoint, broken_linear, go_round
from ._queueing import ASSIGNED_POD, NODE, fit_node_hint, fit_pod_hint, on
from .helper import MAX_NODE_SCORE, arg, engine_node, instance_key, status_of

FIT: Final = "NodeResourcesFit"
BALANCED_ALLOCATION: Final = "NodeResourcesBalancedAllocation"

ERR_TOO_MANY_PODS: Final = "Too many pods"
ERR_INSUFFICIENT_CPU: Final = "Insufficient cpu"
ERR_INSUFFICIENT_MEMORY: Final = "Insufficient memory"
ERR_INSUFFICIENT_EPHEMERAL_STORAGE: Final = "Insufficient ephemeral-storage"

LEAST_ALLOCATED: Final = "LeastAllocated"
MOST_ALLOCATED: Final = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO: Final = "RequestedToCapacityRatio"
SCORING_STRATEGIES: Final = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)

#: config.MaxCustomPriorityScore: a RequestedToCapacityRatio shape's scores are 0..10.
MAX_CUSTOM_PRIORITY_SCORE: Final = 10
MAX_UTILIZATION: Final = 100

#: The resources both plugins count when their arguments name none.
DEFAULT_RESOURCES: Final[tuple[tuple[str, int], ...]] = ((CPU, 1), (MEMORY, 1))


# -- what counts ------------------------------------------------------------------------


def pod_requests(pod: Pod) -> Resources:
    """resource.PodRequests of the pod (sidecars and init steps counted)."""
    init = pod.init
    return init.request if init is not None else pod.request


def pod_score_nonzero(pod: Pod) -> tuple[int, int]:
    """The pod's own cpu and memory request for scoring, defaults applied per container."""
    init = pod.init
    if init is not None:
        return init.score_cpu, init.score_memory
    return pod.nonzero_cpu, pod.nonzero_memory


# -- NodeResourcesFit's filter ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _FitRequest:
    """What the filter checks of one pod: its request and the scalars, with reasons."""

    cpu: int
    memory: int
    ephemeral: int
    #: (name, amount, reason) of each scalar resource requested above 0 and not ignored.
    scalars: tuple[tuple[str, int, str], ...]
    #: The pod requests nothing at all (a scalar named with 0 counts as a request).
    nothing: bool


class FitFilter:
    """NodeResourcesFit's Filter as an engine predicate, for one pair of ignore lists."""

    __slots__ = ("__weakref__", "_key", "ignored_groups", "ignored_resources")

    def __init__(
        self, ignored_resources: Iterable[str] = (), ignored_groups: Iterable[str] = ()
    ) -> None:
        self.ignored_resources = frozenset(ignored_resources)
        self.ignored_groups = frozenset(ignored_groups)
        self._key = instance_key(f"{FIT}/request")

    def ignores(self, name: str, ignored_resources: frozenset[str] | None = None) -> bool:
        """An extended resource left to someone else: named in ``ignoredResources`` (or in
        ``ignored_resources`` when given), or of a group in ``ignoredResourceGroups``."""
        if not is_extended_resource(name):
            return False
        if ignored_resources is None:
            ignored_resources = self.ignored_resources
        return name in ignored_resources or name.split("/", 1)[0] in self.ignored_groups

    def request(self, pod: Pod, cycle: CycleState) -> _FitRequest:
        return cycle.memo(self._key, lambda: self._request(pod, cycle))

    def _request(self, pod: Pod, cycle: CycleState) -> _FitRequest:
        req = pod_requests(pod)
        # Extenders' ignoredByScheduler resources replace the args' ignoredResources, as
        # kube-scheduler rewrites NodeResourcesFitArgs when it builds its extenders.
        ignored = cycle.settings.ignored_resources or self.ignored_resources
        scalars = tuple(
            (name, amount, insufficient(name))
            for name, amount in sorted(req.scalar.items())
            if amount > 0 and not self.ignores(name, ignored)
        )
        nothing = not (req.milli_cpu or req.memory or req.ephemeral_storage or req.scalar)
        return _FitRequest(req.milli_cpu, req.memory, req.ephemeral_storage, scalars, nothing)

    def __call__(self, pod: Pod, node: NodeInfo, cycle: CycleState) -> Reasons:
        req = self.request(pod, cycle)
        too_many = node.free_pods < 1
        if req.nothing:
            return (ERR_TOO_MANY_PODS,) if too_many else FITS
        excess = node.init_excess
        free_cpu, free_memory, free_ephemeral = node.free_cpu, node.free_memory, node.free_ephemeral
        if excess is not None:
            free_cpu -= excess.cpu
            free_memory -= excess.memory
            free_ephemeral -= excess.ephemeral
        reasons: list[str] = [ERR_TOO_MANY_PODS] if too_many else []
        # Only what the pod requests is checked: an overcommitted node still takes a pod
        # that asks for none of the overcommitted resource.
        if req.cpu > 0 and req.cpu > free_cpu:
            reasons.append(ERR_INSUFFICIENT_CPU)
        if req.memory > 0 and req.memory > free_memory:
            reasons.append(ERR_INSUFFICIENT_MEMORY)
        if req.ephemeral > 0 and req.ephemeral > free_ephemeral:
            reasons.append(ERR_INSUFFICIENT_EPHEMERAL_STORAGE)
        if req.scalars:
            allocatable = node.allocatable.scalar
            requested = node.requested_scalar
            extra = excess.scalar if excess is not None else None
            for name, amount, reason in req.scalars:
                used = requested.get(name, 0)
                if extra is not None:
                    used += extra.get(name, 0)
                if amount > allocatable.get(name, 0) - used:
                    reasons.append(reason)
        return tuple(reasons)

    def screen(self, pod: Pod, nodes: Sequence[NodeInfo], cycle: CycleState) -> list[int]:
        """Where the filter may fail: full nodes, nodes short of what the pod requests,
        nodes with init-container excess; everywhere for a pod with scalar requests."""
        req = self.request(pod, cycle)
        if req.scalars:
            return every_position(pod, nodes, cycle)
        if req.nothing:
            return [k for k, info in enumerate(nodes) if info.free_pods < 1]
        # A resource the pod does not request never fails: compare with a bound no
        # free amount can be under.
        floor = -(2**63) - 1
        cpu = req.cpu if req.cpu > 0 else floor
        memory = req.memory if req.memory > 0 else floor
        ephemeral = req.ephemeral if req.ephemeral > 0 else floor
        return [
            k
            for k, info in enumerate(nodes)
            if info.free_pods < 1
            or info.free_cpu < cpu
            or info.free_memory < memory
            or info.free_ephemeral < ephemeral
            or info.init_excess is not None
        ]


# -- the scores -------------------------------------------------------------------------

_CPU, _MEMORY, _EPHEMERAL, _SCALAR, _OTHER = range(5)


def _code(name: str) -> int:
    if name == CPU:
        return _CPU
    if name == MEMORY:
        return _MEMORY
    if name == EPHEMERAL_STORAGE:
        return _EPHEMERAL
    return _SCALAR if _is_scalar(name) else _OTHER


class ResourceScorer:
    """resourceAllocationScorer: one score over (requested, allocatable) per resource.

    ``kind`` is a scoring strategy or :data:`BALANCED_ALLOCATION`; ``use_requested``
    (BalancedAllocation) reads the plain amounts for cpu and memory, otherwise the
    non-zero ones. Called as the per-node map; :meth:`batch` is its batch form.
    """

    __slots__ = (
        "__weakref__",
        "_key",
        "_pair",
        "_score",
        "_specs",
        "kind",
        "resources",
        "shape",
        "use_requested",
    )

    def __init__(
        self,
        kind: str,
        resources: Sequence[tuple[str, int]],
        shape: Sequence[ShapePoint] = (),
        *,
        use_requested: bool = False,
    ) -> None:
        self.kind = kind
        self.resources = tuple((str(name), int(weight)) for name, weight in resources)
        # The shape's scores as upstream scales them onto 0..MaxNodeScore.
        factor = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
        self.shape = tuple(ShapePoint(p.utilization, p.score * factor) for p in shape)
        self.use_requested = use_requested
        self._specs = tuple((_code(name), name, weight) for name, weight in self.resources)
        self._key = instance_key(f"{kind}/pod-requests")
        # cpu and memory alone (the defaults, any weights, either order) are scored
        # inline: (cpu's place in the requests, its weight, memory's place, its weight).
        self._pair: tuple[int, int, int, int] | None = None
        codes = [code for code, _, _ in self._specs]
        if kind != REQUESTED_TO_CAPACITY_RATIO and sorted(codes) == [_CPU, _MEMORY]:
            at_cpu, at_memory = codes.index(_CPU), codes.index(_MEMORY)
            self._pair = (at_cpu, self._specs[at_cpu][2], at_memory, self._specs[at_memory][2])
        self._score = self.node_score if self._pair is None else self._pair_score

    def pod_requests(self, pod: Pod) -> tuple[int, ...]:
        """calculatePodResourceRequestList: the pod's request of each resource."""
        plain = pod_requests(pod)
        if self.use_requested:
            cpu, memory = plain.milli_cpu, plain.memory
        else:
            cpu, memory = pod_score_nonzero(pod)
        out: list[int] = []
        for code, name, _ in self._specs:
            if code == _CPU:
                out.append(cpu)
            elif code == _MEMORY:
                out.append(memory)
            elif code == _EPHEMERAL:
                out.append(plain.ephemeral_storage)
            else:
                out.append(plain.scalar.get(name, 0))
        return tuple(out)

    def _requests(self, pod: Pod, cycle: CycleState) -> tuple[int, ...]:
        return cycle.memo(self._key, lambda: self.pod_requests(pod))

    def amounts(self, requests: tuple[int, ...], info: NodeInfo) -> tuple[list[int], list[int]]:
        """calculateResourceAllocatableRequest of each resource: (requested, allocatable),
        both 0 for a resource left out."""
        allocatable = info.allocatable
        excess = info.init_excess
        requested_out: list[int] = []
        allocatable_out: list[int] = []
        for (code, name, _), pod_request in zip(self._specs, requests, strict=True):
            if code == _CPU:
                alloc = allocatable.milli_cpu
                if self.use_requested:
                    used = info.requested_cpu + (excess.cpu if excess else 0)
                else:
                    used = info.nonzero_cpu + (excess.nonzero_cpu if excess else 0)
            elif code == _MEMORY:
                alloc = allocatable.memory
                if self.use_requested:
                    used = info.requested_memory + (excess.memory if excess else 0)
                else:
                    used = info.nonzero_memory + (excess.nonzero_memory if excess else 0)
            elif code == _EPHEMERAL:
                alloc = allocatable.ephemeral_storage
                used = info.requested_ephemeral + (excess.ephemeral if excess else 0)
            elif code == _SCALAR and pod_request != 0 and name in allocatable.scalar:
                alloc = allocatable.scalar[name]
                used = info.requested_scalar.get(name, 0)
                if excess is not None:
                    used += excess.scalar.get(name, 0)
            else:
                # A scalar resource the pod does not request, one the node does not
                # list, or anything else: bypassed.
                alloc = used = pod_request = 0
            if alloc == 0:
                requested_out.append(0)
                allocatable_out.append(0)
            else:
                requested_out.append(used + pod_request)
                allocatable_out.append(alloc)
        return requested_out, allocatable_out

    def node_score(self, requests: tuple[int, ...], info: NodeInfo) -> int:
        requested, allocatable = self.amounts(requests, info)
        return self.combine(requested, allocatable)

    def _pair_score(self, requests: tuple[int, ...], info: NodeInfo) -> int:
        """:meth:`node_score` for cpu and memory alone, step for step, inline."""
        assert self._pair is not None
        at_cpu, cpu_weight, at_memory, memory_weight = self._pair
        allocatable = info.allocatable
        cpu_capacity = allocatable.milli_cpu
        memory_capacity = allocatable.memory
        excess = info.init_excess
        if self.use_requested:
            cpu = info.requested_cpu + requests[at_cpu]
            memory = info.requested_memory + requests[at_memory]
            if excess is not None:
                cpu += excess.cpu
                memory += excess.memory
        else:
            cpu = info.nonzero_cpu + requests[at_cpu]
            memory = info.nonzero_memory + requests[at_memory]
            if excess is not None:
                cpu += excess.nonzero_cpu
                memory += excess.nonzero_memory
        kind = self.kind
        if kind == BALANCED_ALLOCATION:
            if cpu_capacity == 0 or memory_capacity == 0:
                return MAX_NODE_SCORE  # one fraction or none: no deviation
            cpu_fraction = min(float(cpu) / float(cpu_capacity), 1.0)
            memory_fraction = min(float(memory) / float(memory_capacity), 1.0)
            return int((1 - abs((cpu_fraction - memory_fraction) / 2)) * float(MAX_NODE_SCORE))
        total = weights = 0
        if kind == MOST_ALLOCATED:
            if cpu_capacity:
                total += min(cpu, cpu_capacity) * MAX_NODE_SCORE // cpu_capacity * cpu_weight
                weights += cpu_weight
            if memory_capacity:
                total += (
                    min(memory, memory_capacity) * MAX_NODE_SCORE // memory_capacity * memory_weight
                )
                weights += memory_weight
        else:
            if cpu_capacity:
                if cpu <= cpu_capacity:
                    total += (cpu_capacity - cpu) * MAX_NODE_SCORE // cpu_capacity * cpu_weight
                weights += cpu_weight
            if memory_capacity:
                if memory <= memory_capacity:
                    total += (
                        (memory_capacity - memory)
                        * MAX_NODE_SCORE
                        // memory_capacity
                        * memory_weight
                    )
                weights += memory_weight
        return total // weights if weights else 0

    def combine(self, requested: list[int], allocatable: list[int]) -> int:
        """The strategy's scorer over the per-resource amounts."""
        kind = self.kind
        if kind == BALANCED_ALLOCATION:
            return balanced_score(requested, allocatable)
        if kind == REQUESTED_TO_CAPACITY_RATIO:
            return ratio_score(self.shape, self.resources, requested, allocatable)
        most = kind == MOST_ALLOCATED
        total = weights = 0
        for (_, weight), req, alloc in zip(self.resources, requested, allocatable, strict=True):
            if alloc == 0:
                continue
            if most:
                score = min(req, alloc) * MAX_NODE_SCORE // alloc
            else:
                score = 0 if req > alloc else (alloc - req) * MAX_NODE_SCORE // alloc
            total += score * weight
            weights += weight
        return total // weights if weights else 0

    def __call__(self, pod: Pod, info: NodeInfo, cycle: CycleState) -> int:
        requests = self._requests(pod, cycle)
        if self.kind == BALANCED_ALLOCATION and not any(requests):
            return 0  # v1.33+: a best-effort pod is not scored (PreScore's Skip)
        return self._score(requests, info)

    def batch(self, pod: Pod, nodes: Sequence[NodeInfo], cycle: CycleState) -> list[int]:
        """The map over ``nodes``; each node's score kept in its ``scores`` under these
        settings and the pod's requests (module doc)."""
        requests = self._requests(pod, cycle)
        if self.kind == BALANCED_ALLOCATION and not any(requests):
            return [0] * len(nodes)  # v1.33+: a best-effort pod is not scored
        key = memo_key((self._key, requests))
        if self._pair is not None:
            return self._pair_batch(requests, key, nodes)
        out: list[int] = []
        append = out.append
        node_score = self._score
        for info in nodes:
            memo = info.scores
            score = memo.get(key)
            if score is None:
                score = node_score(requests, info)
                if len(memo) >= MEMO_LIMIT:
                    memo.clear()
                memo[key] = score
            append(score)
        return out

    def _pair_batch(
        self, requests: tuple[int, ...], key: object, nodes: Sequence[NodeInfo]
    ) -> list[int]:
        """:meth:`batch` for cpu and memory alone: :meth:`_pair_score`'s arithmetic inline
        (one score per node, mostly from the node's memo; a default profile scores every
        sampled node with two such scorers)."""
        assert self._pair is not None
        at_cpu, cpu_weight, at_memory, memory_weight = self._pair
        pod_cpu, pod_memory = requests[at_cpu], requests[at_memory]
        use_requested = self.use_requested
        kind = self.kind
        balanced, most = kind == BALANCED_ALLOCATION, kind == MOST_ALLOCATED
        weights = cpu_weight + memory_weight
        # The memos first, in one comprehension (most nodes have the score), then the
        # nodes that have not.
        found: list[int | None] = [info.scores.get(key) for info in nodes]
        for i in [i for i, score in enumerate(found) if score is None]:
            info = nodes[i]
            allocatable = info.allocatable
            cpu_capacity = allocatable.milli_cpu
            memory_capacity = allocatable.memory
            excess = info.init_excess
            if use_requested:
                cpu = info.requested_cpu + pod_cpu
                memory = info.requested_memory + pod_memory
                if excess is not None:
                    cpu += excess.cpu
                    memory += excess.memory
            else:
                cpu = info.nonzero_cpu + pod_cpu
                memory = info.nonzero_memory + pod_memory
                if excess is not None:
                    cpu += excess.nonzero_cpu
                    memory += excess.nonzero_memory
            if balanced:
                if cpu_capacity == 0 or memory_capacity == 0:
                    score = MAX_NODE_SCORE
                else:
                    cpu_fraction = min(float(cpu) / float(cpu_capacity), 1.0)
                    memory_fraction = min(float(memory) / float(memory_capacity), 1.0)
                    score = int(
                        (1 - abs((cpu_fraction - memory_fraction) / 2)) * float(MAX_NODE_SCORE)
                    )
            elif cpu_capacity and memory_capacity:
                if most:
                    total = (
                        min(cpu, cpu_capacity) * MAX_NODE_SCORE // cpu_capacity * cpu_weight
                        + min(memory, memory_capacity)
                        * MAX_NODE_SCORE
                        // memory_capacity
                        * memory_weight
                    )
                else:
                    total = 0
                    if cpu <= cpu_capacity:
                        total = (cpu_capacity - cpu) * MAX_NODE_SCORE // cpu_capacity * cpu_weight
                    if memory <= memory_capacity:
                        total += (
                            (memory_capacity - memory)
                            * MAX_NODE_SCORE
                            // memory_capacity
                            * memory_weight
                        )
                score = total // weights
            else:
                score = self._pair_score(requests, info)  # a capacity of 0: rare
            memo = info.scores
            if len(memo) >= MEMO_LIMIT:
                memo.clear()
            memo[key] = score
            found[i] = score
        return cast(list[int], found)


def ratio_score(
    shape: Sequence[ShapePoint],
    resources: Sequence[tuple[str, int]],
    requested: Sequence[int],
    allocatable: Sequence[int],
) -> int:
    """RequestedToCapacityRatio over per-resource amounts (shape already on 0..100)."""
    total = weights = 0
    for (_, weight), req, alloc in zip(resources, requested, allocatable, strict=True):
        if alloc == 0:
            continue
        if req > alloc:
            score = broken_linear(shape, MAX_UTILIZATION)
        else:
            score = broken_linear(shape, req * MAX_UTILIZATION // alloc)
        if score > 0:
            total += score * weight
            weights += weight
    if weights == 0:
        return 0
    return go_round(float(total) / float(weights))


def balanced_score(requested: Sequence[int], allocatable: Sequence[int]) -> int:
    """balancedResourceScorer: 100 x (1 - standard deviation of the used fractions)."""
    fractions: list[float] = []
    total = 0.0
    for req, alloc in zip(requested, allocatable, strict=True):
        if alloc == 0:
            continue
        fraction = min(float(req) / float(alloc), 1.0)
        total += fraction
        fractions.append(fraction)
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = total / float(len(fractions))
        squares = 0.0
        for fraction in fractions:
            squares = squares + (fraction - mean) * (fraction - mean)
        std = math.sqrt(squares / float(len(fractions)))
    # int64(): truncation toward zero.
    return int((1 - std) * float(MAX_NODE_SCORE))


# -- settings from the arguments --------------------------------------------------------


def _resources_of(specs: Any) -> tuple[tuple[str, int], ...]:
    return tuple((str(arg(spec, "name")), int(arg(spec, "weight") or 0)) for spec in specs or ())


@dataclass(frozen=True, slots=True)
class FitSettings:
    """NodeResourcesFitArgs, defaulted as kube-scheduler defaults them."""

    ignored_resources: tuple[str, ...] = ()
    ignored_resource_groups: tuple[str, ...] = ()
    strategy: str = LEAST_ALLOCATED
    resources: tuple[tuple[str, int], ...] = DEFAULT_RESOURCES
    shape: tuple[ShapePoint, ...] = ()

    @classmethod
    def from_args(cls, args: Any) -> FitSettings:
        """From the arguments (``ignoredResources``, ``ignoredResourceGroups``,
        ``scoringStrategy: {type, resources, requestedToCapacityRatio: {shape}}``); an
        absent part takes kube-scheduler's default."""
        strategy = arg(args, "scoringStrategy")
        kind = str(arg(strategy, "type") or LEAST_ALLOCATED)
        resources = _resources_of(arg(strategy, "resources")) or DEFAULT_RESOURCES
        shape = tuple(
            ShapePoint(int(arg(point, "utilization") or 0), int(arg(point, "score") or 0))
            for point in arg(arg(strategy, "requestedToCapacityRatio"), "shape") or ()
        )
        return cls(
            tuple(arg(args, "ignoredResources") or ()),
            tuple(arg(args, "ignoredResourceGroups") or ()),
            kind,
            resources,
            shape,
        )


# -- the plugins --------------------------------------------------------------------------


class NodeResourcesFit(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin):
    """Enough allocatable resources left for the pod, and how full the node would be."""

    name = FIT
    Args = pluginargs.NodeResourcesFitArgs

    def __init__(self, args: Any, handle: Handle) -> None:
        super().__init__(args, handle)
        settings = FitSettings.from_args(args)
        if settings.strategy not in SCORING_STRATEGIES:
            raise ValueError(f"scoring strategy {settings.strategy} is not supported")
        self.settings = settings
        self._filter = FitFilter(settings.ignored_resources, settings.ignored_resource_groups)
        hint(self._filter, node_local=True, screen=self._filter.screen)
        self._scorer = ResourceScorer(settings.strategy, settings.resources, settings.shape)
        hint(self._scorer, node_local=True, batch=self._scorer.batch)
        self._priority = mapped(self._scorer)

    def predicate(self) -> Predicate:
        return self._filter

    def priority(self) -> Priority:
        return self._priority

    def pre_filter(self, state: CycleState, pod: Pod) -> PreFilterResult | Status | None:
        # SidecarContainers is on in v1.30: nothing to refuse here; the request is
        # computed when the filter first needs it.
        return None

    def filter(self, state: CycleState, pod: Pod, node: NodeInfoView) -> Status | None:
        return status_of(self._filter(pod, engine_node(state, node), state))

    def pre_score(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfoView]
    ) -> Status | None:
        return None

    def score(self, state: CycleState, pod: Pod, node: NodeInfoView) -> int | Status:
        return self._scorer(pod, engine_node(state, node), state)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """v1.34: an assigned pod deleted or scaled down; a node added, or its
        allocatable grown, that can hold the pod."""
        return [
            on(ASSIGNED_POD, ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN, fit_pod_hint),
            on(NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE, fit_node_hint),
        ]


@dataclass(frozen=True, slots=True)
class BalancedAllocationSettings:
    """NodeResourcesBalancedAllocationArgs, defaulted."""

    resources: tuple[tuple[str, int], ...] = DEFAULT_RESOURCES

    @classmethod
    def from_args(cls, args: Any) -> BalancedAllocationSettings:
        return cls(_resources_of(arg(args, "resources")) or DEFAULT_RESOURCES)


class NodeResourcesBalancedAllocation(PreScorePlugin, ScorePlugin):
    """Nodes whose resources would be used in the most even shares."""

    name = BALANCED_ALLOCATION
    Args = pluginargs.NodeResourcesBalancedAllocationArgs

    def __init__(self, args: Any, handle: Handle) -> None:
        super().__init__(args, handle)
        self.settings = BalancedAllocationSettings.from_args(args)
        self._scorer = ResourceScorer(
            BALANCED_ALLOCATION, self.settings.resources, use_requested=True
        )
        hint(self._scorer, node_local=True, batch=self._scorer.batch)
        self._priority = mapped(self._scorer)

    def priority(self) -> Priority:
        return self._priority

    def pre_score(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfoView]
    ) -> Status | None:
        # v1.33+: skipped for a pod that requests none of the resources (best-effort).
        return None if any(self._scorer.pod_requests(pod)) else Status.skip()

    def score(self, state: CycleState, pod: Pod, node: NodeInfoView) -> int | Status:
        return self._scorer(pod, engine_node(state, node), state)
