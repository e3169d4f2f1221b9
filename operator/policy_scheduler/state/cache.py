"""The scheduler cache: the cluster as the watches report it, plus our own assumptions.

It wraps the engine's :class:`ClusterState` with kube-scheduler's pod state machine::

                 assume()                 binding_finished()
      (pending) ---------> Assumed ----------------------------> Assumed+Bound
                              |  \\                                 |      |
                     forget() |   \\ pod event with nodeName        |      | deadline passes
                              v    v                               v      v (expire)
                           (gone)  Added <------------------------ +   (gone)
                                     |   pod event with nodeName
                       pod deleted   v
                                  (gone)

* ``assume`` places the pod on its node at once, so the next decision sees it, before
  the binding request even leaves.
* ``forget`` undoes an assumption whose binding failed.
* ``binding_finished`` starts the expiry clock (``ttl``): if the watch never confirms the
  binding (the pod was deleted meanwhile, a watch was lost), the assumption expires.
* A watch event with ``spec.nodeName`` confirms the pod as *Added* on that node (the
  API's word wins over an assumption on another node).

Watches replay every object as ADDED on each re-list, and a replayed copy may be older
than what we already know. ``spec.nodeName`` never goes back to empty on a real API
server, so a copy without it, for a pod we know to be placed, is stale and ignored: a
replay can never undo a binding. Pods reported as deleted leave the cache for good
(their uid is remembered for a while so that a late replay does not resurrect them).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import Enum

from ..engine.cluster import ClusterState
from ..objects import Pod

DEFAULT_ASSUME_TTL = 30.0


class PodState(Enum):
    ASSUMED = "assumed"
    ADDED = "added"


@dataclass(slots=True)
class _Entry:
    state: PodState
    node: str
    binding_finished: bool = False
    deadline: float | None = None


class SchedulerCache:
    def __init__(
        self,
        cluster: ClusterState | None = None,
        *,
        ttl: float = DEFAULT_ASSUME_TTL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.cluster = cluster if cluster is not None else ClusterState()
        self.ttl = ttl
        self.clock = clock
        self._entries: dict[str, _Entry] = {}
        self._deleted: dict[str, float] = {}  # uid -> when we saw it deleted

    # -- queries ---------------------------------------------------------------------

    def state_of(self, uid: str) -> PodState | None:
        entry = self._entries.get(uid)
        return entry.state if entry is not None else None

    def node_of(self, uid: str) -> str | None:
        entry = self._entries.get(uid)
        return entry.node if entry is not None else None

    def is_placed(self, uid: str) -> bool:
        """Assumed or bound: the scheduler must not decide this pod again."""
        return uid in self._entries

    def was_deleted(self, uid: str) -> bool:
        return uid in self._deleted

    @property
    def assumed_count(self) -> int:
        return sum(1 for e in self._entries.values() if e.state is PodState.ASSUMED)

    # -- our own transitions -----------------------------------------------------------

    def assume(self, pod: Pod, node: str) -> Pod:
        """Place ``pod`` on ``node`` before binding; returns the placed copy."""
        if pod.uid in self._entries:
            raise ValueError(f"pod {pod.key} is already {self._entries[pod.uid].state.value}")
        placed = replace(pod, node_name=node)
        self._entries[pod.uid] = _Entry(PodState.ASSUMED, node)
        self.cluster.add_pod(placed)
        return placed

    def binding_finished(self, uid: str) -> None:
        entry = self._entries.get(uid)
        if entry is not None and entry.state is PodState.ASSUMED:
            entry.binding_finished = True
            entry.deadline = self.clock() + self.ttl

    def forget(self, uid: str) -> None:
        """Undo an assumption (its binding failed); a confirmed pod stays."""
        entry = self._entries.get(uid)
        if entry is None or entry.state is not PodState.ASSUMED:
            return
        del self._entries[uid]
        self.cluster.remove_pod(uid)

    def cleanup_expired(self) -> list[str]:
        """Drop assumptions whose binding finished but never showed up in a watch."""
        now = self.clock()
        expired = [
            uid
            for uid, e in self._entries.items()
            if e.state is PodState.ASSUMED and e.deadline is not None and e.deadline <= now
        ]
        for uid in expired:
            del self._entries[uid]
            self.cluster.remove_pod(uid)
        horizon = now - 10 * self.ttl
        for uid in [u for u, t in self._deleted.items() if t < horizon]:
            del self._deleted[uid]
        return expired

    # -- what the watches say ----------------------------------------------------------

    def pod_seen(self, pod: Pod) -> bool:
        """A pod from a watch event (ADDED or MODIFIED, possibly a stale replay).

        Returns True when the pod is not a candidate for scheduling: placed, finished
        or deleted.
        """
        if pod.uid in self._deleted:
            return True
        if pod.phase in ("Succeeded", "Failed"):
            # Finished pods hold no resources and are never scheduled, placed or not
            # (kube-scheduler's informers filter them out of both pod lists).
            self.pod_deleted(pod.uid, remember=False)
            return True
        entry = self._entries.get(pod.uid)
        if not pod.node_name:
            # Unplaced in this copy. If we know it placed, this copy is stale.
            return entry is not None
        self._entries[pod.uid] = _Entry(PodState.ADDED, pod.node_name)
        self.cluster.add_pod(pod)
        return True

    def pod_deleted(self, uid: str, *, remember: bool = True) -> None:
        self._entries.pop(uid, None)
        self.cluster.remove_pod(uid)
        if remember:
            self._deleted[uid] = self.clock()
