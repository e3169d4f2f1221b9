"""One pod's scheduling cycle, the same in the operator and in ``simulate``.

kube-scheduler's ``schedulingCycle``: :meth:`Decider.decide` takes a popped pod and
returns an :class:`Attempt` saying what happened; the caller (the operator's loop, or
``simulate``) reports it, moves the pod in the queue and runs the binding cycle. The
steps, on a snapshot of the cache (``state/cache.py``):

1. the pod is gone (deleted, or placed by someone) -> ``GONE``; no policy serves its
   name -> ``PARKED``;
2. the policy decides it (``engine/algorithm.py``: PreFilter, Filter, PreScore, Score,
   the extenders), and each Shadow policy of its name decides it on the same snapshot;
3. the attempt failed (an extender's or a plugin's error) -> ``ERROR``;
4. no node fits -> ``UNSCHEDULABLE``, after PostFilter (preemption) on a fresh snapshot:
   the pod is nominated in the cache at once (so that the next decisions leave the room
   to it) and the nominations it overrides are cleared; once the attempt's outcome
   stands (a gang's member's preemption is given up with its group), the scheduler's
   ports carry it out (``Ports.preempt``: offline the victims leave the cache; the
   operator nominates, evicts and clears through the API, off the scheduling loop);
5. the chosen node changed while the pod was being decided (writes held during the
   decision are applied now) and no longer fits, or the volumes matched changed ->
   ``STALE`` (tried again with backoff);
6. the pod is **assumed** on the node, then Reserve runs (the volumes it binds are
   assumed too), then Permit. A Reserve or Permit failure unreserves every reserve
   plugin in reverse order and forgets the assumption -> ``REJECTED``. Otherwise
   ``ASSUMED``, with the cycle state for the binding cycle and, if a Permit plugin said
   Wait, the waiting pod.

**Gangs** (a :class:`~.engine.interface.GangPlugin` of the policy, Coscheduling's, puts
the pod in one): the gang's other pending members are taken from the queue and decided
right after it, in queue order, holding the cluster throughout, each seeing the ones
before it assumed. If fewer than ``min_member`` of them fit (with the members placed
already), every one of their assumptions and reservations is undone at once and each
member is ``REJECTED`` with the group's reason: a gang that cannot fit holds nothing, and
two gangs that fit alone but not together never deadlock holding half the cluster each.
:meth:`Decider.decide` therefore returns a list: one attempt, or one per member.

Nothing here awaits an HTTP peer while the cluster is held. In the operator several
cycles may be under way (pods of policies with extenders are decided beside the main
loop, see ``runtime/scheduling.py``): :attr:`Decider.lock` lets one of them hold the
cluster at a time, and around an extender's call the cycle lets go of both
(:meth:`Decider._outside`), so the node it then chooses is checked again at step 5.
"""

from __future__ import annotations

import asyncio
import enum
import random
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from .engine.algorithm import Decision, Scheduler, check_node
from .engine.builtins import VOLUMES_KEY
from .engine.compiler import CompiledPolicy
from .engine.extenders import ExtenderClient, ExtenderError, Victims
from .engine.functions import CycleState
from .engine.interface import Gang, GangPlugin, Status
from .engine.pipeline import (
    Enabled,
    Observer,
    PluginFailure,
    run_permit,
    run_reserve,
    run_unreserve,
)
from .engine.preemption import Preemption, PreemptionHook, extender_hook
from .engine.waiting import WaitingPod
from .objects import Pod
from .state.cache import PodState
from .state.queueing import QueuedPod
from .state.shadows import ShadowAttempt, ShadowRunner
from .state.world import World

#: Set while the current task plans a gang, which holds :attr:`Decider.lock` for all its
#: members (a context variable: other tasks deciding meanwhile do not hold it).
_PLANNING: ContextVar[bool] = ContextVar("planning_a_gang", default=False)

#: A generation no node has: the chosen node is checked again (see ``Decider._cycle``).
_UNSEEN = -1


class Outcome(enum.Enum):
    """What one scheduling cycle came to (module docstring, steps 1-6)."""

    GONE = "gone"
    PARKED = "parked"
    ERROR = "error"
    UNSCHEDULABLE = "unschedulable"
    STALE = "stale"
    REJECTED = "rejected"
    ASSUMED = "assumed"


@dataclass(slots=True)
class Attempt:
    """One scheduling cycle's result, for the caller to act on."""

    queued: QueuedPod
    outcome: Outcome
    policy: CompiledPolicy | None = None
    decision: Decision | None = None
    shadows: list[ShadowAttempt] = field(default_factory=list)
    #: UNSCHEDULABLE: what PostFilter found (None when it did not run).
    preemption: Preemption | None = None
    #: ASSUMED: where, the cycle state the binding cycle goes on with, and the waiting
    #: pod when a Permit plugin holds it.
    node: str | None = None
    state: CycleState | None = None
    waiting: WaitingPod | None = None
    #: REJECTED: the Reserve or Permit plugin's status; STALE: why.
    status: Status | None = None
    stale: str = ""
    #: Seconds the cycle took (the decision, preemption aside).
    elapsed: float = 0.0
    #: This attempt's plugin calls were timed (metrics are sampled).
    sampled: bool = False
    #: The gang the pod was planned with (its members bind together), if any.
    gang: Gang | None = None

    @property
    def pod_key(self) -> str:
        return self.queued.pod.key


class Decider:
    """Runs scheduling cycles against one :class:`~.state.world.World`.

    ``explain``: decisions keep per-node scores and fit hints (``simulate``); the
    operator only needs the node and the message. ``instrument``/``observe`` time every
    ``sample_every``-th attempt per predicate, priority and plugin (the operator's
    metrics; kube-scheduler samples 10%). ``rng`` breaks ties of the policies decided by
    v1.30's cycle (``Scheduler.rng``; None: each scheduler seeds its own from the system).
    """

    def __init__(
        self,
        world: World,
        *,
        explain: bool = True,
        extenders: ExtenderClient | None = None,
        shadows: ShadowRunner | None = None,
        chunk_size: int = 64,
        clock: Callable[[], float] = time.monotonic,
        instrument: Callable[[CompiledPolicy], CompiledPolicy] | None = None,
        observe: Observer | None = None,
        sample_every: int = 0,
        rng: random.Random | None = None,
    ) -> None:
        self.world = world
        self.rng = rng
        self.explain = explain
        self.extenders = extenders
        self.shadows = shadows or ShadowRunner(clock=clock)
        self.chunk_size = chunk_size
        self.clock = clock
        self.instrument = instrument
        self.observe = observe
        self.sample_every = sample_every
        #: Held while a cycle holds the cluster (one at a time; see the module doc).
        self.lock = asyncio.Lock()
        self._schedulers: dict[str, Scheduler] = {}
        self._attempts = 0

    def scheduler_for(self, policy: CompiledPolicy) -> Scheduler:
        """One rotation state per policy, as kube-scheduler keeps one per profile."""
        scheduler = self._schedulers.get(policy.name)
        if scheduler is None:
            scheduler = self._schedulers[policy.name] = Scheduler(
                explain=self.explain,
                extenders=self.extenders,
                chunk_size=self.chunk_size,
                rng=self.rng,
            )
        return scheduler

    def gone(self, queued: QueuedPod) -> bool:
        """Deleted, or placed by someone: nothing left to decide."""
        uid, cache = queued.pod.uid, self.world.cache
        return queued.deleted or cache.is_placed(uid) or cache.was_deleted(uid)

    @asynccontextmanager
    async def _holding(self) -> AsyncIterator[None]:
        if _PLANNING.get():  # this task plans a gang: it holds the lock already
            yield
            return
        async with self.lock:
            yield

    @asynccontextmanager
    async def _outside(self) -> AsyncIterator[None]:
        """Around an HTTP call in the middle of a cycle: the cluster and the lock let go."""
        cache = self.world.cache
        with cache.loosened():
            self.lock.release()
            try:
                yield
            finally:
                await self.lock.acquire()

    async def decide(self, queued: QueuedPod) -> list[Attempt]:
        """One scheduling cycle, or the cycles of a gang's members (module docstring)."""
        pod = queued.pod
        if self.gone(queued):
            return [Attempt(queued, Outcome.GONE)]
        policy = self.world.book.policy_for(pod.scheduler_name)
        if policy is None:
            return [Attempt(queued, Outcome.PARKED)]
        found = policy.pipeline.gang_of(pod) if policy.pipeline.gangs else None
        if found is None:
            attempts = [await self._cycle(queued, policy)]
        else:
            attempts = await self._plan(queued, policy, *found)
        self._carry_out_preemptions(attempts)
        return attempts

    def _carry_out_preemptions(self, attempts: list[Attempt]) -> None:
        """PostFilter's writes, through the scheduler's ports, once each attempt's
        outcome stands (not from PostFilter itself: a gang's member's preemption is
        given up with its group). Offline the victims leave the cache; the operator
        evicts them through the API, in the background."""
        ports = self.world.handle.ports
        for attempt in attempts:
            found = attempt.preemption
            if found is None or attempt.policy is None:
                continue
            if found.node is None and not found.clear:
                continue
            ports.preempt(
                attempt.queued.pod,
                found.node,
                found.victims,
                found.clear,
                marks_victims=found.marks_victims,
                profile=attempt.policy.scheduler_name,
            )

    async def _plan(
        self, first: QueuedPod, policy: CompiledPolicy, planner: Enabled, gang: Gang
    ) -> list[Attempt]:
        """The gang's pending members decided together, all or nothing."""
        book = self.world.book
        serving: dict[str, CompiledPolicy | None] = {first.pod.scheduler_name: policy}

        def member(pod: Pod) -> bool:
            # A group's pods are its pods whatever their schedulerName (scheduler-plugins
            # counts them by label): those of every policy that plans gangs are planned
            # together, each decided by the policy serving its own name.
            name = pod.scheduler_name
            if name not in serving:
                serving[name] = book.policy_for(name)
            served = serving[name]
            if served is None or not served.pipeline.gangs:
                return False
            found = served.pipeline.gang_of(pod)
            return found is not None and found[1].key == gang.key

        attempts: list[Attempt] = []
        members = [first]
        async with self.lock:
            token = _PLANNING.set(True)
            try:
                members += self.world.queue.take(member)
                for queued in members:
                    attempt = (
                        Attempt(queued, Outcome.GONE)
                        if self.gone(queued)
                        else await self._cycle(
                            queued, serving.get(queued.pod.scheduler_name) or policy
                        )
                    )
                    attempt.gang = gang
                    attempts.append(attempt)
                placed = [a for a in attempts if a.outcome is Outcome.ASSUMED]
                if len(placed) + gang.placed < gang.min_member:
                    self._give_up(attempts, planner, gang, len(placed), policy)
            except BaseException:
                # The plan broke off (a bug, or the loop stopping): nothing it assumed
                # stays, and the members it took go back to the queue (the first pod
                # is the caller's, as any popped pod).
                self._abandon(attempts, members[1:])
                raise
            finally:
                _PLANNING.reset(token)
        return attempts

    def _abandon(self, attempts: list[Attempt], taken: list[QueuedPod]) -> None:
        for attempt in attempts:
            if attempt.outcome is Outcome.ASSUMED and attempt.state is not None:
                self.unassume(attempt)
        cache = self.world.cache
        for queued in taken:
            uid = queued.pod.uid
            if cache.state_of(uid) is PodState.ASSUMED:  # broken off mid-cycle
                cache.forget(uid)
            self.world.queue.error(queued)

    def unassume(self, attempt: Attempt) -> None:
        """Undo an ``ASSUMED`` attempt before its binding cycle began: no longer waiting
        at Permit, unreserved, the assumption forgotten (its outcome is the caller's)."""
        assert attempt.state is not None and attempt.policy is not None
        assert attempt.node is not None
        if attempt.waiting is not None:
            self.world.handle.waiting.discard(attempt.waiting)
            attempt.waiting = None
        self.unreserve(attempt.queued.pod.uid, attempt.state, attempt.policy, attempt.node)
        attempt.node = attempt.state = None

    def _give_up(
        self,
        attempts: list[Attempt],
        planner: Enabled,
        gang: Gang,
        fitting: int,
        policy: CompiledPolicy,
    ) -> None:
        """Not enough members fit: undo every member's assumption, refuse them all."""
        why = next(
            (
                f"{a.queued.pod.key}: {_why(a)}"
                for a in attempts
                if a.outcome is not Outcome.ASSUMED and _why(a)
            ),
            "",
        )
        plugin = planner.plugin
        members = (
            plugin.members_of(attempts[0].queued.pod, gang)
            if isinstance(plugin, GangPlugin)
            else None
        )
        if members is not None and members < gang.min_member:
            # Not a matter of room: the group's pods are not all there yet.
            head = f"waiting for members, {members} of {gang.min_member} members exist"
        else:
            head = f"{fitting + gang.placed} of {gang.min_member} members would fit"
        message = f'pod group "{gang.key}": {head}; none is placed' + (f" ({why})" if why else "")
        message += self._left_out(attempts, gang, policy)
        refusal = Status.unschedulable(message).with_plugin(planner.name)
        for attempt in attempts:
            if attempt.outcome is Outcome.ASSUMED:
                self.unassume(attempt)
            if attempt.outcome not in (Outcome.GONE, Outcome.PARKED):
                found = attempt.preemption
                if found is not None and found.node is not None:
                    # Its preemption is given up with the group: the room it set aside
                    # is not kept, nobody is evicted.
                    self.world.cache.unnominate(attempt.queued.pod.uid)
                attempt.outcome, attempt.status = Outcome.REJECTED, refusal
                # The nominations it overrode were withdrawn in the cache: the caller
                # still clears them in the API, so that both say the same.
                attempt.preemption = (
                    Preemption(None, clear=found.clear) if found and found.clear else None
                )

    def _left_out(self, attempts: list[Attempt], gang: Gang, policy: CompiledPolicy) -> str:
        """The group's pending pods the plan could not take because no policy that plans
        gangs serves their schedulerName (or they wait for a policy): "" if none."""
        planned = {attempt.queued.pod.uid for attempt in attempts}
        book = self.world.book
        left: list[str] = []
        for pod in self.world.pending_pods():
            if pod.uid in planned:
                continue
            served = book.policy_for(pod.scheduler_name)
            if served is not None and served.pipeline.gangs:
                continue  # planned with the group when it can be (gated, or in a cycle)
            found = policy.pipeline.gang_of(pod)
            if found is not None and found[1].key == gang.key:
                left.append(f'{pod.key} (schedulerName "{pod.scheduler_name}")')
        if not left:
            return ""
        shown = ", ".join(left[:3]) + (f" and {len(left) - 3} more" if len(left) > 3 else "")
        return (
            "; not planned with the group, no policy that plans gangs serves their "
            f"schedulerName: {shown}"
        )

    async def _cycle(self, queued: QueuedPod, policy: CompiledPolicy) -> Attempt:
        pod = queued.pod
        world = self.world
        cache, book = world.cache, world.book
        sampled = bool(self.sample_every) and self._attempts % self.sample_every == 0
        self._attempts += 1
        scheduler = self.scheduler_for(policy)
        scheduler.observe = self.observe if sampled else None
        compiled = self.instrument(policy) if sampled and self.instrument else policy
        started = self.clock()
        went_outside = False

        @asynccontextmanager
        async def outside() -> AsyncIterator[None]:
            nonlocal went_outside
            went_outside = True
            async with self._outside():
                yield

        async with self._holding():
            with cache.snapshot() as cluster:
                decision = await scheduler.schedule(
                    pod, cluster, compiled, outside=outside if policy.extenders else None
                )
                # The chosen node's generation as the decision saw it; unknown once the
                # cluster was let go around an extender's call (writes were applied
                # then): the node is checked again whatever its generation.
                seen = (
                    cluster.nodes[decision.node].generation
                    if decision.node is not None and not went_outside
                    else _UNSEEN
                )
                # Not when the active decision failed (an extender's error): it will not
                # be compared, and a shadow's budget is for decisions that are.
                shadows = await self.shadows.decide(
                    pod, cluster, [] if decision.error else book.shadows_of(pod.scheduler_name)
                )
        # The writes held during the decision are applied now.
        attempt = Attempt(
            queued,
            Outcome.ERROR,
            policy,
            decision,
            shadows,
            elapsed=self.clock() - started,
            sampled=sampled,
        )
        if self.gone(queued):
            attempt.outcome = Outcome.GONE  # deleted or bound elsewhere meanwhile
            return attempt
        if decision.error:
            return attempt
        if decision.node is None:
            attempt.outcome = Outcome.UNSCHEDULABLE
            attempt.preemption = await self._post_filter(decision, policy, scheduler)
            return attempt
        node = decision.node
        stale = self._recheck(decision, node, seen, policy)
        if stale is not None:
            attempt.outcome, attempt.stale = Outcome.STALE, stale
            return attempt
        return self._reserve(attempt, decision, node, policy)

    def _recheck(
        self, decision: Decision, node: str, seen: int, policy: CompiledPolicy
    ) -> str | None:
        """Why a decision taken on the snapshot no longer holds; None when it does.

        Only a node that changed since the snapshot (its generation moved, or ``seen`` is
        ``_UNSEEN``: the decision awaited an extender with the cluster let go) is checked
        again, with the policy's predicates on the state as it is now; and the PVs and
        claims the decision matched must be as it saw them.
        """
        cache = self.world.cache
        info = cache.cluster.nodes.get(node)
        if info is None:
            return f'node "{node}" was deleted'
        if info.generation != seen:
            try:
                reasons = check_node(decision.pod, cache.cluster, policy, node)
            except PluginFailure as exc:
                return str(exc)
            if reasons:
                return f'node "{node}" changed: {"; ".join(reasons)}'
        volumes = decision.volumes
        if volumes is not None and volumes.needs_binding:
            return cache.stale_volumes(volumes)
        return None

    def _reserve(
        self, attempt: Attempt, decision: Decision, node: str, policy: CompiledPolicy
    ) -> Attempt:
        """Assume, Reserve, Permit (steps 6): nothing awaited, nothing held."""
        pod = decision.pod
        cache, pipeline = self.world.cache, policy.pipeline
        state = decision.state or policy.new_cycle(pod, cache.cluster)
        if decision.volumes is not None:
            state.write(VOLUMES_KEY, decision.volumes)
        cache.assume(pod, node)
        status = run_reserve(pipeline, state, pod, node)
        waits: dict[str, float] = {}
        if status is None:
            permit = run_permit(pipeline, state, pod, node)
            status, waits = permit.status, permit.waits
        if status is not None:
            self.unreserve(pod.uid, state, policy, node)
            attempt.outcome, attempt.status = Outcome.REJECTED, status
            return attempt
        attempt.outcome, attempt.node, attempt.state = Outcome.ASSUMED, node, state
        if waits:
            attempt.waiting = self.world.handle.waiting.add(pod, node, waits)
        return attempt

    def unreserve(self, uid: str, state: CycleState, policy: CompiledPolicy, node: str) -> bool:
        """Every reserve plugin's Unreserve (reverse order), then forget the assumption
        (unless the watch already says where the pod is). True if it was forgotten."""
        cache = self.world.cache
        placed = cache.placed_pod(uid)
        pod = placed if placed is not None else state.pod
        run_unreserve(policy.pipeline, state, pod, node)
        if cache.state_of(uid) in (PodState.ASSUMED, PodState.BINDING_FINISHED):
            cache.forget(uid)
            return True
        return False

    def _hook_outside(self, hook: PreemptionHook) -> PreemptionHook:
        """The extenders' say on a preemption, asked with the cluster let go."""

        async def asked(pod: Pod, candidates: dict[str, Victims]) -> Mapping[str, Victims]:
            async with self._outside():
                return await hook(pod, candidates)

        return asked

    async def _post_filter(
        self, decision: Decision, policy: CompiledPolicy, scheduler: Scheduler
    ) -> Preemption | None:
        """PostFilter on a fresh snapshot; the nominations it decides, in the cache.

        Problems that cost the preemption but not the pod (an extender's error) join
        ``decision.extender_errors``.
        """
        pod = decision.pod
        cache = self.world.cache
        problems = decision.extender_errors

        hook = extender_hook(self.extenders, policy.extenders, cache.cluster, problems.append)
        if hook is not None:
            hook = self._hook_outside(hook)
        try:
            async with self._holding():
                with cache.snapshot() as cluster:
                    result = await scheduler.preempt(decision, cluster, policy, process=hook)
        except ExtenderError as exc:
            # As upstream: an extender's failure gives up this preemption, not the pod.
            problems.append(f"no preemption: {exc}")
            return None
        except PluginFailure as exc:
            problems.append(f"no preemption: {exc}")
            return None
        if result is None:
            return None
        if cache.was_deleted(pod.uid) or cache.is_placed(pod.uid):
            return None  # deleted, or placed by someone, while preemption was evaluated
        for other in result.clear:
            self.world.withdraw_nomination(other)
        if result.node is not None:
            cache.nominate(pod, result.node)
        return result


def _why(attempt: Attempt) -> str:
    """What an attempt that placed nothing said (its decision's message, or its status)."""
    if attempt.status is not None and attempt.status.message:
        return attempt.status.message
    if attempt.decision is not None:
        return attempt.decision.message or attempt.decision.error
    return attempt.stale
