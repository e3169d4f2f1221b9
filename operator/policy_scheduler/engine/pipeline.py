"""The framework runtime: a policy's plugins per extension point, and what each status means.

kube-scheduler's ``framework/runtime/framework.go`` (v1.27-v1.30): the one place that
owns the order of the points and the meaning of every status at every point; plugins
never call each other. A :class:`Pipeline` is made once per policy version by the
compiler and holds the plugins enabled at each point (:class:`Enabled`), in order.

Filter and Score are not run here plant by plant: every Filter plugin becomes an
engine predicate and every Score plugin an engine priority (:func:`filter_predicate`,
:func:`score_priority`, or the plugin's own engine functions for a built-in one), so
that the algorithm's fast path (plans, equivalence cache, screens, journaled filter)
serves the built-ins whatever else a policy enables; a plugin without fast-path hints
runs node by node for its own part only. The two points' rules are nonetheless defined
here, once, and run by both node evaluators (``evaluator.py``): :func:`run_filter` (one
node's functions in order, the first rejection stopping them unless
alwaysCheckAllPredicates), :func:`filter_predicate` (PreFilter's Skip, a Filter status
as reasons), :func:`score_priority` (PreScore's Skip, NormalizeScore, the 0..100
check), :func:`weighted_sum` / :func:`weighted_row` (the weights) and
:func:`legacy_score_scale` (a legacy 0..10 score x10 beside Score plugins).

What each point's statuses mean (the runners below):

==========  ===================================================================
PreFilter   Skip: the plugin's Filter is not called this cycle. Unschedulable: the
            remaining PreFilters still run, then the pod fits nowhere (preemption
            may help). UnschedulableAndUnresolvable: at once, no preemption. Node
            sets (:class:`~.interface.PreFilterResult`) intersect; empty: the pod
            fits nowhere, unresolvably. Error: the attempt fails.
Filter      per node: the first rejection stops the node's checks (unless
            alwaysCheckAllPredicates); Error fails the attempt.
PostFilter  only when no node fits; stops at the first Success (or
            UnschedulableAndUnresolvable); Error fails the attempt.
PreScore    Skip: the plugin's Score is not called; anything else but Success
            fails the attempt.
Score       0..100 after NormalizeScore, else the attempt fails; times the weight
            (:func:`weighted_sum`, :func:`weighted_row`: the only place weights
            are applied, whichever node evaluator scores).
Reserve     the first failure stops; then every reserve plugin's Unreserve runs, in
            reverse order.
Permit      the first rejection stops; Wait (timeout capped at 15 min, one timer
            per plugin) holds the pod assumed until allowed, rejected or timed out.
PreBind     the first failure stops (the pod is unreserved and retried).
Bind        the first answer that is not Skip is final.
PostBind    informational: failures are logged only.
==========  ===================================================================

A plugin that raises is an Error for that pod's attempt, never the scheduler's crash:
the exception is logged with its traceback (at most once a minute per plugin and point;
the rest are counted) and the attempt fails with a message naming the plugin.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import add
from typing import Any, Final

from ..names import MAX_NODE_SCORE, MAX_PRIORITY
from ..objects import Pod
from .functions import FITS, CycleState, Predicate, Priority, Reasons, Unresolvable
from .interface import (
    BindPlugin,
    Code,
    FilterPlugin,
    Gang,
    GangPlugin,
    NodeInfoView,
    NodeScore,
    PermitPlugin,
    Plugin,
    PostBindPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
    Status,
    normalizes,
)
from .nodeinfo import NodeInfo

logger = logging.getLogger(__name__)

#: Extension point names as metrics and messages spell them (kube-scheduler's).
PRE_ENQUEUE: Final = "PreEnqueue"
QUEUE_SORT: Final = "QueueSort"
PRE_FILTER: Final = "PreFilter"
FILTER: Final = "Filter"
POST_FILTER: Final = "PostFilter"
PRE_SCORE: Final = "PreScore"
SCORE: Final = "Score"
NORMALIZE_SCORE: Final = "ScoreExtensionNormalize"
RESERVE: Final = "Reserve"
UNRESERVE: Final = "Unreserve"
PERMIT: Final = "Permit"
PRE_BIND: Final = "PreBind"
BIND: Final = "Bind"
POST_BIND: Final = "PostBind"

#: ``(point, plugin, status code name, seconds)``: one plugin call, for metrics.
Observer = Callable[[str, str, str, float], None]

#: How often one plugin's traceback at one point is logged (the others are counted).
TRACEBACK_INTERVAL: Final = 60.0


@dataclass(frozen=True, slots=True)
class Enabled:
    """A plugin enabled at a point: its name (as the policy names it) and the instance."""

    name: str
    plugin: Plugin
    weight: int = 1


@dataclass(frozen=True, slots=True)
class Pipeline:
    """The plugins of one policy version, per extension point, in order.

    Filter and Score plugins live in the compiled policy's predicates and priorities
    (as engine functions); ``filter_names`` and ``score_names`` only name them, for
    ``status.plugins``.
    """

    pre_enqueue: tuple[Enabled, ...] = ()
    #: None: PrioritySort, the queue's own order (priority, then age).
    queue_sort: Enabled | None = None
    pre_filter: tuple[Enabled, ...] = ()
    filter_names: tuple[str, ...] = ()
    post_filter: tuple[Enabled, ...] = ()
    pre_score: tuple[Enabled, ...] = ()
    score_names: tuple[tuple[str, int], ...] = ()
    reserve: tuple[Enabled, ...] = ()
    permit: tuple[Enabled, ...] = ()
    pre_bind: tuple[Enabled, ...] = ()
    bind: tuple[Enabled, ...] = ()
    post_bind: tuple[Enabled, ...] = ()
    #: The policy's plugins that group pods into gangs (any point's; see GangPlugin).
    gangs: tuple[Enabled, ...] = ()

    def gang_of(self, pod: Pod) -> tuple[Enabled, Gang] | None:
        """The first gang a plugin puts the pod in, with that plugin; None: no gang."""
        for entry in self.gangs:
            plugin = entry.plugin
            assert isinstance(plugin, GangPlugin)
            try:
                gang = plugin.gang_of(pod)
            except Exception as exc:
                plugin_raised("Gang", entry.name, exc)
                continue
            if gang is not None:
                return entry, gang
        return None

    def listing(self) -> dict[str, list[dict[str, Any]]]:
        """What runs at each point, in order (``status.plugins``): names, weights for Score."""
        out: dict[str, list[dict[str, Any]]] = {}

        def put(point: str, entries: Iterable[dict[str, Any]]) -> None:
            listed = list(entries)
            if listed:
                out[point] = listed

        put("preEnqueue", ({"name": e.name} for e in self.pre_enqueue))
        put(
            "queueSort",
            [{"name": self.queue_sort.name if self.queue_sort is not None else "PrioritySort"}],
        )
        put("preFilter", ({"name": e.name} for e in self.pre_filter))
        put("filter", ({"name": name} for name in self.filter_names))
        put("postFilter", ({"name": e.name} for e in self.post_filter))
        put("preScore", ({"name": e.name} for e in self.pre_score))
        put("score", ({"name": name, "weight": weight} for name, weight in self.score_names))
        put("reserve", ({"name": e.name} for e in self.reserve))
        put("permit", ({"name": e.name} for e in self.permit))
        put("preBind", ({"name": e.name} for e in self.pre_bind))
        put("bind", ({"name": e.name} for e in self.bind))
        put("postBind", ({"name": e.name} for e in self.post_bind))
        return out


EMPTY_PIPELINE: Final = Pipeline()


class PluginFailure(Exception):
    """A plugin raised, or answered Error (or an answer its point does not allow).

    Raised out of Filter and Score (where the engine runs plugins inside its node
    loops) and turned into the attempt's error; its message names the plugin.
    """

    def __init__(self, point: str, plugin: str, message: str) -> None:
        self.point = point
        self.plugin = plugin
        super().__init__(f'running {point} plugin "{plugin}": {message}')


# -- calling a plugin ----------------------------------------------------------------


@dataclass(slots=True)
class _Logged:
    last: float = float("-inf")
    suppressed: int = 0


_LOGGED: dict[tuple[str, str], _Logged] = {}
#: Plugin exceptions so far, by (point, plugin): the runtime exports it as a metric.
EXCEPTIONS: dict[tuple[str, str], int] = {}


def plugin_raised(point: str, plugin: str, exc: BaseException) -> Status:
    """Log (rate-limited) and count an exception a plugin raised; its Error status."""
    key = (point, plugin)
    EXCEPTIONS[key] = EXCEPTIONS.get(key, 0) + 1
    logged = _LOGGED.setdefault(key, _Logged())
    now = time.monotonic()
    if now - logged.last >= TRACEBACK_INTERVAL:
        more = f" ({logged.suppressed} more since the last one logged)" if logged.suppressed else ""
        logger.error(
            "%s plugin %s raised%s",
            point,
            plugin,
            more,
            exc_info=(type(exc), exc, exc.__traceback__),
        )
        logged.last = now
        logged.suppressed = 0
    else:
        logged.suppressed += 1
    # The words only: a status kept with a decision must not hold the exception's frames.
    return Status.error(f"{type(exc).__name__}: {exc}").with_plugin(plugin)


def _observe(
    state: CycleState | None, point: str, plugin: str, status: Status | None, start: float
) -> None:
    observe = state.observe if state is not None else None
    if observe is not None:
        code = "Success" if status is None else _CODE_NAMES[status.code]
        observe(point, plugin, code, time.perf_counter() - start)


_CODE_NAMES: Final = {
    Code.SUCCESS: "Success",
    Code.ERROR: "Error",
    Code.UNSCHEDULABLE: "Unschedulable",
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable",
    Code.WAIT: "Wait",
    Code.SKIP: "Skip",
}


def code_name(status: Status | None) -> str:
    return "Success" if status is None else _CODE_NAMES[status.code]


def _checked(point: str, plugin: str, value: object) -> Status | None:
    """A plugin's answer as a status (None: Success); anything else is an Error."""
    if value is None or isinstance(value, Status):
        return value.with_plugin(plugin) if isinstance(value, Status) else None
    return Status.error(f"returned {type(value).__name__}, not a Status or None").with_plugin(
        plugin
    )


def _call(
    point: str, entry: Enabled, state: CycleState | None, fn: Callable[..., Any], *args: Any
) -> Any:
    start = time.perf_counter()
    try:
        value = fn(*args)
    except Exception as exc:
        status = plugin_raised(point, entry.name, exc)
        _observe(state, point, entry.name, status, start)
        return status
    _observe(state, point, entry.name, value if isinstance(value, Status) else None, start)
    return value


async def _call_async(
    point: str,
    entry: Enabled,
    state: CycleState,
    fn: Callable[..., Awaitable[Any]],
    *args: Any,
    timeout: float | None = None,
) -> Any:
    """An async plugin call with its deadline: past it, an Error naming the deadline."""
    start = time.perf_counter()
    deadline = timeout if timeout is not None else type(entry.plugin).timeout_seconds
    try:
        # A built-in whose own client keeps the deadline says so with an infinite one.
        call = fn(*args)
        value = await (call if deadline == float("inf") else asyncio.wait_for(call, deadline))
    except TimeoutError:
        status = Status.error(f"no answer within {deadline:g}s").with_plugin(entry.name)
        _observe(state, point, entry.name, status, start)
        return status
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        status = plugin_raised(point, entry.name, exc)
        _observe(state, point, entry.name, status, start)
        return status
    _observe(state, point, entry.name, value if isinstance(value, Status) else None, start)
    return value


# -- PreEnqueue ------------------------------------------------------------------------


def run_pre_enqueue(pipeline: Pipeline, pod: Pod) -> Status | None:
    """None when every PreEnqueue plugin lets the pod into the active queue."""
    for entry in pipeline.pre_enqueue:
        plugin = entry.plugin
        assert isinstance(plugin, PreEnqueuePlugin)
        status = _checked(
            PRE_ENQUEUE, entry.name, _call(PRE_ENQUEUE, entry, None, plugin.pre_enqueue, pod)
        )
        if status is not None and not status.is_success:
            return status
    return None


# -- PreFilter -------------------------------------------------------------------------


@dataclass(slots=True)
class PreFilterOutcome:
    """What the PreFilter point decided: a failure (``status``), or the nodes to filter."""

    status: Status | None = None
    #: The names the PreFilter results allow (their intersection); None: every node.
    node_names: frozenset[str] | None = None
    #: The plugins whose result narrowed the nodes.
    narrowed_by: list[str] = field(default_factory=list)
    #: When it refused the pod: the plugins that did (kube-scheduler v1.34's
    #: UnschedulablePlugins from PreFilter: every Unschedulable one, the one
    #: UnschedulableAndUnresolvable, or those whose node sets did not meet).
    rejected_by: list[str] = field(default_factory=list)


#: In-tree PreFilter plugins whose answer and cycle state come from the pod and from
#: objects other than pods (claims, volumes, classes, devices, the policy's args): taking
#: pods off a node and putting them back, all preemption's what-if does, cannot change
#: them.
POD_LOCAL_PRE_FILTER: Final = frozenset(
    {
        "NodeResourcesFit",
        "NodePorts",
        "NodeAffinity",
        "VolumeBinding",
        "VolumeZone",
        "NodeVolumeLimits",
        "EBSLimits",
        "GCEPDLimits",
        "AzureDiskLimits",
        "CinderLimits",
        "DynamicResources",
    }
)
#: In-tree PreFilter plugins whose Skip stays a Skip while pods are only taken off and
#: put back: the pod has no constraint of theirs and no existing pod's term selects it
#: (InterPodAffinity), no spread constraint (PodTopologySpread), no volume that could
#: conflict (VolumeRestrictions). Their other answers depend on the other pods.
SKIP_STABLE_PRE_FILTER: Final = frozenset(
    {"InterPodAffinity", "PodTopologySpread", "VolumeRestrictions"}
)
_INTREE = "policy_scheduler.engine.intree."


@dataclass(frozen=True, slots=True)
class PreFilterReplay:
    """PreFilter as it ran once for a pod, for preemption's what-if to replay.

    kube-scheduler runs PreFilter once per preemption attempt and adjusts the state of
    the plugins that have AddPod/RemovePod as victims leave a node; policy-scheduler runs
    it again for each trial instead, except for what cannot change when pods leave a
    node and come back: the answers (and ``CycleState.write`` data) of
    :data:`POD_LOCAL_PRE_FILTER`, and the Skips of :data:`SKIP_STABLE_PRE_FILTER`, which
    are replayed from here. A trial that adds a pod not in the cluster when this was
    recorded (the nominated pods' pass) must not use it.
    """

    answers: Mapping[str, tuple[object, tuple[tuple[str, Any], ...]]]


def _replayable(entry: Enabled, value: object) -> bool:
    if not type(entry.plugin).__module__.startswith(_INTREE):
        return False  # a plugin of one's own: its state may read anything
    if entry.name in POD_LOCAL_PRE_FILTER:
        return True
    return entry.name in SKIP_STABLE_PRE_FILTER and isinstance(value, Status) and value.is_skip


def run_pre_filter(
    pipeline: Pipeline,
    state: CycleState,
    pod: Pod,
    *,
    replay: PreFilterReplay | None = None,
    record: dict[str, tuple[object, tuple[tuple[str, Any], ...]]] | None = None,
) -> PreFilterOutcome:
    """The PreFilter point; ``record`` collects what :class:`PreFilterReplay` keeps,
    ``replay`` answers for the plugins it holds instead of calling them."""
    outcome = PreFilterOutcome()
    rejected: Status | None = None
    for entry in pipeline.pre_filter:
        plugin = entry.plugin
        assert isinstance(plugin, PreFilterPlugin)
        saved = replay.answers.get(entry.name) if replay is not None else None
        if saved is not None:
            value, writes = saved
            for key, item in writes:
                state.write(key, item)
            if value is None:
                continue
            if type(value) is Status and value.code is Code.SKIP:
                state.skip_filter.add(entry.name)
                continue
        elif record is not None:
            before = state.written()
            value = _call(PRE_FILTER, entry, state, plugin.pre_filter, state, pod)
            if _replayable(entry, value):
                after = state.written()
                writes = tuple(
                    (k, v) for k, v in after.items() if k not in before or before[k] is not v
                )
                record[entry.name] = (value, writes)
        else:
            value = _call(PRE_FILTER, entry, state, plugin.pre_filter, state, pod)
        if isinstance(value, PreFilterResult):
            names = value.node_names
            outcome.narrowed_by.append(entry.name)
            outcome.node_names = names if outcome.node_names is None else outcome.node_names & names
            if not outcome.node_names:
                which = outcome.narrowed_by
                message = (
                    f"node(s) didn't satisfy plugin {which[0]}"
                    if len(which) == 1
                    else f"node(s) didn't satisfy plugin(s) [{' '.join(which)}] simultaneously"
                )
                outcome.status = Status.unresolvable(message).with_plugin(entry.name)
                outcome.rejected_by = list(which)
                return outcome
            continue
        status = _checked(PRE_FILTER, entry.name, value)
        if status is None or status.is_success:
            continue
        if status.is_skip:
            state.skip_filter.add(entry.name)
            continue
        if status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            outcome.status = status
            outcome.rejected_by = [entry.name]
            return outcome
        if status.code is Code.UNSCHEDULABLE:
            rejected = status  # the other PreFilters still run (their state is needed)
            outcome.rejected_by.append(entry.name)
            continue
        outcome.status = _as_error(PRE_FILTER, status)
        return outcome
    outcome.status = rejected
    return outcome


def _as_error(point: str, status: Status) -> Status:
    text = status.message or f"returned {code_name(status)}"
    message = f'running {point} plugin "{status.plugin}": {text}'
    return Status(Code.ERROR, (message,), status.plugin, cause=status.cause)


# -- Filter: one node's Filter functions, the first-failure rule -----------------------


def run_filter(
    pod: Pod, info: NodeInfo, cycle: CycleState, fns: Iterable[Predicate], check_all: bool
) -> list[str]:
    """The Filter point on one node: each function in order; the first rejection stops
    the node's checks unless ``check_all`` (alwaysCheckAllPredicates), then every
    rejection's reasons in order. [] fits. Both node evaluators run it (the fast one
    for its cached groups; its screened and planned forms give the same, held equal by
    ``tests/engine/test_fast_path.py``)."""
    reasons: list[str] = []
    for fn in fns:
        result = fn(pod, info, cycle)
        if result:
            reasons.extend(result)
            if not check_all:
                break
    return reasons


# -- Filter and Score as engine functions ----------------------------------------------


def filter_predicate(entry: Enabled) -> Predicate:
    """A Filter plugin as an engine predicate (built-ins give their own, see the module doc)."""
    plugin = entry.plugin
    assert isinstance(plugin, FilterPlugin)
    native = getattr(plugin, "predicate", None)
    if callable(native):
        found: Predicate = native()
        return found
    name = entry.name
    run = plugin.filter

    def predicate(pod: Pod, node: NodeInfo, cycle: CycleState) -> Reasons:
        if name in cycle.skip_filter:  # its PreFilter said Skip this cycle
            return FITS
        start = time.perf_counter() if cycle.observe is not None else 0.0
        try:
            status = run(cycle, pod, node)
        except Exception as exc:
            failed = plugin_raised(FILTER, name, exc)
            raise PluginFailure(FILTER, name, failed.message) from exc
        if cycle.observe is not None:
            _observe(cycle, FILTER, name, status if isinstance(status, Status) else None, start)
        if status is None:
            return FITS
        if not isinstance(status, Status):
            raise PluginFailure(FILTER, name, f"returned {type(status).__name__}, not a Status")
        code = status.code
        if code is Code.SUCCESS:
            return FITS
        if code is Code.UNSCHEDULABLE:
            return status.reasons or (f"node(s) were refused by {name}",)
        if code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            return tuple(
                Unresolvable(r) for r in status.reasons or (f"node(s) were refused by {name}",)
            )
        raise PluginFailure(FILTER, name, status.message or f"returned {code_name(status)}")

    return predicate


def score_priority(entry: Enabled) -> Priority:
    """A Score plugin (and its NormalizeScore) as an engine priority: 0..100 per node."""
    plugin = entry.plugin
    assert isinstance(plugin, ScorePlugin)
    native = getattr(plugin, "priority", None)
    if callable(native):
        found: Priority = native()
        return found
    name = entry.name
    run = plugin.score
    normalize = normalizes(plugin)

    def priority(pod: Pod, nodes: Sequence[NodeInfo], cycle: CycleState) -> list[int]:
        if name in cycle.skip_score:  # its PreScore said Skip this cycle: it counts 0
            return [0] * len(nodes)
        scores: list[int] = []
        add = scores.append
        for node in nodes:
            start = time.perf_counter() if cycle.observe is not None else 0.0
            try:
                value = run(cycle, pod, node)
            except Exception as exc:
                failed = plugin_raised(SCORE, name, exc)
                raise PluginFailure(SCORE, name, failed.message) from exc
            if cycle.observe is not None:
                _observe(cycle, SCORE, name, value if isinstance(value, Status) else None, start)
            if type(value) is not int:
                if isinstance(value, Status):
                    raise PluginFailure(
                        SCORE, name, value.message or f"returned {code_name(value)}"
                    )
                if isinstance(value, int):  # a bool, an IntEnum: an int all the same
                    value = int(value)
                else:
                    raise PluginFailure(SCORE, name, f"returned {type(value).__name__}, not an int")
            add(value)
        if normalize:
            listed = [
                NodeScore(node.name, score) for node, score in zip(nodes, scores, strict=True)
            ]
            start = time.perf_counter()
            try:
                status = plugin.normalize_score(cycle, pod, listed)
            except Exception as exc:
                failed = plugin_raised(NORMALIZE_SCORE, name, exc)
                raise PluginFailure(NORMALIZE_SCORE, name, failed.message) from exc
            _observe(cycle, NORMALIZE_SCORE, name, status, start)
            if status is not None and not status.is_success:
                raise PluginFailure(NORMALIZE_SCORE, name, status.message or code_name(status))
            scores = [item.score for item in listed]
        for score in scores:
            if not 0 <= score <= MAX_NODE_SCORE:
                raise PluginFailure(
                    SCORE,
                    name,
                    f"returns an invalid score {score}, it should in the range of "
                    f"[0, {MAX_NODE_SCORE}] after normalizing",
                )
        return scores

    return priority


# -- Score: the weights, applied here and nowhere else ----------------------------------


def legacy_score_scale(score_plugins: int) -> int:
    """What a legacy priority's (and an extender's) 0..10 counts beside Score plugins:
    x10 when some Score plugin scores 0..100 (v1.17+), else x1."""
    return MAX_NODE_SCORE // MAX_PRIORITY if score_plugins else 1


def scaled_weight(weight: int, scale: int, is_plugin: bool) -> int:
    """A priority's weight with the legacy scale folded in (a Score plugin's unchanged)."""
    return weight if is_plugin else weight * scale


def weighted_sum(totals: list[int], weight: int, scores: list[int]) -> list[int]:
    """One priority's column: totals plus ``weight`` x each node's raw score."""
    if weight == 1:
        return list(map(add, totals, scores))
    return [total + weight * score for total, score in zip(totals, scores, strict=True)]


def weighted_row(weights: Sequence[int], scores: Sequence[int]) -> int:
    """One node's row: the sum of ``weight`` x raw score over several priorities."""
    return sum([w * score for w, score in zip(weights, scores, strict=True) if w])


# -- PostFilter ------------------------------------------------------------------------


class NodeStatuses(Mapping[str, Status]):
    """The refused nodes' statuses for PostFilter, built from their reasons on first read."""

    def __init__(self, failed: Mapping[str, Sequence[str]]) -> None:
        self.failed = failed

    def __getitem__(self, name: str) -> Status:
        reasons = self.failed[name]
        code = (
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE
            if any(type(r) is Unresolvable for r in reasons)
            else Code.UNSCHEDULABLE
        )
        return Status(code, tuple(str(r) for r in reasons))

    def __iter__(self) -> Any:
        return iter(self.failed)

    def __len__(self) -> int:
        return len(self.failed)


async def run_post_filter(
    pipeline: Pipeline, state: CycleState, pod: Pod, failed: Mapping[str, Sequence[str]]
) -> tuple[Any, Status | None]:
    """(result, status): the first Success ends the point; its result (a plugin's
    :class:`~.interface.PostFilterResult`, or a built-in's own answer) is returned."""
    statuses = NodeStatuses(failed)
    reasons: list[str] = []
    rejector = ""
    result: Any = None
    for entry in pipeline.post_filter:
        value = await _post_filter_call(entry, state, pod, statuses)
        if isinstance(value, tuple):  # a built-in's (answer, status)
            answer, status = value
        elif isinstance(value, PostFilterResult):
            answer, status = value, None
        else:
            answer, status = None, _checked(POST_FILTER, entry.name, value)
        if status is None or status.is_success:
            return answer, None
        if status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            return answer, status
        if not status.is_rejected:
            return None, _as_error(POST_FILTER, status)
        if answer is not None:
            result = answer
        reasons.extend(status.reasons)
        rejector = rejector or entry.name
    return result, Status(Code.UNSCHEDULABLE, tuple(reasons), rejector)


async def _post_filter_call(
    entry: Enabled, state: CycleState, pod: Pod, statuses: Mapping[str, Status]
) -> Any:
    """A PostFilter call, with the plugin's deadline: it runs while the cycle holds the
    cluster (every other pod waits). The built-in preemptions, which evaluate the
    cluster and yield between node chunks, have none (``timeout_seconds`` infinite)."""
    plugin = entry.plugin
    assert isinstance(plugin, PostFilterPlugin)
    return await _call_async(POST_FILTER, entry, state, plugin.post_filter, state, pod, statuses)


# -- PreScore --------------------------------------------------------------------------


def run_pre_score(
    pipeline: Pipeline, state: CycleState, pod: Pod, nodes: Sequence[NodeInfoView]
) -> Status | None:
    for entry in pipeline.pre_score:
        plugin = entry.plugin
        assert isinstance(plugin, PreScorePlugin)
        status = _checked(
            PRE_SCORE,
            entry.name,
            _call(PRE_SCORE, entry, state, plugin.pre_score, state, pod, nodes),
        )
        if status is None or status.is_success:
            continue
        if status.is_skip:
            state.skip_score.add(entry.name)
            continue
        return _as_error(PRE_SCORE, status)
    return None


# -- Reserve, Unreserve, Permit ----------------------------------------------------------


def run_reserve(pipeline: Pipeline, state: CycleState, pod: Pod, node: str) -> Status | None:
    """None when every Reserve succeeded; else the failure (the caller unreserves)."""
    for entry in pipeline.reserve:
        plugin = entry.plugin
        assert isinstance(plugin, ReservePlugin)
        status = _checked(
            RESERVE, entry.name, _call(RESERVE, entry, state, plugin.reserve, state, pod, node)
        )
        if status is None or status.is_success:
            continue
        return status if status.is_rejected else _as_error(RESERVE, status)
    return None


def run_unreserve(pipeline: Pipeline, state: CycleState, pod: Pod, node: str) -> None:
    """Every reserve plugin's Unreserve, in reverse order; failures are only logged."""
    for entry in reversed(pipeline.reserve):
        plugin = entry.plugin
        assert isinstance(plugin, ReservePlugin)
        _call(UNRESERVE, entry, state, plugin.unreserve, state, pod, node)


@dataclass(frozen=True, slots=True)
class PermitOutcome:
    """Permit's answer: None status and no waits (allowed), a rejection, or waits."""

    status: Status | None = None
    #: Plugin -> seconds to wait (capped by the waiting pod), when some said Wait.
    waits: dict[str, float] = field(default_factory=dict)


def _wait_seconds(timeout: object) -> float | None:
    """Permit's Wait in seconds (none: 0, negative: 0); None when it is not a number."""
    if timeout is None:
        return 0.0
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or math.isnan(timeout):
        return None
    return max(0.0, float(timeout))


def run_permit(pipeline: Pipeline, state: CycleState, pod: Pod, node: str) -> PermitOutcome:
    waits: dict[str, float] = {}
    for entry in pipeline.permit:
        plugin = entry.plugin
        assert isinstance(plugin, PermitPlugin)
        status = _checked(
            PERMIT, entry.name, _call(PERMIT, entry, state, plugin.permit, state, pod, node)
        )
        if status is None or status.is_success:
            continue
        if status.is_rejected:
            return PermitOutcome(status)
        if status.code is Code.WAIT:
            timeout = _wait_seconds(status.timeout)
            if timeout is None:  # Status.wait("soon"): the plugin's bug, this pod's Error
                why = f"Status.wait({status.timeout!r}): the timeout must be a number of seconds"
                return PermitOutcome(_as_error(PERMIT, Status.error(why).with_plugin(entry.name)))
            waits[entry.name] = timeout
            continue
        return PermitOutcome(_as_error(PERMIT, status))
    return PermitOutcome(None, waits)


# -- the binding cycle's points ----------------------------------------------------------


async def run_pre_bind(pipeline: Pipeline, state: CycleState, pod: Pod, node: str) -> Status | None:
    for entry in pipeline.pre_bind:
        plugin = entry.plugin
        assert isinstance(plugin, PreBindPlugin)
        value = await _call_async(PRE_BIND, entry, state, plugin.pre_bind, state, pod, node)
        status = _checked(PRE_BIND, entry.name, value)
        if status is None or status.is_success:
            continue
        return status if status.is_rejected else _as_error(PRE_BIND, status)
    return None


async def run_bind(entries: Sequence[Enabled], state: CycleState, pod: Pod, node: str) -> Status:
    """The first Bind answer that is not Skip; Skip when every plugin skipped."""
    for entry in entries:
        plugin = entry.plugin
        assert isinstance(plugin, BindPlugin)
        value = await _call_async(BIND, entry, state, plugin.bind, state, pod, node)
        status = _checked(BIND, entry.name, value)
        if status is None:
            return Status().with_plugin(entry.name)
        if status.is_skip:
            continue
        if status.is_success or status.is_rejected:
            return status
        return _as_error(BIND, status)
    return Status(Code.SKIP)


async def run_post_bind(pipeline: Pipeline, state: CycleState, pod: Pod, node: str) -> None:
    for entry in pipeline.post_bind:
        plugin = entry.plugin
        assert isinstance(plugin, PostBindPlugin)
        await _call_async(POST_BIND, entry, state, plugin.post_bind, state, pod, node)


def plugin_classes() -> dict[str, type[Plugin]]:
    """The point classes by kube-scheduler's point names (for ``policy-scheduler plugins``)."""
    return {
        PRE_ENQUEUE: PreEnqueuePlugin,
        QUEUE_SORT: QueueSortPlugin,
        PRE_FILTER: PreFilterPlugin,
        FILTER: FilterPlugin,
        POST_FILTER: PostFilterPlugin,
        PRE_SCORE: PreScorePlugin,
        SCORE: ScorePlugin,
        RESERVE: ReservePlugin,
        PERMIT: PermitPlugin,
        PRE_BIND: PreBindPlugin,
        BIND: BindPlugin,
        POST_BIND: PostBindPlugin,
    }
