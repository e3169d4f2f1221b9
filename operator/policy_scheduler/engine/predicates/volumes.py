"""The volume predicates: disk conflicts, volume zones, attach limits and volume binding.

Each predicate is kube-scheduler's legacy one (v1.13-v1.17), read against the cluster's
PVs, PVCs, StorageClasses and CSINodes:

* **NoDiskConflict** — the pod's inline GCE PD, AWS EBS, Ceph RBD and ISCSI volumes
  against those of the pods already on the node (``isVolumeConflict``): the same GCE PD
  or ISCSI IQN conflicts unless both mounts are read-only; the same EBS volume id always
  conflicts; RBD images conflict when the monitors share an entry, the pool and image are
  equal, and not both mounts are read-only.
* **NoVolumeZoneConflict** — for each PVC bound to a PV carrying zone or region labels
  (the beta ``failure-domain.beta.kubernetes.io/*`` and the GA ``topology.kubernetes.io/*``
  keys), the node must carry the same key with one of the PV's values (``a__b`` lists
  several zones). A node without any of these labels always fits. An unbound claim whose
  class is WaitForFirstConsumer is skipped (CheckVolumeBinding decides it).
* **MaxEBSVolumeCount / MaxGCEPDVolumeCount / MaxAzureDiskVolumeCount /
  MaxCinderVolumeCount** — unique volumes of one kind (inline, or through PVC -> PV) of
  the pod plus the pods on the node, against the limit: the node's allocatable
  ``attachable-volumes-<kind>`` if present, else ``KUBE_MAX_PD_VOLS``, else the default
  (EBS 39, or 25 on Nitro instance types; GCE PD 16; Azure 16; Cinder 256). An unbound
  claim, or one whose PV is missing, counts as a volume of its own when its
  spec.storageClassName names a class of the kind's in-tree provisioner.
* **MaxCSIVolumeCountPred** — CSI volumes (through PVC -> PV ``csi`` source, or an
  unbound claim's class provisioner) per driver, against the CSINode's
  ``spec.drivers[].allocatable.count`` or, as v1.17 still read it, the node's allocatable
  ``attachable-volumes-csi-<driver>``.
* **CheckVolumeBinding** — the scheduler side of the volume binder (``FindPodVolumes``):
  a bound claim's PV node affinity must match the node; an unbound WaitForFirstConsumer
  claim needs an available PV that fits on the node (the smallest that fits, claims
  taken smallest request first, one PV per claim), or a class that can provision
  there. For the node the decision chooses, :func:`find_pod_volumes` says which PV
  each claim was matched with and which claims are to be provisioned
  (:class:`PodVolumes`, carried by the decision); the scheduler cache assumes it
  (:func:`bound_to_claim`, :func:`with_selected_node`) so that the next decision
  cannot take the same PV, and the operator writes it to the API before binding the
  pod (``runtime/volumebinding.py``).

Errors. Where the legacy predicate returned an *error* rather than a reason (a PVC or PV
that cannot be found, an unbound claim with Immediate binding), the v1.17 framework
reported it against every node; we do the same: the error text is the failure reason,
so the summary reads ``0/3 nodes are available: 3 pod has unbound immediate
PersistentVolumeClaims.``. Missing PVCs are caught earlier by the algorithm's basic
checks (``persistentvolumeclaim "data" not found``, no node).

``KUBE_MAX_PD_VOLS`` is read once per scheduling attempt. v1.17 read it on every call
(v1.13 once at startup); either way a running scheduler sees the value its process was
started with, and reading it per attempt lets tests and ``simulate`` set it.

Not modelled: CSI migration of in-tree plugins (its feature gates were off by default
in v1.17, so migrated plugins never defer to the CSI predicate here).

Everything that depends on the pod only (its volumes resolved through PVCs and PVs,
its claims sorted for binding) is computed once per attempt in ``cycle.memo``; the
per-node work is set arithmetic over the node's pods.

Fast path hints: a pod without volumes of the kinds a predicate looks at cannot fail it
(NoDiskConflict: no GCE PD / EBS / RBD / ISCSI volume; the MaxPD family: none of its
kind and no claim; MaxCSIVolumeCountPred, CheckVolumeBinding, NoVolumeZoneConflict: no
claim), so the plan drops it. NoDiskConflict reads only the node's pods and is
``node_local``; the others read PVs, PVCs and classes, which no node generation
versions, and are never cached.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Final

from ... import names
from ...objects import (
    REGION_LABELS,
    ZONE_LABELS,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    StorageClass,
    Volume,
)
from ...selectors import terms_match
from ...volumenames import (
    ANN_BIND_COMPLETED,
    ANN_SELECTED_NODE,
    CLAIM_WITHOUT_NAME,
    DISK_CONFLICT,
    MAX_VOLUME_COUNT_EXCEEDED,
    NO_PROVISIONER,
    PVC,
    UNBOUND_IMMEDIATE_CLAIMS,
    VOLUME_BIND_CONFLICT,
    VOLUME_NODE_CONFLICT,
    VOLUME_ZONE_CONFLICT,
    WAIT_FOR_FIRST_CONSUMER,
)
from ..cluster import ClusterState
from ..functions import FITS, CycleState, Reasons, hint, predicate
from ..nodeinfo import NodeInfo

GCE_PD: Final = "gcePersistentDisk"
AWS_EBS: Final = "awsElasticBlockStore"
RBD: Final = "rbd"
ISCSI: Final = "iscsi"
AZURE_DISK: Final = "azureDisk"
CINDER: Final = "cinder"
CSI: Final = "csi"

KUBE_MAX_PD_VOLS: Final = "KUBE_MAX_PD_VOLS"
INSTANCE_TYPE_LABEL: Final = "beta.kubernetes.io/instance-type"

#: Zone and region labels NoVolumeZoneConflict compares, key by key.
VOLUME_ZONE_LABELS: Final = frozenset(ZONE_LABELS + REGION_LABELS)
MULTI_ZONE_DELIMITER: Final = "__"

ATTACHABLE_PREFIX: Final = "attachable-volumes-"
CSI_ATTACH_LIMIT_PREFIX: Final = "attachable-volumes-csi-"
RESOURCE_NAME_LENGTH_LIMIT: Final = 63

#: In-tree provisioners csi-translation-lib could migrate; with migration off (the v1.17
#: default) an unbound claim of such a class is not a CSI volume.
MIGRATABLE_IN_TREE_PLUGINS: Final = frozenset(
    {
        "kubernetes.io/aws-ebs",
        "kubernetes.io/gce-pd",
        "kubernetes.io/cinder",
        "kubernetes.io/azure-disk",
        "kubernetes.io/azure-file",
    }
)

# A volume's identity for counting: ("id", volume id) for a real volume, ("claim", ns,
# name) for a claim whose volume is not known yet (upstream's random-prefixed id).
VolumeKey = tuple[str, ...]


class VolumeLookupError(Exception):
    """What legacy kube-scheduler returned as an error; we report its text as a reason."""


def go_quote(text: str) -> str:
    """Go's %q for the names we print (printable text: a JSON string is the same)."""
    return json.dumps(text, ensure_ascii=False)


def _node_affinity_matches(pv: PersistentVolume, labels: Mapping[str, str]) -> bool:
    """volumeutil.CheckNodeAffinity: no required terms fits; fields are never given."""
    if pv.node_affinity is None:
        return True
    return terms_match(pv.node_affinity, labels, "")


# -- NoDiskConflict ------------------------------------------------------------------------

_CONFLICT_KINDS: Final = frozenset({GCE_PD, AWS_EBS, RBD, ISCSI})


def _volumes_conflict(new: Volume, old: Volume) -> bool:
    """isVolumeConflict for two volumes of the same kind and handle."""
    both_read_only = new.read_only and old.read_only
    if new.kind == AWS_EBS:
        return True
    if new.kind in (GCE_PD, ISCSI):
        return not both_read_only
    # RBD: the image is the same only in the same pool behind a shared monitor.
    return (
        bool(set(new.monitors) & set(old.monitors)) and new.pool == old.pool and not both_read_only
    )


def _conflict_index(pod: Pod) -> dict[tuple[str, str], list[Volume]]:
    index: dict[tuple[str, str], list[Volume]] = {}
    for volume in pod.volumes:
        if volume.kind in _CONFLICT_KINDS:
            index.setdefault((volume.kind, volume.handle), []).append(volume)
    return index


@predicate(names.NO_DISK_CONFLICT)
def no_disk_conflict(pod: Pod, node: NodeInfo, cycle: CycleState) -> Reasons:
    mine = cycle.memo("volumes.disk_conflict", lambda: _conflict_index(pod))
    if not mine:
        return FITS
    for existing in node.pods.values():
        for old in existing.volumes:
            for new in mine.get((old.kind, old.handle), ()):
                if _volumes_conflict(new, old):
                    return (DISK_CONFLICT,)
    return FITS


# -- NoVolumeZoneConflict ------------------------------------------------------------------


def _zones(value: str) -> frozenset[str] | None:
    """LabelZonesToSet: "a__b" is {a, b}; an empty entry makes the label unreadable."""
    zones = set()
    for part in value.split(MULTI_ZONE_DELIMITER):
        zone = part.strip()
        if not zone:
            return None
        zones.add(zone)
    return frozenset(zones)


#: A PV's zone and region labels, each with the zones it allows.
ZoneConstraints = tuple[tuple[str, frozenset[str]], ...]
# One step per PVC volume, in the pod's order: an error, or a PV's zone constraints.
_ZoneStep = str | ZoneConstraints


def volume_zone_constraints(pv: PersistentVolume) -> ZoneConstraints:
    """The zone and region labels of a PV that a node must match, with their zones."""
    constraints = []
    for key, value in pv.labels.items():
        if key not in VOLUME_ZONE_LABELS:
            continue
        zones = _zones(value)
        if zones is not None:  # an unreadable label is ignored, as upstream
            constraints.append((key, zones))
    return tuple(constraints)


def _zone_steps(pod: Pod, cluster: ClusterState) -> tuple[_ZoneStep, ...]:
    steps: list[_ZoneStep] = []
    for volume in pod.volumes:
        if volume.kind != PVC:
            continue
        if not volume.handle:
            steps.append(CLAIM_WITHOUT_NAME)
            continue
        pvc = cluster.claims.get(f"{pod.namespace}/{volume.handle}")
        if pvc is None:
            steps.append(f"persistentvolumeclaim {go_quote(volume.handle)} not found")
            continue
        if not pvc.volume_name:
            sc = cluster.storage_classes.get(pvc.class_name) if pvc.class_name else None
            if sc is not None and sc.binding_mode == WAIT_FOR_FIRST_CONSUMER:
                continue  # not bound yet: CheckVolumeBinding places it
            steps.append(f"PersistentVolumeClaim was not found: {go_quote(volume.handle)}")
            continue
        pv = cluster.persistent_volumes.get(pvc.volume_name)
        if pv is None:
            steps.append(f"persistentvolume {go_quote(pvc.volume_name)} not found")
            continue
        constraints = volume_zone_constraints(pv)
        if constraints:
            steps.append(constraints)
    return tuple(steps)


@predicate(names.NO_VOLUME_ZONE_CONFLICT)
def no_volume_zone_conflict(pod: Pod, node: NodeInfo, cycle: CycleState) -> Reasons:
    if not pod.volumes:
        return FITS
    labels = node.node.labels
    if not any(key in labels for key in VOLUME_ZONE_LABELS):
        # A node without zone labels fits whatever the volumes say.
        return FITS
    steps = cycle.memo("volumes.zone_steps", lambda: _zone_steps(pod, cycle.cluster))
    for step in steps:
        if isinstance(step, str):
            return (step,)
        for key, zones in step:
            if labels.get(key, "") not in zones:
                return (VOLUME_ZONE_CONFLICT,)
    return FITS


# -- MaxEBSVolumeCount, MaxGCEPDVolumeCount, MaxAzureDiskVolumeCount, MaxCinderVolumeCount --

DEFAULT_MAX_EBS_VOLUMES: Final = 39
DEFAULT_MAX_EBS_NITRO_VOLUMES: Final = 25
DEFAULT_MAX_GCE_PD_VOLUMES: Final = 16
DEFAULT_MAX_AZURE_DISK_VOLUMES: Final = 16
DEFAULT_MAX_CINDER_VOLUMES: Final = 256
#: volumeutil.EBSNitroLimitRegex, matched anywhere in the instance type as Go's MatchString.
EBS_NITRO_LIMIT_REGEX: Final = re.compile(r"^[cmr]5.*|t3|z1d")
_GO_INT: Final = re.compile(r"[+-]?[0-9]+")


@dataclass(frozen=True, slots=True)
class VolumeFilter:
    """Which volumes one MaxPD predicate counts, and where its limit comes from."""

    name: str
    kind: str  # the volume source key of inline volumes and PV sources
    provisioner: str  # the in-tree provisioner of the kind's storage classes
    limit_key: str  # node allocatable resource carrying the node's own limit
    default_limit: Callable[[Mapping[str, str]], int]


def _ebs_default(labels: Mapping[str, str]) -> int:
    if EBS_NITRO_LIMIT_REGEX.search(labels.get(INSTANCE_TYPE_LABEL, "")):
        return DEFAULT_MAX_EBS_NITRO_VOLUMES
    return DEFAULT_MAX_EBS_VOLUMES


EBS_FILTER: Final = VolumeFilter(
    "EBS", AWS_EBS, "kubernetes.io/aws-ebs", "attachable-volumes-aws-ebs", _ebs_default
)
GCE_PD_FILTER: Final = VolumeFilter(
    "GCE",
    GCE_PD,
    "kubernetes.io/gce-pd",
    "attachable-volumes-gce-pd",
    lambda _: DEFAULT_MAX_GCE_PD_VOLUMES,
)
AZURE_DISK_FILTER: Final = VolumeFilter(
    "AzureDisk",
    AZURE_DISK,
    "kubernetes.io/azure-disk",
    "attachable-volumes-azure-disk",
    lambda _: DEFAULT_MAX_AZURE_DISK_VOLUMES,
)
CINDER_FILTER: Final = VolumeFilter(
    "Cinder",
    CINDER,
    "kubernetes.io/cinder",
    "attachable-volumes-cinder",
    lambda _: DEFAULT_MAX_CINDER_VOLUMES,
)


def max_volumes_from_env() -> int | None:
    """KUBE_MAX_PD_VOLS when it is a positive integer; anything else means the default."""
    raw = os.environ.get(KUBE_MAX_PD_VOLS, "")
    # strconv.Atoi: an optional sign and decimal digits, nothing else (no spaces).
    if not _GO_INT.fullmatch(raw):
        return None
    value = int(raw)
    return value if value > 0 else None


def _matches_provisioner(
    pvc: PersistentVolumeClaim, flt: VolumeFilter, cluster: ClusterState
) -> bool:
    """matchProvisioner: only spec.storageClassName counts, not the beta annotation."""
    if pvc.spec_storage_class is None:
        return False
    sc = cluster.storage_classes.get(pvc.spec_storage_class)
    return sc is not None and sc.provisioner == flt.provisioner


def _filter_volumes(
    volumes: Iterable[Volume], namespace: str, flt: VolumeFilter, cluster: ClusterState
) -> set[VolumeKey]:
    """filterVolumes: the unique volumes of the filter's kind, direct or through claims."""
    found: set[VolumeKey] = set()
    for volume in volumes:
        if volume.kind == flt.kind:
            found.add(("id", volume.handle))
            continue
        if volume.kind != PVC:
            continue
        if not volume.handle:
            raise VolumeLookupError(CLAIM_WITHOUT_NAME)
        pvc = cluster.claims.get(f"{namespace}/{volume.handle}")
        if pvc is None:
            continue  # no telling whether it is of this kind: not counted
        pv = cluster.persistent_volumes.get(pvc.volume_name) if pvc.volume_name else None
        if pv is None:
            # Unbound, or bound to a PV that is gone: the pod may still use a volume of
            # this kind, so a claim of the kind's class counts as one volume of its own.
            if _matches_provisioner(pvc, flt, cluster):
                found.add(("claim", namespace, volume.handle))
            continue
        if pv.source.kind == flt.kind:
            found.add(("id", pv.source.handle))
    return found


def _pod_pd_volumes(pod: Pod, flt: VolumeFilter, cluster: ClusterState) -> set[VolumeKey] | str:
    try:
        return _filter_volumes(pod.volumes, pod.namespace, flt, cluster)
    except VolumeLookupError as exc:
        return str(exc)


def _max_pd_predicate(flt: VolumeFilter) -> Callable[[Pod, NodeInfo, CycleState], Reasons]:
    memo_key = f"volumes.max_pd.{flt.name}"

    def check(pod: Pod, node: NodeInfo, cycle: CycleState) -> Reasons:
        if not pod.volumes:
            return FITS
        cluster = cycle.cluster
        new = cycle.memo(memo_key, lambda: _pod_pd_volumes(pod, flt, cluster))
        if isinstance(new, str):
            return (new,)
        if not new:
            return FITS
        existing: set[VolumeKey] = set()
        try:
            for other in node.pods.values():
                if other.volumes:
                    existing |= _filter_volumes(other.volumes, other.namespace, flt, cluster)
        except VolumeLookupError as exc:
            return (str(exc),)
        env_limit = cycle.memo("volumes.max_pd_env", max_volumes_from_env)
        limit = env_limit if env_limit is not None else flt.default_limit(node.node.labels)
        # The node's own attachable-volumes-* allocatable wins over both (AttachVolumeLimit).
        if flt.limit_key in node.node.allocatable.scalar:
            limit = node.node.allocatable.scalar[flt.limit_key]
        if len(existing) + len(new - existing) > limit:
            return (MAX_VOLUME_COUNT_EXCEEDED,)
        return FITS

    check.__name__ = f"max_{flt.name.lower()}_volume_count"

    def never_fails(pod: Pod) -> bool:
        # No volume of the kind and no claim that could lead to one: ``new`` is empty.
        return not any(v.kind == flt.kind or v.kind == PVC for v in pod.volumes)

    return hint(check, never_fails=never_fails)


max_ebs_volume_count = predicate(names.MAX_EBS_VOLUME_COUNT)(_max_pd_predicate(EBS_FILTER))
max_gce_pd_volume_count = predicate(names.MAX_GCE_PD_VOLUME_COUNT)(_max_pd_predicate(GCE_PD_FILTER))
max_azure_disk_volume_count = predicate(names.MAX_AZURE_DISK_VOLUME_COUNT)(
    _max_pd_predicate(AZURE_DISK_FILTER)
)
max_cinder_volume_count = predicate(names.MAX_CINDER_VOLUME_COUNT)(_max_pd_predicate(CINDER_FILTER))


# -- MaxCSIVolumeCountPred -----------------------------------------------------------------


def csi_attach_limit_key(driver: str) -> str:
    """volumeutil.GetCSIAttachLimitKey: long driver names are cut and hashed to fit 63."""
    if len(CSI_ATTACH_LIMIT_PREFIX) + len(driver) >= RESOURCE_NAME_LENGTH_LIMIT:
        digest = hashlib.sha1(driver.encode()).hexdigest()[:16]
        return CSI_ATTACH_LIMIT_PREFIX + driver[:23] + digest
    return CSI_ATTACH_LIMIT_PREFIX + driver


def _csi_driver_from_class(
    pvc: PersistentVolumeClaim, cluster: ClusterState
) -> tuple[str, VolumeKey] | None:
    """getCSIDriverInfoFromSC: a claim without a known volume counts by its provisioner."""
    if not pvc.class_name:
        return None  # no class: an Immediate claim, bound before scheduling
    sc = cluster.storage_classes.get(pvc.class_name)
    if sc is None or sc.provisioner in MIGRATABLE_IN_TREE_PLUGINS:
        return None
    return sc.provisioner, ("claim", pvc.namespace, pvc.name)


def _csi_volumes(
    volumes: Iterable[Volume], namespace: str, cluster: ClusterState
) -> dict[tuple[str, VolumeKey], str]:
    """filterAttachableVolumes: unique (driver, volume) -> the driver's limit key."""
    found: dict[tuple[str, VolumeKey], str] = {}
    for volume in volumes:
        if volume.kind != PVC:
            continue  # CSI volumes come only through claims
        if not volume.handle:
            raise VolumeLookupError(CLAIM_WITHOUT_NAME)
        pvc = cluster.claims.get(f"{namespace}/{volume.handle}")
        if pvc is None:
            continue
        pv = cluster.persistent_volumes.get(pvc.volume_name) if pvc.volume_name else None
        info: tuple[str, VolumeKey] | None
        if pv is None:
            info = _csi_driver_from_class(pvc, cluster)
        elif pv.source.kind == CSI:
            info = (pv.source.driver, ("id", pv.source.handle)) if pv.source.handle else None
        else:
            info = None  # an in-tree PV, not migrated
        if info is None or not info[0]:
            continue
        found[info] = csi_attach_limit_key(info[0])
    return found


def _pod_csi_volumes(pod: Pod, cluster: ClusterState) -> dict[tuple[str, VolumeKey], str] | str:
    try:
        return _csi_volumes(pod.volumes, pod.namespace, cluster)
    except VolumeLookupError as exc:
        return str(exc)


def _csi_limits(node: NodeInfo, cluster: ClusterState) -> dict[str, int]:
    """getVolumeLimits: the node's attachable-volumes-* allocatable, CSINode counts on top."""
    limits = {
        key: amount
        for key, amount in node.node.allocatable.scalar.items()
        if key.startswith(ATTACHABLE_PREFIX)
    }
    csi_node = cluster.csi_nodes.get(node.name)
    if csi_node is not None:
        for driver, info in csi_node.drivers.items():
            if info.allocatable is not None:
                limits[csi_attach_limit_key(driver)] = info.allocatable
    return limits


@predicate(names.MAX_CSI_VOLUME_COUNT)
def max_csi_volume_count(pod: Pod, node: NodeInfo, cycle: CycleState) -> Reasons:
    if not pod.volumes:
        return FITS
    cluster = cycle.cluster
    new = cycle.memo("volumes.csi", lambda: _pod_csi_volumes(pod, cluster))
    if isinstance(new, str):
        return (new,)
    if not new:
        return FITS
    limits = _csi_limits(node, cluster)
    if not limits:
        return FITS
    attached: dict[tuple[str, VolumeKey], str] = {}
    try:
        for other in node.pods.values():
            if other.volumes:
                attached.update(_csi_volumes(other.volumes, other.namespace, cluster))
    except VolumeLookupError as exc:
        return (str(exc),)
    attached_count: dict[str, int] = {}
    for limit_key in attached.values():
        attached_count[limit_key] = attached_count.get(limit_key, 0) + 1
    new_count: dict[str, int] = {}
    for unique, limit_key in new.items():
        if unique not in attached:  # a volume already attached is not attached twice
            new_count[limit_key] = new_count.get(limit_key, 0) + 1
    for limit_key, count in new_count.items():
        limit = limits.get(limit_key)
        if limit is not None and attached_count.get(limit_key, 0) + count > limit:
            return (MAX_VOLUME_COUNT_EXCEEDED,)
    return FITS


# -- CheckVolumeBinding --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _PodClaims:
    """getPodVolumes: the pod's claims split the way FindPodVolumes handles them."""

    error: str | None
    bound: tuple[PersistentVolumeClaim, ...]
    #: Unbound WaitForFirstConsumer claims, smallest request first (byPVCSize).
    to_bind: tuple[PersistentVolumeClaim, ...]
    #: Candidate PVs per claim class (the PV cache's storage-class index).
    candidates: Mapping[str, tuple[PersistentVolume, ...]]


def fully_bound(pvc: PersistentVolumeClaim) -> bool:
    """The claim names its volume and the PV controller finished binding it."""
    return bool(pvc.volume_name) and ANN_BIND_COMPLETED in pvc.annotations


def delay_binding(pvc: PersistentVolumeClaim, cluster: ClusterState) -> bool:
    """``IsDelayBindingMode``: no class, or an unknown one, binds Immediately."""
    if not pvc.class_name:
        return False
    sc = cluster.storage_classes.get(pvc.class_name)
    return sc is not None and sc.binding_mode == WAIT_FOR_FIRST_CONSUMER


def _pod_claims(pod: Pod, cluster: ClusterState) -> _PodClaims:
    bound: list[PersistentVolumeClaim] = []
    to_bind: list[PersistentVolumeClaim] = []
    immediate = False
    for volume in pod.volumes:
        if volume.kind != PVC:
            continue
        key = f"{pod.namespace}/{volume.handle}"
        pvc = cluster.claims.get(key)
        if pvc is None:
            missing = f"could not find v1.PersistentVolumeClaim {go_quote(key)}"
            return _PodClaims(f"error getting PVC {go_quote(key)}: {missing}", (), (), {})
        if fully_bound(pvc):
            bound.append(pvc)
        elif delay_binding(pvc, cluster) and not pvc.volume_name:
            to_bind.append(pvc)
        else:
            # Immediate claims (and pre-bound ones) should have been bound already.
            immediate = True
    if immediate:
        return _PodClaims(UNBOUND_IMMEDIATE_CLAIMS, (), (), {})
    to_bind.sort(key=lambda c: c.request)
    # The PV cache indexes PVs by spec.storageClassName (not the annotation).
    candidates: dict[str, tuple[PersistentVolume, ...]] = {}
    for pvc in to_bind:
        wanted = pvc.class_name
        if wanted not in candidates:
            pvs = cluster.persistent_volumes.values()
            candidates[wanted] = tuple(pv for pv in pvs if pv.storage_class == wanted)
    return _PodClaims(None, tuple(bound), tuple(to_bind), candidates)


def _bound_to_claim(pv: PersistentVolume, pvc: PersistentVolumeClaim) -> bool:
    """IsVolumeBoundToClaim: the claimRef names the claim (and its uid, when set)."""
    if pv.claim != pvc.key:
        return False
    return not pv.claim_uid or pv.claim_uid == pvc.uid


def find_matching_volume(
    pvc: PersistentVolumeClaim,
    volumes: Iterable[PersistentVolume],
    node_labels: Mapping[str, str],
    excluded: set[str],
) -> PersistentVolume | None:
    """FindMatchingVolume on the scheduler path: a pre-bound PV, else the smallest fit."""
    smallest: PersistentVolume | None = None
    for pv in volumes:
        if pv.name in excluded or pv.volume_mode != pvc.volume_mode or pv.deleting:
            continue
        affinity_ok = _node_affinity_matches(pv, node_labels)
        if _bound_to_claim(pv, pvc):
            if pv.capacity < pvc.request:
                continue
            # A PV pre-bound to this claim that cannot reach the node rules the node out.
            return pv if affinity_ok else None
        if pv.phase != "Available" or pv.has_claim_ref or pv.claim:
            continue
        if pvc.selector is not None and not pvc.selector.matches(pv.labels):
            continue
        if pv.class_name != pvc.class_name or not affinity_ok:
            continue
        if not pvc.access_modes <= pv.access_modes:
            continue
        if pv.capacity >= pvc.request and (smallest is None or smallest.capacity > pv.capacity):
            smallest = pv
    return smallest


def _can_provision(
    claims: Iterable[PersistentVolumeClaim], node: NodeInfo, cluster: ClusterState
) -> bool:
    """checkVolumeProvisions: every claim's class can provision a volume on this node."""
    for pvc in claims:
        if not pvc.class_name:
            raise VolumeLookupError(f"no class for claim {go_quote(pvc.key)}")
        sc: StorageClass | None = cluster.storage_classes.get(pvc.class_name)
        if sc is None:
            raise VolumeLookupError(f"failed to find storage class {go_quote(pvc.class_name)}")
        if not sc.provisioner or sc.provisioner == NO_PROVISIONER:
            return False
        # An empty allowedTopologies list admits every node.
        topologies = sc.allowed_topologies
        if topologies and not terms_match(topologies, node.node.labels, ""):
            return False
    return True


@dataclass(frozen=True, slots=True)
class PodVolumes:
    """FindPodVolumes' result for the chosen node: what binding the pod's volumes takes.

    ``matched``: unbound WaitForFirstConsumer claims and the available PV found for each
    on the node (the scheduler writes the PV's claimRef); ``provisioned``: claims a
    volume will be provisioned for on the node (the scheduler writes the claim's
    selected-node annotation); ``bound``: claims already bound, with their PV. Objects
    are the versions the decision saw, whose resourceVersions the writes carry.
    """

    node: str
    bound: tuple[tuple[PersistentVolumeClaim, PersistentVolume], ...] = ()
    matched: tuple[tuple[PersistentVolumeClaim, PersistentVolume], ...] = ()
    provisioned: tuple[PersistentVolumeClaim, ...] = ()

    @property
    def needs_binding(self) -> bool:
        """Anything to write before the pod is bound (AssumePodVolumes' "not all bound")."""
        return bool(self.matched or self.provisioned)


def split_by_selected_node(
    to_bind: Sequence[PersistentVolumeClaim], node_name: str
) -> tuple[list[PersistentVolumeClaim], list[PersistentVolumeClaim]] | None:
    """FindPodVolumes' first step: the claims to match with a PV, and those a
    provisioner already chose this node for; None when one was chosen for another."""
    to_match: list[PersistentVolumeClaim] = []
    to_provision: list[PersistentVolumeClaim] = []
    for pvc in to_bind:
        selected = pvc.annotations.get(ANN_SELECTED_NODE)
        if selected is None:
            to_match.append(pvc)
        elif selected != node_name:
            return None
        else:
            to_provision.append(pvc)
    return to_match, to_provision


def match_volumes(
    to_match: Sequence[PersistentVolumeClaim],
    candidates: Mapping[str, tuple[PersistentVolume, ...]],
    labels: Mapping[str, str],
) -> tuple[list[tuple[PersistentVolumeClaim, PersistentVolume]], list[PersistentVolumeClaim]]:
    """``findMatchingVolumes``: each claim, in order, gets the smallest free PV of its
    class this node can reach (none chosen twice); the claims left unmatched."""
    chosen: set[str] = set()
    matched: list[tuple[PersistentVolumeClaim, PersistentVolume]] = []
    unmatched: list[PersistentVolumeClaim] = []
    for pvc in to_match:
        pv = find_matching_volume(pvc, candidates[pvc.class_name], labels, chosen)
        if pv is None:
            unmatched.append(pvc)
        else:
            chosen.add(pv.name)
            matched.append((pvc, pv))
    return matched, unmatched


@dataclass(frozen=True, slots=True)
class _Found:
    """One node's verdict on the pod's claims, and the bindings that make it."""

    reasons: Reasons
    matched: tuple[tuple[PersistentVolumeClaim, PersistentVolume], ...] = ()
    provisioned: tuple[PersistentVolumeClaim, ...] = ()


def _find_pod_volumes(claims: _PodClaims, node: NodeInfo, cluster: ClusterState) -> _Found:
    labels = node.node.labels
    bound_ok = True
    for pvc in claims.bound:
        pv = cluster.persistent_volumes.get(pvc.volume_name)
        if pv is None:
            raise VolumeLookupError(
                f"could not find v1.PersistentVolume {go_quote(pvc.volume_name)}"
            )
        if not _node_affinity_matches(pv, labels):
            bound_ok = False
            break
    if not claims.to_bind:
        return _Found(_binding_reasons(bound_ok, True))
    split = split_by_selected_node(claims.to_bind, node.name)
    if split is None:  # provisioning already started for another node
        return _Found(_binding_reasons(bound_ok, False))
    to_match, to_provision = split
    matched, unmatched = match_volumes(to_match, claims.candidates, labels)
    unbound_ok = not unmatched
    to_provision.extend(unmatched)
    if to_provision:
        unbound_ok = _can_provision(to_provision, node, cluster)
    return _Found(_binding_reasons(bound_ok, unbound_ok), tuple(matched), tuple(to_provision))


def _binding_reasons(bound_ok: bool, unbound_ok: bool) -> Reasons:
    if bound_ok and unbound_ok:
        return FITS
    reasons: list[str] = []
    if not bound_ok:
        reasons.append(VOLUME_NODE_CONFLICT)
    if not unbound_ok:
        reasons.append(VOLUME_BIND_CONFLICT)
    return tuple(reasons)


def _has_claims(pod: Pod) -> bool:
    for volume in pod.volumes:
        if volume.kind == PVC:
            return True
    return False


@predicate(names.CHECK_VOLUME_BINDING)
def check_volume_binding(pod: Pod, node: NodeInfo, cycle: CycleState) -> Reasons:
    if not _has_claims(pod):
        return FITS
    cluster = cycle.cluster
    claims = cycle.memo("volumes.binding", lambda: _pod_claims(pod, cluster))
    if claims.error is not None:
        return (claims.error,)
    try:
        return _find_pod_volumes(claims, node, cluster).reasons
    except VolumeLookupError as exc:
        return (str(exc),)


def find_pod_volumes(pod: Pod, node: NodeInfo, cycle: CycleState) -> PodVolumes | None:
    """What binding the pod's claims on ``node`` takes, once CheckVolumeBinding let the
    pod onto it (the binder's per-node cache, recomputed for the chosen node alone: the
    decision's snapshot has not changed since). None for a pod without claims, or when
    the node does not satisfy them after all."""
    if not _has_claims(pod):
        return None
    cluster = cycle.cluster
    claims = cycle.memo("volumes.binding", lambda: _pod_claims(pod, cluster))
    if claims.error is not None:
        return None
    try:
        found = _find_pod_volumes(claims, node, cluster)
    except VolumeLookupError:
        return None
    if found.reasons:
        return None
    bound = tuple((pvc, cluster.persistent_volumes[pvc.volume_name]) for pvc in claims.bound)
    return PodVolumes(node.name, bound, found.matched, found.provisioned)


# -- what the binder assumes ---------------------------------------------------------------


def bound_to_claim(pv: PersistentVolume, pvc: PersistentVolumeClaim) -> PersistentVolume:
    """GetBindVolumeToClaim on our objects: the PV as it reads once its claimRef names
    the claim (what the cache assumes until the API says so)."""
    return replace(pv, claim=pvc.key, claim_uid=pvc.uid, has_claim_ref=True)


def with_selected_node(pvc: PersistentVolumeClaim, node: str) -> PersistentVolumeClaim:
    """The claim as it reads once annotated for provisioning on ``node``."""
    return replace(pvc, annotations={**pvc.annotations, ANN_SELECTED_NODE: node})


# -- fast path hints -------------------------------------------------------------------------


def _without_claims(pod: Pod) -> bool:
    return not _has_claims(pod)


hint(
    no_disk_conflict,
    node_local=True,
    never_fails=lambda pod: not any(v.kind in _CONFLICT_KINDS for v in pod.volumes),
)
hint(no_volume_zone_conflict, never_fails=_without_claims)
hint(max_csi_volume_count, never_fails=_without_claims)
hint(check_volume_binding, never_fails=_without_claims)
