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
from dataclasses import dataclass, field, replace
from time import perf_counter
from typing import Any

from .. import names
from ..objects import Pod, is_extended_resource
from ..policy import (
    INVALID,
    INVALID_ARGS,
    SHADOW,
    Extender,
    PolicyError,
    PredicateArgument,
    PriorityArgument,
    SchedulingPolicy,
    SchedulingPolicySpec,
    ShadowSettings,
)
from . import catalogue  # noqa: F401  (fills the registry)
from .cluster import ClusterState
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
from .handles import DetachedHandle
from .interface import POINT_CLASSES, GangPlugin, Handle, Plugin, points_of
from .nodeinfo import NodeInfo
from .pipeline import (
    EMPTY_PIPELINE,
    Enabled,
    Pipeline,
    PreFilterReplay,
    filter_predicate,
    legacy_score_scale,
    run_pre_filter,
    scaled_weight,
    score_priority,
)
from .plugins import WRONG_EXTENSION_POINT, PluginProblem, check_args, make_plugin, plugin_class
from .pluginsets import ALL, expand_point

#: v1.30's volume binding plugin (in-tree): it reserves and binds as CheckVolumeBinding.
VOLUME_BINDING = "VolumeBinding"
#: Accepted reason of a policy that runs two QueueSort plugins (or none).
MULTIPLE_QUEUE_SORT = "MultipleQueueSort"


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
    #: The plugins of every extension point (Filter and Score: ``predicates`` and
    #: ``priorities`` above, as engine functions).
    pipeline: Pipeline = EMPTY_PIPELINE
    #: 10 when the policy's scores are the framework's 0..100 (some Score plugin): a
    #: legacy priority's 0..10 and an extender's 0..10 then count x10, as v1.17+ did.
    legacy_score_scale: int = 1
    #: The policy is decided as kube-scheduler v1.30's scheduling cycle decides
    #: (:func:`framework_cycle`): ties broken at random, the nominated node tried
    #: first, one feasible node enough when nothing scores, PostFilter's message in the
    #: fit error. False: the legacy cycle (round-robin ties), exactly as before.
    framework_cycle: bool = False
    #: The Filter plugins (their predicates are among ``predicates``), for the events
    #: they register (:mod:`.events`).
    filter_plugins: tuple[Enabled, ...] = ()
    #: ``predicates``' functions, in order: what the Filter point runs on a node
    #: (:func:`~.pipeline.run_filter`). Derived, kept in step by ``__post_init__``.
    filter_fns: tuple[Predicate, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "filter_fns", tuple(entry.fn for entry in self.predicates))

    def new_cycle(
        self, pod: Pod, cluster: ClusterState, replay: PreFilterReplay | None = None
    ) -> CycleState:
        """A fresh cycle state for ``pod`` on ``cluster`` as it is now, its PreFilter
        plugins run (their verdicts aside): what a check outside the decision itself
        (a preemption's trial, the nominated pods' pass, a fit hint) gives the plugins'
        Filters to read, as kube-scheduler's preemption re-runs PreFilter state.
        ``replay`` (from :meth:`pre_filter_replay`) answers for the plugins it holds."""
        cycle = CycleState(pod, cluster, self.settings)
        if self.pipeline.pre_filter:
            run_pre_filter(self.pipeline, cycle, pod, replay=replay)
        return cycle

    def pre_filter_replay(self, pod: Pod, cluster: ClusterState) -> PreFilterReplay | None:
        """PreFilter run once on ``cluster`` as it is now, recorded for the trials of a
        preemption's what-if (:class:`~.pipeline.PreFilterReplay`); None when nothing
        could be replayed, or on the plain path (the definition runs every time)."""
        if not self.pipeline.pre_filter or not self.settings.fast:
            return None
        answers: dict[str, tuple[object, tuple[tuple[str, Any], ...]]] = {}
        run_pre_filter(self.pipeline, CycleState(pod, cluster, self.settings), pod, record=answers)
        return PreFilterReplay(answers) if answers else None


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


def compile_policy(policy: SchedulingPolicy, handle: Handle | None = None) -> CompiledPolicy:
    """Bind a valid policy to the functions and plugins one decision runs.

    Three steps: translate the legacy lists (``spec.predicates``, ``spec.priorities``,
    the plugins they name, with their ``pluginConfig``) into engine functions
    (:func:`_translate`); merge every point's plugin set, defaults and ``spec.plugins``,
    by the one merge of :mod:`.pluginsets` (:func:`_pipeline`); make the
    :class:`CompiledPolicy` (:func:`_make`).

    ``handle``: what the policy's plugins are given (the scheduler's); a detached one
    (no cluster, no API) when compiling only to check (``validate``). Raises
    :class:`~..policy.PolicyError` naming the field, with the Accepted reason.
    """
    prefix = f'SchedulingPolicy "{policy.name}": '
    plugins = _PluginMaker(policy, handle or DetachedHandle(), prefix)
    translated = _translate(policy, plugins, prefix)
    pipeline = _merge(policy.spec, plugins, translated)
    errors = translated.errors + plugins.errors
    if errors:
        raise NotImplementedPolicyError(errors, reason=plugins.reason or INVALID)
    return _make(policy, translated, pipeline)


@dataclass(slots=True)
class _Translated:
    """What the legacy lists translate to: Filter and Score as engine functions, in order."""

    predicates: list[CompiledPredicate] = field(default_factory=list)
    priorities: list[CompiledPriority] = field(default_factory=list)
    #: The Filter / Score plugins among them (named in the lists, or added by the merge).
    filter_plugins: list[Enabled] = field(default_factory=list)
    score_plugins: list[Enabled] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    #: The legacy CheckVolumeBinding predicate runs (its Reserve and PreBind too).
    binds_volumes: bool = False


def _translate(policy: SchedulingPolicy, plugins: _PluginMaker, prefix: str) -> _Translated:
    """Step 1: ``spec.predicates`` and ``spec.priorities`` (absent: the legacy defaults)
    as engine functions; a plugin name there is made with its ``pluginConfig``."""
    out = _Translated()
    _translate_predicates(policy, plugins, prefix, out)
    _translate_priorities(policy.spec, plugins, prefix, out)
    check = REGISTRY.predicates.get(names.CHECK_VOLUME_BINDING)
    out.binds_volumes = any(entry.fn is check for entry in out.predicates)
    return out


def _translate_predicates(
    policy: SchedulingPolicy, plugins: _PluginMaker, prefix: str, out: _Translated
) -> None:
    spec = policy.spec
    errors, predicates = out.errors, out.predicates
    ordered = policy.ordered_predicates()
    if ordered is None:
        for name in names.DEFAULT_PREDICATE_ORDER:
            fn = REGISTRY.predicates.get(name)
            if fn is None:
                errors.append(f"{prefix}default predicate {name!r} is not implemented")
            else:
                predicates.append(compiled_predicate(name, fn))
        return
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
        if fn is None and names.is_plugin_name(entry.name):
            enabled = plugins.at(
                entry.name, f"spec.predicates[{index_of[id(entry)]}].name", names.FILTER
            )
            if enabled is not None:
                out.filter_plugins.append(enabled)
                predicates.append(compiled_predicate(entry.name, filter_predicate(enabled)))
            continue
        if fn is None:
            errors.append(f"{where}.name: predicate {entry.name!r} is not implemented yet")
            continue
        predicates.append(compiled_predicate(entry.name, fn))


def _translate_priorities(
    spec: SchedulingPolicySpec, plugins: _PluginMaker, prefix: str, out: _Translated
) -> None:
    errors, priorities = out.errors, out.priorities
    if spec.priorities is None:
        for name, weight in names.DEFAULT_PRIORITY_WEIGHTS:
            pfn = REGISTRY.priorities.get(name)
            if pfn is None:
                errors.append(f"{prefix}default priority {name!r} is not implemented")
            else:
                priorities.append(compiled_priority(name, weight, pfn))
        return
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
        if pfn is None and names.is_plugin_name(pentry.name):
            enabled = plugins.at(
                pentry.name, f"spec.priorities[{index}].name", names.SCORE, weight=pentry.weight
            )
            if enabled is not None:
                out.score_plugins.append(enabled)
                priorities.append(
                    compiled_priority(pentry.name, pentry.weight, score_priority(enabled))
                )
            continue
        if pfn is None:
            errors.append(f"{where}.name: priority {pentry.name!r} is not implemented yet")
            continue
        priorities.append(compiled_priority(pentry.name, pentry.weight, pfn))


def _merge(spec: SchedulingPolicySpec, plugins: _PluginMaker, out: _Translated) -> Pipeline:
    """Step 2: every point's plugin set merged (:func:`_pipeline`); the Filter and Score
    plugins multiPoint adds go after the translated ones."""
    pipeline, more_filters, more_scores = _pipeline(
        spec, plugins, out.filter_plugins, out.score_plugins, out.binds_volumes
    )
    for enabled in more_filters:
        out.predicates.append(compiled_predicate(enabled.name, filter_predicate(enabled)))
        out.filter_plugins.append(enabled)
    for enabled in more_scores:
        out.priorities.append(
            compiled_priority(enabled.name, enabled.weight, score_priority(enabled))
        )
        out.score_plugins.append(enabled)
    return replace(
        pipeline,
        filter_names=tuple(entry.name for entry in out.predicates),
        score_names=tuple((entry.name, entry.weight) for entry in out.priorities),
    )


def _make(policy: SchedulingPolicy, out: _Translated, pipeline: Pipeline) -> CompiledPolicy:
    """Step 3: the :class:`CompiledPolicy`, with what the cycle reads off the lists."""
    spec = policy.spec
    predicates, filter_plugins = out.predicates, out.filter_plugins
    score_plugins = out.score_plugins
    framework = framework_cycle(
        legacy_predicates=len(predicates) - len(filter_plugins),
        legacy_priorities=len(out.priorities) - len(score_plugins),
        filter_plugins=len(filter_plugins),
        score_plugins=len(score_plugins),
    )
    scale = legacy_score_scale(len(score_plugins))
    plugin_scores = {entry.name for entry in score_plugins}
    priorities = [
        replace(entry, weight=scaled_weight(entry.weight, scale, entry.name in plugin_scores))
        if scale != 1
        else entry
        for entry in out.priorities
    ]
    ignored = frozenset(
        resource.name
        for extender in spec.extenders
        for resource in extender.managedResources
        if resource.ignoredByScheduler and is_extended_resource(resource.name)
    )
    return CompiledPolicy(
        name=policy.name,
        scheduler_name=spec.schedulerName,
        filter_plugins=tuple(filter_plugins),
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
        # The legacy predicate or v1.30's VolumeBinding: the decision says how the claims
        # bind on the chosen node (what simulate shows, what the stale check compares).
        binds_volumes=out.binds_volumes
        or any(entry.name == VOLUME_BINDING for entry in filter_plugins),
        pipeline=pipeline,
        legacy_score_scale=scale,
        framework_cycle=framework,
        checks_resources=any(
            entry.fn is REGISTRY.predicates.get(names.POD_FITS_RESOURCES)
            or entry.fn is REGISTRY.predicates.get(names.GENERAL_PREDICATES)
            for entry in predicates
        ),
    )


def framework_cycle(
    *, legacy_predicates: int, legacy_priorities: int, filter_plugins: int, score_plugins: int
) -> bool:
    """Whether a policy is decided by kube-scheduler v1.30's cycle rather than the legacy one.

    Its scores are the framework's: it runs a Score plugin and no legacy priority. Or it
    scores nothing at all (``priorities: []``) and filters with plugins only, at least
    one (a KubeSchedulerConfiguration profile whose Score plugins are all disabled). An
    absent predicate or priority list is the legacy default set: such a policy, and any
    policy running a legacy priority, keeps the legacy cycle.
    """
    if legacy_priorities:
        return False
    if score_plugins:
        return True
    return not legacy_predicates and filter_plugins > 0


class _PluginMaker:
    """Makes each plugin a policy names once (one instance per policy version), with the
    arguments of its ``pluginConfig`` entry, collecting every problem as a line."""

    def __init__(self, policy: SchedulingPolicy, handle: Handle, prefix: str) -> None:
        self.handle = handle
        self.prefix = prefix
        self.errors: list[str] = []
        self.reason = ""
        self._made: dict[str, Plugin | None] = {}
        self._args: dict[str, tuple[int, dict[str, Any]]] = {}
        for index, entry in enumerate(policy.spec.pluginConfig):
            if entry.name in self._args:
                first = self._args[entry.name][0]
                self.fail(
                    f"spec.pluginConfig[{index}].name: {entry.name!r} already has its "
                    f"arguments at spec.pluginConfig[{first}]",
                    INVALID,
                )
            else:
                self._args[entry.name] = (index, entry.args)

    def fail(self, message: str, reason: str) -> None:
        self.errors.append(self.prefix + message)
        self.reason = self.reason or reason

    def get(self, name: str, where: str) -> Plugin | None:
        """The plugin called ``name`` (made once); None after reporting why not."""
        if name in self._made:
            return self._made[name]
        made: Plugin | None = None
        try:
            cls = plugin_class(name)
            index, raw = self._args.get(name, (-1, None))
            args_at = f"{self.prefix}spec.pluginConfig[{index}].args" if index >= 0 else ""
            args = check_args(cls, raw, args_at or f"{self.prefix}{where}")
            made = make_plugin(name, cls, args, self.handle)
        except PluginProblem as exc:
            text = str(exc)
            if exc.reason == INVALID_ARGS:
                self.errors.extend(text.split("\n"))
                self.reason = self.reason or exc.reason
            else:
                self.fail(f"{where}: {text}", exc.reason)
        self._made[name] = made
        return made

    def at(self, name: str, where: str, point: str, *, weight: int = 1) -> Enabled | None:
        """The plugin as enabled at ``point``; None (reported) if it does not implement it."""
        plugin = self.get(name, where)
        if plugin is None:
            return None
        if not isinstance(plugin, POINT_CLASSES[point]):
            implemented = ", ".join(points_of(type(plugin))) or "none"
            self.fail(
                f"{where}: plugin {name!r} does not implement {point} (it implements: "
                f"{implemented})",
                WRONG_EXTENSION_POINT,
            )
            return None
        return Enabled(name, plugin, weight)

    def unused_args(self, used: set[str]) -> None:
        """Arguments for a plugin no point runs: checked all the same (a typo must show)."""
        for name, (index, _) in self._args.items():
            if name not in used:
                self.get(name, f"spec.pluginConfig[{index}].name")


#: The points ``spec.plugins`` configures, with their PluginSet field names.
_SET_POINTS: tuple[str, ...] = (
    names.PRE_ENQUEUE,
    names.QUEUE_SORT,
    names.PRE_FILTER,
    names.POST_FILTER,
    names.PRE_SCORE,
    names.RESERVE,
    names.PERMIT,
    names.PRE_BIND,
    names.BIND,
    names.POST_BIND,
)


def _pipeline(
    spec: SchedulingPolicySpec,
    plugins: _PluginMaker,
    filter_plugins: list[Enabled],
    score_plugins: list[Enabled],
    binds_volumes: bool,
) -> tuple[Pipeline, list[Enabled], list[Enabled]]:
    """Each point's plugins: its defaults and ``spec.plugins``, merged and expanded by
    kube-scheduler's rules (engine/pluginsets.py, the configuration's too). Returns the
    pipeline and the Filter / Score plugins multiPoint adds after ``predicates`` /
    ``priorities``."""

    def default(name: str, point: str) -> Enabled | None:
        return plugins.at(name, f"the default {point} plugin {name}", point)

    named = [*filter_plugins, *score_plugins]
    defaults: dict[str, list[Enabled]] = {point: [] for point in _SET_POINTS}
    queue_sort = default(names.PRIORITY_SORT, names.QUEUE_SORT)
    if queue_sort is not None:
        defaults[names.QUEUE_SORT].append(queue_sort)
    defaults[names.PRE_FILTER] = _implementing(filter_plugins, names.PRE_FILTER)
    defaults[names.PRE_SCORE] = _implementing(score_plugins, names.PRE_SCORE)
    if not spec.disablePreemption:
        found = default(names.LEGACY_PREEMPTION, names.POST_FILTER)
        if found is not None:
            defaults[names.POST_FILTER].append(found)
    for point in (names.RESERVE, names.PRE_BIND):
        if binds_volumes:
            found = default(names.CHECK_VOLUME_BINDING, point)
            if found is not None:
                defaults[point].append(found)
        defaults[point] += _implementing(named, point)
    binder = default(names.DEFAULT_BINDER, names.BIND)
    if binder is not None:
        defaults[names.BIND].append(binder)

    configured = spec.plugins
    sets = dict(configured.sets()) if configured is not None else {}
    multi = sets.pop(names.MULTI_POINT, None)
    multi_disabled = {ref.name for ref in multi.disabled} if multi is not None else set()
    if ALL in multi_disabled:
        plugins.fail(
            'spec.plugins.multiPoint.disabled: "*" is not allowed here; disable a point\'s '
            "defaults in that point's own set",
            INVALID,
        )

    # multiPoint's own plugins, at every point each implements (its Filter and Score
    # after the lists); the other points' lists are made below, with the defaults.
    offered: dict[str, list[Enabled]] = {point: [] for point in _SET_POINTS}
    more_filters: list[Enabled] = []
    more_scores: list[Enabled] = []
    if multi is not None:
        have_filters = {e.name for e in filter_plugins}
        have_scores = {e.name for e in score_plugins}
        in_multi: set[str] = set()
        for index, ref in enumerate(multi.enabled):
            where = f"spec.plugins.multiPoint.enabled[{index}].name"
            if ref.name in in_multi:
                # kube-scheduler refuses it (a plugin registered twice at its points).
                plugins.fail(f"{where}: {ref.name!r} is enabled twice in multiPoint", INVALID)
                continue
            in_multi.add(ref.name)
            plugin = plugins.get(ref.name, where)
            if plugin is None:
                continue
            implemented = [p for p in points_of(type(plugin)) if p != names.QUEUE_SORT]
            if not implemented:
                plugins.fail(
                    f"{where}: plugin {ref.name!r} implements only queueSort: name it in "
                    "spec.plugins.queueSort",
                    WRONG_EXTENSION_POINT,
                )
            for point in implemented:
                enabled = Enabled(ref.name, plugin, ref.weight or 1)
                if point == names.FILTER:
                    if ref.name not in have_filters:
                        more_filters.append(enabled)
                        have_filters.add(ref.name)
                elif point == names.SCORE:
                    if ref.name not in have_scores:
                        more_scores.append(enabled)
                        have_scores.add(ref.name)
                else:
                    offered[point].append(enabled)

    # Each point: the policy's defaults stand where a v1 profile's do (in multiPoint,
    # before the policy's own multiPoint entries), then kube-scheduler's expansion
    # (engine/pluginsets.py) orders them with the point's own enabled entries.
    result: dict[str, list[Enabled]] = {}
    for point in _SET_POINTS:
        multi_here = [e for e in defaults[point] if e.name not in multi_disabled]
        multi_here += [e for e in offered[point] if all(d.name != e.name for d in multi_here)]
        explicit: dict[str, Enabled] = {}
        plugin_set = sets.get(point)
        disabled: set[str] = set()
        if plugin_set is not None:
            disabled = {ref.name for ref in plugin_set.disabled}
            for index, ref in enumerate(plugin_set.enabled):
                where = f"spec.plugins.{point}.enabled[{index}].name"
                if ref.name == ALL:
                    plugins.fail(f'{where}: "*" only disables', INVALID)
                    continue
                if ref.name in explicit:
                    plugins.fail(f"{where}: {ref.name!r} is already enabled at {point}", INVALID)
                    continue
                named_here = plugins.at(ref.name, where, point)
                if named_here is not None:
                    explicit[ref.name] = named_here
        chosen = {e.name: e for e in multi_here} | explicit
        order = expand_point(list(explicit), [e.name for e in multi_here], disabled)
        result[point] = [chosen[name] for name in order]

    used = {e.name for entries in result.values() for e in entries}
    used |= {e.name for e in [*named, *more_filters, *more_scores]}
    plugins.unused_args(used)

    gangs: list[Enabled] = []
    for entry in [*named, *more_filters, *more_scores, *(e for es in result.values() for e in es)]:
        if isinstance(entry.plugin, GangPlugin) and all(g.name != entry.name for g in gangs):
            gangs.append(entry)
    sorts = result[names.QUEUE_SORT]
    if len(sorts) != 1:
        plugins.fail(
            "spec.plugins.queueSort: exactly one QueueSort plugin must run, got "
            + (", ".join(e.name for e in sorts) if sorts else "none"),
            MULTIPLE_QUEUE_SORT if sorts else INVALID,
        )
    if not result[names.BIND]:
        plugins.fail("spec.plugins.bind: at least one Bind plugin must run, got none", INVALID)
    sort = sorts[0] if len(sorts) == 1 else None
    return (
        Pipeline(
            pre_enqueue=tuple(result[names.PRE_ENQUEUE]),
            queue_sort=sort if sort is not None and sort.name != names.PRIORITY_SORT else None,
            pre_filter=tuple(result[names.PRE_FILTER]),
            post_filter=tuple(result[names.POST_FILTER]),
            pre_score=tuple(result[names.PRE_SCORE]),
            reserve=tuple(result[names.RESERVE]),
            permit=tuple(result[names.PERMIT]),
            pre_bind=tuple(result[names.PRE_BIND]),
            bind=tuple(result[names.BIND]),
            post_bind=tuple(result[names.POST_BIND]),
            gangs=tuple(gangs),
        ),
        more_filters,
        more_scores,
    )


def _implementing(entries: list[Enabled], point: str) -> list[Enabled]:
    """The entries whose plugin implements ``point``, once each, in order."""
    seen: set[str] = set()
    out: list[Enabled] = []
    for entry in entries:
        if entry.name not in seen and isinstance(entry.plugin, POINT_CLASSES[point]):
            seen.add(entry.name)
            out.append(Enabled(entry.name, entry.plugin))
    return out


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
