"""Leader election over an in-memory Lease store that enforces resourceVersion (409s).

Step-level tests drive ``try_acquire_or_renew()`` with hand-advanced fake clocks;
``run()`` tests use looptime, so the loop's fake time is the electors' clock and
15-second leases pass in milliseconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import itertools
import re
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from policy_scheduler.runtime.leadership import ElectionThread, LeaderElector

NS, NAME = "kube-system", "policy-scheduler"
BASE = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


class LeaseStore:
    """The API server's side: one Lease, compare-and-swap on resourceVersion."""

    def __init__(self) -> None:
        self.lease: dict[str, Any] | None = None
        self.version = 0
        self.conflicts = 0
        self.writes: list[tuple[str, float]] = []  # (holderIdentity, loop time or 0)

    @property
    def spec(self) -> dict[str, Any]:
        assert self.lease is not None
        spec: dict[str, Any] = self.lease["spec"]
        return spec

    def _store(self, body: Mapping[str, Any]) -> None:
        self.version += 1
        self.lease = copy.deepcopy(dict(body))
        self.lease["metadata"] = {
            **self.lease.get("metadata", {}),
            "resourceVersion": str(self.version),
        }
        try:
            at = asyncio.get_running_loop().time()
        except RuntimeError:
            at = 0.0
        self.writes.append((self.lease["spec"].get("holderIdentity", ""), at))

    def force(self, spec: Mapping[str, Any]) -> None:
        """Someone outside the electors writes the Lease (kubectl, another scheduler)."""
        self._store({"metadata": {"name": NAME, "namespace": NS}, "spec": dict(spec)})


class FakeApi:
    """One replica's view of the API server; ``down`` makes its lease calls fail."""

    def __init__(self, store: LeaseStore) -> None:
        self.store = store
        self.down: str | None = None  # None | "error" | "hang" | "forbidden"

    async def _network(self) -> None:
        # Every call yields once, so concurrent electors interleave like real requests.
        await asyncio.sleep(0)
        if self.down == "error":
            raise ConnectionError("apiserver unreachable")
        if self.down == "hang":
            await asyncio.Event().wait()

    async def get_lease(self, namespace: str, name: str) -> dict[str, Any] | None:
        await self._network()
        return copy.deepcopy(self.store.lease)

    async def create_lease(self, namespace: str, body: Mapping[str, Any]) -> int:
        await self._network()
        if self.down == "forbidden":
            return 403
        if self.store.lease is not None:
            self.store.conflicts += 1
            return 409  # AlreadyExists
        self.store._store(body)
        return 201

    async def replace_lease(self, namespace: str, name: str, body: Mapping[str, Any]) -> int:
        await self._network()
        if self.down == "forbidden":
            return 403
        if self.store.lease is None:
            return 404
        sent = body.get("metadata", {}).get("resourceVersion")
        if sent != self.store.lease["metadata"]["resourceVersion"]:
            self.store.conflicts += 1
            return 409
        self.store._store(body)
        return 200

    # The rest of the Api protocol, unused by leader election.
    async def bind(self, namespace: str, name: str, uid: str, node: str) -> int:
        raise AssertionError("not used")

    async def patch_pod_status(self, namespace: str, name: str, patch: Mapping[str, Any]) -> int:
        raise AssertionError("not used")

    async def create_event(self, namespace: str, body: Mapping[str, Any]) -> int:
        raise AssertionError("not used")

    async def patch_event(self, namespace: str, name: str, patch: Mapping[str, Any]) -> int:
        raise AssertionError("not used")

    async def patch_policy_status(self, name: str, status: Mapping[str, Any]) -> int:
        raise AssertionError("not used")


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def elector(
    store: LeaseStore,
    identity: str,
    clock: Callable[[], float],
    *,
    skew: float = 0.0,
    **kwargs: Any,
) -> tuple[LeaderElector, FakeApi]:
    """An elector whose wall clock is off by ``skew`` seconds (it must not matter)."""
    api = FakeApi(store)

    def wall() -> datetime:
        return BASE + timedelta(seconds=clock() + skew)

    le = LeaderElector(
        api, namespace=NS, name=NAME, identity=identity, clock=clock, wall_clock=wall, **kwargs
    )
    return le, api


# ---------------------------------------------------------------- one step at a time


async def test_first_elector_creates_the_lease_and_the_other_stands_by() -> None:
    store, clock = LeaseStore(), FakeClock()
    a, _ = elector(store, "a", clock)
    b, _ = elector(store, "b", clock)

    assert await a.try_acquire_or_renew() is True
    assert await b.try_acquire_or_renew() is False

    assert (a.is_leader, b.is_leader) == (True, False)
    assert b.leader == "a"
    assert store.lease is not None
    assert store.lease["apiVersion"] == "coordination.k8s.io/v1"
    assert store.lease["kind"] == "Lease"
    assert store.lease["metadata"]["name"] == NAME
    assert store.spec["holderIdentity"] == "a"
    assert store.spec["leaseDurationSeconds"] == 15
    assert store.spec["leaseTransitions"] == 0
    assert store.spec["renewTime"] == "2024-05-01T12:00:00.000000Z"
    assert store.spec["acquireTime"] == store.spec["renewTime"]


async def test_renewal_moves_renew_time_and_keeps_acquire_time() -> None:
    store, clock = LeaseStore(), FakeClock()
    a, _ = elector(store, "a", clock)
    await a.try_acquire_or_renew()

    clock.now = 2.5
    assert await a.try_acquire_or_renew() is True

    assert store.spec["acquireTime"] == "2024-05-01T12:00:00.000000Z"
    assert store.spec["renewTime"] == "2024-05-01T12:00:02.500000Z"
    assert MICRO_TIME.match(store.spec["renewTime"])
    assert store.spec["leaseTransitions"] == 0


@pytest.mark.parametrize(
    "skew_a, skew_b",
    [
        pytest.param(0.0, 0.0, id="clocks-agree"),
        pytest.param(0.0, 3600.0, id="standby-wall-clock-an-hour-ahead"),
        pytest.param(-86400.0, 0.0, id="leader-wall-clock-a-day-behind"),
        pytest.param(0.0, -3600.0, id="standby-wall-clock-an-hour-behind"),
    ],
)
async def test_standby_takes_over_only_lease_duration_after_it_saw_the_last_renewal(
    skew_a: float, skew_b: float
) -> None:
    store, clock = LeaseStore(), FakeClock()
    a, _ = elector(store, "a", clock, skew=skew_a)
    b, _ = elector(store, "b", clock, skew=skew_b)
    await a.try_acquire_or_renew()

    clock.now = 1.0  # b first sees a's record now; a never renews again
    assert await b.try_acquire_or_renew() is False
    clock.now = 15.9
    assert await b.try_acquire_or_renew() is False
    clock.now = 16.1
    assert await b.try_acquire_or_renew() is True

    assert b.is_leader and not a.is_leader
    assert store.spec["holderIdentity"] == "b"
    assert store.spec["leaseTransitions"] == 1
    assert await a.try_acquire_or_renew() is False
    assert a.leader == "b"


async def test_each_renewal_restarts_the_standbys_wait() -> None:
    store, clock = LeaseStore(), FakeClock()
    a, _ = elector(store, "a", clock)
    b, _ = elector(store, "b", clock)
    await a.try_acquire_or_renew()
    clock.now = 1.0
    assert await b.try_acquire_or_renew() is False

    clock.now = 10.0
    assert await a.try_acquire_or_renew() is True
    clock.now = 12.0  # b sees the new renewTime: its 15 s start again from here
    assert await b.try_acquire_or_renew() is False
    clock.now = 26.9
    assert await b.try_acquire_or_renew() is False
    clock.now = 27.1
    assert await b.try_acquire_or_renew() is True


async def test_a_standby_that_arrives_late_still_waits_a_full_lease_duration() -> None:
    # The record was written long ago by a's wall clock, but b cannot know how long ago
    # without trusting a's clock: it waits lease_duration from its own first look.
    store, clock = LeaseStore(), FakeClock()
    a, _ = elector(store, "a", clock)
    await a.try_acquire_or_renew()
    clock.now = 1000.0
    b, _ = elector(store, "b", clock)

    assert await b.try_acquire_or_renew() is False
    clock.now = 1014.9
    assert await b.try_acquire_or_renew() is False
    clock.now = 1015.0
    assert await b.try_acquire_or_renew() is True


async def test_is_leader_turns_false_renew_deadline_after_the_last_renewal() -> None:
    # The paused-leader guarantee: no loop needs to run for is_leader to turn False.
    store, clock = LeaseStore(), FakeClock()
    a, _ = elector(store, "a", clock)
    await a.try_acquire_or_renew()

    clock.now = 9.9
    assert a.is_leader is True
    clock.now = 10.0
    assert a.is_leader is False
    assert await a.try_acquire_or_renew() is True  # the lease was still ours: renewed
    assert a.is_leader is True


async def test_leading_again_after_a_lapse_is_a_new_term() -> None:
    # A decision taken in term 1 must not be acted on in term 2, even by the same
    # replica: between them another leader may have changed the cluster.
    store, clock = LeaseStore(), FakeClock()
    a, _ = elector(store, "a", clock)
    assert a.term == 0
    await a.try_acquire_or_renew()
    assert a.term == 1
    clock.now = 5.0
    await a.try_acquire_or_renew()  # renewed in time: the same term
    assert a.term == 1
    clock.now = 16.0  # past renew_deadline since the last renewal: not leading
    assert a.term == 0
    assert await a.try_acquire_or_renew() is True
    assert a.term == 2


@pytest.mark.parametrize(
    "existing",
    [
        pytest.param(None, id="both-create"),
        pytest.param({"holderIdentity": "c", "leaseDurationSeconds": 15}, id="both-take-over"),
        pytest.param({"holderIdentity": "", "leaseDurationSeconds": 1}, id="both-take-released"),
    ],
)
async def test_a_409_race_leaves_exactly_one_leader(existing: dict[str, Any] | None) -> None:
    store, clock = LeaseStore(), FakeClock()
    if existing is not None:
        store.force(existing)
    a, _ = elector(store, "a", clock)
    b, _ = elector(store, "b", clock)
    if existing is not None and existing["holderIdentity"]:
        # Both watch c's record, then it expires for both.
        assert await a.try_acquire_or_renew() is False
        assert await b.try_acquire_or_renew() is False
        clock.now = 100.0
    conflicts_before = store.conflicts

    results = await asyncio.gather(a.try_acquire_or_renew(), b.try_acquire_or_renew())

    assert sorted(results) == [False, True]
    assert store.conflicts == conflicts_before + 1  # the loser's write was really refused
    winner, loser = (a, b) if results[0] else (b, a)
    assert store.spec["holderIdentity"] == winner.identity
    assert winner.is_leader and not loser.is_leader
    assert await loser.try_acquire_or_renew() is False


async def test_api_failures_count_as_not_acquired() -> None:
    store, clock = LeaseStore(), FakeClock()
    a, api = elector(store, "a", clock)
    await a.try_acquire_or_renew()

    api.down = "error"
    clock.now = 2.0
    assert await a.try_acquire_or_renew() is False
    api.down = "forbidden"
    assert await a.try_acquire_or_renew() is False
    assert a.is_leader is True  # still within renew_deadline of the last renewal
    clock.now = 10.0
    assert a.is_leader is False


async def test_a_restarted_replica_with_the_same_identity_renews_at_once() -> None:
    store, clock = LeaseStore(), FakeClock()
    old, _ = elector(store, "a", clock)
    await old.try_acquire_or_renew()
    clock.now = 3.0
    new, _ = elector(store, "a", clock)

    assert await new.try_acquire_or_renew() is True
    assert store.spec["leaseTransitions"] == 0
    assert store.spec["acquireTime"] == "2024-05-01T12:00:00.000000Z"


async def test_release_lets_the_standby_take_over_immediately() -> None:
    store, clock = LeaseStore(), FakeClock()
    a, _ = elector(store, "a", clock)
    b, _ = elector(store, "b", clock)
    await a.try_acquire_or_renew()
    assert await b.try_acquire_or_renew() is False

    assert await a.release() is True
    assert a.is_leader is False
    assert store.spec["holderIdentity"] == ""
    assert store.spec["leaseDurationSeconds"] == 1
    assert await b.try_acquire_or_renew() is True  # no clock advance needed
    assert store.spec["leaseTransitions"] == 1


async def test_release_leaves_someone_elses_lease_alone() -> None:
    store, clock = LeaseStore(), FakeClock()
    a, _ = elector(store, "a", clock)
    b, _ = elector(store, "b", clock)
    await b.try_acquire_or_renew()
    version = store.version

    assert await a.release() is False
    assert store.version == version
    assert store.spec["holderIdentity"] == "b"


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param({"renew_deadline": 15.0}, id="renew-deadline-not-below-lease-duration"),
        pytest.param({"retry_period": 10.0}, id="retry-period-not-below-renew-deadline"),
        pytest.param({"identity": ""}, id="empty-identity"),
    ],
)
def test_unsafe_settings_are_refused(kwargs: dict[str, Any]) -> None:
    settings: dict[str, Any] = {"identity": "a", **kwargs}
    with pytest.raises(ValueError, match="leader election"):
        LeaderElector(FakeApi(LeaseStore()), namespace=NS, name=NAME, **settings)


# ---------------------------------------------------------------- run(), in loop time


class Replica:
    """An elector in run(), recording when its callbacks were called (loop time)."""

    def __init__(self, store: LeaseStore, identity: str, **kwargs: Any) -> None:
        loop = asyncio.get_running_loop()
        self.loop = loop
        self.elector, self.api = elector(store, identity, loop.time, **kwargs)
        self.events: list[tuple[str, float]] = []
        self.task: asyncio.Task[None] | None = None

    async def _started(self) -> None:
        self.events.append(("started", self.loop.time()))

    async def _stopped(self) -> None:
        self.events.append(("stopped", self.loop.time()))

    def start(self) -> None:
        self.task = asyncio.create_task(self.elector.run(self._started, self._stopped))

    async def cancel(self) -> None:
        assert self.task is not None
        self.task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await self.task

    def when(self, what: str) -> list[float]:
        return [at for kind, at in self.events if kind == what]


@asynccontextmanager
async def cleanup(*replicas: Replica) -> AsyncIterator[None]:
    """Stop the replicas inside the test, while the loop time is still fake."""
    try:
        yield
    finally:
        tasks = [r.task for r in replicas if r.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


@pytest.mark.looptime
async def test_run_keeps_exactly_one_leader() -> None:
    store = LeaseStore()
    a, b = Replica(store, "a"), Replica(store, "b")
    async with cleanup(a, b):
        a.start()
        await asyncio.sleep(0.5)
        b.start()
        leaders = []
        for _ in range(120):
            await asyncio.sleep(0.5)
            leaders.append([r.elector.identity for r in (a, b) if r.elector.is_leader])

        assert all(found == ["a"] for found in leaders)
        assert [kind for kind, _ in a.events] == ["started"]
        assert b.events == []
        renewals = [at for holder, at in store.writes if holder == "a"]
        gaps = [later - earlier for earlier, later in itertools.pairwise(renewals)]
        assert max(gaps) <= 2.0 + 1e-6


@pytest.mark.looptime
@pytest.mark.parametrize("failure", ["error", "hang", "forbidden"])
async def test_a_leader_that_cannot_renew_steps_down_before_the_standby_starts(
    failure: str,
) -> None:
    store = LeaseStore()
    a, b = Replica(store, "a"), Replica(store, "b")
    async with cleanup(a, b):
        a.start()
        await asyncio.sleep(0.5)
        b.start()
        await asyncio.sleep(20.0)
        a.api.down = failure  # a is cut off from the API server; b is not
        await asyncio.sleep(60.0)

        last_renewal = max(at for holder, at in store.writes if holder == "a")
        (stopped,) = a.when("stopped")
        (b_started,) = b.when("started")
        # a stops within renew_deadline (+ one retry period at most) of its last renewal...
        assert stopped - last_renewal <= 10.0 + 2.0
        # ...and b starts only after the lease expired (15 s unrenewed), after a stopped.
        assert b_started - last_renewal >= 15.0
        assert stopped < b_started
        assert store.spec["holderIdentity"] == "b"


@pytest.mark.looptime
async def test_a_leader_steps_down_as_soon_as_it_sees_another_holder() -> None:
    store = LeaseStore()
    a = Replica(store, "a")
    async with cleanup(a):
        a.start()
        await asyncio.sleep(5.0)
        forced_at = a.loop.time()
        store.force({"holderIdentity": "intruder", "leaseDurationSeconds": 15})
        await asyncio.sleep(10.0)

        (stopped,) = a.when("stopped")
        assert stopped - forced_at <= 2.0 + 1e-6  # the next renewal attempt, not the deadline
        assert not a.elector.is_leader
        assert store.spec["holderIdentity"] == "intruder"


@pytest.mark.looptime
async def test_cancelling_the_leader_releases_the_lease_to_the_standby_at_once() -> None:
    store = LeaseStore()
    a, b = Replica(store, "a"), Replica(store, "b")
    async with cleanup(a, b):
        a.start()
        await asyncio.sleep(0.5)
        b.start()
        await asyncio.sleep(20.0)
        cancelled_at = a.loop.time()
        await a.cancel()
        assert [kind for kind, _ in a.events] == ["started", "stopped"]
        assert store.spec["holderIdentity"] == ""
        assert store.spec["leaseDurationSeconds"] == 1
        await asyncio.sleep(5.0)

        (b_started,) = b.when("started")
        assert b_started - cancelled_at <= 2.0 + 1e-6  # one retry period, not 15 s
        assert store.spec["holderIdentity"] == "b"
        assert store.spec["leaseTransitions"] == 1


@pytest.mark.looptime
async def test_cancelling_a_standby_does_not_call_on_stopped_or_touch_the_lease() -> None:
    store = LeaseStore()
    a, b = Replica(store, "a"), Replica(store, "b")
    async with cleanup(a, b):
        a.start()
        await asyncio.sleep(0.5)
        b.start()
        await asyncio.sleep(5.0)
        await b.cancel()
        await asyncio.sleep(5.0)

        assert b.events == []
        assert store.spec["holderIdentity"] == "a"
        assert all(holder == "a" for holder, _ in store.writes)


@pytest.mark.looptime
async def test_a_leader_that_lost_the_api_for_a_while_leads_again_when_it_returns() -> None:
    store = LeaseStore()
    a = Replica(store, "a")
    async with cleanup(a):
        a.start()
        await asyncio.sleep(5.0)
        a.api.down = "error"
        await asyncio.sleep(30.0)
        assert not a.elector.is_leader
        a.api.down = None
        await asyncio.sleep(5.0)

        assert [kind for kind, _ in a.events] == ["started", "stopped", "started"]
        assert a.elector.is_leader


async def test_run_in_real_time_with_a_short_retry_period() -> None:
    # The same loop without looptime: the real monotonic clock, 10 ms retries.
    store = LeaseStore()
    a = Replica(store, "a", lease_duration=0.5, renew_deadline=0.3, retry_period=0.01)
    async with cleanup(a):
        a.start()
        await asyncio.sleep(0.1)
        assert a.elector.is_leader
        renewals = len(store.writes)
        assert renewals >= 3
        await a.cancel()
        assert [kind for kind, _ in a.events] == ["started", "stopped"]
        assert store.spec["holderIdentity"] == ""


@pytest.mark.looptime
async def test_a_slow_on_started_does_not_stop_the_renewals() -> None:
    # Listing a big cluster in on_started must not let the lease expire meanwhile.
    store = LeaseStore()
    a, b = Replica(store, "a"), Replica(store, "b")
    finished: list[float] = []

    async def slow_start() -> None:
        await asyncio.sleep(30.0)
        finished.append(a.loop.time())

    async def stopped() -> None:
        a.events.append(("stopped", a.loop.time()))

    async with cleanup(a, b):
        a.task = asyncio.create_task(a.elector.run(slow_start, stopped))
        await asyncio.sleep(0.5)
        b.start()
        for _ in range(40):
            await asyncio.sleep(1.0)
            assert a.elector.is_leader and not b.elector.is_leader

        assert finished and a.events == [] and b.events == []
        assert store.spec["holderIdentity"] == "a"


@pytest.mark.looptime
async def test_leadership_lost_during_on_started_cancels_it_then_calls_on_stopped() -> None:
    store = LeaseStore()
    a = Replica(store, "a")
    seen: list[str] = []

    async def slow_start() -> None:
        try:
            await asyncio.sleep(60.0)
        except asyncio.CancelledError:
            seen.append("start cancelled")
            raise

    async def stopped() -> None:
        seen.append("stopped")

    async with cleanup(a):
        a.task = asyncio.create_task(a.elector.run(slow_start, stopped))
        await asyncio.sleep(1.0)
        a.api.down = "error"
        await asyncio.sleep(15.0)

        assert seen == ["start cancelled", "stopped"]
        assert not a.elector.is_leader


@pytest.mark.looptime
async def test_an_on_started_failure_steps_down_releases_and_tries_again() -> None:
    store = LeaseStore()
    a = Replica(store, "a")
    seen: list[str] = []
    holders: list[str] = []

    async def flaky_start() -> None:
        seen.append("start")
        if seen.count("start") == 1:
            raise RuntimeError("cannot list the cluster")

    async def on_stopped() -> None:
        seen.append("stopped")
        holders.append(str(store.spec["holderIdentity"]))

    async with cleanup(a):
        a.task = asyncio.create_task(a.elector.run(flaky_start, on_stopped))
        await asyncio.sleep(10.0)
        # The failure is logged, leadership given up, and the election goes on: the
        # second start succeeds and the replica leads (the task never ended).
        assert seen == ["start", "stopped", "start"]
        assert not a.task.done()
        assert a.elector.is_leader
        assert store.spec["holderIdentity"] == "a"


@pytest.mark.looptime
async def test_an_error_while_acquiring_never_ends_the_election() -> None:
    store = LeaseStore()
    a = Replica(store, "a")
    started: list[bool] = []

    async def on_started() -> None:
        started.append(True)

    async def on_stopped() -> None:
        pass

    async with cleanup(a):
        a.api.down = "error"
        a.task = asyncio.create_task(a.elector.run(on_started, on_stopped))
        await asyncio.sleep(60.0)
        assert not a.task.done() and started == []
        a.api.down = None
        await asyncio.sleep(5.0)
        assert started == [True] and a.elector.is_leader


# ---------------------------------------------------------------- on a thread of its own


async def test_the_election_thread_renews_while_the_loop_is_held_and_hands_over_on_it() -> None:
    """ElectionThread: the elector runs on its own thread and loop, with the API client
    ``connect`` makes there; on_started/on_stopped run on the caller's loop, and the
    Lease is still renewed while that loop is held (a synchronous plugin); cancelled,
    it stops leading on the caller's loop, releases the Lease and closes its client."""
    store = LeaseStore()
    le = LeaderElector(
        FakeApi(store),  # replaced by connect()'s, made in the thread's loop
        namespace=NS,
        name=NAME,
        identity="a",
        lease_duration=0.5,
        renew_deadline=0.3,
        retry_period=0.02,
    )
    loops: dict[str, asyncio.AbstractEventLoop] = {}
    closed = threading.Event()
    main = asyncio.get_running_loop()
    events: list[tuple[str, bool]] = []
    started = asyncio.Event()

    async def connect() -> tuple[FakeApi, Callable[[], Awaitable[None]]]:
        loops["election"] = asyncio.get_running_loop()

        async def close() -> None:
            closed.set()

        return FakeApi(store), close

    async def on_started() -> None:
        events.append(("started", asyncio.get_running_loop() is main))
        started.set()

    async def on_stopped() -> None:
        events.append(("stopped", asyncio.get_running_loop() is main))

    task = asyncio.create_task(ElectionThread(le, connect).run(on_started, on_stopped))
    try:
        await asyncio.wait_for(started.wait(), 5)
        assert loops["election"] is not main
        writes = len(store.writes)
        # Hold this loop past the lease duration, as a slow synchronous Filter does.
        deadline = time.monotonic() + 2 * le.lease_duration
        while time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(store.writes) - writes >= 5  # renewed meanwhile, from the other thread
        assert le.is_leader and store.spec["holderIdentity"] == "a"
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(task, 5)
    assert events == [("started", True), ("stopped", True)]
    assert store.spec["holderIdentity"] == ""  # released
    assert closed.is_set() and not le.is_leader
