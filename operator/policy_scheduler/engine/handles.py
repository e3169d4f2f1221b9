"""What the framework gives plugins (:class:`~.interface.Handle`), and what built-ins need more.

The public :class:`~.interface.Handle` is implemented twice: by the scheduler's own
handle (``state/handles.py``: the live cache, the API client once the operator runs,
the event recorder, the waiting pods), and here by :class:`DetachedHandle`, which
plugins get when a policy is compiled with no scheduler around it (``validate``, tests):
an empty cluster, no API, events dropped.

Built-in plugins reach what their stage does in the scheduler through :class:`Ports`,
the handle's internal side: the binding call (DefaultBinder), the volume binder
(CheckVolumeBinding's PreBind, and its Reserve in the cache), DynamicResources' claim
writes, preemption's evictions. Offline (``simulate``) they act on the cache alone: a
decision assumed is as good as bound, a victim evicted is gone at once.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from ..devices import Allocation, ResourceClaim
from ..objects import Pod
from .cluster import ClusterState
from .interface import EventRecorder, PluginApi, Snapshot, Status, WaitingPod
from .predicates.volumes import PodVolumes
from .waiting import WaitingPods, manual_call_later


class Ports:
    """What built-in plugins ask of the scheduler around them (offline: nothing happens).

    The scheduler's handle replaces these with the cache's and the runtime's.
    """

    def assume_volumes(self, pod: Pod, volumes: PodVolumes) -> None:
        """Reserve: the PVs and claims the pod binds with are taken (AssumePodVolumes)."""

    def forget_volumes(self, pod: Pod) -> None:
        """Unreserve: give them back."""

    async def bind_volumes(
        self, state: Any, pod: Pod, volumes: PodVolumes, *, timeout: float | None = None
    ) -> Status | None:
        """PreBind: write the claimRefs / selected-node, wait for the PV controller
        (``timeout`` seconds; None: the scheduler's own, ``--volume-binding-timeout``)."""
        return None

    def assume_allocations(self, allocations: Mapping[str, Allocation]) -> None:
        """Reserve of DynamicResources: claim "ns/name" -> the devices it gets."""

    def forget_allocations(self, claim_keys: Iterable[str]) -> None:
        """Unreserve of DynamicResources: the allocations in flight are given back."""

    async def bind_claims(
        self, state: Any, pod: Pod, claims: Sequence[tuple[ResourceClaim, Allocation | None]]
    ) -> Status | None:
        """PreBind of DynamicResources: write each claim's allocation (None: allocated
        already) and reserve it for the pod (``status.reservedFor``)."""
        return None

    def release_claims(self, pod: Pod, claims: Sequence[ResourceClaim]) -> None:
        """Unreserve of DynamicResources: the pod out of the claims' ``reservedFor``
        (what :meth:`bind_claims` wrote), in the background."""

    async def deallocate_claim(self, pod: Pod, claim: ResourceClaim) -> Status | None:
        """PostFilter of DynamicResources: clear the claim's allocation and reservation
        (``pod``'s attempt asks it); None when done, else the Error."""
        return None

    async def bind_pod(self, state: Any, pod: Pod, node: str) -> Status | None:
        """Bind: the pods/binding call (DefaultBinder)."""
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
        """PostFilter's writes, once the attempt's outcome stands: ``pod`` nominated to
        ``node`` (None: no node), ``victims`` evicted (``marks_victims``: each first
        gets ``DisruptionTarget``, as v1.26+), the nominations of ``clear`` removed. The
        cache already holds the nominations; the operator writes them in the background,
        with the events of ``profile``."""


class _DroppedEvents:
    def event(self, pod: Pod, *, type: str, reason: str, message: str, action: str = "") -> None:
        return None


DROPPED_EVENTS: EventRecorder = _DroppedEvents()


class DetachedHandle:
    """A handle with no scheduler behind it: empty cluster, no API, events dropped."""

    def __init__(self) -> None:
        self.ports = Ports()
        self.waiting = WaitingPods(manual_call_later)
        self._empty = Snapshot(ClusterState())

    def snapshot(self) -> Snapshot:
        return self._empty

    @property
    def api(self) -> PluginApi | None:
        return None

    @property
    def events(self) -> EventRecorder:
        return DROPPED_EVENTS

    @property
    def offline(self) -> bool:
        return True

    def now(self) -> float:
        return 0.0

    def waiting_pods(self) -> Iterator[WaitingPod]:
        return iter(self.waiting)

    def get_waiting_pod(self, uid: str) -> WaitingPod | None:
        return self.waiting.get(uid)

    def reject_waiting_pod(self, uid: str, plugin: str, message: str) -> bool:
        return self.waiting.reject(uid, plugin, message)


def ports_of(handle: Any) -> Ports:
    """The built-ins' side of a handle (a plain third-party handle has none: offline)."""
    ports = getattr(handle, "ports", None)
    return ports if isinstance(ports, Ports) else _NO_PORTS


_NO_PORTS = Ports()
