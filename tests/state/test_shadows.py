"""Shadow policies at work (state/shadows.py): which pods a shadow decides, how its
decisions are compared with the active policy's, and what its window counts."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from builders import cluster, cluster_picture, node, pod, policy
from fakes import FakeClock
from policy_scheduler.engine.algorithm import Decision, Scheduler
from policy_scheduler.engine.compiler import CompiledPolicy, CompiledPredicate, compile_policy
from policy_scheduler.objects import Pod, parse_pod
from policy_scheduler.policy import ShadowSettings, parse_policy
from policy_scheduler.state.shadows import (
    DIFFERENT_NODE,
    ERROR,
    NEITHER_PLACED,
    ONLY_ACTIVE_PLACED,
    ONLY_SHADOW_PLACED,
    OVER_BUDGET,
    SAME_NODE,
    SAMPLED_OUT,
    Comparison,
    ShadowRunner,
    ShadowSampler,
    ShadowWindow,
    sampled,
)


def compiled(name: str, **spec: Any) -> CompiledPolicy:
    body = policy(**spec)
    body["metadata"]["name"] = name
    return compile_policy(parse_policy(body))


def prefer(name: str, presence: bool, **spec: Any) -> CompiledPolicy:
    """A policy that prefers nodes with (or without) the disk=ssd label."""
    preference = {"labelPreference": {"label": "disk", "presence": presence}}
    return compiled(
        name, priorities=[{"name": "PreferDisk", "weight": 1, "argument": preference}], **spec
    )


def parsed_pod(name: str, uid: str | None = None) -> Pod:
    """A pending pod with a known uid (sampling goes by uid)."""
    raw = pod(name)
    raw["metadata"]["uid"] = uid or f"uid-{name}"
    return parse_pod(raw)


def two_nodes() -> Any:
    return cluster([node("ssd", labels={"disk": "ssd"}), node("hdd")])


# -- comparisons -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("active", "shadow", "result", "differs"),
    [
        pytest.param("n1", "n1", SAME_NODE, False, id="same-node"),
        pytest.param("n1", "n2", DIFFERENT_NODE, True, id="different-node"),
        pytest.param("n1", None, ONLY_ACTIVE_PLACED, True, id="only-active"),
        pytest.param(None, "n2", ONLY_SHADOW_PLACED, True, id="only-shadow"),
        pytest.param(None, None, NEITHER_PLACED, False, id="neither"),
    ],
)
def test_a_comparison_names_what_the_two_policies_did(
    active: str | None, shadow: str | None, result: str, differs: bool
) -> None:
    comparison = Comparison("default/web", active, shadow)
    assert (comparison.result, comparison.differs) == (result, differs)


def test_a_difference_shows_both_nodes_and_totals_and_omits_what_is_unknown() -> None:
    assert Comparison("default/web", "a", "b", 30, 12).to_json() == {
        "pod": "default/web",
        "activeNode": "a",
        "shadowNode": "b",
        "activeTotal": 30,
        "shadowTotal": 12,
    }
    assert Comparison("default/web", "a", None, None, None).to_json() == {
        "pod": "default/web",
        "activeNode": "a",
    }


# -- the window ------------------------------------------------------------------------------


def test_the_window_counts_each_pods_latest_comparison_once() -> None:
    window = ShadowWindow()
    window.add("u1", Comparison("ns/a", None, None))  # unschedulable for both at first
    window.add("u2", Comparison("ns/b", "n1", "n2"))
    window.add("u1", Comparison("ns/a", "n1", "n1"))  # retried: both placed it on n1
    assert len(window) == 2
    assert window.counts() == {
        SAME_NODE: 1,
        DIFFERENT_NODE: 1,
        ONLY_ACTIVE_PLACED: 0,
        ONLY_SHADOW_PLACED: 0,
        NEITHER_PLACED: 0,
    }
    # The retried pod is now the newest entry.
    assert [c.pod for c in window.newest_first()] == ["ns/a", "ns/b"]


def test_the_window_forgets_its_oldest_pods_beyond_its_size() -> None:
    window = ShadowWindow(size=3)
    for i in range(5):
        window.add(f"u{i}", Comparison(f"ns/p{i}", "n1", "n2" if i < 2 else "n1"))
    # p0 and p1 (the two that differed) fell out.
    assert len(window) == 3
    assert window.counts()[SAME_NODE] == 3 and window.counts()[DIFFERENT_NODE] == 0
    assert window.differences() == []


def test_the_status_lists_the_latest_differences_newest_first() -> None:
    window = ShadowWindow()
    for i in range(15):
        window.add(f"u{i}", Comparison(f"ns/p{i}", "n1", "n2" if i % 3 else "n1", 5, 7))
    status = window.to_status()
    assert (status["compared"], status["sameNode"], status["differentNode"]) == (15, 5, 10)
    assert [d["pod"] for d in status["recentDifferences"]] == [
        f"ns/p{i}" for i in (14, 13, 11, 10, 8, 7, 5, 4, 2, 1)
    ]
    assert status["recentDifferences"][0] == {
        "pod": "ns/p14",
        "activeNode": "n1",
        "shadowNode": "n2",
        "activeTotal": 5,
        "shadowTotal": 7,
    }


# -- sampling and budget ---------------------------------------------------------------------

UIDS = [f"uid-{i}" for i in range(1000)]


def test_every_pod_is_sampled_at_100_percent() -> None:
    assert all(sampled(uid, 100) for uid in UIDS)


@pytest.mark.parametrize("percentage", [1, 10, 30, 50, 90])
def test_a_percentage_samples_about_that_share_of_pods_always_the_same_ones(
    percentage: int,
) -> None:
    chosen = {uid for uid in UIDS if sampled(uid, percentage)}
    assert abs(len(chosen) - 10 * percentage) <= 25  # of 1000 fixed uids: no chance involved
    # A pod is compared at every attempt or never; raising the share keeps those pods.
    assert chosen == {uid for uid in UIDS if sampled(uid, percentage)}
    assert chosen <= {uid for uid in UIDS if sampled(uid, min(100, percentage + 10))}


def test_the_budget_allows_a_seconds_worth_then_refills_at_its_rate() -> None:
    clock = FakeClock()
    sampler = ShadowSampler(ShadowSettings(maxDecisionsPerSecond=2), clock)
    assert [sampler.admit(uid) for uid in ("a", "b", "c")] == [None, None, OVER_BUDGET]
    clock.now += 0.5  # one token back
    assert [sampler.admit(uid) for uid in ("d", "e")] == [None, OVER_BUDGET]
    clock.now += 60  # a long pause refills a second's worth, not a minute's
    assert [sampler.admit(uid) for uid in ("f", "g", "h")] == [None, None, OVER_BUDGET]


def test_pods_outside_the_share_cost_no_budget() -> None:
    clock = FakeClock()
    sampler = ShadowSampler(ShadowSettings(percentageOfPods=50, maxDecisionsPerSecond=1), clock)
    outside = next(uid for uid in UIDS if not sampled(uid, 50))
    inside = next(uid for uid in UIDS if sampled(uid, 50))
    assert sampler.admit(outside) == SAMPLED_OUT
    assert sampler.admit(inside) is None
    assert sampler.admit(inside) == OVER_BUDGET


# -- deciding with shadows -------------------------------------------------------------------


async def decide_both(
    runner: ShadowRunner, active: CompiledPolicy, shadows: list[CompiledPolicy], name: str
) -> tuple[Decision, list[str]]:
    state = two_nodes()
    pod = parsed_pod(name, f"uid-{name}")
    decision = await Scheduler(explain=False).schedule(pod, state, active)
    attempts = await runner.decide(pod, state, shadows)
    return decision, runner.compare(attempts, decision)


async def test_shadows_decide_the_same_pod_and_are_compared_with_the_active_decision() -> None:
    runner = ShadowRunner(sample=False)
    active, same, other = prefer("ssd", True), prefer("also-ssd", True), prefer("hdd", False)
    decision, results = await decide_both(runner, active, [same, other], "web")
    assert decision.node == "ssd"
    assert results == [SAME_NODE, DIFFERENT_NODE]
    [difference] = runner.window(other).differences()
    assert (difference.pod, difference.active_node, difference.shadow_node) == (
        "default/web",
        "ssd",
        "hdd",
    )
    assert (difference.active_total, difference.shadow_total) == (10, 10)
    assert len(runner.window(same)) == 1 and runner.window(same).differences() == []


async def test_a_shadow_changes_nothing_in_the_cluster() -> None:
    state = two_nodes()
    before = cluster_picture(state)
    runner = ShadowRunner(sample=False)
    [attempt] = await runner.decide(parsed_pod("web"), state, [prefer("hdd", False)])
    assert attempt.decision is not None and attempt.decision.node == "hdd"
    assert cluster_picture(state) == before


async def test_a_shadow_never_moves_the_active_policys_round_robin() -> None:
    # No priorities: every node ties, and the active policy takes them in turn.
    active, shadow = compiled("active", priorities=[]), compiled("shadow", priorities=[])
    state = cluster([node("n1"), node("n2"), node("n3")])
    pods = [parsed_pod(f"p{i}", f"u{i}") for i in range(4)]
    alone = Scheduler(explain=False)
    expected = [(await alone.schedule(p, state, active)).node for p in pods]
    beside, runner = Scheduler(explain=False), ShadowRunner(sample=False)
    chosen = []
    for p in pods:
        chosen.append((await beside.schedule(p, state, active)).node)
        await runner.decide(p, state, [shadow])
    assert chosen == expected == ["n1", "n2", "n3", "n1"]


async def test_a_failing_shadow_is_an_error_and_the_others_still_decide() -> None:
    def boom(*_: Any) -> tuple[str, ...]:
        raise RuntimeError("a bug in a predicate")

    broken = replace(prefer("broken", False), predicates=(CompiledPredicate("Boom", boom),))
    runner = ShadowRunner(sample=False)
    decision, results = await decide_both(
        runner, prefer("ssd", True), [broken, prefer("hdd", False)], "web"
    )
    assert decision.node == "ssd"
    assert results == [ERROR, DIFFERENT_NODE]
    assert len(runner.window(broken)) == 0


async def test_sampled_out_and_over_budget_pods_are_not_compared() -> None:
    clock = FakeClock()
    runner = ShadowRunner(clock=clock)
    shadow = prefer("hdd", False, mode="Shadow", shadow={"maxDecisionsPerSecond": 1})
    active = prefer("ssd", True)
    _, first = await decide_both(runner, active, [shadow], "a")
    _, second = await decide_both(runner, active, [shadow], "b")
    assert (first, second) == ([DIFFERENT_NODE], [OVER_BUDGET])
    assert len(runner.window(shadow)) == 1
    half = prefer("half", False, mode="Shadow", shadow={"percentageOfPods": 50})
    outside = next(i for i in range(100) if not sampled(f"uid-p{i}", 50))
    _, results = await decide_both(runner, active, [half], f"p{outside}")
    assert results == [SAMPLED_OUT]


async def test_a_new_version_of_a_shadow_starts_an_empty_window() -> None:
    runner = ShadowRunner(sample=False)
    active, shadow = prefer("ssd", True), prefer("trial", False)
    await decide_both(runner, active, [shadow], "web")
    assert len(runner.window(shadow)) == 1
    updated = prefer("trial", True)
    assert len(runner.window(updated)) == 0
    await decide_both(runner, active, [updated], "api")
    assert [c.result for c in runner.window(updated).newest_first()] == [SAME_NODE]
    runner.forget("trial")
    assert len(runner.window(updated)) == 0
