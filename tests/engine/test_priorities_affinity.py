"""NodeAffinityPriority and TaintTolerationPriority: upstream's tables and their edges.

Ported from kube-scheduler's TestNodeAffinityPriority and TestTaintAndToleration (0..10
scale), both run through the registered map + NormalizeReduce.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from builders import cluster, cycle, decide, node, pod, policy
from policy_scheduler import names
from policy_scheduler.engine import catalogue  # noqa: F401  (registers every family)
from policy_scheduler.engine.functions import REGISTRY
from policy_scheduler.objects import parse_pod


def run(name: str, incoming: Mapping[str, Any], nodes: Sequence[Mapping[str, Any]]) -> list[int]:
    state = cluster(nodes)
    p = parse_pod(incoming)
    infos = [state.nodes[n["metadata"]["name"]] for n in nodes]
    return REGISTRY.priorities[name](p, infos, cycle(p, state))


# -- NodeAffinityPriority -----------------------------------------------------------------


def expr(key: str, *values: str, operator: str = "In") -> dict[str, Any]:
    e: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        e["values"] = list(values)
    return e


def preferring(*terms: tuple[int, dict[str, Any]]) -> dict[str, Any]:
    return pod(
        "p",
        affinity={
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": weight, "preference": preference} for weight, preference in terms
                ]
            }
        },
    )


LABEL1 = {"foo": "bar"}
LABEL2 = {"key": "value"}
LABEL3 = {"az": "az1"}
LABEL4 = {"abc": "az11", "def": "az22"}
LABEL5 = {"foo": "bar", "key": "value", "az": "az1"}

AFFINITY1 = preferring((2, {"matchExpressions": [expr("foo", "bar")]}))
AFFINITY2 = preferring(
    (2, {"matchExpressions": [expr("foo", "bar")]}),
    (4, {"matchExpressions": [expr("key", "value")]}),
    (5, {"matchExpressions": [expr("foo", "bar"), expr("key", "value"), expr("az", "az1")]}),
)


@pytest.mark.parametrize(
    ("incoming", "labels", "expected"),
    [
        pytest.param(pod("p"), [LABEL1, LABEL2, LABEL3], [0, 0, 0], id="no-node-affinity"),
        pytest.param(AFFINITY1, [LABEL4, LABEL2, LABEL3], [0, 0, 0], id="no-node-matches"),
        pytest.param(AFFINITY1, [LABEL1, LABEL2, LABEL3], [10, 0, 0], id="only-machine1-matches"),
        # Raw sums 2, 11, 4 normalized by 11: 20//11 = 1, 10, 40//11 = 3.
        pytest.param(AFFINITY2, [LABEL1, LABEL5, LABEL2], [1, 10, 3], id="different-priorities"),
        # A weight-0 preference counts for nothing, even when it matches.
        pytest.param(
            preferring(
                (0, {"matchExpressions": [expr("foo", "bar")]}),
                (3, {"matchExpressions": [expr("key", "value")]}),
            ),
            [LABEL1, LABEL2],
            [0, 10],
            id="weight-zero-skipped",
        ),
        # The legacy priority reads matchExpressions only: a matchFields preference and an
        # empty preference match no node.
        pytest.param(
            preferring(
                (5, {"matchFields": [expr("metadata.name", "m1")]}),
                (5, {}),
                (1, {"matchExpressions": [expr("key", "value")]}),
            ),
            [LABEL1, LABEL2],
            [0, 10],
            id="match-fields-and-empty-ignored",
        ),
        pytest.param(
            preferring(
                (
                    7,
                    {
                        "matchExpressions": [expr("foo", "bar")],
                        "matchFields": [expr("metadata.name", "nobody")],
                    },
                )
            ),
            [LABEL1, LABEL2],
            [10, 0],
            id="match-fields-beside-expressions-ignored",
        ),
        pytest.param(
            preferring(
                (1, {"matchExpressions": [expr("cores", "4", operator="Gt")]}),
                (1, {"matchExpressions": [expr("foo", operator="DoesNotExist")]}),
            ),
            [{"cores": "8", "foo": "x"}, {"cores": "2"}, {"cores": "16"}],
            [5, 5, 10],
            id="gt-and-does-not-exist",
        ),
    ],
)
def test_node_affinity_priority(
    incoming: dict[str, Any], labels: list[dict[str, str]], expected: list[int]
) -> None:
    nodes = [node(f"m{i + 1}", labels=lbl) for i, lbl in enumerate(labels)]
    assert run(names.NODE_AFFINITY, incoming, nodes) == expected


# -- TaintTolerationPriority --------------------------------------------------------------

PREFER = "PreferNoSchedule"


def taint(key: str, value: str, effect: str = PREFER) -> dict[str, str]:
    return {"key": key, "value": value, "effect": effect}


def toleration(
    key: str = "", value: str = "", effect: str = PREFER, operator: str = "Equal"
) -> dict[str, str]:
    t = {"key": key, "operator": operator, "effect": effect}
    if value:
        t["value"] = value
    return t


ARM = taint("cpu-type", "arm64")
SSD = taint("disk-type", "ssd")


@pytest.mark.parametrize(
    ("tolerations", "taints", "expected"),
    [
        pytest.param(
            [toleration("foo", "bar")],
            [[taint("foo", "bar")], [taint("foo", "blah")]],
            [10, 0],
            id="tolerated-node-scores-higher",
        ),
        pytest.param(
            [toleration("cpu-type", "arm64"), toleration("disk-type", "ssd")],
            [[], [ARM], [ARM, SSD]],
            [10, 10, 10],
            id="tolerated-taint-count-does-not-matter",
        ),
        pytest.param(
            [toleration("foo", "bar")],
            [[], [ARM], [ARM, SSD]],
            [10, 5, 0],
            id="more-intolerable-taints-lower-score",
        ),
        pytest.param(
            [
                toleration("cpu-type", "arm64", effect="NoSchedule"),
                toleration("disk-type", "ssd", effect="NoSchedule"),
            ],
            [[], [taint("cpu-type", "arm64", "NoSchedule")], [ARM, SSD]],
            [10, 10, 0],
            id="only-prefer-no-schedule-counts",
        ),
        pytest.param([], [[], [ARM]], [10, 0], id="no-tolerations"),
        # An empty effect tolerates PreferNoSchedule taints too.
        pytest.param(
            [toleration("cpu-type", "arm64", effect="")],
            [[ARM], [SSD]],
            [10, 0],
            id="empty-effect-toleration-counts",
        ),
        pytest.param(
            [toleration(operator="Exists", effect="")],
            [[ARM, SSD], []],
            [10, 10],
            id="tolerate-everything",
        ),
        pytest.param(
            [toleration("disk-type", operator="Exists")],
            [[ARM, SSD], [SSD], [ARM, ARM | {"key": "gpu"}]],
            [5, 10, 0],
            id="exists-operator",
        ),
        # Only NoExecute/NoSchedule taints: nothing to count, every node 10.
        pytest.param(
            [],
            [[taint("a", "b", "NoExecute")], [taint("a", "b", "NoSchedule")]],
            [10, 10],
            id="hard-taints-ignored",
        ),
    ],
)
def test_taint_toleration_priority(
    tolerations: list[dict[str, str]], taints: list[list[dict[str, str]]], expected: list[int]
) -> None:
    nodes = [node(f"node{i}", taints=t) for i, t in enumerate(taints)]
    assert run(names.TAINT_TOLERATION, pod("p", tolerations=tolerations), nodes) == expected


# -- end to end ---------------------------------------------------------------------------


def test_decision_follows_preferred_node_affinity() -> None:
    state = cluster(
        [node("plain"), node("ssd", labels={"disk": "ssd"}), node("hdd", labels={"disk": "hdd"})]
    )
    incoming = preferring(
        (10, {"matchExpressions": [expr("disk", "ssd")]}),
        (5, {"matchExpressions": [expr("disk", "hdd")]}),
    )
    decision = decide(incoming, state, policy([], [names.NODE_AFFINITY]))
    assert decision.node == "ssd"
    assert {n: s.priorities[names.NODE_AFFINITY] for n, s in decision.scores.items()} == {
        "plain": 0,
        "ssd": 10,
        "hdd": 5,
    }


def test_decision_avoids_prefer_no_schedule_taints() -> None:
    state = cluster(
        [
            node("tainted", taints=[ARM]),
            node("clean"),
            node("very-tainted", taints=[ARM, SSD]),
        ]
    )
    decision = decide(pod("p"), state, policy([], [names.TAINT_TOLERATION]))
    assert decision.node == "clean"
    assert {n: s.total for n, s in decision.scores.items()} == {
        "tainted": 5,
        "clean": 10,
        "very-tainted": 0,
    }
