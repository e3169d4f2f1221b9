"""The labelsPresence custom predicate (legacy CheckNodeLabelPresence), and the bare names.

The table is upstream's TestNodeLabelPresence (node labels foo=bar, bar=foo); the
end-to-end cases run it under a custom name through the real policy and engine.
"""

from __future__ import annotations

from typing import Any

import pytest

from builders import cluster, cycle, decide, node, pod, policy
from policy_scheduler.engine.predicates.labels import (
    ERR_NODE_LABEL_PRESENCE_VIOLATED,
    check_node_label_presence,
)
from policy_scheduler.objects import parse_pod
from policy_scheduler.policy import LabelsPresenceArgument

NODE_LABELS = {"foo": "bar", "bar": "foo"}

UPSTREAM = [
    pytest.param(["baz"], True, False, id="label does not match, presence true"),
    pytest.param(["baz"], False, True, id="label does not match, presence false"),
    pytest.param(["foo", "baz"], True, False, id="one label matches, presence true"),
    pytest.param(["foo", "baz"], False, False, id="one label matches, presence false"),
    pytest.param(["foo", "bar"], True, True, id="all labels match, presence true"),
    pytest.param(["foo", "bar"], False, False, id="all labels match, presence false"),
    pytest.param(["foo"], True, True, id="values do not matter"),
]


@pytest.mark.parametrize(("labels", "presence", "expected"), UPSTREAM)
def test_upstream_table(labels: list[str], presence: bool, expected: bool) -> None:
    check = check_node_label_presence(LabelsPresenceArgument(labels=labels, presence=presence))
    state = cluster([node("n", labels=NODE_LABELS)])
    parsed = parse_pod(pod("p"))
    reasons = tuple(check(parsed, state.nodes["n"], cycle(parsed, state)))
    assert reasons == (() if expected else (ERR_NODE_LABEL_PRESENCE_VIOLATED,))


def zone_required(presence: bool) -> dict[str, Any]:
    argument = {"labelsPresence": {"labels": ["zone"], "presence": presence}}
    return {"name": "ZoneLabelRequired", "argument": argument}


@pytest.mark.parametrize(
    ("presence", "chosen", "rejected"),
    [
        pytest.param(True, "zoned", "plain", id="presence true keeps labelled nodes"),
        pytest.param(False, "plain", "zoned", id="presence false keeps unlabelled nodes"),
    ],
)
def test_end_to_end(presence: bool, chosen: str, rejected: str) -> None:
    state = cluster([node("zoned", labels={"zone": "a"}), node("plain")])
    decision = decide(pod("p"), state, policy([zone_required(presence)], []))
    assert decision.node == chosen
    assert decision.failed == {rejected: [ERR_NODE_LABEL_PRESENCE_VIOLATED]}


def test_end_to_end_summary_when_no_node_has_the_label() -> None:
    state = cluster([node("a"), node("b")])
    decision = decide(pod("p"), state, policy([zone_required(True)], []))
    assert decision.node is None
    assert decision.message == (
        "0/2 nodes are available: 2 node(s) didn't have the requested labels."
    )


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("CheckNodeLabelPresence", id="label-presence"),
        pytest.param("CheckServiceAffinity", id="service-affinity"),
    ],
)
def test_bare_label_builtins_filter_nothing(name: str) -> None:
    # v1.17+ accepted them without an argument: no labels, so no node is refused.
    state = cluster([node("zoned", labels={"zone": "a"}), node("plain")])
    decision = decide(pod("p", labels={"app": "web"}), state, policy([name], []))
    assert decision.failed == {}
    assert set(decision.feasible) == {"zoned", "plain"}
