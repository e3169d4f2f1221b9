"""InterPodAffinityPriority: upstream's TestInterPodAffinityPriority and
TestHardPodAffinitySymmetricWeight, plus end-to-end cases through ``decide()``.

Tables ported from kube-scheduler v1.13-v1.17
(pkg/scheduler/algorithm/priorities/interpod_affinity_test.go).
"""

from __future__ import annotations

import functools
from typing import Any

import pytest

import builders
from builders import cluster, cycle, decide, node, pod, policy
from policy_scheduler import names
from policy_scheduler.engine import compiler
from policy_scheduler.engine.functions import PolicySettings
from policy_scheduler.engine.priorities.interpod import inter_pod_affinity_priority
from policy_scheduler.objects import parse_pod


@pytest.fixture(autouse=True, params=[True, False], ids=["fast", "plain"])
def engine_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Every case runs on the fast path (cluster indexes) and on the plain definition."""
    fast: bool = request.param
    settings = functools.partial(PolicySettings, fast=fast)
    monkeypatch.setattr(builders, "PolicySettings", settings)
    monkeypatch.setattr(compiler, "PolicySettings", settings)
    return fast


CHINA = {"region": "China"}
INDIA = {"region": "India"}
AZ1 = {"az": "az1"}
AZ2 = {"az": "az2"}
CHINA_AZ1 = {"region": "China", "az": "az1"}
S1 = {"security": "S1"}
S2 = {"security": "S2"}


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    return out


def term(*exprs: dict[str, Any], topology: str) -> dict[str, Any]:
    return {"labelSelector": {"matchExpressions": list(exprs)}, "topologyKey": topology}


def weighted(weight: int, *exprs: dict[str, Any], topology: str) -> dict[str, Any]:
    return {"weight": weight, "podAffinityTerm": term(*exprs, topology=topology)}


PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"

STAY_WITH_S1_IN_REGION = {
    "podAffinity": {PREFERRED: [weighted(5, expr("security", "In", "S1"), topology="region")]}
}
STAY_WITH_S2_IN_REGION = {
    "podAffinity": {PREFERRED: [weighted(6, expr("security", "In", "S2"), topology="region")]}
}
AFFINITY3 = {
    "podAffinity": {
        PREFERRED: [
            weighted(
                8,
                expr("security", "NotIn", "S1"),
                expr("security", "In", "S2"),
                topology="region",
            ),
            weighted(
                2,
                expr("security", "Exists"),
                expr("wrongkey", "DoesNotExist"),
                topology="region",
            ),
        ]
    }
}
HARD_AFFINITY = {
    "podAffinity": {
        REQUIRED: [
            term(expr("security", "In", "S1", "value2"), topology="region"),
            term(expr("security", "Exists"), expr("wrongkey", "DoesNotExist"), topology="region"),
        ]
    }
}
AWAY_FROM_S1_IN_AZ = {
    "podAntiAffinity": {PREFERRED: [weighted(5, expr("security", "In", "S1"), topology="az")]}
}
AWAY_FROM_S2_IN_AZ = {
    "podAntiAffinity": {PREFERRED: [weighted(5, expr("security", "In", "S2"), topology="az")]}
}
STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ = {
    "podAffinity": {PREFERRED: [weighted(8, expr("security", "In", "S1"), topology="region")]},
    "podAntiAffinity": {PREFERRED: [weighted(5, expr("security", "In", "S2"), topology="az")]},
}


def scores(
    incoming: dict[str, Any],
    pods: list[dict[str, Any]],
    nodes: list[tuple[str, dict[str, str]]],
    hard_weight: int = 1,
    not_scored: tuple[tuple[str, dict[str, str]], ...] | list[tuple[str, dict[str, str]]] = (),
) -> dict[str, int]:
    """Scores of ``nodes``; ``not_scored`` nodes are in the cluster but not candidates."""
    everything = list(nodes) + list(not_scored)
    state = cluster([node(name, labels=labels) for name, labels in everything], pods)
    the_pod = parse_pod(incoming)
    infos = [state.nodes[name] for name, _ in nodes]
    result = inter_pod_affinity_priority(
        the_pod, infos, cycle(the_pod, state, hard_pod_affinity_weight=hard_weight)
    )
    return {info.name: score for info, score in zip(infos, result, strict=True)}


def on(node_name: str, labels: dict[str, str] | None = None, aff: Any = None) -> dict[str, Any]:
    return pod(f"e-{node_name}", node_name=node_name, labels=labels, affinity=aff)


PRIORITY_CASES = [
    pytest.param(
        pod("p", labels=S1),
        [],
        [("machine1", CHINA), ("machine2", INDIA), ("machine3", AZ1)],
        {"machine1": 0, "machine2": 0, "machine3": 0},
        id="all machines are same priority as Affinity is nil",
    ),
    pytest.param(
        pod("p", labels=S1, affinity=STAY_WITH_S1_IN_REGION),
        [on("machine1", S1), on("machine2", S2), on("machine3", S1)],
        [("machine1", CHINA), ("machine2", INDIA), ("machine3", AZ1)],
        {"machine1": 10, "machine2": 0, "machine3": 0},
        id="affinity: topology key and matching pods score high",
    ),
    pytest.param(
        pod("p", affinity=STAY_WITH_S1_IN_REGION),
        [on("machine1", S1)],
        [("machine1", CHINA), ("machine2", CHINA_AZ1), ("machine3", INDIA)],
        {"machine1": 10, "machine2": 10, "machine3": 0},
        id="all nodes of the matching pod's region share its score",
    ),
    pytest.param(
        pod("p", labels=S1, affinity=STAY_WITH_S2_IN_REGION),
        [
            pod("a", node_name="machine1", labels=S2),
            pod("b", node_name="machine1", labels=S2),
            on("machine2", S2),
            on("machine3", S2),
            on("machine4", S2),
            on("machine5", S2),
        ],
        [
            ("machine1", CHINA),
            ("machine2", INDIA),
            ("machine3", CHINA),
            ("machine4", CHINA),
            ("machine5", INDIA),
        ],
        {"machine1": 10, "machine2": 5, "machine3": 10, "machine4": 10, "machine5": 5},
        id="the region with more matching pods scores higher",
    ),
    pytest.param(
        pod("p", labels=S1, affinity=AFFINITY3),
        [on("machine1", S1), on("machine2", S2), on("machine3", S1)],
        [("machine1", CHINA), ("machine2", INDIA), ("machine3", AZ1)],
        {"machine1": 2, "machine2": 10, "machine3": 0},
        id="different operators and values, including some match failures",
    ),
    pytest.param(
        pod("p", labels=S2),
        [
            on("machine1", S1, STAY_WITH_S1_IN_REGION),
            on("machine2", S2, STAY_WITH_S2_IN_REGION),
        ],
        [("machine1", CHINA), ("machine2", INDIA), ("machine3", AZ1)],
        {"machine1": 0, "machine2": 10, "machine3": 0},
        id="affinity symmetry: existing pods' preferred affinity",
    ),
    pytest.param(
        pod("p", labels=S1),
        [on("machine1", S1, HARD_AFFINITY), on("machine2", S2, HARD_AFFINITY)],
        [("machine1", CHINA), ("machine2", INDIA), ("machine3", AZ1)],
        {"machine1": 10, "machine2": 10, "machine3": 0},
        id="affinity symmetry: existing pods' required affinity",
    ),
    pytest.param(
        pod("p", labels=S1, affinity=AWAY_FROM_S1_IN_AZ),
        [on("machine1", S1), on("machine2", S2)],
        [("machine1", AZ1), ("machine2", CHINA)],
        {"machine1": 0, "machine2": 10},
        id="anti-affinity: node without matching pods scores high",
    ),
    pytest.param(
        pod("p", labels=S1, affinity=AWAY_FROM_S1_IN_AZ),
        [on("machine1", S1), on("machine2", S1)],
        [("machine1", AZ1), ("machine2", CHINA)],
        {"machine1": 0, "machine2": 10},
        id="anti-affinity: node without the topology key scores high",
    ),
    pytest.param(
        pod("p", labels=S1, affinity=AWAY_FROM_S1_IN_AZ),
        [
            pod("a", node_name="machine1", labels=S1),
            pod("b", node_name="machine1", labels=S1),
            on("machine2", S2),
        ],
        [("machine1", AZ1), ("machine2", INDIA)],
        {"machine1": 0, "machine2": 10},
        id="anti-affinity: the node with more matching pods scores lower",
    ),
    pytest.param(
        pod("p", labels=S2),
        [on("machine1", S1, AWAY_FROM_S2_IN_AZ), on("machine2", S2, AWAY_FROM_S1_IN_AZ)],
        [("machine1", AZ1), ("machine2", AZ2)],
        {"machine1": 0, "machine2": 10},
        id="anti-affinity symmetry: existing pods' preferred anti-affinity",
    ),
    pytest.param(
        pod("p", labels=S1, affinity=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
        [on("machine1", S1), on("machine2", S1)],
        [("machine1", CHINA), ("machine2", AZ1)],
        {"machine1": 10, "machine2": 0},
        id="affinity and anti-affinity: preferred terms of both kinds",
    ),
    pytest.param(
        pod("p", labels=S1, affinity=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
        [
            pod("a", node_name="machine1", labels=S1),
            pod("b", node_name="machine1", labels=S1),
            on("machine2", S1),
            pod("c", node_name="machine3", labels=S1),
            pod("d", node_name="machine3", labels=S1),
            on("machine4", S1),
            on("machine5", S1),
        ],
        [
            ("machine1", CHINA_AZ1),
            ("machine2", INDIA),
            ("machine3", CHINA),
            ("machine4", CHINA),
            ("machine5", INDIA),
        ],
        {"machine1": 10, "machine2": 4, "machine3": 10, "machine4": 10, "machine5": 4},
        id="affinity and anti-affinity: replicas of one service",
    ),
    pytest.param(
        pod("p", labels=S1, affinity=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
        [
            on("machine1", S1),
            on("machine2", S2),
            on("machine3", None, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
            on("machine4", None, AWAY_FROM_S1_IN_AZ),
        ],
        [("machine1", CHINA), ("machine2", AZ1), ("machine3", INDIA), ("machine4", AZ2)],
        {"machine1": 10, "machine2": 0, "machine3": 10, "machine4": 0},
        id="affinity, anti-affinity and symmetry together",
    ),
    # Beyond upstream's tables.
    pytest.param(
        pod("p", labels=S2),
        [on("machine1", S1, AWAY_FROM_S2_IN_AZ)],
        [("machine1", AZ1), ("machine2", AZ2), ("machine3", {})],
        {"machine1": 0, "machine2": 10, "machine3": 10},
        id="negative counts: untouched nodes count 0 and score above the minimum",
    ),
    pytest.param(
        pod(
            "p",
            labels=S1,
            affinity={
                "podAffinity": {
                    PREFERRED: [
                        weighted(3, expr("security", "In", "S1"), topology="region"),
                        weighted(7, expr("security", "In", "S1"), topology="az"),
                    ]
                }
            },
        ),
        [on("machine1", S1)],
        [("machine1", CHINA_AZ1), ("machine2", CHINA), ("machine3", AZ1), ("machine4", INDIA)],
        {"machine1": 10, "machine2": 3, "machine3": 7, "machine4": 0},
        id="a node adds the weights of every domain it belongs to",
    ),
]


@pytest.mark.parametrize(("incoming", "pods", "nodes", "expected"), PRIORITY_CASES)
def test_inter_pod_affinity_priority(
    incoming: dict[str, Any],
    pods: list[dict[str, Any]],
    nodes: list[tuple[str, dict[str, str]]],
    expected: dict[str, int],
) -> None:
    assert scores(incoming, pods, nodes) == expected


def test_pods_on_nodes_that_are_not_candidates_still_weigh_their_domain() -> None:
    result = scores(
        pod("p", labels=S1, affinity=STAY_WITH_S1_IN_REGION),
        [on("filtered-out", S1)],
        [("machine1", CHINA), ("machine2", INDIA)],
        not_scored=[("filtered-out", CHINA)],
    )
    assert result == {"machine1": 10, "machine2": 0}


HARD_POD_AFFINITY = {
    "podAffinity": {REQUIRED: [term(expr("service", "In", "S1"), topology="region")]}
}


@pytest.mark.parametrize(
    ("hard_weight", "expected"),
    [
        pytest.param(
            1,
            {"machine1": 10, "machine2": 10, "machine3": 0},
            id="hard pod affinity symmetry weighs 1 by default: matching nodes score high",
        ),
        pytest.param(
            0,
            {"machine1": 0, "machine2": 0, "machine3": 0},
            id="hard pod affinity symmetry weight 0 turns it off",
        ),
    ],
)
def test_hard_pod_affinity_symmetric_weight(hard_weight: int, expected: dict[str, int]) -> None:
    result = scores(
        pod("p", labels={"service": "S1"}),
        [on("machine1", None, HARD_POD_AFFINITY), on("machine2", None, HARD_POD_AFFINITY)],
        [("machine1", CHINA), ("machine2", INDIA), ("machine3", AZ1)],
        hard_weight=hard_weight,
    )
    assert result == expected


def test_hard_weight_scales_against_preferred_weights() -> None:
    # machine1: hard symmetry 10; machine2: preferred symmetry 5 -> 5 / 10 of the top.
    preferred = {
        "podAffinity": {PREFERRED: [weighted(5, expr("service", "In", "S1"), topology="region")]}
    }
    result = scores(
        pod("p", labels={"service": "S1"}),
        [on("machine1", None, HARD_POD_AFFINITY), on("machine2", None, preferred)],
        [("machine1", CHINA), ("machine2", INDIA)],
        hard_weight=10,
    )
    assert result == {"machine1": 10, "machine2": 5}


# -- end to end through decide() -------------------------------------------------------

ZONE = "topology.kubernetes.io/zone"


def test_decide_prefers_the_zone_of_preferred_peers() -> None:
    state = cluster(
        [
            node("a1", labels={ZONE: "a"}),
            node("b1", labels={ZONE: "b"}),
            node("c1", labels={ZONE: "c"}),
        ],
        [pod("db-0", node_name="b1", labels={"app": "db"})],
    )
    incoming = pod(
        "api",
        affinity={
            "podAffinity": {PREFERRED: [weighted(10, expr("app", "In", "db"), topology=ZONE)]}
        },
    )
    decision = decide(incoming, state, policy([], [(names.INTER_POD_AFFINITY, 2)]))
    assert decision.node == "b1"
    assert {
        name: s.priorities[names.INTER_POD_AFFINITY] for name, s in decision.scores.items()
    } == {
        "a1": 0,
        "b1": 10,
        "c1": 0,
    }
    assert decision.scores["b1"].total == 20


def test_decide_avoids_nodes_of_pods_that_prefer_to_be_apart() -> None:
    loner = {
        "podAntiAffinity": {PREFERRED: [weighted(50, expr("app", "In", "web"), topology=ZONE)]}
    }
    state = cluster(
        [node("a1", labels={ZONE: "a"}), node("b1", labels={ZONE: "b"})],
        [pod("batch", node_name="a1", labels={"app": "batch"}, affinity=loner)],
    )
    decision = decide(
        pod("web", labels={"app": "web"}),
        state,
        policy([], [(names.INTER_POD_AFFINITY, 1)]),
    )
    assert decision.node == "b1"
    assert decision.scores["a1"].priorities[names.INTER_POD_AFFINITY] == 0
    assert decision.scores["b1"].priorities[names.INTER_POD_AFFINITY] == 10
