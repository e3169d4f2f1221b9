"""The Pod: its model and :func:`parse_pod`.

A pod's requests (``Pod.request``, ``node_request``, ``nonzero_*``, :class:`InitDemands`
for init containers and sidecars, v1.34's pod-level resources), its host ports, its
compiled node and pod (anti-)affinity terms, topology spread constraints (with
matchLabelKeys merged as the API server does, :func:`created_spec`), volumes
(:func:`parse_volume_source`, also read for PersistentVolumes) and resource claims.
What a ReplicaSet's pods share is parsed once (``_spec_key``). See the package's
docstring for the accounting rules followed.
"""

from __future__ import annotations

import marshal
import sys
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from ..quantities import format_bytes, format_milli
from ..selectors import (
    EVERYTHING,
    IN,
    NodeSelectorTerm,
    Requirement,
    Selector,
    set_selector,
    valid_label_key,
)
from .common import (
    _ANNOTATION_MAPS,
    _NAME_SETS,
    _OWNERS,
    _TUPLES,
    CPU,
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    EMPTY_MAP,
    LAST_APPLIED_ANNOTATION,
    MEMORY,
    ZERO,
    BodySource,
    OwnerRef,
    Resources,
    Toleration,
    _add,
    _body_source,
    _max,
    _metadata,
    _optional_timestamp,
    _preemption_policy,
    _read_body,
    _Reader,
    _shared,
    _tolerations,
    fingerprint,
    is_extended_resource,
    parse_timestamp,
    resources,
    shared_labels,
)


@dataclass(frozen=True, slots=True)
class HostPort:
    """A host port a container asks for: (hostIP, protocol, port)."""

    ip: str
    protocol: str
    port: int


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
    #: What :attr:`body` is read from (the package docstring).
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
        (no ``spec.nodeName``); b"" otherwise (the package docstring)."""
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
