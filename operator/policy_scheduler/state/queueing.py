"""The scheduling queue: active, backoff and unschedulable pods, as kube-scheduler's.

Every pending pod the scheduler serves is in exactly one of three places::

      add() ─> ACTIVE ─pop()─> (being scheduled) ─done()─> (gone: assumed)
                ^  ^                │
      flush():  │  │                ├─ unschedulable(), no move meanwhile ─> UNSCHEDULABLE
      backoff   │  │                └─ unschedulable() after a move, error() ─> BACKOFF
      expired   │  │                                                            │
                │  └── move_all(): something changed that could help ─────────┤
                └───── flush(): waited 60 s in UNSCHEDULABLE ──────────────────┘

* ACTIVE is a heap: higher ``spec.priority`` first, then the older pod (creation time),
  then arrival order.
* BACKOFF holds a pod until ``1 s x 2^(attempts-1)`` (at most 10 s) after its last
  attempt; it then goes back to ACTIVE.
* UNSCHEDULABLE holds pods that fit nowhere until the cluster changes in a way that could
  help (:meth:`move_all`, called for node adds/changes, pod deletions, PV/PVC changes,
  policy changes) or until they have waited ``unschedulable_timeout`` (60 s).
* A pod whose attempt started before a move request is sent to BACKOFF rather than
  UNSCHEDULABLE: the change may have come too late for that attempt to see it
  (kube-scheduler's ``moveRequestCycle``).
* :meth:`delete` removes a pod wherever it is; :meth:`update` replaces the queued copy
  (and gives an unschedulable pod a new chance, since its spec changed).
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ..objects import Pod

INITIAL_BACKOFF = 1.0
MAX_BACKOFF = 10.0
UNSCHEDULABLE_TIMEOUT = 60.0


@dataclass(slots=True)
class QueuedPod:
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


class SchedulingQueue:
    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        initial_backoff: float = INITIAL_BACKOFF,
        max_backoff: float = MAX_BACKOFF,
        unschedulable_timeout: float = UNSCHEDULABLE_TIMEOUT,
    ) -> None:
        self.clock = clock
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.unschedulable_timeout = unschedulable_timeout
        self._active: list[tuple[int, float, int, str]] = []  # heap of keys
        self._backoff: dict[str, float] = {}  # uid -> ready time
        self._unschedulable: dict[str, float] = {}  # uid -> since
        self._pods: dict[str, QueuedPod] = {}  # every queued pod (any part) by uid
        self._in_flight: dict[str, QueuedPod] = {}  # popped, being scheduled
        self._seq = itertools.count()
        self.scheduling_cycle = 0
        self._move_request_cycle = -1
        self._wake = asyncio.Event()

    # -- queries ---------------------------------------------------------------------

    def __contains__(self, uid: str) -> bool:
        return uid in self._pods or uid in self._in_flight

    def where(self, uid: str) -> str | None:
        if uid in self._in_flight:
            return "in-flight"
        if uid not in self._pods:
            return None
        if uid in self._backoff:
            return "backoff"
        if uid in self._unschedulable:
            return "unschedulable"
        return "active"

    def lengths(self) -> dict[str, int]:
        backoff = len(self._backoff)
        unschedulable = len(self._unschedulable)
        return {
            "active": len(self._pods) - backoff - unschedulable,
            "backoff": backoff,
            "unschedulable": unschedulable,
        }

    def backoff_duration(self, attempts: int) -> float:
        if attempts <= 0:
            return 0.0
        return float(min(self.initial_backoff * 2.0 ** (attempts - 1), self.max_backoff))

    # -- adding and removing ---------------------------------------------------------

    def add(self, pod: Pod) -> None:
        """A pending pod appeared (or re-appeared in a re-list)."""
        uid = pod.uid
        if uid in self._in_flight:
            self._in_flight[uid].pod = pod
            return
        queued = self._pods.get(uid)
        if queued is not None:
            queued.pod = pod
            return
        queued = QueuedPod(pod, enqueued=self.clock(), sequence=next(self._seq))
        self._pods[uid] = queued
        self._push_active(queued)

    def update(self, pod: Pod) -> None:
        """A queued pod changed: keep the new copy; an unschedulable one gets a new try."""
        uid = pod.uid
        queued = self._pods.get(uid)
        if queued is None:
            self.add(pod)
            return
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

    def delete(self, uid: str) -> None:
        in_flight = self._in_flight.pop(uid, None)
        if in_flight is not None:
            in_flight.deleted = True
        if self._pods.pop(uid, None) is not None:
            self._backoff.pop(uid, None)
            self._unschedulable.pop(uid, None)
            # Its heap key stays behind and is skipped when popped.

    # -- the scheduling loop's side ------------------------------------------------------

    def pop_nowait(self) -> QueuedPod | None:
        self.flush()
        while self._active:
            _, _, _, uid = heapq.heappop(self._active)
            queued = self._pods.get(uid)
            if queued is None or uid in self._backoff or uid in self._unschedulable:
                continue  # deleted, or moved elsewhere since this key was pushed
            del self._pods[uid]
            self.scheduling_cycle += 1
            queued.cycle = self.scheduling_cycle
            queued.attempts += 1
            queued.last_attempt = self.clock()
            self._in_flight[uid] = queued
            return queued
        return None

    async def pop(self) -> QueuedPod:
        """The next pod to schedule, waiting until one is ready."""
        while True:
            queued = self.pop_nowait()
            if queued is not None:
                return queued
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=self._next_wakeup())

    def _next_wakeup(self) -> float:
        now = self.clock()
        candidates = [t - now for t in self._backoff.values()]
        candidates += [s + self.unschedulable_timeout - now for s in self._unschedulable.values()]
        return max(0.01, min(candidates, default=1.0))

    def done(self, uid: str) -> None:
        """The pod was scheduled (assumed): it leaves the queue."""
        self._in_flight.pop(uid, None)

    def unschedulable(self, queued: QueuedPod) -> None:
        """The attempt found no node."""
        uid = queued.pod.uid
        if self._in_flight.pop(uid, None) is None:
            return  # deleted while being scheduled
        self._pods[uid] = queued
        if self._move_request_cycle >= queued.cycle:
            self._backoff[uid] = queued.last_attempt + self.backoff_duration(queued.attempts)
        else:
            self._unschedulable[uid] = self.clock()
        self._wake.set()

    def error(self, queued: QueuedPod) -> None:
        """The attempt failed for another reason (binding error): back off and retry."""
        uid = queued.pod.uid
        self._in_flight.pop(uid, None)
        if queued.deleted or uid in self._pods:
            return  # deleted while being scheduled, or already back (re-added)
        self._pods[uid] = queued
        self._backoff[uid] = queued.last_attempt + self.backoff_duration(queued.attempts)
        self._wake.set()

    # -- cluster events --------------------------------------------------------------

    def move_all(self) -> None:
        """Something changed that may let unschedulable pods fit: give them a try."""
        for uid in list(self._unschedulable):
            del self._unschedulable[uid]
            self._to_backoff_or_active(self._pods[uid])
        self._move_request_cycle = self.scheduling_cycle
        self._wake.set()

    def flush(self) -> None:
        """Backoff that has expired, and pods unschedulable for too long, go active."""
        now = self.clock()
        for uid, ready in list(self._backoff.items()):
            if ready <= now:
                del self._backoff[uid]
                self._push_active(self._pods[uid])
        for uid, since in list(self._unschedulable.items()):
            if now - since >= self.unschedulable_timeout:
                del self._unschedulable[uid]
                self._to_backoff_or_active(self._pods[uid])

    def _to_backoff_or_active(self, queued: QueuedPod) -> None:
        ready = queued.last_attempt + self.backoff_duration(queued.attempts)
        if ready > self.clock():
            self._backoff[queued.pod.uid] = ready
        else:
            self._push_active(queued)

    def _push_active(self, queued: QueuedPod) -> None:
        pod = queued.pod
        heapq.heappush(self._active, (-pod.priority, pod.created, queued.sequence, pod.uid))
        self._wake.set()
