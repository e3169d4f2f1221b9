"""End-to-end scoring through ``decide()``: which node wins, and the scores people read.

These run the real engine (policy parsing, compilation, filter, score, select) with no
predicates, so only the priorities under test decide.
"""

from __future__ import annotations

from typing import Any

import pytest

from builders import cluster, decide, node, pod, policy
from policy_scheduler import names
from policy_scheduler.engine.algorithm import Scheduler
from policy_scheduler.objects import parse_pod

PREFER_SSD: dict[str, Any] = {
    "name": "PreferSSD",
    "weight": 2,
    "argument": {"labelPreference": {"label": "disk-ssd", "presence": True}},
}


def busy_and_idle(**busy_labels: str) -> Any:
    """Two 4-cpu / 8Gi nodes; "busy" already runs a 2-cpu / 4Gi pod."""
    return cluster(
        [node("busy", labels=busy_labels or None), node("idle")],
        [pod("running", requests={"cpu": "2", "memory": "4Gi"}, node_name="busy")],
    )


INCOMING = pod("web", requests={"cpu": "1", "memory": "1Gi"})


@pytest.mark.parametrize(
    ("priority", "winner", "scores"),
    [
        # idle: cpu (3000*10)//4000 = 7, memory 7Gi/8Gi -> 8 => 7; busy: 2 and 3 => 2
        pytest.param(
            names.LEAST_REQUESTED, "idle", {"busy": 2, "idle": 7}, id="least-requested-spreads"
        ),
        # busy: cpu 3000/4000 -> 7, memory 5Gi/8Gi -> 6 => 6; idle: 2 and 1 => 1
        pytest.param(
            names.MOST_REQUESTED, "busy", {"busy": 6, "idle": 1}, id="most-requested-packs"
        ),
    ],
)
def test_least_versus_most_requested(priority: str, winner: str, scores: dict[str, int]) -> None:
    decision = decide(INCOMING, busy_and_idle(), policy([], [priority]))
    assert decision.node == winner
    assert {n: s.priorities[priority] for n, s in decision.scores.items()} == scores


@pytest.mark.parametrize(
    ("priority", "placements"),
    [
        pytest.param(names.MOST_REQUESTED, ["a", "a", "a"], id="bin-packing-fills-one-node"),
        pytest.param(names.LEAST_REQUESTED, ["a", "b", "a"], id="spreading-alternates"),
    ],
)
def test_successive_pods_with_assumed_placements(priority: str, placements: list[str]) -> None:
    state = cluster([node("a", cpu="4"), node("b", cpu="4")])
    scheduler = Scheduler()
    chosen = []
    for i in range(len(placements)):
        decision = decide(
            pod(f"p{i}", requests={"cpu": "1", "memory": "1Gi"}),
            state,
            policy([], [priority]),
            scheduler,
        )
        assert decision.node is not None
        chosen.append(decision.node)
        # Assume the pod where it was decided, as simulate and the operator do.
        state.add_pod(
            parse_pod(pod(f"p{i}", requests={"cpu": "1", "memory": "1Gi"}, node_name=decision.node))
        )
    assert chosen == placements


def test_weighted_label_preference_beats_least_requested() -> None:
    state = busy_and_idle(**{"disk-ssd": "true"})
    decision = decide(INCOMING, state, policy([], [names.LEAST_REQUESTED, PREFER_SSD]))
    assert decision.node == "busy"
    assert decision.scores["busy"].priorities == {names.LEAST_REQUESTED: 2, "PreferSSD": 10}
    assert decision.scores["busy"].total == 1 * 2 + 2 * 10
    assert decision.scores["idle"].priorities == {names.LEAST_REQUESTED: 7, "PreferSSD": 0}
    assert decision.scores["idle"].total == 7


def test_weights_multiply_each_raw_score_before_summing() -> None:
    state = busy_and_idle(**{"disk-ssd": "true"})
    light_ssd = {**PREFER_SSD, "weight": 1}
    decision = decide(INCOMING, state, policy([], [(names.LEAST_REQUESTED, 2), light_ssd]))
    # busy: 2*2 + 10 = 14; idle: 2*7 + 0 = 14 -> a tie, the first found wins the first turn.
    assert {n: s.total for n, s in decision.scores.items()} == {"busy": 14, "idle": 14}
    assert decision.node == "busy"


def test_scores_are_raw_and_totals_are_weighted_sums() -> None:
    state = cluster(
        [
            node("n1", cpu="2", memory="4Gi", labels={"disk-ssd": "1"}),
            node("n2", cpu="8", memory="16Gi"),
            node("n3", cpu="4", memory="2Gi", taints=[{"key": "k", "effect": "PreferNoSchedule"}]),
        ],
        [pod("running", requests={"cpu": "1", "memory": "1Gi"}, node_name="n2")],
    )
    weights = {
        names.LEAST_REQUESTED: 3,
        names.BALANCED_RESOURCE_ALLOCATION: 2,
        names.TAINT_TOLERATION: 5,
        names.EQUAL: 7,
        "PreferSSD": 2,
    }
    entries: list[Any] = [(n, w) for n, w in weights.items() if n != "PreferSSD"]
    decision = decide(INCOMING, state, policy([], [*entries, PREFER_SSD]))
    assert set(decision.scores) == {"n1", "n2", "n3"}
    for score in decision.scores.values():
        assert set(score.priorities) == set(weights)
        assert all(0 <= raw <= 10 for raw in score.priorities.values())
        assert score.total == sum(weights[n] * raw for n, raw in score.priorities.items())
    assert decision.scores["n3"].priorities[names.TAINT_TOLERATION] == 0
    assert decision.scores["n1"].priorities[names.EQUAL] == 1
    best = max(decision.scores.values(), key=lambda s: s.total).total
    assert decision.scores[decision.node or ""].total == best


def test_empty_priorities_score_zero_and_ties_rotate() -> None:
    state = cluster([node("n1"), node("n2"), node("n3")])
    scheduler = Scheduler()
    chosen = []
    for i in range(4):
        decision = decide(pod(f"p{i}"), state, policy([], []), scheduler)
        assert {n: (s.total, s.priorities) for n, s in decision.scores.items()} == {
            "n1": (0, {}),
            "n2": (0, {}),
            "n3": (0, {}),
        }
        chosen.append(decision.node)
    assert chosen == ["n1", "n2", "n3", "n1"]


def test_equal_scores_rotate_like_no_priorities() -> None:
    state = cluster([node("n1"), node("n2")])
    scheduler = Scheduler()
    chosen = [
        decide(pod(f"p{i}"), state, policy([], [(names.EQUAL, 3)]), scheduler).node
        for i in range(3)
    ]
    assert chosen == ["n1", "n2", "n1"]


def test_requested_to_capacity_ratio_argument_in_a_policy() -> None:
    # A bin-packing shape: the fuller node scores higher.
    ratio = {
        "name": "BinPack",
        "weight": 1,
        "argument": {
            "requestedToCapacityRatioArguments": {
                "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}],
                "resources": [{"name": "cpu", "weight": 1}],
            }
        },
    }
    decision = decide(INCOMING, busy_and_idle(), policy([], [ratio]))
    # busy: cpu 3000/4000 -> utilization 75 -> 7; idle: 25 -> 2
    assert decision.node == "busy"
    assert {n: s.priorities["BinPack"] for n, s in decision.scores.items()} == {
        "busy": 7,
        "idle": 2,
    }
