"""VolumeZone, kube-scheduler v1.30's volume topology-label plugin.

PreFilter and Filter, as upstream's ``volumezone`` plugin:

* **PreFilter** walks the pod's ``persistentVolumeClaim`` volumes (generic ephemeral
  volumes are not looked at) and collects, for each claim bound to a PV, the PV's zone
  and region labels among ``failure-domain.beta.kubernetes.io/zone``,
  ``failure-domain.beta.kubernetes.io/region``, ``topology.kubernetes.io/zone`` and
  ``topology.kubernetes.io/region``, each with its set of values (``a__b`` is a and b;
  a value with an empty entry is ignored). An unbound claim whose class is
  WaitForFirstConsumer is skipped (VolumeBinding places it). Everything else that
  stands in the way is UnschedulableAndUnresolvable, in upstream's words:
  ``PersistentVolumeClaim had no name``, ``persistentvolumeclaim "c" not found``,
  ``PersistentVolumeClaim had no pv name and storageClass name``,
  ``storageclass.storage.k8s.io "sc" not found``, ``PersistentVolume had no name`` (an
  unbound claim of an Immediate class), ``persistentvolume "pv" not found``. Skip when
  no label was collected.
* **Filter**: a node carrying none of the four labels fits (a single-zone cluster);
  otherwise, for each collected label, the node's value for that key (or, when the
  node lacks a beta key, for its GA twin) must be one of the PV's values, else
  UnschedulableAndUnresolvable ``node(s) had no available volume zone``.

Versus the legacy NoVolumeZoneConflict (engine/predicates/volumes.py): the errors are
PreFilter's Unresolvable statuses in v1.30's words instead of reasons; a PV's beta
label matches a node that has only the GA label; the conflict is Unresolvable.

Fast path: a pod without a claim is Skipped (``never_fails``). PVs and claims are not
versioned by a node's generation, so the check is never served from the cache.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from ...objects import Pod
from ...volumenames import CLAIM_WITHOUT_NAME, PVC, VOLUME_ZONE_CONFLICT, WAIT_FOR_FIRST_CONSUMER
from ..functions import FITS, CycleState, Predicate, Reasons, Unresolvable, hint
from ..interface import FilterPlugin, Handle, NodeInfoView, PreFilterPlugin, PreFilterResult, Status
from ..nodeinfo import NodeInfo
from ..predicates.volumes import ZoneConstraints
from ..predicates.volumes import volume_zone_constraints as _pv_zone_constraints
from ._volumes import claim_not_found, not_found, run_filter, unresolvable

NAME: Final = "VolumeZone"

#: ``ErrReasonConflict``.
ERR_REASON_CONFLICT: Final = VOLUME_ZONE_CONFLICT
CLAIM_WITHOUT_VOLUME_OR_CLASS: Final = "PersistentVolumeClaim had no pv name and storageClass name"
VOLUME_WITHOUT_NAME: Final = "PersistentVolume had no name"

BETA_ZONE: Final = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION: Final = "failure-domain.beta.kubernetes.io/region"
GA_ZONE: Final = "topology.kubernetes.io/zone"
GA_REGION: Final = "topology.kubernetes.io/region"
#: ``topologyLabels``, in upstream's order.
TOPOLOGY_LABELS: Final = (BETA_ZONE, BETA_REGION, GA_ZONE, GA_REGION)
_GA_TWIN: Final = {BETA_ZONE: GA_ZONE, BETA_REGION: GA_REGION}

_MEMO: Final = "intree.VolumeZone"
_CONFLICT: Final = (Unresolvable(ERR_REASON_CONFLICT),)


@dataclass(frozen=True, slots=True)
class ZoneState:
    """PreFilter's result: why the pod cannot be placed at all, or the PVs' labels."""

    error: str | None = None
    topologies: ZoneConstraints = ()


def zone_state(pod: Pod, cycle: CycleState) -> ZoneState:
    """``getPVbyPod``: the labels of the PVs the pod's claims are bound to."""
    cluster = cycle.cluster
    found: list[tuple[str, frozenset[str]]] = []
    for volume in pod.volumes:
        if volume.kind != PVC:
            continue
        if not volume.handle:
            return ZoneState(CLAIM_WITHOUT_NAME)
        pvc = cluster.claims.get(f"{pod.namespace}/{volume.handle}")
        if pvc is None:
            return ZoneState(claim_not_found(volume.handle))
        if not pvc.volume_name:
            class_name = pvc.class_name
            if not class_name:
                return ZoneState(CLAIM_WITHOUT_VOLUME_OR_CLASS)
            sc = cluster.storage_classes.get(class_name)
            if sc is None:
                return ZoneState(not_found("storageclass.storage.k8s.io", class_name))
            if sc.binding_mode == WAIT_FOR_FIRST_CONSUMER:
                continue
            return ZoneState(VOLUME_WITHOUT_NAME)
        pv = cluster.persistent_volumes.get(pvc.volume_name)
        if pv is None:
            return ZoneState(not_found("persistentvolume", pvc.volume_name))
        constraints = dict(_pv_zone_constraints(pv))
        found.extend((key, constraints[key]) for key in TOPOLOGY_LABELS if key in constraints)
    return ZoneState(topologies=tuple(found))


def _state(pod: Pod, cycle: CycleState) -> ZoneState:
    return cycle.memo(_MEMO, lambda: zone_state(pod, cycle))


def check(pod: Pod, node: NodeInfo, cycle: CycleState) -> Reasons:
    """PreFilter's verdict (on every node, as the framework reports it) then Filter."""
    if not pod.volumes:
        return FITS
    state = _state(pod, cycle)
    if state.error is not None:
        return unresolvable(state.error)
    if not state.topologies:
        return FITS
    labels = node.node.labels
    if not any(key in labels for key in TOPOLOGY_LABELS):
        return FITS
    for key, zones in state.topologies:
        value = labels.get(key)
        if value is None:
            twin = _GA_TWIN.get(key)
            value = labels.get(twin) if twin is not None else None
        if value is None or value not in zones:
            return _CONFLICT
    return FITS


hint(check, never_fails=lambda pod: not any(v.kind == PVC for v in pod.volumes))


class VolumeZone(PreFilterPlugin, FilterPlugin):
    """kube-scheduler's VolumeZone: PreFilter, Filter (module docstring)."""

    name = NAME

    def __init__(self, args: Any, handle: Handle) -> None:
        super().__init__(args, handle)

    def predicate(self) -> Predicate:
        return check

    def pre_filter(self, state: CycleState, pod: Pod) -> PreFilterResult | Status | None:
        found = _state(pod, state)
        if found.error is not None:
            return Status.unresolvable(found.error)
        if not found.topologies:
            return Status.skip()
        return None

    def filter(self, state: CycleState, pod: Pod, node: NodeInfoView) -> Status | None:
        return run_filter(check, state, pod, node)

    def events_to_register(self) -> list[object]:
        """QueueingHints (v1.34): a node added or relabelled; the pod's PVCs
        added or changed, volumes added or rezoned, WaitForFirstConsumer classes added
        (``_queueing``)."""
        from ._queueing import volume_zone_events

        return list(volume_zone_events())
