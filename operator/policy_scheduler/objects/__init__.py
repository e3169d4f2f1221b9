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
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import marshal
import sys
from collections.abc import Hashable, Iterable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any, Final, NoReturn, TypeVar

from .quantities import QuantityError, format_bytes, format_milli, int_value, milli_value
from .selectors import (
    EVERYTHING,
    IN,
    NodeSelectorTerm,
    Requirement,
    Selector,
    SelectorError,
    label_selector,
    node_selector_term,
    node_selector_terms,
    plain,
    set_selector,
    short_repr,
    valid_label_key,
)

DEFAULT_MILLI_CPU_REQUEST: Final = 100  # 0.1 core, priorities only
DEFAULT_MEMORY_REQUEST: Final = 200 * 1024 * 1024  # 200 MiB, priorities only

CPU: Final = "cpu"
MEMORY: Final = "memory"
EPHEMERAL_STORAGE: Final = "ephemeral-storage"
PODS: Final = "pods"

ZONE_LABELS: Final = ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone")
REGION_LABELS: Final = (
    "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/region",
)
HOSTNAME_LABEL: Final = "kubernetes.io/hostname"
BETA_STORAGE_CLASS_ANNOTATION: Final = "volume.beta.kubernetes.io/storage-class"
MIGRATED_PLUGINS_ANNOTATION: Final = "storage.alpha.kubernetes.io/migrated-plugins"
PREFER_AVOID_PODS_ANNOTATION: Final = "scheduler.alpha.kubernetes.io/preferAvoidPods"


#: Ranges of the API's int32 and int64 fields (priority, weights, ports; sizes, seconds).
INT32_MIN: Final = -(2**31)
INT32_MAX: Final = 2**31 - 1
INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1


class ObjectError(ValueError):
    """A Kubernetes object the scheduler cannot read; names the object and the field."""

    def __init__(self, kind: str, name: str, field_path: str, message: str) -> None:
        where = f'{kind} "{name}"' if name else kind
        super().__init__(
            f"{where}: {field_path}: {message}" if field_path else f"{where}: {message}"
        )
        self.kind = kind
        self.name = name
        self.field = field_path
        self.message = message


def is_scalar_resource(name: str) -> bool:
    """Extended, hugepages, prefixed-native and attachable-volume resources.

    kube's IsScalarResourceName: what NodeInfo accounts beyond cpu, memory and storage.
    """
    return "/" in name or name.startswith("hugepages-") or name.startswith("attachable-volumes-")


def is_extended_resource(name: str) -> bool:
    """A resource outside the kubernetes.io domain (IsExtendedResourceName)."""
    return "/" in name and "kubernetes.io/" not in name and not name.startswith("requests.")


@dataclass(frozen=True, slots=True)
class Resources:
    """Amounts of resources in kube-scheduler's units (millicores, bytes, counts)."""

    milli_cpu: int = 0
    memory: int = 0
    ephemeral_storage: int = 0
    allowed_pods: int = 0
    scalar: Mapping[str, int] = field(default_factory=dict)

    def get(self, name: str) -> int:
        if name == CPU:
            return self.milli_cpu
        if name == MEMORY:
            return self.memory
        if name == EPHEMERAL_STORAGE:
            return self.ephemeral_storage
        if name == PODS:
            return self.allowed_pods
        return self.scalar.get(name, 0)

    @property
    def is_zero(self) -> bool:
        return not (self.milli_cpu or self.memory or self.ephemeral_storage or self.scalar)


ZERO: Final = Resources()

_V = TypeVar("_V")

#: How many distinct values a sharing table keeps before it starts over; beyond it new
#: values are simply not shared (correct, only bigger).
SHARED_LIMIT: Final = 4096


def _shared(table: dict[Hashable, _V], key: Hashable, value: _V) -> _V:
    """The copy of ``value`` already handed out under ``key``, else ``value`` itself."""
    known = table.get(key)
    if known is not None:
        return known
    if len(table) >= SHARED_LIMIT:
        table.clear()
    table[key] = value
    return value


class FrozenLabels(dict[str, str]):
    """A label map shared between objects: read as a dict (at a dict's speed: reads are
    dict's own), never changed. Pods of one template share one map, so a plugin writing
    to its pod's labels would write to every twin's: every change raises TypeError.
    Copied (``dict(labels)``), it is the copier's own."""

    __slots__ = ()

    def _read_only(self, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError(
            "labels are shared between pods and read-only; change a copy: dict(pod.labels)"
        )

    __setitem__ = __delitem__ = _read_only
    clear = pop = popitem = setdefault = update = __ior__ = _read_only

    def __reduce__(self) -> tuple[type[FrozenLabels], tuple[dict[str, str]]]:
        return (FrozenLabels, (dict(self),))

    def __copy__(self) -> FrozenLabels:
        return self

    def __deepcopy__(self, memo: object) -> FrozenLabels:
        return self


_RESOURCES: dict[Hashable, Resources] = {}
_LABEL_MAPS: dict[Hashable, dict[str, str]] = {}
_FINGERPRINTS: dict[Hashable, bytes] = {}
_OWNERS: dict[Hashable, OwnerRef] = {}
#: Distinct pod annotation maps (replicas of one template share theirs).
_ANNOTATION_MAPS: dict[Hashable, dict[str, str]] = {}
#: The annotation kubectl apply writes: the whole object again, read by nothing here.
LAST_APPLIED_ANNOTATION: Final = "kubectl.kubernetes.io/last-applied-configuration"
#: Shared by every pod without annotations (callers never mutate what they get).
EMPTY_MAP: Final[Mapping[str, str]] = FrozenLabels()
_TUPLES: dict[Hashable, tuple[Any, ...]] = {}
_IMAGES: dict[Hashable, Any] = {}
_NAME_SETS: dict[Hashable, frozenset[str]] = {}
_PARSED_RESOURCES: dict[Hashable, Resources] = {}
_PARSED_TOLERATIONS: dict[Hashable, tuple[Toleration, ...]] = {}


def resources(
    milli_cpu: int = 0,
    memory: int = 0,
    ephemeral_storage: int = 0,
    allowed_pods: int = 0,
    scalar: Mapping[str, int] | None = None,
) -> Resources:
    """A shared :class:`Resources` (a flyweight: pods of one template request the same)."""
    items = tuple(scalar.items()) if scalar else ()
    if not (milli_cpu or memory or ephemeral_storage or allowed_pods or items):
        return ZERO
    key = (milli_cpu, memory, ephemeral_storage, allowed_pods, items)
    known = _RESOURCES.get(key)
    if known is not None:
        return known
    made = Resources(milli_cpu, memory, ephemeral_storage, allowed_pods, dict(items))
    return _shared(_RESOURCES, key, made)


def shared_labels(labels: dict[str, str]) -> dict[str, str]:
    """One read-only map per distinct label map (:class:`FrozenLabels`)."""
    key = tuple(labels.items())
    known = _LABEL_MAPS.get(key)
    if known is not None:
        return known
    return _shared(_LABEL_MAPS, key, FrozenLabels(labels))


def _plain(value: object) -> Any:
    # Kopf hands bodies over as Mappings, not dicts; json only knows dicts and lists.
    if isinstance(value, Mapping):
        return dict(value)
    # An unquoted timestamp in a YAML file is a date to YAML; the API writes the string.
    if isinstance(value, date):
        return api_time(value)
    raise TypeError(f"not JSON: {type(value).__name__}")


def _utc(value: date) -> datetime:
    """A YAML date or timestamp as an aware UTC datetime (YAML: no zone means UTC)."""
    if not isinstance(value, datetime):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def api_time(value: date) -> str:
    """A timestamp as the API writes it: RFC 3339 in UTC (``2024-01-01T10:00:00Z``)."""
    moment = _utc(value)
    fraction = f".{moment.microsecond:06d}" if moment.microsecond else ""
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + fraction + "Z"


#: Built once: json.dumps() with options makes a new encoder at every call (a quarter of
#: the cost of a node's body).
_COMPACT_JSON: Final = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=_plain)


def body_of(raw: Mapping[str, Any]) -> bytes:
    """The object as compact JSON, without ``metadata.managedFields`` (module docstring)."""
    meta = raw.get("metadata")
    if isinstance(meta, Mapping) and "managedFields" in meta:
        raw = {**raw, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}
    return _COMPACT_JSON.encode(raw).encode()


#: What a Pod or Node keeps for its ``body``: the bytes, or the API dict to encode them
#: from on first read (inside :func:`bodies_deferred`).
BodySource = bytes | Mapping[str, Any]

_DEFER_BODIES: ContextVar[bool] = ContextVar("defer_bodies", default=False)


@contextlib.contextmanager
def bodies_deferred() -> Iterator[None]:
    """Objects parsed inside keep their API dict and encode ``body`` on first read.

    Only for callers that hold the dicts in memory anyway (module docstring); the dicts
    must not be changed afterwards.
    """
    token = _DEFER_BODIES.set(True)
    try:
        yield
    finally:
        _DEFER_BODIES.reset(token)


def _body_source(raw: Mapping[str, Any]) -> BodySource:
    return raw if _DEFER_BODIES.get() else body_of(raw)


def _read_body(obj: Pod | Node) -> bytes:
    source = obj.body_source
    if isinstance(source, bytes):
        return source
    body = body_of(source)
    # Frozen dataclass: the encoded bytes replace the dict once (the same value either way).
    object.__setattr__(obj, "body_source", body)
    return body


#: Built once: json.dumps() with options makes a new encoder at every call.
_CANONICAL_JSON: Final = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=repr)


def fingerprint(*parts: object) -> bytes:
    """A 16-byte digest of the canonical JSON of ``parts`` (shared between equal ones)."""
    try:
        text = _CANONICAL_JSON.encode(parts)
    except (TypeError, ValueError):  # keys of mixed types: still deterministic
        text = repr(parts)
    digest = hashlib.blake2b(text.encode(), digest_size=16).digest()
    return _shared(_FINGERPRINTS, digest, digest)


@dataclass(frozen=True, slots=True)
class HostPort:
    """A host port a container asks for: (hostIP, protocol, port)."""

    ip: str
    protocol: str
    port: int


@dataclass(frozen=True, slots=True)
class Toleration:
    """A pod toleration, with the operator defaulted to Equal."""

    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None

    def tolerates(self, taint: Taint) -> bool:
        """v1.Toleration.ToleratesTaint: empty effect/key match all; empty operator is Equal."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator in ("", "Equal"):
            return self.value == taint.value
        return self.operator == "Exists"


@dataclass(frozen=True, slots=True)
class Taint:
    """A node taint: key, value and effect."""

    key: str
    value: str = ""
    effect: str = ""


def tolerations_tolerate(tolerations: tuple[Toleration, ...], taint: Taint) -> bool:
    for toleration in tolerations:
        if toleration.tolerates(taint):
            return True
    return False


@dataclass(frozen=True, slots=True)
class PodAffinityTerm:
    """A pod (anti-)affinity term: which pods, in which namespaces, in which topology."""

    selector: Selector
    #: Namespaces the term looks in; empty means the pod's own namespace (resolved at parse).
    namespaces: frozenset[str]
    topology_key: str
    #: ``namespaceSelector`` (Kubernetes v1.21+), compiled; None when the term has none
    #: (which selects no namespace). kube-scheduler v1.13-v1.17 knew no such field: the
    #: legacy predicates and priorities read ``namespaces`` alone, as they did.
    namespace_selector: Selector | None = None
    #: With a namespaceSelector, the namespaces the term lists, without the fallback to
    #: the pod's own namespace that ``namespaces`` has (v1.22+ adds the own namespace
    #: only when a term has neither).
    listed_namespaces: frozenset[str] = frozenset()

    def matches_namespace(self, namespace: str, labels: Mapping[str, str] | None) -> bool:
        """Whether a pod in ``namespace`` is in the term's scope, as kube-scheduler v1.22+
        reads a term (``AffinityTerm.Matches``): one of its namespaces, or one its
        namespaceSelector selects by the namespace's ``labels``. ``labels`` None: a
        namespace the scheduler does not know; kube-scheduler matches an incoming pod's
        own terms against the namespaces that exist (``mergeAffinityTermNamespacesIfNotEmpty``),
        so only an empty selector (every namespace) takes it. For an existing pod's term
        and the incoming pod, upstream reads an unknown namespace's labels as empty: pass
        ``{}`` then."""
        selector = self.namespace_selector
        if selector is None:
            return namespace in self.namespaces
        if namespace in self.listed_namespaces:
            return True
        if labels is None:
            return selector.empty
        return selector.matches(labels)


@dataclass(frozen=True, slots=True)
class WeightedPodAffinityTerm:
    """A preferred pod (anti-)affinity term and its weight."""

    weight: int
    term: PodAffinityTerm


@dataclass(frozen=True, slots=True)
class PreferredNodeTerm:
    """A preferred node affinity term and its weight."""

    weight: int
    term: NodeSelectorTerm


@dataclass(frozen=True, slots=True)
class TopologySpreadConstraint:
    """One ``topologySpreadConstraints`` entry, as today's kube-scheduler reads it.

    ``selector`` already carries the ``matchLabelKeys`` requirements (the pod's own value
    of each key it has). ``honor_node_affinity`` / ``honor_node_taints`` are
    ``nodeAffinityPolicy: Honor`` (the default) / ``nodeTaintsPolicy: Honor`` (default
    Ignore): whether a node must pass the pod's node selector and required affinity, and
    tolerate the pod's NoSchedule/NoExecute taints, for its pods to be counted.
    """

    max_skew: int
    topology_key: str
    when_unsatisfiable: str  # DoNotSchedule | ScheduleAnyway
    selector: Selector
    min_domains: int = 1
    honor_node_affinity: bool = True
    honor_node_taints: bool = False


@dataclass(frozen=True, slots=True)
class Volume:
    """A pod volume, reduced to what the volume predicates compare.

    ``kind`` is the volume source key (gcePersistentDisk, awsElasticBlockStore, rbd, iscsi,
    azureDisk, cinder, csi, persistentVolumeClaim, ...); ``handle`` identifies the
    backing disk for conflicts and counts (PD name, EBS volume id, RBD image, ISCSI iqn,
    Azure disk name, Cinder volume id, CSI volume handle, PVC claim name).
    """

    name: str
    kind: str
    handle: str = ""
    read_only: bool = False
    #: RBD monitors; ISCSI target portal and lun travel in ``extra``.
    monitors: tuple[str, ...] = ()
    pool: str = ""
    driver: str = ""
    fs_type: str = ""
    extra: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class OwnerRef:
    """One of a pod's ``metadata.ownerReferences`` (its controller has ``controller``)."""

    kind: str
    name: str
    uid: str
    api_version: str = ""
    controller: bool = False


@dataclass(frozen=True, slots=True)
class InitDemands:
    """What kube-scheduler v1.28+ counts of a pod with init containers (module doc).

    Sidecars (``restartPolicy: Always``) run beside the containers: their requests add
    to the containers' sum, and each init container runs beside the sidecars started
    before it; the largest of those steps and the sum, plus ``spec.overhead``, is
    ``request``. The non-zero amounts (100m cpu / 200Mi memory for a container list
    that does not mention one) come in two forms, as upstream computes them: what the
    pod adds to its node's ``NonZeroRequested`` (``calculateResource``: the
    containers' defaults summed, sidecars counted only through the init steps), and
    what the scoring plugins take as the pod's own request (``PodRequests`` with the
    defaults applied to every container, sidecars summed in).
    """

    #: ``resource.PodRequests``: NodeResourcesFit's filter and the node's ``Requested``.
    request: Resources
    #: The pod's share of its node's ``NonZeroRequested``.
    nonzero_cpu: int
    nonzero_memory: int
    #: The pod's own non-zero request for the scoring plugins.
    score_cpu: int
    score_memory: int
    #: Each init container's image, normalized (ImageLocality counts them).
    images: tuple[str, ...]
    #: What ``request`` and the node share add to ``node_request`` / ``nonzero_*``:
    #: the node sums kube-scheduler v1.28+ keeps are the legacy ones plus these.
    excess: Resources
    excess_nonzero_cpu: int
    excess_nonzero_memory: int
    #: The resources ``spec.resources`` sets the request of (pod-level resources), and
    #: those requests (overhead not added).
    pod_level: frozenset[str] = frozenset()
    pod_level_requests: Resources = ZERO

    @property
    def adds(self) -> bool:
        """Whether the pod's node sums differ from the legacy ones at all."""
        return bool(
            self.excess is not ZERO or self.excess_nonzero_cpu or self.excess_nonzero_memory
        )


@dataclass(frozen=True, slots=True)
class Pod:
    """A pod as the engine reads it, with what it asks for precomputed."""

    namespace: str
    name: str
    uid: str
    labels: Mapping[str, str]
    scheduler_name: str
    node_name: str
    priority: int
    created: float  # epoch seconds, 0.0 when unknown
    deleting: bool
    gated: bool
    phase: str
    request: Resources
    node_request: Resources
    nonzero_cpu: int
    nonzero_memory: int
    limit_cpu: int
    limit_memory: int
    best_effort: bool
    host_ports: tuple[HostPort, ...]
    images: tuple[str, ...]
    node_selector: Selector
    has_node_selector: bool
    required_node_terms: tuple[NodeSelectorTerm, ...] | None
    preferred_node_terms: tuple[PreferredNodeTerm, ...]
    tolerations: tuple[Toleration, ...]
    affinity_required: tuple[PodAffinityTerm, ...]
    affinity_preferred: tuple[WeightedPodAffinityTerm, ...]
    anti_affinity_required: tuple[PodAffinityTerm, ...]
    anti_affinity_preferred: tuple[WeightedPodAffinityTerm, ...]
    spread_constraints: tuple[TopologySpreadConstraint, ...]
    volumes: tuple[Volume, ...]
    controller: OwnerRef | None
    resource_version: str = ""
    #: Digest of spec, labels, namespace and controller (see the module doc); b"" for a
    #: pod not made by :func:`parse_pod`, which the engine then never caches for, and for
    #: a pod parsed bound to a node (nothing decides or queues it again).
    fingerprint: bytes = field(default=b"", compare=False, repr=False)
    #: ``spec.priorityClassName``; ``priority_set``: ``spec.priority`` was given. On a
    #: real cluster admission always sets it; ``simulate`` resolves the class itself.
    priority_class_name: str = ""
    priority_set: bool = True
    #: ``spec.preemptionPolicy``: "" (unset: PreemptLowerPriority), or as written.
    preemption_policy: str = ""
    #: ``status.nominatedNodeName``: the node a preemption set aside for this pod.
    nominated_node_name: str = ""
    #: ``status.startTime`` in epoch seconds; None before the kubelet started it.
    start_time: float | None = None
    #: Extended resources any container or init container requests or limits (even at
    #: 0): what an extender's ``managedResources`` are matched against.
    resource_names: frozenset[str] = field(default=frozenset(), compare=False, repr=False)
    #: What :attr:`body` is read from (module docstring).
    body_source: BodySource = field(default=b"", compare=False, repr=False)
    #: ``metadata.annotations``, for plugins, without kubectl's
    #: ``last-applied-configuration`` (a copy of the whole object, kilobytes a pod, that
    #: no scheduling rule reads). One dict per distinct map, shared.
    annotations: Mapping[str, str] = field(
        default_factory=lambda: EMPTY_MAP, compare=False, repr=False
    )
    #: ``metadata.ownerReferences``, in order (the controller among them).
    owner_references: tuple[OwnerRef, ...] = field(default=(), compare=False, repr=False)
    #: Init containers as kube-scheduler v1.28+ counts them (module doc); None without.
    init: InitDemands | None = field(default=None, compare=False, repr=False)
    #: ``spec.schedulingGates`` names, in order (``gated`` says whether there are any).
    scheduling_gates: tuple[str, ...] = ()
    #: Terminating (``deleting``) with the ``DisruptionTarget`` condition True for
    #: ``PreemptionByScheduler``: a victim of a preemption (v1.26+ preemption reads it).
    disrupted_by_scheduler: bool = False
    #: ``spec.resourceClaims`` (DRA), each with the claim it names, in order.
    resource_claims: tuple[PodClaim, ...] = field(default=(), compare=False, repr=False)

    @property
    def body(self) -> bytes:
        """The API object as compact JSON for extenders, only while the pod is pending
        (no ``spec.nodeName``); b"" otherwise (module docstring)."""
        return _read_body(self)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def has_pod_affinity(self) -> bool:
        return bool(
            self.affinity_required
            or self.affinity_preferred
            or self.anti_affinity_required
            or self.anti_affinity_preferred
        )


@dataclass(frozen=True, slots=True)
class PodClaim:
    """One entry of a pod's ``spec.resourceClaims`` (DRA) and the ResourceClaim it names.

    ``claim_name`` is its ``resourceClaimName``, or for a ``resourceClaimTemplateName``
    the claim the controller made for this pod, as ``status.resourceClaimStatuses``
    says (``listed``: the status has the entry; its claim name may be "" when none was
    needed). A template claim not listed yet is not made yet: the pod waits.
    """

    name: str
    claim_name: str
    template: str = ""
    listed: bool = False


@dataclass(frozen=True, slots=True)
class ImageState:
    """An image a node holds: its names and its size in bytes."""

    names: tuple[str, ...]
    size: int


@dataclass(frozen=True, slots=True)
class Node:
    """A node as the engine reads it."""

    name: str
    uid: str
    labels: Mapping[str, str]
    unschedulable: bool
    taints: tuple[Taint, ...]
    conditions: Mapping[str, str]  # type -> status
    allocatable: Resources
    images: tuple[ImageState, ...]
    avoid_pods: tuple[tuple[str, str], ...]  # (controller kind, controller uid)
    resource_version: str = ""
    #: What :attr:`body` is read from (module docstring).
    body_source: BodySource = field(default=b"", compare=False, repr=False)
    #: ``metadata.annotations``, for plugins, without kubectl's
    #: ``last-applied-configuration`` (a copy of the whole object, kilobytes a pod, that
    #: no scheduling rule reads). One dict per distinct map, shared.
    annotations: Mapping[str, str] = field(
        default_factory=lambda: EMPTY_MAP, compare=False, repr=False
    )
    #: ``metadata.ownerReferences``, in order (the controller among them).
    owner_references: tuple[OwnerRef, ...] = field(default=(), compare=False, repr=False)

    @property
    def body(self) -> bytes:
        """The API object as compact JSON, sent to extenders that want whole nodes."""
        return _read_body(self)


@dataclass(frozen=True, slots=True)
class PersistentVolume:
    """A PersistentVolume as the volume predicates read it."""

    name: str
    labels: Mapping[str, str]
    storage_class: str
    capacity: int
    access_modes: frozenset[str]
    node_affinity: tuple[NodeSelectorTerm, ...] | None
    claim: str  # "namespace/name" of the claimRef, "" when unbound
    phase: str
    source: Volume
    #: The beta storage-class annotation, which wins over spec.storageClassName upstream.
    class_annotation: str | None = None
    claim_uid: str = ""  # spec.claimRef.uid
    has_claim_ref: bool = False  # a claimRef is set, even one without a name
    deleting: bool = False
    volume_mode: str = "Filesystem"
    resource_version: str = ""

    @property
    def class_name(self) -> str:
        """GetPersistentVolumeClass: the beta annotation first, then the spec field."""
        if self.class_annotation is not None:
            return self.class_annotation
        return self.storage_class


@dataclass(frozen=True, slots=True)
class PersistentVolumeClaim:
    """A PersistentVolumeClaim as the volume predicates read it."""

    namespace: str
    name: str
    #: GetPersistentVolumeClaimClass before defaulting: the beta annotation if present, else
    #: spec.storageClassName; None when neither is set (the scheduler then uses "").
    storage_class: str | None
    volume_name: str
    phase: str
    access_modes: frozenset[str]
    request: int
    selector: Selector | None
    deleting: bool
    annotations: Mapping[str, str]
    uid: str = ""
    #: spec.storageClassName exactly as written (None: absent), ignoring the annotation;
    #: the legacy MaxPD predicates look at this field only.
    spec_storage_class: str | None = None
    volume_mode: str = "Filesystem"
    resource_version: str = ""
    #: The uid of the claim's controller (``metadata.ownerReferences`` with
    #: ``controller: true``): a generic ephemeral volume's claim is its pod's.
    controller_uid: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def class_name(self) -> str:
        """GetPersistentVolumeClaimClass: the beta annotation, else the spec field, else ""."""
        return self.storage_class or ""


@dataclass(frozen=True, slots=True)
class StorageClass:
    """A StorageClass: provisioner, binding mode and allowed topologies."""

    name: str
    provisioner: str
    binding_mode: str  # Immediate | WaitForFirstConsumer
    allowed_topologies: tuple[NodeSelectorTerm, ...]
    is_default: bool


@dataclass(frozen=True, slots=True)
class CSIDriverInfo:
    """One CSI driver of a CSINode: its node id, volume limit and topology keys."""

    node_id: str
    allocatable: int | None
    topology_keys: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CSINode:
    """A CSINode: the CSI drivers installed on a node."""

    name: str
    drivers: Mapping[str, CSIDriverInfo]
    #: The in-tree plugins migrated to CSI on the node (the
    #: ``storage.alpha.kubernetes.io/migrated-plugins`` annotation, comma-separated).
    migrated_plugins: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class CSIDriver:
    """A CSIDriver (storage.k8s.io/v1), as the volume binder reads it."""

    name: str
    #: ``spec.storageCapacity``: the driver publishes CSIStorageCapacity objects, and
    #: provisioning needs one with room enough on the node.
    storage_capacity: bool = False


@dataclass(frozen=True, slots=True)
class CSIStorageCapacity:
    """A CSIStorageCapacity (storage.k8s.io/v1): free space of a class on some nodes."""

    namespace: str
    name: str
    storage_class: str
    #: ``capacity`` / ``maximumVolumeSize`` in bytes; None when absent.
    capacity: int | None
    maximum_volume_size: int | None
    #: ``nodeTopology``: the nodes that reach this storage; None reaches none.
    node_topology: Selector | None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class Workload:
    """A Service, ReplicationController, ReplicaSet or StatefulSet: what selects pods."""

    kind: str
    namespace: str
    name: str
    selector: Selector

    @property
    def key(self) -> str:
        return f"{self.kind}/{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class PodDisruptionBudget:
    """A PodDisruptionBudget (policy/v1 or v1beta1) as preemption reads it.

    ``selector`` None: the budget selects no pod (kube-scheduler's rule for a nil or an
    empty selector, whatever the API version says about empty ones).
    """

    namespace: str
    name: str
    selector: Selector | None
    #: ``status.disruptionsAllowed`` (0 when the status is not written yet).
    disruptions_allowed: int
    #: ``status.disruptedPods``' names: evictions the API server already counted.
    disrupted_pods: frozenset[str] = frozenset()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def selects(self, pod: Pod) -> bool:
        """The pod is in the budget's namespace and its selector matches the pod's labels."""
        return (
            self.selector is not None
            and pod.namespace == self.namespace
            and self.selector.matches(pod.labels)
        )


@dataclass(frozen=True, slots=True)
class Namespace:
    """A Namespace, for its labels: a pod affinity term's namespaceSelector selects by them."""

    name: str
    labels: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class PriorityClass:
    """A PriorityClass (scheduling.k8s.io/v1): what admission writes into a pod's spec."""

    name: str
    value: int
    global_default: bool
    preemption_policy: str = ""


#: The label that makes a pod a member of a PodGroup (scheduler-plugins'
#: ``v1alpha1.PodGroupLabel``): its value is the PodGroup's name, in the pod's namespace.
POD_GROUP_LABEL: Final = "scheduling.x-k8s.io/pod-group"
#: PodGroup phases (scheduler-plugins v0.30's ``PodGroupPhase``).
POD_GROUP_PENDING: Final = "Pending"
POD_GROUP_SCHEDULING: Final = "Scheduling"
POD_GROUP_RUNNING: Final = "Running"
POD_GROUP_FINISHED: Final = "Finished"
POD_GROUP_FAILED: Final = "Failed"


@dataclass(frozen=True, slots=True)
class PodGroup:
    """A PodGroup (``scheduling.x-k8s.io/v1alpha1``, scheduler-plugins' gang): pods
    labelled ``scheduling.x-k8s.io/pod-group: NAME`` in its namespace are its members.

    ``min_member``: how many members must be placed together (0 when the spec says
    none: every group is then satisfied); ``min_resources``: what the cluster must have
    free for ``min_member`` members (None: not checked), in the units of
    :class:`Resources`; ``schedule_timeout_seconds``: how long a member may wait at
    Permit (None: the plugin's default). The status fields are as the API holds them
    (the operator keeps them up to date, ``runtime/podgroups.py``).
    """

    namespace: str
    name: str
    uid: str = ""
    #: ``metadata.creationTimestamp`` in epoch seconds (0.0 when unknown).
    created: float = 0.0
    min_member: int = 0
    min_resources: Resources | None = None
    schedule_timeout_seconds: int | None = None
    resource_version: str = ""
    #: ``status.phase``: "" (not written yet), Pending, Scheduling, Running, Finished,
    #: Failed (or Unknown, which v0.30 defines and never writes).
    phase: str = ""
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    #: ``status.scheduleStartTime`` as written ("" when absent).
    schedule_start_time: str = ""
    occupied_by: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


#: The classes every API server creates at startup (``SystemPriorityClasses``).
SYSTEM_PRIORITY_CLASSES: Final = (
    PriorityClass("system-node-critical", 2000001000, False),
    PriorityClass("system-cluster-critical", 2000000000, False),
)
PREEMPT_NEVER: Final = "Never"
PREEMPTION_POLICIES: Final = ("PreemptLowerPriority", PREEMPT_NEVER)


# -- parsing helpers -------------------------------------------------------------------


class _Reader:
    """Field access on a raw object that turns surprises into ObjectErrors."""

    __slots__ = ("kind", "name")

    def __init__(self, kind: str, name: str) -> None:
        self.kind = kind
        self.name = name

    def fail(self, path: str, message: str) -> ObjectError:
        return ObjectError(self.kind, self.name, path, message)

    def mapping(self, value: object, path: str) -> Mapping[str, Any]:
        if type(value) is dict:  # decoded JSON/YAML: skips the ABC check, a hot path
            return value
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise self.fail(path, f"must be an object, got {_short(value)}")
        return value

    def items(self, value: object, path: str) -> list[Any]:
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.fail(path, f"must be a list, got {_short(value)}")
        return value

    def string(self, value: object, path: str, default: str = "") -> str:
        if value is None:
            return default
        if not isinstance(value, str):
            raise self.fail(path, f"must be a string, got {_short(value)}")
        return value

    def one_of(self, value: object, path: str, choices: tuple[str, ...], default: str = "") -> str:
        """A string among ``choices``; absent or empty means ``default``."""
        text = self.string(value, path, default) or default
        if text not in choices:
            quoted = [f'"{choice}"' for choice in choices]
            allowed = f"{', '.join(quoted[:-1])} or {quoted[-1]}"
            raise self.fail(path, f"must be {allowed}, got {text!r}")
        return text

    def integer(self, value: object, path: str, default: int = 0, *, bits: int = 64) -> int:
        """An int32 or int64 field of the API: anything beyond its range is refused."""
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(path, f"must be an integer, got {_short(value)}")
        low, high = (INT32_MIN, INT32_MAX) if bits == 32 else (INT64_MIN, INT64_MAX)
        if not low <= value <= high:
            raise self.fail(
                path, f"must be a {bits}-bit integer ({low}..{high}), got {_short(value)}"
            )
        return value

    def boolean(self, value: object, path: str) -> bool:
        if value is None:
            return False
        if not isinstance(value, bool):
            raise self.fail(path, f"must be true or false, got {_short(value)}")
        return value

    def labels(self, value: object, path: str) -> dict[str, str]:
        raw = self.mapping(value, path)
        intern = sys.intern
        try:
            return {intern(key): intern(val) for key, val in raw.items()}
        except TypeError:  # intern() takes only strings: find the culprit, say which
            pass
        out: dict[str, str] = {}
        for key, val in raw.items():
            if not isinstance(val, str):
                # YAML turns `zone: 1` into an int; the API would have refused it too.
                raise self.fail(f"{path}.{plain(key)}", f"must be a string, got {_short(val)}")
            out[intern(str(key))] = intern(str(val))
        return out

    def resources(self, value: object, path: str, *, allow_negative: bool = False) -> Resources:
        raw = self.mapping(value, path)
        if not raw:
            return ZERO
        # Pods of one template request the same: the same strings give the same amounts.
        key = _string_items(raw)
        if key is not None:
            known = _PARSED_RESOURCES.get((key, allow_negative))
            if known is not None:
                return known
        cpu = memory = ephemeral = pods = 0
        scalar: dict[str, int] = {}
        for rname, quantity in raw.items():
            try:
                if rname == CPU:
                    amount = milli_value(quantity)
                else:
                    amount = int_value(quantity)
            except QuantityError as exc:
                raise self.fail(f"{path}.{rname}", str(exc)) from None
            if amount < 0 and not allow_negative:
                raise self.fail(f"{path}.{rname}", f"must not be negative, got {_short(quantity)}")
            if rname == CPU:
                cpu = amount
            elif rname == MEMORY:
                memory = amount
            elif rname == EPHEMERAL_STORAGE:
                ephemeral = amount
            elif rname == PODS:
                pods = amount
            elif is_scalar_resource(str(rname)):
                scalar[sys.intern(str(rname))] = amount
        parsed = resources(cpu, memory, ephemeral, pods, dict(sorted(scalar.items())))
        if key is not None:
            _shared(_PARSED_RESOURCES, (key, allow_negative), parsed)
        return parsed

    def selector(self, value: object, path: str) -> Selector:
        try:
            return label_selector(value, path)
        except SelectorError as exc:
            raise self.fail(exc.field, exc.message) from None

    def node_terms(self, value: object, path: str) -> tuple[NodeSelectorTerm, ...]:
        try:
            return node_selector_terms(value, path)
        except SelectorError as exc:
            raise self.fail(exc.field, exc.message) from None

    def node_term(self, value: object, path: str) -> NodeSelectorTerm:
        try:
            return node_selector_term(value, path)
        except SelectorError as exc:
            raise self.fail(exc.field, exc.message) from None


_short = short_repr  # values quoted in errors: one line, a few dozen characters at most


def _string_items(raw: Mapping[Any, Any]) -> tuple[tuple[str, str], ...] | None:
    """``raw``'s items when keys and values are all strings (a type-exact cache key)."""
    for key, value in raw.items():
        if type(key) is not str or type(value) is not str:
            return None
    return tuple(raw.items())


def _metadata(raw: object, kind: str, *, namespaced: bool) -> tuple[Mapping[str, Any], str, str]:
    if not isinstance(raw, Mapping):
        raise ObjectError(kind, "", "", f"must be an object, got {_short(raw)}")
    meta = raw.get("metadata")
    if not isinstance(meta, Mapping):
        raise ObjectError(kind, "", "metadata", "is required")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise ObjectError(kind, "", "metadata.name", "is required")
    namespace = ""
    if namespaced:
        ns = meta.get("namespace", "default")
        if ns is None:
            ns = "default"
        if not isinstance(ns, str) or not ns:
            raise ObjectError(
                kind, name, "metadata.namespace", f"must be a string, got {_short(ns)}"
            )
        namespace = ns
    return meta, name, namespace


def parse_timestamp(value: object) -> float:
    """RFC 3339 timestamps as the API writes them (or a YAML file's unquoted timestamp,
    a date to YAML); 0.0 when absent or unreadable."""
    if isinstance(value, date):
        return _utc(value).timestamp()
    if not isinstance(value, str) or not value:
        return 0.0
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def normalized_image(name: str) -> str:
    """Image names without a tag mean ":latest" (ImageLocality's normalizedImageName)."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


# -- pods --------------------------------------------------------------------------------


def _container_resources(
    r: _Reader, containers: list[Any], path: str
) -> tuple[list[Resources], list[Resources], list[tuple[bool, bool]], list[Resources]]:
    requests: list[Resources] = []
    limits: list[Resources] = []
    mentions: list[tuple[bool, bool]] = []
    raw_requests: list[Resources] = []
    for i, container in enumerate(containers):
        where = f"{path}[{i}]"
        c = r.mapping(container, where)
        res = r.mapping(c.get("resources"), f"{where}.resources")
        req_raw = r.mapping(res.get("requests"), f"{where}.resources.requests")
        lim_raw = r.mapping(res.get("limits"), f"{where}.resources.limits")
        requests.append(r.resources(req_raw, f"{where}.resources.requests"))
        limits.append(r.resources(lim_raw, f"{where}.resources.limits"))
        mentions.append((CPU in req_raw, MEMORY in req_raw))
        raw_requests.append(requests[-1])
    return requests, limits, mentions, raw_requests


def _add(a: Resources, b: Resources) -> Resources:
    if b is ZERO:
        return a
    if a is ZERO:
        return b
    scalar = dict(a.scalar)
    for name, amount in b.scalar.items():
        scalar[name] = scalar.get(name, 0) + amount
    return resources(
        a.milli_cpu + b.milli_cpu,
        a.memory + b.memory,
        a.ephemeral_storage + b.ephemeral_storage,
        a.allowed_pods + b.allowed_pods,
        dict(sorted(scalar.items())),
    )


def _max(a: Resources, b: Resources) -> Resources:
    scalar = dict(a.scalar)
    for name, amount in b.scalar.items():
        # SetMaxResource only writes a larger value: an init container's "0" adds no entry.
        if amount > scalar.get(name, 0):
            scalar[name] = amount
    return resources(
        max(a.milli_cpu, b.milli_cpu),
        max(a.memory, b.memory),
        max(a.ephemeral_storage, b.ephemeral_storage),
        a.allowed_pods,
        dict(sorted(scalar.items())),
    )


def add_resources(a: Resources, b: Resources) -> Resources:
    return _add(a, b)


def _tolerations(r: _Reader, raw: object, path: str) -> tuple[Toleration, ...]:
    # Nearly every pod carries the same two NoExecute tolerations the API server adds.
    key = _toleration_key(raw)
    if key is not None:
        known = _PARSED_TOLERATIONS.get(key)
        if known is not None:
            return known
    parsed = _parse_tolerations(r, raw, path)
    if key is not None:
        _shared(_PARSED_TOLERATIONS, key, parsed)
    return parsed


def _toleration_key(raw: object) -> tuple[tuple[tuple[str, Any], ...], ...] | None:
    """A type-exact key for a list of flat tolerations (str or int values), else None."""
    if type(raw) is not list or len(raw) > 8:
        return None
    key = []
    for item in raw:
        if type(item) is not dict:
            return None
        for name, value in item.items():
            if type(name) is not str or (type(value) is not str and type(value) is not int):
                return None
        key.append(tuple(item.items()))
    return tuple(key)


def _parse_tolerations(r: _Reader, raw: object, path: str) -> tuple[Toleration, ...]:
    out = []
    for i, item in enumerate(r.items(raw, path)):
        where = f"{path}[{i}]"
        t = r.mapping(item, where)
        operator = r.one_of(t.get("operator"), f"{where}.operator", ("Equal", "Exists"), "Equal")
        seconds = t.get("tolerationSeconds")
        out.append(
            Toleration(
                key=r.string(t.get("key"), f"{where}.key"),
                operator=operator,
                value=r.string(t.get("value"), f"{where}.value"),
                effect=r.string(t.get("effect"), f"{where}.effect"),
                toleration_seconds=r.integer(seconds, f"{where}.tolerationSeconds")
                if seconds is not None
                else None,
            )
        )
    return tuple(out)


def _pod_terms(r: _Reader, raw: object, path: str, namespace: str) -> tuple[PodAffinityTerm, ...]:
    return tuple(
        _pod_term(r, item, f"{path}[{i}]", namespace) for i, item in enumerate(r.items(raw, path))
    )


def _pod_term(r: _Reader, raw: object, path: str, namespace: str) -> PodAffinityTerm:
    term = r.mapping(raw, path)
    namespaces = [
        r.string(ns, f"{path}.namespaces[{j}]")
        for j, ns in enumerate(r.items(term.get("namespaces"), f"{path}.namespaces"))
    ]
    topology_key = r.string(term.get("topologyKey"), f"{path}.topologyKey")
    raw_selector = term.get("namespaceSelector")
    namespace_selector = (
        None if raw_selector is None else r.selector(raw_selector, f"{path}.namespaceSelector")
    )
    return PodAffinityTerm(
        selector=r.selector(term.get("labelSelector"), f"{path}.labelSelector"),
        namespaces=frozenset(namespaces) if namespaces else frozenset({namespace}),
        topology_key=topology_key,
        namespace_selector=namespace_selector,
        listed_namespaces=frozenset(namespaces) if namespace_selector is not None else frozenset(),
    )


def _weighted_pod_terms(
    r: _Reader, raw: object, path: str, namespace: str
) -> tuple[WeightedPodAffinityTerm, ...]:
    out = []
    for i, item in enumerate(r.items(raw, path)):
        where = f"{path}[{i}]"
        entry = r.mapping(item, where)
        out.append(
            WeightedPodAffinityTerm(
                weight=r.integer(entry.get("weight"), f"{where}.weight", bits=32),
                term=_pod_term(
                    r, entry.get("podAffinityTerm"), f"{where}.podAffinityTerm", namespace
                ),
            )
        )
    return tuple(out)


_VOLUME_HANDLES: Final[dict[str, str]] = {
    "gcePersistentDisk": "pdName",
    "awsElasticBlockStore": "volumeID",
    "rbd": "image",
    "iscsi": "iqn",
    "azureDisk": "diskName",
    "cinder": "volumeID",
    "csi": "volumeHandle",
    "persistentVolumeClaim": "claimName",
}


def parse_volume_source(r: _Reader, name: str, raw: Mapping[str, Any], path: str) -> Volume:
    """The first recognised volume source of a pod volume or a PV spec."""
    for kind, handle_key in _VOLUME_HANDLES.items():
        if kind not in raw or raw[kind] is None:
            continue
        src = r.mapping(raw[kind], f"{path}.{kind}")
        handle = r.string(src.get(handle_key), f"{path}.{kind}.{handle_key}")
        extra: list[tuple[str, str]] = []
        if kind == "iscsi":
            extra.append(
                ("targetPortal", r.string(src.get("targetPortal"), f"{path}.iscsi.targetPortal"))
            )
            extra.append(("lun", str(src.get("lun", 0))))
        if kind == "gcePersistentDisk":
            extra.append(("partition", str(src.get("partition", 0))))
        if kind == "azureDisk":
            # What CSI migration names the disk by, and the kinds it can migrate.
            extra.append(("diskURI", r.string(src.get("diskURI"), f"{path}.azureDisk.diskURI")))
            extra.append(("kind", r.string(src.get("kind"), f"{path}.azureDisk.kind")))
        monitors = (
            tuple(
                r.string(m, f"{path}.rbd.monitors[{i}]")
                for i, m in enumerate(r.items(src.get("monitors"), f"{path}.rbd.monitors"))
            )
            if kind == "rbd"
            else ()
        )
        return Volume(
            name=name,
            kind=kind,
            handle=handle,
            read_only=r.boolean(src.get("readOnly"), f"{path}.{kind}.readOnly"),
            monitors=monitors,
            pool=r.string(src.get("pool"), f"{path}.rbd.pool", "rbd") if kind == "rbd" else "",
            driver=r.string(src.get("driver"), f"{path}.csi.driver") if kind == "csi" else "",
            fs_type=r.string(src.get("fsType"), f"{path}.{kind}.fsType")
            if isinstance(src.get("fsType"), str)
            else "",
            extra=tuple(extra),
        )
    other = next((k for k in raw if k != "name"), "")
    return Volume(name=name, kind=other)


#: The fields of a topology spread constraint the scheduler reads; any other is refused
#: on a pending pod (see ``_spread_constraints``).
SPREAD_CONSTRAINT_FIELDS: Final = frozenset(
    {
        "maxSkew",
        "topologyKey",
        "whenUnsatisfiable",
        "labelSelector",
        "minDomains",
        "nodeAffinityPolicy",
        "nodeTaintsPolicy",
        "matchLabelKeys",
    }
)
NODE_INCLUSION_POLICIES: Final = ("Honor", "Ignore")


def _spread_constraints(
    r: _Reader, raw: object, labels: Mapping[str, str], *, pending: bool
) -> tuple[TopologySpreadConstraint, ...]:
    """``spec.topologySpreadConstraints`` with the API server's checks and today's fields.

    ``minDomains`` (> 0, DoNotSchedule only), ``nodeAffinityPolicy`` / ``nodeTaintsPolicy``
    (Honor or Ignore) and ``matchLabelKeys`` (each key the pod carries becomes ``key In
    (its value)`` in the selector, as v1.34's PodTopologySpread still merges them for
    every pod it reads: the API server merged them already at create, behind
    MatchLabelKeysInPodTopologySpreadSelectorMerge, and merging the same requirement
    twice changes nothing; the API server's checks of the keys are
    :func:`created_spec`'s). A field the scheduler does not know is refused on a
    pending pod: placing it while ignoring a rule it states would break the rule
    silently. A placed pod's own constraints never take part in a decision, so they are
    read without that check.
    """
    path = "spec.topologySpreadConstraints"
    out: list[TopologySpreadConstraint] = []
    for i, item in enumerate(r.items(raw, path)):
        where = f"{path}[{i}]"
        c = r.mapping(item, where)
        if pending:
            for key in c:
                if key not in SPREAD_CONSTRAINT_FIELDS:
                    raise r.fail(
                        f"{where}.{key}",
                        "unknown field: the scheduler cannot honour a constraint it does "
                        "not understand, so it does not place the pod",
                    )
        max_skew = r.integer(c.get("maxSkew"), f"{where}.maxSkew", bits=32)
        if max_skew <= 0:
            raise r.fail(f"{where}.maxSkew", f"must be greater than zero, got {max_skew}")
        when = r.one_of(
            c.get("whenUnsatisfiable"),
            f"{where}.whenUnsatisfiable",
            ("DoNotSchedule", "ScheduleAnyway"),
        )
        topology_key = r.string(c.get("topologyKey"), f"{where}.topologyKey")
        if not topology_key:
            raise r.fail(f"{where}.topologyKey", "is required")
        min_domains = 1
        if c.get("minDomains") is not None:
            min_domains = r.integer(c.get("minDomains"), f"{where}.minDomains")
            if min_domains <= 0:
                raise r.fail(f"{where}.minDomains", f"must be greater than zero, got {min_domains}")
            if when != "DoNotSchedule":
                raise r.fail(
                    f"{where}.minDomains",
                    "can only be used with whenUnsatisfiable: DoNotSchedule",
                )
        honor_affinity, honor_taints = (
            r.one_of(c.get(name), f"{where}.{name}", NODE_INCLUSION_POLICIES, default) == "Honor"
            for name, default in (("nodeAffinityPolicy", "Honor"), ("nodeTaintsPolicy", "Ignore"))
        )
        selector_raw = c.get("labelSelector")
        selector = r.selector(selector_raw, f"{where}.labelSelector")
        keys = [
            r.string(k, f"{where}.matchLabelKeys[{j}]")
            for j, k in enumerate(r.items(c.get("matchLabelKeys"), f"{where}.matchLabelKeys"))
        ]
        if keys:
            selector = _merge_match_label_keys(r, where, keys, selector, selector_raw, labels)
        out.append(
            TopologySpreadConstraint(
                max_skew=max_skew,
                topology_key=topology_key,
                when_unsatisfiable=when,
                selector=selector,
                min_domains=min_domains,
                honor_node_affinity=honor_affinity,
                honor_node_taints=honor_taints,
            )
        )
    return tuple(out)


def _merge_match_label_keys(
    r: _Reader,
    where: str,
    keys: list[str],
    selector: Selector,
    selector_raw: object,
    labels: Mapping[str, str],
) -> Selector:
    """The constraint's selector AND ``key In (pod's value)`` for each key the pod has,
    as v1.34's ``filterTopologySpreadConstraints`` merges them (a requirement the API
    server merged already is not added twice). Upstream reads a null labelSelector with
    keys (which the API server refuses) as the keys alone."""
    extra: list[Requirement] = []
    present = set(selector.requirements)
    for j, key in enumerate(keys):
        if not valid_label_key(key):
            raise r.fail(f"{where}.matchLabelKeys[{j}]", f'Invalid value: "{key}": {_NOT_A_KEY}')
        if key in labels:
            requirement = Requirement(key, IN, frozenset({labels[key]}))
            if requirement not in present:
                extra.append(requirement)
                present.add(requirement)
    if not extra:
        return selector
    if selector_raw is None:
        return Selector(tuple(extra))
    return Selector((*selector.requirements, *extra), nothing=selector.nothing)


_NOT_A_KEY: Final = (
    "a label key must be a qualified name (an optional DNS subdomain prefix and '/', then "
    "at most 63 alphanumeric characters, '-', '_' or '.', starting and ending with an "
    "alphanumeric character)"
)
_TERM_ARMS: Final = ("podAffinity", "podAntiAffinity")
_REQUIRED: Final = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED: Final = "preferredDuringSchedulingIgnoredDuringExecution"


def _key_list(value: object) -> list[str] | None:
    """A term's matchLabelKeys / mismatchLabelKeys, or None when it is not a list of
    strings (the parsing that follows says where)."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(k, str) for k in value):
        return None
    return value


def label_keys_problem(
    path: str, match_keys: list[str], mismatch_keys: list[str], selector: object
) -> tuple[str, str] | None:
    """The first of kube-apiserver v1.34's complaints about a term's label keys
    (``validateMatchLabelKeysAndMismatchLabelKeys``, run after the merge): (field, message
    in the API server's words), or None. ``path`` is the term's (for a topology spread
    constraint, the constraint's); a key found twice in the merged selector is reported
    at ``path[i]`` (``i`` its index in matchLabelKeys), as upstream words it."""
    for name, keys in (("matchLabelKeys", match_keys), ("mismatchLabelKeys", mismatch_keys)):
        if not keys:
            continue
        if selector is None:
            return (
                f"{path}.{name}",
                "Forbidden: must not be specified when labelSelector is not set",
            )
        for i, key in enumerate(keys):
            if not valid_label_key(key):
                return f"{path}.{name}[{i}]", f'Invalid value: "{key}": {_NOT_A_KEY}'
    if isinstance(selector, Mapping) and match_keys:
        index = {key: i for i, key in enumerate(match_keys)}
        seen = set(selector.get("matchLabels") or ())
        for expression in selector.get("matchExpressions") or ():
            found = expression.get("key") if isinstance(expression, Mapping) else None
            if not isinstance(found, str):
                continue
            if found in index and found in seen:
                return (
                    f"{path}[{index[found]}]",
                    f'Invalid value: "{found}": exists in both matchLabelKeys and labelSelector',
                )
            seen.add(found)
    for i, key in enumerate(match_keys):
        if key in mismatch_keys:
            return (
                f"{path}.matchLabelKeys[{i}]",
                f'Invalid value: "{key}": exists in both matchLabelKeys and mismatchLabelKeys',
            )
    return None


def _merged_selector(
    selector: object, keys: list[str], operator: str, labels: Mapping[str, str]
) -> object:
    """``selector`` with ``key <operator> (the pod's value)`` appended to its
    matchExpressions for each key the pod carries (strategy.go's
    ``applyLabelKeysToLabelSelector``); a selector of another shape is left to the
    parsing to refuse."""
    added = [
        {"key": key, "operator": operator, "values": [labels[key]]} for key in keys if key in labels
    ]
    if not added or not isinstance(selector, Mapping):
        return selector
    expressions = selector.get("matchExpressions")
    if expressions is not None and not isinstance(expressions, list):
        return selector
    return {**selector, "matchExpressions": [*(expressions or ()), *added]}


def created_spec(
    r: _Reader, spec: Mapping[str, Any], labels: Mapping[str, str]
) -> Mapping[str, Any]:
    """``spec`` as kube-apiserver v1.34 stores it when the pod is created: the pod
    (anti-)affinity terms' ``matchLabelKeys`` / ``mismatchLabelKeys`` merged into their
    labelSelector (``key In (value)`` / ``key NotIn (value)`` for each key the pod
    carries; PrepareForCreate's ``mutatePodAffinity``, KEP-3633, GA in v1.33), and both
    those keys and the topology spread constraints' ``matchLabelKeys`` checked as its
    validation checks them after that merge (raises the first complaint, naming the
    field). The scheduler itself merges nothing into affinity terms since v1.31: a pod
    read from a cluster carries the merged selector already. Returns ``spec`` itself when
    there is nothing to merge or check."""
    merged_affinity: dict[str, Any] | None = None
    affinity = spec.get("affinity")
    if isinstance(affinity, Mapping):
        for arm in _TERM_ARMS:
            terms = affinity.get(arm)
            if not isinstance(terms, Mapping):
                continue
            new_arm: dict[str, Any] | None = None
            for kind in (_REQUIRED, _PREFERRED):
                entries = terms.get(kind)
                if not isinstance(entries, list):
                    continue
                new_entries: list[Any] | None = None
                for i, entry in enumerate(entries):
                    weighted = kind == _PREFERRED
                    term = (
                        entry.get("podAffinityTerm")
                        if weighted and isinstance(entry, Mapping)
                        else entry
                    )
                    if not isinstance(term, Mapping) or not isinstance(entry, Mapping):
                        continue
                    match_keys = _key_list(term.get("matchLabelKeys"))
                    mismatch_keys = _key_list(term.get("mismatchLabelKeys"))
                    if match_keys is None or mismatch_keys is None:
                        continue
                    if not match_keys and not mismatch_keys:
                        continue
                    selector = term.get("labelSelector")
                    selector = _merged_selector(selector, match_keys, "In", labels)
                    selector = _merged_selector(selector, mismatch_keys, "NotIn", labels)
                    path = f"spec.affinity.{arm}.{kind}[{i}]" + (
                        ".podAffinityTerm" if weighted else ""
                    )
                    problem = label_keys_problem(path, match_keys, mismatch_keys, selector)
                    if problem is not None:
                        raise r.fail(*problem)
                    if selector is term.get("labelSelector"):
                        continue
                    new_term = {**term, "labelSelector": selector}
                    if new_entries is None:
                        new_entries = list(entries)
                    new_entries[i] = (
                        {**entry, "podAffinityTerm": new_term} if weighted else new_term
                    )
                if new_entries is not None:
                    new_arm = {**(new_arm or terms), kind: new_entries}
            if new_arm is not None:
                merged_affinity = {**(merged_affinity or affinity), arm: new_arm}
    constraints = spec.get("topologySpreadConstraints")
    if isinstance(constraints, list):
        for i, constraint in enumerate(constraints):
            if not isinstance(constraint, Mapping):
                continue
            keys = _key_list(constraint.get("matchLabelKeys"))
            if not keys:
                continue
            selector = _merged_selector(constraint.get("labelSelector"), keys, "In", labels)
            problem = label_keys_problem(f"spec.topologySpreadConstraints[{i}]", keys, [], selector)
            if problem is not None:
                raise r.fail(*problem)
    if merged_affinity is None:
        return spec
    return {**spec, "affinity": merged_affinity}


def _has_label_keys(spec: Mapping[str, Any]) -> bool:
    """Whether any pod (anti-)affinity term or spread constraint names label keys (the
    cheap test before :func:`created_spec`)."""
    affinity = spec.get("affinity")
    if isinstance(affinity, Mapping):
        for arm in _TERM_ARMS:
            terms = affinity.get(arm)
            if not isinstance(terms, Mapping):
                continue
            for kind in (_REQUIRED, _PREFERRED):
                entries = terms.get(kind)
                for entry in entries if isinstance(entries, list) else ():
                    weighted = kind == _PREFERRED and isinstance(entry, Mapping)
                    term = entry.get("podAffinityTerm") if weighted else entry
                    if isinstance(term, Mapping) and (
                        term.get("matchLabelKeys") or term.get("mismatchLabelKeys")
                    ):
                        return True
    constraints = spec.get("topologySpreadConstraints")
    return isinstance(constraints, list) and any(
        isinstance(c, Mapping) and c.get("matchLabelKeys") for c in constraints
    )


@dataclass(frozen=True, slots=True)
class _Demands:
    """What a pod's containers, overhead, node affinity and node selector ask for."""

    request: Resources
    node_request: Resources
    nonzero_cpu: int
    nonzero_memory: int
    limit_cpu: int
    limit_memory: int
    best_effort: bool
    host_ports: tuple[HostPort, ...]
    images: tuple[str, ...]
    resource_names: frozenset[str]
    node_selector: Selector
    has_node_selector: bool
    required_node_terms: tuple[NodeSelectorTerm, ...] | None
    preferred_node_terms: tuple[PreferredNodeTerm, ...]
    init: InitDemands | None


@dataclass(frozen=True, slots=True)
class _PodTerms:
    """A pod's tolerations and pod (anti-)affinity terms (namespaces resolved)."""

    tolerations: tuple[Toleration, ...]
    affinity_required: tuple[PodAffinityTerm, ...]
    affinity_preferred: tuple[WeightedPodAffinityTerm, ...]
    anti_affinity_required: tuple[PodAffinityTerm, ...]
    anti_affinity_preferred: tuple[WeightedPodAffinityTerm, ...]


#: What pods parsed so far derived from their spec, by :func:`_spec_key`.
_SPEC_PARTS: dict[Hashable, tuple[_Demands, _PodTerms]] = {}


def _spec_key(
    spec: Mapping[str, Any], containers: list[Any], init_containers: list[Any], namespace: str
) -> bytes | None:
    """A type-exact key for all that :func:`_demands` and :func:`_pod_terms_of` read.

    Pods of one ReplicaSet repeat their spec, so parse_pod derives these once per key.
    Not whole containers: their volumeMounts name the pod's own service-account volume.
    ``marshal`` (version 2: no references, no interning flags) writes each value with
    its exact type, so inputs share a key only if equal in value and type (``1``,
    ``True``, ``1.0`` and ``"1"`` do not, nor a list and a tuple); it refuses what JSON
    and YAML decoders do not make (a Mapping other than dict, a subclass, a YAML date)
    and nesting beyond its limit: None, the pod is parsed without the cache. (Buffers
    such as a bytearray it writes as bytes: no decoder makes one.)
    """
    wanted = []
    for c in containers:
        if type(c) is not dict:
            return None
        wanted.append((c.get("resources"), c.get("image"), c.get("ports")))
    init_wanted = []
    for c in init_containers:
        if type(c) is not dict:
            return None
        init_wanted.append((c.get("resources"), c.get("image"), c.get("restartPolicy")))
    try:
        return marshal.dumps(
            (
                namespace,
                tuple(wanted),
                tuple(init_wanted),
                spec.get("overhead"),
                spec.get("resources"),
                spec.get("affinity"),
                spec.get("nodeSelector"),
                spec.get("tolerations"),
            ),
            2,
        )
    except ValueError:
        return None


def _demands(
    r: _Reader, spec: Mapping[str, Any], containers: list[Any], init_containers: list[Any]
) -> _Demands:
    requests, limits, mentions, _ = _container_resources(r, containers, "spec.containers")
    init_requests, init_limits, init_mentions, _ = _container_resources(
        r, init_containers, "spec.initContainers"
    )
    overhead = r.resources(spec.get("overhead"), "spec.overhead")

    containers_sum = ZERO
    for req in requests:
        containers_sum = _add(containers_sum, req)
    request = containers_sum
    for req in init_requests:
        request = _max(request, req)
    request = _add(request, overhead)
    node_request = _add(containers_sum, overhead)

    nonzero_cpu = overhead.milli_cpu
    nonzero_memory = overhead.memory
    for req, (has_cpu, has_memory) in zip(requests, mentions, strict=True):
        nonzero_cpu += req.milli_cpu if has_cpu else DEFAULT_MILLI_CPU_REQUEST
        nonzero_memory += req.memory if has_memory else DEFAULT_MEMORY_REQUEST

    limit_sum = ZERO
    for lim in limits:
        limit_sum = _add(limit_sum, lim)
    for lim in init_limits:
        limit_sum = _max(limit_sum, lim)

    # QoS BestEffort: no positive cpu/memory request or limit in any container.
    best_effort = not any(
        res.milli_cpu > 0 or res.memory > 0
        for res in (*requests, *limits, *init_requests, *init_limits)
    )

    ports: list[HostPort] = []
    images: list[str] = []
    for i, container in enumerate(containers):
        c = r.mapping(container, f"spec.containers[{i}]")
        image = c.get("image")
        if isinstance(image, str) and image:
            images.append(sys.intern(normalized_image(image)))
        for j, port in enumerate(r.items(c.get("ports"), f"spec.containers[{i}].ports")):
            where = f"spec.containers[{i}].ports[{j}]"
            p = r.mapping(port, where)
            host_port = r.integer(p.get("hostPort"), f"{where}.hostPort", bits=32)
            if host_port <= 0:
                continue
            ports.append(
                HostPort(
                    ip=r.string(p.get("hostIP"), f"{where}.hostIP") or "0.0.0.0",
                    protocol=r.string(p.get("protocol"), f"{where}.protocol") or "TCP",
                    port=host_port,
                )
            )

    affinity = r.mapping(spec.get("affinity"), "spec.affinity")
    node_affinity = r.mapping(affinity.get("nodeAffinity"), "spec.affinity.nodeAffinity")
    required_node_terms: tuple[NodeSelectorTerm, ...] | None = None
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    na_path = "spec.affinity.nodeAffinity"
    if required is not None:
        req_map = r.mapping(required, f"{na_path}.requiredDuringSchedulingIgnoredDuringExecution")
        required_node_terms = r.node_terms(
            req_map.get("nodeSelectorTerms"),
            f"{na_path}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms",
        )
    preferred_node_terms: list[PreferredNodeTerm] = []
    pref_path = f"{na_path}.preferredDuringSchedulingIgnoredDuringExecution"
    for i, item in enumerate(
        r.items(node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution"), pref_path)
    ):
        entry = r.mapping(item, f"{pref_path}[{i}]")
        preferred_node_terms.append(
            PreferredNodeTerm(
                weight=r.integer(entry.get("weight"), f"{pref_path}[{i}].weight", bits=32),
                term=r.node_term(entry.get("preference"), f"{pref_path}[{i}].preference"),
            )
        )
    # Read here for the order of errors; the terms are parsed by _pod_terms_of.
    r.mapping(affinity.get("podAffinity"), "spec.affinity.podAffinity")
    r.mapping(affinity.get("podAntiAffinity"), "spec.affinity.podAntiAffinity")

    node_selector_raw = r.labels(spec.get("nodeSelector"), "spec.nodeSelector")

    resource_names = frozenset(
        name
        for res in (*requests, *limits, *init_requests, *init_limits)
        for name in res.scalar
        if is_extended_resource(name)
    )
    init: InitDemands | None = None
    if init_containers:
        init = _init_demands(
            r,
            init_containers,
            _ContainerSums(containers_sum, requests, mentions),
            _ContainerSums(ZERO, init_requests, init_mentions),
            overhead,
            node_request,
            nonzero_cpu,
            nonzero_memory,
        )
    pod_resources = spec.get("resources")
    if pod_resources:  # a pod without spec.resources pays this test only
        level = _pod_level(
            r,
            pod_resources,
            (("spec.containers", limits), ("spec.initContainers", init_limits)),
        )
        if level is not None:
            plain = _PodPlain(containers_sum, requests, mentions, init_requests, init_mentions)
            init = _pod_level_demands(
                r, level, init_containers, plain, spec.get("overhead"), overhead
            )
            request = node_request = init.request
            nonzero_cpu, nonzero_memory = init.nonzero_cpu, init.nonzero_memory
            limit_sum = _replaced(limit_sum, level.limits, level.limit_names)
            best_effort = best_effort and not any(
                res.milli_cpu > 0 or res.memory > 0 for res in (level.requests, level.limits)
            )
    return _Demands(
        request=request,
        node_request=node_request,
        nonzero_cpu=nonzero_cpu,
        nonzero_memory=nonzero_memory,
        limit_cpu=limit_sum.milli_cpu,
        limit_memory=limit_sum.memory,
        best_effort=best_effort,
        host_ports=_shared(_TUPLES, tuple(ports), tuple(ports)),
        images=_shared(_TUPLES, tuple(images), tuple(images)),
        resource_names=_shared(_NAME_SETS, resource_names, resource_names),
        node_selector=set_selector(node_selector_raw) if node_selector_raw else EVERYTHING,
        has_node_selector=bool(node_selector_raw),
        required_node_terms=required_node_terms,
        preferred_node_terms=tuple(preferred_node_terms),
        init=init,
    )


@dataclass(frozen=True, slots=True)
class _ContainerSums:
    """A container list's requests, each container's, and which mention cpu / memory."""

    total: Resources
    requests: list[Resources]
    mentions: list[tuple[bool, bool]]


def _init_demands(
    r: _Reader,
    init_containers: list[Any],
    containers: _ContainerSums,
    inits: _ContainerSums,
    overhead: Resources,
    node_request: Resources,
    nonzero_cpu: int,
    nonzero_memory: int,
) -> InitDemands:
    """:class:`InitDemands` as ``resource.PodRequests`` and ``calculateResource`` of
    kube-scheduler v1.30 compute them (with SidecarContainers, on by default since 1.29)."""
    # Plain requests: sidecars summed with the containers; each init step is the init
    # container plus the sidecars started before it; the largest step or the sum.
    running = containers.total
    sidecars = ZERO
    steps = ZERO
    # Non-zero amounts; "mentions" of a list of containers: any of them mentions it.
    node_cpu = sum(
        req.milli_cpu if cpu else DEFAULT_MILLI_CPU_REQUEST
        for req, (cpu, _) in zip(containers.requests, containers.mentions, strict=True)
    )
    node_memory = sum(
        req.memory if memory else DEFAULT_MEMORY_REQUEST
        for req, (_, memory) in zip(containers.requests, containers.mentions, strict=True)
    )
    score_cpu, score_memory = node_cpu, node_memory  # the containers' share is the same
    side_cpu = side_memory = 0  # sidecars so far, plain
    side_has_cpu = side_has_memory = False
    side_score_cpu = side_score_memory = 0  # sidecars so far, defaults applied each
    step_node_cpu = step_node_memory = 0
    step_score_cpu = step_score_memory = 0
    images: list[str] = []
    for i, (container, req, (has_cpu, has_memory)) in enumerate(
        zip(init_containers, inits.requests, inits.mentions, strict=True)
    ):
        c = r.mapping(container, f"spec.initContainers[{i}]")
        image = c.get("image")
        images.append(sys.intern(normalized_image(image if isinstance(image, str) else "")))
        restart = r.string(c.get("restartPolicy"), f"spec.initContainers[{i}].restartPolicy")
        own_score_cpu = req.milli_cpu if has_cpu else DEFAULT_MILLI_CPU_REQUEST
        own_score_memory = req.memory if has_memory else DEFAULT_MEMORY_REQUEST
        if restart == "Always":
            running = _add(running, req)
            sidecars = _add(sidecars, req)
            step = sidecars
            side_cpu += req.milli_cpu
            side_memory += req.memory
            side_has_cpu = side_has_cpu or has_cpu
            side_has_memory = side_has_memory or has_memory
            score_cpu += own_score_cpu
            score_memory += own_score_memory
            side_score_cpu += own_score_cpu
            side_score_memory += own_score_memory
            step_cpu, step_memory = side_cpu, side_memory
            step_has_cpu, step_has_memory = side_has_cpu, side_has_memory
            step_score = (side_score_cpu, side_score_memory)
        else:
            step = _add(req, sidecars)
            step_cpu, step_memory = req.milli_cpu + side_cpu, req.memory + side_memory
            step_has_cpu, step_has_memory = has_cpu or side_has_cpu, has_memory or side_has_memory
            step_score = (own_score_cpu + side_score_cpu, own_score_memory + side_score_memory)
        steps = _max(steps, step)
        step_node_cpu = max(step_node_cpu, step_cpu if step_has_cpu else DEFAULT_MILLI_CPU_REQUEST)
        step_node_memory = max(
            step_node_memory, step_memory if step_has_memory else DEFAULT_MEMORY_REQUEST
        )
        step_score_cpu = max(step_score_cpu, step_score[0])
        step_score_memory = max(step_score_memory, step_score[1])
    request = _add(_max(running, steps), overhead)
    node_cpu = max(node_cpu, step_node_cpu) + overhead.milli_cpu
    node_memory = max(node_memory, step_node_memory) + overhead.memory
    excess_scalar = {
        name: amount - node_request.scalar.get(name, 0)
        for name, amount in request.scalar.items()
        if amount > node_request.scalar.get(name, 0)
    }
    return InitDemands(
        request=request,
        nonzero_cpu=node_cpu,
        nonzero_memory=node_memory,
        score_cpu=max(score_cpu, step_score_cpu) + overhead.milli_cpu,
        score_memory=max(score_memory, step_score_memory) + overhead.memory,
        images=_shared(_TUPLES, tuple(images), tuple(images)),
        excess=resources(
            request.milli_cpu - node_request.milli_cpu,
            request.memory - node_request.memory,
            request.ephemeral_storage - node_request.ephemeral_storage,
            0,
            excess_scalar,
        ),
        excess_nonzero_cpu=node_cpu - nonzero_cpu,
        excess_nonzero_memory=node_memory - nonzero_memory,
    )


#: What may be set at pod level (v1.34's ``IsSupportedPodLevelResource``).
_POD_LEVEL_NAMES: Final = "cpu, memory, hugepages-*"


def _pod_level_name(name: str) -> bool:
    return name in (CPU, MEMORY) or name.startswith("hugepages-")


def _amount_text(name: str, amount: int) -> str:
    return format_milli(amount) if name == CPU else format_bytes(amount)


@dataclass(frozen=True, slots=True)
class _PodLevel:
    """A pod's ``spec.resources`` as written: requests, the names they set, limits."""

    requests: Resources
    names: frozenset[str]
    limits: Resources
    limit_names: frozenset[str]


@dataclass(frozen=True, slots=True)
class _PodPlain:
    """The containers' and init containers' requests, as :func:`_demands` read them."""

    containers_sum: Resources
    requests: list[Resources]
    mentions: list[tuple[bool, bool]]
    init_requests: list[Resources]
    init_mentions: list[tuple[bool, bool]]


def _replaced(base: Resources, level: Resources, names: Iterable[str]) -> Resources:
    """``base`` with ``level``'s amount of each of ``names`` in its place
    (``applyPodLevelResources``)."""
    wanted = frozenset(names)
    if not wanted:
        return base
    scalar = dict(base.scalar)
    for name in wanted - {CPU, MEMORY}:
        scalar[name] = level.scalar.get(name, 0)
    return resources(
        level.milli_cpu if CPU in wanted else base.milli_cpu,
        level.memory if MEMORY in wanted else base.memory,
        base.ephemeral_storage,
        base.allowed_pods,
        dict(sorted(scalar.items())),
    )


def _pod_level(
    r: _Reader,
    raw: object,
    limits: tuple[tuple[str, list[Resources]], ...],
) -> _PodLevel | None:
    """``spec.resources`` checked as the API server (v1.34) checks what it alone tells:
    only cpu, memory and ``hugepages-*``, requests at most the limits, no container's
    limit above the pod's. None when it sets nothing (``IsPodLevelResourcesSet``)."""
    res = r.mapping(raw, "spec.resources")
    req_raw = r.mapping(res.get("requests"), "spec.resources.requests")
    lim_raw = r.mapping(res.get("limits"), "spec.resources.limits")
    if not req_raw and not lim_raw:
        return None
    for side, names in (("requests", req_raw), ("limits", lim_raw)):
        for name in names:
            if not _pod_level_name(name):
                raise r.fail(
                    f"spec.resources.{side}.{name}",
                    f"not supported at pod level (only {_POD_LEVEL_NAMES})",
                )
    requests = r.resources(req_raw, "spec.resources.requests")
    pod_limits = r.resources(lim_raw, "spec.resources.limits")
    for name in req_raw:
        if name in lim_raw and requests.get(name) > pod_limits.get(name):
            raise r.fail(
                f"spec.resources.requests.{name}",
                f"must be less than or equal to {name} limit of {lim_raw[name]}",
            )
    for path, lims in limits:
        for i, lim in enumerate(lims):
            for name in lim_raw:
                if lim.get(name) > pod_limits.get(name):
                    raise r.fail(
                        f"{path}[{i}].resources.limits.{name}",
                        f"must be less than or equal to pod limits of {lim_raw[name]}",
                    )
    return _PodLevel(requests, frozenset(req_raw), pod_limits, frozenset(lim_raw))


def _pod_level_demands(
    r: _Reader,
    level: _PodLevel,
    init_containers: list[Any],
    plain: _PodPlain,
    overhead_raw: object,
    overhead: Resources,
) -> InitDemands:
    """What kube-scheduler v1.34 counts of a pod with ``spec.resources`` (module doc).

    ``resource.PodRequests``: the containers' aggregate (init containers and sidecars as
    for any pod) with each resource the pod level names replaced by its amount, plus
    overhead. The non-zero amounts: a resource named at pod level counts its amount; one
    some container (or the overhead) mentions counts the plain aggregate; one nobody
    mentions counts 100m / 200Mi per container (``getNonMissingContainerRequests``).
    The scores' own request applies the defaults per container, then the pod level.
    Both the legacy and today's amounts are these: the node sums need no excess.
    """
    if init_containers:
        agg = _init_demands(
            r,
            init_containers,
            _ContainerSums(plain.containers_sum, plain.requests, plain.mentions),
            _ContainerSums(ZERO, plain.init_requests, plain.init_mentions),
            ZERO,
            plain.containers_sum,
            0,
            0,
        )
        aggregate, images = agg.request, agg.images
        defaults_cpu, defaults_memory = agg.score_cpu, agg.score_memory
    else:
        aggregate, images = plain.containers_sum, ()
        defaults_cpu = sum(
            req.milli_cpu if cpu else DEFAULT_MILLI_CPU_REQUEST
            for req, (cpu, _) in zip(plain.requests, plain.mentions, strict=True)
        )
        defaults_memory = sum(
            req.memory if memory else DEFAULT_MEMORY_REQUEST
            for req, (_, memory) in zip(plain.requests, plain.mentions, strict=True)
        )
    mentions = (*plain.mentions, *plain.init_mentions)
    overhead_names = r.mapping(overhead_raw, "spec.overhead")
    mentioned = {
        CPU: any(m[0] for m in mentions) or CPU in overhead_names,
        MEMORY: any(m[1] for m in mentions) or MEMORY in overhead_names,
    }
    names = set(level.names)
    requests = level.requests
    # The API server's defaulting (defaultPodRequests): a pod-level limit without a
    # request gives the request the containers' aggregate (cpu, memory they request:
    # the same as leaving it unset here) or else the limit.
    for name in level.limit_names - names:
        if not (name in (CPU, MEMORY) and any(m[1 if name == MEMORY else 0] for m in mentions)):
            names.add(name)
            requests = _replaced(requests, level.limits, (name,))
    for name in sorted(names):
        wanted, floor = requests.get(name), aggregate.get(name)
        if wanted < floor:
            raise r.fail(
                f"spec.resources.requests.{name}",
                "must be greater than or equal to aggregate container requests of "
                + _amount_text(name, floor),
            )
    request = _add(_replaced(aggregate, requests, names), overhead)
    amounts = []
    for name, defaults, own in (
        (CPU, defaults_cpu, overhead.milli_cpu),
        (MEMORY, defaults_memory, overhead.memory),
    ):
        if name in names:
            node = score = requests.get(name) + own
        elif mentioned[name]:
            node, score = request.get(name), defaults + own
        else:
            node = score = defaults + own
        amounts.append((node, score))
    (node_cpu, score_cpu), (node_memory, score_memory) = amounts
    return InitDemands(
        request=request,
        nonzero_cpu=node_cpu,
        nonzero_memory=node_memory,
        score_cpu=score_cpu,
        score_memory=score_memory,
        images=images,
        excess=ZERO,
        excess_nonzero_cpu=0,
        excess_nonzero_memory=0,
        pod_level=_shared(_NAME_SETS, frozenset(names), frozenset(names)),
        pod_level_requests=requests,
    )


def _pod_terms_of(r: _Reader, spec: Mapping[str, Any], namespace: str) -> _PodTerms:
    affinity = r.mapping(spec.get("affinity"), "spec.affinity")
    pod_affinity = r.mapping(affinity.get("podAffinity"), "spec.affinity.podAffinity")
    pod_anti = r.mapping(affinity.get("podAntiAffinity"), "spec.affinity.podAntiAffinity")
    req_key = "requiredDuringSchedulingIgnoredDuringExecution"
    pref_key = "preferredDuringSchedulingIgnoredDuringExecution"
    return _PodTerms(
        tolerations=_tolerations(r, spec.get("tolerations"), "spec.tolerations"),
        affinity_required=_pod_terms(
            r, pod_affinity.get(req_key), f"spec.affinity.podAffinity.{req_key}", namespace
        ),
        affinity_preferred=_weighted_pod_terms(
            r, pod_affinity.get(pref_key), f"spec.affinity.podAffinity.{pref_key}", namespace
        ),
        anti_affinity_required=_pod_terms(
            r, pod_anti.get(req_key), f"spec.affinity.podAntiAffinity.{req_key}", namespace
        ),
        anti_affinity_preferred=_weighted_pod_terms(
            r, pod_anti.get(pref_key), f"spec.affinity.podAntiAffinity.{pref_key}", namespace
        ),
    )


def parse_pod(raw: Mapping[str, Any]) -> Pod:
    meta, name, namespace = _metadata(raw, "Pod", namespaced=True)
    r = _Reader("Pod", f"{namespace}/{name}")
    spec = r.mapping(raw.get("spec"), "spec")
    status = r.mapping(raw.get("status"), "status")
    if not meta.get("uid") and _has_label_keys(spec):
        # A manifest (no uid: no API server created it, as in ``simulate``): what
        # kube-apiserver v1.34 does at create. A pod from a cluster was merged then.
        spec = created_spec(r, spec, r.labels(meta.get("labels"), "metadata.labels"))

    containers = r.items(spec.get("containers"), "spec.containers")
    init_containers = r.items(spec.get("initContainers"), "spec.initContainers")
    # A twin parsed before (same key) succeeded on the same input: this pod's demands and
    # terms would too, and equal. Only a pod parsed whole is remembered (at the end), so
    # any error is still found, in the same order, by the parsing of the rest.
    key = _spec_key(spec, containers, init_containers, namespace)
    known = _SPEC_PARTS.get(key) if key is not None else None
    demands = known[0] if known else _demands(r, spec, containers, init_containers)

    labels = shared_labels(r.labels(meta.get("labels"), "metadata.labels"))
    spread = _spread_constraints(
        r, spec.get("topologySpreadConstraints"), labels, pending=not spec.get("nodeName")
    )

    volumes = []
    for i, item in enumerate(r.items(spec.get("volumes"), "spec.volumes")):
        v = r.mapping(item, f"spec.volumes[{i}]")
        vname = r.string(v.get("name"), f"spec.volumes[{i}].name")
        volumes.append(parse_volume_source(r, vname, v, f"spec.volumes[{i}]"))

    controller: OwnerRef | None = None
    owner_key: tuple[str, str, str] | None = None
    owners: list[OwnerRef] = []
    for i, ref in enumerate(r.items(meta.get("ownerReferences"), "metadata.ownerReferences")):
        is_controller = False
        if type(ref) is dict:
            # Replicas name one owner: found as it is (checked when first seen).
            is_controller = ref.get("controller") is True
            try:
                owner = _OWNERS.get(
                    (
                        ref.get("kind"),
                        ref.get("name"),
                        ref.get("uid"),
                        ref.get("apiVersion", ""),
                        is_controller,
                    )
                )
            except TypeError:  # an unhashable value: the checks below say where
                owner = None
            if owner is not None:
                owners.append(owner)
                if is_controller and controller is None:
                    owner_key = (owner.kind, owner.name, owner.uid)
                    controller = owner
                continue
        o = r.mapping(ref, f"metadata.ownerReferences[{i}]")
        is_controller = o.get("controller") is True
        ref_key = (
            sys.intern(r.string(o.get("kind"), f"metadata.ownerReferences[{i}].kind")),
            r.string(o.get("name"), f"metadata.ownerReferences[{i}].name"),
            r.string(o.get("uid"), f"metadata.ownerReferences[{i}].uid"),
        )
        full_key = (
            *ref_key,
            r.string(o.get("apiVersion"), f"metadata.ownerReferences[{i}].apiVersion"),
            is_controller,
        )
        owner = _OWNERS.get(full_key)
        if owner is None:
            owner = _shared(_OWNERS, full_key, OwnerRef(*full_key))
        owners.append(owner)
        if is_controller and controller is None:
            owner_key = ref_key
            controller = owner

    namespace = sys.intern(namespace)
    node_name = sys.intern(r.string(spec.get("nodeName"), "spec.nodeName"))
    fingerprint_ = b""
    # Only a pod to be decided needs one (see Pod.fingerprint): a bound pod is never
    # decided nor queued, and digesting every running pod's spec was a third of the
    # parsing of a cluster.
    if not node_name:
        try:
            fingerprint_ = fingerprint(spec, labels, namespace, owner_key)
        except RecursionError:
            raise r.fail("spec", "nested too deeply") from None
    # In the order of Pod's fields, which is the order errors are found in.
    uid = r.string(meta.get("uid"), "metadata.uid") or f"{namespace}/{name}"
    scheduler_name = sys.intern(
        r.string(spec.get("schedulerName"), "spec.schedulerName", "default-scheduler")
        or "default-scheduler"
    )
    priority = r.integer(spec.get("priority"), "spec.priority", bits=32)
    created = parse_timestamp(meta.get("creationTimestamp"))
    gates = _scheduling_gates(r, spec.get("schedulingGates"))
    phase = sys.intern(r.string(status.get("phase"), "status.phase"))
    terms = known[1] if known else _pod_terms_of(r, spec, namespace)
    pod = Pod(
        namespace=namespace,
        name=name,
        uid=uid,
        labels=labels,
        scheduler_name=scheduler_name,
        node_name=node_name,
        priority=priority,
        created=created,
        deleting=meta.get("deletionTimestamp") is not None,
        gated=bool(gates),
        phase=phase,
        request=demands.request,
        node_request=demands.node_request,
        nonzero_cpu=demands.nonzero_cpu,
        nonzero_memory=demands.nonzero_memory,
        limit_cpu=demands.limit_cpu,
        limit_memory=demands.limit_memory,
        best_effort=demands.best_effort,
        host_ports=demands.host_ports,
        images=demands.images,
        node_selector=demands.node_selector,
        has_node_selector=demands.has_node_selector,
        required_node_terms=demands.required_node_terms,
        preferred_node_terms=demands.preferred_node_terms,
        tolerations=terms.tolerations,
        affinity_required=terms.affinity_required,
        affinity_preferred=terms.affinity_preferred,
        anti_affinity_required=terms.anti_affinity_required,
        anti_affinity_preferred=terms.anti_affinity_preferred,
        spread_constraints=tuple(spread),
        volumes=tuple(volumes),
        controller=controller,
        resource_version=r.string(meta.get("resourceVersion"), "metadata.resourceVersion"),
        fingerprint=fingerprint_,
        priority_class_name=r.string(spec.get("priorityClassName"), "spec.priorityClassName"),
        priority_set=spec.get("priority") is not None,
        preemption_policy=_preemption_policy(r, spec.get("preemptionPolicy")),
        nominated_node_name=sys.intern(
            r.string(status.get("nominatedNodeName"), "status.nominatedNodeName")
        ),
        start_time=_optional_timestamp(status.get("startTime")),
        resource_names=demands.resource_names,
        body_source=b"" if node_name else _body_source(raw),
        annotations=_pod_annotations(r, meta.get("annotations")),
        owner_references=tuple(owners),
        init=demands.init,
        scheduling_gates=gates,
        disrupted_by_scheduler=meta.get("deletionTimestamp") is not None
        and _disrupted_by_scheduler(status.get("conditions")),
        resource_claims=_pod_claims(r, spec.get("resourceClaims"), status),
    )
    if key is not None and known is None:
        _shared(_SPEC_PARTS, key, (demands, terms))
    return pod


def _pod_claims(r: _Reader, value: object, status: Mapping[str, Any]) -> tuple[PodClaim, ...]:
    if not value:
        return ()
    made: dict[str, str] = {}
    for i, entry in enumerate(
        r.items(status.get("resourceClaimStatuses"), "status.resourceClaimStatuses")
    ):
        where = f"status.resourceClaimStatuses[{i}]"
        listed = r.mapping(entry, where)
        made[r.string(listed.get("name"), f"{where}.name")] = r.string(
            listed.get("resourceClaimName"), f"{where}.resourceClaimName"
        )
    claims: list[PodClaim] = []
    for i, entry in enumerate(r.items(value, "spec.resourceClaims")):
        where = f"spec.resourceClaims[{i}]"
        item = r.mapping(entry, where)
        name = r.string(item.get("name"), f"{where}.name")
        if not name:
            raise r.fail(f"{where}.name", "is required")
        claim = r.string(item.get("resourceClaimName"), f"{where}.resourceClaimName")
        template = r.string(
            item.get("resourceClaimTemplateName"), f"{where}.resourceClaimTemplateName"
        )
        if bool(claim) == bool(template):
            raise r.fail(
                where, "must set exactly one of resourceClaimName, resourceClaimTemplateName"
            )
        if claim:
            claims.append(PodClaim(name, claim))
        else:
            claims.append(PodClaim(name, made.get(name, ""), template, name in made))
    return tuple(claims)


def _scheduling_gates(r: _Reader, value: object) -> tuple[str, ...]:
    names: list[str] = []
    for i, gate in enumerate(r.items(value, "spec.schedulingGates")):
        where = f"spec.schedulingGates[{i}]"
        names.append(r.string(r.mapping(gate, where).get("name"), f"{where}.name"))
    return tuple(names)


def _disrupted_by_scheduler(conditions: object) -> bool:
    """The first ``DisruptionTarget`` condition is True for ``PreemptionByScheduler``
    (``podTerminatingByPreemption``; only terminating pods are asked, so it costs a
    running pod nothing)."""
    if not isinstance(conditions, list):
        return False
    for condition in conditions:
        if isinstance(condition, Mapping) and condition.get("type") == "DisruptionTarget":
            return (
                condition.get("status") == "True"
                and condition.get("reason") == "PreemptionByScheduler"
            )
    return False


def _pod_annotations(r: _Reader, value: object) -> Mapping[str, str]:
    if not value:
        return EMPTY_MAP
    if type(value) is dict and LAST_APPLIED_ANNOTATION not in value:
        # Replicas of one template repeat their annotations: found as they are, unchecked
        # (what was shared passed the checks below when it was first seen).
        try:
            known = _ANNOTATION_MAPS.get(tuple(value.items()))
        except TypeError:  # an unhashable value: the checks below say where
            known = None
        if known is not None:
            return known
    annotations = r.labels(value, "metadata.annotations")
    annotations.pop(LAST_APPLIED_ANNOTATION, None)
    if not annotations:
        return EMPTY_MAP
    return _shared(_ANNOTATION_MAPS, tuple(annotations.items()), annotations)


def _preemption_policy(r: _Reader, value: object, path: str = "spec.preemptionPolicy") -> str:
    text = r.string(value, path)
    if text and text not in PREEMPTION_POLICIES:
        raise r.fail(path, f"must be one of {', '.join(PREEMPTION_POLICIES)}, got {text!r}")
    return text


def _optional_timestamp(value: object) -> float | None:
    """A timestamp that may be absent (None), unlike :func:`parse_timestamp`'s 0.0."""
    if isinstance(value, date):
        return _utc(value).timestamp()
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


# -- nodes ---------------------------------------------------------------------------------


def parse_node(raw: Mapping[str, Any]) -> Node:
    meta, name, _ = _metadata(raw, "Node", namespaced=False)
    r = _Reader("Node", name)
    spec = r.mapping(raw.get("spec"), "spec")
    status = r.mapping(raw.get("status"), "status")

    taints = []
    for i, item in enumerate(r.items(spec.get("taints"), "spec.taints")):
        t = r.mapping(item, f"spec.taints[{i}]")
        effect = r.one_of(
            t.get("effect"),
            f"spec.taints[{i}].effect",
            ("NoSchedule", "PreferNoSchedule", "NoExecute"),
        )
        key = r.string(t.get("key"), f"spec.taints[{i}].key")
        if not key:
            raise r.fail(f"spec.taints[{i}].key", "is required")
        taints.append(
            Taint(key=key, value=r.string(t.get("value"), f"spec.taints[{i}].value"), effect=effect)
        )

    conditions: dict[str, str] = {}
    for i, item in enumerate(r.items(status.get("conditions"), "status.conditions")):
        c = r.mapping(item, f"status.conditions[{i}]")
        ctype = r.string(c.get("type"), f"status.conditions[{i}].type")
        conditions[sys.intern(ctype)] = sys.intern(
            r.string(c.get("status"), f"status.conditions[{i}].status")
        )

    # The API server defaults allocatable to capacity when a node reports none.
    allocatable_raw = status.get("allocatable")
    path = "status.allocatable"
    if allocatable_raw is None:
        allocatable_raw, path = status.get("capacity"), "status.capacity"
    allocatable = r.resources(allocatable_raw, path)

    images = [
        _image_state(r, item, f"status.images[{i}]")
        for i, item in enumerate(r.items(status.get("images"), "status.images"))
    ]

    annotations = r.mapping(meta.get("annotations"), "metadata.annotations")
    return Node(
        name=name,
        uid=r.string(meta.get("uid"), "metadata.uid"),
        labels=r.labels(meta.get("labels"), "metadata.labels"),
        unschedulable=r.boolean(spec.get("unschedulable"), "spec.unschedulable"),
        taints=_shared(_TUPLES, tuple(taints), tuple(taints)),
        conditions=shared_labels(conditions),
        allocatable=allocatable,
        images=_shared(_TUPLES, tuple(images), tuple(images)),
        avoid_pods=_avoid_pods(annotations.get(PREFER_AVOID_PODS_ANNOTATION)),
        resource_version=r.string(meta.get("resourceVersion"), "metadata.resourceVersion"),
        body_source=_body_source(raw),
    )


def _image_state(r: _Reader, item: object, path: str) -> ImageState:
    """One entry of status.images, shared between nodes that report the same image."""
    img = r.mapping(item, path)
    raw_names = img.get("names")
    size = img.get("sizeBytes")
    names: tuple[str, ...] | None = None
    if type(raw_names) is list:
        # Node image names are taken as reported; only pods' images get ":latest".
        with contextlib.suppress(TypeError):  # not all strings: the slow path says which
            names = tuple(map(sys.intern, raw_names))
    if names is None:
        names = tuple(
            sys.intern(r.string(n, f"{path}.names[{j}]"))
            for j, n in enumerate(r.items(raw_names, f"{path}.names"))
        )
    if type(size) is not int or not INT64_MIN <= size <= INT64_MAX:
        size = r.integer(size, f"{path}.sizeBytes")
    key = (names, size)
    known: ImageState | None = _IMAGES.get(key)
    if known is None:
        known = _shared(_IMAGES, key, ImageState(names=names, size=size))
    return known


def _avoid_pods(value: object) -> tuple[tuple[str, str], ...]:
    """The preferAvoidPods annotation; unreadable JSON counts as no entry, as upstream."""
    if not isinstance(value, str) or not value:
        return ()
    try:
        data = json.loads(value)
        out = []
        for entry in data.get("preferAvoidPods") or []:
            ctrl = (entry.get("podSignature") or {}).get("podController") or {}
            out.append((str(ctrl.get("kind", "")), str(ctrl.get("uid", ""))))
        return tuple(out)
    except (ValueError, AttributeError, TypeError, RecursionError):
        return ()


# -- storage -------------------------------------------------------------------------------


def newer_version(new: str, old: str) -> bool:
    """Whether ``new`` is a later resourceVersion than ``old`` (the volume binder's
    assume cache compares them as integers, as etcd issues them). When either is not a
    decimal number (objects from files, other stores), the newcomer is taken as newer."""
    if not (new.isdecimal() and old.isdecimal()):
        return True
    return int(new) > int(old)


def parse_persistent_volume(raw: Mapping[str, Any]) -> PersistentVolume:
    meta, name, _ = _metadata(raw, "PersistentVolume", namespaced=False)
    r = _Reader("PersistentVolume", name)
    spec = r.mapping(raw.get("spec"), "spec")
    status = r.mapping(raw.get("status"), "status")
    node_affinity = None
    na = r.mapping(spec.get("nodeAffinity"), "spec.nodeAffinity")
    if na.get("required") is not None:
        required = r.mapping(na.get("required"), "spec.nodeAffinity.required")
        node_affinity = r.node_terms(
            required.get("nodeSelectorTerms"), "spec.nodeAffinity.required.nodeSelectorTerms"
        )
    claim_ref = r.mapping(spec.get("claimRef"), "spec.claimRef")
    claim = ""
    if claim_ref.get("name"):
        claim = f"{claim_ref.get('namespace') or 'default'}/{claim_ref['name']}"
    pv_annotations = r.labels(meta.get("annotations"), "metadata.annotations")
    return PersistentVolume(
        name=name,
        labels=r.labels(meta.get("labels"), "metadata.labels"),
        storage_class=r.string(spec.get("storageClassName"), "spec.storageClassName"),
        capacity=_storage(r, spec.get("capacity"), "spec.capacity"),
        access_modes=frozenset(
            r.string(m, f"spec.accessModes[{i}]")
            for i, m in enumerate(r.items(spec.get("accessModes"), "spec.accessModes"))
        ),
        node_affinity=node_affinity,
        claim=claim,
        phase=r.string(status.get("phase"), "status.phase"),
        source=parse_volume_source(r, name, spec, "spec"),
        class_annotation=pv_annotations.get(BETA_STORAGE_CLASS_ANNOTATION),
        claim_uid=r.string(claim_ref.get("uid"), "spec.claimRef.uid"),
        has_claim_ref=spec.get("claimRef") is not None,
        deleting=meta.get("deletionTimestamp") is not None,
        volume_mode=r.string(spec.get("volumeMode"), "spec.volumeMode") or "Filesystem",
        resource_version=r.string(meta.get("resourceVersion"), "metadata.resourceVersion"),
    )


def _storage(r: _Reader, raw: object, path: str) -> int:
    amounts = r.mapping(raw, path)
    if "storage" not in amounts:
        return 0
    try:
        return int_value(amounts["storage"])
    except QuantityError as exc:
        raise r.fail(f"{path}.storage", str(exc)) from None


def parse_persistent_volume_claim(raw: Mapping[str, Any]) -> PersistentVolumeClaim:
    meta, name, namespace = _metadata(raw, "PersistentVolumeClaim", namespaced=True)
    r = _Reader("PersistentVolumeClaim", f"{namespace}/{name}")
    spec = r.mapping(raw.get("spec"), "spec")
    status = r.mapping(raw.get("status"), "status")
    resources = r.mapping(spec.get("resources"), "spec.resources")
    annotations = r.labels(meta.get("annotations"), "metadata.annotations")
    spec_class: str | None = None
    if spec.get("storageClassName") is not None:
        spec_class = r.string(spec.get("storageClassName"), "spec.storageClassName")
    # GetPersistentVolumeClaimClass: the beta annotation wins over the spec field.
    storage_class = annotations.get(BETA_STORAGE_CLASS_ANNOTATION, spec_class)
    return PersistentVolumeClaim(
        namespace=namespace,
        name=name,
        storage_class=storage_class,
        volume_name=r.string(spec.get("volumeName"), "spec.volumeName"),
        phase=r.string(status.get("phase"), "status.phase"),
        access_modes=frozenset(
            r.string(m, f"spec.accessModes[{i}]")
            for i, m in enumerate(r.items(spec.get("accessModes"), "spec.accessModes"))
        ),
        request=_storage(r, resources.get("requests"), "spec.resources.requests"),
        selector=r.selector(spec.get("selector"), "spec.selector")
        if spec.get("selector") is not None
        else None,
        deleting=meta.get("deletionTimestamp") is not None,
        annotations=annotations,
        uid=r.string(meta.get("uid"), "metadata.uid"),
        spec_storage_class=spec_class,
        volume_mode=r.string(spec.get("volumeMode"), "spec.volumeMode") or "Filesystem",
        resource_version=r.string(meta.get("resourceVersion"), "metadata.resourceVersion"),
        controller_uid=_controller_uid(r, meta.get("ownerReferences")),
    )


def _controller_uid(r: _Reader, refs: object) -> str:
    """The uid of the first owner reference with ``controller: true``; "" when none."""
    for i, ref in enumerate(r.items(refs, "metadata.ownerReferences")):
        o = r.mapping(ref, f"metadata.ownerReferences[{i}]")
        if o.get("controller") is True:
            return r.string(o.get("uid"), f"metadata.ownerReferences[{i}].uid")
    return ""


def parse_storage_class(raw: Mapping[str, Any]) -> StorageClass:
    meta, name, _ = _metadata(raw, "StorageClass", namespaced=False)
    r = _Reader("StorageClass", name)
    topologies: list[NodeSelectorTerm] = []
    for i, item in enumerate(r.items(raw.get("allowedTopologies"), "allowedTopologies")):
        term = r.mapping(item, f"allowedTopologies[{i}]")
        exprs = []
        for j, expr in enumerate(
            r.items(
                term.get("matchLabelExpressions"), f"allowedTopologies[{i}].matchLabelExpressions"
            )
        ):
            e = r.mapping(expr, f"allowedTopologies[{i}].matchLabelExpressions[{j}]")
            exprs.append({"key": e.get("key"), "operator": "In", "values": e.get("values") or []})
        topologies.append(r.node_term({"matchExpressions": exprs}, f"allowedTopologies[{i}]"))
    annotations = r.mapping(meta.get("annotations"), "metadata.annotations")
    mode = r.one_of(
        raw.get("volumeBindingMode"),
        "volumeBindingMode",
        ("Immediate", "WaitForFirstConsumer"),
        "Immediate",
    )
    default_flag = str(
        annotations.get("storageclass.kubernetes.io/is-default-class")
        or annotations.get("storageclass.beta.kubernetes.io/is-default-class")
        or ""
    )
    return StorageClass(
        name=name,
        provisioner=r.string(raw.get("provisioner"), "provisioner"),
        binding_mode=mode,
        allowed_topologies=tuple(topologies),
        is_default=default_flag.lower() == "true",
    )


def parse_csi_node(raw: Mapping[str, Any]) -> CSINode:
    meta, name, _ = _metadata(raw, "CSINode", namespaced=False)
    r = _Reader("CSINode", name)
    spec = r.mapping(raw.get("spec"), "spec")
    drivers: dict[str, CSIDriverInfo] = {}
    for i, item in enumerate(r.items(spec.get("drivers"), "spec.drivers")):
        d = r.mapping(item, f"spec.drivers[{i}]")
        driver = r.string(d.get("name"), f"spec.drivers[{i}].name")
        alloc = r.mapping(d.get("allocatable"), f"spec.drivers[{i}].allocatable")
        count = alloc.get("count")
        drivers[driver] = CSIDriverInfo(
            node_id=r.string(d.get("nodeID"), f"spec.drivers[{i}].nodeID"),
            allocatable=r.integer(count, f"spec.drivers[{i}].allocatable.count", bits=32)
            if count is not None
            else None,
            topology_keys=tuple(
                r.string(k, f"spec.drivers[{i}].topologyKeys[{j}]")
                for j, k in enumerate(
                    r.items(d.get("topologyKeys"), f"spec.drivers[{i}].topologyKeys")
                )
            ),
        )
    annotations = r.labels(meta.get("annotations"), "metadata.annotations")
    migrated = annotations.get(MIGRATED_PLUGINS_ANNOTATION, "")
    return CSINode(
        name=name,
        drivers=drivers,
        migrated_plugins=frozenset(migrated.split(",")) if migrated else frozenset(),
    )


def parse_csi_driver(raw: Mapping[str, Any]) -> CSIDriver:
    _, name, _ = _metadata(raw, "CSIDriver", namespaced=False)
    r = _Reader("CSIDriver", name)
    spec = r.mapping(raw.get("spec"), "spec")
    return CSIDriver(
        name=name,
        storage_capacity=r.boolean(spec.get("storageCapacity"), "spec.storageCapacity"),
    )


def parse_csi_storage_capacity(raw: Mapping[str, Any]) -> CSIStorageCapacity:
    _, name, namespace = _metadata(raw, "CSIStorageCapacity", namespaced=True)
    r = _Reader("CSIStorageCapacity", f"{namespace}/{name}")

    def amount(field_name: str) -> int | None:
        value = raw.get(field_name)
        if value is None:
            return None
        try:
            return int_value(value)
        except QuantityError as exc:
            raise r.fail(field_name, str(exc)) from None

    topology = raw.get("nodeTopology")
    return CSIStorageCapacity(
        namespace=namespace,
        name=name,
        storage_class=r.string(raw.get("storageClassName"), "storageClassName"),
        capacity=amount("capacity"),
        maximum_volume_size=amount("maximumVolumeSize"),
        node_topology=r.selector(topology, "nodeTopology") if topology is not None else None,
    )


# -- workloads -----------------------------------------------------------------------------


def parse_workload(raw: Mapping[str, Any]) -> Workload:
    """A Service, ReplicationController, ReplicaSet or StatefulSet, by its selector."""
    kind = str(raw.get("kind", "")) if isinstance(raw, Mapping) else ""
    _, name, namespace = _metadata(raw, kind or "Workload", namespaced=True)
    r = _Reader(kind, f"{namespace}/{name}")
    spec = r.mapping(raw.get("spec"), "spec")
    if kind in ("Service", "ReplicationController"):
        # Map selectors; an absent or empty one selects no pod for spreading purposes.
        selector_map = r.labels(spec.get("selector"), "spec.selector")
        selector = set_selector(selector_map) if selector_map else Selector(nothing=True)
    elif kind in ("ReplicaSet", "StatefulSet"):
        selector = r.selector(spec.get("selector"), "spec.selector")
    else:
        raise r.fail("kind", f"is not a workload kind: {kind!r}")
    return Workload(kind=kind, namespace=namespace, name=name, selector=selector)


WORKLOAD_KINDS: Final = frozenset({"Service", "ReplicationController", "ReplicaSet", "StatefulSet"})


# -- priority and disruption ---------------------------------------------------------------


def parse_pod_disruption_budget(raw: Mapping[str, Any]) -> PodDisruptionBudget:
    """policy/v1 or policy/v1beta1: both keep the selector and ``disruptionsAllowed``."""
    _, name, namespace = _metadata(raw, "PodDisruptionBudget", namespaced=True)
    r = _Reader("PodDisruptionBudget", f"{namespace}/{name}")
    spec = r.mapping(raw.get("spec"), "spec")
    status = r.mapping(raw.get("status"), "status")
    selector: Selector | None = r.selector(spec.get("selector"), "spec.selector")
    if selector is not None and (selector.nothing or selector.empty):
        # kube-scheduler: "A PDB with a nil or empty selector matches nothing."
        selector = None
    return PodDisruptionBudget(
        namespace=sys.intern(namespace),
        name=name,
        selector=selector,
        disruptions_allowed=r.integer(
            status.get("disruptionsAllowed"), "status.disruptionsAllowed"
        ),
        disrupted_pods=frozenset(r.mapping(status.get("disruptedPods"), "status.disruptedPods")),
    )


def parse_namespace(raw: Mapping[str, Any]) -> Namespace:
    meta, name, _ = _metadata(raw, "Namespace", namespaced=False)
    r = _Reader("Namespace", name)
    labels = shared_labels(r.labels(meta.get("labels"), "metadata.labels"))
    return Namespace(name=name, labels=labels)


def parse_priority_class(raw: Mapping[str, Any]) -> PriorityClass:
    _, name, _ = _metadata(raw, "PriorityClass", namespaced=False)
    r = _Reader("PriorityClass", name)
    if raw.get("value") is None:
        raise r.fail("value", "is required")
    return PriorityClass(
        name=name,
        value=r.integer(raw.get("value"), "value"),
        global_default=r.boolean(raw.get("globalDefault"), "globalDefault"),
        preemption_policy=_preemption_policy(r, raw.get("preemptionPolicy"), "preemptionPolicy"),
    )


# -- gangs -----------------------------------------------------------------------------------


def parse_pod_group(raw: Mapping[str, Any]) -> PodGroup:
    """A PodGroup of scheduler-plugins (``scheduling.x-k8s.io/v1alpha1``), spec and status."""
    meta, name, namespace = _metadata(raw, "PodGroup", namespaced=True)
    r = _Reader("PodGroup", f"{namespace}/{name}")
    spec = r.mapping(raw.get("spec"), "spec")
    status = r.mapping(raw.get("status"), "status")
    min_member = r.integer(spec.get("minMember"), "spec.minMember", bits=32)
    if min_member < 0:
        raise r.fail("spec.minMember", f"must not be negative, got {min_member}")
    raw_resources = spec.get("minResources")
    timeout = spec.get("scheduleTimeoutSeconds")
    return PodGroup(
        namespace=sys.intern(namespace),
        name=name,
        uid=r.string(meta.get("uid"), "metadata.uid"),
        created=parse_timestamp(meta.get("creationTimestamp")),
        min_member=min_member,
        min_resources=(
            r.resources(raw_resources, "spec.minResources") if raw_resources is not None else None
        ),
        schedule_timeout_seconds=(
            r.integer(timeout, "spec.scheduleTimeoutSeconds", bits=32)
            if timeout is not None
            else None
        ),
        resource_version=r.string(meta.get("resourceVersion"), "metadata.resourceVersion"),
        phase=r.string(status.get("phase"), "status.phase"),
        running=r.integer(status.get("running"), "status.running", bits=32),
        succeeded=r.integer(status.get("succeeded"), "status.succeeded", bits=32),
        failed=r.integer(status.get("failed"), "status.failed", bits=32),
        schedule_start_time=_time_text(status.get("scheduleStartTime")),
        occupied_by=r.string(status.get("occupiedBy"), "status.occupiedBy"),
    )


def _time_text(value: object) -> str:
    """A timestamp field as the API writes it (a YAML file's unquoted one, a date to
    YAML, back in RFC 3339); "" when absent."""
    if isinstance(value, date):
        return api_time(value)
    return value if isinstance(value, str) else ""
