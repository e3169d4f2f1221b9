"""The scheduler cache: the only writer of the cluster state the engine decides on.

Everything the watches report (nodes, placed pods, volumes, storage classes, CSINodes,
CSIDrivers and CSIStorageCapacities, services and controllers, PodDisruptionBudgets,
namespaces, PodGroups, the nominations of pending pods) and
everything the scheduler assumes goes through one :class:`SchedulerCache`; nothing else
writes its :class:`~..engine.cluster.ClusterState`. (Preemption takes victims off the
cluster inside a decision, in a ``ClusterState.trial`` undone before the decision
yields: what the engine hands back is the state it was given.)

Pods: kube-scheduler's state machine, as data
---------------------------------------------
A placed pod is in one of three states; :data:`TRANSITIONS` is the whole machine, and a
transition it does not list raises :class:`CacheError` (a bug of ours, never a user's)::

    state \\ event      assume    finish_binding    forget   confirm   expire    remove
    (absent)           Assumed   (absent)          ERROR    Added     ERROR     (absent)
    Assumed            ERROR     BindingFinished   absent   Added     ERROR     absent
    BindingFinished    ERROR     BindingFinished   absent   Added     absent*   absent
    Added              ERROR     Added             ERROR    Added     ERROR     absent

* ``assume``: the scheduler decided; the pod is placed on its node at once, so the next
  decision sees it, before the binding request even leaves.
* ``finish_binding``: the binding call returned; the expiry clock (``ttl``) starts in
  case the watch never confirms (the pod was deleted meanwhile, a watch was lost). For
  a pod the watch already confirmed, or one deleted meanwhile, it changes nothing.
* ``forget``: undo an assumption whose binding failed. Forgetting a pod the watch has
  confirmed is refused: the API's word is final.
* ``confirm``: a watch event with ``spec.nodeName``: the pod is *Added* on that node
  (the API's node wins over an assumption elsewhere).
* ``expire`` (*): only once the deadline has passed (:meth:`SchedulerCache.expire`).
* ``remove``: the pod was deleted or finished; a deleted pod's uid is remembered a while
  (``10 x ttl``) so that a late replay of an older copy does not resurrect it.

Watches replay every object as ADDED on each re-list, and a replayed copy may be older
than what we already know. ``spec.nodeName`` never goes back to empty on a real API
server, so a copy without it, for a pod we hold placed, is stale
(:meth:`SchedulerCache.is_placed`): callers ignore it, and a replay can never undo a
binding.

Volumes: the volume binder's assume cache
-----------------------------------------
PVs and claims are kept as kube-scheduler's volume binder kept them (its
``assumeCache``): the version the cluster state shows is the API's, or one the scheduler
*assumed* on top of it::

    watch event, resourceVersion not newer than the one held ─> ignored (a replay)
    watch event, newer (or not comparable: no resourceVersion) ─> the API's version,
                                                                  any assumption dropped
    assume_volumes(uid, volumes) ─> each matched PV shows its claimRef to the claim,
                                    each claim to provision its selected-node; the
                                    API's version is kept aside
    forget_volumes(uid) ─> what the pod assumed and the API has not overtaken since
                           shows the API's version again
    finish_volumes(uid) ─> the assumptions stay until the API overtakes them

So the next decision cannot match a PV an earlier one took, nor provision a claim for
another node, while the writes are on their way; a failed binding gives back exactly
what the API has not answered for meanwhile (what was written, the API now reports).

A snapshot per decision
-----------------------
kube-scheduler copies the nodes that changed into a snapshot at the start of each cycle
(``UpdateSnapshot``), because its informers write the cache from other goroutines while
the algorithm runs. Here the engine runs on the event loop's one thread and yields only
between node chunks; the snapshot is therefore the state itself, held still:
``with cache.snapshot() as cluster:`` hands the engine the cluster state and, until the
block ends, *holds* every write that arrives (watch events, expiries, our own assume or
forget from a binding that finished meanwhile), then applies them in arrival order. The
decision sees one consistent cluster, at the cost of no copy at all, and whoever acts on
the decision afterwards re-checks it against the state as it is then (a node deleted
while the pod was being decided is gone by the time it could be bound: see
``runtime.scheduling``). Pod bookkeeping (which uid is placed where) is never held: it
answers for the live stream, so a pod confirmed or deleted mid-decision is never queued
or decided again.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any, Final

from ..devices import Allocation
from ..engine.cluster import ClusterState
from ..engine.predicates.volumes import PodVolumes, bound_to_claim, with_selected_node
from ..kinds import (
    CSI_DRIVER,
    CSI_NODE,
    CSI_STORAGE_CAPACITY,
    DEVICE_CLASS,
    NAMESPACE,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    POD_DISRUPTION_BUDGET,
    POD_GROUP,
    REPLICA_SET,
    REPLICATION_CONTROLLER,
    RESOURCE_CLAIM,
    RESOURCE_CLAIM_TEMPLATE,
    RESOURCE_SLICE,
    SERVICE,
    STATEFUL_SET,
    STORAGE_CLASS,
    Kind,
)
from ..objects import Node, PersistentVolume, PersistentVolumeClaim, Pod, newer_version

DEFAULT_ASSUME_TTL = 30.0


class PodState(Enum):
    """Where a placed pod stands in the cache (see the module docstring)."""

    ASSUMED = "Assumed"
    BINDING_FINISHED = "BindingFinished"
    ADDED = "Added"


class Event(Enum):
    """What can happen to a placed pod."""

    ASSUME = "assume"
    FINISH_BINDING = "finish_binding"
    FORGET = "forget"
    CONFIRM = "confirm"
    EXPIRE = "expire"
    REMOVE = "remove"


_A, _B, _D = PodState.ASSUMED, PodState.BINDING_FINISHED, PodState.ADDED

#: (state or None for absent, event) -> next state (None: absent). Missing: illegal.
TRANSITIONS: Final[Mapping[tuple[PodState | None, Event], PodState | None]] = {
    (None, Event.ASSUME): _A,
    (None, Event.FINISH_BINDING): None,
    (None, Event.CONFIRM): _D,
    (None, Event.REMOVE): None,
    (_A, Event.FINISH_BINDING): _B,
    (_A, Event.FORGET): None,
    (_A, Event.CONFIRM): _D,
    (_A, Event.REMOVE): None,
    (_B, Event.FINISH_BINDING): _B,
    (_B, Event.FORGET): None,
    (_B, Event.CONFIRM): _D,
    (_B, Event.EXPIRE): None,
    (_B, Event.REMOVE): None,
    (_D, Event.FINISH_BINDING): _D,
    (_D, Event.CONFIRM): _D,
    (_D, Event.REMOVE): None,
}


class CacheError(RuntimeError):
    """A transition the state machine does not allow: a bug in the caller."""


@dataclass(slots=True)
class _Entry:
    state: PodState
    pod: Pod  # the copy placed in the cluster state (node_name set)
    deadline: float | None = None


# Setters and removers of the cluster state per kind of "other" object.
_Setter = Callable[[ClusterState, Any], None]
_Remover = Callable[[ClusterState, str], None]
_OBJECTS: Final[dict[Kind, tuple[_Setter, _Remover]]] = {
    PERSISTENT_VOLUME: (ClusterState.set_persistent_volume, ClusterState.remove_persistent_volume),
    PERSISTENT_VOLUME_CLAIM: (ClusterState.set_claim, ClusterState.remove_claim),
    STORAGE_CLASS: (ClusterState.set_storage_class, ClusterState.remove_storage_class),
    CSI_NODE: (ClusterState.set_csi_node, ClusterState.remove_csi_node),
    CSI_DRIVER: (ClusterState.set_csi_driver, ClusterState.remove_csi_driver),
    CSI_STORAGE_CAPACITY: (
        ClusterState.set_storage_capacity,
        ClusterState.remove_storage_capacity,
    ),
    SERVICE: (ClusterState.set_workload, ClusterState.remove_workload),
    REPLICATION_CONTROLLER: (ClusterState.set_workload, ClusterState.remove_workload),
    REPLICA_SET: (ClusterState.set_workload, ClusterState.remove_workload),
    STATEFUL_SET: (ClusterState.set_workload, ClusterState.remove_workload),
    POD_DISRUPTION_BUDGET: (ClusterState.set_pdb, ClusterState.remove_pdb),
    NAMESPACE: (ClusterState.set_namespace, ClusterState.remove_namespace),
    POD_GROUP: (ClusterState.set_pod_group, ClusterState.remove_pod_group),
    DEVICE_CLASS: (ClusterState.set_device_class, ClusterState.remove_device_class),
    RESOURCE_SLICE: (ClusterState.set_resource_slice, ClusterState.remove_resource_slice),
    RESOURCE_CLAIM: (ClusterState.set_resource_claim, ClusterState.remove_resource_claim),
    RESOURCE_CLAIM_TEMPLATE: (ClusterState.set_claim_template, ClusterState.remove_claim_template),
}

#: The kinds :meth:`SchedulerCache.set_object` stores (besides nodes and pods).
OBJECT_KINDS: Final = frozenset(_OBJECTS)

#: The kinds the volume binder assumes (see "Volumes" in the module docstring).
VOLUME_KINDS: Final = frozenset({PERSISTENT_VOLUME, PERSISTENT_VOLUME_CLAIM})
_VolumeKey = tuple[Kind, str]


def store(cluster: ClusterState, kind: Kind, obj: Any) -> None:
    """Put a parsed object of one of :data:`OBJECT_KINDS` into a cluster state."""
    _OBJECTS[kind][0](cluster, obj)


class SchedulerCache:
    """The cluster as the watches report it plus our assumptions; the one writer of it."""

    def __init__(
        self,
        *,
        ttl: float = DEFAULT_ASSUME_TTL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._cluster = ClusterState()
        self.ttl = ttl
        self.clock = clock
        self._entries: dict[str, _Entry] = {}
        #: Uids assumed and not yet confirmed by the watch (Assumed, BindingFinished), in
        #: the order they were assumed: the only ones that may expire, kept apart so
        #: that housekeeping never walks every placed pod.
        self._unconfirmed: dict[str, None] = {}
        #: uid -> when we saw it deleted, oldest first (expire() stops at the first one
        #: still to keep).
        self._deleted: dict[str, float] = {}
        self._holders = 0
        self._held: list[Callable[[], object]] = []
        self._nominated: dict[str, str] = {}  # uid -> node, live (see nominated_node)
        #: Assumed PVs and claims -> the API's version, given back on forget.
        self._volume_api: dict[_VolumeKey, PersistentVolume | PersistentVolumeClaim] = {}
        #: Pod uid -> the PVs and claims its binding assumed.
        self._volume_owners: dict[str, list[_VolumeKey]] = {}
        #: ResourceClaims deallocated here (simulate's DynamicResources PostFilter): a
        #: pod refused by an attempt that deallocated is decided again.
        self.claims_deallocated = 0

    # -- reading -------------------------------------------------------------------------

    @property
    def cluster(self) -> ClusterState:
        """The cluster state, to read (metrics, tests); decisions use :meth:`snapshot`."""
        return self._cluster

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[ClusterState]:
        """The cluster state held still while the block runs (see the module docstring)."""
        self._holders += 1
        try:
            yield self._cluster
        finally:
            self._holders -= 1
            if not self._holders:
                held, self._held = self._held, []
                for write in held:
                    write()

    @contextlib.contextmanager
    def loosened(self) -> Iterator[None]:
        """Inside a snapshot: stop holding until the block ends, the held writes applied.

        For a decision that awaits an HTTP peer half-way (an extender): the cluster goes
        on changing meanwhile and nothing it decided is assumed until it is checked
        again. The caller must be the only holder (the operator decides one pod at a
        time under one lock) and must not read the state inside the block.
        """
        holders, self._holders = self._holders, 0
        held, self._held = self._held, []
        for write in held:
            write()
        try:
            yield
        finally:
            self._holders = holders

    @property
    def held_writes(self) -> int:
        """Writes waiting for the current snapshot to end."""
        return len(self._held)

    def state_of(self, uid: str) -> PodState | None:
        entry = self._entries.get(uid)
        return entry.state if entry is not None else None

    def node_of(self, uid: str) -> str | None:
        entry = self._entries.get(uid)
        return entry.pod.node_name if entry is not None else None

    def placed_pod(self, uid: str) -> Pod | None:
        """The copy of a placed pod the cache holds (assumed or confirmed)."""
        entry = self._entries.get(uid)
        return entry.pod if entry is not None else None

    def is_placed(self, uid: str) -> bool:
        """Assumed or bound: the scheduler must not decide this pod again."""
        return uid in self._entries

    def was_deleted(self, uid: str) -> bool:
        return uid in self._deleted

    @property
    def assumed_count(self) -> int:
        return len(self._unconfirmed)

    # -- writing the cluster state -------------------------------------------------------

    def _write(self, write: Callable[[], object]) -> None:
        if self._holders:
            self._held.append(write)
        else:
            write()

    def set_node(self, node: Node) -> None:
        self._write(lambda: self._cluster.set_node(node))

    def remove_node(self, name: str) -> None:
        self._write(lambda: self._cluster.remove_node(name))

    def set_object(self, kind: Kind, obj: Any) -> None:
        """Store a parsed PV, PVC, StorageClass, CSINode, Service or controller."""
        if kind in VOLUME_KINDS:
            self._write(lambda: self._observe_volume(kind, obj))
        else:
            self._write(lambda: store(self._cluster, kind, obj))

    def remove_object(self, kind: Kind, key: str) -> None:
        _, remover = _OBJECTS[kind]

        def remove() -> None:
            self._volume_api.pop((kind, key), None)
            remover(self._cluster, key)

        self._write(remove)

    # -- volumes: the binder's assume cache ----------------------------------------------

    def _volume(self, kind: Kind, key: str) -> PersistentVolume | PersistentVolumeClaim | None:
        if kind is PERSISTENT_VOLUME:
            return self._cluster.persistent_volumes.get(key)
        return self._cluster.claims.get(key)

    def _observe_volume(self, kind: Kind, obj: PersistentVolume | PersistentVolumeClaim) -> None:
        key = obj.name if isinstance(obj, PersistentVolume) else obj.key
        held = self._volume(kind, key)
        if held is not None and not newer_version(obj.resource_version, held.resource_version):
            return  # a replay, or older than what we assumed on top of it
        self._volume_api.pop((kind, key), None)  # the API's word overtakes our assumption
        store(self._cluster, kind, obj)

    def stale_volumes(self, volumes: PodVolumes) -> str | None:
        """Why the PVs and claims a decision matched are no longer as it saw them; None
        when they are (AssumePodVolumes' "out of sync")."""
        for _, pv in volumes.matched:
            if self._cluster.persistent_volumes.get(pv.name) != pv:
                return f'PersistentVolume "{pv.name}" changed'
        claims = [pvc for pvc, _ in volumes.matched] + list(volumes.provisioned)
        for pvc in claims:
            if self._cluster.claims.get(pvc.key) != pvc:
                return f'PersistentVolumeClaim "{pvc.key}" changed'
        return None

    def assume_volumes(self, uid: str, volumes: PodVolumes) -> None:
        """AssumePodVolumes: the pod's matched PVs bound to their claims and its claims
        to provision annotated with the node, until the API says otherwise."""
        changes: list[tuple[Kind, str, PersistentVolume | PersistentVolumeClaim]] = [
            (PERSISTENT_VOLUME, pv.name, bound_to_claim(pv, pvc)) for pvc, pv in volumes.matched
        ]
        changes += [
            (PERSISTENT_VOLUME_CLAIM, pvc.key, with_selected_node(pvc, volumes.node))
            for pvc in volumes.provisioned
        ]
        if not changes:
            return
        self._volume_owners.setdefault(uid, []).extend((kind, key) for kind, key, _ in changes)

        def assume() -> None:
            for kind, key, assumed in changes:
                held = self._volume(kind, key)
                if held is None:
                    continue  # deleted meanwhile: nothing left to assume on
                self._volume_api.setdefault((kind, key), held)
                store(self._cluster, kind, assumed)

        self._write(assume)

    def forget_volumes(self, uid: str) -> None:
        """Undo :meth:`assume_volumes` where the API has not overtaken it since."""
        keys = self._volume_owners.pop(uid, [])
        if not keys:
            return

        def restore() -> None:
            for kind, key in keys:
                api = self._volume_api.pop((kind, key), None)
                if api is not None:
                    store(self._cluster, kind, api)

        self._write(restore)

    # -- DRA: allocations in flight ---------------------------------------------------------

    def assume_allocations(self, allocations: Mapping[str, Allocation]) -> None:
        """Reserve of DynamicResources: the claims' devices are taken (in flight) until
        the claims' watch events show them allocated, or :meth:`forget_allocations`."""

        def assume() -> None:
            for key, allocation in allocations.items():
                self._cluster.assume_allocation(key, allocation)

        self._write(assume)

    def forget_allocations(self, claim_keys: Iterable[str]) -> None:
        keys = list(claim_keys)

        def forget() -> None:
            for key in keys:
                self._cluster.forget_allocation(key)

        self._write(forget)

    def deallocate_claim(self, key: str) -> None:
        """The claim as it is once its allocation and reservation are cleared (what
        DynamicResources' PostFilter writes; ``simulate``'s cluster is its API)."""

        def clear() -> None:
            if self._cluster.deallocate_claim(key):
                # Counted only when something was freed: simulate decides the pod again
                # on it, and a retry that frees nothing would never end.
                self.claims_deallocated += 1

        self._write(clear)

    def finish_volumes(self, uid: str) -> None:
        """The pod's volumes are bound: its assumptions stay until the API overtakes them."""
        self._volume_owners.pop(uid, None)

    @property
    def assumed_volumes(self) -> int:
        """PVs and claims shown as assumed rather than as the API reports them."""
        return len(self._volume_api)

    # -- nominated pods ------------------------------------------------------------------

    def nominate(self, pod: Pod, node: str) -> None:
        """A pending pod is nominated to ``node`` (its status says so, or we preempted)."""
        self._nominated[pod.uid] = node
        self._write(lambda: self._cluster.set_nominated(pod, node))

    def unnominate(self, uid: str) -> None:
        """The pod's nomination is over (a no-op for a pod without one)."""
        if self._nominated.pop(uid, None) is not None:
            self._write(lambda: self._cluster.remove_nominated(uid))

    def nominated_node(self, uid: str) -> str | None:
        """Where the pod is nominated, held writes included (live, like the pod states)."""
        return self._nominated.get(uid)

    # -- the pod state machine -----------------------------------------------------------

    def _move(self, uid: str, event: Event) -> PodState | None:
        entry = self._entries.get(uid)
        state = entry.state if entry is not None else None
        try:
            return TRANSITIONS[(state, event)]
        except KeyError:
            where = state.value if state is not None else "not in the cache"
            raise CacheError(f"pod {uid}: cannot {event.value}: it is {where}") from None

    def _place(self, pod: Pod) -> None:
        self._write(lambda: self._cluster.add_pod(pod))

    def _unplace(self, uid: str) -> None:
        self._write(lambda: self._cluster.remove_pod(uid))

    def assume(self, pod: Pod, node: str) -> Pod:
        """Place ``pod`` on ``node`` before binding; returns the placed copy.

        A nomination the pod had is over (``DeleteNominatedPodIfExists``).
        """
        self._move(pod.uid, Event.ASSUME)
        placed = replace(pod, node_name=node)
        self._entries[pod.uid] = _Entry(PodState.ASSUMED, placed)
        self._unconfirmed[pod.uid] = None
        self.unnominate(pod.uid)
        self._place(placed)
        return placed

    def finish_binding(self, uid: str) -> None:
        if self._move(uid, Event.FINISH_BINDING) is PodState.BINDING_FINISHED:
            entry = self._entries[uid]
            entry.state = PodState.BINDING_FINISHED
            entry.deadline = self.clock() + self.ttl

    def forget(self, uid: str) -> None:
        """Undo an assumption (its binding failed)."""
        self._move(uid, Event.FORGET)
        del self._entries[uid]
        self._unconfirmed.pop(uid, None)
        self._unplace(uid)

    def confirm(self, pod: Pod) -> Pod | None:
        """The watch reports ``pod`` placed on its node; returns the copy it replaces."""
        self._move(pod.uid, Event.CONFIRM)
        entry = self._entries.get(pod.uid)
        before = entry.pod if entry is not None else None
        self._entries[pod.uid] = _Entry(PodState.ADDED, pod)
        self._unconfirmed.pop(pod.uid, None)
        self._place(pod)
        return before

    def remove_pod(self, uid: str, *, remember: bool = True) -> Pod | None:
        """The pod was deleted (``remember``: ignore late replays) or finished."""
        self._move(uid, Event.REMOVE)
        entry = self._entries.pop(uid, None)
        if entry is not None:
            self._unconfirmed.pop(uid, None)
            self._unplace(uid)
        if remember:
            self._deleted.pop(uid, None)  # to the end: the dict stays in time order
            self._deleted[uid] = self.clock()
        return entry.pod if entry is not None else None

    def expire(self) -> list[Pod]:
        """Drop assumptions whose binding finished but never showed up in a watch."""
        now = self.clock()
        expired = []
        for uid in self._unconfirmed:
            e = self._entries[uid]
            if (
                e.deadline is not None
                and e.deadline <= now
                and e.state is PodState.BINDING_FINISHED
            ):
                expired.append(uid)
        pods = []
        for uid in expired:
            self._move(uid, Event.EXPIRE)
            pods.append(self._entries.pop(uid).pod)
            self._unconfirmed.pop(uid, None)
            self._unplace(uid)
        horizon = now - 10 * self.ttl
        old = []
        for uid, when in self._deleted.items():
            if when >= horizon:
                break
            old.append(uid)
        for uid in old:
            del self._deleted[uid]
        return pods
