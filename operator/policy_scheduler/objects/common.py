"""What every kind's model shares: resource amounts, metadata, the readers, the shared tables.

The constants of the API (resource names, topology labels, annotations, int32/int64
bounds), :class:`ObjectError`, :class:`Resources` and its arithmetic, the small bounded
tables through which identical label maps, resources, tolerations, owners and images
are shared between objects (``_shared``), the compact JSON bodies kept for extenders
(:func:`bodies_deferred`), the 16-byte :func:`fingerprint`, the taints and tolerations
both pods and nodes carry, and ``_Reader``: the typed field reader every parser uses,
which raises an ObjectError naming the object and the field. See the package's
docstring for how objects are parsed, shared and bounded.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sys
from collections.abc import Hashable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any, Final, NoReturn, Protocol, TypeVar

from ..quantities import QuantityError, int_value, milli_value
from ..selectors import (
    NodeSelectorTerm,
    Selector,
    SelectorError,
    label_selector,
    node_selector_term,
    node_selector_terms,
    plain,
    short_repr,
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
    """The object as compact JSON, without ``metadata.managedFields`` (the package docstring)."""
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

    Only for callers that hold the dicts in memory anyway (the package docstring); the dicts
    must not be changed afterwards.
    """
    token = _DEFER_BODIES.set(True)
    try:
        yield
    finally:
        _DEFER_BODIES.reset(token)


def _body_source(raw: Mapping[str, Any]) -> BodySource:
    return raw if _DEFER_BODIES.get() else body_of(raw)


class _Bodied(Protocol):
    """A Pod or a Node: what keeps a body for extenders (typed so, not imported: no cycle)."""

    @property
    def body_source(self) -> BodySource: ...


def _read_body(obj: _Bodied) -> bytes:
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
class OwnerRef:
    """One of a pod's ``metadata.ownerReferences`` (its controller has ``controller``)."""

    kind: str
    name: str
    uid: str
    api_version: str = ""
    controller: bool = False


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


def _time_text(value: object) -> str:
    """A timestamp field as the API writes it (a YAML file's unquoted one, a date to
    YAML, back in RFC 3339); "" when absent."""
    if isinstance(value, date):
        return api_time(value)
    return value if isinstance(value, str) else ""
