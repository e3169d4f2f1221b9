"""Plugins installed with pip at Permit, PreBind, Filter and Score: what ``simulate`` and the
framework's runners make of waits, refusals, failures, deadlines and exceptions.

The plugins are the test package's (``tests/plugins/pkg``), found by entry point; each
pod's labels choose what they do to it (see that package's docstring). ``simulate``
settles Permit waits the way the operator does, except that no time passes: a pod
nobody allows times out when the input is exhausted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import policy_scheduler_testplugins as testplugins
import pytest

from builders import node
from plugins.offline import pending, policy_doc, simulate
from policy_scheduler.engine import pipeline as framework_runner
from policy_scheduler.engine.compiler import compile_policy
from policy_scheduler.engine.pipeline import run_pre_bind
from policy_scheduler.objects import parse_node, parse_pod
from policy_scheduler.policy import INVALID_ARGS, PolicyError, parse_policy
from policy_scheduler.state.cache import SchedulerCache


def gate(**args: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"plugins": {"multiPoint": {"enabled": [{"name": "TestGate"}]}}}
    if args:
        spec["pluginConfig"] = [{"name": "TestGate", "args": args}]
    return spec


def waiting(name: str, second: int, **labels: str) -> dict[str, Any]:
    return pending(name, second, labels={"test-gate": "wait", **labels})


ONE_NODE = [node("n1", cpu="1")]


def test_pods_held_at_permit_are_bound_once_released(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    objects = [
        *ONE_NODE,
        waiting("w1", 0),
        waiting("w2", 1),
        pending("release", 2, labels={"test-gate": "release"}),
    ]
    ran = simulate(capsys, tmp_path, objects, gate())
    assert ran.code == 0, ran.err
    assert {name: d["node"] for name, d in ran.decisions.items()} == {
        "w1": "n1",
        "w2": "n1",
        "release": "n1",
    }
    assert ("unreserve", "w1", "n1") not in testplugins.CALLS


def test_a_held_pod_keeps_its_room_until_its_wait_times_out(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # w1 takes 800m of the node's 1 CPU while it waits: "late" does not fit beside it.
    objects = [
        *ONE_NODE,
        pending("w1", 0, labels={"test-gate": "wait"}, requests={"cpu": "800m"}),
        pending("late", 1, requests={"cpu": "800m"}),
    ]
    ran = simulate(capsys, tmp_path, objects, gate(timeoutSeconds=20))
    assert ran.decisions["late"]["node"] is None
    assert "1 Insufficient cpu" in ran.decisions["late"]["message"]
    # Nothing released it: when the input is exhausted its wait times out.
    assert ran.decisions["w1"]["node"] is None
    assert ran.decisions["w1"]["message"] == (
        "TestGate: rejected due to timeout after waiting 20s at plugin TestGate"
    )
    assert testplugins.CALLS[-1] == ("unreserve", "w1", "n1")


@pytest.mark.parametrize(
    ("objects", "pod", "message"),
    [
        pytest.param(
            [pending("denied", 0, labels={"test-gate": "deny"})],
            "denied",
            "TestGate: denied by the test gate",
            id="permit-refuses",
        ),
        pytest.param(
            [waiting("w", 0), pending("killer", 1, labels={"test-gate": "reject-waiting"})],
            "w",
            "TestGate: rejected by ns/killer",
            id="a-waiting-pod-rejected",
        ),
    ],
)
def test_a_pod_permit_rejects_is_unreserved_and_not_placed(
    objects: list[dict[str, Any]],
    pod: str,
    message: str,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    ran = simulate(capsys, tmp_path, [*ONE_NODE, *objects], gate())
    assert (ran.decisions[pod]["node"], ran.decisions[pod]["message"]) == (None, message)
    mine = [call for call in testplugins.CALLS if call[1] == pod]
    assert mine == [("reserve", pod, "n1"), ("unreserve", pod, "n1")]


@pytest.mark.parametrize(
    ("label", "point"),
    [pytest.param("filter", "Filter", id="filter"), pytest.param("score", "Score", id="score")],
)
def test_a_plugin_that_raises_fails_that_pods_attempt_only(
    label: str, point: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spec = {"plugins": {"multiPoint": {"enabled": [{"name": "TestRaiser"}]}}}
    objects = [
        node("n1"),
        node("n2"),
        pending("calm-1", 0),
        pending("boom", 1, labels={"test-raise": label}),
        pending("calm-2", 2),
    ]
    before = framework_runner.EXCEPTIONS.get((point, "TestRaiser"), 0)
    ran = simulate(capsys, tmp_path, objects, spec)
    assert ran.code == 0
    boom = ran.decisions["boom"]
    assert boom["node"] is None
    assert boom["error"] == (
        f'running {point} plugin "TestRaiser": RuntimeError: boom in {point} for ns/boom'
    )
    assert ran.decisions["calm-1"]["node"] and ran.decisions["calm-2"]["node"]
    assert framework_runner.EXCEPTIONS[(point, "TestRaiser")] == before + 1


def test_arguments_a_policy_is_refused_for_never_reach_a_plugin() -> None:
    bad = policy_doc(
        {
            "plugins": {"multiPoint": {"enabled": [{"name": "TestGate"}, {"name": "TestPreBind"}]}},
            "pluginConfig": [
                {"name": "TestGate", "args": {"timeoutSeconds": 3600}},
                {"name": "TestPreBind", "args": {"failTimes": 2}},
            ],
        }
    )
    with pytest.raises(PolicyError) as refused:
        compile_policy(parse_policy(bad))
    assert refused.value.reason == INVALID_ARGS
    assert (
        "spec.pluginConfig[0].args.timeoutSeconds: input should be less than or equal to 900"
        in (str(refused.value))
    )
    assert ("TestGate", {"timeoutSeconds": 3600.0}) not in testplugins.MADE
    good = policy_doc(
        {**bad["spec"], "pluginConfig": [{"name": "TestGate", "args": {"timeoutSeconds": 60}}]}
    )
    compile_policy(parse_policy(good))
    assert ("TestGate", {"timeoutSeconds": 60.0}) in testplugins.MADE


@pytest.mark.looptime
@pytest.mark.parametrize(
    ("label", "message"),
    [
        pytest.param(
            "fail",
            'running PreBind plugin "TestPreBind": the volume is not ready yet (failure 1)',
            id="fails",
        ),
        pytest.param(
            "hang",
            'running PreBind plugin "TestPreBind": no answer within 1s',
            id="past-its-deadline",
        ),
    ],
)
async def test_prebind_failures_and_deadlines_are_errors_naming_the_plugin(
    label: str, message: str
) -> None:
    spec = {"plugins": {"preBind": {"enabled": [{"name": "TestPreBind"}]}}}
    compiled = compile_policy(parse_policy(policy_doc(spec)))
    cache = SchedulerCache()
    cache.set_node(parse_node(node("n1")))
    subject = parse_pod(pending("p", 0, labels={"test-prebind": label}))
    state = compiled.new_cycle(subject, cache.cluster)
    status = await run_pre_bind(compiled.pipeline, state, subject, "n1")
    assert status is not None
    assert (status.code.name, status.plugin, status.message) == ("ERROR", "TestPreBind", message)
    # The pod's next attempt passes: failTimes (1) failures only.
    if label == "fail":
        assert await run_pre_bind(compiled.pipeline, state, subject, "n1") is None
