"""Cycles that end badly, in the operator's runtime: no pod is lost, nothing slow holds
the others.

The runtime is the operator's (:class:`SchedulerRuntime`, its loop, lanes and binding
cycles) on a fake API; the plugins are the test package's, found by entry point. Time
is the loop's (looptime): a Permit timeout or a plugin's deadline costs nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import policy_scheduler_testplugins as testplugins
import pytest

from builders import node, pod
from fakes import FakeApi, FakeClock
from policy_scheduler.runtime.metrics import Metrics
from policy_scheduler.runtime.scheduling import SchedulerRuntime
from policy_scheduler.state.cache import PodState

pytestmark = pytest.mark.looptime

SCHEDULER = "policy-scheduler"


def policy(*plugins: str) -> dict[str, Any]:
    return {
        "apiVersion": "policyscheduler.io/v1alpha1",
        "kind": "SchedulingPolicy",
        "metadata": {"name": "plugged", "creationTimestamp": "2024-01-01T00:00:00Z"},
        "spec": {
            "schedulerName": SCHEDULER,
            "plugins": {"multiPoint": {"enabled": [{"name": name} for name in plugins]}},
        },
    }


def spod(name: str, cpu: str = "100m", **labels: str) -> dict[str, Any]:
    return pod(name, requests={"cpu": cpu}, labels=labels, schedulerName=SCHEDULER)


@contextlib.asynccontextmanager
async def scheduling(runtime: SchedulerRuntime) -> AsyncIterator[None]:
    task = asyncio.create_task(runtime.run())
    try:
        yield
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def until(done: Callable[[], bool], what: str, timeout: float = 120) -> float:
    """Wait (on the loop's clock) until ``done()``; returns when it became true."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    while not done():
        assert loop.time() - started < timeout, f"still waiting for {what}"
        await asyncio.sleep(0.05)
    return loop.time()


def failures(api: FakeApi, name: str) -> list[str]:
    """FailedScheduling messages the pod was given (created, or repeated by a patch)."""
    return [
        e["message"]
        for e in api.events
        if e["reason"] == "FailedScheduling" and e["involvedObject"]["name"] == name
    ]


def bound(api: FakeApi) -> dict[str, str]:
    return {name.split("/")[1]: node_name for name, node_name in api.bindings}


async def test_a_pod_whose_permit_wait_timed_out_is_decided_again() -> None:
    # Rejected at Permit (here: nobody allowed it within 1 s), the pod is unreserved and
    # goes back to the queue: decided again (held again), and bound once released.
    testplugins.reset()
    api = FakeApi()
    runtime = SchedulerRuntime(api, clock=asyncio.get_running_loop().time)
    runtime.handle("ADDED", policy("TestGate"))
    runtime.handle("ADDED", node("n1", cpu="4"))
    runtime.handle("ADDED", spod("slow", **{"test-gate": "wait", "test-gate-timeout": "1"}))
    async with scheduling(runtime):
        await until(lambda: bool(failures(api, "slow")), "the wait to time out")
        assert failures(api, "slow") == [
            "TestGate: rejected due to timeout after waiting 1s at plugin TestGate"
        ]
        assert ("unreserve", "slow", "n1") in testplugins.CALLS
        await until(
            lambda: testplugins.CALLS.count(("reserve", "slow", "n1")) == 2,
            "the pod to be decided again",
        )
        runtime.handle("ADDED", spod("release", **{"test-gate": "release"}))
        await until(lambda: "slow" in bound(api), "the released pod to be bound")
    assert bound(api) == {"release": "n1", "slow": "n1"}


async def test_a_hung_postfilter_costs_its_deadline_and_no_pod() -> None:
    # A PostFilter runs while the cycle holds the cluster: one that never answers is cut
    # at its plugin's deadline (2 s), an error for that pod's preemption, and the pods
    # queued behind it are placed.
    api = FakeApi()
    loop = asyncio.get_running_loop()
    runtime = SchedulerRuntime(api, clock=loop.time)
    runtime.handle("ADDED", policy("TestHungPostFilter"))
    runtime.handle("ADDED", node("n1", cpu="4"))
    huge = spod("huge", cpu="64", **{"test-postfilter": "hang"})
    huge["spec"]["priority"] = 10  # first in the queue
    runtime.handle("ADDED", huge)
    for i in range(5):
        runtime.handle("ADDED", spod(f"small-{i}"))
    started = loop.time()
    async with scheduling(runtime):
        placed = await until(lambda: len(bound(api)) == 5, "the small pods to be bound")
        assert 2 <= placed - started < 3
        await until(lambda: bool(failures(api, "huge")), "huge's FailedScheduling")
    assert sorted(bound(api)) == [f"small-{i}" for i in range(5)]
    assert failures(api, "huge")[0].startswith("0/1 nodes are available")


async def test_a_binding_nobody_confirmed_is_unreserved_when_it_expires() -> None:
    # The binding's answer was lost and the pod could not be read back: the assumption
    # stays until the watch tells, or expires; then Reserve plugins let go of the pod
    # too (their Unreserve), before it is decided again.
    testplugins.reset()
    api = FakeApi()
    clock = FakeClock()
    runtime = SchedulerRuntime(api, clock=clock)
    runtime.handle("ADDED", policy("TestGate"))
    runtime.handle("ADDED", node("n1", cpu="4"))
    web = spod("web")
    runtime.handle("ADDED", web)
    api.statuses["bind"] = 500
    api.pods[("default", "web")] = (0, None)  # the GET is not answered either
    queued = runtime.queue.pop_nowait()
    assert queued is not None
    await runtime.schedule_one(queued)
    await runtime.drain()
    assert runtime.cache.state_of(web["metadata"]["uid"]) is PodState.BINDING_FINISHED
    assert ("unreserve", "web", "n1") not in testplugins.CALLS
    clock.now += runtime.cache.ttl + 1
    runtime.requeue_expired()
    assert testplugins.CALLS == [("reserve", "web", "n1"), ("unreserve", "web", "n1")]
    assert runtime.queue.where(web["metadata"]["uid"]) == "active"


async def test_a_permit_wait_with_no_number_of_seconds_is_that_pods_error() -> None:
    # Status.wait("soon"): a bug of the plugin, for the pod it answered about. The pod
    # gets an Error (a FailedScheduling event naming the plugin and the timeout), is
    # unreserved, and the other pods go on.
    testplugins.reset()
    api = FakeApi()
    runtime = SchedulerRuntime(api, clock=asyncio.get_running_loop().time)
    runtime.handle("ADDED", policy("TestGate"))
    runtime.handle("ADDED", node("n1", cpu="4"))
    runtime.handle("ADDED", spod("soon", **{"test-gate": "wait", "test-gate-timeout": "soon"}))
    runtime.handle("ADDED", spod("other"))
    async with scheduling(runtime):
        await until(lambda: bool(failures(api, "soon")), "the pod's error")
        await until(lambda: "other" in bound(api), "the other pod to be bound")
    [message] = set(failures(api, "soon"))
    assert message == (
        "running Permit plugin \"TestGate\": Status.wait('soon'): "
        "the timeout must be a number of seconds"
    )
    assert ("unreserve", "soon", "n1") in testplugins.CALLS
    assert "soon" not in bound(api)


async def test_pods_held_at_permit_are_counted_in_the_pending_pods_gauge() -> None:
    # scheduler_pending_pods{queue="waitingOnPermit"}: the pods held at Permit now.
    testplugins.reset()
    api = FakeApi()
    metrics = Metrics()
    runtime = SchedulerRuntime(api, clock=asyncio.get_running_loop().time, metrics=metrics)
    runtime.handle("ADDED", policy("TestGate"))
    runtime.handle("ADDED", node("n1", cpu="4"))

    def waiting() -> float | None:
        return metrics.registry.get_sample_value(
            "scheduler_pending_pods", {"queue": "waitingOnPermit"}
        )

    for name in ("held-1", "held-2"):
        runtime.handle("ADDED", spod(name, **{"test-gate": "wait"}))
    async with scheduling(runtime):
        await until(lambda: waiting() == 2, "two pods counted at Permit")
        runtime.handle("ADDED", spod("release", **{"test-gate": "release"}))
        await until(lambda: len(bound(api)) == 3, "the pods to be bound")
        await until(lambda: waiting() == 0, "the gauge to go back to 0")


async def test_a_pod_whose_node_was_deleted_while_it_waited_at_permit_is_decided_again() -> None:
    # Allowed after its node left the cluster, the pod is not bound there (kube-scheduler
    # would): its binding cycle fails (unreserved, FailedScheduling) and it is decided
    # again, onto a node that exists.
    testplugins.reset()
    api = FakeApi()
    runtime = SchedulerRuntime(api, clock=asyncio.get_running_loop().time)
    runtime.handle("ADDED", policy("TestGate"))
    runtime.handle("ADDED", node("n1", cpu="4"))
    runtime.handle("ADDED", spod("held", **{"test-gate": "wait"}))
    async with scheduling(runtime):
        await until(lambda: bool(runtime.world.handle.waiting), "the pod to wait at Permit")
        runtime.handle("DELETED", node("n1", cpu="4"))
        runtime.handle("ADDED", node("n2", cpu="4"))
        runtime.handle("ADDED", spod("release", **{"test-gate": "release"}))
        await until(lambda: bool(failures(api, "held")), "the held pod's binding to fail")
        assert failures(api, "held") == ['node "n1" was deleted while the pod waited at Permit']
        assert ("unreserve", "held", "n1") in testplugins.CALLS
        await until(lambda: ("reserve", "held", "n2") in testplugins.CALLS, "the pod decided again")
        runtime.handle("ADDED", spod("release-again", **{"test-gate": "release"}))
        await until(lambda: "held" in bound(api), "the held pod to be bound")
    assert bound(api) == {"release": "n2", "release-again": "n2", "held": "n2"}


async def test_a_policy_whose_cycles_are_slow_costs_its_own_pods_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A Filter that takes 1 s a node (here: it moves the scheduler's clock on by 1 s) on
    # 12 nodes makes each of its policy's cycles 12 s. After one, that policy's pods wait
    # as long as it took, so the other policy's pods, queued behind them, are decided in
    # between: bound before the slow policy's second pod. The slow pod gets a Warning.
    loop = asyncio.get_running_loop()
    spent = [0.0]

    def clock() -> float:
        return loop.time() + spent[0]

    def slow_filter(self: Any, state: Any, pod: Any, node: Any) -> None:
        spent[0] += 1.0  # time.sleep(1), on the scheduler's clock

    monkeypatch.setattr(testplugins.Raiser, "filter", slow_filter)
    api = FakeApi()
    metrics = Metrics()
    runtime = SchedulerRuntime(api, clock=clock, metrics=metrics)
    slow = policy("TestRaiser")
    slow["metadata"]["name"] = "slow"
    slow["spec"]["schedulerName"] = "slow-scheduler"
    runtime.handle("ADDED", slow)
    runtime.handle("ADDED", policy())
    for i in range(12):
        runtime.handle("ADDED", node(f"n{i}", cpu="8"))
    for i in range(3):
        runtime.handle(
            "ADDED", pod(f"slow-{i}", requests={"cpu": "100m"}, schedulerName="slow-scheduler")
        )
    for i in range(3):
        runtime.handle("ADDED", spod(f"fast-{i}"))
    async with scheduling(runtime):
        await until(lambda: len(bound(api)) == 6, "every pod to be bound")
    order = [name.split("/")[1] for name, _ in api.bindings]
    assert order[0] == "slow-0"
    assert set(order[1:4]) == {"fast-0", "fast-1", "fast-2"}
    warnings = [e for e in api.events if e["reason"] == "SlowSchedulingCycle"]
    assert warnings and warnings[0]["involvedObject"]["name"] == "slow-0"
    assert warnings[0]["type"] == "Warning"
    assert "the scheduling cycle of policy slow took 12.0s" in warnings[0]["message"]
    slow_cycles = metrics.registry.get_sample_value(
        "scheduler_slow_cycles_total", {"policy": "slow"}
    )
    assert slow_cycles == 3
