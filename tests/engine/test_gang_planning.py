"""Gangs planned as a whole (deciding.py): a GangPlugin puts pods in groups; a group's
pending members are decided together, and kept only if at least ``min_member`` fit.

A small test plugin plays Coscheduling's part: group and quorum from labels, Permit
waiting until the quorum is placed and then allowing the group. It is made known to the
policy model and the compiler as a built-in (the registry), not through an installed
package: discovery by entry point is tested with the example plugin (tests/plugins).
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest

from builders import node, pod
from fakes import FakeApi
from policy_scheduler import names
from policy_scheduler.deciding import Decider
from policy_scheduler.engine import plugins
from policy_scheduler.engine.functions import CycleState
from policy_scheduler.engine.interface import Gang, GangPlugin, PermitPlugin, Status
from policy_scheduler.objects import Pod
from policy_scheduler.policy import parse_policy
from policy_scheduler.runtime.binding import GANG_BIND_TRIES
from policy_scheduler.runtime.scheduling import SchedulerRuntime
from policy_scheduler.simulation import inputs_from_objects, simulate

GROUP = "example.com/group"
QUORUM = "example.com/quorum"


class Quorum(GangPlugin, PermitPlugin):
    """Pods labelled with a group bind once ``quorum`` of them are placed."""

    name = "TestQuorum"

    def _members_placed(self, group: str) -> int:
        return sum(1 for p in self.handle.snapshot().pods() if p.labels.get(GROUP) == group)

    def gang_of(self, pod: Pod) -> Gang | None:
        group = pod.labels.get(GROUP)
        if group is None:
            return None
        key = f"{pod.namespace}/{group}"
        return Gang(key, int(pod.labels[QUORUM]), self._members_placed(group))

    def permit(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        group = pod.labels.get(GROUP)
        if group is None:
            return None
        if self._members_placed(group) < int(pod.labels[QUORUM]):
            return Status.wait(60)
        for waiting in self.handle.waiting_pods():
            if waiting.pod.labels.get(GROUP) == group:
                waiting.allow(self.name)
        return None


@pytest.fixture(autouse=True)
def quorum_plugin(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setitem(plugins.BUILTIN_PLUGINS, Quorum.name, Quorum)
    monkeypatch.setattr(names, "is_plugin_name", lambda name: True)
    yield


POLICY_OBJECT: dict[str, Any] = {
    "apiVersion": "policyscheduler.io/v1alpha1",
    "kind": "SchedulingPolicy",
    "metadata": {"name": "gangs", "creationTimestamp": "2024-01-01T00:00:00Z"},
    "spec": {"plugins": {"permit": {"enabled": [{"name": "TestQuorum"}]}}},
}
POLICY = parse_policy(POLICY_OBJECT)


def member(name: str, group: str, quorum: int, second: int, cpu: str = "1") -> dict[str, Any]:
    raw = pod(name, labels={GROUP: group, QUORUM: str(quorum)}, requests={"cpu": cpu})
    raw["metadata"]["creationTimestamp"] = f"2024-05-01T00:00:{second:02d}Z"
    raw["spec"]["schedulerName"] = "policy-scheduler"
    return raw


def plain(name: str, second: int, cpu: str = "1") -> dict[str, Any]:
    raw = pod(name, requests={"cpu": cpu})
    raw["metadata"]["creationTimestamp"] = f"2024-05-01T00:00:{second:02d}Z"
    raw["spec"]["schedulerName"] = "policy-scheduler"
    return raw


def outcome(objects: list[dict[str, Any]]) -> dict[str, tuple[str | None, str]]:
    inputs = inputs_from_objects([(o, "test") for o in objects], policy=POLICY)
    decisions = asyncio.run(simulate(inputs, explain=False))
    return {d.pod.name: (d.node, d.message) for d in decisions}


def test_a_gang_that_fits_is_placed_whole() -> None:
    got = outcome(
        [
            node("n1", cpu="2"),
            node("n2", cpu="2"),
            member("a-0", "a", 3, 1),
            member("a-1", "a", 3, 2),
            member("a-2", "a", 3, 3),
        ]
    )
    assert all(placed is not None for placed, _ in got.values()), got


def test_two_gangs_that_fit_alone_but_not_together_do_not_deadlock() -> None:
    # Room for four one-CPU pods; two gangs of three. Planned one at a time, gang "a"
    # (first in the queue) takes three slots, gang "b" cannot have three and holds none:
    # the fourth slot is free for the pod after them.
    got = outcome(
        [
            node("n1", cpu="2"),
            node("n2", cpu="2"),
            member("a-0", "a", 3, 1),
            member("b-0", "b", 3, 2),
            member("a-1", "a", 3, 3),
            member("b-1", "b", 3, 4),
            member("a-2", "a", 3, 5),
            member("b-2", "b", 3, 6),
            plain("after", 7),
        ]
    )
    assert [got[f"a-{i}"][0] is not None for i in range(3)] == [True, True, True]
    assert [got[f"b-{i}"][0] for i in range(3)] == [None, None, None]
    assert got["b-0"][1].startswith(
        'TestQuorum: pod group "default/b": 1 of 3 members would fit; none is placed'
    )
    assert got["after"][0] is not None  # gang "b" holds nothing


def test_a_gang_short_of_members_holds_nothing() -> None:
    got = outcome(
        [node("n1", cpu="4"), member("c-0", "c", 3, 1), member("c-1", "c", 3, 2), plain("p", 3)]
    )
    assert got["c-0"] == (
        None,
        'TestQuorum: pod group "default/c": 2 of 3 members would fit; none is placed',
    )
    assert got["c-1"][0] is None
    assert got["p"][0] is not None


def test_the_reason_names_the_member_that_did_not_fit() -> None:
    got = outcome(
        [
            node("n1", cpu="2"),
            member("d-0", "d", 2, 1),
            member("d-1", "d", 2, 2, cpu="8"),
        ]
    )
    message = got["d-0"][1]
    assert "1 of 2 members would fit; none is placed" in message
    assert "default/d-1: 0/1 nodes are available: 1 Insufficient cpu." in message


# -- a plan that breaks off, in the operator's runtime -----------------------------------


def runtime_with_gang(api: FakeApi) -> tuple[SchedulerRuntime, list[str]]:
    runtime = SchedulerRuntime(api, clock=asyncio.get_running_loop().time)
    runtime.handle("ADDED", copy.deepcopy(POLICY_OBJECT))
    runtime.handle("ADDED", node("n1", cpu="3"))
    uids = []
    for i in range(3):
        raw = member(f"g-{i}", "g", 3, i)
        uids.append(raw["metadata"]["uid"])
        runtime.handle("ADDED", raw)
    return runtime, uids


def breaking_on(second: Callable[[], Awaitable[None]]) -> Callable[..., Any]:
    """Decider._cycle, with ``second()`` awaited when the plan reaches its 2nd member."""
    cycle = Decider._cycle
    calls = 0

    async def patched(self: Decider, queued: Any, policy: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 2:
            await second()
        return await cycle(self, queued, policy)

    return patched


@pytest.mark.looptime
async def test_a_plan_broken_off_by_a_bug_loses_no_member(monkeypatch: pytest.MonkeyPatch) -> None:
    # A bug half-way through the plan (the first member assumed, the others taken from
    # the queue): every member goes back to the queue, nothing stays assumed, and the
    # gang is planned again and bound whole.
    async def bug() -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(Decider, "_cycle", breaking_on(bug))
    api = FakeApi()
    runtime, _ = runtime_with_gang(api)
    task = asyncio.create_task(runtime.run())
    try:
        loop = asyncio.get_running_loop()
        started = loop.time()
        while len(api.bindings) < 3:
            assert loop.time() - started < 30, (api.bindings, runtime.queue.lengths())
            await asyncio.sleep(0.05)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert sorted(api.bindings) == [
        ("default/g-0", "n1"),
        ("default/g-1", "n1"),
        ("default/g-2", "n1"),
    ]


@pytest.mark.looptime
async def test_a_plan_the_stopping_loop_cancels_returns_every_member(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Leadership lost while the plan is under way: the members, assumed or taken, are
    # back in the queue and nothing is assumed, for whoever schedules next.
    reached = asyncio.Event()

    async def hang() -> None:
        reached.set()
        await asyncio.Event().wait()

    monkeypatch.setattr(Decider, "_cycle", breaking_on(hang))
    api = FakeApi()
    runtime, uids = runtime_with_gang(api)
    task = asyncio.create_task(runtime.run())
    await reached.wait()
    assert runtime.cache.assumed_count == 1
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert [runtime.queue.where(uid) for uid in uids] == ["backoff"] * 3
    assert runtime.cache.assumed_count == 0
    assert api.bindings == []


@pytest.mark.looptime
async def test_a_gang_given_up_evicts_nobody_and_clears_the_nominations_it_overrode() -> None:
    # m-0 would preempt "low" on n0, overriding "waiter"'s nomination there; but the
    # gang cannot have its two members placed: nobody is evicted, m-0 is not nominated,
    # and waiter's nomination, withdrawn in the cache, is cleared in the API as well.
    api = FakeApi()
    runtime = SchedulerRuntime(api, clock=asyncio.get_running_loop().time)
    runtime.handle("ADDED", copy.deepcopy(POLICY_OBJECT))
    runtime.handle("ADDED", node("n0", cpu="2"))
    runtime.handle("ADDED", pod("low", requests={"cpu": "2"}, node_name="n0", priority=0))
    waiter = plain("waiter", 0, cpu="2")
    waiter["spec"]["priority"] = 5
    waiter["spec"]["schedulerName"] = "someone-else"
    waiter["status"] = {"nominatedNodeName": "n0"}
    runtime.handle("ADDED", waiter)
    for i in range(2):
        raw = member(f"m-{i}", "m", 2, i, cpu="2")
        raw["spec"]["priority"] = 10
        runtime.handle("ADDED", raw)
    queued = runtime.queue.pop_nowait()
    assert queued is not None and queued.pod.name == "m-0"
    await runtime.schedule_one(queued)
    await runtime.drain()
    assert api.deletions == [] and api.bindings == []
    assert api.nominations == [("default/waiter", None)]


@pytest.mark.looptime
async def test_a_members_binding_refused_for_good_fails_after_a_few_tries() -> None:
    # The API takes the first binding and refuses every other (a webhook that says no):
    # the second member is bound again on its place a few times, then its binding
    # fails as any pod's: unreserved, told why, and back in the queue.
    api = FakeApi()
    runtime = SchedulerRuntime(api, clock=asyncio.get_running_loop().time)
    runtime.handle("ADDED", copy.deepcopy(POLICY_OBJECT))
    runtime.handle("ADDED", node("n1", cpu="2"))
    members = [member(f"m-{i}", "m", 2, i) for i in range(2)]
    for raw in members:
        runtime.handle("ADDED", raw)
    api.statuses["bind"] = [201, 403]
    queued = runtime.queue.pop_nowait()
    assert queued is not None
    await runtime.schedule_one(queued)
    await runtime.drain()
    assert len(api.bindings) == 1 + GANG_BIND_TRIES
    (first, _), (refused, _) = api.bindings[0], api.bindings[-1]
    assert {first, refused} == {"default/m-0", "default/m-1"}
    name = refused.split("/")[1]
    assert [
        e["message"]
        for e in api.events
        if e["type"] == "Warning" and e["involvedObject"]["name"] == name
    ] == ["Binding rejected: HTTP 403"]
    refused_uid = next(raw["metadata"]["uid"] for raw in members if raw["metadata"]["name"] == name)
    assert not runtime.cache.is_placed(refused_uid)
    assert runtime.queue.where(refused_uid) == "backoff"
