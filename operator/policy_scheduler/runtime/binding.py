"""The binding cycle: from an assumed pod to a bound one, or back to the queue.

As kube-scheduler splits ``scheduleOne`` from its ``bindingCycle`` and
``handleBindingCycleError``, the runtime (``scheduling.py``) decides and assumes, and
hands each assumed pod to :class:`BindingCycles`, which runs its binding cycle in a task
of its own (a hung call costs its own pod only):

1. **Permit's wait**, if a plugin holds the pod (a Normal ``WaitingOnPermit`` event names
   the plugins and the deadline); a rejection or a timeout unreserves it and reports it
   as the scheduling cycle reports a Permit refusal; a node deleted meanwhile fails it.
2. **PreBind** (the volumes: the claimRef / selected-node writes, then the wait for the
   PV controller, ``volumebinding.py``; DynamicResources' claim writes).
3. **Bind**: the first interested extender with a ``bindVerb``, else the Bind plugins
   (DefaultBinder's ``pods/binding``). A gang's member whose binding failed on something
   that may pass is bound again onto its reserved node (:data:`GANG_BIND_TRIES`).
4. **PostBind**, once bound.

Every step runs only while the leadership term the decision was taken in lasts; a
decision that outlived its term is undone and decided again.

What the Bind point answered is a :class:`BindAnswer`, read from the status DefaultBinder
returns (its :class:`BindingNotDone` cause) rather than from the cycle state; a PreBind
failure of the volume binder is known by its :class:`~.volumebinding.VolumeBindingError`
cause. The failure handling (:meth:`BindingCycles.failed`): every Reserve plugin's
Unreserve in reverse order, the assumption forgotten, the pod back to the queue with
backoff, ``FailedScheduling`` (reason ``SchedulerError``) with the message, and the room
the pod held wakes the pods unschedulable for want of it. A 409 (someone bound it) and a
404 (deleted) are answers, handled quietly. A binding with no clear answer (no reply
within the deadline, a 5xx after which the write may have happened) is verified: the
watch, or a GET of the pod, says whether it happened; until someone can tell, the
assumption stays (the node is not offered twice) and expires later
(:meth:`BindingCycles.requeue_expired`: the pod is then decided again).
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from ..deciding import Attempt, Decider
from ..engine.compiler import CompiledPolicy
from ..engine.extenders import CompiledExtender, ExtenderClient, ExtenderError
from ..engine.functions import CycleState
from ..engine.interface import Code, Status
from ..engine.pipeline import run_bind, run_post_bind, run_pre_bind, run_unreserve
from ..engine.rejections import refused_by
from ..objects import Pod
from ..state.cache import PodState
from ..state.queueing import QueuedPod
from ..state.world import World
from .kubeapi import Api, backoff
from .metrics import MetricsSink
from .policies import PolicyStats
from .reporting import Reporter
from .volumebinding import VolumeBindingError

logger = logging.getLogger(__name__)

#: How often an ambiguous binding is checked by reading the pod before giving up.
VERIFY_ATTEMPTS = 5
#: The HTTP status of a binding nobody could confirm or deny (not a real one).
AMBIGUOUS = -1
#: Binding calls a gang's member gets on its reserved node (with backoff: about 6 s in
#: all) before its binding fails as any other pod's.
GANG_BIND_TRIES = 6
#: PodScheduled reason of a failed binding (upstream's v1.PodReasonSchedulerError).
SCHEDULER_ERROR_REASON = "SchedulerError"
#: The Normal event of a pod a Permit plugin holds.
WAITING_ON_PERMIT = "WaitingOnPermit"


class Bound(enum.Enum):
    """What became of a pod's binding; the value is ``scheduler_binding``'s result."""

    BOUND = "success"
    #: 409: bound elsewhere (by another scheduler, or by us before a restart).
    ELSEWHERE = "conflict"
    #: 404: the pod is gone.
    GONE = "gone"
    #: Nobody could tell (no answer, and the pod could not be read since).
    AMBIGUOUS = "ambiguous"
    FAILED = "error"

    @property
    def metric(self) -> str:
        return self.value if self in (Bound.BOUND, Bound.ELSEWHERE) else "error"


@dataclass(frozen=True, slots=True)
class BindAnswer:
    """The Bind point's answer, read: what became of the binding, and why it failed."""

    bound: Bound
    problem: str = ""

    @classmethod
    def of_http(cls, code: int) -> BindAnswer:
        """A ``pods/binding`` call's status (0: no answer; :data:`AMBIGUOUS`)."""
        if 200 <= code < 300:
            return cls(Bound.BOUND)
        if code == 409:
            return cls(Bound.ELSEWHERE)
        if code == 404:
            return cls(Bound.GONE)
        if code == AMBIGUOUS:
            return cls(Bound.AMBIGUOUS)
        return cls(Bound.FAILED, f"HTTP {code}" if code else "HTTP connection error")


class BindingNotDone(Exception):
    """DefaultBinder's ``pods/binding`` did not bind the pod: the cause of its Error
    status, with the HTTP status (0: no answer; :data:`AMBIGUOUS`: nobody could tell)."""

    def __init__(self, code: int) -> None:
        super().__init__(f"HTTP {code}" if code > 0 else "no answer")
        self.code = code


class BindingCycles:
    """The assumed pods' binding cycles, their failures and their expiry (module docstring)."""

    def __init__(
        self,
        api: Api,
        world: World,
        decider: Decider,
        *,
        reporter: Reporter,
        report: Callable[[Coroutine[Any, Any, None]], None],
        spawn: Callable[[Coroutine[Any, Any, None]], None],
        metrics: MetricsSink,
        stats: dict[str, PolicyStats],
        clock: Callable[[], float],
        is_leader: Callable[[], bool],
        leader_term: Callable[[], int],
        extenders: ExtenderClient | None,
        bind_workers: int,
    ) -> None:
        self.api = api
        self.world = world
        self.decider = decider
        self.reporter = reporter
        self._report = report
        self._spawn = spawn
        self.metrics = metrics
        self.stats = stats
        self.clock = clock
        self.is_leader = is_leader
        self.leader_term = leader_term
        self.extenders = extenders
        #: Binding calls in flight at once; the scheduling loop never waits for one.
        self._calls = asyncio.Semaphore(bind_workers)
        #: Pods whose binding cycle is under way: their assumption belongs to it.
        self.under_way: set[str] = set()
        #: Pods whose binding's outcome nobody could tell: the cycle state their Reserve
        #: plugins wrote, for Unreserve if the assumption expires.
        self.unconfirmed: dict[str, tuple[CycleState, CompiledPolicy, str]] = {}

    def start(self, attempt: Attempt, term: int) -> None:
        """The assumed pod's binding cycle, in a task of its own."""
        self.under_way.add(attempt.queued.pod.uid)
        self._spawn(self._cycle(attempt, term))

    async def _cycle(self, attempt: Attempt, term: int) -> None:
        queued, policy, node, state = attempt.queued, attempt.policy, attempt.node, attempt.state
        assert policy is not None and node is not None and state is not None
        try:
            await self._bind_assumed(attempt, queued, policy, node, state, term)
        except Exception:
            # A bug must not lose the pod: undo and decide it again.
            logger.exception("binding %s to %s failed", queued.pod.key, node)
            forgot = self.decider.unreserve(queued.pod.uid, state, policy, node)
            self.world.queue.error(queued)
            self._room_freed(queued.pod, forgot)
        finally:
            self.under_way.discard(queued.pod.uid)

    async def _bind_assumed(
        self,
        attempt: Attempt,
        queued: QueuedPod,
        policy: CompiledPolicy,
        node: str,
        state: CycleState,
        term: int,
    ) -> None:
        pod, profile = queued.pod, policy.scheduler_name
        cache = self.world.cache
        if attempt.waiting is not None:
            allowed = await self._wait_on_permit(attempt)
            if not allowed.is_success:
                forgot = self.decider.unreserve(pod.uid, state, policy, node)
                if not cache.was_deleted(pod.uid):
                    self.rejected(queued, allowed, profile, 0.0)
                self._room_freed(pod, forgot)
                return
            if node not in cache.cluster.nodes:  # deleted while the pod waited
                message = f'node "{node}" was deleted while the pod waited at Permit'
                self.failed(queued, state, policy, node, message)
                return
        if not self._leading(term):
            # Lost leadership after deciding (even if led again since: the decision is
            # the old term's, from a cache another leader may have changed meanwhile):
            # decided again by whoever leads now.
            self._stale_term(queued, state, policy, node)
            return
        status = await run_pre_bind(policy.pipeline, state, pod, node)
        if status is not None:
            if isinstance(status.cause, VolumeBindingError):
                self._volumes_failed(queued, state, policy, node, status.cause)
            else:
                self.failed(queued, state, policy, node, plugin_message(status))
            return
        if not self._leading(term):  # lost while the volumes were being bound
            self._stale_term(queued, state, policy, node)
            return
        started = self.clock()
        answer = await self._bind(pod, node, policy, state)
        tries = 1
        gang = attempt.gang
        while gang is not None and tries < GANG_BIND_TRIES and self._again(pod, node, answer):
            # A gang's member is not given up half-way on a failure that may pass (a
            # webhook, a quota, a server error): its group bound (or binds) beside it,
            # so it is bound again onto its reserved place, a few times with backoff,
            # unless the pod or the node is gone. Past that, its binding failed as any
            # other pod's (unreserved, FailedScheduling, decided again).
            logger.warning(
                "binding %s (gang %s) to %s failed (%s); binding it there again",
                pod.key,
                gang.key,
                node,
                answer.problem,
            )
            await asyncio.sleep(backoff(tries))
            tries += 1
            answer = await self._bind(pod, node, policy, state)
        self.metrics.binding(answer.bound.metric, self.clock() - started)
        await self._answered(attempt, queued, policy, node, state, answer)

    async def _answered(
        self,
        attempt: Attempt,
        queued: QueuedPod,
        policy: CompiledPolicy,
        node: str,
        state: CycleState,
        answer: BindAnswer,
    ) -> None:
        """What follows from the Bind point's answer."""
        pod, profile = queued.pod, policy.scheduler_name
        cache = self.world.cache
        if answer.bound is Bound.AMBIGUOUS:
            # Nobody could tell: the assumption stays until the watch says where the
            # pod is, or expires and the pod is tried again (``requeue_expired``).
            cache.finish_binding(pod.uid)
            self.unconfirmed[pod.uid] = (state, policy, node)
            return
        if answer.bound is Bound.BOUND:
            cache.finish_binding(pod.uid)
            self.stats.setdefault(policy.name, PolicyStats()).scheduled += 1
            self.metrics.attempt("scheduled", profile, attempt.elapsed)
            self.metrics.e2e("scheduled", profile, self.clock() - queued.enqueued)
            self.metrics.attempts_until_scheduled(queued.attempts)
            self.under_way.discard(pod.uid)
            await self.reporter.scheduled(pod, node, profile)
            if policy.pipeline.post_bind:
                await run_post_bind(policy.pipeline, state, pod, node)
            return
        forgot = self.decider.unreserve(pod.uid, state, policy, node)
        self.metrics.attempt("error", profile, attempt.elapsed)  # as upstream: a failed binding
        if answer.bound is Bound.GONE or cache.was_deleted(pod.uid):
            self._room_freed(pod, forgot)
            return  # the pod is gone
        self.world.queue.error(queued)
        self._room_freed(pod, forgot)
        if answer.bound is Bound.ELSEWHERE:
            # Already bound (by another scheduler, or by us before a restart): the
            # watch will show where. Requeued with backoff in case it is not.
            logger.info("binding %s to %s: conflict, the pod is bound elsewhere", pod.key, node)
            return
        self._report_failure(pod, f"Binding rejected: {answer.problem}", profile)

    def _stale_term(
        self, queued: QueuedPod, state: CycleState, policy: CompiledPolicy, node: str
    ) -> None:
        """A decision outlived its leadership term: undone; decided again by this replica
        if it leads again now (else by the new leader, from its own list)."""
        forgot = self.decider.unreserve(queued.pod.uid, state, policy, node)
        if self.is_leader():
            self.world.queue.error(queued)
            self._room_freed(queued.pod, forgot)

    def _leading(self, term: int) -> bool:
        """Still leading, in the term a decision was taken in."""
        return self.is_leader() and self.leader_term() == term

    def _again(self, pod: Pod, node: str, answer: BindAnswer) -> bool:
        """A failed binding worth sending again to the same node (a gang's member)."""
        if answer.bound is not Bound.FAILED:
            return False
        cache = self.world.cache
        return self.is_leader() and not cache.was_deleted(pod.uid) and node in cache.cluster.nodes

    async def _bind(
        self, pod: Pod, node: str, policy: CompiledPolicy, state: CycleState
    ) -> BindAnswer:
        """The Bind point: the first interested binding extender, else the Bind plugins."""
        binder = self._binder(pod, policy)
        async with self._calls:
            if binder is not None:
                return await self._extender_bind(binder, pod, node)
            status = await run_bind(policy.pipeline.bind, state, pod, node)
        if isinstance(status.cause, BindingNotDone):  # DefaultBinder's HTTP answer
            return BindAnswer.of_http(status.cause.code)
        if status.is_success:
            return BindAnswer(Bound.BOUND)
        if status.is_skip:
            return BindAnswer(Bound.FAILED, "no Bind plugin bound the pod")
        return BindAnswer(Bound.FAILED, plugin_message(status))

    async def bind_pod(self, pod: Pod, node: str) -> Status | None:
        """DefaultBinder's call (the runtime's ports): ``pods/binding``, verified when
        the answer leaves it open. None when bound; else an Error whose cause is a
        :class:`BindingNotDone` with the HTTP status."""
        code = await self._bind_call(pod, node)
        if code == 0 or code >= 500:
            # No answer, or a server error: the binding may have been written anyway.
            code = await self._verify(pod, node, code)
        if 200 <= code < 300:
            return None
        cause = BindingNotDone(code)
        return Status(Code.ERROR, (str(cause),), cause=cause)

    async def _bind_call(self, pod: Pod, node: str) -> int:
        """The binding itself: its HTTP status, 0 when it could not be sent."""
        try:
            return await self.api.bind(pod.namespace, pod.name, pod.uid, node)
        except Exception as exc:  # network trouble: retry with backoff
            logger.warning("binding %s to %s failed: %s", pod.key, node, exc)
            return 0

    async def _verify(self, pod: Pod, node: str, status: int) -> int:
        """Where did an ambiguous binding leave the pod? As a status: 201 bound to
        ``node``, 409 bound elsewhere, 404 gone, ``status`` still unbound (it failed), or
        :data:`AMBIGUOUS` when neither the watch nor the API would tell.

        The watch is trusted first (it may already have shown the pod bound); else the
        pod is read from the API, a few times with backoff.
        """
        cache = self.world.cache
        for attempt in range(1, VERIFY_ATTEMPTS + 1):
            if cache.state_of(pod.uid) is PodState.ADDED:
                return 201 if cache.node_of(pod.uid) == node else 409
            if cache.was_deleted(pod.uid):
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

    def _binder(self, pod: Pod, policy: CompiledPolicy) -> CompiledExtender | None:
        """The extender that binds ``pod`` instead of pods/binding, if any.

        As upstream's binder choice: the first extender with a bindVerb, if it is
        interested in the pod (managedResources); otherwise the API binds.
        """
        if self.extenders is None:
            return None
        binder = next((e for e in policy.extenders if e.bind_verb), None)
        return binder if binder is not None and binder.is_interested(pod) else None

    async def _extender_bind(self, binder: CompiledExtender, pod: Pod, node: str) -> BindAnswer:
        assert self.extenders is not None
        try:
            await self.extenders.bind(binder, pod, node)
        except ExtenderError as exc:
            logger.warning("binding %s to %s failed: %s", pod.key, node, exc)
            return BindAnswer(Bound.FAILED, str(exc))
        return BindAnswer(Bound.BOUND)

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

    # -- failures ------------------------------------------------------------------------

    def rejected(self, queued: QueuedPod, status: Status, profile: str, elapsed: float) -> None:
        """A Reserve or Permit plugin (or a wait at Permit) refused the pod: it was
        unreserved; FailedScheduling with the plugin's message, and the pod waits."""
        pod = queued.pod
        message = plugin_message(status)
        if status.is_rejected:
            logger.info("%s was not scheduled: %s", pod.key, message)
            self.metrics.attempt("unschedulable", profile, elapsed)
            self.world.queue.unschedulable(queued, refused_by(status.plugin))
        else:
            logger.warning("scheduling %s failed: %s", pod.key, message)
            self.metrics.attempt("error", profile, elapsed)
            self.world.queue.error(queued)
        self._report(self.reporter.unschedulable(pod, message, profile))

    def failed(
        self,
        queued: QueuedPod,
        state: CycleState,
        policy: CompiledPolicy,
        node: str,
        message: str,
    ) -> None:
        """The binding cycle failed: unreserve, forget, retry with backoff, tell why."""
        pod = queued.pod
        forgot = self.decider.unreserve(pod.uid, state, policy, node)
        self.metrics.attempt("error", policy.scheduler_name, 0.0)
        if self.world.cache.was_deleted(pod.uid):
            self._room_freed(pod, forgot)
            return
        logger.warning("binding %s to %s failed: %s", pod.key, node, message)
        self.world.queue.error(queued)
        self._room_freed(pod, forgot)
        self._report_failure(pod, message, policy.scheduler_name)

    def _volumes_failed(
        self,
        queued: QueuedPod,
        state: CycleState,
        policy: CompiledPolicy,
        node: str,
        error: VolumeBindingError,
    ) -> None:
        """The volumes could not be bound: as :meth:`failed`, with the volume binder's
        own event; quietly when it stopped on purpose (the pod deleted, the loop stopping)."""
        pod = queued.pod
        forgot = self.decider.unreserve(pod.uid, state, policy, node)
        self.metrics.attempt("error", policy.scheduler_name, 0.0)
        if error.quiet or self.world.cache.was_deleted(pod.uid):
            logger.info("binding volumes of %s stopped: %s", pod.key, error)
            self._room_freed(pod, forgot)
            return
        logger.warning("binding volumes of %s failed: %s", pod.key, error)
        self.world.queue.error(queued)
        self._room_freed(pod, forgot)
        self._report(
            self.reporter.volume_binding_failed(
                pod, f"binding volumes: {error}", policy.scheduler_name
            )
        )

    def _room_freed(self, pod: Pod, forgotten: bool) -> None:
        """The binding cycle forgot ``pod``'s assumption: the pods that were
        unschedulable for want of its room are tried again (the queue's
        :meth:`~..state.queueing.SchedulingQueue.forgotten`), after the pod itself went
        back, as kube-scheduler's handleBindingCycleError does."""
        if forgotten:
            self.world.queue.forgotten({pod.uid})

    def _report_failure(self, pod: Pod, message: str, profile: str) -> None:
        # As upstream's recordSchedulingFailure: the condition says it too.
        self._report(
            self.reporter.unschedulable(
                pod, message, profile, reason=SCHEDULER_ERROR_REASON, action="Binding"
            )
        )

    # -- expiry --------------------------------------------------------------------------

    def requeue_expired(self) -> None:
        """Assumptions whose binding never showed up in a watch: decide those pods again.

        If one was bound after all, the watch (or the next resync) says so and the API
        answers 409 to a second binding; if it was deleted, the queue forgets it.
        """
        cache, queue = self.world.cache, self.world.queue
        expired = cache.expire()
        for pod in expired:
            held = self.unconfirmed.pop(pod.uid, None)
            if held is not None:  # its Reserve plugins let go of it too
                state, policy, node = held
                run_unreserve(policy.pipeline, state, pod, node)
            if not cache.was_deleted(pod.uid):
                served = self.world.book.serves(pod.scheduler_name)
                queue.add(replace(pod, node_name=""), served=served)
        if expired:  # the room they held is free
            queue.forgotten({pod.uid for pod in expired})
        # The others the watch confirmed (or that were deleted): nothing to undo.
        for uid in [u for u in self.unconfirmed if not self._awaits_watch(u)]:
            del self.unconfirmed[uid]

    def _awaits_watch(self, uid: str) -> bool:
        return self.world.cache.state_of(uid) is PodState.BINDING_FINISHED


def plugin_message(status: Status) -> str:
    """A plugin's refusal as people read it: the plugin, then its reasons."""
    text = status.message or ("rejected" if status.is_rejected else "failed")
    return f"{status.plugin}: {text}" if status.plugin and not text.startswith("running ") else text
