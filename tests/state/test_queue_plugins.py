"""The queue and the framework: a policy's QueueSort plugin orders its pods, its
PreEnqueue plugins keep pods out of the active queue until they agree, and a pod whose
attempt failed comes back behind the pods created before it came back."""

from __future__ import annotations

from typing import Any

from builders import pod
from fakes import FakeClock
from policy_scheduler.engine.handles import DetachedHandle
from policy_scheduler.engine.interface import (
    PreEnqueuePlugin,
    QueuedPodInfo,
    QueueSortPlugin,
    Status,
)
from policy_scheduler.objects import Pod, parse_pod
from policy_scheduler.state.queueing import SchedulingQueue

CREATED = "2024-05-01T00:00:{:02d}Z"


def make(name: str, second: int, *, priority: int = 0, **labels: str) -> Pod:
    raw = pod(name, priority=priority, labels=labels or None)
    raw["metadata"]["creationTimestamp"] = CREATED.format(second)
    return parse_pod(raw)


def order(queue: SchedulingQueue) -> list[str]:
    names = []
    while (queued := queue.pop_nowait()) is not None:
        names.append(queued.pod.name)
        queue.done(queued.pod.uid)
    return names


class ByLabel(QueueSortPlugin):
    """Groups first by their 'group' label (alphabetically), then by name."""

    name = "ByLabel"

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return (a.pod.labels.get("group", ""), a.pod.name) < (
            b.pod.labels.get("group", ""),
            b.pod.name,
        )


class Quorum(PreEnqueuePlugin):
    """Lets a pod in once ``self.open`` says so."""

    name = "Quorum"

    def __init__(self, args: Any = None, handle: Any = None) -> None:
        super().__init__(args, handle or DetachedHandle())
        self.open = False

    def pre_enqueue(self, pod: Pod) -> Status | None:
        return None if self.open else Status.unschedulable("waiting for the quorum")


def test_a_queue_sort_plugin_orders_its_policys_pods() -> None:
    queue = SchedulingQueue(clock=FakeClock())
    sorter = ByLabel(None, DetachedHandle())
    queue.sorter_of = lambda p: sorter if p.labels.get("group") else None
    for name, second, group in [("z1", 1, "b"), ("a2", 2, "a"), ("m3", 3, "b"), ("c4", 4, "a")]:
        queue.add(make(name, second, group=group))
    # The plugin's order among its pods: group a first, then by name.
    assert order(queue) == ["a2", "c4", "m3", "z1"]


def test_heads_of_different_sorters_meet_in_priority_then_age() -> None:
    queue = SchedulingQueue(clock=FakeClock())
    sorter = ByLabel(None, DetachedHandle())
    queue.sorter_of = lambda p: sorter if p.labels.get("group") else None
    queue.add(make("plain-old", 1))
    queue.add(make("g-new", 5, group="a"))
    queue.add(make("g-old", 2, group="b"))
    queue.add(make("urgent", 9, priority=100))
    # urgent (priority), then the head of each heap by age: plain-old (1s) before the
    # plugin's head g-new (its own order puts group a first, created at 5s), then g-old.
    assert order(queue) == ["urgent", "plain-old", "g-new", "g-old"]


def test_a_pre_enqueue_plugin_keeps_a_pod_out_until_it_agrees() -> None:
    queue = SchedulingQueue(clock=FakeClock())
    gate = Quorum()

    def verdict(p: Pod) -> str | None:
        status = gate.pre_enqueue(p)
        return None if status is None else status.message

    queue.pre_enqueue = verdict
    member = make("member", 1)
    queue.add(member)
    assert queue.pop_nowait() is None
    assert queue.where(member.uid) == "gated"
    assert queue.gated_reason(member.uid) == "waiting for the quorum"
    assert queue.lengths()["gated"] == 1
    gate.open = True
    queue.move_all()  # the cluster changed: gated pods are asked again
    assert order(queue) == ["member"]


def test_a_gated_pod_is_asked_again_when_it_changes() -> None:
    queue = SchedulingQueue(clock=FakeClock())
    queue.pre_enqueue = lambda p: None if p.labels.get("ready") else "not ready"
    waiting = make("p", 1)
    queue.add(waiting)
    assert queue.pop_nowait() is None
    raw = pod("p", labels={"ready": "yes"})
    raw["metadata"]["uid"] = waiting.uid  # a new copy of the same pod, now labelled
    queue.add(parse_pod(raw))
    assert order(queue) == ["p"]


def test_a_pod_that_failed_comes_back_behind_newer_pods() -> None:
    clock = FakeClock()
    queue = SchedulingQueue(clock=clock, wall_clock=lambda: 1_800_000_000.0)
    queue.add(make("old", 1))
    queue.add(make("new", 30))
    failed = queue.pop_nowait()
    assert failed is not None and failed.pod.name == "old"
    queue.error(failed)  # its extender timed out, say
    clock.now += 10  # its backoff is over
    # Created before "new", it now waits behind it: the hung peer is not tried again
    # ahead of every newer pod.
    assert order(queue) == ["new", "old"]


def test_an_unschedulable_pod_keeps_its_place() -> None:
    clock = FakeClock()
    queue = SchedulingQueue(clock=clock, wall_clock=lambda: 1_800_000_000.0)
    queue.add(make("old", 1))
    queue.add(make("new", 30))
    first = queue.pop_nowait()
    assert first is not None
    queue.unschedulable(first)
    queue.move_all()
    clock.now += 10
    assert order(queue) == ["old", "new"]
