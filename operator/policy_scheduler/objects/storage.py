"""Storage kinds: PersistentVolume, PersistentVolumeClaim, StorageClass, CSINode,
CSIDriver and CSIStorageCapacity, with their parsers.

A PersistentVolume's source is read with the pods' :func:`parse_volume_source`, so a
volume is the same to the volume predicates whether a pod names it or a PV holds it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..quantities import QuantityError, int_value
from ..selectors import NodeSelectorTerm, Selector
from .common import (
    BETA_STORAGE_CLASS_ANNOTATION,
    MIGRATED_PLUGINS_ANNOTATION,
    _metadata,
    _Reader,
)
from .pods import Volume, parse_volume_source


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
