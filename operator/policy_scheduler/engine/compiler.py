"""Turn an accepted SchedulingPolicy into the functions one decision runs.

The policy model (``policy.py``) has already checked shapes and names against the
catalogue (``names.py``); here each name is bound to its function through the registry
that the predicate and priority families fill. A name the catalogue knows but no family
implements is refused with :class:`NotImplementedPolicyError`, never skipped: a policy
that says "check volumes" must not silently schedule without checking them.

An absent predicate (priority) list means the legacy DefaultProvider set.

Each entry is one record (:class:`CompiledPredicate`, :class:`CompiledPriority`) holding
everything known about it: its name, its function, what the fast path plans with (the
predicate's :class:`~.functions.Hints`; for a priority built with
:func:`~.functions.mapped`, its map, reduce and the map's hints as a :class:`MapPlan`)
and, for a priority, its weight. Nothing is kept in parallel tuples that could fall out
of step. :func:`instrument` times every callable of a record, the map/reduce calls the
fast path makes directly included.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from time import perf_counter
from typing import Any

from .. import names
from ..objects import Pod, is_extended_resource
from ..policy import (
    SHADOW,
    Extender,
    PolicyError,
    PredicateArgument,
    PriorityArgument,
    SchedulingPolicy,
    ShadowSettings,
)
from . import catalogue  # noqa: F401  (fills the registry)
from .extenders import CompiledExtender, ExtenderTLS
from .functions import (
    NO_HINTS,
    REGISTRY,
    CycleState,
    Hints,
    MapFunction,
    Mapped,
    PolicySettings,
    Predicate,
    Priority,
    Reasons,
    ReduceFunction,
    Screen,
    hints_of,
)
from .nodeinfo import NodeInfo


class NotImplementedPolicyError(PolicyError):
    """The policy names a predicate or priority this version does not implement."""


@dataclass(frozen=True, slots=True)
class MapPlan:
    """A mapped priority taken apart, so that the fast path can cache its map per node."""

    map: MapFunction
    reduce: ReduceFunction | None
    hints: Hints


@dataclass(frozen=True, slots=True)
class CompiledPredicate:
    """One predicate of a policy, in evaluation order: its name (as the policy wrote
    it), its function and the hints the fast path plans with."""

    name: str
    fn: Predicate
    hints: Hints = NO_HINTS


@dataclass(frozen=True, slots=True)
class CompiledPriority:
    """One priority of a policy: its name, its weight, its function and, for a mapped
    priority, its parts (``plan``) so the fast path can cache the map per node."""

    name: str
    weight: int
    fn: Priority
    plan: MapPlan | None = None


def compiled_predicate(name: str, fn: Predicate) -> CompiledPredicate:
    return CompiledPredicate(name, fn, hints_of(fn))


def compiled_priority(name: str, weight: int, fn: Priority) -> CompiledPriority:
    return CompiledPriority(name, weight, fn, map_plan(fn))


@dataclass(frozen=True, slots=True)
class CompiledPolicy:
    """An accepted policy bound to the functions one decision runs."""

    name: str
    scheduler_name: str
    predicates: tuple[CompiledPredicate, ...]
    priorities: tuple[CompiledPriority, ...]
    always_check_all_predicates: bool
    percentage_of_nodes_to_score: int
    settings: PolicySettings
    #: CheckVolumeBinding is among the predicates: a decision also says how the pod's
    #: claims bind on the chosen node (the volume binder runs only with its predicate).
    binds_volumes: bool = False
    #: ``spec.disablePreemption``: pods of this policy that fit nowhere never preempt.
    disable_preemption: bool = False
    #: The HTTP extenders, in policy order (see :mod:`.extenders`).
    extenders: tuple[CompiledExtender, ...] = ()
    #: ``spec.mode: Shadow``: its sampling and budget (defaults filled in); None for an
    #: Active policy. The engine decides the same either way: only the operator reads it.
    shadow: ShadowSettings | None = None
    #: PodFitsResources runs (alone or within GeneralPredicates): a node whose
    #: allocatable is below the pod's own request refuses it whatever runs there.
    checks_resources: bool = False


def compile_extender(extender: Extender) -> CompiledExtender:
    tls = extender.tlsConfig
    return CompiledExtender(
        url_prefix=extender.urlPrefix,
        filter_verb=extender.filterVerb,
        prioritize_verb=extender.prioritizeVerb,
        bind_verb=extender.bindVerb,
        preempt_verb=extender.preemptVerb,
        weight=extender.weight,
        enable_https=extender.https,
        tls=None
        if tls is None
        else ExtenderTLS(
            insecure=tls.insecure,
            server_name=tls.serverName,
            cert_file=tls.certFile,
            key_file=tls.keyFile,
            ca_file=tls.caFile,
            cert_data=tls.certData,
            key_data=tls.keyData,
            ca_data=tls.caData,
        ),
        timeout=extender.http_timeout_seconds,
        node_cache_capable=extender.nodeCacheCapable,
        allow_metadata_addresses=extender.allowMetadataAddresses,
        managed_resources=frozenset(resource.name for resource in extender.managedResources),
        ignorable=extender.ignorable,
    )


def map_plan(fn: Priority) -> MapPlan | None:
    """The parts of a priority made by :func:`~.functions.mapped`; None for others."""
    if isinstance(fn, Mapped):
        return MapPlan(fn.map, fn.reduce, hints_of(fn.map))
    return None


def _argument(argument: PredicateArgument | PriorityArgument | None) -> tuple[str, Any] | None:
    """The one argument an entry carries, as (kind, value)."""
    if argument is None:
        return None
    return argument.kind, getattr(argument, argument.kind)


def compile_policy(policy: SchedulingPolicy) -> CompiledPolicy:
    spec = policy.spec
    errors: list[str] = []
    prefix = f'SchedulingPolicy "{policy.name}": '

    predicates: list[CompiledPredicate] = []
    ordered = policy.ordered_predicates()
    if ordered is None:
        for name in names.DEFAULT_PREDICATE_ORDER:
            fn = REGISTRY.predicates.get(name)
            if fn is None:
                errors.append(f"{prefix}default predicate {name!r} is not implemented")
            else:
                predicates.append(compiled_predicate(name, fn))
    else:
        index_of = {id(entry): i for i, entry in enumerate(spec.predicates or ())}
        for entry in ordered:
            where = f"{prefix}spec.predicates[{index_of[id(entry)]}]"
            arg = _argument(entry.argument)
            if arg is not None:
                kind, value = arg
                factory = REGISTRY.predicate_factories.get(kind)
                if factory is None:
                    errors.append(f"{where}.argument.{kind}: is not implemented yet")
                    continue
                predicates.append(compiled_predicate(entry.name, factory(value)))
                continue
            canonical = names.canonical_predicate(entry.name)
            fn = REGISTRY.predicates.get(canonical)
            if fn is None:
                errors.append(f"{where}.name: predicate {entry.name!r} is not implemented yet")
                continue
            predicates.append(compiled_predicate(entry.name, fn))

    priorities: list[CompiledPriority] = []
    if spec.priorities is None:
        for name, weight in names.DEFAULT_PRIORITY_WEIGHTS:
            pfn = REGISTRY.priorities.get(name)
            if pfn is None:
                errors.append(f"{prefix}default priority {name!r} is not implemented")
            else:
                priorities.append(compiled_priority(name, weight, pfn))
    else:
        for index, pentry in enumerate(spec.priorities):
            where = f"{prefix}spec.priorities[{index}]"
            parg = _argument(pentry.argument)
            if parg is not None:
                kind, value = parg
                pfactory = REGISTRY.priority_factories.get(kind)
                if pfactory is None:
                    errors.append(f"{where}.argument.{kind}: is not implemented yet")
                    continue
                priorities.append(compiled_priority(pentry.name, pentry.weight, pfactory(value)))
                continue
            pfn = REGISTRY.priorities.get(names.canonical_priority(pentry.name))
            if pfn is None:
                errors.append(f"{where}.name: priority {pentry.name!r} is not implemented yet")
                continue
            priorities.append(compiled_priority(pentry.name, pentry.weight, pfn))

    if errors:
        raise NotImplementedPolicyError(errors)

    ignored = frozenset(
        resource.name
        for extender in spec.extenders
        for resource in extender.managedResources
        if resource.ignoredByScheduler and is_extended_resource(resource.name)
    )
    return CompiledPolicy(
        name=policy.name,
        scheduler_name=spec.schedulerName,
        predicates=tuple(predicates),
        priorities=tuple(priorities),
        always_check_all_predicates=spec.alwaysCheckAllPredicates,
        percentage_of_nodes_to_score=spec.percentageOfNodesToScore,
        settings=PolicySettings(
            hard_pod_affinity_weight=spec.hardPodAffinitySymmetricWeight,
            ignored_resources=ignored,
        ),
        disable_preemption=spec.disablePreemption,
        extenders=tuple(compile_extender(extender) for extender in spec.extenders),
        shadow=(spec.shadow or ShadowSettings()) if spec.mode == SHADOW else None,
        binds_volumes=any(
            entry.fn is REGISTRY.predicates.get(names.CHECK_VOLUME_BINDING) for entry in predicates
        ),
        checks_resources=any(
            entry.fn is REGISTRY.predicates.get(names.POD_FITS_RESOURCES)
            or entry.fn is REGISTRY.predicates.get(names.GENERAL_PREDICATES)
            for entry in predicates
        ),
    )


def instrument(
    policy: CompiledPolicy, predicate_seconds: dict[str, float], priority_seconds: dict[str, float]
) -> CompiledPolicy:
    """The same policy with every function timed into the given dicts (for metrics).

    A separate copy, so that the plain engine (simulate, benchmarks) pays nothing; the
    operator accumulates and flushes the dicts into Prometheus counters.
    """

    def timed_predicate(name: str, fn: Predicate) -> Predicate:
        def run(pod: Pod, node: NodeInfo, cycle: CycleState) -> Reasons:
            start = perf_counter()
            try:
                return fn(pod, node, cycle)
            finally:
                predicate_seconds[name] = predicate_seconds.get(name, 0.0) + perf_counter() - start

        return run

    def timed_priority(name: str, fn: Priority) -> Priority:
        def run(pod: Pod, nodes: Sequence[NodeInfo], cycle: CycleState) -> list[int]:
            start = perf_counter()
            try:
                return fn(pod, nodes, cycle)
            finally:
                priority_seconds[name] = priority_seconds.get(name, 0.0) + perf_counter() - start

        return run

    def timed_map(name: str, fn: MapFunction) -> MapFunction:
        def run(pod: Pod, node: NodeInfo, cycle: CycleState) -> int:
            start = perf_counter()
            try:
                return fn(pod, node, cycle)
            finally:
                priority_seconds[name] = priority_seconds.get(name, 0.0) + perf_counter() - start

        return run

    def timed_reduce(name: str, fn: ReduceFunction) -> ReduceFunction:
        def run(pod: Pod, nodes: Sequence[NodeInfo], cycle: CycleState, scores: list[int]) -> None:
            start = perf_counter()
            try:
                fn(pod, nodes, cycle, scores)
            finally:
                priority_seconds[name] = priority_seconds.get(name, 0.0) + perf_counter() - start

        return run

    def timed_nodes(name: str, fn: Screen, seconds: dict[str, float]) -> Screen:
        # A predicate's screen, or a map's batch form: the same shape, timed alike.
        def run(pod: Pod, nodes: Sequence[NodeInfo], cycle: CycleState) -> list[int]:
            start = perf_counter()
            try:
                return fn(pod, nodes, cycle)
            finally:
                seconds[name] = seconds.get(name, 0.0) + perf_counter() - start

        return run

    def timed_screen(name: str, hints: Hints) -> Hints:
        screen = hints.screen
        if screen is None:
            return hints
        return replace(hints, screen=timed_nodes(name, screen, predicate_seconds))

    def timed_batch(name: str, hints: Hints) -> Hints:
        batch = hints.batch
        if batch is None:
            return hints
        return replace(hints, batch=timed_nodes(name, batch, priority_seconds))

    def timed_plan(name: str, plan: MapPlan | None) -> MapPlan | None:
        # The fast path calls these directly (on equivalence cache misses, or a column
        # at a time), not the priority: they carry the same timing.
        if plan is None:
            return None
        reduce = plan.reduce
        return MapPlan(
            timed_map(name, plan.map),
            timed_reduce(name, reduce) if reduce is not None else None,
            timed_batch(name, plan.hints),
        )

    return replace(
        policy,
        predicates=tuple(
            replace(
                entry,
                fn=timed_predicate(entry.name, entry.fn),
                hints=timed_screen(entry.name, entry.hints),
            )
            for entry in policy.predicates
        ),
        priorities=tuple(
            replace(
                entry,
                fn=timed_priority(entry.name, entry.fn),
                plan=timed_plan(entry.name, entry.plan),
            )
            for entry in policy.priorities
        ),
    )
