"""A slow or hung peer costs only the pods that need it (issue 26, "the bad hour").

Each pod's binding cycle runs in a task of its own, preemption's writes too, and pods of
a policy whose extenders are interested in them are decided beside the scheduling loop:
hung binding calls, hung victim deletions and a hung extender leave every other pod to
be placed as if nothing were wrong. Time is the loop's (looptime): a 30 s deadline costs
nothing, and "within N s" is measured on the clock the operator's queue and API client
use.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from builders import node, pod
from fakes import FakeApi
from policy_scheduler.engine.extenders import (
    CompiledExtender,
    ExtenderError,
    FilterReply,
    MetaVictims,
    Victims,
)
from policy_scheduler.objects import Node, Pod
from policy_scheduler.runtime.scheduling import SchedulerRuntime
from runtime.test_bindings_first import operator_on_fake_api, spod

pytestmark = pytest.mark.looptime


async def test_200_pods_bind_within_60s_while_a_tenth_of_first_bindings_hang() -> None:
    # 20 pods' first binding call never answers (the API's 30 s deadline ends it); with
    # each binding in a task of its own, they cost their own pods only: verified unbound,
    # backed off, decided and bound again. Before, 16 bind workers each waited 30 s.
    async with operator_on_fake_api() as (operator, api):
        hung = [api.hang("POST", f"/pods/p{i:03}/binding", once=True) for i in range(0, 200, 10)]
        runtime = operator.runtime
        for i in range(10):
            runtime.handle("ADDED", node(f"n{i}", cpu="64", memory="64Gi"))
        names = [f"default/p{i:03}" for i in range(200)]
        for name in names:
            runtime.handle("ADDED", spod(name.split("/")[1], "100m"))
        loop = asyncio.get_running_loop()
        started = loop.time()
        others = api.bindings(180)
        everyone = api.bindings(200)
        await operator.start_scheduling()
        async with asyncio.timeout(60):
            await others.wait()
        # The 180 whose calls were answered did not wait for the hung ones.
        assert loop.time() - started < 5
        async with asyncio.timeout(60):
            await everyone.wait()
        assert loop.time() - started < 60
        assert sorted(api.bound) == names
        assert all(hang.hits == 1 for hang in hung)


async def test_hung_victim_deletions_leave_other_pods_alone() -> None:
    async with operator_on_fake_api() as (operator, api):
        deletions = api.hang("DELETE", "/pods/")
        runtime = operator.runtime
        # n0 is full of low-priority pods a high-priority pod will preempt; n1 has room.
        runtime.handle("ADDED", node("n0", cpu="4", memory="64Gi"))
        for i in range(4):
            victim = pod(f"low-{i}", requests={"cpu": "1"}, node_name="n0", priority=0)
            runtime.handle("ADDED", victim)
        runtime.handle("ADDED", node("n1", cpu="64", memory="64Gi"))
        urgent = spod("urgent", "80")  # fits nowhere: n1 is too small, n0 once emptied
        urgent["spec"]["priority"] = 1000
        runtime.handle("ADDED", node("n2", cpu="80", memory="64Gi"))
        for i in range(4):
            runtime.handle("ADDED", pod(f"mid-{i}", requests={"cpu": "20"}, node_name="n2"))
        runtime.handle("ADDED", urgent)
        names = [f"default/other-{i:02}" for i in range(40)]
        for name in names:
            runtime.handle("ADDED", spod(name.split("/")[1], "100m"))
        loop = asyncio.get_running_loop()
        started = loop.time()
        bound = api.bindings(40)
        await operator.start_scheduling()
        async with asyncio.timeout(60):
            await bound.wait()
        # The victims' deletions hang (30 s each), the others are placed at once.
        assert loop.time() - started < 5
        assert deletions.hits > 0
        assert sorted(api.bound) == names


class HungExtenders:
    """An extender client whose every call takes the extender's whole httpTimeout."""

    def __init__(self) -> None:
        self.calls = 0

    async def _hang(self, extender: CompiledExtender) -> None:
        self.calls += 1
        await asyncio.sleep(extender.timeout)
        raise ExtenderError(f"{extender.url_prefix}: no answer within {extender.timeout:g}s")

    async def filter(
        self, extender: CompiledExtender, pod: Pod, nodes: Sequence[Node]
    ) -> FilterReply:
        await self._hang(extender)
        raise AssertionError("unreachable")

    async def prioritize(
        self, extender: CompiledExtender, pod: Pod, nodes: Sequence[Node]
    ) -> list[tuple[str, int]]:
        await self._hang(extender)
        return []

    async def bind(self, extender: CompiledExtender, pod: Pod, node: str) -> None:
        await self._hang(extender)

    async def preempt(
        self, extender: CompiledExtender, pod: Pod, candidates: Mapping[str, Victims]
    ) -> dict[str, MetaVictims]:
        await self._hang(extender)
        return {}


def slow_policy(verb: str) -> dict[str, Any]:
    return {
        "apiVersion": "policyscheduler.io/v1alpha1",
        "kind": "SchedulingPolicy",
        "metadata": {"name": "slow", "creationTimestamp": "2024-01-01T00:00:00Z"},
        "spec": {
            "schedulerName": "slow",
            "extenders": [
                {
                    "urlPrefix": "http://extender.test/scheduler",
                    verb: "op",
                    "weight": 1,
                    "httpTimeout": "30s",
                }
            ],
        },
    }


@pytest.mark.parametrize("verb", ["filterVerb", "prioritizeVerb"])
async def test_a_hung_extender_delays_only_its_own_policys_pods(verb: str) -> None:
    api = FakeApi()
    extenders = HungExtenders()
    loop = asyncio.get_running_loop()
    runtime = SchedulerRuntime(api, extenders=extenders, clock=loop.time)
    runtime.handle("ADDED", slow_policy(verb))
    for i in range(3):
        runtime.handle("ADDED", node(f"n{i}", cpu="64", memory="64Gi"))
    for i in range(5):
        runtime.handle("ADDED", pod(f"slow-{i}", requests={"cpu": "1"}, schedulerName="slow"))
    names = [f"default/fast-{i:02}" for i in range(30)]
    for name in names:
        runtime.handle("ADDED", spod(name.split("/")[1], "100m"))
    started = loop.time()
    scheduling = asyncio.create_task(runtime.run())
    try:
        while len([b for b in api.bindings if b[0] in names]) < 30:
            await asyncio.sleep(0.01)
            assert loop.time() - started < 60, "the other policy's pods waited"
        # 30 pods of the policy without extenders, bound while the extender hangs.
        assert loop.time() - started < 1
        assert extenders.calls >= 1
        assert not any(name.startswith("default/slow") for name, _ in api.bindings)
    finally:
        scheduling.cancel()
        await asyncio.gather(scheduling, return_exceptions=True)


async def test_pods_decided_beside_the_loop_go_back_to_the_queue_when_it_stops() -> None:
    # Leadership lost while a hung extender holds pods decided beside the loop (and
    # more wait for a place in that policy's lane): the loop stops at once, every one of
    # them back in the queue, and no extender is called any more.
    api = FakeApi()
    extenders = HungExtenders()
    loop = asyncio.get_running_loop()
    runtime = SchedulerRuntime(api, extenders=extenders, clock=loop.time)
    runtime.handle("ADDED", slow_policy("filterVerb"))
    runtime.handle("ADDED", node("n0", cpu="64", memory="64Gi"))
    slow = [pod(f"slow-{i}", requests={"cpu": "1"}, schedulerName="slow") for i in range(10)]
    for raw in slow:
        runtime.handle("ADDED", raw)
    scheduling = asyncio.create_task(runtime.run())
    while extenders.calls < 4:  # the lane's four places taken, six pods waiting
        await asyncio.sleep(0.01)
    started = loop.time()
    scheduling.cancel()
    await asyncio.gather(scheduling, return_exceptions=True)
    assert loop.time() - started < 1
    calls = extenders.calls
    await asyncio.sleep(120)  # nothing is left to run: no call comes
    assert extenders.calls == calls == 4
    assert {runtime.queue.where(raw["metadata"]["uid"]) for raw in slow} == {"backoff"}
    assert api.bindings == []
