"""The Lease renewed on a thread of its own (``elect_on_own_thread``), in real time.

What a cluster operator relies on: a scheduling cycle that holds the operator's loop for
longer than the renew deadline (a slow synchronous plugin) neither loses the Lease nor
makes the leader stop; ``on_started`` / ``on_stopped`` still run on the operator's loop;
stopping the operator steps down there and releases the Lease.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable

from policy_scheduler.runtime.leadership import LeaderElector, elect_on_own_thread
from runtime.test_leadership import FakeApi, LeaseStore

NS, NAME = "kube-system", "policy-scheduler"


async def wait_for(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.01)


async def test_a_blocked_loop_keeps_the_lease_and_steps_down_on_it_when_stopped() -> None:
    store = LeaseStore()
    elector = LeaderElector(
        FakeApi(store),  # replaced by the thread's own
        namespace=NS,
        name=NAME,
        identity="me",
        lease_duration=1.0,
        renew_deadline=0.6,
        retry_period=0.05,
    )
    home = threading.current_thread()
    calls: list[tuple[str, threading.Thread]] = []

    async def on_started() -> None:
        calls.append(("started", threading.current_thread()))

    async def on_stopped() -> None:
        calls.append(("stopped", threading.current_thread()))

    async def make_api() -> tuple[FakeApi, Callable[[], Awaitable[None]]]:
        async def close() -> None:
            calls.append(("closed", threading.current_thread()))

        return FakeApi(store), close

    election = asyncio.create_task(elect_on_own_thread(elector, make_api, on_started, on_stopped))
    await wait_for(lambda: ("started", home) in calls)
    assert elector.is_leader

    blocked_from = time.monotonic()
    time.sleep(1.5)  # the loop held, as by a cycle of 1.5 s: over twice the renew deadline
    blocked_until = time.monotonic()

    renewed_meanwhile = [at for who, at in store.writes if blocked_from < at < blocked_until]
    assert len(renewed_meanwhile) >= 5, store.writes  # every 50 ms or so, not waiting
    assert elector.is_leader  # so the decisions of that cycle are bound
    assert [what for what, _ in calls] == ["started"]  # never stopped meanwhile

    election.cancel()
    await asyncio.wait([election])
    assert election.cancelled()
    assert [what for what, _ in calls] == ["started", "stopped", "closed"]
    assert calls[1][1] is home  # stepping down ran on the operator's loop
    assert calls[2][1] is not home  # the Lease's client belongs to the election's thread
    assert store.spec["holderIdentity"] == ""  # released: a standby takes over at once


async def test_losing_the_lease_stops_the_scheduling_on_the_operators_loop() -> None:
    store = LeaseStore()
    elector = LeaderElector(
        FakeApi(store),
        namespace=NS,
        name=NAME,
        identity="me",
        lease_duration=1.0,
        renew_deadline=0.6,
        retry_period=0.05,
    )
    home = threading.current_thread()
    stopped: list[threading.Thread] = []
    started = asyncio.Event()

    async def on_started() -> None:
        started.set()

    async def on_stopped() -> None:
        stopped.append(threading.current_thread())

    async def make_api() -> tuple[FakeApi, Callable[[], Awaitable[None]]]:
        async def close() -> None:
            pass

        return FakeApi(store), close

    election = asyncio.create_task(elect_on_own_thread(elector, make_api, on_started, on_stopped))
    try:
        await asyncio.wait_for(started.wait(), 5)
        # Someone else takes the Lease over (kubectl, another scheduler): we step down.
        store.force({"holderIdentity": "other", "leaseDurationSeconds": 60})
        await wait_for(lambda: bool(stopped))
        assert stopped == [home]
        assert not elector.is_leader
    finally:
        election.cancel()
        await asyncio.wait([election])
