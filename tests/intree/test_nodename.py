"""NodeName: kube-scheduler v1.30's TestNodeName table, plus a cluster of several nodes."""

from __future__ import annotations

import pytest

from intree.cases import FilterCase, check_filter, st_node, st_pod, unresolvable

ERR = "node(s) didn't match the requested node name"

CASES = [
    pytest.param(FilterCase("NodeName", st_pod(), [st_node("foo")]), id="no host specified"),
    pytest.param(
        FilterCase("NodeName", st_pod(nodeName="foo"), [st_node("foo")]), id="host matches"
    ),
    pytest.param(
        FilterCase(
            "NodeName", st_pod(nodeName="bar"), [st_node("foo")], {"foo": unresolvable(ERR)}
        ),
        id="host doesn't match",
    ),
    pytest.param(
        FilterCase(
            "NodeName",
            st_pod(nodeName="b"),
            [st_node("a"), st_node("b"), st_node("c")],
            {"a": unresolvable(ERR), "c": unresolvable(ERR)},
        ),
        id="only the named node of several",
    ),
]


@pytest.mark.parametrize("case", CASES)
def test_node_name(case: FilterCase) -> None:
    check_filter(case)
