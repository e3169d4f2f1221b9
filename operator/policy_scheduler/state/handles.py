"""The scheduler's handle: what its policies' plugins are given, and the built-ins' ports.

One :class:`SchedulerHandle` per :class:`~.world.World`, made before any policy is
compiled (plugins are made with it). It implements the public
:class:`~..engine.interface.Handle`:

* ``snapshot()``: the cache's cluster (held still while a decision is taken), with the
  pending pods the world's queue holds (``pending``, set by the world);
* ``api`` and ``events``: None and dropped until the operator sets its API client and
  event recorder (``simulate`` never does: ``offline``);
* the waiting pods (``engine/waiting.py``), on the event loop's timers, or on none
  offline (``simulate`` settles what still waits when it ends).

Its ``ports`` (:class:`CachePorts`) reserve a decision's volumes and devices in the
cache (Reserve/Unreserve), deallocate claims and evict preemption's victims in it; the
operator replaces them with ports that also bind the volumes, the claims and the pod,
and carry out preemptions, through the API.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

from ..devices import Allocation, ResourceClaim
from ..engine.handles import DROPPED_EVENTS, Ports
from ..engine.interface import (
    EventRecorder,
    PendingPods,
    PluginApi,
    Snapshot,
    Status,
    WaitingPod,
)
from ..engine.predicates.volumes import PodVolumes
from ..engine.waiting import Scheduler as CallLater
from ..engine.waiting import WaitingPods, manual_call_later
from ..objects import Pod
from .cache import SchedulerCache


class CachePorts(Ports):
    """The built-ins' ports on the cache alone: volumes assumed and given back."""

    def __init__(self, cache: SchedulerCache) -> None:
        self.cache = cache

    def assume_volumes(self, pod: Pod, volumes: PodVolumes) -> None:
        self.cache.assume_volumes(pod.uid, volumes)

    def forget_volumes(self, pod: Pod) -> None:
        self.cache.forget_volumes(pod.uid)

    def assume_allocations(self, allocations: Mapping[str, Allocation]) -> None:
        self.cache.assume_allocations(allocations)

    def forget_allocations(self, claim_keys: Iterable[str]) -> None:
        self.cache.forget_allocations(claim_keys)

    async def deallocate_claim(self, pod: Pod, claim: ResourceClaim) -> Status | None:
        # Offline (simulate) the cache is the API: the claim is deallocated in it.
        self.cache.deallocate_claim(claim.key)
        return None

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
        # Offline the victims leave the cluster at once (the nominations are in the
        # cache already); the operator's ports delete them through the API instead.
        if node is not None:
            for victim in victims:
                self.cache.remove_pod(victim.uid)


class SchedulerHandle:
    """The public Handle of one scheduler (module docstring)."""

    def __init__(
        self,
        cache: SchedulerCache,
        *,
        offline: bool = False,
        call_later: CallLater | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.cache = cache
        self.ports: Ports = CachePorts(cache)
        self._offline = offline
        self.waiting = (
            WaitingPods(call_later or manual_call_later) if offline or call_later else WaitingPods()
        )
        self.clock = clock
        self.plugin_api: PluginApi | None = None
        self.recorder: EventRecorder = DROPPED_EVENTS
        #: The pending pods of a namespace (None: all), for the snapshot.
        self.pending: PendingPods = _no_pending

    def snapshot(self) -> Snapshot:
        return Snapshot(self.cache.cluster, self.pending)

    @property
    def api(self) -> PluginApi | None:
        return self.plugin_api

    @property
    def events(self) -> EventRecorder:
        return self.recorder

    @property
    def offline(self) -> bool:
        return self._offline

    def now(self) -> float:
        return self.clock()

    def waiting_pods(self) -> Iterator[WaitingPod]:
        return iter(self.waiting)

    def get_waiting_pod(self, uid: str) -> WaitingPod | None:
        return self.waiting.get(uid)

    def reject_waiting_pod(self, uid: str, plugin: str, message: str) -> bool:
        return self.waiting.reject(uid, plugin, message)


def _no_pending(namespace: str | None) -> Iterable[Pod]:
    return ()
