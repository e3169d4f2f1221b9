"""Leader election on a ``coordination.k8s.io/v1`` Lease, as client-go's leaderelection.

Several replicas of the operator may run; only the one holding the Lease schedules.
:class:`LeaderElector` runs this loop (``run()``)::

    ACQUIRING ──try_acquire_or_renew() ok──> on_started() ──> LEADING
        ^   └── not ok: sleep retry_period, try again          │
        │                                                      │ every retry_period:
        │                                                      │ try_acquire_or_renew()
        └──── on_stopped() <── no successful renewal for renew_deadline,
                               or someone else is seen holding the Lease
    cancelled while LEADING: on_stopped(), then release the Lease
    (holderIdentity "", leaseDurationSeconds 1) so a standby takes over at its next try.

One step (:meth:`LeaderElector.try_acquire_or_renew`) reads the Lease and writes it back:

- 404: create it with us as holder (a 409 AlreadyExists means another replica was first).
- held by someone else: it is free only when ``leaseDurationSeconds`` have passed *by our
  own monotonic clock* since we first observed its current record (holder, renewTime,
  ...). This is client-go's ``observedTime`` rule: the renewTime written by another
  machine is never compared with our wall clock, so clock skew between nodes cannot make
  a live lease look expired. A standby therefore waits a full lease duration after it
  last saw the record change, even if the record was already old when it first looked.
- free, or already ours: replace it with us as holder and a fresh renewTime, sending the
  resourceVersion we read. If another replica wrote in between, the API server answers
  409 Conflict and we are not leader: of two racing replicas exactly one wins.

The guarantee, and its limit. Renewal time is taken *before* the write is sent, so any
other replica can only see the lease as expired ``lease_duration`` after that instant
(it observes the record after the write lands). The leader steps down, and
:attr:`LeaderElector.is_leader` turns False, ``renew_deadline`` after that same instant;
since ``renew_deadline < lease_duration``, a leader stops before anyone else may start,
provided both clocks advance at about the same rate. A leader that was paused (GC,
SIGSTOP, an overloaded node) and resumes after its lease expired must not act: the
loop's ``on_stopped`` may not have run yet at that moment, but ``is_leader`` compares
the clock with the last successful renewal, so it is already False. The binding path
therefore checks ``is_leader`` right before each binding, and :attr:`LeaderElector.term`
(one more each time the replica comes to lead): a decision is bound only in the term it
was taken in, not after the Lease was lost and taken back. What remains is the gap
between that check and the API server receiving the binding; a Lease cannot fence it
(there is no token the API server checks). A binding sent from a stale leader in that
gap still cannot bind a pod twice (the API server answers 409 to a second binding), at
worst it places one pod from a slightly stale view of the cluster, which the kubelet
checks again on admission.

Where it runs: the operator runs the elector on a thread of its own, with its own event
loop and API client (:class:`ElectionThread`), as kube-scheduler renews on a goroutine
of its own; ``on_started``/``on_stopped`` are handed to the scheduling loop thread-safely.
A synchronous plugin holding the scheduling loop for longer than ``renew_deadline``
therefore costs its own pods' time, not the Lease.

``on_started`` runs while renewals continue (it may take time, e.g. to list the
cluster) and is cancelled if leadership is lost before it returns. ``on_stopped`` is
awaited before anything else happens (no renewal, no re-acquisition, no release): it
must stop scheduling at once, and promptly. ``identity`` must be unique per process: a
process seeing its own identity in the Lease renews it at once (:func:`..options.default_identity`
gives ``hostname_uuid`` as kube-scheduler does).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import math
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from .kubeapi import Api

logger = logging.getLogger(__name__)

LEASE_API_VERSION = "coordination.k8s.io/v1"


def now_utc() -> datetime:
    """The wall clock, for the timestamps written into the Lease (never compared)."""
    return datetime.now(UTC)


def micro_time(moment: datetime) -> str:
    """RFC3339 MicroTime as the API server writes it: ``2024-05-01T12:00:00.000000Z``."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# The part of a Lease spec whose change counts as a new observation (client-go compares
# the whole leader election record).
_Record = tuple[str, Any, Any, Any, Any]


def _record_of(spec: Mapping[str, Any]) -> _Record:
    return (
        str(spec.get("holderIdentity") or ""),
        spec.get("leaseDurationSeconds"),
        spec.get("acquireTime"),
        spec.get("renewTime"),
        spec.get("leaseTransitions"),
    )


class LeaderElector:
    """Acquires and renews one Lease; see the module docstring for the protocol."""

    def __init__(
        self,
        api: Api,
        *,
        namespace: str,
        name: str,
        identity: str,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], datetime] = now_utc,
    ) -> None:
        if not identity:
            raise ValueError("leader election: identity must not be empty")
        if not 0 < renew_deadline < lease_duration:
            # The safety argument needs the leader to give up before the lease can expire.
            raise ValueError(
                f"leader election: renew_deadline ({renew_deadline}) must be positive "
                f"and less than lease_duration ({lease_duration})"
            )
        if not 0 < retry_period < renew_deadline:
            raise ValueError(
                f"leader election: retry_period ({retry_period}) must be positive "
                f"and less than renew_deadline ({renew_deadline})"
            )
        self.api = api
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self._clock = clock
        self._wall_clock = wall_clock
        # Integral seconds for the API; rounded up so others never wait less than we think.
        self._duration_seconds = max(1, math.ceil(lease_duration))
        self._observed: _Record | None = None
        self._observed_at = 0.0  # our clock when self._observed was first seen
        # Whether the last record we wrote or read names us, and our clock just before
        # our last successful write: written by the elector's thread, read by the
        # scheduling loop's (is_leader), so always changed together, under the lock.
        self._lock = threading.Lock()
        self._holding = False
        self._renewed_at = float("-inf")
        #: How many times we became leader: a decision taken in one term must not be
        #: acted on in the next (the Lease lost and taken again meanwhile).
        self._term = 0

    @property
    def is_leader(self) -> bool:
        """True while we hold the Lease and renewed it less than renew_deadline ago.

        Time-based on purpose: after a pause longer than renew_deadline this is False
        even before the run loop has noticed and called ``on_stopped``. Safe to read
        from any thread (the scheduling loop's, while the elector runs in its own).
        """
        with self._lock:
            return self._holding and self._clock() - self._renewed_at < self.renew_deadline

    @property
    def term(self) -> int:
        """The current leadership term while leader (1 the first time we lead, one more
        each time we lead again), 0 while not: a caller that took the term before a long
        piece of work acts on the work's result only if the term is the same after it."""
        with self._lock:
            leading = self._holding and self._clock() - self._renewed_at < self.renew_deadline
            return self._term if leading else 0

    def _set_holding(self, holding: bool, renewed_at: float | None = None) -> None:
        with self._lock:
            leading = self._holding and self._clock() - self._renewed_at < self.renew_deadline
            if holding and not leading:
                self._term += 1  # leading again (or for the first time): a new term
            self._holding = holding
            if renewed_at is not None:
                self._renewed_at = renewed_at

    @property
    def leader(self) -> str:
        """The holder identity last observed in the Lease ("" if none or not read yet)."""
        return self._observed[0] if self._observed is not None else ""

    async def try_acquire_or_renew(self) -> bool:
        """One read-and-write of the Lease; True if we hold it afterwards.

        API failures (exceptions included) count as "not acquired": the caller's
        deadline decides what a run of failures means.
        """
        try:
            return await self._step()
        except Exception:
            logger.warning(
                "leader election: lease %s/%s: request failed",
                self.namespace,
                self.name,
                exc_info=True,
            )
            return False

    async def _step(self) -> bool:
        started = self._clock()
        lease = await self.api.get_lease(self.namespace, self.name)
        if lease is None:
            spec = self._spec(acquire_time=None, transitions=0)
            body = {
                "apiVersion": LEASE_API_VERSION,
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": spec,
            }
            status = await self.api.create_lease(self.namespace, body)
            return self._written(status, spec, started)

        spec = dict(lease.get("spec") or {})
        record = _record_of(spec)
        if record != self._observed:
            self._observed = record
            self._observed_at = self._clock()
        holder = record[0]
        if holder != self.identity:
            self._set_holding(False)
        if holder and holder != self.identity:
            duration = spec.get("leaseDurationSeconds")
            # A lease without a duration is treated as ours would be: never shorter.
            seconds = float(duration) if duration else self.lease_duration
            if self._clock() < self._observed_at + seconds:
                return False

        if holder == self.identity:
            new_spec = self._spec(
                acquire_time=spec.get("acquireTime"),
                transitions=int(spec.get("leaseTransitions") or 0),
            )
        else:
            new_spec = self._spec(
                acquire_time=None, transitions=int(spec.get("leaseTransitions") or 0) + 1
            )
        body = dict(lease)
        body["spec"] = new_spec
        # metadata keeps the resourceVersion we read: the API server's compare-and-swap.
        status = await self.api.replace_lease(self.namespace, self.name, body)
        return self._written(status, new_spec, started)

    def _spec(self, *, acquire_time: Any, transitions: int) -> dict[str, Any]:
        now = micro_time(self._wall_clock())
        return {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": self._duration_seconds,
            "acquireTime": acquire_time or now,
            "renewTime": now,
            "leaseTransitions": transitions,
        }

    def _written(self, status: int, spec: Mapping[str, Any], started: float) -> bool:
        if status in (200, 201):
            self._observed = _record_of(spec)
            self._observed_at = self._clock()
            self._set_holding(True, started)
            return True
        if status == 409:
            logger.debug(
                "leader election: lease %s/%s: lost a race (409)", self.namespace, self.name
            )
        else:
            logger.warning(
                "leader election: lease %s/%s: write answered HTTP %s",
                self.namespace,
                self.name,
                status,
            )
        return False

    async def run(
        self,
        on_started: Callable[[], Awaitable[None]],
        on_stopped: Callable[[], Awaitable[None]],
    ) -> None:
        """Acquire, lead, lose, acquire again... until cancelled; never ends otherwise.

        ``on_started`` is run when we become leader (renewals go on meanwhile),
        ``on_stopped`` when we stop (renewals failed for renew_deadline, another holder
        was seen, ``on_started`` failed, or cancellation), so the two always alternate.
        A failure anywhere (an API error, ``on_started`` raising) is logged, the Lease is
        given up if we held it, and the election starts over after ``retry_period``:
        the loop never ends silently. On cancellation the Lease is released after
        ``on_stopped`` returned, so the next leader cannot start while we still act;
        ``on_stopped`` is not called on cancellation if we were not leading.
        """
        leading = False
        try:
            while True:
                failed = False
                try:
                    await self._acquire()
                    leading = True
                    logger.info(
                        "leader election: %s acquired lease %s/%s",
                        self.identity,
                        self.namespace,
                        self.name,
                    )
                    await self._lead(on_started)
                    logger.warning(
                        "leader election: %s lost lease %s/%s",
                        self.identity,
                        self.namespace,
                        self.name,
                    )
                except Exception:
                    failed = True
                    logger.exception(
                        "leader election: %s: leading lease %s/%s failed; stepping down and "
                        "trying again in %.0f s",
                        self.identity,
                        self.namespace,
                        self.name,
                        self.retry_period,
                    )
                if leading:
                    leading = False
                    await self._stop(on_stopped)
                if failed:
                    # Hand the Lease to a standby rather than sit on it unable to lead.
                    await self.release()
                    await asyncio.sleep(self.retry_period)
        finally:
            if leading:
                await self._stop(on_stopped)
            # Also when not leading: a create/replace cancelled in flight may have landed.
            await self.release()

    async def _stop(self, on_stopped: Callable[[], Awaitable[None]]) -> None:
        self._step_down()
        try:
            await on_stopped()
        except Exception:
            logger.exception("leader election: stopping after losing the lease failed")

    async def _lead(self, on_started: Callable[[], Awaitable[None]]) -> None:
        """Run ``on_started`` and the renewals side by side; return when leadership is lost.

        Side by side, because ``on_started`` may take a while (listing the cluster): the
        lease must keep being renewed meanwhile. If leadership is lost before
        ``on_started`` returns, it is cancelled; its exception, if any, propagates.
        """
        # ensure_future: on_started may return any awaitable, not only a coroutine.
        starting = asyncio.ensure_future(on_started())
        renewing = asyncio.create_task(self._renew(), name="leader-election:renew")
        try:
            done, _ = await asyncio.wait({starting, renewing}, return_when=asyncio.FIRST_COMPLETED)
            if starting in done:
                starting.result()
                await renewing
        finally:
            starting.cancel()
            renewing.cancel()
            await asyncio.gather(starting, renewing, return_exceptions=True)

    async def _acquire(self) -> None:
        while True:
            try:
                # A hung request must not stall the loop forever; the API client's own
                # timeouts may be long.
                ok = await asyncio.wait_for(self.try_acquire_or_renew(), self.renew_deadline)
            except TimeoutError:
                ok = False
            if ok:
                return
            await asyncio.sleep(self.retry_period)

    async def _renew(self) -> None:
        """Return when leadership is lost; renew every retry_period until then."""
        while True:
            remaining = self._renewed_at + self.renew_deadline - self._clock()
            await asyncio.sleep(max(0.0, min(self.retry_period, remaining)))
            remaining = self._renewed_at + self.renew_deadline - self._clock()
            if remaining <= 0:
                return
            try:
                # A renewal that cannot finish before the deadline is a failed renewal.
                ok = await asyncio.wait_for(self.try_acquire_or_renew(), remaining)
            except TimeoutError:
                ok = False
            if not ok and self.leader not in ("", self.identity):
                return  # someone else holds it: no point waiting for the deadline

    def _step_down(self) -> None:
        self._set_holding(False, float("-inf"))

    async def release(self) -> bool:
        """Give the Lease up if it still names us, so a standby need not wait it out.

        Reads the Lease first (for its current resourceVersion): if it names someone
        else, there is nothing of ours to release.
        """
        self._step_down()
        try:
            lease = await asyncio.wait_for(
                self.api.get_lease(self.namespace, self.name), self.renew_deadline
            )
            if lease is None:
                return False
            spec = dict(lease.get("spec") or {})
            if spec.get("holderIdentity") != self.identity:
                return False
            now = micro_time(self._wall_clock())
            body = dict(lease)
            body["spec"] = {
                "holderIdentity": "",
                "leaseDurationSeconds": 1,
                "acquireTime": now,
                "renewTime": now,
                "leaseTransitions": int(spec.get("leaseTransitions") or 0),
            }
            status = await asyncio.wait_for(
                self.api.replace_lease(self.namespace, self.name, body), self.renew_deadline
            )
        except Exception:
            logger.warning(
                "leader election: releasing lease %s/%s failed",
                self.namespace,
                self.name,
                exc_info=True,
            )
            return False
        if status not in (200, 201):
            logger.warning(
                "leader election: releasing lease %s/%s: HTTP %s", self.namespace, self.name, status
            )
            return False
        self._observed = _record_of(body["spec"])
        self._observed_at = self._clock()
        logger.info(
            "leader election: %s released lease %s/%s", self.identity, self.namespace, self.name
        )
        return True


#: What :class:`ElectionThread` is given to make its own API client, in its own loop:
#: the client, and what closes it.
Connect = Callable[[], Awaitable[tuple[Api, Callable[[], Awaitable[None]]]]]


class ElectionThread:
    """Runs a :class:`LeaderElector` on a thread of its own, with its own event loop
    and its own API client, as kube-scheduler renews its Lease on a goroutine of its
    own: a scheduling cycle holding the operator's loop (a slow synchronous plugin)
    cannot make the Lease expire, and so cannot make the leader drop what it decided.

    :meth:`run` is awaited on the operator's loop (the *main* loop) and behaves as
    :meth:`LeaderElector.run` there: it never ends unless cancelled (or its thread
    fails), ``on_started`` and ``on_stopped`` are coroutines run *on the main loop*
    (handed over with ``call_soon_threadsafe``), and they alternate. The elector waits,
    in its thread, for each to end on the main loop before going on, as it would on
    one loop: after losing the Lease it does not try to take it again before the
    scheduling stopped, even when the main loop is held meanwhile. What is decided on
    a held loop after the loss is not bound: :attr:`LeaderElector.is_leader`, which the
    binding path checks before each binding, reads the elector's state under a lock and
    turns False the moment the loss is seen (or the renew deadline passed), whatever
    the main loop is doing.

    ``connect`` makes the API client in the thread's loop (an aiohttp session belongs
    to the loop it was made in); every call it makes must have a deadline.
    """

    def __init__(self, elector: LeaderElector, connect: Connect) -> None:
        self.elector = elector
        self.connect = connect

    async def run(
        self,
        on_started: Callable[[], Awaitable[None]],
        on_stopped: Callable[[], Awaitable[None]],
    ) -> None:
        main = asyncio.get_running_loop()
        ended: concurrent.futures.Future[None] = concurrent.futures.Future()
        # The thread's loop and its task, once it runs (to cancel it from here).
        running: concurrent.futures.Future[tuple[asyncio.AbstractEventLoop, asyncio.Task[None]]]
        running = concurrent.futures.Future()

        async def elect() -> None:
            task = asyncio.current_task()
            assert task is not None
            running.set_result((asyncio.get_running_loop(), task))
            api, close = await self.connect()
            self.elector.api = api
            try:
                await self.elector.run(
                    lambda: _on_loop(main, on_started), lambda: _on_loop(main, on_stopped)
                )
            finally:
                with contextlib.suppress(Exception):
                    await close()

        def thread() -> None:
            try:
                with asyncio.Runner() as runner:
                    runner.run(elect())
            except BaseException as exc:  # handed to the main loop
                if not running.done():
                    running.set_exception(exc)
                ended.set_exception(exc)
            else:
                ended.set_result(None)

        threading.Thread(target=thread, name="leader-election", daemon=True).start()
        done = asyncio.wrap_future(ended)
        try:
            await asyncio.shield(done)
        except asyncio.CancelledError:
            if not done.done():
                with contextlib.suppress(BaseException):
                    loop, task = await asyncio.wrap_future(running)
                    loop.call_soon_threadsafe(task.cancel)
                # on_stopped runs on this loop, and the Lease is released, meanwhile.
                with contextlib.suppress(BaseException):
                    await done
            raise


async def _on_loop(loop: asyncio.AbstractEventLoop, make: Callable[[], Awaitable[None]]) -> None:
    """Run ``make()`` as a task on ``loop`` (another thread's) and wait for its end here.

    Cancelled here, the task there is cancelled (thread-safely) and its end still
    waited for, so that what it does in its ``finally`` is over when this returns.
    """
    ended: concurrent.futures.Future[None] = concurrent.futures.Future()
    tasks: list[asyncio.Future[None]] = []

    def finished(task: asyncio.Future[None]) -> None:
        if task.cancelled():
            ended.set_exception(RuntimeError("cancelled on the scheduler's loop"))
        elif (error := task.exception()) is not None:
            ended.set_exception(error)
        else:
            ended.set_result(None)

    def start() -> None:
        task = asyncio.ensure_future(make())
        tasks.append(task)
        task.add_done_callback(finished)

    def cancel() -> None:
        for task in tasks:
            task.cancel()

    loop.call_soon_threadsafe(start)
    done = asyncio.wrap_future(ended)
    try:
        await asyncio.shield(done)
    except asyncio.CancelledError:
        if not done.done():
            loop.call_soon_threadsafe(cancel)  # after start(): callbacks run in order
            with contextlib.suppress(BaseException):
                await done
        raise
