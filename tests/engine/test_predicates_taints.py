"""PodToleratesNodeTaints and PodToleratesNodeNoExecuteTaints.

The first table is upstream's TestPodToleratesTaints; the rest pins down the toleration
matching rules (empty key with Exists, effect-less tolerations, Equal vs Exists) and the
effects each predicate looks at.
"""

from __future__ import annotations

from typing import Any

import pytest

from builders import cluster, cycle, node, pod
from policy_scheduler.engine.functions import Predicate
from policy_scheduler.engine.predicates.taints import (
    ERR_TAINTS_TOLERATIONS_NOT_MATCH,
    pod_tolerates_node_no_execute_taints,
    pod_tolerates_node_taints,
)
from policy_scheduler.objects import parse_pod


def taint(key: str, value: str = "", effect: str = "NoSchedule") -> dict[str, Any]:
    return {"key": key, "value": value, "effect": effect}


def tol(
    key: str = "", operator: str = "Equal", value: str = "", effect: str = ""
) -> dict[str, Any]:
    out: dict[str, Any] = {"operator": operator}
    if key:
        out["key"] = key
    if value:
        out["value"] = value
    if effect:
        out["effect"] = effect
    return out


def run(
    fn: Predicate, tolerations: list[dict[str, Any]], taints: list[dict[str, Any]]
) -> tuple[str, ...]:
    state = cluster([node("n", taints=taints)])
    parsed = parse_pod(pod("p", tolerations=tolerations))
    return tuple(fn(parsed, state.nodes["n"], cycle(parsed, state)))


UPSTREAM = [
    pytest.param(
        [],
        [taint("dedicated", "user1")],
        False,
        id="a pod having no tolerations can't be scheduled onto a node with nonempty taints",
    ),
    pytest.param(
        [tol("dedicated", value="user1", effect="NoSchedule")],
        [taint("dedicated", "user1")],
        True,
        id="a pod which can be scheduled on a dedicated node assigned to user1 with NoSchedule",
    ),
    pytest.param(
        [tol("dedicated", value="user2", effect="NoSchedule")],
        [taint("dedicated", "user1")],
        False,
        id="a pod which can't be scheduled on a dedicated node assigned to user2",
    ),
    pytest.param(
        [tol("foo", operator="Exists", effect="NoSchedule")],
        [taint("foo", "bar")],
        True,
        id="a toleration with operator Exists tolerates the taints on the node",
    ),
    pytest.param(
        [
            tol("dedicated", value="user2", effect="NoSchedule"),
            tol("foo", operator="Exists", effect="NoSchedule"),
        ],
        [taint("dedicated", "user2"), taint("foo", "bar")],
        True,
        id="multiple tolerations, multiple taints, all the taints are tolerated",
    ),
    pytest.param(
        [tol("foo", value="bar", effect="PreferNoSchedule")],
        [taint("foo", "bar")],
        False,
        id="key and value match but the non-empty effect doesn't: can't be scheduled",
    ),
    pytest.param(
        [tol("foo", value="bar")],
        [taint("foo", "bar")],
        True,
        id="key and value match, toleration effect empty, taint NoSchedule: can be scheduled",
    ),
    pytest.param(
        [tol("dedicated", value="user2", effect="NoSchedule")],
        [taint("dedicated", "user1", "PreferNoSchedule")],
        True,
        id="untolerated PreferNoSchedule taint: can be scheduled",
    ),
    pytest.param(
        [],
        [taint("dedicated", "user1", "PreferNoSchedule")],
        True,
        id="no toleration, PreferNoSchedule taint: can be scheduled",
    ),
]

MATCHING = [
    pytest.param([], [], True, id="no taints"),
    pytest.param([], [taint("k", effect="NoExecute")], False, id="NoExecute taint not tolerated"),
    pytest.param(
        [tol(operator="Exists")],
        [taint("a", "1"), taint("b", "2", "NoExecute")],
        True,
        id="empty key with Exists tolerates every taint",
    ),
    pytest.param(
        [tol(operator="Exists", effect="NoExecute")],
        [taint("a", "1"), taint("b", "2", "NoExecute")],
        False,
        id="empty key with Exists limited to one effect",
    ),
    pytest.param(
        [tol("k", operator="Exists")],
        [taint("k", "v1"), taint("k", "v2", "NoExecute")],
        True,
        id="Exists without effect tolerates the key with any value and effect",
    ),
    pytest.param(
        [tol("k", value="v")],
        [taint("k", "v", "NoExecute")],
        True,
        id="effect-less Equal toleration tolerates NoExecute",
    ),
    pytest.param([tol("k", value="v")], [taint("k", "w")], False, id="Equal with another value"),
    pytest.param([tol("k")], [taint("k")], True, id="Equal with empty values on both sides"),
    pytest.param([tol("k")], [taint("k", "v")], False, id="Equal empty value vs a taint value"),
    pytest.param(
        [{"key": "k", "value": "v"}], [taint("k", "v")], True, id="operator omitted means Equal"
    ),
    pytest.param([tol("K", value="v")], [taint("k", "v")], False, id="keys are case-sensitive"),
    pytest.param(
        [tol("a", value="1")],
        [taint("a", "1"), taint("b", "2")],
        False,
        id="one untolerated taint among tolerated ones",
    ),
]


@pytest.mark.parametrize(("tolerations", "taints", "expected"), UPSTREAM + MATCHING)
def test_pod_tolerates_node_taints(
    tolerations: list[dict[str, Any]], taints: list[dict[str, Any]], expected: bool
) -> None:
    reasons = run(pod_tolerates_node_taints, tolerations, taints)
    assert reasons == (() if expected else (ERR_TAINTS_TOLERATIONS_NOT_MATCH,))


NO_EXECUTE = [
    pytest.param([], [taint("k", effect="NoSchedule")], True, id="NoSchedule taints are ignored"),
    pytest.param([], [taint("k", effect="PreferNoSchedule")], True, id="PreferNoSchedule ignored"),
    pytest.param([], [taint("k", effect="NoExecute")], False, id="NoExecute taint not tolerated"),
    pytest.param(
        [tol("k", operator="Exists", effect="NoExecute")],
        [taint("k", "v", "NoExecute"), taint("other")],
        True,
        id="NoExecute tolerated, untolerated NoSchedule ignored",
    ),
    pytest.param(
        [tol("k", operator="Exists", effect="NoSchedule")],
        [taint("k", "v", "NoExecute")],
        False,
        id="a NoSchedule toleration does not tolerate NoExecute",
    ),
]


@pytest.mark.parametrize(("tolerations", "taints", "expected"), NO_EXECUTE)
def test_pod_tolerates_node_no_execute_taints(
    tolerations: list[dict[str, Any]], taints: list[dict[str, Any]], expected: bool
) -> None:
    reasons = run(pod_tolerates_node_no_execute_taints, tolerations, taints)
    assert reasons == (() if expected else (ERR_TAINTS_TOLERATIONS_NOT_MATCH,))


def test_several_untolerated_taints_give_one_reason() -> None:
    reasons = run(pod_tolerates_node_taints, [], [taint("a"), taint("b", effect="NoExecute")])
    assert reasons == (ERR_TAINTS_TOLERATIONS_NOT_MATCH,)
