"""NodeAffinity: kube-scheduler v1.30's TestNodeAffinity and TestNodeAffinityPriority.

Ported from pkg/scheduler/framework/plugins/nodeaffinity/node_affinity_test.go: the
Filter's verdicts (nodeSelector and required terms, ``addedAffinity``'s required terms),
PreFilter's Skip, node-name set and conflict, and the Score after NormalizeScore with
the pod's and the added preferred terms. Upstream's Filter cases use one nameless node;
here it is called "node" unless the case names it. Not ported: "PreScore returns error
when an incoming Pod has a broken affinity" (API validation refuses such a pod; here its
broken term simply matches no node).
"""

from __future__ import annotations

from typing import Any

import pytest

from intree.cases import (
    FilterCase,
    ScoreCase,
    check_filter,
    check_score,
    st_node,
    st_pod,
    unresolvable,
)
from policy_scheduler.engine.interface import Status

PLUGIN = "NodeAffinity"
ERR_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
CONFLICT = Status.unresolvable("pod affinity terms conflict")
SKIP = Status.skip()


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    return out


def name_in(*names: str) -> dict[str, Any]:
    return expr("metadata.name", "In", *names)


def term(*expressions: dict[str, Any], fields: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if expressions:
        out["matchExpressions"] = list(expressions)
    if fields:
        out["matchFields"] = list(fields)
    return out


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}


def affinity_pod(*terms: dict[str, Any], selector: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"affinity": {"nodeAffinity": required(*terms)}}
    if selector is not None:
        spec["nodeSelector"] = selector
    return st_pod(**spec)


def selector_pod(selector: dict[str, str]) -> dict[str, Any]:
    return st_pod(nodeSelector=selector)


def fcase(
    case_id: str,
    pod: dict[str, Any],
    labels: dict[str, str] | None = None,
    refused: str | None = None,
    *,
    node: str = "node",
    args: dict[str, Any] | None = None,
    pre_filter: Status | frozenset[str] | None = None,
) -> Any:
    return pytest.param(
        FilterCase(
            PLUGIN,
            pod,
            [st_node(node, labels=labels)],
            {node: unresolvable(refused)} if refused else {},
            args=args,
            pre_filter=pre_filter,
        ),
        id=case_id,
    )


GPU_ANDED = term(expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER"))


def added_required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"addedAffinity": required(*terms)}


FILTER = [
    fcase("missing labels", selector_pod({"foo": "bar"}), None, ERR_POD),
    fcase("same labels", selector_pod({"foo": "bar"}), {"foo": "bar"}),
    fcase("node labels are superset", selector_pod({"foo": "bar"}), {"foo": "bar", "baz": "blah"}),
    fcase(
        "node labels are subset",
        selector_pod({"foo": "bar", "baz": "blah"}),
        {"foo": "bar"},
        ERR_POD,
    ),
    fcase(
        "Pod with matchExpressions using In operator that matches the existing node",
        affinity_pod(term(expr("foo", "In", "bar", "value2"))),
        {"foo": "bar"},
    ),
    fcase(
        "Pod with matchExpressions using Gt operator that matches the existing node",
        affinity_pod(term(expr("kernel-version", "Gt", "0204"))),
        {"kernel-version": "0206"},
    ),
    fcase(
        "Pod with matchExpressions using NotIn operator that matches the existing node",
        affinity_pod(term(expr("mem-type", "NotIn", "DDR", "DDR2"))),
        {"mem-type": "DDR3"},
    ),
    fcase(
        "Pod with matchExpressions using Exists operator that matches the existing node",
        affinity_pod(term(expr("GPU", "Exists"))),
        {"GPU": "NVIDIA-GRID-K1"},
    ),
    fcase(
        "Pod with affinity that don't match node's labels won't schedule onto the node",
        affinity_pod(term(expr("foo", "In", "value1", "value2"))),
        {"foo": "bar"},
        ERR_POD,
    ),
    fcase(
        "Pod with empty MatchExpressions is not a valid value will match no objects and won't "
        "schedule onto the node",
        affinity_pod({"matchExpressions": []}),
        {"foo": "bar"},
        ERR_POD,
    ),
    fcase(
        "Pod with no Affinity will schedule onto a node", st_pod(), {"foo": "bar"}, pre_filter=SKIP
    ),
    fcase(
        "Pod with Affinity but nil NodeSelector will schedule onto a node",
        st_pod(affinity={"nodeAffinity": {}}),
        {"foo": "bar"},
        pre_filter=SKIP,
    ),
    fcase(
        "Pod with multiple matchExpressions ANDed that matches the existing node",
        affinity_pod(GPU_ANDED),
        {"GPU": "NVIDIA-GRID-K1"},
    ),
    fcase(
        "Pod with multiple matchExpressions ANDed that doesn't match the existing node",
        affinity_pod(term(expr("GPU", "Exists"), expr("GPU", "In", "AMD", "INTER"))),
        {"GPU": "NVIDIA-GRID-K1"},
        ERR_POD,
    ),
    fcase(
        "Pod with multiple NodeSelectorTerms ORed in affinity, matches the node's labels and "
        "will schedule onto the node",
        affinity_pod(
            term(expr("foo", "In", "bar", "value2")), term(expr("diffkey", "In", "wrong", "value2"))
        ),
        {"foo": "bar"},
    ),
    fcase(
        "Pod with an Affinity and a PodSpec.NodeSelector(the old thing that we are "
        "deprecating) both are satisfied, will schedule onto the node",
        affinity_pod(term(expr("foo", "Exists")), selector={"foo": "bar"}),
        {"foo": "bar"},
    ),
    fcase(
        "Pod with an Affinity matches node's labels but the PodSpec.NodeSelector(the old thing "
        "that we are deprecating) is not satisfied, won't schedule onto the node",
        affinity_pod(term(expr("foo", "Exists")), selector={"foo": "bar"}),
        {"foo": "barrrrrr"},
        ERR_POD,
    ),
    fcase(
        "Pod with an invalid value in Affinity term won't be scheduled onto the node",
        affinity_pod(term(expr("foo", "NotIn", "invalid value: ___@#$%^"))),
        {"foo": "bar"},
        ERR_POD,
    ),
    fcase(
        "Pod with matchFields using In operator that matches the existing node",
        affinity_pod(term(fields=(name_in("node1"),))),
        node="node1",
        pre_filter=frozenset({"node1"}),
    ),
    fcase(
        "Pod with matchFields using In operator that does not match the existing node",
        affinity_pod(term(fields=(name_in("node1"),))),
        None,
        ERR_POD,
        node="node2",
        pre_filter=frozenset({"node1"}),
    ),
    fcase(
        "Pod with two terms: matchFields does not match, but matchExpressions matches",
        affinity_pod(
            term(fields=(name_in("node1"), name_in("node2"))), term(expr("foo", "In", "bar"))
        ),
        {"foo": "bar"},
        node="node2",
    ),
    fcase(
        "Pod with one term: matchFields does not match, but matchExpressions matches",
        affinity_pod(term(expr("foo", "In", "bar"), fields=(name_in("node1"),))),
        {"foo": "bar"},
        ERR_POD,
        node="node2",
        pre_filter=frozenset({"node1"}),
    ),
    fcase(
        "Pod with one term: both matchFields and matchExpressions match",
        affinity_pod(term(expr("foo", "In", "bar"), fields=(name_in("node1"),))),
        {"foo": "bar"},
        node="node1",
        pre_filter=frozenset({"node1"}),
    ),
    fcase(
        "Pod with two terms: both matchFields and matchExpressions do not match",
        affinity_pod(term(fields=(name_in("node1"),)), term(expr("foo", "In", "not-match-to-bar"))),
        {"foo": "bar"},
        ERR_POD,
        node="node2",
    ),
    fcase(
        "Pod with two terms of node.Name affinity",
        affinity_pod(term(fields=(name_in("node1"),)), term(fields=(name_in("node2"),))),
        node="node2",
        pre_filter=frozenset({"node1", "node2"}),
    ),
    fcase(
        "Pod with two conflicting mach field requirements",
        affinity_pod(term(fields=(name_in("node1"), name_in("node2")))),
        {"foo": "bar"},
        ERR_POD,
        node="node2",
        pre_filter=CONFLICT,
    ),
    fcase(
        "Matches added affinity and Pod's node affinity",
        affinity_pod(term(expr("zone", "In", "foo"))),
        {"zone": "foo"},
        node="node2",
        args=added_required(term(fields=(name_in("node2"),))),
    ),
    fcase(
        "Matches added affinity but not Pod's node affinity",
        affinity_pod(term(expr("zone", "In", "bar"))),
        {"zone": "foo"},
        ERR_POD,
        node="node2",
        args=added_required(term(fields=(name_in("node2"),))),
    ),
    fcase(
        "Doesn't match added affinity",
        st_pod(),
        {"zone": "foo"},
        ERR_ENFORCED,
        node="node2",
        args=added_required(term(expr("zone", "In", "bar"))),
    ),
    fcase(
        "Matches node selector correctly even if PreFilter is not called",
        selector_pod({"foo": "bar"}),
        {"foo": "bar", "baz": "blah"},
    ),
    fcase(
        "Matches node affinity correctly even if PreFilter is not called",
        affinity_pod(GPU_ANDED),
        {"GPU": "NVIDIA-GRID-K1"},
    ),
    # Ours.
    fcase(
        "no required terms at all match no node",
        affinity_pod(),
        {"foo": "bar"},
        ERR_POD,
    ),
    fcase(
        "the added affinity is checked before the pod's",
        selector_pod({"foo": "bar"}),
        {"zone": "foo"},
        ERR_ENFORCED,
        args=added_required(term(expr("zone", "In", "bar"))),
    ),
    pytest.param(
        FilterCase(
            PLUGIN,
            selector_pod({"disk": "ssd"}),
            [
                st_node("a", labels={"disk": "ssd"}),
                st_node("b", labels={"disk": "hdd"}),
                st_node("c"),
                st_node("d", labels={"disk": "ssd"}),
            ],
            {"b": unresolvable(ERR_POD), "c": unresolvable(ERR_POD)},
        ),
        id="several nodes, one selector",
    ),
]


@pytest.mark.parametrize("case", FILTER)
def test_node_affinity_filter(case: FilterCase) -> None:
    check_filter(case)


# -- score ----------------------------------------------------------------------------------

LABEL1 = {"foo": "bar"}
LABEL2 = {"key": "value"}
LABEL3 = {"az": "az1"}
LABEL4 = {"abc": "az11", "def": "az22"}
LABEL5 = {"foo": "bar", "key": "value", "az": "az1"}


def preferred(*weighted: tuple[int, dict[str, Any]]) -> dict[str, Any]:
    return {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": weight, "preference": pref} for weight, pref in weighted
        ]
    }


AFFINITY1 = preferred((2, term(expr("foo", "In", "bar"))))
AFFINITY2 = preferred(
    (2, term(expr("foo", "In", "bar"))),
    (4, term(expr("key", "In", "value"))),
    (5, term(expr("foo", "In", "bar"), expr("key", "In", "value"), expr("az", "In", "az1"))),
)


def scase(
    case_id: str,
    pod: dict[str, Any],
    nodes: list[tuple[str, dict[str, str]]],
    scores: list[int],
    *,
    args: dict[str, Any] | None = None,
    skip: bool = False,
) -> Any:
    return pytest.param(
        ScoreCase(
            PLUGIN,
            pod,
            [st_node(name, labels=labels) for name, labels in nodes],
            {name: score for (name, _), score in zip(nodes, scores, strict=True)},
            args=args,
            skip=skip,
        ),
        id=case_id,
    )


def preferring(affinity: dict[str, Any]) -> dict[str, Any]:
    return st_pod(affinity={"nodeAffinity": affinity})


SCORE = [
    scase(
        "all nodes are same priority as NodeAffinity is nil",
        st_pod(),
        [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL3)],
        [0, 0, 0],
        skip=True,
    ),
    scase(
        "Skip is returned in PreScore when NodeAffinity is nil",
        st_pod(),
        [("node1", LABEL1)],
        [0],
        skip=True,
    ),
    scase(
        "no node matches preferred scheduling requirements in NodeAffinity of pod so all "
        "nodes' priority is zero",
        preferring(AFFINITY1),
        [("node1", LABEL4), ("node2", LABEL2), ("node3", LABEL3)],
        [0, 0, 0],
    ),
    scase(
        "only node1 matches the preferred scheduling requirements of pod",
        preferring(AFFINITY1),
        [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL3)],
        [100, 0, 0],
    ),
    scase(
        "all nodes matches the preferred scheduling requirements of pod but with different "
        "priorities",
        preferring(AFFINITY2),
        [("node1", LABEL1), ("node5", LABEL5), ("node2", LABEL2)],
        [18, 100, 36],
    ),
    scase(
        "added affinity",
        st_pod(),
        [("node1", LABEL1), ("node2", LABEL2)],
        [100, 0],
        args={"addedAffinity": AFFINITY1},
    ),
    scase(
        "added affinity and pod has default affinity",
        preferring(AFFINITY1),
        [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL5)],
        [40, 60, 100],
        args={"addedAffinity": preferred((3, term(expr("key", "In", "value"))))},
    ),
    # Ours: v1.30 counts a preference's matchFields (the legacy priority ignored them).
    scase(
        "a preferred term naming a node",
        preferring(preferred((5, term(fields=(name_in("node2"),))))),
        [("node1", LABEL1), ("node2", LABEL1)],
        [0, 100],
    ),
    scase(
        "terms of weight 0 and empty terms do not count",
        preferring(
            preferred((0, term(expr("foo", "Exists"))), (7, {}), (1, term(expr("az", "Exists"))))
        ),
        [("node1", LABEL1), ("node2", LABEL3)],
        [0, 100],
    ),
]


@pytest.mark.parametrize("case", SCORE)
def test_node_affinity_score(case: ScoreCase) -> None:
    check_score(case)
