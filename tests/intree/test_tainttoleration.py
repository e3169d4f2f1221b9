"""TaintToleration: kube-scheduler v1.34's TestTaintTolerationFilter and ...Score tables.

Ported from pkg/scheduler/framework/plugins/tainttoleration/taint_toleration_test.go:
an untolerated NoSchedule/NoExecute taint refuses the node, UnschedulableAndUnresolvable,
with ``node(s) had untolerated taint(s)`` (v1.34's patch releases: kubernetes#134740
took the taint's key and value out of the reason, and the table's expectations with it);
the Score counts intolerable PreferNoSchedule taints, reversed onto 0..100 by
NormalizeScore. Plus our cases: NoExecute refuses too, a node with several untolerated
taints gets the one reason, and a wildcard toleration.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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

PLUGIN = "TaintToleration"


def tolerating(*tolerations: Mapping[str, Any]) -> dict[str, Any]:
    return st_pod(tolerations=[dict(t) for t in tolerations])


def taint(key: str, value: str, effect: str) -> dict[str, str]:
    return {"key": key, "value": value, "effect": effect}


def tainted(name: str, *taints: Mapping[str, Any]) -> dict[str, Any]:
    return st_node(name, taints=list(taints))


def filter_case(
    case_id: str, pod: dict[str, Any], taints: Sequence[Mapping[str, Any]], refused: str | None
) -> Any:
    return pytest.param(
        FilterCase(
            PLUGIN,
            pod,
            [tainted("nodeA", *taints)],
            {"nodeA": unresolvable(refused)} if refused else {},
        ),
        id=case_id,
    )


USER1 = taint("dedicated", "user1", "NoSchedule")

FILTER = [
    filter_case(
        "A pod having no tolerations can't be scheduled onto a node with nonempty taints",
        tolerating(),
        [USER1],
        "node(s) had untolerated taint(s)",
    ),
    filter_case(
        "A pod which can be scheduled on a dedicated node assigned to user1 with effect NoSchedule",
        tolerating({"key": "dedicated", "value": "user1", "effect": "NoSchedule"}),
        [USER1],
        None,
    ),
    filter_case(
        "A pod which can't be scheduled on a dedicated node assigned to user2 with effect "
        "NoSchedule",
        tolerating(
            {"key": "dedicated", "operator": "Equal", "value": "user2", "effect": "NoSchedule"}
        ),
        [USER1],
        "node(s) had untolerated taint(s)",
    ),
    filter_case(
        "A pod can be scheduled onto the node, with a toleration uses operator Exists that "
        "tolerates the taints on the node",
        tolerating({"key": "foo", "operator": "Exists", "effect": "NoSchedule"}),
        [taint("foo", "bar", "NoSchedule")],
        None,
    ),
    filter_case(
        "A pod has multiple tolerations, node has multiple taints, all the taints are "
        "tolerated, pod can be scheduled onto the node",
        tolerating(
            {"key": "dedicated", "operator": "Equal", "value": "user2", "effect": "NoSchedule"},
            {"key": "foo", "operator": "Exists", "effect": "NoSchedule"},
        ),
        [taint("dedicated", "user2", "NoSchedule"), taint("foo", "bar", "NoSchedule")],
        None,
    ),
    filter_case(
        "A pod has a toleration that keys and values match the taint on the node, but "
        "(non-empty) effect doesn't match, can't be scheduled onto the node",
        tolerating(
            {"key": "foo", "operator": "Equal", "value": "bar", "effect": "PreferNoSchedule"}
        ),
        [taint("foo", "bar", "NoSchedule")],
        "node(s) had untolerated taint(s)",
    ),
    filter_case(
        "The pod has a toleration that keys and values match the taint on the node, the "
        "effect of toleration is empty, and the effect of taint is NoSchedule. Pod can be "
        "scheduled onto the node",
        tolerating({"key": "foo", "operator": "Equal", "value": "bar"}),
        [taint("foo", "bar", "NoSchedule")],
        None,
    ),
    filter_case(
        "The pod has a toleration that key and value don't match the taint on the node, but "
        "the effect of taint on node is PreferNoSchedule. Pod can be scheduled onto the node",
        tolerating(
            {"key": "dedicated", "operator": "Equal", "value": "user2", "effect": "NoSchedule"}
        ),
        [taint("dedicated", "user1", "PreferNoSchedule")],
        None,
    ),
    filter_case(
        "The pod has no toleration, but the effect of taint on node is PreferNoSchedule. Pod "
        "can be scheduled onto the node",
        tolerating(),
        [taint("dedicated", "user1", "PreferNoSchedule")],
        None,
    ),
    # Ours.
    filter_case(
        "a NoExecute taint keeps an intolerant pod off",
        tolerating(),
        [taint("maintenance", "", "NoExecute")],
        "node(s) had untolerated taint(s)",
    ),
    filter_case(
        "several untolerated taints, one reason naming none",
        tolerating({"key": "a", "operator": "Exists"}),
        [
            taint("a", "1", "NoSchedule"),
            taint("b", "2", "NoExecute"),
            taint("c", "3", "NoSchedule"),
        ],
        "node(s) had untolerated taint(s)",
    ),
    filter_case(
        "an empty key with Exists tolerates every taint",
        tolerating({"operator": "Exists"}),
        [taint("a", "1", "NoSchedule"), taint("b", "2", "NoExecute")],
        None,
    ),
    pytest.param(
        FilterCase(
            PLUGIN,
            tolerating(),
            [st_node("clean"), tainted("dirty", USER1)],
            {"dirty": unresolvable("node(s) had untolerated taint(s)")},
        ),
        id="only the tainted node is refused",
    ),
]


@pytest.mark.parametrize("case", FILTER)
def test_taint_toleration_filter(case: FilterCase) -> None:
    check_filter(case)


def score_case(
    case_id: str, pod: dict[str, Any], nodes: list[dict[str, Any]], scores: list[int]
) -> Any:
    names = [n["metadata"]["name"] for n in nodes]
    return pytest.param(
        ScoreCase(PLUGIN, pod, nodes, dict(zip(names, scores, strict=True))), id=case_id
    )


ARM = taint("cpu-type", "arm64", "PreferNoSchedule")
SSD = taint("disk-type", "ssd", "PreferNoSchedule")

SCORE = [
    score_case(
        "node with taints tolerated by the pod, gets a higher score than those node with "
        "intolerable taints",
        tolerating(
            {"key": "foo", "operator": "Equal", "value": "bar", "effect": "PreferNoSchedule"}
        ),
        [
            tainted("nodeA", taint("foo", "bar", "PreferNoSchedule")),
            tainted("nodeB", taint("foo", "blah", "PreferNoSchedule")),
        ],
        [100, 0],
    ),
    score_case(
        "the nodes that all of their taints are tolerated by the pod, get the same score, no "
        "matter how many tolerable taints a node has",
        tolerating(
            {
                "key": "cpu-type",
                "operator": "Equal",
                "value": "arm64",
                "effect": "PreferNoSchedule",
            },
            {"key": "disk-type", "operator": "Equal", "value": "ssd", "effect": "PreferNoSchedule"},
        ),
        [tainted("nodeA"), tainted("nodeB", ARM), tainted("nodeC", ARM, SSD)],
        [100, 100, 100],
    ),
    score_case(
        "the more intolerable taints a node has, the lower score it gets.",
        tolerating(
            {"key": "foo", "operator": "Equal", "value": "bar", "effect": "PreferNoSchedule"}
        ),
        [tainted("nodeA"), tainted("nodeB", ARM), tainted("nodeC", ARM, SSD)],
        [100, 50, 0],
    ),
    score_case(
        "only taints and tolerations that have effect PreferNoSchedule are checked by "
        "taints-tolerations priority function",
        tolerating(
            {"key": "cpu-type", "operator": "Equal", "value": "arm64", "effect": "NoSchedule"},
            {"key": "disk-type", "operator": "Equal", "value": "ssd", "effect": "NoSchedule"},
        ),
        [
            tainted("nodeA"),
            tainted("nodeB", taint("cpu-type", "arm64", "NoSchedule")),
            tainted("nodeC", ARM, SSD),
        ],
        [100, 100, 0],
    ),
    score_case(
        "Default behaviour No taints and tolerations, lands on node with no taints",
        tolerating(),
        [tainted("nodeA"), tainted("nodeB", ARM)],
        [100, 0],
    ),
    # Ours: a toleration without effect tolerates PreferNoSchedule too; three levels.
    score_case(
        "a toleration without effect counts for PreferNoSchedule",
        tolerating({"key": "cpu-type", "operator": "Exists"}),
        [
            tainted("nodeA", ARM),
            tainted("nodeB", SSD),
            tainted("nodeC", SSD, taint("gpu", "", "PreferNoSchedule"), ARM),
        ],
        [100, 50, 0],
    ),
]


@pytest.mark.parametrize("case", SCORE)
def test_taint_toleration_score(case: ScoreCase) -> None:
    check_score(case)
