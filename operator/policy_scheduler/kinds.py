"""Every kind of object the scheduler reads, and the one place raw API dicts are parsed.

:data:`KINDS` is the table the rest of the code reads instead of repeating it: the
watches (``handlers``), the LIST before the first decision (``runtime.listing``), the RBAC
the operator needs (``runtime.kubeapi.required_rules``), ``simulate``'s input sorting
and the cache's dispatch all iterate it. Each :class:`Kind` carries its API coordinates
and its parser; :func:`parse` turns a raw dict into the typed object once, at the edge
(nodes, pods, volumes, workloads, namespaces, PodGroups into :mod:`.objects`;
SchedulingPolicies into a :class:`PolicyObject` that keeps an invalid spec's error
instead of raising, so the policy book can judge it).

A deletion needs no parse: :meth:`Kind.identity` reads the object's key from its
metadata alone, so a malformed object that was never stored can still be "deleted"
harmlessly, and a deleted object is never refused for a field nobody reads any more.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from . import names
from .devices import (
    parse_device_class,
    parse_resource_claim,
    parse_resource_claim_template,
    parse_resource_slice,
)
from .names import installed_plugin_names
from .objects import (
    WORKLOAD_KINDS,
    ObjectError,
    parse_csi_driver,
    parse_csi_node,
    parse_csi_storage_capacity,
    parse_namespace,
    parse_node,
    parse_persistent_volume,
    parse_persistent_volume_claim,
    parse_pod,
    parse_pod_disruption_budget,
    parse_pod_group,
    parse_priority_class,
    parse_storage_class,
    parse_timestamp,
    parse_workload,
)
from .policy import INVALID, PolicyError, SchedulingPolicy, parse_policy
from .selectors import SelectorError

#: What a malformed object raises when parsed (a user's mistake, never a bug of ours).
PARSE_ERRORS: Final = (ObjectError, SelectorError)


@dataclass(frozen=True, slots=True)
class PolicyObject:
    """A SchedulingPolicy as the API holds it: its identity and either its parsed spec
    (``policy``) or why the spec is refused (``error``)."""

    name: str
    uid: str
    generation: int
    created: float
    policy: SchedulingPolicy | None
    error: str | None
    status: Mapping[str, Any]
    #: The Accepted condition's reason when ``error`` is set (Invalid, PluginNotFound...).
    reason: str = INVALID


def parse_policy_object(raw: Mapping[str, Any]) -> PolicyObject:
    """Never raises for an invalid spec: the error is kept for the Accepted condition."""
    meta = raw.get("metadata")
    if not isinstance(meta, Mapping):
        meta = {}
    try:
        generation = int(meta.get("generation") or 1)
    except (TypeError, ValueError):
        generation = 1
    policy: SchedulingPolicy | None = None
    error: str | None = None
    reason = INVALID
    # Plugins installed since the last look are found (metadata read at most every 5 s).
    installed_plugin_names(max_age=PLUGIN_NAMES_MAX_AGE)
    try:
        policy = parse_policy(raw)
    except PolicyError as exc:
        error = str(exc)
        reason = exc.reason
    status = raw.get("status")
    return PolicyObject(
        name=str(meta.get("name", "")),
        uid=str(meta.get("uid", "")),
        generation=generation,
        created=parse_timestamp(meta.get("creationTimestamp")),
        policy=policy,
        error=error,
        status=status if isinstance(status, Mapping) else {},
        reason=reason,
    )


#: How stale the list of installed plugins may be when a policy is read (seconds).
PLUGIN_NAMES_MAX_AGE = 5.0


@dataclass(frozen=True, slots=True)
class Kind:
    """One kind the scheduler reads: where the API serves it and how it is parsed."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    parser: Callable[[Mapping[str, Any]], Any]

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def parse(self, raw: Mapping[str, Any]) -> Any:
        """The typed object; raises one of :data:`PARSE_ERRORS` for a malformed one.

        Watch events and LIST items do not always say their kind; the table does.
        """
        if raw.get("kind") != self.kind:
            raw = {**raw, "kind": self.kind, "apiVersion": self.api_version}
        return self.parser(raw)

    def identity(self, raw: Mapping[str, Any]) -> str:
        """The key the cache files this object under, from its metadata alone."""
        meta = raw.get("metadata")
        if not isinstance(meta, Mapping):
            meta = {}
        name = str(meta.get("name", ""))
        if self is POD:
            return str(meta.get("uid") or f"{meta.get('namespace')}/{name}")
        if not self.namespaced:
            return name
        key = f"{meta.get('namespace') or 'default'}/{name}"
        return f"{self.kind}/{key}" if self.kind in WORKLOAD_KINDS else key


NODE: Final = Kind("", "v1", "nodes", "Node", False, parse_node)
#: For their labels (a pod affinity term's namespaceSelector selects namespaces by them).
NAMESPACE: Final = Kind("", "v1", "namespaces", "Namespace", False, parse_namespace)
POD: Final = Kind("", "v1", "pods", "Pod", True, parse_pod)
PERSISTENT_VOLUME: Final = Kind(
    "", "v1", "persistentvolumes", "PersistentVolume", False, parse_persistent_volume
)
PERSISTENT_VOLUME_CLAIM: Final = Kind(
    "",
    "v1",
    "persistentvolumeclaims",
    "PersistentVolumeClaim",
    True,
    parse_persistent_volume_claim,
)
SERVICE: Final = Kind("", "v1", "services", "Service", True, parse_workload)
REPLICATION_CONTROLLER: Final = Kind(
    "", "v1", "replicationcontrollers", "ReplicationController", True, parse_workload
)
REPLICA_SET: Final = Kind("apps", "v1", "replicasets", "ReplicaSet", True, parse_workload)
STATEFUL_SET: Final = Kind("apps", "v1", "statefulsets", "StatefulSet", True, parse_workload)
STORAGE_CLASS: Final = Kind(
    "storage.k8s.io", "v1", "storageclasses", "StorageClass", False, parse_storage_class
)
CSI_NODE: Final = Kind("storage.k8s.io", "v1", "csinodes", "CSINode", False, parse_csi_node)
#: The storage capacity check of volume binding (kube-scheduler's ``hasEnoughCapacity``):
#: a driver with ``spec.storageCapacity`` provisions only where a CSIStorageCapacity says
#: there is room.
CSI_DRIVER: Final = Kind("storage.k8s.io", "v1", "csidrivers", "CSIDriver", False, parse_csi_driver)
CSI_STORAGE_CAPACITY: Final = Kind(
    "storage.k8s.io",
    "v1",
    "csistoragecapacities",
    "CSIStorageCapacity",
    True,
    parse_csi_storage_capacity,
)
#: policy/v1 on the API; simulate also reads policy/v1beta1 objects (same fields).
POD_DISRUPTION_BUDGET: Final = Kind(
    "policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True, parse_pod_disruption_budget
)
PRIORITY_CLASS: Final = Kind(
    "scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, parse_priority_class
)
#: scheduler-plugins' gangs (the Coscheduling plugin reads them). Optional: a cluster
#: without the CRD serves no such resource, and its LIST (404) is then empty.
POD_GROUP: Final = Kind(
    "scheduling.x-k8s.io", "v1alpha1", "podgroups", "PodGroup", True, parse_pod_group
)
SCHEDULING_POLICY: Final = Kind(
    names.CRD_GROUP,
    names.CRD_VERSION,
    names.CRD_PLURAL,
    names.CRD_KIND,
    False,
    parse_policy_object,
)

#: DRA (``resource.k8s.io/v1``, kube-scheduler v1.34's DynamicResources reads them).
#: Optional, as PodGroups are: a cluster before v1.34 serves no such resource, and its
#: LIST (404) is then empty.
DEVICE_CLASS: Final = Kind(
    "resource.k8s.io", "v1", "deviceclasses", "DeviceClass", False, parse_device_class
)
RESOURCE_SLICE: Final = Kind(
    "resource.k8s.io", "v1", "resourceslices", "ResourceSlice", False, parse_resource_slice
)
RESOURCE_CLAIM: Final = Kind(
    "resource.k8s.io", "v1", "resourceclaims", "ResourceClaim", True, parse_resource_claim
)
RESOURCE_CLAIM_TEMPLATE: Final = Kind(
    "resource.k8s.io",
    "v1",
    "resourceclaimtemplates",
    "ResourceClaimTemplate",
    True,
    parse_resource_claim_template,
)
DRA_KINDS: Final[tuple[Kind, ...]] = (
    DEVICE_CLASS,
    RESOURCE_SLICE,
    RESOURCE_CLAIM,
    RESOURCE_CLAIM_TEMPLATE,
)

#: Every kind read, nodes first (a LIST fills nodes before the pods placed on them),
#: PriorityClasses before pods (a pod without ``spec.priority`` is resolved on arrival)
#: PodGroups before pods (a gang's pods are queued in their group's order) and DRA's
#: kinds before pods (a pod's claims are known when it is queued).
KINDS: Final[tuple[Kind, ...]] = (
    NODE,
    NAMESPACE,
    PRIORITY_CLASS,
    POD_GROUP,
    *DRA_KINDS,
    POD,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    SERVICE,
    REPLICATION_CONTROLLER,
    REPLICA_SET,
    STATEFUL_SET,
    STORAGE_CLASS,
    CSI_NODE,
    CSI_DRIVER,
    CSI_STORAGE_CAPACITY,
    POD_DISRUPTION_BUDGET,
    SCHEDULING_POLICY,
)

#: The kinds whose changes can make a waiting pod's volumes bindable.
STORAGE_KINDS: Final = frozenset(
    {PERSISTENT_VOLUME, PERSISTENT_VOLUME_CLAIM, STORAGE_CLASS, CSI_NODE}
)
#: Storage kinds whose addition or change (not deletion) can make room for a claim to
#: provision: kube-scheduler v1.30's VolumeBinding registers CSIDriver and
#: CSIStorageCapacity Add and Update only.
CAPACITY_KINDS: Final = frozenset({CSI_DRIVER, CSI_STORAGE_CAPACITY})

_BY_KIND: Final = {kind.kind: kind for kind in KINDS}


def kind_of(raw: Mapping[str, Any]) -> Kind | None:
    """The table's entry for an object that says its kind; None for any other kind."""
    value = raw.get("kind")
    return _BY_KIND.get(value) if isinstance(value, str) else None
