"""Label and field selectors, compiled once and matched many times.

Two selector dialects reach the scheduler:

* ``metav1.LabelSelector`` (``matchLabels`` + ``matchExpressions`` with In, NotIn,
  Exists, DoesNotExist) in pod affinity terms, topology spread constraints, ReplicaSets
  and StatefulSets; a missing selector selects nothing, an empty one selects everything;
* ``v1.NodeSelectorTerm`` (``matchExpressions`` adding Gt and Lt, and ``matchFields`` on
  ``metadata.name``) in node affinity and PV node affinity.

Both compile to a tuple of :class:`Requirement`. A term that kube-scheduler could not
turn into a selector (an unknown operator, In with no values, Gt with a non-integer) is
compiled to :data:`NEVER`, because upstream treats the conversion error as "this term
does not match" rather than as a failure of the whole pod.
"""

from __future__ import annotations

import re
import reprlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

IN: Final = "In"
NOT_IN: Final = "NotIn"
EXISTS: Final = "Exists"
DOES_NOT_EXIST: Final = "DoesNotExist"
GT: Final = "Gt"
LT: Final = "Lt"

_INT64: Final = re.compile(r"^[+-]?[0-9]+$")
_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1


_REPR = reprlib.Repr()
_REPR.maxlevel = 3
_REPR.maxstring = _REPR.maxother = _REPR.maxlong = 60


def short_repr(value: object) -> str:
    """``repr(value)`` for an error message: one line, at most 60 characters.

    Bounded in length, depth and items (``reprlib``), so quoting an absurd value (100 000
    digits, hundreds of levels deep) costs nothing.
    """
    try:
        text = _REPR.repr(value)
    except ValueError:  # an int beyond repr()'s 4300 digits (only from Python callers)
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 60 else text[:57] + "..."


def plain(value: object) -> str:
    """A name for an error message: as it is when short and printable, else quoted."""
    if isinstance(value, str) and len(value) <= 60 and value.isprintable():
        return value
    return short_repr(value)


def parse_int64(text: str) -> int | None:
    """Go's strconv.ParseInt(text, 10, 64), or None when it would fail."""
    if not _INT64.match(text):
        return None
    value = int(text)
    return value if _INT64_MIN <= value <= _INT64_MAX else None


@dataclass(frozen=True, slots=True)
class Requirement:
    """One ``key operator values`` term of a label or node selector."""

    key: str
    operator: str
    values: frozenset[str] = frozenset()
    bound: int = 0  # the integer of Gt / Lt

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op == IN:
            value = labels.get(self.key)
            return value is not None and value in self.values
        if op == NOT_IN:
            value = labels.get(self.key)
            return value is None or value not in self.values
        if op == EXISTS:
            return self.key in labels
        if op == DOES_NOT_EXIST:
            return self.key not in labels
        value = labels.get(self.key)
        if value is None:
            return False
        number = parse_int64(value)
        if number is None:
            return False
        return number > self.bound if op == GT else number < self.bound


@dataclass(frozen=True, slots=True)
class Selector:
    """A conjunction of requirements; ``nothing`` marks a selector that selects no object."""

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.nothing:
            return False
        for requirement in self.requirements:
            if not requirement.matches(labels):
                return False
        return True

    @property
    def empty(self) -> bool:
        """Selects everything (an empty ``{}`` selector)."""
        return not self.nothing and not self.requirements


EVERYTHING: Final = Selector()
NEVER: Final = Selector(nothing=True)


class SelectorError(ValueError):
    """A selector kube's API validation would refuse; ``field`` is relative to it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


_NAME: Final = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS_SUBDOMAIN: Final = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)


def valid_label_key(key: str) -> bool:
    """A qualified name: optional DNS-subdomain prefix and "/", then a name of <= 63 chars."""
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        return False
    return 0 < len(name) <= 63 and _NAME.match(name) is not None


def valid_label_value(value: str) -> bool:
    return value == "" or (len(value) <= 63 and _NAME.match(value) is not None)


def requirement(key: str, operator: str, values: list[str], *, numeric: bool) -> Requirement | None:
    """One requirement, or None when upstream's conversion would have failed.

    Like labels.NewRequirement: the key must be a qualified name and every value a valid
    label value; In/NotIn need values, Exists/DoesNotExist none, Gt/Lt one integer.
    """
    if not valid_label_key(key) or not all(valid_label_value(v) for v in values):
        return None
    if operator in (IN, NOT_IN):
        if not values:
            return None
        return Requirement(key, operator, frozenset(values))
    if operator in (EXISTS, DOES_NOT_EXIST):
        if values:
            return None
        return Requirement(key, operator)
    if numeric and operator in (GT, LT):
        if len(values) != 1:
            return None
        bound = parse_int64(values[0])
        if bound is None:
            return None
        return Requirement(key, operator, bound=bound)
    return None


def label_selector(raw: object, field: str) -> Selector:
    """Compile a metav1.LabelSelector dict. ``None`` selects nothing, ``{}`` everything."""
    if raw is None:
        return NEVER
    if not isinstance(raw, Mapping):
        raise SelectorError(field, f"must be an object, got {short_repr(raw)}")
    reqs: list[Requirement] = []
    match_labels = raw.get("matchLabels") or {}
    if not isinstance(match_labels, Mapping):
        raise SelectorError(
            f"{field}.matchLabels", f"must be an object, got {short_repr(match_labels)}"
        )
    for key, value in match_labels.items():
        reqs.append(Requirement(str(key), IN, frozenset({str(value)})))
    expressions = raw.get("matchExpressions") or []
    if not isinstance(expressions, list):
        raise SelectorError(
            f"{field}.matchExpressions", f"must be a list, got {short_repr(expressions)}"
        )
    for i, expr in enumerate(expressions):
        where = f"{field}.matchExpressions[{i}]"
        key, operator, values = _expression(expr, where)
        req = requirement(key, operator, values, numeric=False)
        if req is None:
            raise SelectorError(
                where,
                f"invalid requirement: {plain(key)} {plain(operator)} {short_repr(values)}",
            )
        reqs.append(req)
    return Selector(tuple(reqs))


def set_selector(labels: Mapping[str, str] | None) -> Selector:
    """A selector from a plain map (a Service's or RC's selector, a nodeSelector)."""
    if not labels:
        return EVERYTHING
    return Selector(tuple(Requirement(k, IN, frozenset({v})) for k, v in labels.items()))


def _expression(expr: object, where: str) -> tuple[str, str, list[str]]:
    if not isinstance(expr, Mapping):
        raise SelectorError(where, f"must be an object, got {short_repr(expr)}")
    key = expr.get("key")
    if not isinstance(key, str) or not key:
        raise SelectorError(f"{where}.key", "is required")
    operator = expr.get("operator")
    if not isinstance(operator, str):
        raise SelectorError(f"{where}.operator", "is required")
    values = expr.get("values") or []
    if not isinstance(values, list):
        raise SelectorError(f"{where}.values", f"must be a list, got {short_repr(values)}")
    return key, operator, [str(v) for v in values]


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """One term of a NodeSelector: label requirements AND ``metadata.name`` requirements."""

    labels: Selector
    fields: Selector
    #: An empty term (no expressions, no fields) selects no node.
    empty: bool = False

    def matches(self, node_labels: Mapping[str, str], node_name: str) -> bool:
        if self.empty:
            return False
        if not self.labels.matches(node_labels):
            return False
        if self.fields.empty:
            return True
        if self.fields.nothing:
            return False
        fields = {"metadata.name": node_name}
        for req in self.fields.requirements:
            value = fields.get(req.key, "")
            if (value in req.values) != (req.operator == IN):
                return False
        return True


def node_selector_term(raw: object, field: str) -> NodeSelectorTerm:
    if raw is None:
        return NodeSelectorTerm(EVERYTHING, EVERYTHING, empty=True)
    if not isinstance(raw, Mapping):
        raise SelectorError(field, f"must be an object, got {short_repr(raw)}")
    label_exprs = raw.get("matchExpressions") or []
    field_exprs = raw.get("matchFields") or []
    if not isinstance(label_exprs, list):
        raise SelectorError(f"{field}.matchExpressions", "must be a list")
    if not isinstance(field_exprs, list):
        raise SelectorError(f"{field}.matchFields", "must be a list")
    if not label_exprs and not field_exprs:
        return NodeSelectorTerm(EVERYTHING, EVERYTHING, empty=True)
    labels = EVERYTHING
    if label_exprs:
        reqs: list[Requirement] = []
        for i, expr in enumerate(label_exprs):
            key, operator, values = _expression(expr, f"{field}.matchExpressions[{i}]")
            req = requirement(key, operator, values, numeric=True)
            if req is None:
                labels = NEVER
                break
            reqs.append(req)
        else:
            labels = Selector(tuple(reqs))
    fields = EVERYTHING
    if field_exprs:
        freqs: list[Requirement] = []
        for i, expr in enumerate(field_exprs):
            key, operator, values = _expression(expr, f"{field}.matchFields[{i}]")
            # Upstream: In/NotIn with exactly one value. A node has only the field
            # metadata.name; any other key compares against the empty string.
            if operator not in (IN, NOT_IN) or len(values) != 1:
                fields = NEVER
                break
            freqs.append(Requirement(key, operator, frozenset(values)))
        else:
            fields = Selector(tuple(freqs))
    return NodeSelectorTerm(labels, fields)


def node_selector_terms(raw: object, field: str) -> tuple[NodeSelectorTerm, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise SelectorError(field, f"must be a list, got {short_repr(raw)}")
    return tuple(node_selector_term(t, f"{field}[{i}]") for i, t in enumerate(raw))


def terms_match(
    terms: tuple[NodeSelectorTerm, ...], node_labels: Mapping[str, str], node_name: str
) -> bool:
    """NodeSelectorTerms are ORed; an empty list matches no node."""
    for term in terms:
        if term.matches(node_labels, node_name):
            return True
    return False
