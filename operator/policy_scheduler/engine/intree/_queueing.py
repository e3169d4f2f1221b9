"""The in-tree plugins' queueing hints, as kube-scheduler v1.34's (QueueingHints GA).

Each plugin's ``events_to_register()`` (at the end of its class) names the cluster
events (:mod:`..events`) that may undo its rejection, with these hint functions; each
answers QUEUE when the change may let the pod pass the plugin, QUEUE_SKIP when it
cannot. Old is None on an addition, new is None on a deletion.

The registrations of the plugins that read storage and devices (VolumeBinding,
VolumeRestrictions, NodeVolumeLimits, VolumeZone, DynamicResources) are the lists at
the end of this module (:func:`volume_binding_events` ...), which each plugin's method
returns: their events are PersistentVolumeClaim, PersistentVolume, StorageClass,
CSINode, CSIDriver, CSIStorageCapacity, ResourceClaim, ResourceSlice and DeviceClass
changes, raised by the world (``state/world.py``) with the objects' old and new copies.
"""

from __future__ import annotations

from typing import Any

from ...devices import ResourceClaim
from ...objects import (
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    PodAffinityTerm,
    Resources,
    StorageClass,
    tolerations_tolerate,
)
from ...selectors import NodeSelectorTerm, terms_match
from ...volumenames import PVC
from ..events import (
    ASSIGNED_POD,
    CSI_DRIVER,
    CSI_NODE,
    CSI_STORAGE_CAPACITY,
    DEVICE_CLASS,
    NODE,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    QUEUE,
    QUEUE_SKIP,
    RESOURCE_CLAIM,
    RESOURCE_SLICE,
    STORAGE_CLASS,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHintFn,
)
from ..predicates.general import UNSCHEDULABLE_TAINT, matches_node_selector_and_affinity
from ..predicates.interpod import pod_matches_all_terms, pod_matches_term


def on(
    resource: str, action: ActionType, hint: QueueingHintFn | None = None
) -> ClusterEventWithHint:
    """A registration (shorthand)."""
    return ClusterEventWithHint(ClusterEvent(resource, action), hint)


def _verdict(helps: bool) -> str:
    return QUEUE if helps else QUEUE_SKIP


def node_affinity_hint(added: tuple[NodeSelectorTerm, ...] | None) -> QueueingHintFn:
    """NodeAffinity's isSchedulableAfterNodeChange: the node matches the pod's
    nodeSelector, required affinity (and the plugin's addedAffinity) now, and did not
    before (a node that already matched was not what refused the pod)."""

    def matches(pod: Pod, node: Node) -> bool:
        if added is not None and not terms_match(added, node.labels, node.name):
            return False
        return matches_node_selector_and_affinity(pod, node)

    def hint(pod: Pod, old: Any, new: Any) -> str:
        if not isinstance(new, Node) or not matches(pod, new):
            return QUEUE_SKIP
        return _verdict(not isinstance(old, Node) or not matches(pod, old))

    return hint


def _fits_empty(pod: Pod, allocatable: Resources) -> bool:
    """The pod's request fits the node's allocatable (nothing else counted)."""
    want = pod.node_request
    return (
        want.milli_cpu <= allocatable.milli_cpu
        and want.memory <= allocatable.memory
        and want.ephemeral_storage <= allocatable.ephemeral_storage
        and all(amount <= allocatable.scalar.get(name, 0) for name, amount in want.scalar.items())
    )


def _grew(pod: Pod, old: Resources, new: Resources) -> bool:
    """Allocatable grew in something the pod requests (or in pods)."""
    want = pod.node_request
    return (
        new.allowed_pods > old.allowed_pods
        or (want.milli_cpu > 0 and new.milli_cpu > old.milli_cpu)
        or (want.memory > 0 and new.memory > old.memory)
        or (want.ephemeral_storage > 0 and new.ephemeral_storage > old.ephemeral_storage)
        or any(new.scalar.get(n, 0) > old.scalar.get(n, 0) for n in want.scalar)
    )


def fit_node_hint(pod: Pod, old: Any, new: Any) -> str:
    """NodeResourcesFit's isSchedulableAfterNodeChange: a node added that could hold the
    pod, or one whose allocatable grew in what the pod requests and can hold it now."""
    if not isinstance(new, Node) or not _fits_empty(pod, new.allocatable):
        return QUEUE_SKIP
    return _verdict(not isinstance(old, Node) or _grew(pod, old.allocatable, new.allocatable))


def fit_pod_hint(pod: Pod, old: Any, new: Any) -> str:
    """NodeResourcesFit's isSchedulableAfterPodEvent: an assigned pod deleted (its room
    is free), or scaled down in something the pod requests."""
    if not isinstance(old, Pod) or not old.node_name:
        return QUEUE_SKIP
    if new is None:
        return QUEUE
    if not isinstance(new, Pod):
        return QUEUE
    return _verdict(_grew(pod, new.node_request, old.node_request))


def taint_hint(pod: Pod, old: Any, new: Any) -> str:
    """TaintToleration's isSchedulableAfterNodeChange: the pod tolerates the node's
    NoSchedule/NoExecute taints now, and did not before."""

    def tolerated(node: Node) -> bool:
        return all(
            tolerations_tolerate(pod.tolerations, taint)
            for taint in node.taints
            if taint.effect in ("NoSchedule", "NoExecute")
        )

    if not isinstance(new, Node) or not tolerated(new):
        return QUEUE_SKIP
    return _verdict(not isinstance(old, Node) or not tolerated(old))


def unschedulable_hint(pod: Pod, old: Any, new: Any) -> str:
    """NodeUnschedulable's isSchedulableAfterNodeChange: the node takes pods now
    (``spec.unschedulable`` off, or tolerated), and did not before."""

    def open_to(node: Node) -> bool:
        return not node.unschedulable or tolerations_tolerate(pod.tolerations, UNSCHEDULABLE_TAINT)

    if not isinstance(new, Node) or not open_to(new):
        return QUEUE_SKIP
    return _verdict(not isinstance(old, Node) or not open_to(old))


def node_name_hint(pod: Pod, old: Any, new: Any) -> str:
    """NodeName's isSchedulableAfterNodeAdd: the node the pod names was added."""
    return _verdict(isinstance(new, Node) and new.name == pod.node_name)


def ports_pod_hint(pod: Pod, old: Any, new: Any) -> str:
    """NodePorts' isSchedulableAfterPodDeleted: an assigned pod that held one of the
    pod's host ports was deleted."""
    if not isinstance(old, Pod) or not old.node_name:
        return QUEUE_SKIP
    wanted = {(p.protocol, p.port) for p in pod.host_ports}
    return _verdict(any((p.protocol, p.port) in wanted for p in old.host_ports))


# -- InterPodAffinity ------------------------------------------------------------------


def _assigned(pod: Any) -> bool:
    return isinstance(pod, Pod) and bool(pod.node_name)


def _any_term(terms: tuple[PodAffinityTerm, ...], target: Pod) -> bool:
    return any(pod_matches_term(term, target) for term in terms)


def inter_pod_affinity_pod_hint(pod: Pod, old: Any, new: Any) -> str:
    """InterPodAffinity's isSchedulableAfterPodChange: a placed pod added (or
    relabelled) that now matches all the pod's required affinity terms; a placed pod
    deleted that matched one of its required anti-affinity terms (or whose own required
    anti-affinity kept the pod away: a superset of v1.34's, which reads only the pod's).
    Unassigned pods never help."""
    if (new is not None and not _assigned(new)) or (old is not None and not _assigned(old)):
        return QUEUE_SKIP
    if isinstance(old, Pod) and isinstance(new, Pod):
        terms = pod.affinity_required
        return _verdict(not pod_matches_all_terms(terms, old) and pod_matches_all_terms(terms, new))
    if isinstance(new, Pod):
        return _verdict(pod_matches_all_terms(pod.affinity_required, new))
    if isinstance(old, Pod):
        return _verdict(
            _any_term(pod.anti_affinity_required, old) or _any_term(old.anti_affinity_required, pod)
        )
    return QUEUE_SKIP


def inter_pod_affinity_node_hint(pod: Pod, old: Any, new: Any) -> str:
    """InterPodAffinity's isSchedulableAfterNodeChange: a node added with an affinity
    term's topology key, or relabelled to gain it or change its value; for
    anti-affinity, any node added, or one that lost an anti-affinity term's topology key
    or changed its value."""
    if not isinstance(new, Node):
        return QUEUE_SKIP
    before = old.labels if isinstance(old, Node) else None
    after = new.labels
    for term in pod.affinity_required:
        key = term.topology_key
        if before is None:
            if key in after:
                return QUEUE
            continue
        if key in after and (key not in before or before[key] != after[key]):
            return QUEUE
    for term in pod.anti_affinity_required:
        key = term.topology_key
        if before is None:
            return QUEUE
        if key in before and (key not in after or before[key] != after[key]):
            return QUEUE
    return QUEUE_SKIP


# -- PodTopologySpread -----------------------------------------------------------------


def spread_pod_hint(pod: Pod, old: Any, new: Any) -> str:
    """PodTopologySpread's isSchedulableAfterPodChange: a placed pod of the pod's
    namespace added or deleted that a DoNotSchedule constraint's selector selects, or
    relabelled so that one selects it now and did not before (or the reverse). A pod
    without constraints of its own (the plugin's defaults apply) is woken."""
    if (new is not None and not _assigned(new)) or (old is not None and not _assigned(old)):
        return QUEUE_SKIP
    constraints = [c for c in pod.spread_constraints if c.when_unsatisfiable == "DoNotSchedule"]
    if not pod.spread_constraints:
        return QUEUE
    changed = new if isinstance(new, Pod) else old
    if not isinstance(changed, Pod) or changed.namespace != pod.namespace:
        return QUEUE_SKIP
    if isinstance(old, Pod) and isinstance(new, Pod):
        if old.labels == new.labels:
            return QUEUE_SKIP
        return _verdict(
            any(
                c.selector.matches(old.labels) != c.selector.matches(new.labels)
                for c in constraints
            )
        )
    return _verdict(any(c.selector.matches(changed.labels) for c in constraints))


def spread_node_hint(pod: Pod, old: Any, new: Any) -> str:
    """PodTopologySpread's isSchedulableAfterNodeChange: a node added or deleted that has
    every constraint's topology key; an updated node that gained or lost one, or has
    them all and changed a key's value or its taints. A pod without constraints of its
    own (the plugin's defaults apply) is woken."""
    if not pod.spread_constraints:
        return QUEUE
    keys = {c.topology_key for c in pod.spread_constraints}

    def has_keys(node: Node) -> bool:
        return all(key in node.labels for key in keys)

    if isinstance(old, Node) and isinstance(new, Node):
        before, after = has_keys(old), has_keys(new)
        if before != after:
            return QUEUE
        return _verdict(
            after
            and (
                any(old.labels.get(key) != new.labels.get(key) for key in keys)
                or old.taints != new.taints
            )
        )
    changed = new if isinstance(new, Node) else old
    return _verdict(isinstance(changed, Node) and has_keys(changed))


# -- storage ---------------------------------------------------------------------------


def _claim_names(pod: Pod) -> set[str]:
    """The PVCs the pod's volumes name (a generic ephemeral volume's is ``<pod>-<vol>``)."""
    names: set[str] = set()
    for volume in pod.volumes:
        if volume.kind == PVC:
            names.add(volume.handle)
        elif volume.kind == "ephemeral":
            names.add(f"{pod.name}-{volume.name}")
    return names


def pvc_of_pod_hint(pod: Pod, old: Any, new: Any) -> str:
    """isSchedulableAfterPersistentVolumeClaimChange/Added (VolumeBinding, VolumeZone,
    VolumeRestrictions): the claim is one the pod's volumes name."""
    claim = new if new is not None else old
    return _verdict(
        isinstance(claim, PersistentVolumeClaim)
        and claim.namespace == pod.namespace
        and claim.name in _claim_names(pod)
    )


def storage_class_hint(pod: Pod, old: Any, new: Any) -> str:
    """VolumeBinding's isSchedulableAfterStorageClassChange: a class added, or its
    allowedTopologies changed."""
    if not isinstance(new, StorageClass):
        return QUEUE_SKIP
    return _verdict(
        not isinstance(old, StorageClass) or old.allowed_topologies != new.allowed_topologies
    )


def csi_node_hint(pod: Pod, old: Any, new: Any) -> str:
    """VolumeBinding's isSchedulableAfterCSINodeChange: a CSINode added, or its migrated
    plugins (the in-tree volumes it translates) changed."""
    if not isinstance(new, CSINode):
        return QUEUE_SKIP
    return _verdict(not isinstance(old, CSINode) or old.migrated_plugins != new.migrated_plugins)


def csi_driver_hint(pod: Pod, old: Any, new: Any) -> str:
    """VolumeBinding's isSchedulableAfterCSIDriverChange: the driver's storageCapacity
    switched (capacity is no longer, or now, checked)."""
    if not isinstance(new, CSIDriver) or not isinstance(old, CSIDriver):
        return QUEUE
    return _verdict(old.storage_capacity != new.storage_capacity)


def _more(new: int | None, old: int | None) -> bool:
    if new is None:
        return old is not None  # no limit now
    return old is not None and new > old


def capacity_hint(pod: Pod, old: Any, new: Any) -> str:
    """VolumeBinding's isSchedulableAfterCSIStorageCapacityChange: capacity added, or
    one that grew (capacity or maximumVolumeSize) or changed its class or topology."""
    if not isinstance(new, CSIStorageCapacity):
        return QUEUE_SKIP
    if not isinstance(old, CSIStorageCapacity):
        return QUEUE
    return _verdict(
        _more(new.capacity, old.capacity)
        or _more(new.maximum_volume_size, old.maximum_volume_size)
        or new.storage_class != old.storage_class
        or new.node_topology != old.node_topology
    )


def wait_for_first_consumer_hint(pod: Pod, old: Any, new: Any) -> str:
    """VolumeZone's isSchedulableAfterStorageClassAdded: the class binds volumes
    WaitForFirstConsumer (their zone is then chosen with the pod)."""
    return _verdict(isinstance(new, StorageClass) and new.binding_mode == "WaitForFirstConsumer")


#: VolumeZone's topology labels (its TOPOLOGY_LABELS; volumezone imports this module).
_ZONE_LABELS = frozenset(
    (
        "failure-domain.beta.kubernetes.io/zone",
        "failure-domain.beta.kubernetes.io/region",
        "topology.kubernetes.io/zone",
        "topology.kubernetes.io/region",
    )
)


def _zones(pv: PersistentVolume) -> dict[str, str]:
    return {key: value for key, value in pv.labels.items() if key in _ZONE_LABELS}


def pv_zone_hint(pod: Pod, old: Any, new: Any) -> str:
    """VolumeZone's isSchedulableAfterPersistentVolumeChange: a volume added, or one
    whose zone/region labels changed."""
    if not isinstance(new, PersistentVolume):
        return QUEUE_SKIP
    return _verdict(not isinstance(old, PersistentVolume) or _zones(old) != _zones(new))


def _holds_volumes(pod: Any) -> bool:
    return _assigned(pod) and bool(pod.volumes)


def volume_restrictions_pod_hint(pod: Pod, old: Any, new: Any) -> str:
    """VolumeRestrictions' isSchedulableAfterPodDeleted: the placed pod deleted shared a
    disk (the same source and handle) or a claim with the pod."""
    if not isinstance(old, Pod) or not _holds_volumes(old):
        return QUEUE_SKIP
    mine = {(v.kind, v.handle) for v in pod.volumes if v.kind != PVC}
    if any((v.kind, v.handle) in mine for v in old.volumes if v.kind != PVC):
        return QUEUE
    return _verdict(old.namespace == pod.namespace and bool(_claim_names(old) & _claim_names(pod)))


def volume_limits_pod_hint(pod: Pod, old: Any, new: Any) -> str:
    """NodeVolumeLimits' isSchedulableAfterPodDeleted: the placed pod deleted had a
    CSI, PVC or generic ephemeral volume (it counted against its node's limits)."""
    if not isinstance(old, Pod) or not _holds_volumes(old):
        return QUEUE_SKIP
    return _verdict(any(v.kind in ("csi", PVC, "ephemeral") for v in old.volumes))


def volume_binding_events() -> list[ClusterEventWithHint]:
    """VolumeBinding's EventsToRegister (v1.34: with hints on, node taints are not
    registered by the storage and device plugins)."""
    add_update = ActionType.ADD | ActionType.UPDATE
    return [
        on(STORAGE_CLASS, add_update, storage_class_hint),
        on(PERSISTENT_VOLUME_CLAIM, add_update, pvc_of_pod_hint),
        on(PERSISTENT_VOLUME, add_update),
        on(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
        on(CSI_NODE, add_update, csi_node_hint),
        on(CSI_DRIVER, ActionType.UPDATE, csi_driver_hint),
        on(CSI_STORAGE_CAPACITY, add_update, capacity_hint),
    ]


def volume_restrictions_events() -> list[ClusterEventWithHint]:
    """VolumeRestrictions' EventsToRegister (v1.34)."""
    return [
        on(ASSIGNED_POD, ActionType.DELETE, volume_restrictions_pod_hint),
        on(NODE, ActionType.ADD),
        on(PERSISTENT_VOLUME_CLAIM, ActionType.ADD, pvc_of_pod_hint),
    ]


def node_volume_limits_events() -> list[ClusterEventWithHint]:
    """NodeVolumeLimits' (CSI limits) EventsToRegister (v1.34; VolumeAttachment is not
    watched here)."""
    return [
        on(CSI_NODE, ActionType.ADD),
        on(ASSIGNED_POD, ActionType.DELETE, volume_limits_pod_hint),
        on(PERSISTENT_VOLUME_CLAIM, ActionType.ADD),
    ]


def volume_zone_events() -> list[ClusterEventWithHint]:
    """VolumeZone's EventsToRegister (v1.34)."""
    return [
        on(STORAGE_CLASS, ActionType.ADD, wait_for_first_consumer_hint),
        on(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
        on(PERSISTENT_VOLUME_CLAIM, ActionType.ADD | ActionType.UPDATE, pvc_of_pod_hint),
        on(PERSISTENT_VOLUME, ActionType.ADD | ActionType.UPDATE, pv_zone_hint),
    ]


# -- DynamicResources ------------------------------------------------------------------


def _uses_claim(pod: Pod, claim: ResourceClaim) -> bool:
    if claim.namespace != pod.namespace:
        return False
    if claim.controller_uid and claim.controller_uid == pod.uid:
        return True  # made from one of its templates
    return any(entry.claim_name == claim.name for entry in pod.resource_claims)


def claim_hint(pod: Pod, old: Any, new: Any) -> str:
    """DynamicResources' isSchedulableAfterClaimChange: any claim deallocated (its
    devices are free); else a claim of the pod's created, or its status (allocation,
    reservedFor) changed."""
    if not isinstance(new, ResourceClaim):
        return QUEUE_SKIP
    if isinstance(old, ResourceClaim) and old.allocation is not None and new.allocation is None:
        return QUEUE
    if not _uses_claim(pod, new):
        return QUEUE_SKIP
    if not isinstance(old, ResourceClaim):
        return QUEUE
    return _verdict(old.allocation != new.allocation or old.reserved_for != new.reserved_for)


def slice_hint(pod: Pod, old: Any, new: Any) -> str:
    """DynamicResources' isSchedulableAfterResourceSliceChange: new devices may help a
    pod with claims, never one without."""
    return _verdict(bool(pod.resource_claims))


def dynamic_resources_events() -> list[ClusterEventWithHint]:
    """DynamicResources' EventsToRegister (v1.34)."""
    add_update = ActionType.ADD | ActionType.UPDATE
    return [
        on(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
        on(RESOURCE_CLAIM, add_update, claim_hint),
        on(DEVICE_CLASS, add_update),
        on(RESOURCE_SLICE, add_update, slice_hint),
    ]


__all__ = [
    "ASSIGNED_POD",
    "NODE",
    "dynamic_resources_events",
    "fit_node_hint",
    "fit_pod_hint",
    "inter_pod_affinity_node_hint",
    "inter_pod_affinity_pod_hint",
    "node_affinity_hint",
    "node_name_hint",
    "node_volume_limits_events",
    "on",
    "ports_pod_hint",
    "spread_node_hint",
    "spread_pod_hint",
    "taint_hint",
    "unschedulable_hint",
    "volume_binding_events",
    "volume_restrictions_events",
    "volume_zone_events",
]
