"""Each extension point's rules, as docs/plugins.md states them, pinned by what a user sees.

The plugins are the test package's scripted ones (``ScriptA``, ``ScriptB``, ``ScriptC``:
one class under three names, every answer set by its ``pluginConfig`` args), found by
entry point. The scheduling cycle's points are run through ``simulate`` (where the pod
lands, which nodes were refused and why, each node's scores); the binding cycle's
through the operator's runtime on a fake API, on the loop's clock. Each test breaks if
the rule it names is broken: intersecting PreFilter node sets, letting the other
PreFilters run after an Unschedulable, stopping Filter at the first rejection, using
NormalizeScore's result, the 0..100 range, the weights and the x10 of legacy priorities
beside plugin scores, the first Success of PostFilter and its first rejector,
Unreserve's reverse order, Bind's Skip, Permit's 15-minute cap and its waits per plugin.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from policy_scheduler_testplugins import scripted

from builders import node
from fakes import FakeApi
from plugins.offline import pending, simulate
from plugins.test_runtime_cycles import bound, failures, scheduling, until
from policy_scheduler.engine.cluster import ClusterState
from policy_scheduler.engine.compiler import compile_policy
from policy_scheduler.engine.functions import CycleState
from policy_scheduler.engine.interface import Code
from policy_scheduler.engine.pipeline import run_post_filter
from policy_scheduler.names import MAX_PERMIT_WAIT_SECONDS
from policy_scheduler.objects import parse_pod
from policy_scheduler.policy import parse_policy
from policy_scheduler.runtime.scheduling import SchedulerRuntime

SCHEDULER = "policy-scheduler"
THREE_NODES = [node("n1", cpu="4"), node("n2", cpu="4"), node("n3", cpu="4")]


@pytest.fixture(autouse=True)
def _fresh_records() -> None:
    scripted.reset()


def scripts(
    plugins: Mapping[str, Mapping[str, Any]],
    weights: Mapping[str, int] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A policy spec enabling the scripted plugins (multiPoint, in the order given) with
    their args; only PodFitsResources and LeastRequestedPriority of the legacy catalogue,
    unless ``spec`` says otherwise."""
    weights = weights or {}
    points = {point: spec.pop(point) for point in ("bind",) if point in spec}
    enabled = [
        {"name": name, **({"weight": weights[name]} if name in weights else {})} for name in plugins
    ]
    return {
        "predicates": [{"name": "PodFitsResources"}],
        "priorities": [{"name": "LeastRequestedPriority", "weight": 1}],
        "plugins": {"multiPoint": {"enabled": enabled}, **points},
        "pluginConfig": [{"name": name, "args": dict(args)} for name, args in plugins.items()],
        # The scripted PostFilters alone (the legacy preemption's dry runs would call the
        # scripted PreFilters and Filters again, node by node).
        "disablePreemption": True,
        **spec,
    }


def decide(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    spec: Mapping[str, Any],
    objects: Sequence[Mapping[str, Any]] = THREE_NODES,
) -> dict[str, Any]:
    ran = simulate(capsys, tmp_path, [*objects, pending("p", 0)], spec)
    assert ran.code == 0, ran.err
    return ran.decisions["p"]


def calls(point: str) -> list[str]:
    """Which scripted plugins were called at ``point``, in order (once per pod and node)."""
    return [plugin for plugin, at, _, _ in scripted.SCRIPT_CALLS if at == point]


# -- PreFilter -------------------------------------------------------------------------


def test_prefilter_node_sets_intersect(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    spec = scripts(
        {"ScriptA": {"preFilterNodes": ["n1", "n2"]}, "ScriptB": {"preFilterNodes": ["n2", "n3"]}}
    )
    decision = decide(capsys, tmp_path, spec)
    assert decision["node"] == "n2"
    assert decision["feasibleNodes"] == ["n2"]


def test_prefilter_node_sets_that_share_no_node_refuse_the_pod_unresolvably(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spec = scripts(
        {
            "ScriptA": {"preFilterNodes": ["n1"]},
            "ScriptB": {"preFilterNodes": ["n3"]},
            "ScriptC": {},
        }
    )
    decision = decide(capsys, tmp_path, spec)
    assert decision["node"] is None
    assert decision["message"] == (
        "0/3 nodes are available: node(s) didn't satisfy plugin(s) [ScriptA ScriptB] "
        "simultaneously."
    )
    assert calls("PostFilter") == []  # unresolvable: no preemption is tried
    assert calls("Filter") == []


def test_a_prefilter_unschedulable_lets_the_other_prefilters_run_then_postfilter(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spec = scripts({"ScriptA": {"preFilter": "unschedulable"}, "ScriptB": {}})
    decision = decide(capsys, tmp_path, spec)
    assert decision["node"] is None
    assert decision["message"].startswith("0/3 nodes are available: ScriptA refused the pod.")
    assert calls("PreFilter") == ["ScriptA", "ScriptB"]
    assert calls("Filter") == []
    assert calls("PostFilter") == ["ScriptA", "ScriptB"]  # preemption may still help


def test_a_prefilter_unresolvable_stops_at_once_and_rules_out_postfilter(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spec = scripts({"ScriptA": {"preFilter": "unresolvable"}, "ScriptB": {}})
    decision = decide(capsys, tmp_path, spec)
    assert decision["node"] is None
    assert calls("PreFilter") == ["ScriptA"]
    assert calls("PostFilter") == []


def test_a_prefilter_skip_spares_only_that_plugins_filter(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spec = scripts(
        {
            "ScriptA": {"preFilter": "skip", "filterRejects": ["n1", "n2", "n3"]},
            "ScriptB": {"filterRejects": ["n3"]},
        }
    )
    decision = decide(capsys, tmp_path, spec)
    assert sorted(decision["feasibleNodes"]) == ["n1", "n2"]
    assert "ScriptA" not in calls("Filter")
    assert calls("Filter").count("ScriptB") == 3


def test_a_prefilter_error_fails_the_attempt_naming_the_plugin(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    decision = decide(capsys, tmp_path, scripts({"ScriptA": {"preFilter": "error"}}))
    assert decision["node"] is None
    assert decision["error"] == 'running PreFilter plugin "ScriptA": ScriptA refused the pod'


# -- Filter ----------------------------------------------------------------------------


def test_filter_stops_at_a_nodes_first_rejection(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spec = scripts({"ScriptA": {"filterRejects": ["n3"]}, "ScriptB": {"filterRejects": ["n3"]}})
    decision = decide(capsys, tmp_path, spec)
    assert decision["failedPredicates"] == {"n3": ["node(s) were refused by ScriptA"]}
    assert [n for p, at, _, n in scripted.SCRIPT_CALLS if at == "Filter" and p == "ScriptB"] == [
        "n1",
        "n2",
    ]


def test_filter_checks_every_plugin_when_asked_to(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spec = scripts(
        {"ScriptA": {"filterRejects": ["n3"]}, "ScriptB": {"filterRejects": ["n3"]}},
        alwaysCheckAllPredicates=True,
    )
    decision = decide(capsys, tmp_path, spec)
    assert decision["failedPredicates"] == {
        "n3": ["node(s) were refused by ScriptA", "node(s) were refused by ScriptB"]
    }
    assert decision["node"] in ("n1", "n2")


# -- Score -----------------------------------------------------------------------------


def test_normalize_scores_results_decide_and_weights_multiply_them(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # Raw, n2 scores best for ScriptA; inverted by its NormalizeScore, n1 does. ScriptB
    # counts twice. LeastRequestedPriority's 0..10 counts x10 beside plugin scores.
    spec = scripts(
        {
            "ScriptA": {"scores": {"n1": 10, "n2": 90}, "normalize": "invert"},
            "ScriptB": {"scores": {"n1": 5, "n2": 30}},
        },
        weights={"ScriptB": 2},
    )
    decision = decide(capsys, tmp_path, spec, THREE_NODES[:2])
    scores = decision["scores"]
    assert scores["n1"]["priorities"] == {"LeastRequestedPriority": 9, "ScriptA": 90, "ScriptB": 5}
    assert scores["n1"]["total"] == 9 * 10 + 90 + 5 * 2
    assert scores["n2"]["total"] == 9 * 10 + 10 + 30 * 2
    assert decision["node"] == "n1"


def test_weights_decide_between_two_plugins(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    plugins = {"ScriptA": {"scores": {"n1": 60}}, "ScriptB": {"scores": {"n2": 40}}}
    assert decide(capsys, tmp_path, scripts(plugins), THREE_NODES[:2])["node"] == "n1"
    scripted.reset()
    weighted = scripts(plugins, weights={"ScriptB": 2})
    assert decide(capsys, tmp_path, weighted, THREE_NODES[:2])["node"] == "n2"


@pytest.mark.parametrize(
    "args",
    [
        pytest.param({"scores": {"n1": 101}}, id="above-100"),
        pytest.param({"scores": {"n1": -1}}, id="negative"),
    ],
)
def test_a_score_outside_0_to_100_fails_the_attempt(
    args: dict[str, Any], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    decision = decide(capsys, tmp_path, scripts({"ScriptA": args}), THREE_NODES[:2])
    assert decision["node"] is None
    assert "ScriptA" in decision["error"]


def test_scores_of_0_and_100_are_in_range(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spec = scripts({"ScriptA": {"scores": {"n1": 0, "n2": 100}}})
    decision = decide(capsys, tmp_path, spec, THREE_NODES[:2])
    assert decision["node"] == "n2"
    assert decision["scores"]["n2"]["priorities"]["ScriptA"] == 100


def test_a_normalize_score_failure_fails_the_attempt_naming_the_plugin(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spec = scripts({"ScriptA": {"scores": {"n1": 10}, "normalize": "error"}})
    decision = decide(capsys, tmp_path, spec, THREE_NODES[:2])
    assert decision["node"] is None
    assert decision["error"] == (
        'running ScoreExtensionNormalize plugin "ScriptA": ScriptA cannot normalize'
    )


def test_a_prescore_skip_spares_that_plugins_score(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spec = scripts({"ScriptA": {"preScore": "skip", "scores": {"n2": 100}}, "ScriptB": {}})
    decision = decide(capsys, tmp_path, spec, THREE_NODES[:2])
    assert "ScriptA" not in calls("Score")
    assert "ScriptB" in calls("Score")
    assert decision["scores"]["n2"]["total"] == decision["scores"]["n1"]["total"]


def test_a_prescore_failure_fails_the_attempt_naming_the_plugin(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spec = scripts({"ScriptA": {"preScore": "error"}, "ScriptB": {}})
    decision = decide(capsys, tmp_path, spec, THREE_NODES[:2])
    assert decision["node"] is None
    assert decision["error"] == 'running PreScore plugin "ScriptA": ScriptA cannot score'
    assert calls("Score") == []


# -- PostFilter --------------------------------------------------------------------------


def test_postfilter_stops_at_the_first_success(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spec = scripts(
        {
            "ScriptA": {"postFilter": "unschedulable", "filterRejects": ["n1", "n2", "n3"]},
            "ScriptB": {"postFilter": "success", "postFilterNode": "n2"},
            "ScriptC": {"postFilter": "success", "postFilterNode": "n3"},
        },
    )
    decision = decide(capsys, tmp_path, spec)
    assert decision["node"] is None
    assert decision["preemption"]["node"] == "n2"
    assert calls("PostFilter") == ["ScriptA", "ScriptB"]


def test_a_postfilter_unresolvable_stops_the_point(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spec = scripts(
        {
            "ScriptA": {"postFilter": "unresolvable", "filterRejects": ["n1", "n2", "n3"]},
            "ScriptB": {"postFilter": "success", "postFilterNode": "n2"},
        },
    )
    decision = decide(capsys, tmp_path, spec)
    assert decision["node"] is None
    assert not decision.get("preemption")
    assert calls("PostFilter") == ["ScriptA"]


async def test_postfilter_names_the_first_plugin_that_could_not_help() -> None:
    spec = scripts({"ScriptA": {}, "ScriptB": {}}, predicates=[], priorities=[])
    policy = compile_policy(
        parse_policy(
            {
                "apiVersion": "policyscheduler.io/v1alpha1",
                "kind": "SchedulingPolicy",
                "metadata": {"name": "p"},
                "spec": {"schedulerName": SCHEDULER, **spec},
            }
        )
    )
    only_scripts = policy.pipeline
    assert [e.name for e in only_scripts.post_filter] == ["ScriptA", "ScriptB"]
    pod = parse_pod(pending("p", 0))
    state = CycleState(pod, ClusterState(), policy.settings)
    answer, status = await run_post_filter(only_scripts, state, pod, {"n1": ["no"]})
    assert answer is None
    assert status is not None and status.code is Code.UNSCHEDULABLE
    assert status.plugin == "ScriptA"
    assert status.reasons == ("ScriptA has nothing to offer", "ScriptB has nothing to offer")


# -- the binding cycle, in the operator's runtime ----------------------------------------


def runtime_policy(plugins: Mapping[str, Mapping[str, Any]], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "policyscheduler.io/v1alpha1",
        "kind": "SchedulingPolicy",
        "metadata": {"name": "scripted", "creationTimestamp": "2024-01-01T00:00:00Z"},
        "spec": {"schedulerName": SCHEDULER, **scripts(plugins, **spec)},
    }


def spod(name: str) -> dict[str, Any]:
    from builders import pod

    return pod(name, requests={"cpu": "100m"}, schedulerName=SCHEDULER)


async def started(
    plugins: Mapping[str, Mapping[str, Any]], **spec: Any
) -> tuple[FakeApi, SchedulerRuntime]:
    api = FakeApi()
    runtime = SchedulerRuntime(api, clock=asyncio.get_running_loop().time)
    runtime.handle("ADDED", runtime_policy(plugins, **spec))
    runtime.handle("ADDED", node("n1", cpu="4"))
    return api, runtime


@pytest.mark.looptime
async def test_a_reserve_failure_unreserves_every_reserve_plugin_in_reverse_order() -> None:
    api, runtime = await started(
        {"ScriptA": {}, "ScriptB": {"reserve": "unschedulable"}, "ScriptC": {}}
    )
    runtime.handle("ADDED", spod("p"))
    async with scheduling(runtime):
        await until(lambda: bool(failures(api, "p")), "p's FailedScheduling")
    first = scripted.SCRIPT_CALLS[: [c[1] for c in scripted.SCRIPT_CALLS].index("Unreserve") + 3]
    assert [
        (plugin, point) for plugin, point, _, _ in first if point in ("Reserve", "Unreserve")
    ] == [
        ("ScriptA", "Reserve"),
        ("ScriptB", "Reserve"),
        ("ScriptC", "Unreserve"),
        ("ScriptB", "Unreserve"),
        ("ScriptA", "Unreserve"),
    ]
    assert "p" not in bound(api)


@pytest.mark.looptime
async def test_a_bind_plugins_skip_leaves_the_binding_to_the_next() -> None:
    # DefaultBinder, a default plugin, binds first unless disabled (as in kube-scheduler).
    api, runtime = await started(
        {"ScriptA": {"bind": "skip"}, "ScriptB": {"bind": "bind"}, "ScriptC": {"bind": "bind"}},
        bind={"disabled": [{"name": "DefaultBinder"}]},
    )
    runtime.handle("ADDED", spod("p"))
    async with scheduling(runtime):
        await until(lambda: bool(scripted.SCRIPT_BINDINGS), "a plugin to bind p")
        await until(
            lambda: ("ScriptB", "PostBind", "p", "n1") in scripted.SCRIPT_CALLS,
            "PostBind after the plugin's binding",
        )
    assert scripted.SCRIPT_BINDINGS == [("ScriptB", "p", "n1")]
    assert calls("Bind") == ["ScriptA", "ScriptB"]
    assert "p" not in bound(api)  # no pods/binding call: ScriptB's answer was final


@pytest.mark.looptime
async def test_every_bind_plugin_skipping_leaves_it_to_the_default_binder() -> None:
    # Named at the Bind point, DefaultBinder comes after the scripted plugins.
    api, runtime = await started(
        {"ScriptA": {"bind": "skip"}, "ScriptB": {"bind": "skip"}},
        bind={
            "disabled": [{"name": "DefaultBinder"}],
            "enabled": [{"name": "ScriptA"}, {"name": "ScriptB"}, {"name": "DefaultBinder"}],
        },
    )
    runtime.handle("ADDED", spod("p"))
    async with scheduling(runtime):
        await until(lambda: "p" in bound(api), "the default binder to bind p")
    assert calls("Bind") == ["ScriptA", "ScriptB"]
    assert scripted.SCRIPT_BINDINGS == []


@pytest.mark.looptime
async def test_a_permit_wait_is_capped_at_15_minutes() -> None:
    api, runtime = await started({"ScriptA": {"permit": "wait", "permitWaitSeconds": 3600}})
    runtime.handle("ADDED", spod("p"))
    loop = asyncio.get_running_loop()
    start = loop.time()
    async with scheduling(runtime):
        timed_out = await until(lambda: bool(failures(api, "p")), "p's wait to end", timeout=3700)
    assert MAX_PERMIT_WAIT_SECONDS == 900
    assert 900 <= timed_out - start < 905
    assert failures(api, "p")[0] == (
        "ScriptA: rejected due to timeout after waiting 15m0s at plugin ScriptA"
    )


@pytest.mark.looptime
async def test_a_pod_two_plugins_hold_waits_until_both_allow_it() -> None:
    api, runtime = await started({"ScriptA": {"permit": "wait"}, "ScriptB": {"permit": "wait"}})
    runtime.handle("ADDED", spod("p"))
    waiting_pods = runtime.world.handle.waiting
    async with scheduling(runtime):
        await until(lambda: len(waiting_pods) == 1, "p to wait at Permit")
        waiting = next(iter(waiting_pods))
        assert sorted(waiting.pending_plugins()) == ["ScriptA", "ScriptB"]
        waiting.allow("ScriptA")
        # Past the other plugin's allow, the pod still waits for ScriptB: not bound.
        await asyncio.sleep(5)  # on the loop's clock
        assert "p" not in bound(api)
        assert waiting.pending_plugins() == ["ScriptB"]
        waiting.allow("ScriptB")
        await until(lambda: "p" in bound(api), "p to be bound once both allowed it")
