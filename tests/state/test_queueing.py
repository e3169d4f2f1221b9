"""SchedulingQueue: order, backoff, the unschedulable pool and its moves, deletions and
updates wherever the pod is, re-list duplicates, and ``await pop()`` waking up.

All timing runs on a fake clock; only the ``pop()`` tests touch the event loop, with
short real timeouts."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from builders import pod
from fakes import FakeClock
from policy_scheduler.objects import Pod, parse_pod
from policy_scheduler.state.queueing import QueuedPod, SchedulingQueue

#: The API object each test pod was parsed from, by uid (a Pod keeps no copy of it).
_RAW: dict[str, dict[str, Any]] = {}


def _parsed(raw: dict[str, Any]) -> Pod:
    p = parse_pod(raw)
    _RAW[p.uid] = raw
    return p


def make(name: str, *, priority: int | None = None, created: str | None = None, **kw: Any) -> Pod:
    raw = pod(name, priority=priority, **kw)
    if created:
        raw["metadata"]["creationTimestamp"] = created
    return _parsed(raw)


def changed(p: Pod, **spec: Any) -> Pod:
    """A later copy of ``p`` (same uid) whose spec changed."""
    raw = copy.deepcopy(_RAW[p.uid])
    raw["spec"].update(spec)
    return _parsed(raw)


def relabeled(p: Pod) -> Pod:
    """A later copy of ``p`` whose labels changed (selectors of others may now match)."""
    raw = copy.deepcopy(_RAW[p.uid])
    raw["metadata"]["labels"] = {"app": "x"}
    return _parsed(raw)


def status_only(p: Pod) -> Pod:
    """A later copy of ``p`` where only the status changed (e.g. our own condition)."""
    raw = copy.deepcopy(_RAW[p.uid])
    raw["status"] = {"conditions": [{"type": "PodScheduled", "status": "False"}]}
    return _parsed(raw)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def queue(clock: FakeClock) -> SchedulingQueue:
    return SchedulingQueue(clock=clock)


def pop(queue: SchedulingQueue) -> QueuedPod:
    queued = queue.pop_nowait()
    assert queued is not None, f"nothing to pop: {queue.lengths()}"
    return queued


def drain_names(queue: SchedulingQueue) -> list[str]:
    names = []
    while (queued := queue.pop_nowait()) is not None:
        names.append(queued.pod.name)
        queue.done(queued.pod.uid)
    return names


# -- order -----------------------------------------------------------------------------------

T1, T2, T3 = "2024-01-01T00:00:01Z", "2024-01-01T00:00:02Z", "2024-01-01T00:00:03Z"


@pytest.mark.parametrize(
    ("arrivals", "expected"),
    [
        pytest.param(
            [("low", 0, T1), ("high", 100, T3), ("mid", 10, T2)],
            ["high", "mid", "low"],
            id="higher-priority-first",
        ),
        pytest.param(
            [("young", 0, T3), ("old", 0, T1), ("middle", 0, T2)],
            ["old", "middle", "young"],
            id="same-priority-older-first",
        ),
        pytest.param(
            [("first", 0, T1), ("second", 0, T1), ("third", 0, T1)],
            ["first", "second", "third"],
            id="same-priority-same-age-arrival-order",
        ),
        pytest.param(
            [("old-low", -5, T1), ("young-high", 5, T3), ("old-mid", 0, T1), ("young-mid", 0, T2)],
            ["young-high", "old-mid", "young-mid", "old-low"],
            id="priority-before-age",
        ),
        pytest.param(
            [("b", None, None), ("a", None, None)],
            ["b", "a"],
            id="no-priority-no-timestamp-arrival-order",
        ),
    ],
)
def test_pop_order(
    queue: SchedulingQueue, arrivals: list[tuple[str, int | None, str | None]], expected: list[str]
) -> None:
    for name, priority, created in arrivals:
        queue.add(make(name, priority=priority, created=created))
    assert drain_names(queue) == expected


def test_pop_marks_an_attempt(queue: SchedulingQueue, clock: FakeClock) -> None:
    p = make("a")
    queue.add(p)
    queued = pop(queue)
    assert queued.attempts == 1
    assert queued.last_attempt == clock.now
    assert queue.where(p.uid) == "in-flight"
    assert p.uid in queue
    queue.done(p.uid)
    assert queue.where(p.uid) is None
    assert p.uid not in queue
    assert queue.pop_nowait() is None


# -- backoff ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("attempts", "seconds"),
    [
        pytest.param(0, 0.0, id="never-tried"),
        pytest.param(1, 1.0, id="1st"),
        pytest.param(2, 2.0, id="2nd"),
        pytest.param(3, 4.0, id="3rd"),
        pytest.param(4, 8.0, id="4th"),
        pytest.param(5, 10.0, id="5th-capped"),
        pytest.param(12, 10.0, id="12th-capped"),
    ],
)
def test_backoff_doubles_from_1s_to_10s(
    queue: SchedulingQueue, attempts: int, seconds: float
) -> None:
    assert queue.backoff_duration(attempts) == seconds


def test_an_error_backs_off_with_doubling_delays(queue: SchedulingQueue, clock: FakeClock) -> None:
    p = make("a")
    queue.add(p)
    queued = pop(queue)
    waits = []
    for _ in range(6):
        failed_at = clock.now
        queue.error(queued)
        assert queue.where(p.uid) == "backoff"
        # Step the clock by 0.5 s until the pod comes back.
        while (again := queue.pop_nowait()) is None:
            clock.now += 0.5
        waits.append(clock.now - failed_at)
        queued = again
    assert waits == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]
    assert queued.attempts == 7


def test_backoff_holds_the_pod_until_its_time(queue: SchedulingQueue, clock: FakeClock) -> None:
    p = make("a")
    queue.add(p)
    queue.error(pop(queue))  # attempt 1: 1 s
    clock.now += 0.99
    assert queue.pop_nowait() is None
    assert queue.lengths() == {
        "active": 0,
        "backoff": 1,
        "unschedulable": 0,
        "waiting": 0,
        "gated": 0,
    }
    clock.now += 0.01
    queued = pop(queue)
    assert queued.attempts == 2
    queue.error(queued)  # attempt 2: 2 s
    clock.now += 1.5
    assert queue.pop_nowait() is None
    clock.now += 0.5
    assert pop(queue).attempts == 3


def test_a_backed_off_pod_does_not_block_others(queue: SchedulingQueue) -> None:
    a, b = make("a", priority=10), make("b")
    queue.add(a)
    queue.add(b)
    queue.error(pop(queue))  # a backs off
    assert pop(queue).pod.name == "b"


# -- unschedulable ---------------------------------------------------------------------------


def test_an_unschedulable_pod_waits_for_a_move(queue: SchedulingQueue, clock: FakeClock) -> None:
    p = make("a")
    queue.add(p)
    queue.unschedulable(pop(queue))
    assert queue.where(p.uid) == "unschedulable"
    clock.now += 30  # long past its backoff, but nothing changed
    assert queue.pop_nowait() is None
    queue.move_all()
    assert queue.where(p.uid) == "active"
    assert pop(queue).attempts == 2


def test_move_all_sends_a_pod_still_backing_off_to_backoff(
    queue: SchedulingQueue, clock: FakeClock
) -> None:
    p = make("a")
    queue.add(p)
    queue.unschedulable(pop(queue))
    clock.now += 0.5  # its 1 s backoff has not run out yet
    queue.move_all()
    assert queue.where(p.uid) == "backoff"
    assert queue.pop_nowait() is None
    clock.now += 0.5
    assert pop(queue).pod.uid == p.uid


@pytest.mark.parametrize(
    ("waited", "where"),
    [
        pytest.param(59.0, "unschedulable", id="59s-still-waiting"),
        pytest.param(60.0, "active", id="60s-retried"),
    ],
)
def test_flush_retries_unschedulable_pods_after_60s(
    queue: SchedulingQueue, clock: FakeClock, waited: float, where: str
) -> None:
    p = make("a")
    queue.add(p)
    queue.unschedulable(pop(queue))
    clock.now += waited
    queue.flush()
    assert queue.where(p.uid) == where


def test_pop_flushes_by_itself(queue: SchedulingQueue, clock: FakeClock) -> None:
    p = make("a")
    queue.add(p)
    queue.unschedulable(pop(queue))
    clock.now += 60
    assert pop(queue).pod.uid == p.uid


@pytest.mark.parametrize(
    ("move_during_attempt", "where"),
    [
        pytest.param(False, "unschedulable", id="no-move-unschedulable"),
        pytest.param(True, "backoff", id="move-during-attempt-backoff"),
    ],
)
def test_move_request_cycle(queue: SchedulingQueue, move_during_attempt: bool, where: str) -> None:
    # A node added while the pod was being decided may be the one it needed: the
    # attempt could not see it, so the pod must not sleep in the unschedulable pool.
    p = make("a")
    queue.add(p)
    queue.move_all()  # before the attempt: the attempt sees the change
    queued = pop(queue)
    if move_during_attempt:
        queue.move_all()
    queue.unschedulable(queued)
    assert queue.where(p.uid) == where


def test_a_move_for_an_earlier_cycle_does_not_affect_later_attempts(
    queue: SchedulingQueue,
) -> None:
    a, b = make("a", priority=1), make("b")
    queue.add(a)
    queue.add(b)
    qa = pop(queue)
    queue.move_all()  # during a's attempt
    queue.unschedulable(qa)
    qb = pop(queue)  # b's attempt starts after the move
    queue.unschedulable(qb)
    assert queue.where(a.uid) == "backoff"
    assert queue.where(b.uid) == "unschedulable"


# -- delete ----------------------------------------------------------------------------------


def _put(queue: SchedulingQueue, clock: FakeClock, p: Pod, where: str) -> QueuedPod | None:
    queue.add(p)
    if where == "active":
        return None
    queued = pop(queue)
    if where == "backoff":
        queue.error(queued)
    elif where == "unschedulable":
        queue.unschedulable(queued)
    return queued


@pytest.mark.parametrize("where", ["active", "backoff", "unschedulable", "in-flight"])
def test_delete_removes_the_pod_wherever_it_is(
    queue: SchedulingQueue, clock: FakeClock, where: str
) -> None:
    p = make("a")
    _put(queue, clock, p, where)
    assert queue.where(p.uid) == where
    queue.delete(p.uid)
    assert p.uid not in queue
    assert queue.lengths() == {
        "active": 0,
        "backoff": 0,
        "unschedulable": 0,
        "waiting": 0,
        "gated": 0,
    }
    clock.now += 120
    queue.move_all()
    assert queue.pop_nowait() is None


@pytest.mark.parametrize("outcome", ["unschedulable", "error"])
def test_a_pod_deleted_while_in_flight_is_not_requeued(
    queue: SchedulingQueue, clock: FakeClock, outcome: str
) -> None:
    p = make("a")
    queue.add(p)
    queued = pop(queue)
    queue.delete(p.uid)  # the pod was deleted while being decided
    getattr(queue, outcome)(queued)
    assert p.uid not in queue
    clock.now += 120
    queue.move_all()
    assert queue.pop_nowait() is None


def test_delete_of_an_unknown_pod_is_harmless(queue: SchedulingQueue) -> None:
    queue.delete("nobody")
    assert queue.lengths() == {
        "active": 0,
        "backoff": 0,
        "unschedulable": 0,
        "waiting": 0,
        "gated": 0,
    }


def test_a_deleted_pod_leaves_no_trace_in_the_order(queue: SchedulingQueue) -> None:
    a, b = make("a", priority=10), make("b")
    queue.add(a)
    queue.add(b)
    queue.delete(a.uid)
    assert drain_names(queue) == ["b"]


# -- update and re-list duplicates -----------------------------------------------------------


@pytest.mark.parametrize(
    ("update", "where"),
    [
        pytest.param(lambda p: changed(p, nodeSelector={"disk": "ssd"}), "active", id="spec"),
        pytest.param(relabeled, "active", id="labels"),
        pytest.param(status_only, "unschedulable", id="status-only"),
        pytest.param(lambda p: p, "unschedulable", id="same-copy"),
    ],
)
def test_update_of_an_unschedulable_pod(
    queue: SchedulingQueue, clock: FakeClock, update: Any, where: str
) -> None:
    p = make("a")
    queue.add(p)
    queue.unschedulable(pop(queue))
    clock.now += 5  # past its backoff
    new = update(p)
    queue.add(new)
    assert queue.where(p.uid) == where
    if where == "active":
        assert pop(queue).pod is new  # the new copy is the one decided


def test_update_with_a_changed_spec_during_backoff_waits_for_the_backoff(
    queue: SchedulingQueue, clock: FakeClock
) -> None:
    p = make("a")
    queue.add(p)
    queue.unschedulable(pop(queue))
    queue.add(changed(p, nodeSelector={"disk": "ssd"}))
    assert queue.where(p.uid) == "backoff"


@pytest.mark.parametrize("where", ["active", "backoff", "in-flight"])
def test_update_keeps_the_new_copy_without_moving_it(
    queue: SchedulingQueue, clock: FakeClock, where: str
) -> None:
    p = make("a")
    queued = _put(queue, clock, p, where)
    new = changed(p, nodeSelector={"disk": "ssd"})
    queue.add(new)
    assert queue.where(p.uid) == where
    if where == "in-flight":
        assert queued is not None and queued.pod is new
    else:
        clock.now += 10
        assert pop(queue).pod is new


def test_update_of_an_unknown_pod_adds_it(queue: SchedulingQueue) -> None:
    p = make("a")
    queue.add(p)
    assert queue.where(p.uid) == "active"


@pytest.mark.parametrize("where", ["active", "backoff", "unschedulable", "in-flight"])
def test_relist_duplicates_do_not_duplicate(
    queue: SchedulingQueue, clock: FakeClock, where: str
) -> None:
    p = make("a")
    queued = _put(queue, clock, p, where)
    for _ in range(3):
        queue.add(p)  # the re-list replays it as ADDED
    assert queue.where(p.uid) == where
    if queued is not None and where == "in-flight":
        queue.done(p.uid)
    clock.now += 120
    queue.move_all()
    popped = drain_names(queue)
    assert popped == ([] if where == "in-flight" else ["a"])


# -- await pop() -----------------------------------------------------------------------------


@pytest.mark.looptime  # the loop's fake clock: waits cost no real time
async def test_pop_wakes_when_a_pod_is_added(queue: SchedulingQueue) -> None:
    waiter = asyncio.create_task(queue.pop())
    await asyncio.sleep(1)  # a second on the loop's clock: the waiter had every chance
    assert not waiter.done()
    p = make("a")
    queue.add(p)
    queued = await asyncio.wait_for(waiter, timeout=0.5)
    assert queued.pod.uid == p.uid


async def test_pop_returns_at_once_when_a_pod_is_ready(queue: SchedulingQueue) -> None:
    p = make("a")
    queue.add(p)
    queued = await asyncio.wait_for(queue.pop(), timeout=0.5)
    assert queued.pod.uid == p.uid


@pytest.mark.looptime  # the loop's fake clock: waits cost no real time
async def test_pop_wakes_when_unschedulable_pods_are_moved(
    queue: SchedulingQueue, clock: FakeClock
) -> None:
    p = make("a")
    queue.add(p)
    queue.unschedulable(pop(queue))
    clock.now += 5  # past its backoff
    waiter = asyncio.create_task(queue.pop())
    await asyncio.sleep(1)  # a second on the loop's clock: the waiter had every chance
    assert not waiter.done()
    queue.move_all()  # e.g. a node was added
    queued = await asyncio.wait_for(waiter, timeout=0.5)
    assert queued.pod.uid == p.uid


@pytest.mark.looptime  # the loop's fake clock: waits cost no real time
async def test_pop_wakes_when_an_unschedulable_pods_update_puts_it_in_backoff(
    queue: SchedulingQueue, clock: FakeClock
) -> None:
    # Asleep until the unschedulable pods' timeout (60 s): the update must wake it, so that
    # it waits for the backoff instead.
    a, b = make("a"), make("b")
    queue.add(a)
    queue.add(b)
    queue.unschedulable(pop(queue))
    queue.unschedulable(pop(queue))
    waiter = asyncio.create_task(queue.pop())
    await asyncio.sleep(1)  # a second on the loop's clock: the waiter had every chance
    queue.add(relabeled(a))  # within its backoff: into backoff, not active
    assert queue.where(a.uid) == "backoff"
    clock.now += 5  # past its backoff
    queued = await asyncio.wait_for(waiter, timeout=0.5)
    assert queued.pod.uid == a.uid


@pytest.mark.looptime  # the loop's fake clock: waits cost no real time
async def test_pop_keeps_waiting_while_the_queue_is_empty(queue: SchedulingQueue) -> None:
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(queue.pop(), timeout=60)


# -- pods no policy serves ------------------------------------------------------------------


def _serves(*names: str) -> Any:
    return lambda scheduler_name: scheduler_name in names


def test_a_pod_nobody_serves_waits_and_is_never_popped(queue: SchedulingQueue) -> None:
    lonely = make("lonely", schedulerName="gpu")
    assert queue.add(lonely, served=False)
    assert queue.where(lonely.uid) == "waiting"
    assert queue.lengths()["waiting"] == 1
    queue.move_all()  # a cluster change does not start it either
    assert queue.pop_nowait() is None


def test_a_policy_for_its_name_starts_a_waiting_pod(queue: SchedulingQueue) -> None:
    lonely = make("lonely", schedulerName="gpu")
    queue.add(lonely, served=False)
    assert queue.reassess(_serves("gpu")) == []
    assert queue.where(lonely.uid) == "active"
    assert drain_names(queue) == ["lonely"]


@pytest.mark.parametrize("part", ["active", "backoff", "unschedulable"])
def test_a_pod_whose_policy_is_gone_waits_wherever_it_was(
    queue: SchedulingQueue, part: str
) -> None:
    p = make("web", schedulerName="gpu")
    queue.add(p)
    if part != "active":
        queued = pop(queue)
        if part == "backoff":
            queue.error(queued)
        else:
            queue.unschedulable(queued)
    assert queue.where(p.uid) == part
    assert [q.name for q in queue.reassess(_serves())] == ["web"]
    assert queue.where(p.uid) == "waiting"
    assert queue.pop_nowait() is None
    # Served again: it is taken up again, not lost.
    queue.reassess(_serves("gpu"))
    assert queue.where(p.uid) in ("active", "backoff")


def test_a_popped_pod_whose_policy_went_away_is_parked(queue: SchedulingQueue) -> None:
    p = make("web")
    queue.add(p)
    queued = pop(queue)
    queue.park(queued)
    assert queue.where(p.uid) == "waiting"
    assert [x.name for x in queue.pods()] == ["web"]
