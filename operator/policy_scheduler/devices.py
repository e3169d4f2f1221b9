"""Dynamic Resource Allocation's objects (``resource.k8s.io/v1``), parsed at the edge.

DeviceClass, ResourceSlice, ResourceClaim and ResourceClaimTemplate as the structured
allocator reads them (kube-scheduler v1.34, DRA with structured parameters, GA):

* a **ResourceSlice** publishes devices of one *pool* of one *driver*: the pool's name,
  its ``generation`` and how many slices it has (``resourceSliceCount``), and which nodes
  reach its devices: ``nodeName``, ``nodeSelector`` or ``allNodes``. A device has a name,
  typed *attributes* (int, bool, string, version) and *capacity* (quantities), keyed by
  qualified names (``domain/id``; an unqualified id belongs to the driver's domain);
* a **DeviceClass** names CEL selectors every device of the class must pass;
* a **ResourceClaim** asks for devices: *requests* (``exactly`` one class, its selectors,
  ``allocationMode`` ExactCount with ``count`` or All, ``adminAccess``; or a
  ``firstAvailable`` list of alternatives tried in order), and *constraints*
  (``matchAttribute``: the devices of the listed requests share that attribute's value).
  Its ``status.allocation`` holds the devices given (driver/pool/device per request) and
  the nodes that reach them; ``status.reservedFor`` the pods using it;
* a **ResourceClaimTemplate** is the spec of the claims a controller makes for each pod
  that names the template.

Each parser returns a frozen value or raises :class:`~.objects.ObjectError` naming the
object and the field, as every parser of :mod:`~.objects` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Final

from .objects import ObjectError, _controller_uid, _metadata, _Reader
from .quantities import parse_quantity
from .selectors import NodeSelectorTerm, SelectorError, node_selector_terms

GROUP: Final = "resource.k8s.io"
EXACT_COUNT: Final = "ExactCount"
ALL: Final = "All"
#: At most this many devices in one claim's allocation (``AllocationResultsMaxSize``).
ALLOCATION_RESULTS_MAX_SIZE: Final = 32
#: At most this many pods reserve one claim (``ResourceClaimReservedForMaxSize``).
RESERVED_FOR_MAX_SIZE: Final = 256


@dataclass(frozen=True, slots=True)
class DeviceAttribute:
    """One typed attribute value: ``kind`` is int, bool, string or version."""

    kind: str
    value: int | bool | str


@dataclass(frozen=True, slots=True, eq=False)
class Device:
    """A device as a slice publishes it (compared and hashed by identity: the CEL
    values of a device are cached per object)."""

    name: str
    #: Qualified name (``domain/id``, or ``id`` for the driver's own domain) -> value.
    attributes: Mapping[str, DeviceAttribute]
    #: Qualified name -> quantity.
    capacity: Mapping[str, Fraction]


@dataclass(frozen=True, slots=True)
class ResourceSlice:
    """Devices of one pool of one driver, and the nodes that reach them."""

    name: str
    driver: str
    pool: str
    generation: int
    slice_count: int
    node_name: str
    all_nodes: bool
    #: The nodes a ``nodeSelector`` lets in; None when the slice has none.
    node_selector: tuple[NodeSelectorTerm, ...] | None
    devices: tuple[Device, ...]
    #: ``spec.nodeSelector`` as written (an allocation from this slice carries it).
    node_selector_raw: Mapping[str, Any] | None = field(default=None, compare=False)

    def reaches(self, node_name: str, node_labels: Mapping[str, str]) -> bool:
        """Whether a pod on this node can use the slice's devices."""
        if self.node_name:
            return self.node_name == node_name
        if self.all_nodes:
            return True
        if self.node_selector is not None:
            return any(t.matches(node_labels, node_name) for t in self.node_selector)
        return False


@dataclass(frozen=True, slots=True)
class DeviceClass:
    """A class of devices: the CEL selectors every device of it passes."""

    name: str
    #: CEL expressions every device of the class must pass.
    selectors: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class DeviceSubRequest:
    """What one request (``exactly``) or one of its alternatives (``firstAvailable``)
    asks for."""

    name: str
    device_class: str
    selectors: tuple[str, ...]
    allocation_mode: str = EXACT_COUNT
    count: int = 1
    admin_access: bool = False


@dataclass(frozen=True, slots=True)
class DeviceRequest:
    """One request of a claim: ``exactly`` one kind of device, or alternatives."""

    name: str
    #: ``exactly``; None when the request lists ``firstAvailable`` alternatives.
    exactly: DeviceSubRequest | None
    first_available: tuple[DeviceSubRequest, ...] = ()


@dataclass(frozen=True, slots=True)
class DeviceConstraint:
    """``matchAttribute``: the devices of the requests share the attribute's value."""

    #: The requests it applies to (empty: all of the claim's).
    requests: frozenset[str]
    #: The fully qualified attribute name the devices must share.
    match_attribute: str


@dataclass(frozen=True, slots=True)
class ClaimSpec:
    """What a claim (or a template's claims) asks for."""

    requests: tuple[DeviceRequest, ...]
    constraints: tuple[DeviceConstraint, ...]


@dataclass(frozen=True, slots=True)
class DeviceResult:
    """One device given to one request (``request`` or ``request/subrequest``)."""

    request: str
    driver: str
    pool: str
    device: str
    admin_access: bool = False

    @property
    def device_id(self) -> tuple[str, str, str]:
        return (self.driver, self.pool, self.device)


@dataclass(frozen=True, slots=True)
class Allocation:
    """A claim's ``status.allocation``: the devices given, and where they are reached."""

    results: tuple[DeviceResult, ...]
    #: The nodes that reach the devices; None: every node.
    node_selector: tuple[NodeSelectorTerm, ...] | None
    #: ``nodeSelector`` as the API writes it (what PreBind writes back); None: none.
    node_selector_raw: Mapping[str, Any] | None = field(default=None, compare=False)

    def to_api(self) -> dict[str, Any]:
        """``status.allocation`` as the API has it."""
        results = []
        for r in self.results:
            entry: dict[str, Any] = {
                "request": r.request,
                "driver": r.driver,
                "pool": r.pool,
                "device": r.device,
            }
            if r.admin_access:
                entry["adminAccess"] = True
            results.append(entry)
        allocation: dict[str, Any] = {"devices": {"results": results}}
        if self.node_selector_raw is not None:
            allocation["nodeSelector"] = dict(self.node_selector_raw)
        return allocation


@dataclass(frozen=True, slots=True)
class ResourceClaim:
    """A claim for devices, as the allocator and the DynamicResources plugin read it."""

    namespace: str
    name: str
    uid: str
    spec: ClaimSpec
    allocation: Allocation | None
    #: UIDs of the pods the claim is reserved for.
    reserved_for: tuple[str, ...]
    deleting: bool = False
    #: The uid of its controller (``ownerReferences``, ``controller: true``): the pod a
    #: claim made from a template belongs to.
    controller_uid: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class ResourceClaimTemplate:
    """The spec of the claims a controller makes for each pod that names it."""

    namespace: str
    name: str
    spec: ClaimSpec


# -- parsers ---------------------------------------------------------------------------------


def _selectors(r: _Reader, raw: object, path: str) -> tuple[str, ...]:
    found = []
    for i, item in enumerate(r.items(raw, path)):
        selector = r.mapping(item, f"{path}[{i}]")
        cel = r.mapping(selector.get("cel"), f"{path}[{i}].cel")
        expression = r.string(cel.get("expression"), f"{path}[{i}].cel.expression")
        if not expression:
            raise r.fail(f"{path}[{i}].cel.expression", "is required")
        found.append(expression)
    return tuple(found)


def _node_selector(r: _Reader, raw: object, path: str) -> tuple[NodeSelectorTerm, ...] | None:
    if raw is None:
        return None
    selector = r.mapping(raw, path)
    try:
        return node_selector_terms(selector.get("nodeSelectorTerms"), f"{path}.nodeSelectorTerms")
    except SelectorError as exc:
        raise r.fail(exc.field, exc.message) from exc


def _attribute(r: _Reader, raw: object, path: str) -> DeviceAttribute:
    value = r.mapping(raw, path)
    kinds = [k for k in ("int", "bool", "string", "version") if value.get(k) is not None]
    if len(kinds) != 1:
        raise r.fail(path, "must set exactly one of int, bool, string, version")
    kind = kinds[0]
    if kind == "int":
        return DeviceAttribute(kind, r.integer(value["int"], f"{path}.int"))
    if kind == "bool":
        return DeviceAttribute(kind, r.boolean(value["bool"], f"{path}.bool"))
    return DeviceAttribute(kind, r.string(value[kind], f"{path}.{kind}"))


def _device(r: _Reader, raw: object, path: str) -> Device:
    d = r.mapping(raw, path)
    name = r.string(d.get("name"), f"{path}.name")
    if not name:
        raise r.fail(f"{path}.name", "is required")
    attributes = {
        str(key): _attribute(r, value, f"{path}.attributes[{key}]")
        for key, value in r.mapping(d.get("attributes"), f"{path}.attributes").items()
    }
    capacity: dict[str, Fraction] = {}
    for key, value in r.mapping(d.get("capacity"), f"{path}.capacity").items():
        entry = r.mapping(value, f"{path}.capacity[{key}]")
        try:
            capacity[str(key)] = parse_quantity(entry.get("value"))
        except ValueError as exc:
            raise r.fail(f"{path}.capacity[{key}].value", str(exc)) from exc
    return Device(name, attributes, capacity)


def parse_resource_slice(raw: Mapping[str, Any]) -> ResourceSlice:
    _, name, _ = _metadata(raw, "ResourceSlice", namespaced=False)
    r = _Reader("ResourceSlice", name)
    spec = r.mapping(raw.get("spec"), "spec")
    driver = r.string(spec.get("driver"), "spec.driver")
    if not driver:
        raise r.fail("spec.driver", "is required")
    pool = r.mapping(spec.get("pool"), "spec.pool")
    pool_name = r.string(pool.get("name"), "spec.pool.name")
    if not pool_name:
        raise r.fail("spec.pool.name", "is required")
    node_name = r.string(spec.get("nodeName"), "spec.nodeName")
    all_nodes = bool(spec.get("allNodes")) and r.boolean(spec.get("allNodes"), "spec.allNodes")
    node_selector = _node_selector(r, spec.get("nodeSelector"), "spec.nodeSelector")
    chosen = sum((bool(node_name), all_nodes, node_selector is not None))
    if chosen != 1 and not spec.get("perDeviceNodeSelection"):
        raise r.fail("spec", "must set exactly one of nodeName, nodeSelector, allNodes")
    devices = tuple(
        _device(r, d, f"spec.devices[{i}]")
        for i, d in enumerate(r.items(spec.get("devices"), "spec.devices"))
    )
    return ResourceSlice(
        name=name,
        driver=driver,
        pool=pool_name,
        generation=r.integer(pool.get("generation"), "spec.pool.generation"),
        slice_count=r.integer(pool.get("resourceSliceCount"), "spec.pool.resourceSliceCount", 1),
        node_name=node_name,
        all_nodes=all_nodes,
        node_selector=node_selector,
        devices=devices,
        node_selector_raw=dict(spec["nodeSelector"]) if node_selector is not None else None,
    )


def parse_device_class(raw: Mapping[str, Any]) -> DeviceClass:
    _, name, _ = _metadata(raw, "DeviceClass", namespaced=False)
    r = _Reader("DeviceClass", name)
    spec = r.mapping(raw.get("spec"), "spec")
    return DeviceClass(name, _selectors(r, spec.get("selectors"), "spec.selectors"))


def _sub_request(r: _Reader, raw: object, path: str, name: str) -> DeviceSubRequest:
    s = r.mapping(raw, path)
    device_class = r.string(s.get("deviceClassName"), f"{path}.deviceClassName")
    if not device_class:
        raise r.fail(f"{path}.deviceClassName", "is required")
    mode = r.one_of(
        s.get("allocationMode"), f"{path}.allocationMode", (EXACT_COUNT, ALL), EXACT_COUNT
    )
    count = r.integer(s.get("count"), f"{path}.count", 1)
    if mode == EXACT_COUNT and count < 1:
        raise r.fail(f"{path}.count", f"must be greater than zero, got {count}")
    return DeviceSubRequest(
        name=name,
        device_class=device_class,
        selectors=_selectors(r, s.get("selectors"), f"{path}.selectors"),
        allocation_mode=mode,
        count=count if mode == EXACT_COUNT else 0,
        admin_access=bool(s.get("adminAccess"))
        and r.boolean(s.get("adminAccess"), f"{path}.adminAccess"),
    )


def _claim_spec(r: _Reader, raw: object, path: str) -> ClaimSpec:
    spec = r.mapping(raw, path)
    devices = r.mapping(spec.get("devices"), f"{path}.devices")
    requests: list[DeviceRequest] = []
    names: set[str] = set()
    for i, item in enumerate(r.items(devices.get("requests"), f"{path}.devices.requests")):
        where = f"{path}.devices.requests[{i}]"
        req = r.mapping(item, where)
        name = r.string(req.get("name"), f"{where}.name")
        if not name:
            raise r.fail(f"{where}.name", "is required")
        if name in names:
            raise r.fail(f"{where}.name", f"duplicate request name {name!r}")
        names.add(name)
        if req.get("exactly") is not None and req.get("firstAvailable"):
            raise r.fail(where, "must set exactly one of exactly, firstAvailable")
        if req.get("exactly") is not None:
            exactly = _sub_request(r, req["exactly"], f"{where}.exactly", name)
            requests.append(DeviceRequest(name, exactly))
            continue
        alternatives = []
        for j, sub in enumerate(r.items(req.get("firstAvailable"), f"{where}.firstAvailable")):
            sub_where = f"{where}.firstAvailable[{j}]"
            sub_name = r.string(r.mapping(sub, sub_where).get("name"), f"{sub_where}.name")
            if not sub_name:
                raise r.fail(f"{sub_where}.name", "is required")
            alternatives.append(_sub_request(r, sub, sub_where, sub_name))
        if not alternatives:
            raise r.fail(where, "must set exactly one of exactly, firstAvailable")
        requests.append(DeviceRequest(name, None, tuple(alternatives)))
    constraints: list[DeviceConstraint] = []
    for i, item in enumerate(r.items(devices.get("constraints"), f"{path}.devices.constraints")):
        where = f"{path}.devices.constraints[{i}]"
        c = r.mapping(item, where)
        attribute = r.string(c.get("matchAttribute"), f"{where}.matchAttribute")
        if not attribute or "/" not in attribute:
            raise r.fail(
                f"{where}.matchAttribute",
                f"must be a fully qualified attribute name (domain/id), got {attribute!r}",
            )
        wanted = frozenset(
            r.string(n, f"{where}.requests[{j}]")
            for j, n in enumerate(r.items(c.get("requests"), f"{where}.requests"))
        )
        constraints.append(DeviceConstraint(wanted, attribute))
    return ClaimSpec(tuple(requests), tuple(constraints))


def _allocation(r: _Reader, raw: object) -> Allocation | None:
    if raw is None:
        return None
    alloc = r.mapping(raw, "status.allocation")
    devices = r.mapping(alloc.get("devices"), "status.allocation.devices")
    results = []
    for i, item in enumerate(r.items(devices.get("results"), "status.allocation.devices.results")):
        where = f"status.allocation.devices.results[{i}]"
        d = r.mapping(item, where)
        results.append(
            DeviceResult(
                request=r.string(d.get("request"), f"{where}.request"),
                driver=r.string(d.get("driver"), f"{where}.driver"),
                pool=r.string(d.get("pool"), f"{where}.pool"),
                device=r.string(d.get("device"), f"{where}.device"),
                admin_access=bool(d.get("adminAccess"))
                and r.boolean(d.get("adminAccess"), f"{where}.adminAccess"),
            )
        )
    raw_selector = alloc.get("nodeSelector")
    return Allocation(
        tuple(results),
        _node_selector(r, raw_selector, "status.allocation.nodeSelector"),
        dict(raw_selector) if isinstance(raw_selector, Mapping) else None,
    )


def parse_resource_claim(raw: Mapping[str, Any]) -> ResourceClaim:
    meta, name, namespace = _metadata(raw, "ResourceClaim", namespaced=True)
    r = _Reader("ResourceClaim", name)
    status = r.mapping(raw.get("status"), "status")
    reserved = tuple(
        r.string(
            r.mapping(ref, f"status.reservedFor[{i}]").get("uid"), f"status.reservedFor[{i}].uid"
        )
        for i, ref in enumerate(r.items(status.get("reservedFor"), "status.reservedFor"))
    )
    return ResourceClaim(
        namespace=namespace,
        name=name,
        uid=r.string(meta.get("uid"), "metadata.uid") or f"{namespace}/{name}",
        spec=_claim_spec(r, raw.get("spec"), "spec"),
        allocation=_allocation(r, status.get("allocation")),
        reserved_for=reserved,
        deleting=bool(meta.get("deletionTimestamp")),
        controller_uid=_controller_uid(r, meta.get("ownerReferences")),
    )


def parse_resource_claim_template(raw: Mapping[str, Any]) -> ResourceClaimTemplate:
    _, name, namespace = _metadata(raw, "ResourceClaimTemplate", namespaced=True)
    r = _Reader("ResourceClaimTemplate", name)
    spec = r.mapping(raw.get("spec"), "spec")
    return ResourceClaimTemplate(namespace, name, _claim_spec(r, spec.get("spec"), "spec.spec"))


__all__ = [
    "ALL",
    "ALLOCATION_RESULTS_MAX_SIZE",
    "EXACT_COUNT",
    "Allocation",
    "ClaimSpec",
    "Device",
    "DeviceAttribute",
    "DeviceClass",
    "DeviceConstraint",
    "DeviceRequest",
    "DeviceResult",
    "DeviceSubRequest",
    "ObjectError",
    "ResourceClaim",
    "ResourceClaimTemplate",
    "ResourceSlice",
    "parse_device_class",
    "parse_resource_claim",
    "parse_resource_claim_template",
    "parse_resource_slice",
]
