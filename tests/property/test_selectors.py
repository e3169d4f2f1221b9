"""Selectors: any input compiles or raises SelectorError; compiled ones match as defined.

The matching property is checked against a plain reading of the definitions: a
LabelSelector's matchLabels require equal values, In / NotIn / Exists / DoesNotExist
their usual sets; a NodeSelectorTerm ANDs its expressions and its ``metadata.name``
fields, and a list of terms ORs them.
"""

from __future__ import annotations

import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from policy_scheduler.selectors import (
    SelectorError,
    label_selector,
    node_selector_term,
    node_selector_terms,
    set_selector,
    terms_match,
)
from property.strategies import examples, json_values, mutated_or_arbitrary, succeeds_or_raises

KEYS = ["app", "tier", "zone", "example.com/role"]
VALUES = ["a", "b", "c", "1", "5", "10"]
OPERATORS = ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Bogus"]

label_maps = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=4)
expressions = st.fixed_dictionaries(
    {"key": st.sampled_from(KEYS), "operator": st.sampled_from(OPERATORS)},
    optional={"values": st.lists(st.sampled_from(VALUES), max_size=3)},
)
selectors = st.fixed_dictionaries(
    {},
    optional={
        "matchLabels": label_maps,
        "matchExpressions": st.lists(expressions, max_size=3),
    },
)
node_terms = st.fixed_dictionaries(
    {},
    optional={
        "matchExpressions": st.lists(expressions, max_size=3),
        "matchFields": st.lists(
            st.fixed_dictionaries(
                {
                    "key": st.sampled_from(["metadata.name", "spec.x"]),
                    "operator": st.sampled_from(["In", "NotIn", "Exists"]),
                    "values": st.lists(st.sampled_from(["n1", "n2"]), max_size=2),
                }
            ),
            max_size=2,
        ),
    },
)


def as_int(text: str | None) -> int | None:
    """Go's strconv.ParseInt for the small values drawn here."""
    return int(text) if text is not None and re.fullmatch(r"[+-]?[0-9]+", text) else None


def expression_holds(expr: dict[str, Any], labels: dict[str, str], *, numeric: bool) -> bool:
    key, op, values = expr["key"], expr["operator"], expr.get("values", [])
    if op == "In":
        return labels.get(key) in values
    if op == "NotIn":
        return labels.get(key) not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    assert numeric and op in ("Gt", "Lt")
    have = as_int(labels.get(key))
    if have is None:
        return False
    bound = as_int(values[0])
    assert bound is not None
    return have > bound if op == "Gt" else have < bound


def well_formed(expr: dict[str, Any], *, numeric: bool) -> bool:
    op, values = expr["operator"], expr.get("values", [])
    if op in ("In", "NotIn"):
        return bool(values)
    if op in ("Exists", "DoesNotExist"):
        return not values
    # Gt / Lt take one integer; anything else fails upstream's conversion.
    return numeric and op in ("Gt", "Lt") and len(values) == 1 and as_int(values[0]) is not None


@settings(max_examples=examples(300))
@given(raw=selectors, labels=label_maps)
def test_label_selectors_match_by_definition(raw: dict[str, Any], labels: dict[str, str]) -> None:
    exprs = raw.get("matchExpressions", [])
    if not all(well_formed(e, numeric=False) for e in exprs):
        try:
            label_selector(raw, "sel")
        except SelectorError as exc:
            assert exc.field.startswith("sel.matchExpressions[")
            return
        raise AssertionError(f"an invalid expression was accepted: {raw}")
    selector = label_selector(raw, "sel")
    expected = all(labels.get(k) == v for k, v in raw.get("matchLabels", {}).items()) and all(
        expression_holds(e, labels, numeric=False) for e in exprs
    )
    assert selector.matches(labels) == expected


@settings(max_examples=examples(300))
@given(
    terms=st.lists(node_terms, max_size=3), labels=label_maps, name=st.sampled_from(["n1", "n2"])
)
def test_node_selector_terms_or_their_anded_requirements(
    terms: list[dict[str, Any]], labels: dict[str, str], name: str
) -> None:
    compiled = node_selector_terms(terms, "terms")

    def term_holds(term: dict[str, Any]) -> bool:
        exprs = term.get("matchExpressions", [])
        fields = term.get("matchFields", [])
        if not exprs and not fields:
            return False  # an empty term selects no node
        if not all(well_formed(e, numeric=True) for e in exprs):
            return False  # upstream: a term that fails to convert matches nothing
        if any(f["operator"] not in ("In", "NotIn") or len(f["values"]) != 1 for f in fields):
            return False
        node_fields = {"metadata.name": name}
        return all(expression_holds(e, labels, numeric=True) for e in exprs) and all(
            (node_fields.get(f["key"], "") in f["values"]) == (f["operator"] == "In")
            for f in fields
        )

    assert terms_match(compiled, labels, name) == any(term_holds(t) for t in terms)


@settings(max_examples=examples(200))
@given(labels=label_maps, other=label_maps)
def test_a_plain_map_selects_supersets(labels: dict[str, str], other: dict[str, str]) -> None:
    assert set_selector(labels).matches(other) == (labels.items() <= other.items())


@settings(max_examples=examples(400))
@given(raw=st.one_of(json_values, mutated_or_arbitrary({"matchLabels": {"a": "b"}, "x": 1})))
def test_any_input_compiles_or_raises_selector_error(raw: Any) -> None:
    succeeds_or_raises(lambda: label_selector(raw, "sel"), SelectorError)
    succeeds_or_raises(lambda: node_selector_term(raw, "term"), SelectorError)
    succeeds_or_raises(lambda: node_selector_terms(raw, "terms"), SelectorError)
    succeeds_or_raises(lambda: node_selector_terms([raw, raw], "terms"), SelectorError)


@settings(max_examples=examples(100))
@given(raw=st.one_of(json_values, st.text()))
def test_selector_errors_are_short_and_one_line(raw: Any) -> None:
    big = {"matchExpressions": [{"key": "k", "operator": "In", "values": raw}], "bad": raw}
    for value in (raw, big, {"matchLabels": [raw] * 50}, [raw] * 50):
        try:
            label_selector(value, "sel")
            node_selector_term(value, "term")
        except SelectorError as exc:
            assert "\n" not in str(exc) and len(str(exc)) < 300, str(exc)
