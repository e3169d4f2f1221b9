"""The scheduling queue: active, backoff and unschedulable pods, as kube-scheduler's.

Every pending pod is in exactly one of four places::

      add() ─> ACTIVE ─pop()─> (being scheduled) ─done()─> (gone: assumed)
                ^  ^  ^             │
                │  │  └─ retry() ───┤  (simulate: it preempted, decide it again now)
      flush():  │  │                ├─ unschedulable(), no move meanwhile ─> UNSCHEDULABLE
      backoff   │  │                └─ unschedulable() after a move, error() ─> BACKOFF
      expired   │  │                                                            │
                │  └── move_all(): something changed that could help ─────────┤
                └───── flush(): waited 60 s in UNSCHEDULABLE ──────────────────┘

      add() of a pod no policy serves ─> WAITING ─reassess(): a policy serves it─> ACTIVE
      reassess(): its policy is gone ─> WAITING (from ACTIVE, BACKOFF, UNSCHEDULABLE)
      going ACTIVE, a PreEnqueue plugin says no ─> GATED ─the pod or the cluster
                                                          changed, it says yes─> ACTIVE

* ACTIVE is a heap: higher ``spec.priority`` first, then the older pod (creation time),
  then arrival order.
* BACKOFF holds a pod until ``1 s x 2^(attempts-1)`` (at most 10 s) after its last
  attempt came back; it then goes back to ACTIVE.
* UNSCHEDULABLE holds pods that fit nowhere until the cluster changes in a way that could
  help them (:meth:`move_all`, or :meth:`move` for the pods a change concerns; which
  change moves which pods is decided by ``world.py``'s queueing hints) or until they
  have waited ``unschedulable_timeout`` (60 s). :meth:`on_event` is kube-scheduler
  v1.34's QueueingHints: a pod remembers the plugins that rejected it
  (:meth:`unschedulable`'s ``plugins``) and a cluster event moves it only if one of them
  registered the event and its hint says Queue (:attr:`registrations`, set by the
  world); a pod with no known rejecting plugins, or rejected by one that registers
  nothing, moves as before hints (the event's ``legacy`` test: every pod, unless the
  world says otherwise).
* A pod whose attempt started before a move request is sent to BACKOFF rather than
  UNSCHEDULABLE: the change may have come too late for that attempt to see it
  (kube-scheduler's ``moveRequestCycle``). A pod's backoff counts from when it came
  back to the queue (a pod held at Permit for 10 s still backs off when refused).
* An assumed pod forgotten in its binding cycle frees its room: :meth:`forgotten`
  moves every other unschedulable pod, as an assigned pod's deletion does
  (kube-scheduler's ``AssignedPodDelete``), after the forgotten pod was sent back.
* WAITING holds pending pods whose ``spec.schedulerName`` no accepted policy serves:
  a policy accepted later takes them (:meth:`reassess`), and a pod whose policy is
  deleted goes back there, so no pending pod is ever dropped.
* :meth:`delete` removes a pod wherever it is; :meth:`add` of a queued pod replaces the
  queued copy (and gives an unschedulable pod a new chance if its spec changed).
* GATED holds pods a PreEnqueue plugin of their policy keeps out of the active queue
  (kube-scheduler's gated pods): asked again when the pod changes, when the cluster
  changes (every move), and every ``unschedulable_timeout``.
* The order is :func:`.admission.queue_key` (priority, then the older pod), the one
  ``simulate`` uses, then arrival; except that a pod whose attempt *failed* (an error,
  a timeout: :meth:`error`) comes back behind the pods created before it came back, so
  that a hung peer is not tried again ahead of every newer pod (kube-scheduler stamps a
  re-queued pod with the time it came back).
* A policy with its own QueueSort plugin orders its pods by the plugin's ``less`` (a
  heap of their own); between the heads of the heaps, the order above decides.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import logging
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..engine.events import QUEUE, ClusterEvent, ClusterEventWithHint
from ..engine.interface import QueuedPodInfo, QueueSortPlugin
from ..objects import Pod

logger = logging.getLogger(__name__)

INITIAL_BACKOFF = 1.0
MAX_BACKOFF = 10.0
UNSCHEDULABLE_TIMEOUT = 60.0


@dataclass(slots=True)
class QueuedPod:
    """A pending pod as the queue holds it: the pod and its attempts so far."""

    pod: Pod
    attempts: int = 0
    #: When the pod first entered the queue (for the end-to-end latency metric).
    enqueued: float = 0.0
    last_attempt: float = 0.0
    #: The scheduling cycle in which it was last popped.
    cycle: int = 0
    sequence: int = field(default=0)
    #: Deleted while being scheduled: error() and unschedulable() must not bring it back.
    deleted: bool = False
    #: Its place among pods of equal priority (epoch seconds): the pod's creation, or
    #: when it came back after a failed attempt, whichever is later.
    order: float = 0.0
    #: When it last came back to the queue after an attempt (kube-scheduler's
    #: Timestamp, refreshed on re-add): its backoff counts from then, so a pod that
    #: waited at Permit does not come back with its backoff already spent.
    returned: float = 0.0
    #: The plugins that rejected it in its last attempt (kube-scheduler's
    #: unschedulablePlugins); None: not known (an error, a legacy predicate's message
    #: only), and then any change that could help wakes it, as before hints.
    rejected: frozenset[str] | None = None


#: Plugin name -> what it registers (None: it registers nothing, any event may help).
Registrations = Mapping[str, Sequence[ClusterEventWithHint] | None]


class SchedulingQueue:
    """Pending pods in four parts: active, backoff, unschedulable, waiting (module
    docstring)."""

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        initial_backoff: float = INITIAL_BACKOFF,
        max_backoff: float = MAX_BACKOFF,
        unschedulable_timeout: float = UNSCHEDULABLE_TIMEOUT,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.clock = clock
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.unschedulable_timeout = unschedulable_timeout
        self._active: list[tuple[int, float, int, str]] = []  # heap of (queue_key, seq, uid)
        #: Pods of policies with their own QueueSort plugin: one heap per plugin.
        self._sorted: dict[int, tuple[QueueSortPlugin, list[_Sorted]]] = {}
        self._gated: dict[str, str] = {}  # uid -> why a PreEnqueue plugin keeps it out
        #: The pod's policy's QueueSort plugin (None: the order above); PreEnqueue's
        #: verdict on a pod (None: it may go active). Set by the world.
        self.sorter_of: Callable[[Pod], QueueSortPlugin | None] = _no_sorter
        self.pre_enqueue: Callable[[Pod], str | None] = _no_gate
        #: The events the plugins of the pod's policy register (set by the world).
        self.registrations: Callable[[Pod], Registrations] = _no_registrations
        #: How many unschedulable pods cluster events moved, and left asleep.
        self.hint_moves = 0
        self.hint_skips = 0
        self.wall_clock = wall_clock
        self._backoff: dict[str, float] = {}  # uid -> ready time
        #: (ready time, uid) of the backing-off pods, soonest first; an entry whose uid
        #: left BACKOFF, or holds another time, is skipped (flush looks at the due ones
        #: only, not at every pod backing off).
        self._backoff_due: list[tuple[float, str]] = []
        #: uid -> since; in insertion order, which is time order (a pod always leaves it
        #: before it enters it again): flush looks at the oldest ones only.
        self._unschedulable: dict[str, float] = {}
        self._waiting: set[str] = set()  # no policy serves their schedulerName
        self._pods: dict[str, QueuedPod] = {}  # every queued pod (any part) by uid
        self._in_flight: dict[str, QueuedPod] = {}  # popped, being scheduled
        self._seq = itertools.count()
        self.scheduling_cycle = 0
        self._move_request_cycle = -1
        self._wake = asyncio.Event()
        self._gated_asked = 0.0

    # -- queries ---------------------------------------------------------------------

    def __contains__(self, uid: str) -> bool:
        return uid in self._pods or uid in self._in_flight

    def get(self, uid: str) -> Pod | None:
        """The copy of a queued (or being scheduled) pod the queue holds."""
        queued = self._pods.get(uid) or self._in_flight.get(uid)
        return queued.pod if queued is not None else None

    def where(self, uid: str) -> str | None:
        if uid in self._in_flight:
            return "in-flight"
        if uid not in self._pods:
            return None
        if uid in self._waiting:
            return "waiting"
        if uid in self._gated:
            return "gated"
        if uid in self._backoff:
            return "backoff"
        if uid in self._unschedulable:
            return "unschedulable"
        return "active"

    def lengths(self) -> dict[str, int]:
        """Pods per part; ``waiting``: pods no policy serves (not kube-scheduler's)."""
        backoff = len(self._backoff)
        unschedulable = len(self._unschedulable)
        waiting = len(self._waiting)
        gated = len(self._gated)
        return {
            "active": len(self._pods) - backoff - unschedulable - waiting - gated,
            "backoff": backoff,
            "unschedulable": unschedulable,
            "waiting": waiting,
            "gated": gated,
        }

    def gated_reason(self, uid: str) -> str | None:
        """Why a PreEnqueue plugin keeps the pod out of the active queue (None: it does not)."""
        return self._gated.get(uid)

    def pods(self, scheduler_name: str | None = None) -> list[Pod]:
        """The queued pods (not those being scheduled), optionally of one schedulerName."""
        return [
            q.pod
            for q in self._pods.values()
            if scheduler_name is None or q.pod.scheduler_name == scheduler_name
        ]

    def others_ready(self, scheduler_name: str) -> bool:
        """Whether a pod of another schedulerName is ready to be decided now (active)."""
        parked = (self._backoff, self._unschedulable, self._waiting, self._gated)
        return any(
            q.pod.scheduler_name != scheduler_name and not any(uid in part for part in parked)
            for uid, q in self._pods.items()
        )

    def pending(self) -> Iterator[Pod]:
        """Every pending pod the queue knows: those being scheduled first (a gang's
        members, while it is planned), then the queued ones (any part)."""
        for queued in self._in_flight.values():
            yield queued.pod
        for queued in self._pods.values():
            yield queued.pod

    def backoff_duration(self, attempts: int) -> float:
        if attempts <= 0:
            return 0.0
        return float(min(self.initial_backoff * 2.0 ** (attempts - 1), self.max_backoff))

    # -- adding and removing ---------------------------------------------------------

    def add(self, pod: Pod, *, served: bool = True) -> bool:
        """A pending pod appeared, re-appeared in a re-list, or changed.

        A known pod keeps its place and gets the new copy (an unschedulable one whose
        spec changed gets a new try). ``served``: a policy serves its schedulerName;
        if not, a new pod waits in WAITING. Returns True for a pod new to the queue.
        """
        uid = pod.uid
        if uid in self._in_flight:
            self._in_flight[uid].pod = pod
            return False
        queued = self._pods.get(uid)
        if queued is not None:
            self._update(queued, pod)
            return False
        queued = QueuedPod(pod, enqueued=self.clock(), sequence=next(self._seq), order=pod.created)
        self._pods[uid] = queued
        if served:
            self._push_active(queued)
        else:
            self._waiting.add(uid)
        return True

    def _update(self, queued: QueuedPod, pod: Pod) -> None:
        uid = pod.uid
        # The fingerprint digests spec, labels (and namespace, controller): it differs
        # when what the scheduler decides on changed, not on a status update.
        spec_changed = (
            bool(queued.pod.fingerprint)
            and bool(pod.fingerprint)
            and queued.pod.fingerprint != pod.fingerprint
        )
        queued.pod = pod
        if uid in self._unschedulable and spec_changed:
            del self._unschedulable[uid]
            self._to_backoff_or_active(queued)
            self._wake.set()  # pop() may be asleep until an unschedulable pod's timeout
        elif uid in self._gated:
            del self._gated[uid]  # the pod changed: asked again
            self._push_active(queued)

    def delete(self, uid: str) -> None:
        in_flight = self._in_flight.pop(uid, None)
        if in_flight is not None:
            in_flight.deleted = True
        if self._pods.pop(uid, None) is not None:
            self._backoff.pop(uid, None)
            self._unschedulable.pop(uid, None)
            self._waiting.discard(uid)
            self._gated.pop(uid, None)
            # Its heap key stays behind and is skipped when popped.

    def reassess(self, serves: Callable[[str], bool]) -> list[Pod]:
        """Policies changed: move pods between WAITING and the scheduling parts.

        Returns the pods that lost their policy (now WAITING), for people to be told.
        """
        parked: list[Pod] = []
        for uid, queued in self._pods.items():
            served = serves(queued.pod.scheduler_name)
            if uid in self._waiting:
                if served:
                    self._waiting.discard(uid)
                    self._push_active(queued)
            elif not served:
                self._backoff.pop(uid, None)
                self._unschedulable.pop(uid, None)
                self._gated.pop(uid, None)
                self._waiting.add(uid)
                parked.append(queued.pod)
        self._resort()
        return parked

    def _resort(self) -> None:
        """Policies changed: the active pods are ordered again, each by its policy's
        QueueSort plugin now, and gated pods are asked again."""
        active = [
            queued
            for uid, queued in self._pods.items()
            if uid not in self._backoff
            and uid not in self._unschedulable
            and uid not in self._waiting
        ]
        self._active = []
        self._sorted = {}
        self._gated = {}
        for queued in active:
            self._push_active(queued)

    # -- the scheduling loop's side ------------------------------------------------------

    def _live(self, uid: str) -> QueuedPod | None:
        """The active pod a heap entry stands for; None for a stale entry (the pod was
        deleted, or moved elsewhere since the entry was pushed)."""
        queued = self._pods.get(uid)
        if (
            queued is None
            or uid in self._backoff
            or uid in self._unschedulable
            or uid in self._waiting
            or uid in self._gated
        ):
            return None
        return queued

    def _next_uid(self) -> str | None:
        """Take the next pod's entry off its heap: the best head by priority and order."""
        heads: list[tuple[tuple[int, float, int], list[Any]]] = []
        active = self._active
        while active and self._live(active[0][3]) is None:
            heapq.heappop(active)
        if active:
            top = active[0]
            heads.append(((top[0], top[1], top[2]), active))
        for _, heap in self._sorted.values():
            while heap and self._live(heap[0].queued.pod.uid) is None:
                heapq.heappop(heap)
            if heap:
                queued = heap[0].queued
                heads.append(((-queued.pod.priority, queued.order, queued.sequence), heap))
        if not heads:
            return None
        _, heap = min(heads, key=lambda head: head[0])
        entry = heapq.heappop(heap)
        return entry[3] if isinstance(entry, tuple) else entry.queued.pod.uid

    def pop_nowait(self) -> QueuedPod | None:
        self.flush()
        while (uid := self._next_uid()) is not None:
            queued = self._pods.get(uid)
            if queued is not None:
                return self._start(queued)
        return None

    async def pop(self) -> QueuedPod:
        """The next pod to schedule, waiting until one is ready."""
        while True:
            queued = self.pop_nowait()
            if queued is not None:
                return queued
            self._wake.clear()
            # asyncio.timeout, not wait_for: on Python 3.11 wait_for loses a cancellation
            # that arrives as the wait ends (the stopping loop would wait on forever).
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._next_wakeup()):
                    await self._wake.wait()

    def _next_wakeup(self) -> float:
        now = self.clock()
        self._drop_stale_due()
        candidates = [self._backoff_due[0][0] - now] if self._backoff_due else []
        oldest = next(iter(self._unschedulable.values()), None)
        if oldest is not None:
            candidates.append(oldest + self.unschedulable_timeout - now)
        return max(0.01, min(candidates, default=1.0))

    def take(self, which: Callable[[Pod], bool]) -> list[QueuedPod]:
        """Pop every queued pod ``which`` selects (active, backing off or unschedulable;
        not gated nor waiting for a policy), in queue order, as :meth:`pop_nowait` pops
        one: the members of a gang, planned together with the one just popped."""
        found = [
            queued
            for uid, queued in self._pods.items()
            if uid not in self._waiting and uid not in self._gated and which(queued.pod)
        ]
        found.sort(key=lambda q: (-q.pod.priority, q.order, q.sequence))
        for queued in found:
            self._backoff.pop(queued.pod.uid, None)
            self._unschedulable.pop(queued.pod.uid, None)
            self._start(queued)
        return found

    def _start(self, queued: QueuedPod) -> QueuedPod:
        """The pod leaves the queue to be scheduled (a new scheduling cycle)."""
        uid = queued.pod.uid
        del self._pods[uid]
        self.scheduling_cycle += 1
        queued.cycle = self.scheduling_cycle
        queued.attempts += 1
        queued.last_attempt = self.clock()
        self._in_flight[uid] = queued
        return queued

    def done(self, uid: str) -> None:
        """The pod was scheduled (assumed): it leaves the queue."""
        self._in_flight.pop(uid, None)

    def unschedulable(self, queued: QueuedPod, plugins: Collection[str] | None = None) -> None:
        """The attempt found no node, or its binding cycle was refused (a Permit plugin
        rejected it, or its wait timed out: the pod left the queue when it was assumed,
        and comes back, as kube-scheduler's AddUnschedulableIfNotPresent).

        ``plugins``: those that rejected it (None or empty: not known; any change that
        could help wakes it)."""
        uid = queued.pod.uid
        queued.rejected = frozenset(plugins) if plugins else None
        self._in_flight.pop(uid, None)
        if queued.deleted or uid in self._pods:
            return  # deleted while being scheduled, or already back (re-added)
        self._pods[uid] = queued
        queued.returned = self.clock()
        if self._move_request_cycle >= queued.cycle:
            self._back_off(uid, queued.returned + self.backoff_duration(queued.attempts))
        else:
            self._unschedulable[uid] = self.clock()
        self._wake.set()

    def retry(self, queued: QueuedPod) -> None:
        """Decide the popped pod again at once, at its place in the order (``simulate``,
        after the pod preempted: the room it made is there for its next attempt)."""
        uid = queued.pod.uid
        if self._in_flight.pop(uid, None) is None or uid in self._pods:
            return  # deleted while being scheduled, or already back (re-added)
        self._pods[uid] = queued
        self._push_active(queued)

    def hold(self, queued: QueuedPod, until: float) -> None:
        """The popped pod is not decided now (its policy's cycles are slow, see
        ``runtime/scheduling.py``): back off until ``until``, the attempt not counted."""
        uid = queued.pod.uid
        if self._in_flight.pop(uid, None) is None or uid in self._pods:
            return  # deleted while being scheduled, or already back (re-added)
        queued.attempts = max(0, queued.attempts - 1)
        self._pods[uid] = queued
        self._back_off(uid, until)
        self._wake.set()

    def park(self, queued: QueuedPod) -> None:
        """The popped pod's policy is gone: it waits in WAITING for another."""
        uid = queued.pod.uid
        if self._in_flight.pop(uid, None) is None or uid in self._pods:
            return  # deleted while being scheduled, or already back (re-added)
        self._pods[uid] = queued
        self._waiting.add(uid)

    def error(self, queued: QueuedPod) -> None:
        """The attempt failed for another reason (an error, a timeout, a binding's
        failure): back off and retry, behind the pods created before it came back."""
        uid = queued.pod.uid
        self._in_flight.pop(uid, None)
        if queued.deleted or uid in self._pods:
            return  # deleted while being scheduled, or already back (re-added)
        queued.order = max(queued.order, self.wall_clock())
        self._pods[uid] = queued
        queued.returned = self.clock()
        self._back_off(uid, queued.returned + self.backoff_duration(queued.attempts))
        self._wake.set()

    # -- cluster events --------------------------------------------------------------

    def move_all(self) -> None:
        """Something changed that may let any unschedulable pod fit: give them a try."""
        self.move(lambda pod: True)

    def move(self, which: Callable[[Pod], bool]) -> None:
        """Something changed that may let ``which`` unschedulable pods fit (and gated pods
        be let in)."""
        for uid in [u for u in self._unschedulable if which(self._pods[u].pod)]:
            del self._unschedulable[uid]
            self._to_backoff_or_active(self._pods[uid])
        self._ungate()
        # Pods being decided right now may have missed the change (moveRequestCycle).
        self._move_request_cycle = self.scheduling_cycle
        self._wake.set()

    def on_event(
        self,
        event: ClusterEvent,
        old: Any = None,
        new: Any = None,
        which: Callable[[Pod], bool] | None = None,
        legacy: Callable[[Pod], bool] | None = None,
    ) -> None:
        """A cluster event: move the unschedulable pods (of ``which``, if given) that
        some plugin that rejected them says it may help (kube-scheduler's
        ``isPodWorthRequeuing``); gated pods are asked again, as on every move.

        ``legacy``: for a pod whose rejecting plugins are not known, or that registers
        nothing, whether the change wakes it (the world's table from before hints);
        None: it does."""
        moved = {
            uid
            for uid in self._unschedulable
            if (which is None or which(self._pods[uid].pod))
            and self._worth(self._pods[uid], event, old, new, legacy)
        }
        self.hint_skips += len(self._unschedulable) - len(moved)
        self.hint_moves += len(moved)
        self.move(lambda pod: pod.uid in moved)

    def _worth(
        self,
        queued: QueuedPod,
        event: ClusterEvent,
        old: Any,
        new: Any,
        legacy: Callable[[Pod], bool] | None = None,
    ) -> bool:
        rejected = queued.rejected
        if rejected is None:
            return legacy is None or legacy(queued.pod)
        registered = self.registrations(queued.pod)
        for name in rejected:
            events = registered.get(name)
            if events is None:
                # Registers nothing, or not a plugin: as before hints.
                if legacy is None or legacy(queued.pod):
                    return True
                continue
            for each in events:
                if not each.event.matches(event):
                    continue
                if each.hint is None:
                    return True
                try:
                    if each.hint(queued.pod, old, new) == QUEUE:
                        return True
                except Exception:
                    logger.exception("queueing hint of %s raised", name)
                    return True
        return False

    def forgotten(self, uids: Collection[str]) -> None:
        """Assumed pods were forgotten in their binding cycle (Permit refused or timed
        out, PreBind or Bind failed, the binding's assumption expired): the room they
        held is free, as if an assigned pod were deleted (kube-scheduler's
        ``AssignedPodDelete`` move). Every unschedulable pod but those goes to BACKOFF,
        or ACTIVE if its backoff is spent. Called after the forgotten pods were sent
        back (:meth:`unschedulable`, :meth:`error`), as kube-scheduler defers the move
        past its failure handler: a pod a Permit plugin refused stays where that put it
        and the pods that waited for its room go first."""
        self.move(lambda pod: pod.uid not in uids)

    def flush(self) -> None:
        """Backoff that has expired, and pods unschedulable for too long, go active."""
        now = self.clock()
        due = self._backoff_due
        while due and due[0][0] <= now:
            ready, uid = heapq.heappop(due)
            if self._backoff.get(uid) == ready:
                del self._backoff[uid]
                self._push_active(self._pods[uid])
        while self._unschedulable:
            uid, since = next(iter(self._unschedulable.items()))
            if now - since < self.unschedulable_timeout:
                break
            del self._unschedulable[uid]
            self._to_backoff_or_active(self._pods[uid])
        if self._gated and now - self._gated_asked >= self.unschedulable_timeout:
            self._ungate()

    def _ungate(self) -> None:
        """Ask PreEnqueue again about every gated pod."""
        self._gated_asked = self.clock()
        gated, self._gated = self._gated, {}
        for uid in gated:
            queued = self._pods.get(uid)
            if queued is not None:
                self._push_active(queued)

    def _to_backoff_or_active(self, queued: QueuedPod) -> None:
        ready = queued.returned + self.backoff_duration(queued.attempts)
        if ready > self.clock():
            self._back_off(queued.pod.uid, ready)
        else:
            self._push_active(queued)

    def _back_off(self, uid: str, ready: float) -> None:
        self._backoff[uid] = ready
        heapq.heappush(self._backoff_due, (ready, uid))

    def _drop_stale_due(self) -> None:
        due = self._backoff_due
        while due and self._backoff.get(due[0][1]) != due[0][0]:
            heapq.heappop(due)

    def _push_active(self, queued: QueuedPod) -> None:
        pod = queued.pod
        gate = self.pre_enqueue(pod)
        if gate is not None:
            self._gated[pod.uid] = gate
            return
        sorter = self.sorter_of(pod)
        if sorter is None:
            heapq.heappush(self._active, (-pod.priority, queued.order, queued.sequence, pod.uid))
        else:
            _, heap = self._sorted.setdefault(id(sorter), (sorter, []))
            heapq.heappush(heap, _Sorted(queued, sorter))
        self._wake.set()


class _Sorted:
    """A heap entry ordered by a QueueSort plugin's ``less`` (then arrival)."""

    __slots__ = ("info", "queued", "sorter")

    def __init__(self, queued: QueuedPod, sorter: QueueSortPlugin) -> None:
        self.queued = queued
        self.sorter = sorter
        self.info = QueuedPodInfo(queued.pod, queued.order, queued.enqueued, queued.attempts)

    def __lt__(self, other: _Sorted) -> bool:
        try:
            if self.sorter.less(self.info, other.info):
                return True
            if self.sorter.less(other.info, self.info):
                return False
        except Exception:
            logger.exception("QueueSort plugin %s raised", self.sorter.name)
        return self.queued.sequence < other.queued.sequence


def _no_sorter(pod: Pod) -> QueueSortPlugin | None:
    return None


def _no_gate(pod: Pod) -> str | None:
    return None


def _no_registrations(pod: Pod) -> Registrations:
    return {}
