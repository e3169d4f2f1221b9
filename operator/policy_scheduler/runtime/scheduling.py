"""The running scheduler: watch events in, decisions and bindings out.

:class:`SchedulerRuntime` owns a :class:`~..state.world.World` (the cache, the queue, the
policy book and the plugins' handle) and puts together the parts that work on it:

* the **watch side** (``observing.py``): the Kopf handlers and the LISTs call
  :meth:`SchedulerRuntime.handle` / :meth:`SchedulerRuntime.resync` with each object; the
  world files it, and the observers registered once hear of it (a malformed pod's
  Warning event, a pod whose policy went away, a policy's status, the volume binder).
  Synchronous and cheap; writes to the API go to background tasks.
* the **scheduling side** (:meth:`SchedulerRuntime.run`, only while leader; this
  module): one loop pops one pod at a time and runs its scheduling cycle
  (``deciding.py``, the same as ``simulate``'s): the decision on a snapshot of the
  cache, PostFilter when nothing fits, then assume, Reserve and Permit. The loop itself
  awaits nothing but the engine (which yields to the event loop between node chunks):
  every API call and HTTP peer is awaited elsewhere.

  * no node fits: ``PodScheduled=False`` and a ``FailedScheduling`` event; if the pod
    may preempt, it is nominated at once in the cache, and the scheduler's ports carry
    the preemption out in a task of its own (``preempting.py``: the nomination's PATCH,
    the victims' ``DisruptionTarget`` and DELETEs, the overridden nominations cleared);
  * the attempt itself failed (an extender's or a plugin's error), or a Reserve/Permit
    plugin rejected the pod: the same report, naming the extender or plugin, and the
    pod is retried (backoff for errors: a pod that failed on a timeout waits, behind
    newer pods, rather than trying the same hung peer back to back);
  * the pod is assumed: its **binding cycle** (``binding.py``) runs in a task of its
    own, as kube-scheduler's per-pod binding goroutine, so a hung call costs its own pod
    only: Permit's wait, PreBind, Bind, PostBind, and the failure handling that
    unreserves, forgets and re-queues. The cycle state the scheduling cycle filled
    travels with it.

  **Extenders**: a pod of a policy whose extenders are interested in it is decided in
  that policy's *lane*, beside the loop, at most ``extender_concurrency`` pods of one
  policy at a time: its extenders' calls (filter, prioritize, preempt) are awaited with
  the cluster let go (``deciding.py``), and the node it is then given is checked again
  against the cluster as it has become. A hung extender delays the pods of its own
  policy only; pods of other policies, or that no extender cares about, never wait.

  **Slow cycles**: a cycle runs on the event loop, and its synchronous plugins' calls
  hold it (a Filter taking 1 s a node holds it 1 s per node). Each cycle of the loop is
  timed; one longer than ``slow_cycle_seconds`` (1 s) holds its policy's pods back (in
  backoff, the attempt not counted) for as long as it took, while another policy's pod
  is ready to be decided (alone, it goes on at once), with a Warning
  ``SlowSchedulingCycle`` event on the pod and ``scheduler_slow_cycles_total{policy}``:
  other policies' pods are decided in between, so such a policy takes at most about
  half of the loop, and costs its own pods first.

* **Shadow policies** (``spec.mode: Shadow``, ``state/shadows.py``): in the same
  snapshot as the active decision, each sampled shadow of the pod's schedulerName decides
  the pod too (Filter and Score plugins only: never Reserve, Permit nor binding), with a
  scheduler of its own and no extenders; it never binds, assumes, preempts or reports
  on the pod, and its failures stay its own. Once the active outcome stands (a node, or
  none fits), :meth:`SchedulerRuntime._compare_shadows` counts each comparison
  (metrics, the shadow's window) and has its status written soon.

A pod is never bound twice by us: the cache marks it placed from the moment it is
assumed, the world drops pods the cache holds placed, and bindings are sent only while
leader, in the leadership term the decision was taken in. A binding that raced with
another scheduler gets 409 from the API server.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from ..deciding import Attempt, Decider, Outcome
from ..devices import Allocation, ResourceClaim
from ..engine.algorithm import Decision
from ..engine.compiler import CompiledPolicy, instrument
from ..engine.extenders import ExtenderClient
from ..engine.interface import Code, Status
from ..engine.predicates.volumes import PodVolumes
from ..engine.preemption import Preemption
from ..engine.rejections import rejecting_plugins
from ..objects import Pod
from ..state.cache import PodState, SchedulerCache
from ..state.handles import CachePorts
from ..state.policies import PolicyBook
from ..state.queueing import INITIAL_BACKOFF, MAX_BACKOFF, QueuedPod, SchedulingQueue
from ..state.shadows import ShadowAttempt, ShadowRunner
from ..state.world import World
from .binding import BindingCycles
from .claims import deallocate_claim, release_claims, reserve_claims
from .health import Health
from .kubeapi import Api
from .metrics import MetricsSink, NullMetrics
from .observing import WatchSide
from .podgroups import PodGroupStatusWriter
from .policies import PolicyStats, PolicyStatusWriter
from .preempting import PreemptionWrites
from .reporting import Reporter, now_rfc3339, pod_reference
from .volumebinding import DEFAULT_TIMEOUT, VolumeBinder, VolumeBindingError

logger = logging.getLogger(__name__)

#: The Warning event on a pod whose policy's cycle ran past the slow-cycle budget.
SLOW_CYCLE = "SlowSchedulingCycle"
#: A scheduling cycle longer than this (seconds) holds its policy's pods back.
SLOW_CYCLE_SECONDS = 1.0
#: One attempt in this many is timed per predicate, priority and plugin (kube-scheduler
#: samples its plugin metrics the same way: pluginMetricsSamplePercent = 10).
PLUGIN_METRICS_SAMPLE = 10
#: Nodes checked between two yields to the event loop while deciding: about half a
#: millisecond of filtering, so watches and bindings still flow, without paying a turn
#: of the loop every 64 nodes (the engine's default).
CHUNK_SIZE = 512
#: Pods of one policy with extenders decided at once beside the loop (its lane).
EXTENDER_CONCURRENCY = 4


class RuntimePorts(CachePorts):
    """The built-in plugins' ports in the operator: the cache's, plus the API's
    binding call (DefaultBinder), the volume binder (CheckVolumeBinding's PreBind), the
    claims' writes (DynamicResources) and preemption's writes."""

    def __init__(self, runtime: SchedulerRuntime) -> None:
        super().__init__(runtime.cache)
        self.runtime = runtime

    async def bind_volumes(
        self, state: Any, pod: Pod, volumes: PodVolumes, *, timeout: float | None = None
    ) -> Status | None:
        binder = self.runtime.volume_binder
        try:
            written = await binder.write(volumes)
            await binder.wait(pod, volumes, written, timeout=timeout)
        except VolumeBindingError as exc:  # the binding cycle tells it by its cause
            return Status(Code.UNSCHEDULABLE, (f"binding volumes: {exc}",), cause=exc)
        # Bound: the assumptions stay until the watch reports the bound objects.
        self.cache.finish_volumes(pod.uid)
        return None

    async def bind_claims(
        self, state: Any, pod: Pod, claims: Sequence[tuple[ResourceClaim, Allocation | None]]
    ) -> Status | None:
        return await reserve_claims(self.runtime.api, pod, claims)

    def release_claims(self, pod: Pod, claims: Sequence[ResourceClaim]) -> None:
        self.runtime._spawn(release_claims(self.runtime.api, pod, claims))

    async def deallocate_claim(self, pod: Pod, claim: ResourceClaim) -> Status | None:
        return await deallocate_claim(self.runtime.api, pod, claim)

    async def bind_pod(self, state: Any, pod: Pod, node: str) -> Status | None:
        return await self.runtime.binding.bind_pod(pod, node)

    def preempt(
        self,
        pod: Pod,
        node: str | None,
        victims: Sequence[Pod],
        clear: Sequence[Pod],
        *,
        marks_victims: bool,
        profile: str,
    ) -> None:
        found = Preemption(node, tuple(victims), tuple(clear), marks_victims=marks_victims)
        self.runtime.preemptions.carry_out(pod, found, profile)


class RuntimeEvents:
    """The plugins' event recorder: best effort, through the reporter, never awaited."""

    def __init__(self, runtime: SchedulerRuntime) -> None:
        self.runtime = runtime

    def event(self, pod: Pod, *, type: str, reason: str, message: str, action: str = "") -> None:
        runtime = self.runtime
        runtime._report(
            runtime.reporter.event(
                namespace=pod.namespace,
                involved=pod_reference(pod),
                event_type=type,
                reason=reason,
                message=message,
                action=action or reason,
                component=pod.scheduler_name,
            )
        )


class RuntimePluginApi:
    """The plugins' API client: one JSON request through the operator's API door."""

    def __init__(self, api: Api) -> None:
        self._api = api

    async def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float | None = None,
    ) -> tuple[int, Any]:
        call = getattr(self._api, "request", None)
        if call is None:  # an API door without it (a test's fake)
            return 0, None
        try:
            answer: tuple[int, Any] = await call(
                method, path, body=body, content_type=content_type, timeout=timeout
            )
            return answer
        except Exception as exc:  # the door answers statuses; anything else is no answer
            logger.warning("plugin API call %s %s failed: %r", method, path, exc)
            return 0, None


class SchedulerRuntime:
    """The scheduler at work: its world, its scheduling loop and its bindings."""

    def __init__(
        self,
        api: Api,
        *,
        default_scheduler_name: str = "policy-scheduler",
        bind_workers: int = 64,
        reporter: Reporter | None = None,
        metrics: MetricsSink | None = None,
        is_leader: Callable[[], bool] = lambda: True,
        leader_term: Callable[[], int] = lambda: 1,
        clock: Callable[[], float] = time.monotonic,
        namespaces: Sequence[str] = (),
        health: Health | None = None,
        extenders: ExtenderClient | None = None,
        volume_binding_timeout: float = DEFAULT_TIMEOUT,
        extender_concurrency: int = EXTENDER_CONCURRENCY,
        allow_default_scheduler: bool = True,
        slow_cycle_seconds: float = SLOW_CYCLE_SECONDS,
        pod_initial_backoff: float = INITIAL_BACKOFF,
        pod_max_backoff: float = MAX_BACKOFF,
    ) -> None:
        self.api = api
        self.slow_cycle_seconds = slow_cycle_seconds
        self.health = health or Health(clock=clock)
        #: How policies' extenders are reached; None: they are not called.
        self.extenders = extenders
        self.world = World(
            default_scheduler_name=default_scheduler_name,
            namespaces=namespaces,
            cache=SchedulerCache(clock=clock),
            queue=SchedulingQueue(
                clock=clock, initial_backoff=pod_initial_backoff, max_backoff=pod_max_backoff
            ),
            allow_default_scheduler=allow_default_scheduler,
        )
        self.reporter = reporter or Reporter(api, clock=clock)
        self.metrics: MetricsSink = metrics or NullMetrics()
        self.stats: dict[str, PolicyStats] = {}
        #: Shadow policies: their schedulers, samplers and windows (state/shadows.py).
        self.shadows = ShadowRunner(clock=clock)
        self.policy_status = PolicyStatusWriter(
            api,
            self.reporter,
            self.world,
            lambda name: self.stats.get(name, PolicyStats()),
            shadows=self.shadows,
            clock=clock,
            is_leader=lambda: self.is_leader(),
        )
        #: PodGroup status, written through the report lane (runtime/podgroups.py).
        self.pod_groups = PodGroupStatusWriter(
            self.reporter.api, self.world, is_leader=lambda: self.is_leader()
        )
        self._instrumented: dict[str, tuple[CompiledPolicy, CompiledPolicy]] = {}
        self._predicate_seconds: dict[str, float] = {}
        self._priority_seconds: dict[str, float] = {}
        self.is_leader = is_leader
        #: The leadership term (0: not leading); a decision is bound only in the term it
        #: was taken in (``LeaderElector.term``).
        self.leader_term = leader_term
        self.clock = clock
        #: One scheduling cycle at a time holds the cluster (deciding.py).
        self.decider = Decider(
            self.world,
            explain=False,  # the operator only needs the node and the message
            extenders=extenders,
            shadows=self.shadows,
            chunk_size=CHUNK_SIZE,
            clock=clock,
            instrument=self._timed,
            observe=self.metrics.plugin,
            sample_every=PLUGIN_METRICS_SAMPLE,
        )
        self.bind_workers = bind_workers
        self.extender_concurrency = extender_concurrency
        self._lanes: dict[str, asyncio.Semaphore] = {}
        #: Cycles decided beside the loop (cancelled when it stops: see run).
        self._lane_tasks: set[asyncio.Task[None]] = set()
        #: Background tasks: binding cycles, preemptions' writes.
        self._bindings: set[asyncio.Task[None]] = set()
        self._reports: set[asyncio.Task[None]] = set()
        #: Policy -> until when its pods are held back (its last cycle was slow).
        self._slow_until: dict[str, float] = {}
        self.volume_binder = VolumeBinder(
            api,
            self.world.cache,
            feed=lambda raw, kind: self.handle("MODIFIED", raw, kind),
            timeout=volume_binding_timeout,
        )
        #: Assumed pods to bound ones (binding.py).
        self.binding = BindingCycles(
            api,
            self.world,
            self.decider,
            reporter=self.reporter,
            report=self._report,
            spawn=self._spawn,
            metrics=self.metrics,
            stats=self.stats,
            clock=clock,
            is_leader=lambda: self.is_leader(),
            leader_term=lambda: self.leader_term(),
            extenders=extenders,
            bind_workers=bind_workers,
        )
        #: Preemption's nominations, evictions and clearings (preempting.py).
        self.preemptions = PreemptionWrites(
            api,
            self.world,
            reporter=self.reporter,
            report=self._report,
            spawn=self._spawn,
            metrics=self.metrics,
            is_leader=lambda: self.is_leader(),
        )
        #: Watched and listed objects in (observing.py).
        self.watch = WatchSide(
            self.world,
            reporter=self.reporter,
            report=self._report,
            pod_groups=self.pod_groups,
            volume_binder=self.volume_binder,
            policy_status=self.policy_status,
            shadows=self.shadows,
            clear_nomination=self.preemptions.clear_nomination,
        )
        self.handle = self.watch.handle
        self.resync = self.watch.resync
        self.file_listed = self.watch.file_listed
        self.forget_unlisted = self.watch.forget_unlisted
        handle = self.world.handle
        handle.ports = RuntimePorts(self)
        handle.recorder = RuntimeEvents(self)
        handle.plugin_api = RuntimePluginApi(api)

    @property
    def cache(self) -> SchedulerCache:
        return self.world.cache

    @property
    def queue(self) -> SchedulingQueue:
        return self.world.queue

    @property
    def book(self) -> PolicyBook:
        return self.world.book

    @property
    def primed(self) -> bool:
        """The first LIST went through (events of type None now mean a re-list)."""
        return self.watch.primed

    @primed.setter
    def primed(self, value: bool) -> None:
        self.watch.primed = value

    @property
    def on_relist(self) -> Callable[[], None] | None:
        """Called when a watch started over with a LIST (deletions may be missed)."""
        return self.watch.on_relist

    @on_relist.setter
    def on_relist(self, value: Callable[[], None] | None) -> None:
        self.watch.on_relist = value

    def requeue_expired(self) -> None:
        """Assumptions whose binding never showed up: decide those pods again."""
        self.binding.requeue_expired()

    # -- scheduling side -----------------------------------------------------------------

    def _timed(self, policy: CompiledPolicy) -> CompiledPolicy:
        """The policy with per-predicate/priority timing, built once per policy version."""
        known = self._instrumented.get(policy.name)
        if known is None or known[0] is not policy:
            known = (policy, instrument(policy, self._predicate_seconds, self._priority_seconds))
            self._instrumented[policy.name] = known
        return known[1]

    async def run(self) -> None:
        """Schedule until cancelled (run it only while leader)."""
        self.volume_binder.start()
        try:
            while True:
                queued = await self.queue.pop()
                policy = self.book.policy_for(queued.pod.scheduler_name)
                if policy is not None and self._in_a_lane(policy, queued.pod):
                    task = asyncio.create_task(self._lane(queued, policy))
                    self._lane_tasks.add(task)
                    task.add_done_callback(self._lane_tasks.discard)
                    continue
                if policy is not None and self._held_back(queued, policy.name):
                    continue
                started = self.clock()
                await self._attempt(queued)
                if policy is not None:
                    self._timed_cycle(queued.pod, policy.name, self.clock() - started)
        finally:
            # Cycles beside the loop stop too (their pods back in the queue), before
            # anything is let go: none of them assumes or holds a pod afterwards.
            lanes = list(self._lane_tasks)
            for task in lanes:
                task.cancel()
            await asyncio.gather(*lanes, return_exceptions=True)
            # Pods waiting for their volumes give up now (unreserved, decided again by
            # whoever schedules next), so that stopping never waits for the PV controller;
            # so do pods waiting at Permit.
            self.volume_binder.stop()
            for waiting in list(self.world.handle.waiting):
                waiting.reject("", "the scheduler stopped leading")
            await self.drain()

    def _held_back(self, queued: QueuedPod, policy: str) -> bool:
        """Whether the popped pod waits: its policy's last cycle was slow, the wait it
        earned is not over, and another policy's pod is ready to be decided meanwhile
        (it goes back to backoff until then; alone, it is decided at once)."""
        until = self._slow_until.get(policy)
        if until is None:
            return False
        if self.clock() >= until:
            del self._slow_until[policy]
            return False
        if not self.queue.others_ready(queued.pod.scheduler_name):
            return False
        self.queue.hold(queued, until)
        return True

    def _timed_cycle(self, pod: Pod, policy: str, seconds: float) -> None:
        """A cycle past ``slow_cycle_seconds`` holds its policy's pods back as long as it
        took, so that other policies' pods are decided in between: a policy whose plugins
        make its cycles slow costs its own pods first (at most half the loop)."""
        if seconds <= self.slow_cycle_seconds:
            return
        self._slow_until[policy] = self.clock() + seconds
        self.metrics.slow_cycle(policy)
        logger.warning(
            "a scheduling cycle of policy %s took %.1f s (%s); its pods wait %.1f s",
            policy,
            seconds,
            pod.key,
            seconds,
        )
        message = (
            f"the scheduling cycle of policy {policy} took {seconds:.1f}s, more than "
            f"{self.slow_cycle_seconds:g}s (a slow plugin?): its pods wait up to "
            f"{seconds:.1f}s while other policies' pods are decided"
        )
        self._report(
            self.reporter.event(
                namespace=pod.namespace,
                involved=pod_reference(pod),
                event_type="Warning",
                reason=SLOW_CYCLE,
                message=message,
                action="Scheduling",
                component=pod.scheduler_name,
            )
        )

    def _in_a_lane(self, policy: CompiledPolicy, pod: Pod) -> bool:
        """Whether an extender of the policy may be asked during this pod's cycle (then
        it awaits HTTP peers: it runs beside the loop). A gang's pod, whose cycle
        decides its other members too, whenever the policy has extenders."""
        if self.extenders is None or not policy.extenders:
            return False
        if policy.pipeline.gangs and policy.pipeline.gang_of(pod) is not None:
            return True
        return any(extender.is_interested(pod) for extender in policy.extenders)

    async def _lane(self, queued: QueuedPod, policy: CompiledPolicy) -> None:
        lane = self._lanes.get(policy.name)
        if lane is None:
            lane = self._lanes[policy.name] = asyncio.Semaphore(self.extender_concurrency)
        try:
            await lane.acquire()
        except asyncio.CancelledError:
            self.queue.error(queued)  # the loop stopped before its turn: back it goes
            raise
        try:
            await self._attempt(queued)
        finally:
            lane.release()

    async def _attempt(self, queued: QueuedPod) -> None:
        self.health.attempt_started()
        try:
            await self.schedule_one(queued)
        except asyncio.CancelledError:
            # The loop stops (leadership lost) while the pod is decided: it goes back.
            self._undo(queued)
            raise
        except Exception:
            # A bug must not stop the scheduler nor lose the pod.
            logger.exception("scheduling %s failed", queued.pod.key)
            self.metrics.attempt("error", queued.pod.scheduler_name, 0.0)
            self._undo(queued)
        finally:
            self.health.attempt_finished()

    def _undo(self, queued: QueuedPod, attempt: Attempt | None = None) -> None:
        """A cycle that broke off: unless a binding cycle has the pod, undo its
        assumption (Unreserve when the attempt got that far) and retry it."""
        uid = queued.pod.uid
        if uid in self.binding.under_way:
            return
        if attempt is not None and attempt.outcome is Outcome.ASSUMED:
            self.decider.unassume(attempt)
        elif self.cache.state_of(uid) in (PodState.ASSUMED, PodState.BINDING_FINISHED):
            self.cache.forget(uid)
        self.queue.error(queued)

    async def schedule_one(self, queued: QueuedPod) -> Decision | None:
        """One scheduling cycle, and what follows from it (module docstring)."""
        term = self.leader_term()  # before the decision, which may hold the loop long
        attempts = await self.decider.decide(queued)
        for attempt in attempts:  # one, or a gang's members
            try:
                self._act(attempt, term)
            except Exception:
                # A bug must not lose this pod, nor the gang's members acted on after it.
                logger.exception("scheduling %s failed", attempt.pod_key)
                self._undo(attempt.queued, attempt)
        self.metrics.pending(self.pending_lengths())
        return attempts[0].decision

    def pending_lengths(self) -> dict[str, int]:
        """The queue's lengths and the pods held at Permit (``scheduler_pending_pods``)."""
        lengths = dict(self.queue.lengths())
        lengths["waitingOnPermit"] = len(self.world.handle.waiting)
        return lengths

    def _act(self, attempt: Attempt, term: int = 1) -> None:
        queued, outcome = attempt.queued, attempt.outcome
        pod = queued.pod
        if outcome is Outcome.GONE:
            self.queue.done(pod.uid)
            return
        if outcome is Outcome.PARKED:
            self.queue.park(queued)  # waits for a policy to serve its name
            return
        decision, policy = attempt.decision, attempt.policy
        assert decision is not None and policy is not None
        self.metrics.phases(decision.filter_seconds, decision.score_seconds)
        if attempt.sampled:
            self.metrics.per_plugin(self._predicate_seconds, self._priority_seconds)
            self._predicate_seconds.clear()
            self._priority_seconds.clear()
        stats = self.stats.setdefault(policy.name, PolicyStats())
        stats.last_decision = now_rfc3339()
        profile = policy.scheduler_name
        for problem in decision.extender_errors:
            logger.warning("scheduling %s: %s", pod.key, problem)
        if outcome is Outcome.ERROR:
            self._failed(queued, decision.error, profile, attempt.elapsed)
        elif outcome is Outcome.UNSCHEDULABLE:
            self._compare_shadows(attempt.shadows, decision)
            self._unschedulable(attempt, policy)
        elif outcome is Outcome.STALE:
            logger.info(
                "decision for %s went stale while it was taken (%s); trying again",
                pod.key,
                attempt.stale,
            )
            self.metrics.attempt("unschedulable", profile, attempt.elapsed)
            self.queue.error(queued)
        elif outcome is Outcome.REJECTED:
            assert attempt.status is not None
            # (A gang given up: the nominations it overrode are cleared by the ports.)
            self.binding.rejected(queued, attempt.status, profile, attempt.elapsed)
        else:
            self._compare_shadows(attempt.shadows, decision)
            # Counted as scheduled once bound (the binding cycle), not as decided.
            self.queue.done(pod.uid)
            self.binding.start(attempt, term)

    def _spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(coroutine)
        self._bindings.add(task)
        task.add_done_callback(self._bindings.discard)

    def _compare_shadows(self, shadows: list[ShadowAttempt], decision: Decision) -> None:
        """The active decision stands (a node, or none fits): compare the shadows' with
        it, count, and have their status rewritten soon (never on every decision)."""
        for attempt, result in zip(shadows, self.shadows.compare(shadows, decision), strict=True):
            self.metrics.shadow(attempt.policy, result)
            if attempt.compared:
                self.policy_status.touch(attempt.policy)

    def _unschedulable(self, attempt: Attempt, policy: CompiledPolicy) -> None:
        """No node fits: say so (PostFilter's writes, if it made room, are under way:
        the ports carry them out off the loop, ``preempting.py``).

        The pod waits in the queue either way: deleting the victims moves it back (a
        pod deletion may help), and it is decided again when its turn comes.
        """
        queued, decision = attempt.queued, attempt.decision
        assert decision is not None
        pod, profile = queued.pod, policy.scheduler_name
        self.stats.setdefault(policy.name, PolicyStats()).unschedulable += 1
        self.metrics.attempt("unschedulable", profile, attempt.elapsed)
        rejected = rejecting_plugins(policy, decision, self.cache.cluster.nodes)
        self.queue.unschedulable(queued, rejected)
        self._report(self.reporter.unschedulable(pod, decision.message, profile))
        if attempt.preemption is not None:
            self.metrics.preemption_attempt()

    def _failed(self, queued: QueuedPod, error: str, profile: str, elapsed: float) -> None:
        """The attempt itself failed (an extender's or a plugin's error): say so, retry
        with backoff."""
        pod = queued.pod
        logger.warning("scheduling %s failed: %s", pod.key, error)
        self.metrics.attempt("error", profile, elapsed)
        self.queue.error(queued)
        # kube-scheduler reported any failed attempt as Unschedulable with the error.
        self._report(self.reporter.unschedulable(pod, error, profile))

    async def drain(self) -> None:
        """Wait for bindings and reports in flight (at shutdown or leadership loss)."""
        while self._bindings or self._reports:
            await asyncio.gather(*self._bindings, *self._reports, return_exceptions=True)
        await self.reporter.flush()
        await self.pod_groups.flush()

    # -- helpers -------------------------------------------------------------------------

    def _report(self, coroutine: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._reports.add(task)
        task.add_done_callback(self._reports.discard)
