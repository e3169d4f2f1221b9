"""MatchNodeSelector: upstream's TestPodFitsSelector table, plus operator edge cases.

``spec.nodeSelector`` must match, AND the required node affinity terms (ORed) must; an
absent ``requiredDuringSchedulingIgnoredDuringExecution`` matches every node, an empty
or nil term list none, an empty term nothing. A term upstream cannot turn into a
selector (Gt with a non-integer, an unknown operator) matches no node rather than
failing the pod.
"""

from __future__ import annotations

from typing import Any

import pytest

from builders import cluster, cycle, node, pod
from policy_scheduler.engine.predicates.general import (
    ERR_NODE_SELECTOR_NOT_MATCH,
    match_node_selector,
)
from policy_scheduler.objects import parse_pod


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    return out


def required(*terms: dict[str, Any] | None, nil_terms: bool = False) -> dict[str, Any]:
    selector: dict[str, Any] = {} if nil_terms else {"nodeSelectorTerms": list(terms)}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": selector}}


def term(*exprs: dict[str, Any], fields: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if exprs:
        out["matchExpressions"] = list(exprs)
    if fields is not None:
        out["matchFields"] = fields
    return out


def name_is(*names: str, op: str = "In") -> list[dict[str, Any]]:
    return [expr("metadata.name", op, *names)]


def fits(pod_obj: dict[str, Any], labels: dict[str, str], node_name: str = "n") -> bool:
    state = cluster([node(node_name, labels=labels)])
    parsed = parse_pod(pod_obj)
    reasons = match_node_selector(parsed, state.nodes[node_name], cycle(parsed, state))
    assert reasons in ((), (ERR_NODE_SELECTOR_NOT_MATCH,))
    return reasons == ()


FOO_BAR = {"foo": "bar"}
GPU = {"GPU": "NVIDIA-GRID-K1"}

UPSTREAM = [
    pytest.param(pod("p"), {}, "n", True, id="no selector"),
    pytest.param(pod("p", node_selector=FOO_BAR), {}, "n", False, id="missing labels"),
    pytest.param(pod("p", node_selector=FOO_BAR), FOO_BAR, "n", True, id="same labels"),
    pytest.param(
        pod("p", node_selector=FOO_BAR),
        {"foo": "bar", "baz": "blah"},
        "n",
        True,
        id="node labels are superset",
    ),
    pytest.param(
        pod("p", node_selector={"foo": "bar", "baz": "blah"}),
        FOO_BAR,
        "n",
        False,
        id="node labels are subset",
    ),
    pytest.param(
        pod("p", affinity=required(term(expr("foo", "In", "bar", "value2")))),
        FOO_BAR,
        "n",
        True,
        id="matchExpressions using In operator that matches the existing node",
    ),
    pytest.param(
        pod("p", affinity=required(term(expr("kernel-version", "Gt", "0204")))),
        {"kernel-version": "0206"},
        "n",
        True,
        id="matchExpressions using Gt operator that matches the existing node",
    ),
    pytest.param(
        pod("p", affinity=required(term(expr("mem-type", "NotIn", "DDR", "DDR2")))),
        {"mem-type": "DDR3"},
        "n",
        True,
        id="matchExpressions using NotIn operator that matches the existing node",
    ),
    pytest.param(
        pod("p", affinity=required(term(expr("GPU", "Exists")))),
        GPU,
        "n",
        True,
        id="matchExpressions using Exists operator that matches the existing node",
    ),
    pytest.param(
        pod("p", affinity=required(term(expr("foo", "In", "value1", "value2")))),
        FOO_BAR,
        "n",
        False,
        id="affinity that doesn't match node's labels won't schedule onto the node",
    ),
    pytest.param(
        pod("p", affinity=required(nil_terms=True)),
        FOO_BAR,
        "n",
        False,
        id="nil NodeSelectorTerms matches no node",
    ),
    pytest.param(
        pod("p", affinity=required()),
        FOO_BAR,
        "n",
        False,
        id="empty NodeSelectorTerms matches no node",
    ),
    pytest.param(
        pod("p", affinity=required({"matchExpressions": []})),
        FOO_BAR,
        "n",
        False,
        id="empty MatchExpressions matches no node",
    ),
    pytest.param(pod("p"), FOO_BAR, "n", True, id="no Affinity will schedule onto a node"),
    pytest.param(
        pod("p", affinity={"nodeAffinity": {}}),
        FOO_BAR,
        "n",
        True,
        id="Affinity but nil required NodeSelector will schedule onto a node",
    ),
    pytest.param(
        pod(
            "p",
            affinity=required(term(expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER"))),
        ),
        GPU,
        "n",
        True,
        id="multiple matchExpressions ANDed that matches the existing node",
    ),
    pytest.param(
        pod("p", affinity=required(term(expr("GPU", "Exists"), expr("GPU", "In", "AMD", "INTER")))),
        GPU,
        "n",
        False,
        id="multiple matchExpressions ANDed that doesn't match the existing node",
    ),
    pytest.param(
        pod(
            "p",
            affinity=required(
                term(expr("foo", "In", "bar", "value2")),
                term(expr("diffkey", "In", "wrong", "value2")),
            ),
        ),
        FOO_BAR,
        "n",
        True,
        id="multiple NodeSelectorTerms ORed in affinity, matches the node's labels",
    ),
    pytest.param(
        pod("p", node_selector=FOO_BAR, affinity=required(term(expr("foo", "Exists")))),
        FOO_BAR,
        "n",
        True,
        id="Affinity and nodeSelector both satisfied",
    ),
    pytest.param(
        pod("p", node_selector=FOO_BAR, affinity=required(term(expr("foo", "Exists")))),
        {"foo": "barrrrrr"},
        "n",
        False,
        id="Affinity matches but nodeSelector is not satisfied",
    ),
    pytest.param(
        pod("p", affinity=required(term(fields=name_is("node_1")))),
        {},
        "node_1",
        True,
        id="matchFields using In operator that matches the existing node",
    ),
    pytest.param(
        pod("p", affinity=required(term(fields=name_is("node_1")))),
        {},
        "node_2",
        False,
        id="matchFields using In operator that does not match the existing node",
    ),
    pytest.param(
        pod(
            "p",
            affinity=required(term(fields=name_is("node_1")), term(expr("foo", "In", "bar"))),
        ),
        FOO_BAR,
        "node_2",
        True,
        id="two terms: matchFields does not match, but matchExpressions matches",
    ),
    pytest.param(
        pod("p", affinity=required(term(expr("foo", "In", "bar"), fields=name_is("node_1")))),
        FOO_BAR,
        "node_2",
        False,
        id="one term: matchFields does not match, but matchExpressions matches",
    ),
    pytest.param(
        pod("p", affinity=required(term(expr("foo", "In", "bar"), fields=name_is("node_1")))),
        FOO_BAR,
        "node_1",
        True,
        id="one term: both matchFields and matchExpressions match",
    ),
    pytest.param(
        pod(
            "p",
            affinity=required(
                term(fields=name_is("node_1")), term(expr("foo", "In", "not-match-to-bar"))
            ),
        ),
        FOO_BAR,
        "node_2",
        False,
        id="two terms: both matchFields and matchExpressions do not match",
    ),
]


@pytest.mark.parametrize(("pod_obj", "labels", "node_name", "expected"), UPSTREAM)
def test_upstream_table(
    pod_obj: dict[str, Any], labels: dict[str, str], node_name: str, expected: bool
) -> None:
    assert fits(pod_obj, labels, node_name) is expected


OPERATORS = [
    pytest.param(expr("foo", "In", "bar"), FOO_BAR, True, id="In matches"),
    pytest.param(expr("foo", "In", "bar"), {}, False, id="In without the label"),
    pytest.param(expr("foo", "NotIn", "bar"), FOO_BAR, False, id="NotIn excludes the value"),
    pytest.param(expr("foo", "NotIn", "bar"), {}, True, id="NotIn matches an absent label"),
    pytest.param(expr("foo", "Exists"), {"foo": ""}, True, id="Exists with an empty value"),
    pytest.param(expr("foo", "Exists"), {}, False, id="Exists without the label"),
    pytest.param(expr("foo", "DoesNotExist"), {}, True, id="DoesNotExist without the label"),
    pytest.param(expr("foo", "DoesNotExist"), FOO_BAR, False, id="DoesNotExist with the label"),
    pytest.param(expr("v", "Gt", "5"), {"v": "6"}, True, id="Gt above"),
    pytest.param(expr("v", "Gt", "5"), {"v": "5"}, False, id="Gt equal"),
    # labels.NewRequirement validates Gt/Lt values as label values too, and "-3" is not
    # one (it must start with an alphanumeric): the term matches no node upstream.
    pytest.param(expr("v", "Gt", "-3"), {"v": "-2"}, False, id="Gt negative bound is invalid"),
    pytest.param(expr("v", "Lt", "3"), {"v": "-2"}, True, id="Lt negative label value"),
    pytest.param(expr("v", "Lt", "5"), {"v": "4"}, True, id="Lt below"),
    pytest.param(expr("v", "Lt", "5"), {"v": "5"}, False, id="Lt equal"),
    pytest.param(expr("v", "Lt", "5"), {}, False, id="Lt without the label"),
    pytest.param(expr("v", "Gt", "1"), {"v": "2.6"}, False, id="Gt non-integer label value"),
    pytest.param(expr("v", "Lt", "10"), {"v": "abc"}, False, id="Lt non-integer label value"),
    pytest.param(expr("v", "Gt", "0.3"), {"v": "6"}, False, id="Gt non-integer bound"),
    pytest.param(expr("v", "Gt", "1", "2"), {"v": "6"}, False, id="Gt with two values"),
    pytest.param(expr("v", "Gt"), {"v": "6"}, False, id="Gt without values"),
    pytest.param(expr("v", "Lt", "x"), {"v": "6"}, False, id="Lt non-integer bound"),
    pytest.param(expr("foo", "In"), FOO_BAR, False, id="In without values"),
    pytest.param(expr("foo", "Exists", "bar"), FOO_BAR, False, id="Exists with values"),
    pytest.param(expr("foo", "Equals", "bar"), FOO_BAR, False, id="unknown operator"),
]


@pytest.mark.parametrize(("requirement", "labels", "expected"), OPERATORS)
def test_operators(requirement: dict[str, Any], labels: dict[str, str], expected: bool) -> None:
    assert fits(pod("p", affinity=required(term(requirement))), labels) is expected


def test_bad_term_does_not_spoil_a_good_one() -> None:
    # Terms are ORed: an unconvertible term is skipped, the next one may still match.
    affinity = required(term(expr("v", "Gt", "oops")), term(expr("foo", "In", "bar")))
    assert fits(pod("p", affinity=affinity), FOO_BAR)


def test_empty_term_among_others_is_skipped() -> None:
    affinity = required({}, term(expr("foo", "Exists")))
    assert fits(pod("p", affinity=affinity), FOO_BAR)
    assert not fits(pod("p", affinity=required({})), FOO_BAR)


FIELDS = [
    pytest.param(name_is("n1", op="NotIn"), "n2", True, id="matchFields NotIn another node"),
    pytest.param(name_is("n1", op="NotIn"), "n1", False, id="matchFields NotIn this node"),
    pytest.param(name_is("n1", "n2"), "n1", False, id="matchFields In with two values"),
    pytest.param(name_is("n1", op="Exists"), "n1", False, id="matchFields with Exists"),
]


@pytest.mark.parametrize(("fields", "node_name", "expected"), FIELDS)
def test_match_fields(fields: list[dict[str, Any]], node_name: str, expected: bool) -> None:
    assert fits(pod("p", affinity=required(term(fields=fields))), {}, node_name) is expected


def test_preferred_terms_do_not_filter() -> None:
    affinity = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "preference": term(expr("foo", "In", "nope"))}
            ]
        }
    }
    assert fits(pod("p", affinity=affinity), FOO_BAR)


def test_invalid_value_in_affinity_term_matches_no_node() -> None:
    affinity = required(term(expr("foo", "NotIn", "invalid value: ___@#$%^")))
    assert not fits(pod("p", affinity=affinity), FOO_BAR)
