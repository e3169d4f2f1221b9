"""Victims are marked before they go, and a preemptor waits for its marked victims.

kube-scheduler v1.30's preemption (``prepareCandidate``) patches each victim's status
with ``DisruptionTarget=True`` (reason ``PreemptionByScheduler``, message
``<schedulerName>: preempting to accommodate a higher priority pod``) before deleting
it; a preemptor nominated to a node where such a victim still terminates does not
preempt again (``PodEligibleToPreemptOthers``). The legacy preemption (v1.17) marks
nobody and waits for any lower-priority pod terminating on its nominated node. Every
policy's ``Preempted`` event names the preemptor by uid. A fake API records the calls,
in order; the runtime is driven as the watches and the loop would drive it.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from builders import node, pod
from fakes import FakeApi, FakeClock
from policy_scheduler.runtime.reporting import Reporter
from policy_scheduler.runtime.scheduling import SchedulerRuntime

NAME = "policy-scheduler"
V130 = Path(__file__).parents[2] / "examples" / "policies" / "kube-scheduler-v1.30.yaml"
NOT_ELIGIBLE = "preemption: not eligible due to a terminating pod on the nominated node."


def running(name: str, node_name: str, priority: int, cpu: str = "1500m") -> dict[str, Any]:
    obj = pod(name, requests={"cpu": cpu}, priority=priority, node_name=node_name)
    obj["status"] = {"phase": "Running", "startTime": "2024-01-01T00:00:00Z"}
    return obj


def pending(name: str, priority: int, cpu: str = "1500m") -> dict[str, Any]:
    return pod(name, requests={"cpu": cpu}, priority=priority, schedulerName=NAME)


def v130_policy() -> dict[str, Any]:
    """kube-scheduler v1.30's default profile (DefaultPreemption), serving NAME."""
    obj = yaml.safe_load(V130.read_text())
    obj["metadata"] = {"name": "v130", "uid": "u", "creationTimestamp": "2024-01-01T00:00:00Z"}
    obj["spec"]["schedulerName"] = NAME
    return dict(obj)


@pytest.fixture
def api() -> FakeApi:
    return FakeApi()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def runtime(api: FakeApi, clock: FakeClock) -> SchedulerRuntime:
    reporter = Reporter(
        api, instance="replica-0", clock=clock, wall=lambda: datetime(2024, 5, 1, tzinfo=UTC)
    )
    return SchedulerRuntime(api, reporter=reporter, clock=clock)


def serve(runtime: SchedulerRuntime, policy: str) -> None:
    if policy == "v1.30":
        runtime.handle("ADDED", v130_policy())
    # else: no SchedulingPolicy, the built-in default policy (legacy preemption) serves NAME


async def attempt(runtime: SchedulerRuntime) -> None:
    queued = runtime.queue.pop_nowait()
    assert queued is not None, f"no pod ready: {runtime.queue.lengths()}"
    await runtime.schedule_one(queued)
    await runtime.drain()


def full_cluster(runtime: SchedulerRuntime) -> dict[str, dict[str, Any]]:
    """Two 2-CPU nodes, each 1.5 CPU full: low-1 (priority 10) on n1, low-2 (0) on n2."""
    runtime.handle("ADDED", node("n1", cpu="2"))
    runtime.handle("ADDED", node("n2", cpu="2"))
    pods = {"low-1": running("low-1", "n1", 10), "low-2": running("low-2", "n2", 0)}
    for raw in pods.values():
        runtime.handle("ADDED", raw)
    return pods


def writes(api: FakeApi) -> list[tuple[str, str]]:
    """(call, pod) of the preemption's writes, in order: nomination, marks, deletions."""
    out = []
    for call in api.calls:
        if call.method == "patch_pod_status":
            _ns, name, patch = call.args
            status = patch["status"]
            if "nominatedNodeName" in status:
                out.append(("nominate", name))
            elif any(c["type"] == "DisruptionTarget" for c in status.get("conditions", ())):
                out.append(("mark", name))
        elif call.method == "delete_pod":
            out.append(("delete", call.args[1]))
    return out


def terminating(obj: dict[str, Any], api: FakeApi | None = None) -> dict[str, Any]:
    """The victim as the watch shows it once deleted, still terminating (a grace period,
    a finalizer): a deletionTimestamp, and the conditions the runtime patched into its
    status through ``api`` (merged by type, as the API server merges them)."""
    obj = copy.deepcopy(obj)
    obj["metadata"]["deletionTimestamp"] = "2024-05-01T00:00:01Z"
    conditions = {c["type"]: c for c in obj["status"].get("conditions", ())}
    for ns, name, patch in api.of("patch_pod_status") if api is not None else ():
        if (ns, name) == (obj["metadata"]["namespace"], obj["metadata"]["name"]):
            conditions.update((c["type"], c) for c in patch["status"].get("conditions", ()))
    obj["status"]["conditions"] = list(conditions.values())
    return obj


async def test_a_v130_victim_is_marked_then_deleted_in_kube_schedulers_words(
    api: FakeApi, runtime: SchedulerRuntime
) -> None:
    serve(runtime, "v1.30")
    victims = full_cluster(runtime)
    urgent = pending("urgent", 1000)
    runtime.handle("ADDED", urgent)
    await attempt(runtime)
    assert writes(api) == [("nominate", "urgent"), ("mark", "low-2"), ("delete", "low-2")]
    [patch] = [p for _ns, name, p in api.of("patch_pod_status") if name == "low-2"]
    # The victim's uid rides along as a precondition (a new pod of that name refuses it).
    assert patch["metadata"] == {"uid": victims["low-2"]["metadata"]["uid"]}
    [condition] = patch["status"]["conditions"]
    assert condition == {
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "PreemptionByScheduler",
        "message": "policy-scheduler: preempting to accommodate a higher priority pod",
        "lastTransitionTime": condition["lastTransitionTime"],
    }
    [event] = [e for e in api.events if e["reason"] == "Preempted"]
    assert event["message"] == f"Preempted by pod {urgent['metadata']['uid']} on node n2"
    assert event["involvedObject"]["name"] == "low-2"


async def test_the_legacy_preemption_marks_nobody_and_names_the_preemptor_by_uid(
    api: FakeApi, runtime: SchedulerRuntime
) -> None:
    serve(runtime, "legacy")
    full_cluster(runtime)
    urgent = pending("urgent", 1000)
    runtime.handle("ADDED", urgent)
    await attempt(runtime)
    assert writes(api) == [("nominate", "urgent"), ("delete", "low-2")]
    [event] = [e for e in api.events if e["reason"] == "Preempted"]
    assert event["message"] == f"Preempted by pod {urgent['metadata']['uid']} on node n2"
    assert "default/urgent" not in event["message"]


@pytest.mark.parametrize(
    ("status", "deleted"),
    [
        pytest.param(500, [], id="refused: nobody deleted"),
        pytest.param(ConnectionError("reset"), [], id="no answer: nobody deleted"),
        pytest.param(404, ["default/low-2"], id="gone: its delete says so"),
        pytest.param(422, ["default/low-2"], id="another uid: its delete says so"),
    ],
)
async def test_a_victim_is_deleted_only_once_marked(
    api: FakeApi, runtime: SchedulerRuntime, status: Any, deleted: list[str]
) -> None:
    serve(runtime, "v1.30")
    full_cluster(runtime)
    runtime.handle("ADDED", pending("urgent", 1000))
    # The nomination goes through; the victim's mark answers ``status``.
    api.statuses["patch_pod_status"] = [200, status]
    await attempt(runtime)
    assert api.deletions == deleted


async def test_a_v130_preemptor_waits_for_its_marked_victim_instead_of_evicting_another(
    api: FakeApi, runtime: SchedulerRuntime, clock: FakeClock
) -> None:
    # The reproduction: while the first victim terminates, the preemptor is
    # retried, and its nominated node no longer has room even without that victim
    # (a more important pod came): it must wait, not evict low-1 on n1.
    serve(runtime, "v1.30")
    victims = full_cluster(runtime)
    urgent = pending("urgent", 1000)
    runtime.handle("ADDED", urgent)
    await attempt(runtime)
    assert api.deletions == ["default/low-2"]

    nominated = copy.deepcopy(urgent)
    nominated["status"] = {"nominatedNodeName": "n2"}
    runtime.handle("MODIFIED", nominated)
    runtime.handle("MODIFIED", terminating(victims["low-2"], api))
    runtime.handle("ADDED", running("critical", "n2", 2000, cpu="1"))
    runtime.handle("ADDED", node("n3", cpu="500m"))  # a small node joins
    # Too small to help (NodeResourcesFit's queueing hint skips it): the preemptor is
    # retried when the unschedulable pods are flushed, 60 s on.
    clock.now += 61
    runtime.requeue_expired()
    await attempt(runtime)
    assert api.deletions == ["default/low-2"]
    assert api.events[-1]["reason"] == "FailedScheduling"
    # v1.30's FitError ends with " <PostFilter's message>.": the message's own period
    # and the separator's, as kube-scheduler writes it.
    assert api.events[-1]["message"] == (
        f"0/3 nodes are available: 3 Insufficient cpu. {NOT_ELIGIBLE}"
    )


@pytest.mark.parametrize(
    ("policy", "deletions"),
    [
        # v1.30 waits only for pods terminating *by preemption*: this one is not marked
        # (someone else deleted it), so the preemptor makes room on n1.
        pytest.param("v1.30", ["default/low-2", "default/low-1"], id="v1.30: unmarked"),
        # v1.17 waits for any lower-priority pod terminating on the nominated node.
        pytest.param("legacy", ["default/low-2"], id="legacy: any terminating pod"),
    ],
)
async def test_which_terminating_pods_a_nominated_preemptor_waits_for(
    api: FakeApi, runtime: SchedulerRuntime, clock: FakeClock, policy: str, deletions: list[str]
) -> None:
    serve(runtime, policy)
    victims = full_cluster(runtime)
    urgent = pending("urgent", 1000)
    runtime.handle("ADDED", urgent)
    await attempt(runtime)
    nominated = copy.deepcopy(urgent)
    nominated["status"] = {"nominatedNodeName": "n2"}
    runtime.handle("MODIFIED", nominated)
    runtime.handle("MODIFIED", terminating(victims["low-2"]))
    runtime.handle("ADDED", running("critical", "n2", 2000, cpu="1"))
    runtime.handle("ADDED", node("n3", cpu="500m"))
    clock.now += 61  # the unschedulable pods' flush retries it
    runtime.requeue_expired()
    await attempt(runtime)
    assert api.deletions == deletions
