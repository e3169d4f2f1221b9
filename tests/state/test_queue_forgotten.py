"""SchedulingQueue.forgotten: an assumed pod forgotten in its binding cycle frees its room,
and the pods that were unschedulable for want of it are tried again (kube-scheduler
v1.30's handleBindingCycleError: an ``AssignedPodDelete`` move, the forgotten pod itself
excepted, after the failure handler sent it back with a backoff counted from then).

All timing runs on a fake clock."""

from __future__ import annotations

import pytest

from builders import pod
from fakes import FakeClock
from policy_scheduler.objects import Pod, parse_pod
from policy_scheduler.state.queueing import SchedulingQueue
from state.test_queueing import pop


def make(name: str, *, priority: int | None = None) -> Pod:
    return parse_pod(pod(name, priority=priority))


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def queue(clock: FakeClock) -> SchedulingQueue:
    return SchedulingQueue(clock=clock)


def test_the_waiting_pods_are_woken_the_forgotten_pod_excepted(
    queue: SchedulingQueue, clock: FakeClock
) -> None:
    holder, waiter = make("holder", priority=10), make("waiter")
    queue.add(holder)
    queue.add(waiter)
    held = pop(queue)  # assumed, held at Permit
    queue.done(holder.uid)
    queue.unschedulable(pop(queue))  # the waiter: no room while the holder has it
    clock.now += 30  # the holder waits at Permit until its timeout
    queue.unschedulable(held)  # refused: back first, as v1.30's failure handler
    queue.forgotten({holder.uid})
    assert queue.where(waiter.uid) == "active"
    assert queue.where(holder.uid) == "unschedulable"  # not moved by its own forget
    assert pop(queue).pod.name == "waiter"


def test_a_woken_pod_still_backing_off_waits_for_its_backoff(
    queue: SchedulingQueue, clock: FakeClock
) -> None:
    waiter = make("waiter")
    queue.add(waiter)
    queue.unschedulable(pop(queue))
    clock.now += 0.5  # its 1 s backoff has not run out
    queue.forgotten({"someone-else"})
    assert queue.where(waiter.uid) == "backoff"
    assert queue.pop_nowait() is None
    clock.now += 0.5
    assert pop(queue).pod.uid == waiter.uid


def test_a_pod_refused_at_permit_backs_off_from_its_refusal_and_the_waiter_goes_first(
    queue: SchedulingQueue, clock: FakeClock
) -> None:
    # The holder sorts first (higher priority). If its backoff counted from its pop,
    # 30 s at Permit would have spent it and it would take the room back at once.
    holder, waiter = make("holder", priority=10), make("waiter")
    queue.add(holder)
    queue.add(waiter)
    held = pop(queue)
    queue.done(holder.uid)
    queue.unschedulable(pop(queue))
    clock.now += 30
    queue.move_all()  # something unrelated happened while the holder waited
    queue.unschedulable(held)  # a move since its cycle began: backoff, from now
    queue.forgotten({holder.uid})
    assert queue.where(holder.uid) == "backoff"
    assert pop(queue).pod.name == "waiter"
    queue.done(waiter.uid)
    assert queue.pop_nowait() is None
    clock.now += 1.0  # its first attempt's backoff: 1 s from its refusal
    assert pop(queue).pod.name == "holder"


def test_an_error_after_a_long_binding_backs_off_from_the_error(
    queue: SchedulingQueue, clock: FakeClock
) -> None:
    p = make("a")
    queue.add(p)
    queued = pop(queue)
    clock.now += 20  # PreBind or Bind took that long, then failed
    queue.error(queued)
    assert queue.pop_nowait() is None
    clock.now += 0.99
    assert queue.pop_nowait() is None
    clock.now += 0.01
    assert pop(queue).pod.uid == p.uid


def test_several_forgotten_at_once_none_of_them_moved(
    queue: SchedulingQueue, clock: FakeClock
) -> None:
    a, b, waiter = make("a"), make("b"), make("waiter")
    for p in (a, b, waiter):
        queue.add(p)
    popped = [pop(queue) for _ in range(3)]
    for queued in popped:
        queue.unschedulable(queued)
    clock.now += 5
    queue.forgotten({a.uid, b.uid})
    assert queue.where(a.uid) == "unschedulable"
    assert queue.where(b.uid) == "unschedulable"
    assert queue.where(waiter.uid) == "active"
