"""Compact typed Kubernetes objects, parsed once at the edge from plain dicts.

Everything the engine reads about a Pod, Node, PV, PVC, StorageClass, Service,
ReplicationController, ReplicaSet, StatefulSet, CSINode, PodDisruptionBudget,
PriorityClass, Namespace or PodGroup (scheduler-plugins' gangs) is extracted here into frozen,
slotted dataclasses with precomputed aggregates (a pod's resource request, its host
ports, its compiled selectors), so the engine never digs through dicts and never
recomputes per node what is a property of the pod.

Resource accounting follows kube-scheduler v1.13-v1.17:

* ``Pod.request`` — what PodFitsResources needs: the sum over containers, raised to the
  largest single init container, plus ``spec.overhead``;
* ``Pod.node_request`` — what the pod adds to its node once placed (``calculateResource``):
  the containers' sum plus overhead, init containers not counted;
* ``Pod.nonzero_cpu`` / ``nonzero_memory`` — the same for priorities only, where a
  container that does not *mention* cpu (memory) counts 100m (200Mi); an explicit "0"
  stays 0.

Today's kube-scheduler (v1.28-v1.30, ``resource.PodRequests``) also counts init
containers once the pod is placed, and sidecars (init containers with ``restartPolicy:
Always``) as running beside the containers: a pod with init containers carries
:class:`InitDemands` (``Pod.init``) with those amounts, and what they add to the legacy
node sums; a pod without init containers has ``Pod.init`` None, its amounts being the
legacy ones. The legacy engine never reads them.

Pod-level resources (``spec.resources``, v1.34's PodLevelResources, beta and on): the
cpu, memory and ``hugepages-*`` requests it names replace the containers' aggregate for
those resources (``resource.PodRequests``), overhead added; the API server's checks (only
those names, requests within the limits and above the containers' aggregate, no
container limit above the pod's) raise an ObjectError, and its defaulting of requests
from limits is applied. Such a pod is counted so everywhere, legacy engine included:
its ``request``, ``node_request`` and ``nonzero_*`` are v1.34's, and ``Pod.init``
carries the same with the scores' own amounts and no excess. A pod without
``spec.resources`` pays one dict lookup for it.

A malformed object raises :class:`ObjectError`, which names the object and the field:
``Pod "default/web-1": spec.containers[0].resources.requests.cpu: not a quantity: 'x'``.

Memory. The cache keeps one :class:`Pod` per bound pod, so a Pod keeps no copy of its
API object: what the scheduler needs later is parsed, plus (for a pod without a node)
``Pod.fingerprint``, a 16-byte digest of the canonical JSON of ``spec``, labels,
namespace and controller reference. Two pods with the same fingerprint are the same to
every predicate and priority (the engine's equivalence cache keys on it) and the queue
compares it to tell a spec or label change from a status update. Label keys and values,
resource names, image names, namespaces and other repeated strings are interned
(``sys.intern``); identical :class:`Resources`, label maps, fingerprints, tolerations and
images are shared between objects through small bounded tables, so a ReplicaSet's pods
all point to one copy (and what their spec asks for is parsed once, see
``_spec_key``).

Bodies for extenders. HTTP scheduler extenders are sent whole API objects, as
kube-scheduler sent them: the pod being scheduled and, for an extender that is not
``nodeCacheCapable``, every candidate node. So a pending pod (no ``spec.nodeName``) and
every node keep ``body``: the object as compact JSON bytes, ``metadata.managedFields``
left out (as kube-scheduler's informers trim them; they are half of a node and no
extender reads them). Bytes rather than the dict: a node as EKS reports it (12 labels,
50 images) is 44 KB as a parsed dict, 15 KB as these bytes (2.8 KB without images), and
encoding adds about a quarter to :func:`parse_node`'s time. Placed pods keep none (the
cache holds many), so preemption victims are sent as their identity (see
``extending.py``). Inside :func:`bodies_deferred` (``simulate``'s loading, where every
API dict is in memory anyway and most runs have no extender) the parsers keep the dict
instead and ``body`` encodes it on first read: the same bytes, paid only for what an
extender is sent. The operator encodes at once and keeps no dict.

Bounds. Quantities beyond what kube-scheduler counts (int64), int32 fields of the API
(priority, weights, ports, maxSkew) beyond int32, and data nested too deeply to digest
are refused with an ObjectError, like any malformed field; error messages quote values
shortened (``reprlib``), so an absurd value never makes an absurd message.

Modules, by kind (this package re-exports what the rest of the scheduler imports, so
``from policy_scheduler.objects import Pod`` is the way in):

* ``common`` — API constants, :class:`ObjectError`, :class:`Resources`, taints and
  tolerations, owner references, the shared tables, bodies and fingerprints, ``_Reader``;
* ``pods`` — :class:`Pod` and its parts (affinity terms, spread constraints, volumes,
  claims, :class:`InitDemands`), :func:`parse_pod`, :func:`created_spec`;
* ``nodes`` — :class:`Node`, its images, :func:`parse_node`;
* ``storage`` — PersistentVolume, PersistentVolumeClaim, StorageClass, CSINode,
  CSIDriver, CSIStorageCapacity;
* ``policy`` — the workloads that spread pods, PodDisruptionBudget, Namespace,
  PriorityClass and PodGroup.
"""

from __future__ import annotations

from .common import (
    BETA_STORAGE_CLASS_ANNOTATION,
    CPU,
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    EMPTY_MAP,
    EPHEMERAL_STORAGE,
    HOSTNAME_LABEL,
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    LAST_APPLIED_ANNOTATION,
    MEMORY,
    MIGRATED_PLUGINS_ANNOTATION,
    PODS,
    PREEMPT_NEVER,
    PREEMPTION_POLICIES,
    PREFER_AVOID_PODS_ANNOTATION,
    REGION_LABELS,
    SHARED_LIMIT,
    ZERO,
    ZONE_LABELS,
    BodySource,
    FrozenLabels,
    ObjectError,
    OwnerRef,
    Resources,
    Taint,
    Toleration,
    _metadata,
    _Reader,
    add_resources,
    api_time,
    bodies_deferred,
    body_of,
    fingerprint,
    is_extended_resource,
    is_scalar_resource,
    parse_timestamp,
    resources,
    shared_labels,
    tolerations_tolerate,
)
from .nodes import (
    ImageState,
    Node,
    newer_version,
    parse_node,
)
from .pods import (
    NODE_INCLUSION_POLICIES,
    SPREAD_CONSTRAINT_FIELDS,
    HostPort,
    InitDemands,
    Pod,
    PodAffinityTerm,
    PodClaim,
    PreferredNodeTerm,
    TopologySpreadConstraint,
    Volume,
    WeightedPodAffinityTerm,
    _container_resources,
    _spec_key,
    created_spec,
    label_keys_problem,
    normalized_image,
    parse_pod,
    parse_volume_source,
)
from .policy import (
    POD_GROUP_FAILED,
    POD_GROUP_FINISHED,
    POD_GROUP_LABEL,
    POD_GROUP_PENDING,
    POD_GROUP_RUNNING,
    POD_GROUP_SCHEDULING,
    SYSTEM_PRIORITY_CLASSES,
    WORKLOAD_KINDS,
    Namespace,
    PodDisruptionBudget,
    PodGroup,
    PriorityClass,
    Workload,
    parse_namespace,
    parse_pod_disruption_budget,
    parse_pod_group,
    parse_priority_class,
    parse_workload,
)
from .storage import (
    CSIDriver,
    CSIDriverInfo,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    _controller_uid,
    parse_csi_driver,
    parse_csi_node,
    parse_csi_storage_capacity,
    parse_persistent_volume,
    parse_persistent_volume_claim,
    parse_storage_class,
)

__all__ = [
    "BETA_STORAGE_CLASS_ANNOTATION",
    "CPU",
    "DEFAULT_MEMORY_REQUEST",
    "DEFAULT_MILLI_CPU_REQUEST",
    "EMPTY_MAP",
    "EPHEMERAL_STORAGE",
    "HOSTNAME_LABEL",
    "INT32_MAX",
    "INT32_MIN",
    "INT64_MAX",
    "INT64_MIN",
    "LAST_APPLIED_ANNOTATION",
    "MEMORY",
    "MIGRATED_PLUGINS_ANNOTATION",
    "NODE_INCLUSION_POLICIES",
    "PODS",
    "POD_GROUP_FAILED",
    "POD_GROUP_FINISHED",
    "POD_GROUP_LABEL",
    "POD_GROUP_PENDING",
    "POD_GROUP_RUNNING",
    "POD_GROUP_SCHEDULING",
    "PREEMPTION_POLICIES",
    "PREEMPT_NEVER",
    "PREFER_AVOID_PODS_ANNOTATION",
    "REGION_LABELS",
    "SHARED_LIMIT",
    "SPREAD_CONSTRAINT_FIELDS",
    "SYSTEM_PRIORITY_CLASSES",
    "WORKLOAD_KINDS",
    "ZERO",
    "ZONE_LABELS",
    "BodySource",
    "CSIDriver",
    "CSIDriverInfo",
    "CSINode",
    "CSIStorageCapacity",
    "FrozenLabels",
    "HostPort",
    "ImageState",
    "InitDemands",
    "Namespace",
    "Node",
    "ObjectError",
    "OwnerRef",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "Pod",
    "PodAffinityTerm",
    "PodClaim",
    "PodDisruptionBudget",
    "PodGroup",
    "PreferredNodeTerm",
    "PriorityClass",
    "Resources",
    "StorageClass",
    "Taint",
    "Toleration",
    "TopologySpreadConstraint",
    "Volume",
    "WeightedPodAffinityTerm",
    "Workload",
    "_Reader",
    "_container_resources",
    "_controller_uid",
    "_metadata",
    "_spec_key",
    "add_resources",
    "api_time",
    "bodies_deferred",
    "body_of",
    "created_spec",
    "fingerprint",
    "is_extended_resource",
    "is_scalar_resource",
    "label_keys_problem",
    "newer_version",
    "normalized_image",
    "parse_csi_driver",
    "parse_csi_node",
    "parse_csi_storage_capacity",
    "parse_namespace",
    "parse_node",
    "parse_persistent_volume",
    "parse_persistent_volume_claim",
    "parse_pod",
    "parse_pod_disruption_budget",
    "parse_pod_group",
    "parse_priority_class",
    "parse_storage_class",
    "parse_timestamp",
    "parse_volume_source",
    "parse_workload",
    "resources",
    "shared_labels",
    "tolerations_tolerate",
]
