"""The running scheduler: watch events in, decisions and bindings out.

:class:`SchedulerRuntime` owns a :class:`~..state.world.World` (the cache, the queue, the
policy book and the plugins' handle) and is driven from two sides:

* **Watch side**: the Kopf handlers and the LISTs (the first one, and every resync)
  call :meth:`SchedulerRuntime.handle` / :meth:`SchedulerRuntime.resync` with each
  object; the world parses it once and files it (see ``state/world.py``); the runtime
  then tells people what they should know: a malformed pod gets a Warning event, a pod
  whose policy went away a condition, a policy its status. Synchronous and cheap; writes
  to the API go to background tasks.
* **Scheduling side** (:meth:`run`, only while leader): one loop pops one pod at a time
  and runs its scheduling cycle (``deciding.py``, the same as ``simulate``'s): the
  decision on a snapshot of the cache, PostFilter when nothing fits, then assume,
  Reserve and Permit. The loop itself awaits nothing but the engine (which yields to the
  event loop between node chunks): every API call and HTTP peer is awaited elsewhere.

  * no node fits: ``PodScheduled=False`` and a ``FailedScheduling`` event, and the pod
    may preempt: it is nominated at once in the cache, and the nomination's PATCH, the
    victims' DELETEs (each preceded, under v1.30's preemption, by its ``DisruptionTarget``
    condition: :meth:`SchedulerRuntime._mark_victim`) and the other nominations'
    clearing run in a task of their own;
  * the attempt itself failed (an extender's or a plugin's error), or a Reserve/Permit
    plugin rejected the pod: the same report, naming the extender or plugin, and the
    pod is retried (backoff for errors: a pod that failed on a timeout waits, behind
    newer pods, rather than trying the same hung peer back to back);
  * the pod is assumed: its **binding cycle** runs in a task of its own, as
    kube-scheduler's per-pod binding goroutine, so a hung call costs its own pod only:
    wait on Permit if a plugin holds it (a Normal ``WaitingOnPermit`` event names the
    plugin and the deadline), then PreBind (the volumes: the claimRef / selected-node
    writes, then the wait for the PV controller, see ``volumebinding.py``), then Bind
    (the first interested extender with a ``bindVerb``, else the Bind plugins:
    DefaultBinder's ``pods/binding``), then PostBind. The cycle state the scheduling
    cycle filled travels with it.

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

  A binding refused for sure unreserves (every Reserve plugin's Unreserve, in reverse
  order), forgets the assumption and sends the pod back to the queue with backoff, and
  the room it held wakes the pods unschedulable for want of it (as an assigned pod's
  deletion does; so do a Permit refusal or timeout and an expired assumption); a
  409 (someone bound it) and a 404 (deleted) are answers, handled quietly. A binding
  with no clear answer (no reply within the deadline, a 5xx after which the write may
  have happened) is verified: the watch, or a GET of the pod, says whether it happened;
  until someone can tell, the assumption stays (the node is not offered twice) and
  expires later (the pod is then decided again).

* **Shadow policies** (``spec.mode: Shadow``, ``state/shadows.py``): in the same
  snapshot as the active decision, each sampled shadow of the pod's schedulerName decides
  the pod too (Filter and Score plugins only: never Reserve, Permit nor binding), with a
  scheduler of its own and no extenders; it never binds, assumes, preempts or reports
  on the pod, and its failures stay its own. Once the active outcome stands (a node, or
  none fits), :meth:`SchedulerRuntime._compare_shadows` counts each comparison
  (metrics, the shadow's window) and has its status written soon.

A pod is never bound twice by us: the cache marks it placed from the moment it is
assumed, the world drops pods the cache holds placed, and bindings are sent only while
leader. A binding that raced with another scheduler gets 409 from the API server.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Collection, Coroutine, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from ..deciding import Attempt, Decider, Outcome
from ..devices import Allocation, ResourceClaim
from ..engine.algorithm import Decision
from ..engine.compiler import CompiledPolicy, instrument
from ..engine.extenders import CompiledExtender, ExtenderClient, ExtenderError
from ..engine.functions import CycleState
from ..engine.interface import Code, Status
from ..engine.intree.defaultpreemption import NAME as PREEMPTION_PLUGIN
from ..engine.pipeline import run_bind, run_post_bind, run_pre_bind, run_unreserve
from ..engine.predicates.volumes import PodVolumes
from ..engine.preemption import Preemption
from ..engine.rejections import refused_by, rejecting_plugins
from ..kinds import POD, SCHEDULING_POLICY, Kind, PolicyObject
from ..objects import Pod
from ..state.cache import VOLUME_KINDS, PodState, SchedulerCache
from ..state.handles import CachePorts
from ..state.policies import PolicyBook
from ..state.queueing import INITIAL_BACKOFF, MAX_BACKOFF, QueuedPod, SchedulingQueue
from ..state.shadows import ShadowAttempt, ShadowRunner
from ..state.world import DELETED, World
from ..state.world import Outcome as WorldOutcome
from .claims import deallocate_claim, release_claims, reserve_claims
from .health import Health
from .kubeapi import Api, backoff
from .podgroups import PodGroupStatusWriter
from .policies import PolicyStats, PolicyStatusWriter
from .reporting import Reporter, build_disruption_patch, now_rfc3339, pod_reference
from .volumebinding import DEFAULT_TIMEOUT, VolumeBinder, VolumeBindingError

logger = logging.getLogger(__name__)

NO_POLICY_REASON = "NoSchedulingPolicy"
#: How often an ambiguous binding is checked by reading the pod before giving up.
VERIFY_ATTEMPTS = 5
#: The outcome of a binding nobody could confirm or deny (not an HTTP status).
AMBIGUOUS = -1
#: Binding calls a gang's member gets on its reserved node (with backoff: about 6 s in
#: all) before its binding fails as any other pod's.
GANG_BIND_TRIES = 6
#: PodScheduled reason of a failed binding (upstream's v1.PodReasonSchedulerError).
SCHEDULER_ERROR_REASON = "SchedulerError"
#: The Normal event of a pod a Permit plugin holds.
WAITING_ON_PERMIT = "WaitingOnPermit"
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
#: CycleState keys the binding cycle reads: DefaultBinder's HTTP answer, the volume
#: binder's error.
BIND_RESULT_KEY = "policy-scheduler/bind-result"
VOLUME_ERROR_KEY = "policy-scheduler/volume-error"


def nomination_patch(node: str | None) -> dict[str, Any]:
    """The pods/status patch setting (or, with None, removing) ``nominatedNodeName``."""
    return {"status": {"nominatedNodeName": node}}


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


class RuntimePorts(CachePorts):
    """The built-in plugins' ports in the operator: the cache's, plus the API's
    binding call (DefaultBinder) and the volume binder (CheckVolumeBinding's PreBind)."""

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
        except VolumeBindingError as exc:
            state.write(VOLUME_ERROR_KEY, exc)
            return Status.unschedulable(f"binding volumes: {exc}")
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
        runtime = self.runtime
        status = await runtime._bind_call(pod, node)
        if status == 0 or status >= 500:
            # No answer, or a server error: the binding may have been written anyway.
            status = await runtime._verify_binding(pod, node, status)
        state.write(BIND_RESULT_KEY, status)
        if 200 <= status < 300:
            return None
        return Status(Code.ERROR, (f"HTTP {status}" if status > 0 else "no answer",))


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
        #: Binding calls in flight at once; the scheduling loop never waits for one.
        self._bind_calls = asyncio.Semaphore(bind_workers)
        self.extender_concurrency = extender_concurrency
        self._lanes: dict[str, asyncio.Semaphore] = {}
        #: Cycles decided beside the loop (cancelled when it stops: see run).
        self._lane_tasks: set[asyncio.Task[None]] = set()
        #: Background tasks: binding cycles, preemptions' writes.
        self._bindings: set[asyncio.Task[None]] = set()
        self._reports: set[asyncio.Task[None]] = set()
        #: Pods whose binding cycle is under way: their assumption belongs to it.
        self._binding_uids: set[str] = set()
        #: Pods whose binding's outcome nobody could tell (AMBIGUOUS): the cycle state
        #: their Reserve plugins wrote, for Unreserve if the assumption expires.
        self._unconfirmed: dict[str, tuple[CycleState, CompiledPolicy, str]] = {}
        #: Pods whose preemption's writes are under way (one at a time per pod).
        self._preempting: set[str] = set()
        #: Pods whose nominatedNodeName is being cleared (see _clear_nomination).
        self._clearing: set[str] = set()
        #: The first LIST went through (events of type None now mean a re-list).
        self.primed = False
        #: Policy -> until when its pods are held back (its last cycle was slow).
        self._slow_until: dict[str, float] = {}
        #: Called when a watch started over with a LIST (deletions may have been missed).
        self.on_relist: Callable[[], None] | None = None
        self.volume_binder = VolumeBinder(
            api,
            self.world.cache,
            feed=lambda raw, kind: self.handle("MODIFIED", raw, kind),
            timeout=volume_binding_timeout,
        )
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

    # -- watch side ------------------------------------------------------------------------

    def handle(
        self, event_type: str | None, raw: Mapping[str, Any], kind: Kind | None = None
    ) -> WorldOutcome:
        """One object from a watch event or a LIST: file it, then tell whom it concerns.

        Kopf delivers the items of its own LISTs as events of type None; after the first
        LIST of ours, such an event means a watch started over, and may have missed
        deletions: ``on_relist`` is told (the operator then reconciles).
        """
        outcome = self.world.observe(event_type, raw, kind)
        self._tell(outcome, event_type, raw)
        if event_type is None and self.primed and self.on_relist is not None:
            self.on_relist()
        return outcome

    def resync(self, kind: Kind, listed: Sequence[Mapping[str, Any]], since: float) -> int:
        """A LIST of ``kind`` begun at ``since``: file its objects (unless a watch event
        about one came since), then delete what it shows is gone. Returns how many."""
        return self.forget_unlisted(kind, self.file_listed(kind, listed, since), since)

    def file_listed(
        self, kind: Kind, listed: Sequence[Mapping[str, Any]], since: float
    ) -> set[str]:
        """File objects of a LIST of ``kind`` begun at ``since`` (all of it, or a page),
        unless a watch event about one came since; returns their identities."""
        for raw in listed:
            self._tell(self.world.observe(None, raw, kind, listed_since=since), None, raw)
        return {kind.identity(raw) for raw in listed}

    def forget_unlisted(self, kind: Kind, present: Collection[str], since: float) -> int:
        """Delete what a LIST of ``kind`` begun at ``since``, whose objects had the
        identities ``present``, shows is gone. Returns how many."""
        gone = self.world.reconcile(kind, present, since)
        for outcome in gone:
            self._tell(outcome, DELETED, None)
        return len(gone)

    def _tell(
        self, outcome: WorldOutcome, event_type: str | None, raw: Mapping[str, Any] | None
    ) -> None:
        """Report what an observed object changed to whom it concerns."""
        self.pod_groups.observe(outcome, event_type)
        if outcome.kind in VOLUME_KINDS and outcome.error is None:
            # The volume binder waits on PVs and PVCs, and writes from their last copy.
            if event_type == DELETED:
                self.volume_binder.deleted(outcome.kind, outcome.key)
            elif raw is not None:
                self.volume_binder.observe(event_type, raw, outcome.kind)
        if outcome.error is not None and raw is not None:
            if outcome.kind is POD:
                # A pod we cannot read is reported, never dropped silently nor fatal.
                self._report_malformed_pod(raw, outcome.error)
            else:
                logger.warning("ignoring an object the scheduler cannot read: %s", outcome.error)
        for pod in outcome.parked:
            self._report(self._no_policy(pod))
        if outcome.stale_nomination is not None:
            self._clear_nomination(outcome.stale_nomination)
        if outcome.kind is SCHEDULING_POLICY:
            if isinstance(outcome.obj, PolicyObject):
                self.policy_status.observe(outcome.obj)
            if outcome.verdicts:
                self._report(self.policy_status.write(outcome.verdicts))
            if event_type == DELETED:
                self.shadows.forget(outcome.key)
        elif outcome.kind is POD and event_type == DELETED and outcome.key:
            self.reporter.forget_pod(outcome.key)
            self.volume_binder.pod_deleted(outcome.key)
            # A pod a Permit plugin holds is let go (kube-scheduler rejects it).
            self.world.handle.waiting.reject(outcome.key, "", "the pod was deleted")

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
        if uid in self._binding_uids:
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
            self._rejected(queued, attempt.status, profile, attempt.elapsed)
            if attempt.preemption is not None:  # a gang given up: nominations it overrode
                self._preempt(pod, attempt.preemption, policy)
        else:
            self._compare_shadows(attempt.shadows, decision)
            # Counted as scheduled once bound (the binding cycle), not as decided.
            self.queue.done(pod.uid)
            self._binding_uids.add(pod.uid)
            self._spawn(self._binding_cycle(attempt, term))

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
        """No node fits: say so; if PostFilter made room, carry it out off the loop.

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
        result = attempt.preemption
        if result is None:
            return
        self.metrics.preemption_attempt()
        self._preempt(pod, result, policy)

    def _preempt(self, pod: Pod, result: Preemption, policy: CompiledPolicy) -> None:
        """PostFilter's writes (module docstring of deciding.py, step 4), off the loop."""
        if result.node is None and not result.clear:
            return
        if pod.uid in self._preempting:
            return  # the previous attempt's writes are still on their way
        self._preempting.add(pod.uid)
        self._spawn(self._carry_out(pod, result, policy))

    async def _carry_out(self, pod: Pod, result: Preemption, policy: CompiledPolicy) -> None:
        """A preemption's writes, in a task of their own: the nomination (if it fails,
        nothing else is done and the nomination is taken back), each victim's deletion
        (only if its uid is still the one chosen) with a Normal ``Preempted`` event, and
        the nominations it overrides cleared."""
        try:
            if result.node is not None and not await self._evict(pod, result, policy):
                return
            for other in result.clear:
                self._clear_nomination(other)
        finally:
            self._preempting.discard(pod.uid)

    async def _evict(self, pod: Pod, result: Preemption, policy: CompiledPolicy) -> bool:
        """Nominate ``pod`` and delete the victims; False when upstream would stop there."""
        node = result.node
        assert node is not None
        if self.cache.was_deleted(pod.uid) or self.cache.is_placed(pod.uid):
            return False  # gone, or placed by someone, since it was decided
        status = await self._api_call(
            self.api.patch_pod_status(pod.namespace, pod.name, nomination_patch(node)),
            f"nominating {pod.key} to {node}",
        )
        if not 200 <= status < 300:
            logger.warning("could not nominate %s to %s: HTTP %s", pod.key, node, status)
            if self.cache.nominated_node(pod.uid) == node:
                self.cache.unnominate(pod.uid)
            return False
        for victim in result.victims:
            waiting = self.world.handle.waiting.get(victim.uid)
            if result.marks_victims and waiting is not None and not waiting.done:
                # v1.30's prepareCandidate: a victim held at Permit (assumed, not bound)
                # is rejected, back to the queue, not deleted (v1.17 deleted it too).
                waiting.reject(PREEMPTION_PLUGIN, "preempted")
                logger.info("preempted %s (waiting on permit) for %s", victim.key, pod.key)
                self._report(self.reporter.preempted(victim, pod, node, policy.scheduler_name))
                continue
            if result.marks_victims and not await self._mark_victim(victim, pod):
                return False
            status = await self._api_call(
                self.api.delete_pod(victim.namespace, victim.name, victim.uid),
                f"deleting {victim.key}, preempted by {pod.key}",
            )
            if status in (404, 409):
                continue  # gone already, or a new pod of the same name: not our victim
            if not 200 <= status < 300:
                logger.warning("could not preempt %s: HTTP %s", victim.key, status)
                return False
            logger.info("preempted %s on %s for %s", victim.key, node, pod.key)
            self._report(self.reporter.preempted(victim, pod, node, policy.scheduler_name))
        self.metrics.preemption_victims(len(result.victims))
        return True

    async def _mark_victim(self, victim: Pod, pod: Pod) -> bool:
        """v1.26+'s preemption: ``DisruptionTarget=True`` (``PreemptionByScheduler``) on
        the victim's status before its deletion, so that a Job's ``podFailurePolicy``
        can tell the preemption from a failure and ``pod`` waits for this victim rather
        than preempting again (``defaultpreemption.eligible``). False when the
        preemption stops here, as upstream's does when the patch fails; a victim gone
        (404), or replaced by a pod of the same name (the uid precondition: 409 or
        422), is left to its delete, which says the same with its own precondition."""
        if victim.disrupted_by_scheduler:
            return True  # marked and terminating already: the condition says so
        patch = build_disruption_patch(victim, pod.scheduler_name, now=now_rfc3339())
        status = await self._api_call(
            self.api.patch_pod_status(victim.namespace, victim.name, patch),
            f"marking {victim.key} preempted by {pod.key}",
        )
        if 200 <= status < 300 or status in (404, 409, 422):
            return True
        logger.warning("could not mark %s as preempted: HTTP %s", victim.key, status)
        return False

    @staticmethod
    async def _api_call(call: Coroutine[Any, Any, int], what: str) -> int:
        """An API write's status; 0 when it raised (no answer, timeout)."""
        try:
            return await call
        except Exception as exc:
            logger.warning("%s failed: %r", what, exc)
            return 0

    def _failed(self, queued: QueuedPod, error: str, profile: str, elapsed: float) -> None:
        """The attempt itself failed (an extender's or a plugin's error): say so, retry
        with backoff."""
        pod = queued.pod
        logger.warning("scheduling %s failed: %s", pod.key, error)
        self.metrics.attempt("error", profile, elapsed)
        self.queue.error(queued)
        # kube-scheduler reported any failed attempt as Unschedulable with the error.
        self._report(self.reporter.unschedulable(pod, error, profile))

    def _rejected(self, queued: QueuedPod, status: Status, profile: str, elapsed: float) -> None:
        """A Reserve or Permit plugin (or a wait at Permit) refused the pod: it was
        unreserved; FailedScheduling with the plugin's message, and the pod waits."""
        pod = queued.pod
        message = _plugin_message(status)
        if status.is_rejected:
            logger.info("%s was not scheduled: %s", pod.key, message)
            self.metrics.attempt("unschedulable", profile, elapsed)
            self.queue.unschedulable(queued, refused_by(status.plugin))
        else:
            logger.warning("scheduling %s failed: %s", pod.key, message)
            self.metrics.attempt("error", profile, elapsed)
            self.queue.error(queued)
        self._report(self.reporter.unschedulable(pod, message, profile))

    # -- the binding cycle ---------------------------------------------------------------

    async def _binding_cycle(self, attempt: Attempt, term: int = 1) -> None:
        """Wait on Permit, PreBind, Bind, PostBind: asynchronously, one task per pod;
        only while the leadership term the decision was taken in lasts."""
        queued, policy, node, state = attempt.queued, attempt.policy, attempt.node, attempt.state
        assert policy is not None and node is not None and state is not None
        try:
            await self._bind_assumed(attempt, queued, policy, node, state, term)
        except Exception:
            # A bug must not lose the pod: undo and decide it again.
            logger.exception("binding %s to %s failed", queued.pod.key, node)
            forgot = self.decider.unreserve(queued.pod.uid, state, policy, node)
            self.queue.error(queued)
            self._room_freed(queued.pod, forgot)
        finally:
            self._binding_uids.discard(queued.pod.uid)

    async def _bind_assumed(
        self,
        attempt: Attempt,
        queued: QueuedPod,
        policy: CompiledPolicy,
        node: str,
        state: CycleState,
        term: int = 1,
    ) -> None:
        pod, profile = queued.pod, policy.scheduler_name
        if attempt.waiting is not None:
            allowed = await self._wait_on_permit(attempt)
            if not allowed.is_success:
                forgot = self.decider.unreserve(pod.uid, state, policy, node)
                if not self.cache.was_deleted(pod.uid):
                    self._rejected(queued, allowed, profile, 0.0)
                self._room_freed(pod, forgot)
                return
            if node not in self.cache.cluster.nodes:  # deleted while the pod waited
                message = f'node "{node}" was deleted while the pod waited at Permit'
                self._bind_failed(queued, state, policy, node, message)
                return
        if not self._leading(term):
            # Lost leadership after deciding (even if led again since: the decision is
            # the old term's, from a cache another leader may have changed meanwhile):
            # decided again by whoever leads now.
            self._stale_term(queued, state, policy, node)
            return
        status = await run_pre_bind(policy.pipeline, state, pod, node)
        if status is not None:
            error = state.read(VOLUME_ERROR_KEY) if VOLUME_ERROR_KEY in state else None
            if isinstance(error, VolumeBindingError):
                self._volume_binding_failed(queued, state, policy, node, error)
            else:
                self._bind_failed(queued, state, policy, node, _plugin_message(status))
            return
        if not self._leading(term):  # lost while the volumes were being bound
            self._stale_term(queued, state, policy, node)
            return
        started = self.clock()
        code, problem = await self._bind(pod, node, policy, state)
        tries = 1
        while (
            attempt.gang is not None
            and tries < GANG_BIND_TRIES
            and self._bind_again(pod, node, code)
        ):
            # A gang's member is not given up half-way on a failure that may pass (a
            # webhook, a quota, a server error): its group bound (or binds) beside it,
            # so it is bound again onto its reserved place, a few times with backoff,
            # unless the pod or the node is gone. Past that, its binding failed as any
            # other pod's (unreserved, FailedScheduling, decided again).
            logger.warning(
                "binding %s (gang %s) to %s failed (%s); binding it there again",
                pod.key,
                attempt.gang.key,
                node,
                problem or f"HTTP {code}",
            )
            await asyncio.sleep(backoff(tries))
            tries += 1
            state.delete(BIND_RESULT_KEY)
            code, problem = await self._bind(pod, node, policy, state)
        result = "success" if 200 <= code < 300 else "conflict" if code == 409 else "error"
        self.metrics.binding(result, self.clock() - started)
        if code == AMBIGUOUS:
            # Nobody could tell: the assumption stays until the watch says where the
            # pod is, or expires and the pod is tried again (``requeue_expired``).
            self.cache.finish_binding(pod.uid)
            self._unconfirmed[pod.uid] = (state, policy, node)
            return
        if 200 <= code < 300:
            self.cache.finish_binding(pod.uid)
            self.stats.setdefault(policy.name, PolicyStats()).scheduled += 1
            self.metrics.attempt("scheduled", profile, attempt.elapsed)
            self.metrics.e2e("scheduled", profile, self.clock() - queued.enqueued)
            self.metrics.attempts_until_scheduled(queued.attempts)
            self._binding_uids.discard(pod.uid)
            await self.reporter.scheduled(pod, node, profile)
            if policy.pipeline.post_bind:
                await run_post_bind(policy.pipeline, state, pod, node)
            return
        forgot = self.decider.unreserve(pod.uid, state, policy, node)
        self.metrics.attempt("error", profile, attempt.elapsed)  # as upstream: a failed binding
        if code == 404 or self.cache.was_deleted(pod.uid):
            self._room_freed(pod, forgot)
            return  # the pod is gone
        if code == 409:
            # Already bound (by another scheduler, or by us before a restart): the
            # watch will show where. Requeued with backoff in case it is not.
            logger.info("binding %s to %s: conflict, the pod is bound elsewhere", pod.key, node)
            self.queue.error(queued)
            self._room_freed(pod, forgot)
            return
        self.queue.error(queued)
        self._room_freed(pod, forgot)
        if not problem:
            problem = f"HTTP {code}" if code else "HTTP connection error"
        self._report_bind_failure(pod, f"Binding rejected: {problem}", profile)

    def _stale_term(
        self, queued: QueuedPod, state: CycleState, policy: CompiledPolicy, node: str
    ) -> None:
        """A decision outlived its leadership term: undone; decided again by this replica
        if it leads again now (else by the new leader, from its own list)."""
        forgot = self.decider.unreserve(queued.pod.uid, state, policy, node)
        if self.is_leader():
            self.queue.error(queued)
            self._room_freed(queued.pod, forgot)

    def _leading(self, term: int) -> bool:
        """Still leading, in the term a decision was taken in."""
        return self.is_leader() and self.leader_term() == term

    def _bind_again(self, pod: Pod, node: str, code: int) -> bool:
        """A failed binding worth sending again to the same node (a gang's member)."""
        if 200 <= code < 300 or code in (404, 409, AMBIGUOUS):
            return False
        return (
            self.is_leader()
            and not self.cache.was_deleted(pod.uid)
            and node in self.cache.cluster.nodes
        )

    async def _bind(
        self, pod: Pod, node: str, policy: CompiledPolicy, state: CycleState
    ) -> tuple[int, str]:
        """The Bind point: the first interested binding extender, else the Bind plugins.
        As an HTTP status (201 bound, 409 bound elsewhere, 404 gone, AMBIGUOUS) and what
        went wrong."""
        binder = self._binder(pod, policy)
        if binder is not None:
            async with self._bind_calls:
                return await self._extender_bind_call(binder, pod, node)
        async with self._bind_calls:
            status = await run_bind(policy.pipeline.bind, state, pod, node)
        if BIND_RESULT_KEY in state:  # DefaultBinder spoke: its HTTP answer
            code: int = state.read(BIND_RESULT_KEY)
            return code, ""
        if status.is_success:
            return 201, ""
        if status.is_skip:
            return 0, "no Bind plugin bound the pod"
        return 0, _plugin_message(status)

    async def _wait_on_permit(self, attempt: Attempt) -> Status:
        """Hold the pod until its Permit plugins allow it (or one rejects, or time out);
        a Normal ``WaitingOnPermit`` event names the plugins and the deadline."""
        waiting = attempt.waiting
        assert waiting is not None
        if waiting.done:  # allowed (or refused) already: a gang planned whole, say
            return waiting.outcome.result()
        pod = waiting.pod
        deadline = datetime.now(UTC) + timedelta(seconds=max(waiting.timeouts.values()))
        plugins = ", ".join(sorted(waiting.timeouts))
        self.world.handle.recorder.event(
            pod,
            type="Normal",
            reason=WAITING_ON_PERMIT,
            message=(
                f"waiting on permit of {plugins} until "
                f"{deadline.strftime('%Y-%m-%dT%H:%M:%SZ')}, assumed on node {waiting.node_name}"
            ),
            action="Permit",
        )
        started = self.clock()
        status = await waiting.outcome
        self.metrics.permit_wait(
            "allowed" if status.is_success else "rejected", self.clock() - started
        )
        return status

    def _bind_failed(
        self,
        queued: QueuedPod,
        state: CycleState,
        policy: CompiledPolicy,
        node: str,
        message: str,
    ) -> None:
        pod = queued.pod
        forgot = self.decider.unreserve(pod.uid, state, policy, node)
        self.metrics.attempt("error", policy.scheduler_name, 0.0)
        if self.cache.was_deleted(pod.uid):
            self._room_freed(pod, forgot)
            return
        logger.warning("binding %s to %s failed: %s", pod.key, node, message)
        self.queue.error(queued)
        self._room_freed(pod, forgot)
        self._report_bind_failure(pod, message, policy.scheduler_name)

    def _room_freed(self, pod: Pod, forgotten: bool) -> None:
        """The binding cycle forgot ``pod``'s assumption: the pods that were
        unschedulable for want of its room are tried again (the queue's
        :meth:`~..state.queueing.SchedulingQueue.forgotten`), after the pod itself went
        back, as kube-scheduler's handleBindingCycleError does."""
        if forgotten:
            self.queue.forgotten({pod.uid})

    def _report_bind_failure(self, pod: Pod, message: str, profile: str) -> None:
        # As upstream's recordSchedulingFailure: the condition says it too.
        self._report(
            self.reporter.unschedulable(
                pod, message, profile, reason=SCHEDULER_ERROR_REASON, action="Binding"
            )
        )

    def _volume_binding_failed(
        self,
        queued: QueuedPod,
        state: CycleState,
        policy: CompiledPolicy,
        node: str,
        error: VolumeBindingError,
    ) -> None:
        """Undo everything the decision assumed; tell why, and retry with backoff."""
        pod = queued.pod
        forgot = self.decider.unreserve(pod.uid, state, policy, node)
        self.metrics.attempt("error", policy.scheduler_name, 0.0)
        if error.quiet or self.cache.was_deleted(pod.uid):
            logger.info("binding volumes of %s stopped: %s", pod.key, error)
            self._room_freed(pod, forgot)
            return
        logger.warning("binding volumes of %s failed: %s", pod.key, error)
        self.queue.error(queued)
        self._room_freed(pod, forgot)
        self._report(
            self.reporter.volume_binding_failed(
                pod, f"binding volumes: {error}", policy.scheduler_name
            )
        )

    async def _verify_binding(self, pod: Pod, node: str, status: int) -> int:
        """Where did an ambiguous binding leave the pod? As a status: 201 bound to
        ``node``, 409 bound elsewhere, 404 gone, ``status`` still unbound (it failed), or
        :data:`AMBIGUOUS` when neither the watch nor the API would tell.

        The watch is trusted first (it may already have shown the pod bound); else the
        pod is read from the API, a few times with backoff.
        """
        for attempt in range(1, VERIFY_ATTEMPTS + 1):
            if self.cache.state_of(pod.uid) is PodState.ADDED:
                return 201 if self.cache.node_of(pod.uid) == node else 409
            if self.cache.was_deleted(pod.uid):
                return 404
            code, obj = await self.api.get_pod(pod.namespace, pod.name)
            if code == 404:
                return 404
            if code == 200 and obj is not None:
                meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
                if meta.get("uid") not in (None, pod.uid):
                    return 404  # another pod of the same name: ours is gone
                bound_to = spec.get("nodeName")
                if not bound_to:
                    return status  # the binding did not happen
                return 201 if bound_to == node else 409
            await asyncio.sleep(backoff(attempt))
        logger.warning(
            "binding %s to %s: the answer was %s and the pod could not be read since; "
            "keeping it assumed until the watch tells",
            pod.key,
            node,
            status or "no answer",
        )
        return AMBIGUOUS

    def requeue_expired(self) -> None:
        """Assumptions whose binding never showed up in a watch: decide those pods again.

        If one was bound after all, the watch (or the next resync) says so and the API
        answers 409 to a second binding; if it was deleted, the queue forgets it.
        """
        expired = self.cache.expire()
        for pod in expired:
            held = self._unconfirmed.pop(pod.uid, None)
            if held is not None:  # its Reserve plugins let go of it too
                state, policy, node = held
                run_unreserve(policy.pipeline, state, pod, node)
            if not self.cache.was_deleted(pod.uid):
                served = self.book.serves(pod.scheduler_name)
                self.queue.add(replace(pod, node_name=""), served=served)
        if expired:  # the room they held is free
            self.queue.forgotten({pod.uid for pod in expired})
        # The others the watch confirmed (or that were deleted): nothing to undo.
        for uid in [u for u in self._unconfirmed if not self._awaits_watch(u)]:
            del self._unconfirmed[uid]

    def _awaits_watch(self, uid: str) -> bool:
        return self.cache.state_of(uid) is PodState.BINDING_FINISHED

    async def _bind_call(self, pod: Pod, node: str) -> int:
        """The binding itself: its HTTP status, 0 when it could not be sent."""
        try:
            return await self.api.bind(pod.namespace, pod.name, pod.uid, node)
        except Exception as exc:  # network trouble: retry with backoff
            logger.warning("binding %s to %s failed: %s", pod.key, node, exc)
            return 0

    def _binder(self, pod: Pod, policy: CompiledPolicy) -> CompiledExtender | None:
        """The extender that binds ``pod`` instead of pods/binding, if any.

        As upstream's binder choice: the first extender with a bindVerb, if it is
        interested in the pod (managedResources); otherwise the API binds.
        """
        if self.extenders is None:
            return None
        binder = next((e for e in policy.extenders if e.bind_verb), None)
        return binder if binder is not None and binder.is_interested(pod) else None

    async def _extender_bind_call(
        self, binder: CompiledExtender, pod: Pod, node: str
    ) -> tuple[int, str]:
        """Bind through the extender: (200, "") when it did, else (0, why)."""
        assert self.extenders is not None
        try:
            await self.extenders.bind(binder, pod, node)
        except ExtenderError as exc:
            logger.warning("binding %s to %s failed: %s", pod.key, node, exc)
            return 0, str(exc)
        return 200, ""

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

    def _clear_nomination(self, pod: Pod) -> None:
        """Write ``nominatedNodeName: null`` on a pod whose nomination is over (the world
        says when), through the pod-critical API lane; once at a time per pod."""
        if not self.is_leader() or pod.uid in self._clearing:
            return
        self._clearing.add(pod.uid)

        async def clear() -> None:
            try:
                status = await self._api_call(
                    self.api.patch_pod_status(pod.namespace, pod.name, nomination_patch(None)),
                    f"clearing the nominated node of {pod.key}",
                )
                if not 200 <= status < 300 and status != 404:
                    logger.warning(
                        "could not clear the nominated node of %s: HTTP %s", pod.key, status
                    )
            finally:
                self._clearing.discard(pod.uid)

        self._report(clear())

    async def _no_policy(self, pod: Pod) -> None:
        message = (
            f'no accepted SchedulingPolicy serves schedulerName "{pod.scheduler_name}"; '
            "the pod waits until one does"
        )
        await self.reporter.pod_condition(pod, message, reason=NO_POLICY_REASON)

    def _report_malformed_pod(self, raw: Mapping[str, Any], message: str) -> None:
        logger.warning("cannot schedule a malformed pod: %s", message)
        meta = raw.get("metadata") or {}
        spec = raw.get("spec") or {}
        if not isinstance(meta, Mapping) or not isinstance(spec, Mapping):
            return
        scheduler_name = spec.get("schedulerName") or "default-scheduler"
        if spec.get("nodeName") or not self.book.serves(str(scheduler_name)):
            return
        namespace, name = meta.get("namespace"), meta.get("name")
        if not namespace or not name:
            return
        self._report(
            self.reporter.event(
                namespace=str(namespace),
                involved={
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "namespace": namespace,
                    "name": name,
                    "uid": meta.get("uid", ""),
                },
                event_type="Warning",
                reason="FailedScheduling",
                message=f"the scheduler cannot read this pod: {message}",
                action="Scheduling",
                component=str(scheduler_name),
            )
        )


def _plugin_message(status: Status) -> str:
    """A plugin's refusal as people read it: the plugin, then its reasons."""
    text = status.message or ("rejected" if status.is_rejected else "failed")
    return f"{status.plugin}: {text}" if status.plugin and not text.startswith("running ") else text
