"""Freed room wakes the pods that wanted it: an assumed pod forgotten in its binding cycle
(Permit refused or timed out, PreBind or Bind failed, an expired binding) moves the
unschedulable pods back to the active or backoff queue, as kube-scheduler v1.30 treats
such a forget (an assigned pod's deletion), and the pod that waited gets the room.

On one node with room for one pod, ``holder`` (higher priority, decided first) is
assumed and kept out of the binding by a test plugin; ``waiter`` then finds no room and
is unschedulable. When the holder's binding cycle lets go of the node, the waiter must
be bound within about a second; without the move it would sleep until the 60 s flush.
Time is the loop's (looptime): the deadlines below are loop seconds, no test sleeps.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import policy_scheduler_testplugins as testplugins
import pytest

from builders import node, pod
from fakes import Call, FakeApi
from plugins.test_runtime_cycles import policy, until
from policy_scheduler.runtime.scheduling import SchedulerRuntime

pytestmark = pytest.mark.looptime

SCHEDULER = "policy-scheduler"
#: How long after the room is freed the waiter must be bound (well under the 60 s flush
#: and the 10 s maximum backoff).
PROMPTLY = 1.5


def spod(name: str, cpu: str, *, priority: int = 0, **labels: str) -> dict[str, Any]:
    raw = pod(name, requests={"cpu": cpu}, labels=labels, schedulerName=SCHEDULER)
    raw["spec"]["priority"] = priority
    return raw


class Api(FakeApi):
    """The fake API, whose bindings of the pods named in ``refuse`` get that status."""

    def __init__(self, refuse: dict[str, int] | None = None) -> None:
        super().__init__()
        self.refuse = refuse or {}

    async def bind(self, namespace: str, name: str, uid: str, node: str) -> int:
        if name in self.refuse:
            self.calls.append(Call("bind", (namespace, name, uid, node)))
            return self.refuse[name]
        return await super().bind(namespace, name, uid, node)


def bound(api: FakeApi) -> list[str]:
    """The pods whose binding succeeded (201)."""
    refused = api.refuse if isinstance(api, Api) else {}
    return [name.split("/")[1] for name, _ in api.bindings if name.split("/")[1] not in refused]


@contextlib.asynccontextmanager
async def scheduling(runtime: SchedulerRuntime) -> AsyncIterator[None]:
    async def housekeeping() -> None:  # as the operator's: expired assumptions, every 1 s
        while True:
            await asyncio.sleep(1.0)
            runtime.requeue_expired()

    tasks = [asyncio.create_task(runtime.run()), asyncio.create_task(housekeeping())]
    try:
        yield
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def unschedulable(runtime: SchedulerRuntime, raw: dict[str, Any]) -> Callable[[], bool]:
    return lambda: runtime.queue.where(raw["metadata"]["uid"]) == "unschedulable"


def start(api: FakeApi, *plugins: str) -> SchedulerRuntime:
    runtime = SchedulerRuntime(api, clock=asyncio.get_running_loop().time)
    runtime.handle("ADDED", policy(*plugins))
    runtime.handle("ADDED", node("n1", cpu="1500m"))
    return runtime


async def test_a_permit_timeout_wakes_the_pod_that_waited_for_the_room() -> None:
    api = Api()
    runtime = start(api, "TestGate")
    holder = spod("holder", "1", priority=10, **{"test-gate": "wait", "test-gate-timeout": "5"})
    waiter = spod("waiter", "1")
    runtime.handle("ADDED", holder)
    runtime.handle("ADDED", waiter)
    loop = asyncio.get_running_loop()
    started = loop.time()
    async with scheduling(runtime):
        await until(unschedulable(runtime, waiter), "the waiter to find no room")
        placed = await until(lambda: "waiter" in bound(api), "the waiter to be bound")
    assert 5 <= placed - started < 5 + PROMPTLY
    assert bound(api) == ["waiter"]


async def test_a_pod_refused_at_permit_does_not_take_the_room_back_first() -> None:
    # Something unrelated happens while the holder waits (a node that is too small
    # joins): the holder's refusal then sends it to backoff, not to the unschedulable
    # pods. Its backoff counts from its refusal, not from its attempt 5 s earlier, so
    # the waiter, woken by the freed room, is decided (and bound) before the holder.
    api = Api()
    runtime = start(api, "TestGate")
    holder = spod("holder", "1", priority=10, **{"test-gate": "wait", "test-gate-timeout": "5"})
    waiter = spod("waiter", "1")
    runtime.handle("ADDED", holder)
    runtime.handle("ADDED", waiter)
    async with scheduling(runtime):
        await until(unschedulable(runtime, waiter), "the waiter to find no room")
        runtime.handle("ADDED", node("tiny", cpu="100m"))  # moves every unschedulable pod
        await until(lambda: "waiter" in bound(api), "the waiter to be bound")
        await until(lambda: ("unreserve", "holder", "n1") in testplugins.CALLS, "its refusal")
    assert bound(api) == ["waiter"]
    assert testplugins.CALLS.count(("reserve", "holder", "n1")) == 1  # never took it back


async def test_a_permit_rejection_wakes_the_pod_that_waited_for_the_room() -> None:
    api = Api()
    runtime = start(api, "TestGate")
    holder = spod("holder", "1", priority=10, **{"test-gate": "wait", "test-gate-timeout": "100"})
    waiter = spod("waiter", "1")
    runtime.handle("ADDED", holder)
    runtime.handle("ADDED", waiter)
    loop = asyncio.get_running_loop()
    async with scheduling(runtime):
        await until(unschedulable(runtime, waiter), "the waiter to find no room")
        rejected = loop.time()
        runtime.handle("ADDED", spod("rejecter", "100m", **{"test-gate": "reject-waiting"}))
        placed = await until(lambda: "waiter" in bound(api), "the waiter to be bound")
    assert placed - rejected < PROMPTLY
    assert sorted(bound(api)) == ["rejecter", "waiter"]


async def test_a_prebind_failure_wakes_the_pod_that_waited_for_the_room() -> None:
    # TestPreBind never answers for the holder: its 1 s deadline makes it an error.
    api = Api()
    runtime = start(api, "TestGate", "TestPreBind")
    holder = spod("holder", "1", priority=10, **{"test-prebind": "hang"})
    waiter = spod("waiter", "1")
    runtime.handle("ADDED", holder)
    runtime.handle("ADDED", waiter)
    loop = asyncio.get_running_loop()
    started = loop.time()
    async with scheduling(runtime):
        await until(unschedulable(runtime, waiter), "the waiter to find no room")
        placed = await until(lambda: "waiter" in bound(api), "the waiter to be bound")
    assert 1 <= placed - started < 1 + PROMPTLY
    assert bound(api) == ["waiter"]


async def test_a_bind_failure_wakes_the_pod_that_waited_for_the_room() -> None:
    # The holder waits at Permit until a releasing pod lets it go; its binding is then
    # refused for sure (403, a webhook say): the room it held is free.
    api = Api(refuse={"holder": 403})
    runtime = start(api, "TestGate")
    holder = spod("holder", "1", priority=10, **{"test-gate": "wait", "test-gate-timeout": "100"})
    waiter = spod("waiter", "1")
    runtime.handle("ADDED", holder)
    runtime.handle("ADDED", waiter)
    loop = asyncio.get_running_loop()
    async with scheduling(runtime):
        await until(unschedulable(runtime, waiter), "the waiter to find no room")
        released = loop.time()
        runtime.handle("ADDED", spod("release", "100m", **{"test-gate": "release"}))
        await until(lambda: ("default/holder", "n1") in api.bindings, "the holder's binding")
        placed = await until(lambda: "waiter" in bound(api), "the waiter to be bound")
    assert placed - released < PROMPTLY
    assert sorted(bound(api)) == ["release", "waiter"]


async def test_an_expired_binding_wakes_the_pod_that_waited_for_the_room() -> None:
    # Nobody could tell whether the holder's binding happened (a 500, and the pod could
    # not be read back): its assumption stays until it expires (the cache's ttl after
    # the binding returned); then its room is free.
    api = Api(refuse={"holder": 500})
    api.pods[("default", "holder")] = (0, None)  # the GET is not answered either
    # The expired holder is decided again (re-added, active): the waiter, of a higher
    # priority and added once the holder was assumed, goes first.
    runtime = start(api, "TestGate")
    holder = spod("holder", "1")
    waiter = spod("waiter", "1", priority=10)
    runtime.handle("ADDED", holder)
    uid = holder["metadata"]["uid"]
    loop = asyncio.get_running_loop()
    async with scheduling(runtime):
        await until(
            lambda: uid in runtime.binding.unconfirmed, "the holder's binding to be unconfirmed"
        )
        runtime.handle("ADDED", waiter)
        await until(unschedulable(runtime, waiter), "the waiter to find no room")
        finished = loop.time()
        await until(lambda: uid not in runtime.binding.unconfirmed, "the assumption to expire")
        expired = loop.time()
        assert expired - finished >= runtime.cache.ttl - 1
        placed = await until(lambda: "waiter" in bound(api), "the waiter to be bound")
    assert placed - expired < PROMPTLY
    assert bound(api) == ["waiter"]
