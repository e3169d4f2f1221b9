"""VolumeRestrictions, kube-scheduler v1.30's disk-conflict and ReadWriteOncePod plugin.

PreFilter and Filter, as upstream's ``volumerestrictions`` plugin:

* **PreFilter** looks up every claim the pod mounts through a ``persistentVolumeClaim``
  volume (a claim that does not exist: UnschedulableAndUnresolvable with the lister's
  words, ``persistentvolumeclaim "data" not found``) and keeps those whose access modes
  include ``ReadWriteOncePod``, counting how many of them a placed pod (bound or
  assumed, on a known node) already mounts. Skip when the pod has no GCE PD, AWS EBS,
  Ceph RBD or ISCSI volume and none of its ReadWriteOncePod claims is in use.
* **Filter**: first the disk conflicts with the pods on the node (the legacy
  NoDiskConflict rule, unchanged since v1.13: the same GCE PD or ISCSI IQN unless both
  mounts are read-only, the same EBS volume id, the same RBD image in the same pool
  behind a shared monitor unless both read-only) -> Unschedulable ``node(s) had no
  available disk``; then, on *every* node, a ReadWriteOncePod claim in use ->
  Unschedulable ``node has pod using PersistentVolumeClaim with the same name and
  ReadWriteOncePod access mode``. Unschedulable, not Unresolvable (v1.27+): evicting
  the pod that holds the claim makes room, and preemption's trial takes it off the
  cluster, so the count computed for the trial's cycle no longer includes it (upstream
  counts it down in RemovePod).

Versus the brief's "PreFilter with ReadWriteOncePod conflicts -> Unresolvable": that was
v1.22-v1.26; v1.27 moved the conflict to Filter as Unschedulable so that preemption can
free the claim. This follows v1.30.

Fast path: a pod with neither a conflict-kind volume nor a claim is Skipped
(``never_fails``). The check reads other nodes' pods (the claims in use), so it is not
node-local and never served from the equivalence cache.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from ...objects import Pod
from ...volumenames import DISK_CONFLICT, PVC
from ..functions import FITS, CycleState, Predicate, Reasons, hint
from ..interface import FilterPlugin, Handle, NodeInfoView, PreFilterPlugin, PreFilterResult, Status
from ..nodeinfo import NodeInfo
from ..predicates.volumes import no_disk_conflict
from ._volumes import claim_not_found, run_filter, unresolvable

NAME: Final = "VolumeRestrictions"

#: ``ErrReasonDiskConflict``.
ERR_REASON_DISK_CONFLICT: Final = DISK_CONFLICT
#: ``ErrReasonReadWriteOncePodConflict``.
ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT: Final = (
    "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
)
READ_WRITE_ONCE_POD: Final = "ReadWriteOncePod"

_CONFLICT_KINDS: Final = frozenset({"gcePersistentDisk", "awsElasticBlockStore", "rbd", "iscsi"})
_MEMO: Final = "intree.VolumeRestrictions"
_RWOP_CONFLICT: Final = (ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT,)


@dataclass(frozen=True, slots=True)
class RestrictionsState:
    """What PreFilter found: a missing claim (``error``), or whether Filter runs and
    how many of the pod's ReadWriteOncePod claims placed pods already mount."""

    error: str | None = None
    skip: bool = False
    read_write_once_pod_claims: frozenset[str] = frozenset()
    conflicting_claims: int = 0


def restrictions_state(pod: Pod, cycle: CycleState) -> RestrictionsState:
    """PreFilter's computation (``readWriteOncePodPVCsForPod`` + ``calPreFilterState``)."""
    cluster = cycle.cluster
    needs_check = False
    claims: set[str] = set()
    for volume in pod.volumes:
        if volume.kind in _CONFLICT_KINDS:
            needs_check = True
        elif volume.kind == PVC:
            pvc = cluster.claims.get(f"{pod.namespace}/{volume.handle}")
            if pvc is None:
                return RestrictionsState(error=claim_not_found(volume.handle))
            if READ_WRITE_ONCE_POD in pvc.access_modes:
                claims.add(pvc.name)
    in_use = _claims_in_use(pod, claims, cycle) if claims else 0
    return RestrictionsState(
        skip=not needs_check and in_use == 0,
        read_write_once_pod_claims=frozenset(claims),
        conflicting_claims=in_use,
    )


def _claims_in_use(pod: Pod, claims: set[str], cycle: CycleState) -> int:
    """How many of ``claims`` a placed pod on a known node mounts (the snapshot's
    ``usedPVCSet`` holds only ``persistentVolumeClaim`` volumes, not ephemeral ones)."""
    cluster = cycle.cluster
    used: set[str] = set()
    for other in cluster.pods_in((pod.namespace,)):
        if other.uid == pod.uid or other.node_name not in cluster.nodes:
            continue
        for volume in other.volumes:
            if volume.kind == PVC and volume.handle in claims:
                used.add(volume.handle)
    return len(used)


def _state(pod: Pod, cycle: CycleState) -> RestrictionsState:
    return cycle.memo(_MEMO, lambda: restrictions_state(pod, cycle))


def check(pod: Pod, node: NodeInfo, cycle: CycleState) -> Reasons:
    """PreFilter's verdict (on every node, as the framework reports it) then Filter."""
    state = _state(pod, cycle)
    if state.error is not None:
        return unresolvable(state.error)
    if state.skip:
        return FITS
    if no_disk_conflict(pod, node, cycle):
        return (ERR_REASON_DISK_CONFLICT,)
    if state.conflicting_claims > 0:
        return _RWOP_CONFLICT
    return FITS


def _never_fails(pod: Pod) -> bool:
    return not any(v.kind in _CONFLICT_KINDS or v.kind == PVC for v in pod.volumes)


hint(check, never_fails=_never_fails)


class VolumeRestrictions(PreFilterPlugin, FilterPlugin):
    """kube-scheduler's VolumeRestrictions: PreFilter, Filter (module docstring)."""

    name = NAME

    def __init__(self, args: Any, handle: Handle) -> None:
        super().__init__(args, handle)

    def predicate(self) -> Predicate:
        return check

    def pre_filter(self, state: CycleState, pod: Pod) -> PreFilterResult | Status | None:
        found = _state(pod, state)
        if found.error is not None:
            return Status.unresolvable(found.error)
        if found.skip:
            return Status.skip()
        return None

    def filter(self, state: CycleState, pod: Pod, node: NodeInfoView) -> Status | None:
        return run_filter(check, state, pod, node)

    def events_to_register(self) -> list[object]:
        """QueueingHints (v1.34): nodes and the pod's PVCs added, placed pods sharing a
        volume with it deleted (``_queueing``)."""
        from ._queueing import volume_restrictions_events

        return list(volume_restrictions_events())
