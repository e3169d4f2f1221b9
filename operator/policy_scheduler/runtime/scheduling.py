"""The running scheduler: watch events in, decisions and bindings out.

:class:`SchedulerRuntime` owns a :class:`~..state.world.World` (the cache, the queue and
the policy book) and is driven from two sides:

* **Watch side**: the Kopf handlers and the LISTs (the first one, and every resync)
  call :meth:`SchedulerRuntime.handle` / :meth:`SchedulerRuntime.resync` with each
  object; the world parses it once and files it (see ``state/world.py``); the runtime
  then tells people what they should know: a malformed pod gets a Warning event, a pod
  whose policy went away a condition, a policy its status. Synchronous and cheap; writes
  to the API go to background tasks.
* **Scheduling side** (:meth:`run`, only while leader): one loop pops one pod at a time
  and decides it with the engine on a snapshot of the cache (decisions must see earlier
  ones). Once the snapshot is released, the writes that arrived meanwhile are applied
  and the decision is re-checked against them: a node deleted or changed while the pod
  was being decided is never bound to blindly (the pod is tried again). Then:

  * no node fits: ``PodScheduled=False`` and a ``FailedScheduling`` event, and the pod
    may preempt (:meth:`SchedulerRuntime._preempt`): it is nominated to a node whose
    lower-priority pods are deleted, and placed there when its turn comes again;
  * the attempt itself failed (an extender's error): the same report, naming the
    extender, and backoff;
  * a node fits: the pod (and the volumes it binds) is *assumed* in the cache at once
    (``_reserve``) and its binding cycle runs in the background, at most
    ``bind_workers`` at a time: first the volumes (``_prebind``, the legacy volume
    binder: the claimRef / selected-node writes, then the wait for the PV controller,
    which lends its bind slot back meanwhile, see ``volumebinding.py``), then the
    binding itself, through ``pods/binding`` or the first interested extender with a
    ``bindVerb``.

  A binding refused for sure forgets the assumption and sends the pod back to the
  queue with backoff; a 409 (someone bound it) and a 404 (deleted) are answers, handled
  quietly. A binding with no clear answer (no reply within the deadline, a 5xx after
  which the write may have happened) is verified: the watch, or a GET of the pod, says
  whether it happened; until someone can tell, the assumption stays (the node is not
  offered twice) and expires later (the pod is then decided again).

* **Shadow policies** (``spec.mode: Shadow``, ``state/shadows.py``): in the same
  snapshot as the active decision, each sampled shadow of the pod's schedulerName decides
  the pod too (not when the active decision failed: there is nothing to compare it with),
  with a scheduler of its own and no extenders; it never binds, assumes,
  preempts or reports on the pod, and its failures stay its own. Once the active
  outcome stands (a node, or none fits), :meth:`SchedulerRuntime._compare_shadows` counts
  each comparison (metrics, the shadow's window) and has its status written soon.

Extenders' calls are bounded by each extender's ``httpTimeout``, API calls by
``--api-timeout``, so a hung peer delays only the pods it is asked about and never
stops the loop.

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
from typing import Any, Protocol

from ..engine.algorithm import Decision, Scheduler, check_node
from ..engine.compiler import CompiledPolicy, instrument
from ..engine.extenders import CompiledExtender, ExtenderClient, ExtenderError
from ..engine.predicates.volumes import PodVolumes
from ..engine.preemption import Preemption, PreemptionHook, extender_hook
from ..kinds import POD, SCHEDULING_POLICY, Kind, PolicyObject
from ..objects import Pod
from ..state.cache import VOLUME_KINDS, PodState, SchedulerCache
from ..state.policies import PolicyBook
from ..state.queueing import QueuedPod, SchedulingQueue
from ..state.shadows import ShadowAttempt, ShadowRunner
from ..state.world import DELETED, Outcome, World
from .health import Health
from .kubeapi import Api, backoff
from .policies import PolicyStats, PolicyStatusWriter
from .reporting import Reporter, now_rfc3339
from .volumebinding import DEFAULT_TIMEOUT, VolumeBinder, VolumeBindingError

logger = logging.getLogger(__name__)

NO_POLICY_REASON = "NoSchedulingPolicy"
#: How often an ambiguous binding is checked by reading the pod before giving up.
VERIFY_ATTEMPTS = 5
#: The outcome of a binding nobody could confirm or deny (not an HTTP status).
AMBIGUOUS = -1
#: PodScheduled reason of a failed binding (upstream's v1.PodReasonSchedulerError).
SCHEDULER_ERROR_REASON = "SchedulerError"
#: One attempt in this many is timed per predicate and priority (kube-scheduler samples
#: its plugin metrics the same way: pluginMetricsSamplePercent = 10).
PLUGIN_METRICS_SAMPLE = 10
#: Nodes checked between two yields to the event loop while deciding: about half a
#: millisecond of filtering, so watches and bindings still flow, without paying a turn
#: of the loop every 64 nodes (the engine's default).
CHUNK_SIZE = 512


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


class NullMetrics(MetricsSink):
    """Metrics off: every report is dropped."""


class _Slot:
    """A binding's bind slot: held while it talks to the API, lent back while it waits."""

    __slots__ = ("_slots", "held")

    def __init__(self, slots: asyncio.Semaphore) -> None:
        self._slots = slots
        self.held = True  # taken by schedule_one before the binding started

    def release(self) -> None:
        if self.held:
            self.held = False
            self._slots.release()

    async def acquire(self) -> None:
        await self._slots.acquire()
        self.held = True


class SchedulerRuntime:
    """The scheduler at work: its world, its scheduling loop and its bindings."""

    def __init__(
        self,
        api: Api,
        *,
        default_scheduler_name: str = "policy-scheduler",
        bind_workers: int = 16,
        reporter: Reporter | None = None,
        metrics: MetricsSink | None = None,
        is_leader: Callable[[], bool] = lambda: True,
        clock: Callable[[], float] = time.monotonic,
        namespaces: Sequence[str] = (),
        health: Health | None = None,
        extenders: ExtenderClient | None = None,
        volume_binding_timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self.api = api
        self.health = health or Health(clock=clock)
        #: How policies' extenders are reached; None: they are not called.
        self.extenders = extenders
        self.world = World(
            default_scheduler_name=default_scheduler_name,
            namespaces=namespaces,
            cache=SchedulerCache(clock=clock),
            queue=SchedulingQueue(clock=clock),
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
        self._instrumented: dict[str, tuple[CompiledPolicy, CompiledPolicy]] = {}
        self._attempts = 0  # scheduling attempts so far (which ones are timed per plugin)
        self._predicate_seconds: dict[str, float] = {}
        self._priority_seconds: dict[str, float] = {}
        self.is_leader = is_leader
        self.clock = clock
        self._schedulers: dict[str, Scheduler] = {}
        self.bind_workers = bind_workers
        self._binding_slots = asyncio.Semaphore(bind_workers)
        self._bindings: set[asyncio.Task[None]] = set()
        #: Pods whose binding is in flight: their assumption belongs to that binding.
        self._binding_uids: set[str] = set()
        self._reports: set[asyncio.Task[None]] = set()
        #: The first LIST went through (events of type None now mean a re-list).
        self.primed = False
        #: Called when a watch started over with a LIST (deletions may have been missed).
        self.on_relist: Callable[[], None] | None = None
        self.volume_binder = VolumeBinder(
            api,
            self.world.cache,
            feed=lambda raw, kind: self.handle("MODIFIED", raw, kind),
            timeout=volume_binding_timeout,
        )
        #: Pods reserved with volumes to bind first: their decision's volumes.
        self._volume_plans: dict[str, PodVolumes] = {}

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
    ) -> Outcome:
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
        self, outcome: Outcome, event_type: str | None, raw: Mapping[str, Any] | None
    ) -> None:
        """Report what an observed object changed to whom it concerns."""
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

    # -- scheduling side -----------------------------------------------------------------

    def scheduler_for(self, policy: CompiledPolicy) -> Scheduler:
        # One rotation state per policy, as kube-scheduler keeps one per profile.
        scheduler = self._schedulers.get(policy.name)
        if scheduler is None:
            # No per-node score tables: the operator only needs the node and the message.
            scheduler = self._schedulers[policy.name] = Scheduler(
                explain=False, extenders=self.extenders, chunk_size=CHUNK_SIZE
            )
        return scheduler

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
                self.health.attempt_started()
                try:
                    await self.schedule_one(queued)
                except Exception:
                    # A bug must not stop the scheduler nor lose the pod.
                    logger.exception("scheduling %s failed", queued.pod.key)
                    self.metrics.attempt("error", queued.pod.scheduler_name, 0.0)
                    if queued.pod.uid not in self._binding_uids:
                        # Not yet handed to a binding: undo the assumption and retry.
                        self._unreserve(queued.pod)
                        self.queue.error(queued)
                finally:
                    self.health.attempt_finished()
        finally:
            # Pods waiting for their volumes give up now (unreserved, decided again by
            # whoever schedules next), so that stopping never waits for the PV controller.
            self.volume_binder.stop()
            await self.drain()

    def _gone(self, queued: QueuedPod) -> bool:
        """Deleted, or placed by someone: nothing left to decide."""
        uid = queued.pod.uid
        return queued.deleted or self.cache.is_placed(uid) or self.cache.was_deleted(uid)

    async def schedule_one(self, queued: QueuedPod) -> Decision | None:
        pod = queued.pod
        if self._gone(queued):
            self.queue.done(pod.uid)
            return None
        policy = self.book.policy_for(pod.scheduler_name)
        if policy is None:
            self.queue.park(queued)  # waits for a policy to serve its name
            return None
        # Per-predicate and per-priority timing costs a timer around every call, on every
        # node: like kube-scheduler's plugin metrics, only one attempt in ten pays it.
        sampled = self._attempts % PLUGIN_METRICS_SAMPLE == 0
        self._attempts += 1
        started = self.clock()
        with self.cache.snapshot() as cluster:
            compiled = self._timed(policy) if sampled else policy
            decision = await self.scheduler_for(policy).schedule(pod, cluster, compiled)
            seen = cluster.nodes[decision.node].generation if decision.node is not None else 0
            elapsed = self.clock() - started
            # The shadow policies of the name decide the same pod on the same cluster;
            # not when the active decision failed (an extender error): it will not be
            # compared, and a shadow's budget is for decisions that are.
            shadows = await self.shadows.decide(
                pod, cluster, [] if decision.error else self.book.shadows_of(pod.scheduler_name)
            )
        # The writes held during the decision are applied now.
        self.metrics.phases(decision.filter_seconds, decision.score_seconds)
        if sampled:
            self.metrics.per_plugin(self._predicate_seconds, self._priority_seconds)
            self._predicate_seconds.clear()
            self._priority_seconds.clear()
        stats = self.stats.setdefault(policy.name, PolicyStats())
        stats.last_decision = now_rfc3339()
        profile = policy.scheduler_name
        if self._gone(queued):
            self.queue.done(pod.uid)  # deleted or bound elsewhere while being decided
            return decision
        for problem in decision.extender_errors:
            logger.warning("scheduling %s: %s", pod.key, problem)
        if decision.error:
            self._failed(queued, decision, policy, elapsed)
        elif decision.node is None:
            self._compare_shadows(shadows, decision)
            await self._unschedulable(queued, decision, policy, elapsed)
        elif (
            stale := self._recheck(pod, decision.node, seen, policy)
            or self._stale_volumes(decision)
        ) is not None:
            logger.info(
                "decision for %s went stale while it was taken (%s); trying again",
                pod.key,
                stale,
            )
            self.metrics.attempt("unschedulable", profile, elapsed)
            self.queue.error(queued)
        else:
            self._compare_shadows(shadows, decision)
            self._reserve(pod, decision)
            self.queue.done(pod.uid)
            await self._binding_slots.acquire()
            self._binding_uids.add(pod.uid)
            task = asyncio.create_task(self._binding_cycle(queued, decision.node, policy, elapsed))
            self._bindings.add(task)
            task.add_done_callback(self._bindings.discard)
        self.metrics.pending(self.queue.lengths())
        return decision

    def _compare_shadows(self, shadows: list[ShadowAttempt], decision: Decision) -> None:
        """The active decision stands (a node, or none fits): compare the shadows' with
        it, count, and have their status rewritten soon (never on every decision)."""
        for attempt, result in zip(shadows, self.shadows.compare(shadows, decision), strict=True):
            self.metrics.shadow(attempt.policy, result)
            if attempt.compared:
                self.policy_status.touch(attempt.policy)

    async def _unschedulable(
        self, queued: QueuedPod, decision: Decision, policy: CompiledPolicy, elapsed: float
    ) -> None:
        """No node fits: say so, make room by preemption if allowed, and wait.

        The pod waits in the queue either way: deleting the victims moves it back
        (a pod deletion may help), and it is decided again when its turn comes.
        """
        pod, profile = queued.pod, policy.scheduler_name
        self.stats.setdefault(policy.name, PolicyStats()).unschedulable += 1
        self.metrics.attempt("unschedulable", profile, elapsed)
        self.queue.unschedulable(queued)
        self._report(self.reporter.unschedulable(pod, decision.message, profile))
        await self._preempt(pod, decision, policy)

    def _preemption_hook(self, policy: CompiledPolicy) -> PreemptionHook | None:
        """The extenders' say on a preemption (their ``preemptVerb``), or None."""

        def ignored(problem: str) -> None:
            logger.warning("preemption: %s", problem)

        return extender_hook(self.extenders, policy.extenders, self.cache.cluster, ignored)

    async def _preempt(self, pod: Pod, decision: Decision, policy: CompiledPolicy) -> None:
        """kube-scheduler's ``sched.preempt``: find room for a pod that fits nowhere.

        On a fresh snapshot (writes that arrived during the decision count), the engine
        picks a node and its victims. Then, as upstream: the pod is nominated to the
        node (in the cache at once, so the next decisions leave the room to it, then
        ``status.nominatedNodeName`` through the API; if that fails, nothing else is
        done), each victim is deleted (only if its uid is still the one chosen) and gets
        a Normal ``Preempted`` event, and lower-priority pods nominated to that node lose
        their nomination.
        """
        try:
            with self.cache.snapshot() as cluster:
                result = await self.scheduler_for(policy).preempt(
                    decision, cluster, policy, process=self._preemption_hook(policy)
                )
        except ExtenderError as exc:
            # As upstream: an extender's failure gives up this preemption, not the pod.
            logger.warning("no preemption for %s at this attempt: %s", pod.key, exc)
            return
        if result is None:
            return  # the policy disables preemption, or not a fit error
        self.metrics.preemption_attempt()
        if self.cache.was_deleted(pod.uid) or self.cache.is_placed(pod.uid):
            return  # deleted, or placed by someone, while preemption was evaluated
        if result.node is not None and not await self._evict(pod, result, policy):
            return
        for other in result.clear:
            self.cache.unnominate(other.uid)
            status = await self._api_call(
                self.api.patch_pod_status(other.namespace, other.name, nomination_patch(None)),
                f"clearing the nominated node of {other.key}",
            )
            if not 200 <= status < 300 and status != 404:
                logger.warning(
                    "could not clear the nominated node of %s: HTTP %s", other.key, status
                )

    async def _evict(self, pod: Pod, result: Preemption, policy: CompiledPolicy) -> bool:
        """Nominate ``pod`` and delete the victims; False when upstream would stop there."""
        node = result.node
        assert node is not None
        self.cache.nominate(pod, node)
        status = await self._api_call(
            self.api.patch_pod_status(pod.namespace, pod.name, nomination_patch(node)),
            f"nominating {pod.key} to {node}",
        )
        if not 200 <= status < 300:
            logger.warning("could not nominate %s to %s: HTTP %s", pod.key, node, status)
            self.cache.unnominate(pod.uid)
            return False
        for victim in result.victims:
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

    @staticmethod
    async def _api_call(call: Coroutine[Any, Any, int], what: str) -> int:
        """An API write's status; 0 when it raised (no answer, timeout)."""
        try:
            return await call
        except Exception as exc:
            logger.warning("%s failed: %r", what, exc)
            return 0

    def _failed(
        self, queued: QueuedPod, decision: Decision, policy: CompiledPolicy, elapsed: float
    ) -> None:
        """The attempt itself failed (an extender's error): say so, retry with backoff."""
        pod, profile = queued.pod, policy.scheduler_name
        logger.warning("scheduling %s failed: %s", pod.key, decision.error)
        self.metrics.attempt("error", profile, elapsed)
        self.queue.error(queued)
        # kube-scheduler reported any failed attempt as Unschedulable with the error.
        self._report(self.reporter.unschedulable(pod, decision.error, profile))

    def _reserve(self, pod: Pod, decision: Decision) -> None:
        """Assume the decision in the cache at once, so the next decision sees it: the
        pod on its node, and the PVs and claims its volumes bind with (AssumePodVolumes)."""
        assert decision.node is not None
        self.cache.assume(pod, decision.node)
        volumes = decision.volumes
        if volumes is not None and volumes.needs_binding:
            self.cache.assume_volumes(pod.uid, volumes)
            self._volume_plans[pod.uid] = volumes

    def _unreserve(self, pod: Pod) -> None:
        """Undo :meth:`_reserve` (the binding failed or will not be sent)."""
        self._forget(pod.uid)
        if self._volume_plans.pop(pod.uid, None) is not None:
            self.cache.forget_volumes(pod.uid)

    def _stale_volumes(self, decision: Decision) -> str | None:
        """Why the PVs and claims the decision matched changed meanwhile; None if not."""
        volumes = decision.volumes
        if volumes is None or not volumes.needs_binding:
            return None
        return self.cache.stale_volumes(volumes)

    def _recheck(self, pod: Pod, node: str, seen: int, policy: CompiledPolicy) -> str | None:
        """Why a decision taken on the snapshot no longer holds; None when it does.

        Only a node that changed since the snapshot (its generation moved) is checked
        again, with the policy's predicates on the state as it is now.
        """
        info = self.cache.cluster.nodes.get(node)
        if info is None:
            return f'node "{node}" was deleted'
        if info.generation == seen:
            return None
        reasons = check_node(pod, self.cache.cluster, policy, node)
        return f'node "{node}" changed: {"; ".join(reasons)}' if reasons else None

    def _forget(self, uid: str) -> None:
        """Undo our assumption of ``uid``, unless the watch already says where it is."""
        if self.cache.state_of(uid) in (PodState.ASSUMED, PodState.BINDING_FINISHED):
            self.cache.forget(uid)

    async def _binding_cycle(
        self, queued: QueuedPod, node: str, policy: CompiledPolicy, elapsed: float
    ) -> None:
        """Bind the reserved pod, asynchronously; on failure unreserve and retry.

        ``elapsed``: the scheduling attempt's duration; the attempt counts as
        ``scheduled`` (metrics, ``status.podsScheduled``) only once the pod is bound.
        """
        slot = _Slot(self._binding_slots)
        try:
            await self._bind_reserved(queued, node, policy, slot, elapsed)
        except Exception:
            # A bug must not lose the pod: undo and decide it again.
            logger.exception("binding %s to %s failed", queued.pod.key, node)
            self._unreserve(queued.pod)
            self.queue.error(queued)
        finally:
            self._binding_uids.discard(queued.pod.uid)
            slot.release()

    async def _bind_reserved(
        self, queued: QueuedPod, node: str, policy: CompiledPolicy, slot: _Slot, elapsed: float
    ) -> None:
        pod, profile = queued.pod, policy.scheduler_name
        if not self.is_leader():
            # Lost leadership after deciding: another replica will decide again.
            self._unreserve(pod)
            return
        try:
            await self._prebind(pod, slot)
        except VolumeBindingError as exc:
            self.metrics.attempt("error", profile, elapsed)  # as upstream: not scheduled
            self._volume_binding_failed(queued, exc, profile)
            return
        if not self.is_leader():  # lost while the volumes were being bound
            self._unreserve(pod)
            return
        started = self.clock()
        binder = self._binder(pod, policy)
        problem = ""
        if binder is None:
            status = await self._bind_call(pod, node)
        else:
            status, problem = await self._extender_bind_call(binder, pod, node)
        if status == 0 or status >= 500:
            # No answer, or a server error: the binding may have been written anyway.
            status = await self._verify_binding(pod, node, status)
        result = "success" if 200 <= status < 300 else "conflict" if status == 409 else "error"
        self.metrics.binding(result, self.clock() - started)
        if status == AMBIGUOUS:
            # Nobody could tell: the assumption stays until the watch says where the
            # pod is, or expires and the pod is tried again (``requeue_expired``).
            self.cache.finish_binding(pod.uid)
            return
        if 200 <= status < 300:
            self.cache.finish_binding(pod.uid)
            self.stats.setdefault(policy.name, PolicyStats()).scheduled += 1
            self.metrics.attempt("scheduled", profile, elapsed)
            self.metrics.e2e("scheduled", profile, self.clock() - queued.enqueued)
            self.metrics.attempts_until_scheduled(queued.attempts)
            # The event is sent by this task (one task per pod, not two), once the bind
            # slot is free for the next binding.
            self._binding_uids.discard(pod.uid)
            slot.release()
            await self.reporter.scheduled(pod, node, profile)
            return
        self._unreserve(pod)
        self.metrics.attempt("error", profile, elapsed)  # as upstream: a failed binding
        if status == 404 or self.cache.was_deleted(pod.uid):
            return  # the pod is gone
        if status == 409:
            # Already bound (by another scheduler, or by us before a restart): the
            # watch will show where. Requeued with backoff in case it is not.
            logger.info("binding %s to %s: conflict, the pod is bound elsewhere", pod.key, node)
            self.queue.error(queued)
            return
        self.queue.error(queued)
        if not problem:
            problem = f"HTTP {status}" if status else "HTTP connection error"
        message = f"Binding rejected: {problem}"
        # As upstream's recordSchedulingFailure: the condition says it too.
        self._report(
            self.reporter.unschedulable(
                pod, message, profile, reason=SCHEDULER_ERROR_REASON, action="Binding"
            )
        )

    async def _prebind(self, pod: Pod, slot: _Slot) -> None:
        """Bind the pod's volumes, if its decision has any to bind (BindPodVolumes).

        The writes hold the binding's slot; the wait lends it back (see the module
        docstring). Raises VolumeBindingError.
        """
        volumes = self._volume_plans.get(pod.uid)
        if volumes is None:
            return
        written = await self.volume_binder.write(volumes)
        slot.release()
        try:
            await self.volume_binder.wait(pod, volumes, written)
        finally:
            await slot.acquire()
        # Bound: the assumptions stay until the watch reports the bound objects.
        del self._volume_plans[pod.uid]
        self.cache.finish_volumes(pod.uid)

    def _volume_binding_failed(
        self, queued: QueuedPod, error: VolumeBindingError, profile: str
    ) -> None:
        """Undo everything the decision assumed; tell why, and retry with backoff."""
        pod = queued.pod
        self._unreserve(pod)
        if error.quiet or self.cache.was_deleted(pod.uid):
            logger.info("binding volumes of %s stopped: %s", pod.key, error)
            return
        logger.warning("binding volumes of %s failed: %s", pod.key, error)
        self.queue.error(queued)
        self._report(self.reporter.volume_binding_failed(pod, f"binding volumes: {error}", profile))

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
        for pod in self.cache.expire():
            if not self.cache.was_deleted(pod.uid):
                served = self.book.serves(pod.scheduler_name)
                self.queue.add(replace(pod, node_name=""), served=served)

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

    # -- helpers -------------------------------------------------------------------------

    def _report(self, coroutine: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._reports.add(task)
        task.add_done_callback(self._reports.discard)

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
