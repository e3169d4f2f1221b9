"""Prometheus metrics in kube-scheduler's vocabulary, served on ``GET /metrics``.

:class:`Metrics` owns its own ``CollectorRegistry`` (not prometheus-client's global
one), so several instances can live in one process, as tests need. The scheduling loop
calls one method per thing it measured; each method updates the series below, named and
labelled as kube-scheduler names them so existing dashboards and alerts apply:

==========================================================  =========  ==================
series                                                      kind       labels
==========================================================  =========  ==================
scheduler_schedule_attempts_total                           counter    result, profile
scheduler_scheduling_attempt_duration_seconds               histogram  result, profile
scheduler_e2e_scheduling_duration_seconds                   histogram  result, profile
scheduler_pending_pods                                      gauge      queue
scheduler_scheduling_algorithm_predicate_evaluation_seconds histogram
scheduler_scheduling_algorithm_priority_evaluation_seconds  histogram
scheduler_predicate_evaluation_seconds_total                counter    predicate
scheduler_priority_evaluation_seconds_total                 counter    priority
scheduler_binding_duration_seconds                          histogram  result
scheduler_pod_scheduling_attempts                           histogram
scheduler_cache_size                                        gauge      type
scheduler_leader                                            gauge      identity
scheduler_preemption_attempts_total                         counter
scheduler_preemption_victims                                histogram
scheduler_extender_requests_total                           counter    extender, verb, result
scheduler_extender_request_duration_seconds                 histogram  extender, verb, result
scheduler_shadow_decisions_total                            counter    policy, result
scheduler_plugin_execution_duration_seconds                 histogram  plugin, point, status
scheduler_permit_wait_duration_seconds                      histogram  result
scheduler_plugin_exceptions_total                           counter    plugin, point
scheduler_events_dropped_total                              counter
scheduler_slow_cycles_total                                 counter    policy
==========================================================  =========  ==================

``result`` is ``scheduled`` / ``unschedulable`` / ``error`` for attempts ("doesn't fit"
and "a bug or an API failure" are kept apart, as upstream does), and ``success`` /
``conflict`` / ``error`` for bindings (``conflict``: someone else bound the pod, 409).
``profile`` is the schedulerName. The extender series (ours: upstream had none) count
every call to an HTTP extender: ``extender`` is its urlPrefix, ``verb`` the call
(``filter``, ``prioritize``, ``bind``, ``preempt``), ``result`` ``success`` or ``error``
(no reply in time, a status other than 200, an unreadable reply, an ``error`` in it).
The shadow series (ours too) counts what each Shadow policy did with a pod its active
policy decided: ``result`` is the comparison (``same_node``, ``different_node``,
``only_active_placed``, ``only_shadow_placed``, ``neither_placed``), ``error`` (the
shadow failed), or why it did not decide (``sampled_out``, ``over_budget``); ``policy``
is the shadow's name. Unlike ``status.shadow`` (a window of pods), it counts attempts.
The dropped-events series (ours: client-go's event broadcaster drops without a metric)
counts events the reporter's full queue dropped, oldest first (``runtime/reporting.py``):
a steady rise means the report lane's budget (``--report-qps``) is below what the
cluster makes people read.
Durations use upstream's buckets: exponential from 1 ms doubling 15 times (to ~16 s);
attempts-until-scheduled uses 1, 2, 4, 8, 16; victims per preemption 1, 2, 4, 8, 16, 32
(v1.17's ``preemption_victims``).
A result outside these sets raises ValueError rather than opening a misspelt series.

:meth:`Metrics.serve` starts a small aiohttp server with only ``/metrics``; the health
endpoint is Kopf's liveness endpoint (``/healthz``), not served here.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any, Protocol

from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.registry import Collector

from ..engine import pipeline
from ..state import shadows
from .serving import serve_get

ATTEMPT_RESULTS = ("scheduled", "unschedulable", "error")
BINDING_RESULTS = ("success", "conflict", "error")
QUEUES = ("active", "backoff", "unschedulable")
#: The gauge's label for pods held at Permit (assumed on their node, not yet bound).
WAITING_ON_PERMIT = "waitingOnPermit"
EXTENDER_VERBS = ("filter", "prioritize", "bind", "preempt")
EXTENDER_RESULTS = ("success", "error")
#: A shadow attempt's result as ``state/shadows.py`` names it -> the metric's label.
SHADOW_RESULTS = {
    name: re.sub(r"(?<=[a-z])(?=[A-Z])", "_", name).lower()
    for name in (*shadows.RESULTS, shadows.ERROR, shadows.SAMPLED_OUT, shadows.OVER_BUDGET)
}

PERMIT_RESULTS = ("allowed", "rejected")
# kube-scheduler's plugin_execution_duration_seconds: ExponentialBuckets(0.00001, 1.5, 20).
PLUGIN_BUCKETS = tuple(0.00001 * 1.5**i for i in range(20))
# kube-scheduler's metrics.ExponentialBuckets(0.001, 2, 15): 1 ms .. 16.384 s.
DURATION_BUCKETS = tuple(0.001 * 2**i for i in range(15))
# kube-scheduler's pod_scheduling_attempts: ExponentialBuckets(1, 2, 5).
ATTEMPT_BUCKETS = (1.0, 2.0, 4.0, 8.0, 16.0)
# kube-scheduler's preemption_victims: ExponentialBuckets(1, 2, 6).
VICTIM_BUCKETS = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0)


def _check(value: str, allowed: tuple[str, ...], what: str) -> str:
    if value not in allowed:
        raise ValueError(f"metrics: {what} must be one of {', '.join(allowed)}, got {value!r}")
    return value


class MetricsSink(Protocol):
    """What the runtime reports to metrics (see :class:`.metrics.Metrics`).

    The bodies do nothing, so :class:`NullMetrics` is this Protocol as a class.
    """

    def attempt(self, result: str, profile: str, seconds: float) -> None:
        return None

    def e2e(self, result: str, profile: str, seconds: float) -> None:
        return None

    def pending(self, lengths: Mapping[str, int]) -> None:
        return None

    def phases(self, filter_s: float, score_s: float) -> None:
        return None

    def per_plugin(self, predicates: Mapping[str, float], priorities: Mapping[str, float]) -> None:
        return None

    def binding(self, result: str, seconds: float) -> None:
        return None

    def attempts_until_scheduled(self, attempts: int) -> None:
        return None

    def cache(self, nodes: int, pods: int, assumed: int) -> None:
        return None

    def preemption_attempt(self) -> None:
        return None

    def preemption_victims(self, victims: int) -> None:
        return None

    def shadow(self, policy: str, result: str) -> None:
        return None

    def plugin(self, point: str, plugin: str, status: str, seconds: float) -> None:
        return None

    def permit_wait(self, result: str, seconds: float) -> None:
        return None

    def slow_cycle(self, policy: str) -> None:
        return None


class NullMetrics(MetricsSink):
    """Metrics off: every report is dropped."""


class Metrics:
    """The scheduler's metrics, on a registry of their own (``self.registry``)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        #: (metric, label values) -> its labelled child (see _child)
        self._children: dict[tuple[MetricWrapperBase, tuple[str, ...]], Any] = {}
        r = self.registry
        self._attempts = Counter(
            "scheduler_schedule_attempts",
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a "
            "pod could not be scheduled, while 'error' means an internal scheduler problem.",
            ["result", "profile"],
            registry=r,
        )
        self._attempt_duration = Histogram(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            ["result", "profile"],
            buckets=DURATION_BUCKETS,
            registry=r,
        )
        self._e2e_duration = Histogram(
            "scheduler_e2e_scheduling_duration_seconds",
            "E2e scheduling latency in seconds (scheduling algorithm + binding)",
            ["result", "profile"],
            buckets=DURATION_BUCKETS,
            registry=r,
        )
        self._pending = Gauge(
            "scheduler_pending_pods",
            "Number of pending pods, by the queue type. 'active' means number of pods in "
            "activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' means "
            "number of pods in unschedulableQ; 'waitingOnPermit' the pods held at Permit.",
            ["queue"],
            registry=r,
        )
        self._predicate_phase = Histogram(
            "scheduler_scheduling_algorithm_predicate_evaluation_seconds",
            "Scheduling algorithm predicate evaluation duration in seconds",
            buckets=DURATION_BUCKETS,
            registry=r,
        )
        self._priority_phase = Histogram(
            "scheduler_scheduling_algorithm_priority_evaluation_seconds",
            "Scheduling algorithm priority evaluation duration in seconds",
            buckets=DURATION_BUCKETS,
            registry=r,
        )
        self._per_predicate = Counter(
            "scheduler_predicate_evaluation_seconds",
            "Time spent evaluating each predicate, in seconds, summed over nodes and the "
            "attempts timed per plugin (one in ten, as kube-scheduler samples plugin metrics)",
            ["predicate"],
            registry=r,
        )
        self._per_priority = Counter(
            "scheduler_priority_evaluation_seconds",
            "Time spent evaluating each priority, in seconds, summed over the attempts "
            "timed per plugin (one in ten)",
            ["priority"],
            registry=r,
        )
        self._binding = Histogram(
            "scheduler_binding_duration_seconds",
            "Binding latency in seconds",
            ["result"],
            buckets=DURATION_BUCKETS,
            registry=r,
        )
        self._attempts_until_scheduled = Histogram(
            "scheduler_pod_scheduling_attempts",
            "Number of attempts to successfully schedule a pod.",
            buckets=ATTEMPT_BUCKETS,
            registry=r,
        )
        self._cache = Gauge(
            "scheduler_cache_size",
            "Number of nodes, pods, and assumed (bound) pods in the scheduler cache.",
            ["type"],
            registry=r,
        )
        self._preemption_attempts = Counter(
            "scheduler_preemption_attempts",
            "Total preemption attempts in the cluster till now",
            registry=r,
        )
        self._preemption_victims = Histogram(
            "scheduler_preemption_victims",
            "Number of selected preemption victims",
            buckets=VICTIM_BUCKETS,
            registry=r,
        )
        self._extender_requests = Counter(
            "scheduler_extender_requests",
            "Number of calls to HTTP scheduler extenders, by extender (urlPrefix), verb "
            "and result.",
            ["extender", "verb", "result"],
            registry=r,
        )
        self._extender_duration = Histogram(
            "scheduler_extender_request_duration_seconds",
            "Latency of calls to HTTP scheduler extenders in seconds.",
            ["extender", "verb", "result"],
            buckets=DURATION_BUCKETS,
            registry=r,
        )
        self._shadow = Counter(
            "scheduler_shadow_decisions",
            "What Shadow SchedulingPolicies did with the pods their active policy decided, "
            "by shadow policy and result (compared to the active decision, error, or why "
            "skipped).",
            ["policy", "result"],
            registry=r,
        )
        self._leader = Gauge(
            "scheduler_leader",
            "1 if this replica holds the leader Lease and schedules, 0 otherwise.",
            ["identity"],
            registry=r,
        )
        # -- the report lane (reporting.py) --
        self._events_dropped = Counter(
            "scheduler_events_dropped",
            "Number of events not written because the queue of events to write was full "
            "(the oldest is dropped).",
            registry=r,
        )
        self._framework_metrics(r)

    # -- the scheduling framework's plugins (kube-scheduler's names) --------------------

    def _framework_metrics(self, r: CollectorRegistry) -> None:
        self._plugin = Histogram(
            "scheduler_plugin_execution_duration_seconds",
            "Duration for running a plugin at a specific extension point (one attempt in "
            "ten is timed, as kube-scheduler samples it).",
            ["plugin", "extension_point", "status"],
            buckets=PLUGIN_BUCKETS,
            registry=r,
        )
        self._permit_wait = Histogram(
            "scheduler_permit_wait_duration_seconds",
            "Duration of waiting on permit.",
            ["result"],
            buckets=DURATION_BUCKETS,
            registry=r,
        )
        self._slow_cycles = Counter(
            "scheduler_slow_cycles_total",
            "Scheduling cycles of a policy that held the scheduling loop longer than the "
            "slow-cycle budget; that policy's pods were held back after each.",
            ["policy"],
            registry=r,
        )
        r.register(_PluginExceptions())

    def plugin(self, point: str, plugin: str, status: str, seconds: float) -> None:
        """One timed plugin call at ``point`` (PreFilter, Filter, ...) and its status."""
        self._child(self._plugin, plugin, point, status).observe(seconds)

    def permit_wait(self, result: str, seconds: float) -> None:
        """A pod held at Permit was ``allowed`` or ``rejected`` (timeouts included)."""
        _check(result, PERMIT_RESULTS, "result")
        self._child(self._permit_wait, result).observe(seconds)

    def slow_cycle(self, policy: str) -> None:
        """A cycle of ``policy`` ran past the slow-cycle budget."""
        self._child(self._slow_cycles, policy).inc()

    def _child(self, metric: MetricWrapperBase, *values: str) -> Any:
        """``metric.labels(*values)``, looked up once: prometheus-client checks and locks
        on every ``labels()`` call, and the scheduling loop reports a dozen per pod."""
        key = (metric, values)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*values)
        return child

    def attempt(self, result: str, profile: str, seconds: float) -> None:
        """One scheduling attempt ended with ``result`` after ``seconds``."""
        _check(result, ATTEMPT_RESULTS, "result")
        self._child(self._attempts, result, profile).inc()
        self._child(self._attempt_duration, result, profile).observe(seconds)

    def e2e(self, result: str, profile: str, seconds: float) -> None:
        """From the pod entering the queue (this attempt) to the decision and binding."""
        _check(result, ATTEMPT_RESULTS, "result")
        self._child(self._e2e_duration, result, profile).observe(seconds)

    def pending(self, lengths: Mapping[str, int]) -> None:
        """Queue lengths, as ``SchedulerRuntime.pending_lengths()`` returns them: only
        the pods this scheduler serves (active, backoff, unschedulable), and the pods
        held at Permit (``waitingOnPermit``).

        The queue's ``waiting`` part, pods whose schedulerName no policy serves (every
        pending pod of another scheduler), is not exported: kube-scheduler counts only
        its own profiles' pods, and a dashboard summing the gauge would count other
        schedulers' pods as ours. The three queues are always set (a missing one is 0),
        so an emptied queue does not keep its last value; ``waitingOnPermit`` likewise.
        """
        for queue in (*QUEUES, WAITING_ON_PERMIT):
            self._child(self._pending, queue).set(lengths.get(queue, 0))

    def phases(self, filter_s: float, score_s: float) -> None:
        """Durations of one attempt's whole filter (predicates) and score (priorities)."""
        self._predicate_phase.observe(filter_s)
        self._priority_phase.observe(score_s)

    def per_plugin(self, predicates: Mapping[str, float], priorities: Mapping[str, float]) -> None:
        """Add the seconds spent per predicate / priority name (accumulated by the caller).

        Values must not be negative (counters only go up): prometheus-client raises.
        """
        for name, seconds in predicates.items():
            self._child(self._per_predicate, name).inc(seconds)
        for name, seconds in priorities.items():
            self._child(self._per_priority, name).inc(seconds)

    def binding(self, result: str, seconds: float) -> None:
        """One pods/binding call: ``success``, ``conflict`` (409) or ``error``."""
        _check(result, BINDING_RESULTS, "binding result")
        self._child(self._binding, result).observe(seconds)

    def attempts_until_scheduled(self, attempts: int) -> None:
        """A pod got scheduled on its ``attempts``-th attempt."""
        self._attempts_until_scheduled.observe(attempts)

    def cache(self, nodes: int, pods: int, assumed: int) -> None:
        """The scheduler cache's sizes."""
        self._child(self._cache, "nodes").set(nodes)
        self._child(self._cache, "pods").set(pods)
        self._child(self._cache, "assumed_pods").set(assumed)

    def preemption_attempt(self) -> None:
        """A pod that fits nowhere went through preemption (whatever it found)."""
        self._preemption_attempts.inc()

    def preemption_victims(self, victims: int) -> None:
        """A preemption chose a node: how many pods it evicts there."""
        self._preemption_victims.observe(victims)

    def extender(self, url_prefix: str, verb: str, result: str, seconds: float) -> None:
        """One call to an extender (the extender client's observer)."""
        _check(verb, EXTENDER_VERBS, "extender verb")
        _check(result, EXTENDER_RESULTS, "extender result")
        labels = {"extender": url_prefix, "verb": verb, "result": result}
        self._extender_requests.labels(**labels).inc()
        self._extender_duration.labels(**labels).observe(seconds)

    def shadow(self, policy: str, result: str) -> None:
        """A Shadow policy's part in one attempt (``state.shadows`` result names)."""
        label = SHADOW_RESULTS.get(result)
        if label is None:
            raise ValueError(
                f"metrics: shadow result must be one of {', '.join(SHADOW_RESULTS)}, got {result!r}"
            )
        self._shadow.labels(policy=policy, result=label).inc()

    def leader(self, identity: str, leading: bool) -> None:
        """Whether this replica (``identity``) is the leader now."""
        self._leader.labels(identity=identity).set(1 if leading else 0)

    def event_dropped(self) -> None:
        """The reporter dropped an event from its full queue (the oldest)."""
        self._events_dropped.inc()

    def render(self) -> bytes:
        """Everything in the Prometheus text exposition format (0.0.4)."""
        return generate_latest(self.registry)

    async def _handle(self, request: web.Request) -> web.Response:
        return web.Response(body=self.render(), headers={"Content-Type": CONTENT_TYPE_PLAIN_0_0_4})

    async def serve(self, host: str, port: int) -> Callable[[], Awaitable[None]]:
        """Serve ``GET /metrics`` on host:port; returns the coroutine function that stops it.

        Returns once the socket listens, so a port already in use fails here (OSError).
        """
        return await serve_get({"/metrics": self._handle}, host, port)


class _PluginExceptions(Collector):
    """``scheduler_plugin_exceptions_total{plugin, extension_point}``: plugin calls that
    raised (ours), read at each scrape from the engine's count."""

    def collect(self) -> Iterator[CounterMetricFamily]:
        family = CounterMetricFamily(
            "scheduler_plugin_exceptions",
            "Plugin calls that raised an exception (each one that attempt's error), by "
            "plugin and extension point.",
            labels=["plugin", "extension_point"],
        )
        for (point, plugin), count in sorted(pipeline.EXCEPTIONS.items()):
            family.add_metric([plugin, point], count)
        yield family
