"""Legacy kube-scheduler ``Policy`` files (kind Policy) as SchedulingPolicy.

``load_legacy`` parses the text (JSON or YAML, with or without ``kind``/``apiVersion``;
``apiVersion`` ``v1`` or v1.19-v1.22's ``kubescheduler.config.k8s.io/v1``);
``convert_legacy`` turns the parsed file into the ``SchedulingPolicy`` that behaves the
same, in three steps:

1. **Read it as Go did.** kube-scheduler decoded the file leniently: keys it did not know
   were ignored, ``null`` left a field at its zero value. Keys are matched
   case-insensitively and folded to their legacy spelling here (upstream's own
   compatibility files write ``"Insecure"``), unknown keys are dropped with a warning,
   ``null`` is dropped, and the zero values our model wants spelled out (``presence:
   false``) are filled in.
2. **Map it.** The legacy scheduler ran predicates in its fixed order
   (``names.LEGACY_PREDICATE_ORDER``) whatever the file said, so every converted
   predicate gets ``order = base + rank * stride + k``: ``rank`` is ``names.legacy_rank``
   (a custom predicate takes the slot of CheckNodeLabelPresence / CheckServiceAffinity by
   its argument kind), ``k`` numbers the entries sharing a slot in file order, and
   ``stride`` is 10 (100 if some slot holds ten or more). The seeds' dialect writes
   ``order`` itself (kube-scheduler ignored it): those values are kept, with a warning,
   and ``base`` puts the entries without one after them (0 when none is written).
   Predicate names keep the file's spelling (PodFitsPorts stays), except the seeds'
   names, which become their successors with a note (PodFitsHost -> HostName,
   ``names.SEED_PREDICATE_ALIASES`` / ``SEED_PRIORITY_ALIASES``). Priorities keep their
   names, weights and arguments. An absent list stays absent (the default set) and an
   empty list stays empty. Duplicates, which upstream collapsed (a set of predicate
   names; a map of priorities by name), are collapsed here with a warning: the *last*
   entry of a name wins, as the last registration won upstream. ``enableHttps`` becomes
   ``enableHTTPS``. Two zero values meant "the default" to the legacy scheduler and are
   left unset (with a note): ``hardPodAffinitySymmetricWeight: 0`` (default 1) and a
   ``requestedToCapacityRatioArguments`` resource weight of 0 (1). Notes also say where
   kube-scheduler with default feature gates behaved otherwise: the gate-off predicates
   (CheckNodeCondition and the pressure ones) it refused from v1.12, the mandatory
   CheckNodeUnschedulable and PodToleratesNodeTaints it always ran, a bare
   CheckNodeLabelPresence / CheckServiceAffinity that filters nothing.
3. **Refuse what it refused**, by validating the result with ``policy.check_spec`` and
   reporting each issue with the legacy file's path (indexes into the file's own lists,
   legacy key spellings): ``Policy: priorities[1].weight: must be a positive integer,
   got 0``. The model is stricter than the legacy scheduler in a few places (a
   ``urlPrefix`` is required, a built-in name cannot carry an argument that is not its
   own, types are checked as Go's decoder checked them).

The result is a ``ConversionResult``: the policy plus the warnings (one line each, in the
same ``Policy: path: message`` form), so that the CLI can print them to stderr.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any, Final

from policy_scheduler import names
from policy_scheduler.documents import DocumentError, InputError, load_documents
from policy_scheduler.policy import (
    Issue,
    Path,
    PolicyError,
    SchedulingPolicy,
    check_spec,
    format_path,
    keeping_url_prefixes,
    legacy_names,
    object_name_problem,
    url_prefix_problem,
)

LEGACY_KIND: Final = "Policy"
LEGACY_API_VERSION: Final = "v1"
#: The group-versioned Policy kube-scheduler v1.19-v1.22 also read (same fields).
GROUP_API_VERSION: Final = "kubescheduler.config.k8s.io/v1"
LEGACY_API_VERSIONS: Final = (LEGACY_API_VERSION, GROUP_API_VERSION)
_SUBJECT: Final = "Policy"


@dataclass(frozen=True)
class ConversionResult:
    """A converted policy and what the conversion noticed but did not refuse."""

    policy: SchedulingPolicy
    warnings: tuple[str, ...] = ()


# -- the legacy shape, for reading keys as Go did -----------------------------------


@dataclass(frozen=True)
class _Struct:
    """A Go struct: its JSON keys (legacy spelling -> shape of the value) and the zero
    values our model needs written out when the file leaves them out."""

    fields: Mapping[str, _Shape]
    zero: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class _ListOf:
    item: _Struct


_Shape = _Struct | _ListOf | None  # None: a scalar or a list of scalars, taken as is

_TLS: Final = _Struct(
    dict.fromkeys(
        ("insecure", "serverName", "certFile", "keyFile", "caFile", "certData", "keyData", "caData")
    )
)
_EXTENDER: Final = _Struct(
    {
        "urlPrefix": None,
        "filterVerb": None,
        "preemptVerb": None,
        "prioritizeVerb": None,
        "weight": None,
        "bindVerb": None,
        "enableHttps": None,
        "tlsConfig": _TLS,
        "httpTimeout": None,
        "nodeCacheCapable": None,
        "managedResources": _ListOf(_Struct({"name": None, "ignoredByScheduler": None})),
        "ignorable": None,
    }
)
_PREDICATE: Final = _Struct(
    {
        "name": None,
        # Not a field of kube-scheduler's Policy (its decoder ignored it): the seeds'
        # dialect, kept as the evaluation order.
        "order": None,
        "argument": _Struct(
            {
                "serviceAffinity": _Struct({"labels": None}, zero={"labels": []}),
                "labelsPresence": _Struct(
                    {"labels": None, "presence": None}, zero={"presence": False}
                ),
            }
        ),
    }
)
_PRIORITY: Final = _Struct(
    {
        "name": None,
        "weight": None,
        "argument": _Struct(
            {
                "serviceAntiAffinity": _Struct({"label": None}),
                "labelPreference": _Struct(
                    {"label": None, "presence": None}, zero={"presence": False}
                ),
                "requestedToCapacityRatioArguments": _Struct(
                    {
                        "shape": _ListOf(_Struct({"utilization": None, "score": None})),
                        "resources": _ListOf(_Struct({"name": None, "weight": None})),
                    }
                ),
            }
        ),
    }
)
_POLICY: Final = _Struct(
    {
        "kind": None,
        "apiVersion": None,
        "predicates": _ListOf(_PREDICATE),
        "priorities": _ListOf(_PRIORITY),
        "extenders": _ListOf(_EXTENDER),
        "hardPodAffinitySymmetricWeight": None,
        "alwaysCheckAllPredicates": None,
    }
)

# Legacy JSON key -> SchedulingPolicy field, where they differ.
_RENAMED: Final = {"enableHttps": "enableHTTPS"}
_RENAMED_BACK: Final = {new: old for old, new in _RENAMED.items()}


def _warn(warnings: list[str], path: Path, message: str) -> None:
    where = format_path(path)
    warnings.append(f"{_SUBJECT}: {where}: {message}" if where else f"{_SUBJECT}: {message}")


def _read_as_go(value: Any, shape: _Shape, path: Path, warnings: list[str]) -> Any:
    """``value`` with keys in their legacy spelling, unknown keys and nulls dropped.

    Values of the wrong type are passed through untouched: the model refuses them with
    a message naming the field, as Go's decoder refused them.
    """
    if isinstance(shape, _ListOf):
        if not isinstance(value, list):
            return value
        return [_read_as_go(item, shape.item, (*path, i), warnings) for i, item in enumerate(value)]
    if shape is None or not isinstance(value, Mapping):
        return value
    spelling = {key.casefold(): key for key in shape.fields}
    out: dict[str, Any] = {}
    given_as: dict[str, str] = {}
    for key, item in value.items():
        canonical = spelling.get(key.casefold()) if isinstance(key, str) else None
        if canonical is None:
            _warn(
                warnings, (*path, str(key)), "unknown field, ignored as kube-scheduler ignored it"
            )
            continue
        if item is None:  # Go leaves the field at its zero value for null
            continue
        if canonical in out:
            _warn(
                warnings,
                (*path, canonical),
                f"given twice (as {given_as[canonical]} and {key}); the later one counts, as in Go",
            )
        given_as[canonical] = str(key)
        out[canonical] = _read_as_go(item, shape.fields[canonical], (*path, canonical), warnings)
    for key, zero in shape.zero.items():
        out.setdefault(key, zero)
    return out


# -- mapping ------------------------------------------------------------------------


def _argument_kind(entry: Any, kinds: Any) -> str | None:
    """The one argument kind an entry sets, or None (no argument, several, or unknown)."""
    argument = entry.get("argument") if isinstance(entry, Mapping) else None
    if not isinstance(argument, Mapping) or len(argument) != 1:
        return None
    (kind,) = argument
    return kind if kind in kinds else None


def _entry_name(entry: Any) -> str | None:
    name = entry.get("name") if isinstance(entry, Mapping) else None
    return name if isinstance(name, str) else None


def _collapse(
    entries: list[Any], section: str, canonical: Callable[[str], str], warnings: list[str]
) -> list[tuple[int, Any]]:
    """Entries with their file index, one per (canonical) name: the last one wins."""
    last: dict[str, int] = {}
    for index, entry in enumerate(entries):
        name = _entry_name(entry)
        if name is not None:
            last[canonical(name)] = index
    kept: list[tuple[int, Any]] = []
    for index, entry in enumerate(entries):
        name = _entry_name(entry)
        winner = last[canonical(name)] if name is not None else index
        if name is not None and winner != index:
            again = _entry_name(entries[winner])
            spelled = f" (as {_show(again)})" if again != name else ""
            _warn(
                warnings,
                (section, index),
                f"{_show(name)} is listed again at {section}[{winner}]{spelled}; kube-scheduler "
                f"kept the later entry of a name, and so does convert",
            )
            continue
        kept.append((index, entry))
    return kept


def _legacy_slot(entry: Any) -> int | None:
    """The predicate's rank in the legacy fixed order, or None if it has none (the model
    then refuses the entry)."""
    name = _entry_name(entry)
    kind = _argument_kind(entry, names.PREDICATE_ARGUMENT_KINDS)
    if kind is not None:
        return names.legacy_rank(name or "", kind)
    if name is not None and names.canonical_predicate(name) in names.LEGACY_PREDICATE_ORDER:
        return names.legacy_rank(name)
    return None


def _given_order(entry: Any) -> bool:
    return isinstance(entry, Mapping) and "order" in entry


def _predicates(kept: list[tuple[int, Any]], warnings: list[str]) -> list[Any]:
    """The entries with ``order`` values: the file's own, then the legacy fixed order."""
    given = [(index, entry) for index, entry in kept if _given_order(entry)]
    if given:
        _warn(
            warnings,
            ("predicates", given[0][0], "order"),
            "order values are kept: kube-scheduler itself ignored them and ran its fixed "
            "order, but the seeds' dialect writes them to choose the order, and so the "
            "converted policy follows them; entries without one run after, in the fixed order",
        )
    slots = [None if _given_order(entry) else _legacy_slot(entry) for _, entry in kept]
    sizes: dict[int, int] = {}
    for slot in slots:
        if slot is not None:
            sizes[slot] = sizes.get(slot, 0) + 1
    # Room for every entry of the fullest slot, in readable steps (10, 100, ...).
    stride = 10 ** max(1, len(str(max(sizes.values(), default=1))))
    # After the file's own values (integers only: the model refuses the others).
    highest = max((e["order"] for _, e in given if type(e["order"]) is int), default=-1)
    base = (highest // stride + 1) * stride if given else 0
    taken: dict[int, int] = {}
    out: list[Any] = []
    for (_, entry), slot in zip(kept, slots, strict=True):
        if not isinstance(entry, Mapping) or slot is None:
            out.append(entry)
            continue
        mapped = dict(entry)
        mapped["order"] = base + slot * stride + taken.get(slot, 0)
        taken[slot] = taken.get(slot, 0) + 1
        out.append(mapped)
    return out


def _renamed(
    entries: list[tuple[int, Any]],
    section: str,
    seed_aliases: Mapping[str, str],
    warnings: list[str],
) -> list[tuple[int, Any]]:
    """Entries with the seeds' names written as their successors (with a note each)."""
    out: list[tuple[int, Any]] = []
    for index, entry in entries:
        name = _entry_name(entry)
        successor = seed_aliases.get(name) if name is not None else None
        if successor is not None and "argument" not in entry:
            _warn(
                warnings,
                (section, index, "name"),
                f"{_show(name)} is the seeds' name of {successor} (kube-scheduler registered "
                f"only {successor}); written as {successor}",
            )
            entry = {**entry, "name": successor}
        out.append((index, entry))
    return out


def _predicate_notes(kept: list[tuple[int, Any]], warnings: list[str]) -> None:
    """What kube-scheduler with default feature gates did differently with these names."""
    listed: set[str] = set()
    for index, entry in kept:
        name = _entry_name(entry)
        if name is None:
            continue
        canonical = names.canonical_predicate(name)
        listed.add(canonical)
        bare = not (isinstance(entry, Mapping) and "argument" in entry)
        if canonical in names.GATE_OFF_PREDICATES and bare:
            _warn(
                warnings,
                ("predicates", index, "name"),
                f"kube-scheduler v1.12+ with default feature gates refused {canonical} "
                "(TaintNodesByCondition took it out of its registry); it runs here as v1.13 "
                "ran it with that gate off",
            )
        elif canonical in names.PREDICATES_WITH_ARGUMENT and bare:
            _warn(
                warnings,
                ("predicates", index, "name"),
                f"{canonical} without an argument filters nothing, as in kube-scheduler "
                "v1.17+ (v1.13-v1.16 refused it bare)",
            )
    missing = [name for name in names.MANDATORY_PREDICATES if name not in listed]
    if missing:
        _warn(
            warnings,
            ("predicates",),
            f"kube-scheduler v1.12+ always ran {' and '.join(missing)}, listed or not; the "
            "converted policy runs what the file lists (add them to keep that behaviour)",
        )


def _priority(entry: Any, index: int, warnings: list[str]) -> Any:
    """The entry, with zero resource weights of a requestedToCapacityRatio argument unset."""
    rtc_key = "requestedToCapacityRatioArguments"
    argument = entry.get("argument") if isinstance(entry, Mapping) else None
    rtc = argument.get(rtc_key) if isinstance(argument, Mapping) else None
    resources = rtc.get("resources") if isinstance(rtc, Mapping) else None
    if not (isinstance(argument, Mapping) and isinstance(rtc, Mapping)):
        return entry
    if not isinstance(resources, list):
        return entry
    fixed: list[Any] = []
    for position, resource in enumerate(resources):
        weight = resource.get("weight") if isinstance(resource, Mapping) else None
        if type(weight) is int and weight == 0:
            # Upstream's buildResourceToWeightMap turned a zero weight into 1.
            path: Path = ("priorities", index, "argument", rtc_key, "resources", position)
            _warn(warnings, (*path, "weight"), "0 meant 1 to kube-scheduler; left unset (1)")
            fixed.append({key: value for key, value in resource.items() if key != "weight"})
        else:
            fixed.append(resource)
    return {**entry, "argument": {**argument, rtc_key: {**rtc, "resources": fixed}}}


def _extender(entry: Any) -> Any:
    if not isinstance(entry, Mapping):
        return entry
    return {_RENAMED.get(key, key): value for key, value in entry.items()}


@dataclass
class _Origins:
    """Where each converted list entry came from in the file (spec index -> file index)."""

    predicates: list[int] = field(default_factory=list)
    priorities: list[int] = field(default_factory=list)

    def legacy_path(self, path: Path) -> str:
        """A spec path as the file spells it: ``spec.priorities[0]`` -> ``priorities[2]``."""
        rest = list(path[1:] if path[:1] == ("spec",) else path)
        if len(rest) >= 2 and isinstance(rest[1], int):
            origins = {"predicates": self.predicates, "priorities": self.priorities}.get(
                str(rest[0])
            )
            if origins is not None and rest[1] < len(origins):
                rest[1] = origins[rest[1]]
        return format_path(
            tuple(_RENAMED_BACK.get(p, p) if isinstance(p, str) else p for p in rest)
        )


def _to_spec(
    legacy: Mapping[str, Any], scheduler_name: str, warnings: list[str]
) -> tuple[dict[str, Any], _Origins]:
    spec: dict[str, Any] = {"schedulerName": scheduler_name}
    origins = _Origins()
    predicates = legacy.get("predicates")
    if isinstance(predicates, list):
        kept = _collapse(predicates, "predicates", names.canonical_predicate, warnings)
        kept = _renamed(kept, "predicates", names.SEED_PREDICATE_ALIASES, warnings)
        _predicate_notes(kept, warnings)
        origins.predicates = [index for index, _ in kept]
        spec["predicates"] = _predicates(kept, warnings)
    elif "predicates" in legacy:
        spec["predicates"] = predicates
    priorities = legacy.get("priorities")
    if isinstance(priorities, list):
        kept = _collapse(priorities, "priorities", names.canonical_priority, warnings)
        kept = _renamed(kept, "priorities", names.SEED_PRIORITY_ALIASES, warnings)
        origins.priorities = [index for index, _ in kept]
        spec["priorities"] = [_priority(entry, index, warnings) for index, entry in kept]
    elif "priorities" in legacy:
        spec["priorities"] = priorities
    if "extenders" in legacy:
        extenders = legacy["extenders"]
        spec["extenders"] = (
            [_extender(e) for e in extenders] if isinstance(extenders, list) else extenders
        )
    if "hardPodAffinitySymmetricWeight" in legacy:
        weight = legacy["hardPodAffinitySymmetricWeight"]
        if type(weight) is int and weight == 0:
            # Upstream only used the file's value when it was not 0 (default 1).
            _warn(
                warnings,
                ("hardPodAffinitySymmetricWeight",),
                "0 meant the default (1) to kube-scheduler; left unset",
            )
        else:
            spec["hardPodAffinitySymmetricWeight"] = weight
    if "alwaysCheckAllPredicates" in legacy:
        spec["alwaysCheckAllPredicates"] = legacy["alwaysCheckAllPredicates"]
    return spec, origins


# -- public -------------------------------------------------------------------------


def _show(value: Any) -> str:
    return (
        json.dumps(value)
        if isinstance(value, (str, int, float, bool)) or value is None
        else repr(value)
    )


def _type_meta_errors(data: Mapping[str, Any]) -> list[str]:
    """kind/apiVersion may be absent; when present they must be the legacy Policy's."""
    errors: list[str] = []
    fold = {key.casefold(): key for key in data if isinstance(key, str)}
    if "kind" in fold and data[fold["kind"]] != LEGACY_KIND:
        kind = data[fold["kind"]]
        hint = (
            " (already a SchedulingPolicy: nothing to convert)"
            if kind == "SchedulingPolicy"
            else ""
        )
        errors.append(
            f"{_SUBJECT}: kind: must be {LEGACY_KIND} (or absent), got {_show(kind)}{hint}"
        )
    if "apiversion" in fold and data[fold["apiversion"]] not in LEGACY_API_VERSIONS:
        version = data[fold["apiversion"]]
        errors.append(
            f"{_SUBJECT}: apiVersion: must be {' or '.join(LEGACY_API_VERSIONS)} (or absent), "
            f"got {_show(version)}"
        )
    return errors


def load_legacy(text: str) -> dict[str, Any]:
    """Parse a legacy Policy file (JSON or YAML); refuses any kind but Policy and any
    apiVersion but ``LEGACY_API_VERSIONS``.

    The text is read by :mod:`documents`, with its limits on depth and YAML aliases.
    """
    try:
        documents = load_documents(text.removeprefix("\ufeff"), _SUBJECT)
    except DocumentError as exc:
        raise PolicyError([f"{_SUBJECT}: not valid JSON or YAML: {exc.detail}"]) from None
    except InputError as exc:
        raise PolicyError([str(exc)]) from None
    if len(documents) > 1:
        raise PolicyError([f"{_SUBJECT}: expected one document, found {len(documents)}"])
    return legacy_document(documents[0] if documents else None)


def legacy_document(data: object) -> dict[str, Any]:
    """A parsed legacy Policy document, checked: an object, of kind Policy if any."""
    if not isinstance(data, dict):
        raise PolicyError([f"{_SUBJECT}: must be a JSON or YAML object, got {type(data).__name__}"])
    errors = _type_meta_errors(data)
    if errors:
        raise PolicyError(errors)
    return data


def convert_legacy(
    data: Mapping[str, Any],
    *,
    name: str = "default",
    scheduler_name: str = names.DEFAULT_SCHEDULER_NAME,
    keep_url_prefixes: bool = False,
) -> ConversionResult:
    """The SchedulingPolicy that behaves as the legacy Policy ``data`` did, and warnings.

    Raises ``PolicyError`` (one ``Policy: path: message`` line per problem) for whatever
    the legacy scheduler refused. ``keep_url_prefixes`` (``convert``): an extender's
    urlPrefix that is no usable URL (upstream's own fixtures say ``/prefix``; the legacy
    scheduler only failed at the first call) is kept as written, with a warning, instead
    of refused; whatever would call it refuses it, naming the field.
    """
    if not isinstance(data, Mapping):
        raise PolicyError([f"{_SUBJECT}: must be an object, got {type(data).__name__}"])
    errors = _type_meta_errors(data)
    problem = object_name_problem(name)
    if problem is not None:
        errors.append(f"{_SUBJECT}: name of the converted policy: {problem}")
    if errors:
        raise PolicyError(errors)
    warnings: list[str] = []
    legacy = _read_as_go(data, _POLICY, (), warnings)
    spec_data, origins = _to_spec(legacy, scheduler_name, warnings)
    with legacy_names(), keeping_url_prefixes() if keep_url_prefixes else nullcontext():
        spec, issues = check_spec(spec_data)
    errors = _duration_errors(legacy)
    if spec is None or errors:
        errors += [f"{_SUBJECT}: {_render(issue, origins)}" for issue in issues]
        raise PolicyError(errors)
    for index, extender in enumerate(spec.extenders if keep_url_prefixes else ()):
        problem = url_prefix_problem(
            extender.urlPrefix, allow_metadata=extender.allowMetadataAddresses
        )
        if problem is not None:
            _warn(
                warnings,
                ("extenders", index, "urlPrefix"),
                f"{problem}; kept as written: `validate` and the operator refuse the policy "
                "until it is the extender's URL",
            )
    return ConversionResult(SchedulingPolicy(name=name, spec=spec), tuple(warnings))


def _duration_errors(legacy: Mapping[str, Any]) -> list[str]:
    """A legacy extender's httpTimeout was a Go time.Duration: integer nanoseconds only.

    (A SchedulingPolicy also takes a duration string such as "30s", as the component
    config's extenders do; a legacy Policy holding one was refused by Go's decoder.)
    """
    errors: list[str] = []
    extenders = legacy.get("extenders")
    for index, extender in enumerate(extenders if isinstance(extenders, list) else ()):
        timeout = extender.get("httpTimeout") if isinstance(extender, Mapping) else None
        if isinstance(timeout, str):
            errors.append(
                f"{_SUBJECT}: extenders[{index}].httpTimeout: must be integer nanoseconds in a "
                f"legacy Policy (Go's time.Duration), got {_show(timeout)}"
            )
    return errors


def _render(issue: Issue, origins: _Origins) -> str:
    return issue.render(origins.legacy_path)
