"""NodeVolumeLimits, EBSLimits, GCEPDLimits, AzureDiskLimits, CinderLimits (v1.30).

Attach limits, as upstream's ``nodevolumelimits`` plugins (PreFilter, Filter). Each
counts the *unique* volumes of the pod plus those of the pods already on the node and
refuses the node, Unschedulable ``node(s) exceed max volume count``, when the count
would pass the limit. A volume the node already has attached is not counted twice.

**NodeVolumeLimits** (``CSILimits``) counts per CSI driver:

* the pod's volumes: a ``persistentVolumeClaim`` or generic ``ephemeral`` volume
  (claim ``<pod>-<volume>``, which the pod must control) through its claim: a bound
  PV with a ``csi`` source is that driver and volume handle; a PV of a migrated in-tree
  plugin (:mod:`._migration`: EBS, GCE PD, Azure Disk, Cinder on a node with a CSINode)
  is its CSI driver and translated handle; an unbound claim, or one whose PV is gone,
  counts as a volume of its own for its class's provisioner (the CSI driver of a
  migrated in-tree provisioner; not at all for an in-tree provisioner that is not
  migrated, nor for a claim without a class or with an unknown one). An inline volume
  of a migrated plugin counts for its CSI driver too.
* the limit of a driver: the CSINode's ``spec.drivers[].allocatable.count`` or, as
  v1.30 still reads it, the node's allocatable ``attachable-volumes-csi-<driver>``
  (every ``attachable-volumes-*`` of the node is read; the CSINode's count wins). A
  node without limits fits.
* the pod's claim that does not exist: UnschedulableAndUnresolvable ``looking up PVC
  ns/name: persistentvolumeclaim "name" not found`` (a claim of a pod already on the
  node that is missing is simply not counted).

**EBSLimits / GCEPDLimits / AzureDiskLimits / CinderLimits** (``nonCSILimits``) count
the volumes of one in-tree kind, inline or through claims (an unbound claim, or one
whose PV is gone, counts as a volume of its own when its ``spec.storageClassName``
names a class of the kind's in-tree provisioner), against the node's allocatable
``attachable-volumes-<kind>``, else ``KUBE_MAX_PD_VOLS`` (a positive integer), else the
default: EBS 39, or 25 on Nitro instance types (``node.kubernetes.io/instance-type`` or
the beta label matching ``^[cmr]5.*|t3|z1d``), GCE PD 16, Azure Disk 16, Cinder 256.
A node with a CSINode object is left to NodeVolumeLimits (the four migrations are on
in v1.30). A missing claim of the pod is UnschedulableAndUnresolvable as above.

PreFilter Skips when the pod has no volume the plugin could count: for
NodeVolumeLimits no claim, no ephemeral volume and no inline volume of a migratable
plugin; for the others no claim, no ephemeral volume and no inline volume of the kind.

Versus the legacy MaxCSIVolumeCountPred / MaxEBSVolumeCount ... (engine/predicates/
volumes.py, v1.17 with CSI migration off): migrated in-tree volumes count for their CSI
driver (and are no longer counted by the in-tree plugins on nodes with a CSINode);
generic ephemeral volumes count; a missing claim of the pod is Unresolvable instead of
ignored; the EBS Nitro limit also reads the GA instance-type label. Errors upstream
reports as Error statuses (a claim without a name, an ephemeral claim the pod does not
own, a volume the translator refuses) are raised as :class:`~._volumes.FilterError`.

Fast path: a pod the PreFilter Skips never fails (``never_fails``); nothing is cached
(PVs and claims are not versioned by a node's generation).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from ...objects import CSINode, PersistentVolumeClaim, Pod, Volume
from ...volumenames import CLAIM_WITHOUT_NAME, MAX_VOLUME_COUNT_EXCEEDED, PVC
from ..cluster import ClusterState
from ..functions import FITS, CycleState, Predicate, Reasons, hint
from ..interface import FilterPlugin, Handle, NodeInfoView, PreFilterPlugin, PreFilterResult, Status
from ..nodeinfo import NodeInfo
from ..predicates.volumes import (
    ATTACHABLE_PREFIX,
    DEFAULT_MAX_AZURE_DISK_VOLUMES,
    DEFAULT_MAX_CINDER_VOLUMES,
    DEFAULT_MAX_EBS_NITRO_VOLUMES,
    DEFAULT_MAX_EBS_VOLUMES,
    DEFAULT_MAX_GCE_PD_VOLUMES,
    EBS_NITRO_LIMIT_REGEX,
    KUBE_MAX_PD_VOLS,
    csi_attach_limit_key,
    max_volumes_from_env,
)
from ._migration import (
    AWS_EBS_PLUGIN,
    AZURE_DISK_PLUGIN,
    CINDER_PLUGIN,
    CSI_DRIVER_OF,
    GCE_PD_PLUGIN,
    MIGRATABLE_PLUGINS,
    PLUGIN_OF_KIND,
    TranslationError,
    csi_volume,
    migration_on,
)
from ._volumes import (
    EPHEMERAL,
    FilterError,
    claim_not_found,
    ephemeral_claim_name,
    not_owned,
    run_filter,
    unresolvable,
)

CSI_NAME: Final = "NodeVolumeLimits"
EBS_NAME: Final = "EBSLimits"
GCE_PD_NAME: Final = "GCEPDLimits"
AZURE_DISK_NAME: Final = "AzureDiskLimits"
CINDER_NAME: Final = "CinderLimits"

#: ``ErrReasonMaxVolumeCountExceeded``.
ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED: Final = MAX_VOLUME_COUNT_EXCEEDED
INSTANCE_TYPE_LABELS: Final = (
    "node.kubernetes.io/instance-type",
    "beta.kubernetes.io/instance-type",
)

_EXCEEDED: Final = (ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED,)

#: A volume's identity: ("id", driver or kind, handle) for a known volume; ("claim",
#: namespace, name) for a claim whose volume is not known yet (upstream's random prefix).
VolumeKey = tuple[str, str, str]


def _claim_of(pod: Pod, volume: Volume) -> str | None:
    """The claim name a pod volume reads, or None for a volume without one."""
    if volume.kind == PVC:
        return volume.handle
    if volume.kind == EPHEMERAL:
        return ephemeral_claim_name(pod, volume)
    return None


def _lookup(
    pod: Pod, name: str, ephemeral: bool, new_pod: bool, cluster: ClusterState
) -> PersistentVolumeClaim | None:
    """The claim a pod volume names; for the pod being placed a missing claim fails
    (Unresolvable), for a pod on the node it is just not counted."""
    if not name:
        raise FilterError(CLAIM_WITHOUT_NAME)
    pvc = cluster.claims.get(f"{pod.namespace}/{name}")
    if pvc is None:
        if new_pod:
            raise _MissingClaim(f"looking up PVC {pod.namespace}/{name}: {claim_not_found(name)}")
        return None
    if ephemeral:
        problem = not_owned(pvc, pod)
        if problem is not None:
            raise FilterError(problem)
    return pvc


class _MissingClaim(Exception):
    """The pod's own claim does not exist: UnschedulableAndUnresolvable."""


# -- NodeVolumeLimits (CSILimits) ------------------------------------------------------------


def _csi_driver_from_class(
    pvc: PersistentVolumeClaim, has_csi_node: bool, cluster: ClusterState
) -> tuple[str, VolumeKey] | None:
    """``getCSIDriverInfoFromSC``."""
    class_name = pvc.class_name
    if not class_name:
        return None
    sc = cluster.storage_classes.get(class_name)
    if sc is None:
        return None
    key: VolumeKey = ("claim", pvc.namespace, pvc.name)
    provisioner = sc.provisioner
    if provisioner in MIGRATABLE_PLUGINS:
        if not migration_on(provisioner, has_csi_node):
            return None
        return CSI_DRIVER_OF[provisioner], key
    return provisioner, key


def _csi_driver_info(
    pvc: PersistentVolumeClaim, has_csi_node: bool, cluster: ClusterState
) -> tuple[str, VolumeKey] | None:
    """``getCSIDriverInfo``: the driver and volume a claim counts as, if any."""
    pv = cluster.persistent_volumes.get(pvc.volume_name) if pvc.volume_name else None
    if pv is None:
        return _csi_driver_from_class(pvc, has_csi_node, cluster)
    source = pv.source
    if source.kind == "csi":
        return source.driver, ("id", source.driver, source.handle)
    plugin = PLUGIN_OF_KIND.get(source.kind)
    if plugin is None or not migration_on(plugin, has_csi_node):
        return None
    try:
        driver, handle = csi_volume(source, pv)
    except TranslationError:
        return None  # upstream logs and does not count it
    return driver, ("id", driver, handle)


def csi_volumes(
    pod: Pod, has_csi_node: bool, new_pod: bool, cluster: ClusterState
) -> dict[tuple[str, VolumeKey], str]:
    """``filterAttachableVolumes``: unique (driver, volume) -> the driver's limit key."""
    found: dict[tuple[str, VolumeKey], str] = {}
    for volume in pod.volumes:
        name = _claim_of(pod, volume)
        info: tuple[str, VolumeKey] | None
        if name is None:
            plugin = PLUGIN_OF_KIND.get(volume.kind)
            if plugin is None or not migration_on(plugin, has_csi_node):
                continue
            try:
                driver, handle = csi_volume(volume)
            except TranslationError as exc:
                raise FilterError(
                    f"converting volume({volume.name}) from inline to csi: {exc}"
                ) from None
            info = (driver, ("id", driver, handle))
        else:
            pvc = _lookup(pod, name, volume.kind == EPHEMERAL, new_pod, cluster)
            if pvc is None:
                continue
            info = _csi_driver_info(pvc, has_csi_node, cluster)
        if info is None or not info[0] or not info[1][-1]:
            continue  # no driver or no volume handle: not counted
        found[info] = csi_attach_limit_key(info[0])
    return found


def _csi_limits(node: NodeInfo, csi_node: CSINode | None) -> dict[str, int]:
    """``getVolumeLimits``: the node's attachable-volumes-*, the CSINode's counts on top."""
    limits = {
        key: amount
        for key, amount in node.node.allocatable.scalar.items()
        if key.startswith(ATTACHABLE_PREFIX)
    }
    if csi_node is not None:
        for driver, info in csi_node.drivers.items():
            if info.allocatable is not None:
                limits[csi_attach_limit_key(driver)] = info.allocatable
    return limits


@dataclass(frozen=True, slots=True)
class _Failed:
    """The pod's own volumes could not be resolved: Unresolvable, or an Error."""

    text: str
    error: bool

    def raise_or_reasons(self) -> Reasons:
        if self.error:
            raise FilterError(self.text)
        return unresolvable(self.text)


def _resolved(compute: Callable[[], Any]) -> Any:
    """``compute()``, or what made it fail, so that a memo keeps the failure too."""
    try:
        return compute()
    except _MissingClaim as exc:
        return _Failed(str(exc), error=False)
    except FilterError as exc:
        return _Failed(str(exc), error=True)


def _pod_csi_volumes(
    pod: Pod, has_csi_node: bool, cycle: CycleState
) -> dict[tuple[str, VolumeKey], str] | _Failed:
    # The pod's volumes depend on the node only through "has a CSINode" (migration).
    found: dict[tuple[str, VolumeKey], str] | _Failed = cycle.memo(
        f"intree.NodeVolumeLimits.{has_csi_node}",
        lambda: _resolved(lambda: csi_volumes(pod, has_csi_node, True, cycle.cluster)),
    )
    return found


def csi_check(pod: Pod, node: NodeInfo, cycle: CycleState) -> Reasons:
    """NodeVolumeLimits' Filter (raises FilterError for upstream's Error statuses)."""
    if not pod.volumes:
        return FITS
    cluster = cycle.cluster
    csi_node = cluster.csi_nodes.get(node.name)
    has_csi_node = csi_node is not None
    new = _pod_csi_volumes(pod, has_csi_node, cycle)
    if isinstance(new, _Failed):
        return new.raise_or_reasons()
    if not new:
        return FITS
    limits = _csi_limits(node, csi_node)
    if not limits:
        return FITS
    attached: dict[tuple[str, VolumeKey], str] = {}
    for other in node.pods.values():
        if other.volumes:
            attached.update(csi_volumes(other, has_csi_node, False, cluster))
    attached_count: dict[str, int] = {}
    for limit_key in attached.values():
        attached_count[limit_key] = attached_count.get(limit_key, 0) + 1
    new_count: dict[str, int] = {}
    for unique, limit_key in new.items():
        if unique not in attached:
            new_count[limit_key] = new_count.get(limit_key, 0) + 1
    for limit_key, count in new_count.items():
        limit = limits.get(limit_key)
        if limit is not None and attached_count.get(limit_key, 0) + count > limit:
            return _EXCEEDED
    return FITS


def csi_skips(pod: Pod) -> bool:
    """PreFilter's Skip: no claim, no ephemeral volume, no migratable inline volume."""
    for volume in pod.volumes:
        if volume.kind in (PVC, EPHEMERAL) or volume.kind in PLUGIN_OF_KIND:
            return False
    return True


# -- EBSLimits, GCEPDLimits, AzureDiskLimits, CinderLimits (nonCSILimits) --------------------


def _ebs_default(labels: Mapping[str, str]) -> int:
    instance_type = ""
    for key in INSTANCE_TYPE_LABELS:
        if key in labels:
            instance_type = labels[key]
            break
    if EBS_NITRO_LIMIT_REGEX.search(instance_type):
        return DEFAULT_MAX_EBS_NITRO_VOLUMES
    return DEFAULT_MAX_EBS_VOLUMES


@dataclass(frozen=True, slots=True)
class InTreeVolumeFilter:
    """One in-tree limit plugin: the volumes it counts and where its limit comes from."""

    name: str
    kind: str  # the volume source key of inline volumes and PV sources
    plugin: str  # its in-tree plugin, which is also its classes' provisioner
    limit_key: str  # node allocatable carrying the node's own limit
    default_limit: Callable[[Mapping[str, str]], int]


EBS_FILTER: Final = InTreeVolumeFilter(
    EBS_NAME, "awsElasticBlockStore", AWS_EBS_PLUGIN, "attachable-volumes-aws-ebs", _ebs_default
)
GCE_PD_FILTER: Final = InTreeVolumeFilter(
    GCE_PD_NAME,
    "gcePersistentDisk",
    GCE_PD_PLUGIN,
    "attachable-volumes-gce-pd",
    lambda _: DEFAULT_MAX_GCE_PD_VOLUMES,
)
AZURE_DISK_FILTER: Final = InTreeVolumeFilter(
    AZURE_DISK_NAME,
    "azureDisk",
    AZURE_DISK_PLUGIN,
    "attachable-volumes-azure-disk",
    lambda _: DEFAULT_MAX_AZURE_DISK_VOLUMES,
)
CINDER_FILTER: Final = InTreeVolumeFilter(
    CINDER_NAME,
    "cinder",
    CINDER_PLUGIN,
    "attachable-volumes-cinder",
    lambda _: DEFAULT_MAX_CINDER_VOLUMES,
)


def _matches_provisioner(
    pvc: PersistentVolumeClaim, flt: InTreeVolumeFilter, cluster: ClusterState
) -> bool:
    """``matchProvisioner``: only ``spec.storageClassName``, not the beta annotation."""
    if pvc.spec_storage_class is None:
        return False
    sc = cluster.storage_classes.get(pvc.spec_storage_class)
    return sc is not None and sc.provisioner == flt.plugin


def in_tree_volumes(
    pod: Pod, flt: InTreeVolumeFilter, new_pod: bool, cluster: ClusterState
) -> set[VolumeKey]:
    """``filterVolumes``: the unique volumes of the filter's kind, inline or claimed."""
    found: set[VolumeKey] = set()
    for volume in pod.volumes:
        if volume.kind == flt.kind:
            found.add(("id", flt.kind, volume.handle))
            continue
        name = _claim_of(pod, volume)
        if name is None:
            continue
        pvc = _lookup(pod, name, volume.kind == EPHEMERAL, new_pod, cluster)
        if pvc is None:
            continue
        pv = cluster.persistent_volumes.get(pvc.volume_name) if pvc.volume_name else None
        if pv is None:
            # Unbound, or its PV is gone: the pod may still use a volume of this kind.
            if _matches_provisioner(pvc, flt, cluster):
                found.add(("claim", pod.namespace, name))
            continue
        if pv.source.kind == flt.kind:
            found.add(("id", flt.kind, pv.source.handle))
    return found


def in_tree_skips(pod: Pod, flt: InTreeVolumeFilter) -> bool:
    """PreFilter's Skip: no volume of the kind, no claim, no ephemeral volume."""
    for volume in pod.volumes:
        if volume.kind in (flt.kind, PVC, EPHEMERAL):
            return False
    return True


def in_tree_limit(node: NodeInfo, flt: InTreeVolumeFilter, cycle: CycleState) -> int:
    """KUBE_MAX_PD_VOLS, else the kind's default; the node's allocatable wins over both."""
    allocatable = node.node.allocatable.scalar
    if flt.limit_key in allocatable:
        return allocatable[flt.limit_key]
    from_env = cycle.memo("intree.max_pd_env", max_volumes_from_env)
    return from_env if from_env is not None else flt.default_limit(node.node.labels)


def in_tree_check(flt: InTreeVolumeFilter) -> Callable[[Pod, NodeInfo, CycleState], Reasons]:
    """One in-tree limit plugin's Filter (raises FilterError for upstream's Errors)."""
    memo_key = f"intree.{flt.name}"

    def check(pod: Pod, node: NodeInfo, cycle: CycleState) -> Reasons:
        if not pod.volumes:
            return FITS
        cluster = cycle.cluster
        new: set[VolumeKey] | _Failed = cycle.memo(
            memo_key, lambda: _resolved(lambda: in_tree_volumes(pod, flt, True, cluster))
        )
        if isinstance(new, _Failed):
            return new.raise_or_reasons()
        if not new:
            return FITS
        if node.name in cluster.csi_nodes:
            return FITS  # migrated: NodeVolumeLimits counts these volumes
        existing: set[VolumeKey] = set()
        for other in node.pods.values():
            if other.volumes:
                existing |= in_tree_volumes(other, flt, False, cluster)
        if len(existing) + len(new - existing) > in_tree_limit(node, flt, cycle):
            return _EXCEEDED
        return FITS

    check.__name__ = f"{flt.name}_check"
    return hint(check, never_fails=lambda pod: in_tree_skips(pod, flt))


hint(csi_check, never_fails=csi_skips)


# -- the plugins ---------------------------------------------------------------------------


def _predicate(check: Callable[[Pod, NodeInfo, CycleState], Reasons]) -> Predicate:
    """The engine predicate: upstream's Error statuses as Unresolvable reasons."""

    def predicate(pod: Pod, node: NodeInfo, cycle: CycleState) -> Reasons:
        try:
            return check(pod, node, cycle)
        except FilterError as exc:
            return unresolvable(str(exc))

    return predicate


def _csi_never_fails(pod: Pod) -> bool:
    return csi_skips(pod)


class NodeVolumeLimits(PreFilterPlugin, FilterPlugin):
    """kube-scheduler's NodeVolumeLimits (CSI attach limits): PreFilter, Filter."""

    name = CSI_NAME

    def __init__(self, args: Any, handle: Handle) -> None:
        super().__init__(args, handle)
        self._predicate = hint(_predicate(csi_check), never_fails=_csi_never_fails)

    def predicate(self) -> Predicate:
        return self._predicate

    def pre_filter(self, state: CycleState, pod: Pod) -> PreFilterResult | Status | None:
        return Status.skip() if csi_skips(pod) else None

    def filter(self, state: CycleState, pod: Pod, node: NodeInfoView) -> Status | None:
        return run_filter(csi_check, state, pod, node)

    def events_to_register(self) -> list[object]:
        """QueueingHints (v1.34): CSINodes and PVCs added, placed pods with volumes
        deleted (``_queueing``)."""
        from ._queueing import node_volume_limits_events

        return list(node_volume_limits_events())


class _InTreeLimits(PreFilterPlugin, FilterPlugin):
    """An in-tree volume limit plugin (``nonCSILimits``) of one kind."""

    volume_filter: InTreeVolumeFilter

    def __init__(self, args: Any, handle: Handle) -> None:
        super().__init__(args, handle)
        flt = self.volume_filter
        self._check = in_tree_check(flt)
        self._predicate = hint(_predicate(self._check), never_fails=lambda p: in_tree_skips(p, flt))

    def predicate(self) -> Predicate:
        return self._predicate

    def pre_filter(self, state: CycleState, pod: Pod) -> PreFilterResult | Status | None:
        return Status.skip() if in_tree_skips(pod, self.volume_filter) else None

    def filter(self, state: CycleState, pod: Pod, node: NodeInfoView) -> Status | None:
        return run_filter(self._check, state, pod, node)


class EBSLimits(_InTreeLimits):
    """kube-scheduler's EBSLimits: AWS EBS volumes per node (PreFilter, Filter)."""

    name = EBS_NAME
    volume_filter = EBS_FILTER


class GCEPDLimits(_InTreeLimits):
    """kube-scheduler's GCEPDLimits: GCE persistent disks per node (PreFilter, Filter)."""

    name = GCE_PD_NAME
    volume_filter = GCE_PD_FILTER


class AzureDiskLimits(_InTreeLimits):
    """kube-scheduler's AzureDiskLimits: Azure disks per node (PreFilter, Filter)."""

    name = AZURE_DISK_NAME
    volume_filter = AZURE_DISK_FILTER


class CinderLimits(_InTreeLimits):
    """kube-scheduler's CinderLimits: Cinder volumes per node (PreFilter, Filter)."""

    name = CINDER_NAME
    volume_filter = CINDER_FILTER


__all__ = [
    "AZURE_DISK_FILTER",
    "CINDER_FILTER",
    "EBS_FILTER",
    "GCE_PD_FILTER",
    "KUBE_MAX_PD_VOLS",
    "AzureDiskLimits",
    "CinderLimits",
    "EBSLimits",
    "GCEPDLimits",
    "NodeVolumeLimits",
    "csi_check",
    "in_tree_check",
]
