"""Extenders in a decision: who is asked, in what order, and what their answers change.

The client is :class:`fakes.FakeExtenders` (scripted, in memory); the wire format and the
HTTP client are tested in tests/extenders/, and the whole path over real HTTP there and
in tests/cli and tests/e2e.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from builders import cluster, container, decide, node, parsed_pod, pod, policy
from fakes import FakeExtenders
from policy_scheduler.engine.algorithm import Decision, Scheduler
from policy_scheduler.engine.compiler import compile_policy
from policy_scheduler.engine.extenders import (
    ExtenderError,
    FilterReply,
    MetaVictims,
    Victims,
    narrow_victims,
)
from policy_scheduler.objects import Node, Pod
from policy_scheduler.policy import parse_policy

A, B, C = "http://a/scheduler", "http://b/scheduler", "http://c/scheduler"


def ext(url: str, **fields: Any) -> dict[str, Any]:
    return {"urlPrefix": url, **fields}


def with_extenders(
    *extenders: dict[str, Any], priorities: list[Any] | None = None
) -> dict[str, Any]:
    return policy(
        ["PodFitsResources"],
        priorities if priorities is not None else [],
        extenders=list(extenders),
    )


def passes(*names: str, failed: dict[str, str] | None = None) -> Any:
    return lambda pod_, nodes: FilterReply(names, failed or {})


def fails(detail: str, url: str = A) -> Any:
    def answer(*args: Any) -> Any:
        raise ExtenderError(url, "filter", detail)

    return answer


def run(
    pod_obj: dict[str, Any],
    nodes: Sequence[str | dict[str, Any]],
    policy_obj: dict[str, Any],
    fake: FakeExtenders,
    *,
    explain: bool = True,
) -> Decision:
    state = cluster([n if isinstance(n, dict) else node(n) for n in nodes])
    return decide(pod_obj, state, policy_obj, Scheduler(explain=explain, extenders=fake))


# -- filter --------------------------------------------------------------------------


def test_a_filter_narrows_the_feasible_nodes_and_its_reasons_count() -> None:
    fake = FakeExtenders({("filter", A): passes("n1", "n3", failed={"n2": "no free GPU"})})
    decision = run(pod("p"), ["n1", "n2", "n3"], with_extenders(ext(A, filterVerb="f")), fake)
    assert decision.feasible == ["n1", "n3"]
    assert decision.failed == {"n2": ["no free GPU"]}
    assert decision.node in ("n1", "n3")
    assert fake.calls == [("filter", A, ("n1", "n2", "n3"))]


def test_extender_reasons_join_the_summary_message() -> None:
    fake = FakeExtenders({("filter", A): passes(failed={"n2": "no free GPU", "n3": "no free GPU"})})
    small = node("n1", cpu="100m")
    decision = run(
        pod("p", requests={"cpu": "1"}),
        [small, "n2", "n3"],
        with_extenders(ext(A, filterVerb="f")),
        fake,
    )
    assert decision.node is None
    assert decision.error == ""
    assert decision.message == "0/3 nodes are available: 1 Insufficient cpu, 2 no free GPU."
    # Only the nodes the predicates passed were sent.
    assert fake.calls == [("filter", A, ("n2", "n3"))]


def test_filters_run_in_policy_order_and_stop_once_no_node_is_left() -> None:
    fake = FakeExtenders(
        {
            ("filter", A): passes("n1", "n2", failed={"n3": "a says no"}),
            ("filter", B): passes(failed={"n1": "b says no", "n2": "b says no"}),
        }
    )
    spec = with_extenders(ext(A, filterVerb="f"), ext(B, filterVerb="f"), ext(C, filterVerb="f"))
    decision = run(pod("p"), ["n1", "n2", "n3"], spec, fake)
    assert fake.calls == [("filter", A, ("n1", "n2", "n3")), ("filter", B, ("n1", "n2"))]
    assert decision.message == "0/3 nodes are available: 1 a says no, 2 b says no."


@pytest.mark.parametrize(
    ("extender", "pod_obj", "asked"),
    [
        pytest.param(ext(A, filterVerb="f"), pod("p"), True, id="no-managed-resources"),
        pytest.param(ext(A), pod("p"), False, id="no-filter-verb"),
        pytest.param(
            ext(A, filterVerb="f", managedResources=[{"name": "example.com/gpu"}]),
            pod("p", requests={"cpu": "1"}),
            False,
            id="managed-not-requested",
        ),
        pytest.param(
            ext(A, filterVerb="f", managedResources=[{"name": "example.com/gpu"}]),
            pod("p", requests={"example.com/gpu": "1"}),
            True,
            id="managed-requested",
        ),
        pytest.param(
            ext(A, filterVerb="f", managedResources=[{"name": "example.com/gpu"}]),
            pod("p", limits={"example.com/gpu": "1"}),
            True,
            id="managed-limit-only",
        ),
        pytest.param(
            ext(A, filterVerb="f", managedResources=[{"name": "example.com/gpu"}]),
            pod("p", requests={"example.com/gpu": "0"}),
            True,
            id="managed-requested-at-zero",
        ),
        pytest.param(
            ext(A, filterVerb="f", managedResources=[{"name": "example.com/gpu"}]),
            pod(
                "p",
                init_containers=[container({"example.com/gpu": "1"}, name="init")],
            ),
            True,
            id="managed-in-an-init-container",
        ),
        pytest.param(
            ext(A, filterVerb="f", managedResources=[{"name": "example.com/gpu"}]),
            pod("p", requests={"example.com/fpga": "1"}),
            False,
            id="another-extended-resource",
        ),
    ],
)
def test_who_is_asked(extender: dict[str, Any], pod_obj: dict[str, Any], asked: bool) -> None:
    fake = FakeExtenders()
    gpu = {"cpu": "4", "memory": "8Gi", "pods": 110, "example.com/gpu": 4, "example.com/fpga": 4}
    decision = run(pod_obj, [node("n1", allocatable=gpu)], with_extenders(extender), fake)
    assert decision.node == "n1"
    assert bool(fake.calls) is asked


def test_extenders_are_not_asked_when_no_node_passed_the_predicates() -> None:
    fake = FakeExtenders()
    decision = run(
        pod("p", requests={"cpu": "8"}), ["n1"], with_extenders(ext(A, filterVerb="f")), fake
    )
    assert decision.message == "0/1 nodes are available: 1 Insufficient cpu."
    assert fake.calls == []


@pytest.mark.parametrize("explain", [True, False], ids=["explain", "operator"])
def test_a_filter_error_fails_the_attempt_naming_the_extender(explain: bool) -> None:
    fake = FakeExtenders({("filter", A): fails("HTTP 500 from http://a/scheduler/f")})
    decision = run(
        pod("p"), ["n1", "n2"], with_extenders(ext(A, filterVerb="f")), fake, explain=explain
    )
    expected = 'extender "http://a/scheduler" filter failed: HTTP 500 from http://a/scheduler/f'
    assert (decision.node, decision.error, decision.message) == (None, expected, expected)
    assert decision.feasible == []
    assert decision.hints == []


def test_an_ignorable_extender_that_fails_is_skipped() -> None:
    fake = FakeExtenders({("filter", A): fails("no reply within 5s"), ("filter", B): passes("n2")})
    spec = with_extenders(ext(A, filterVerb="f", ignorable=True), ext(B, filterVerb="f"))
    decision = run(pod("p"), ["n1", "n2"], spec, fake)
    assert decision.node == "n2"
    assert decision.error == ""
    assert decision.extender_errors == [
        'extender "http://a/scheduler" filter failed: no reply within 5s (ignorable: skipped)'
    ]
    assert [call[:2] for call in fake.calls] == [("filter", A), ("filter", B)]


def test_a_node_the_extender_was_not_sent_is_an_error() -> None:
    fake = FakeExtenders({("filter", A): passes("n1", "ghost")})
    decision = run(pod("p"), ["n1", "n2"], with_extenders(ext(A, filterVerb="f")), fake)
    assert decision.error == (
        'extender "http://a/scheduler" filter failed: it returned node "ghost", '
        "which was not in the list it was sent"
    )


def test_the_extenders_order_is_kept_and_a_repeated_name_counts_once() -> None:
    fake = FakeExtenders({("filter", A): passes("n3", "n1", "n3")})
    decision = run(pod("p"), ["n1", "n2", "n3"], with_extenders(ext(A, filterVerb="f")), fake)
    assert decision.feasible == ["n3", "n1"]


def test_nodes_an_extender_refused_get_no_fit_hint() -> None:
    # The reason reads like a predicate's, but no predicate can verify a change for it.
    fake = FakeExtenders({("filter", A): passes(failed={"roomy": "Insufficient cpu"})})
    nodes = [node("tight", cpu="1"), node("roomy", cpu="8")]
    decision = run(
        pod("p", requests={"cpu": "2"}), nodes, with_extenders(ext(A, filterVerb="f")), fake
    )
    assert decision.message == "0/2 nodes are available: 2 Insufficient cpu."
    assert [(h.change, h.nodes) for h in decision.hints] == [("cpu request <= 1", ("tight",))]


# -- prioritize ----------------------------------------------------------------------


def scores(**by_node: int) -> Any:
    return lambda pod_, nodes: list(by_node.items())


def test_weight_times_score_is_added_to_the_totals() -> None:
    fake = FakeExtenders({("prioritize", A): scores(n1=1, n2=5)})
    spec = with_extenders(ext(A, prioritizeVerb="p", weight=2), priorities=[("EqualPriority", 3)])
    decision = run(pod("p"), ["n1", "n2"], spec, fake)
    assert decision.node == "n2"
    assert {name: (s.total, s.extenders) for name, s in decision.scores.items()} == {
        "n1": (3 + 2 * 1, {A: 1}),
        "n2": (3 + 2 * 5, {A: 5}),
    }


@pytest.mark.parametrize("explain", [True, False], ids=["explain", "operator"])
def test_the_extender_score_decides_without_explaining(explain: bool) -> None:
    fake = FakeExtenders({("prioritize", A): scores(n2=1)})
    spec = with_extenders(ext(A, prioritizeVerb="p", weight=1))
    decisions = {
        run(pod(f"p{i}"), ["n1", "n2", "n3"], spec, fake, explain=explain).node for i in range(3)
    }
    assert decisions == {"n2"}


def test_raw_scores_as_listed_summed_per_host_unknown_hosts_ignored() -> None:
    reply = [("n1", 4), ("n1", 3), ("elsewhere", 10), ("n2", -2)]
    fake = FakeExtenders({("prioritize", A): lambda pod_, nodes: reply})
    spec = with_extenders(ext(A, prioritizeVerb="p", weight=1))
    decision = run(pod("p"), ["n1", "n2", "n3"], spec, fake)
    assert {n: s.extenders for n, s in decision.scores.items()} == {
        "n1": {A: 7},
        "n2": {A: -2},
        "n3": {A: 0},
    }
    assert decision.node == "n1"


def test_a_prioritize_error_is_ignored_and_the_others_decide() -> None:
    def broken(*args: Any) -> Any:
        raise ExtenderError(A, "prioritize", "HTTP 503 from http://a/scheduler/p")

    fake = FakeExtenders({("prioritize", A): broken, ("prioritize", B): scores(n1=2)})
    spec = with_extenders(
        ext(A, prioritizeVerb="p", weight=5), ext(B, prioritizeVerb="p", weight=1)
    )
    decision = run(pod("p"), ["n1", "n2"], spec, fake)
    assert decision.node == "n1"
    assert decision.error == ""
    assert decision.extender_errors == [
        'extender "http://a/scheduler" prioritize failed: HTTP 503 from '
        "http://a/scheduler/p (prioritize errors are ignored)"
    ]
    assert decision.scores["n1"].extenders == {B: 2}


def test_a_lone_feasible_node_is_not_prioritized() -> None:
    fake = FakeExtenders()
    spec = with_extenders(ext(A, filterVerb="f", prioritizeVerb="p", weight=1))
    decision = run(pod("p"), ["n1"], spec, fake)
    assert decision.node == "n1"
    assert fake.calls == [("filter", A, ("n1",))]


def test_filter_then_prioritize_on_what_passed() -> None:
    fake = FakeExtenders({("filter", A): passes("n2", "n3")})
    spec = with_extenders(
        ext(A, filterVerb="f"), ext(B, prioritizeVerb="p", weight=1, filterVerb="f")
    )
    run(pod("p"), ["n1", "n2", "n3"], spec, fake)
    assert fake.calls == [
        ("filter", A, ("n1", "n2", "n3")),
        ("filter", B, ("n2", "n3")),
        ("prioritize", B, ("n2", "n3")),
    ]


def test_without_a_client_extenders_are_left_out() -> None:
    spec = with_extenders(ext(A, filterVerb="f"))
    decision = decide(pod("p"), cluster([node("n1")]), spec, Scheduler())
    assert decision.node == "n1"


# -- preemption ----------------------------------------------------------------------


def _victims_setup() -> tuple[Pod, Any, dict[str, Victims]]:
    state = cluster(
        [node("n1"), node("n2")],
        [pod("v1", node_name="n1"), pod("v2", node_name="n1"), pod("v3", node_name="n2")],
    )
    on = {name: list(info.pods.values()) for name, info in state.nodes.items()}
    candidates = {
        "n1": Victims(tuple(on["n1"]), 1),
        "n2": Victims(tuple(on["n2"])),
    }
    return parsed_pod("preemptor"), state, candidates


def extenders_of(*extenders: dict[str, Any]) -> Any:
    return compile_policy(parse_policy(with_extenders(*extenders))).extenders


def test_preempting_extenders_narrow_the_candidates_in_turn() -> None:
    preemptor, state, candidates = _victims_setup()
    v1 = candidates["n1"].pods[0]
    fake = FakeExtenders(
        {
            ("preempt", A): lambda pod_, c: {"n1": MetaVictims((v1.uid,), 0)},
        }
    )
    kept, ignored = asyncio.run(
        narrow_victims(
            fake,
            extenders_of(ext(A, preemptVerb="pre"), ext(B, preemptVerb="pre"), ext(C)),
            preemptor,
            candidates,
            state,
        )
    )
    assert kept == {"n1": Victims((v1,), 0)}
    assert ignored == []
    assert fake.calls == [("preempt", A, ("n1", "n2")), ("preempt", B, ("n1",))]


def test_a_victim_the_node_does_not_hold_is_an_error() -> None:
    preemptor, state, candidates = _victims_setup()
    fake = FakeExtenders({("preempt", A): lambda pod_, c: {"n2": MetaVictims(("nope",))}})
    with pytest.raises(ExtenderError) as info:
        asyncio.run(
            narrow_victims(
                fake, extenders_of(ext(A, preemptVerb="p")), preemptor, candidates, state
            )
        )
    assert str(info.value) == (
        'extender "http://a/scheduler" preempt failed: it claims to preempt pod (UID: nope) '
        'on node "n2", but the pod is not found on that node'
    )


def test_an_ignorable_preempting_extender_that_fails_is_skipped() -> None:
    preemptor, state, candidates = _victims_setup()

    def broken(*args: Any) -> Any:
        raise ExtenderError(A, "preempt", "HTTP 500")

    fake = FakeExtenders({("preempt", A): broken, ("preempt", B): lambda pod_, c: {}})
    kept, ignored = asyncio.run(
        narrow_victims(
            fake,
            extenders_of(ext(A, preemptVerb="p", ignorable=True), ext(B, preemptVerb="p")),
            preemptor,
            candidates,
            state,
        )
    )
    assert kept == {}
    assert ignored == [
        'extender "http://a/scheduler" preempt failed: HTTP 500 (ignorable: skipped)'
    ]


def test_extenders_not_interested_in_the_preemptor_are_not_asked() -> None:
    preemptor, state, candidates = _victims_setup()
    fake = FakeExtenders()
    gpu_only = ext(A, preemptVerb="p", managedResources=[{"name": "example.com/gpu"}])
    kept, _ = asyncio.run(
        narrow_victims(fake, extenders_of(gpu_only), preemptor, candidates, state)
    )
    assert kept == candidates
    assert fake.calls == []


def test_what_the_fake_client_is_given_are_nodes() -> None:
    # The client receives the Node objects themselves (the HTTP client sends their bodies).
    seen: list[Sequence[Node]] = []

    def record(pod_: Pod, nodes: Sequence[Node]) -> FilterReply:
        seen.append(nodes)
        return FilterReply(tuple(n.name for n in nodes))

    run(
        pod("p"),
        ["n1"],
        with_extenders(ext(A, filterVerb="f")),
        FakeExtenders({("filter", A): record}),
    )
    assert [n.name for n in seen[0]] == ["n1"]
    assert b'"name":"n1"' in seen[0][0].body


def test_beside_a_score_plugin_an_extenders_score_counts_x10() -> None:
    # TaintToleration (a Score plugin, 0..100) scores both untainted nodes alike; the
    # extender's 0..10 then counts x10 (as kube-scheduler v1.17+ scales it), times its weight.
    fake = FakeExtenders({("prioritize", A): scores(n1=1, n2=5)})
    spec = with_extenders(ext(A, prioritizeVerb="p", weight=2), priorities=[("TaintToleration", 1)])
    decision = run(pod("p"), ["n1", "n2"], spec, fake)
    assert decision.node == "n2"
    totals = {name: s.total for name, s in decision.scores.items()}
    assert totals == {"n1": 100 + 2 * 10 * 1, "n2": 100 + 2 * 10 * 5}
