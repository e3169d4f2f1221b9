"""The operator preempts: nomination, victims deleted with a Preempted event, then binding.

A fake API records every call; the tests drive the runtime as the watches and the
scheduling loop would, and check what a user would see with kubectl: the preemptor's
``status.nominatedNodeName``, the victims deleted (by uid), a Normal ``Preempted`` event
on each, lower nominations cleared, the preemptor bound once the victims are gone; and
nothing of the kind when the pod, the policy, or an API failure says no.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest

from builders import node, pod
from fakes import FakeApi, FakeClock
from policy_scheduler.runtime.metrics import Metrics
from policy_scheduler.runtime.reporting import Reporter
from policy_scheduler.runtime.scheduling import SchedulerRuntime
from policy_scheduler.state.world import DELETED

NAME = "policy-scheduler"


def running(name: str, node_name: str, priority: int, cpu: str = "1500m", **kw: Any) -> dict:
    obj = pod(name, requests={"cpu": cpu}, priority=priority, node_name=node_name, **kw)
    obj["status"] = {"phase": "Running", "startTime": "2024-01-01T00:00:00Z"}
    return obj


def pending(name: str, priority: int, cpu: str = "1500m", **kw: Any) -> dict[str, Any]:
    kw.setdefault("schedulerName", NAME)
    return pod(name, requests={"cpu": cpu}, priority=priority, **kw)


@pytest.fixture
def api() -> FakeApi:
    return FakeApi()


@pytest.fixture
def metrics() -> Metrics:
    return Metrics()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def runtime(api: FakeApi, metrics: Metrics, clock: FakeClock) -> SchedulerRuntime:
    reporter = Reporter(
        api, instance="replica-0", clock=clock, wall=lambda: datetime(2024, 5, 1, tzinfo=UTC)
    )
    return SchedulerRuntime(api, reporter=reporter, clock=clock, metrics=metrics)


async def attempt(runtime: SchedulerRuntime) -> None:
    queued = runtime.queue.pop_nowait()
    assert queued is not None, f"no pod ready: {runtime.queue.lengths()}"
    await runtime.schedule_one(queued)
    await runtime.drain()


def full_cluster(runtime: SchedulerRuntime) -> dict[str, dict[str, Any]]:
    """Two 2-CPU nodes, each full with low-priority pods (one at 0, one at 10)."""
    runtime.handle("ADDED", node("n1", cpu="2"))
    runtime.handle("ADDED", node("n2", cpu="2"))
    pods = {
        "low-1": running("low-1", "n1", 10),
        "low-2": running("low-2", "n2", 0),
    }
    for raw in pods.values():
        runtime.handle("ADDED", raw)
    return pods


def sample(metrics: Metrics, name: str) -> float:
    value = metrics.registry.get_sample_value(name)
    return 0.0 if value is None else value


async def test_a_high_priority_pod_preempts_then_is_bound_there(
    api: FakeApi, runtime: SchedulerRuntime, metrics: Metrics, clock: FakeClock
) -> None:
    victims = full_cluster(runtime)
    urgent = pending("urgent", 1000)
    runtime.handle("ADDED", urgent)
    await attempt(runtime)
    # The node whose victim has the lowest priority: n2.
    assert api.nominations == [("default/urgent", "n2")]
    assert api.deletions == ["default/low-2"]
    assert api.of("delete_pod")[0][2] == victims["low-2"]["metadata"]["uid"]
    preempted = [e for e in api.events if e["reason"] == "Preempted"]
    assert [(e["type"], e["involvedObject"]["name"], e["message"]) for e in preempted] == [
        ("Normal", "low-2", f"Preempted by pod {urgent['metadata']['uid']} on node n2")
    ]
    assert preempted[0]["source"] == {"component": NAME}
    assert api.bindings == []  # it waits for its victim to leave
    assert runtime.cache.cluster.nomination_of(urgent["metadata"]["uid"]) == "n2"
    assert sample(metrics, "scheduler_preemption_attempts_total") == 1
    assert sample(metrics, "scheduler_preemption_victims_sum") == 1

    # The API reports the nomination, then the victim's deletion: the pod goes back.
    nominated = copy.deepcopy(urgent)
    nominated["status"] = {"nominatedNodeName": "n2"}
    runtime.handle("MODIFIED", nominated)
    runtime.handle(DELETED, victims["low-2"])
    clock.now += 10  # past its backoff
    await attempt(runtime)
    assert api.bindings == [("default/urgent", "n2")]
    assert runtime.cache.cluster.nomination_of(urgent["metadata"]["uid"]) is None


async def test_a_pod_that_may_not_preempt_just_waits(
    api: FakeApi, runtime: SchedulerRuntime, metrics: Metrics
) -> None:
    full_cluster(runtime)
    runtime.handle("ADDED", pending("polite", 1000, preemptionPolicy="Never"))
    await attempt(runtime)
    assert (api.nominations, api.deletions, api.bindings) == ([], [], [])
    assert [e["reason"] for e in api.events] == ["FailedScheduling"]
    assert runtime.queue.where(next(iter(runtime.queue.pods())).uid) == "unschedulable"
    # It was considered: the attempt counts, with nothing found.
    assert sample(metrics, "scheduler_preemption_attempts_total") == 1


async def test_a_policy_that_disables_preemption(api: FakeApi, runtime: SchedulerRuntime) -> None:
    runtime.handle(
        "ADDED",
        {
            "apiVersion": "policyscheduler.io/v1alpha1",
            "kind": "SchedulingPolicy",
            "metadata": {"name": "calm", "uid": "u", "creationTimestamp": "2024-01-01T00:00:00Z"},
            "spec": {"schedulerName": NAME, "disablePreemption": True},
        },
    )
    full_cluster(runtime)
    runtime.handle("ADDED", pending("urgent", 1000))
    await attempt(runtime)
    assert (api.nominations, api.deletions) == ([], [])


async def test_equal_priority_pods_are_never_victims(
    api: FakeApi, runtime: SchedulerRuntime
) -> None:
    full_cluster(runtime)
    runtime.handle("ADDED", pending("peer", 10))  # equal to low-1, above low-2 (0)
    await attempt(runtime)
    assert api.deletions == ["default/low-2"]


async def test_a_failed_nomination_deletes_nobody(api: FakeApi, runtime: SchedulerRuntime) -> None:
    full_cluster(runtime)
    api.statuses["patch_pod_status"] = 500
    urgent = pending("urgent", 1000)
    runtime.handle("ADDED", urgent)
    await attempt(runtime)
    assert api.deletions == []
    assert runtime.cache.cluster.nomination_of(urgent["metadata"]["uid"]) is None


@pytest.mark.parametrize(
    ("status", "events"),
    [
        pytest.param(200, 1, id="deleted"),
        pytest.param(404, 0, id="already-gone"),
        pytest.param(409, 0, id="uid-changed"),
        pytest.param(ConnectionError("reset"), 0, id="no-answer"),
    ],
)
async def test_a_victim_gets_an_event_only_when_we_deleted_it(
    api: FakeApi, runtime: SchedulerRuntime, status: Any, events: int
) -> None:
    full_cluster(runtime)
    api.statuses["delete_pod"] = status
    runtime.handle("ADDED", pending("urgent", 1000))
    await attempt(runtime)
    assert len([e for e in api.events if e["reason"] == "Preempted"]) == events


async def test_lower_nominations_on_the_chosen_node_are_cleared(
    api: FakeApi, runtime: SchedulerRuntime
) -> None:
    full_cluster(runtime)
    waiting = pending("waiting", 5, cpu="100m", schedulerName="default-scheduler")
    waiting["status"] = {"nominatedNodeName": "n2"}
    runtime.handle("ADDED", waiting)
    runtime.handle("ADDED", pending("urgent", 1000))
    await attempt(runtime)
    assert api.nominations == [("default/urgent", "n2"), ("default/waiting", None)]
    assert runtime.cache.cluster.nomination_of(waiting["metadata"]["uid"]) is None


async def test_a_nominated_node_is_left_to_its_pod(api: FakeApi, runtime: SchedulerRuntime) -> None:
    runtime.handle("ADDED", node("n1", cpu="2"))
    someone = pending("someone", 1000, cpu="1500m", schedulerName="default-scheduler")
    someone["status"] = {"nominatedNodeName": "n1"}
    runtime.handle("ADDED", someone)
    runtime.handle("ADDED", pending("small-fry", 0, cpu="1"))
    await attempt(runtime)
    assert api.bindings == []
    assert api.events[-1]["message"] == "0/1 nodes are available: 1 Insufficient cpu."


async def test_a_pod_deleted_while_preemption_is_evaluated_evicts_nobody(
    api: FakeApi, runtime: SchedulerRuntime
) -> None:
    full_cluster(runtime)
    urgent = pending("urgent", 1000)
    runtime.handle("ADDED", urgent)
    queued = runtime.queue.pop_nowait()
    assert queued is not None
    decide = runtime.decider.scheduler_for
    # The deletion arrives while the engine looks for room (it yields between chunks).

    def scheduler_that_sees_a_deletion(policy: Any) -> Any:
        scheduler = decide(policy)
        original = scheduler.preempt

        async def preempt(*args: Any, **kwargs: Any) -> Any:
            result = await original(*args, **kwargs)
            runtime.handle(DELETED, urgent)
            return result

        scheduler.preempt = preempt  # type: ignore[method-assign]
        return scheduler

    runtime.decider.scheduler_for = scheduler_that_sees_a_deletion  # type: ignore[method-assign]
    await runtime.schedule_one(queued)
    await runtime.drain()
    assert (api.nominations, api.deletions) == ([], [])
