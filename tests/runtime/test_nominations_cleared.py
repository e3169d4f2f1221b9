"""``status.nominatedNodeName`` is cleared once the nomination is over (issue 26, item 4).

What ``kubectl get pod -o wide`` shows in NOMINATED NODE: a pod of ours the watch shows
bound still naming a nominated node gets ``nominatedNodeName: null``; so does a pending
pod whose nomination the scheduler withdrew (preemption found no node that would help
it, or a more important pod took the node), for as long as the watch still shows it,
and meanwhile that stale nomination holds no room. The write goes through the runtime's
API (the pod-critical lane), never the reporter's.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest

from builders import node, pod
from fakes import FakeApi, FakeClock, Hang
from policy_scheduler.runtime.reporting import Reporter
from policy_scheduler.runtime.scheduling import SchedulerRuntime

NAME = "policy-scheduler"


@pytest.fixture
def reports() -> FakeApi:
    """The report lane's API: events and conditions only."""
    return FakeApi()


def make(api: FakeApi, reports: FakeApi, clock: FakeClock, **kw: Any) -> SchedulerRuntime:
    reporter = Reporter(
        reports, instance="replica-0", clock=clock, wall=lambda: datetime(2024, 5, 1, tzinfo=UTC)
    )
    return SchedulerRuntime(api, reporter=reporter, clock=clock, **kw)


@pytest.fixture
def runtime(api: FakeApi, reports: FakeApi, clock: FakeClock) -> SchedulerRuntime:
    return make(api, reports, clock)


def nominated(raw: dict[str, Any], node_name: str) -> dict[str, Any]:
    obj = copy.deepcopy(raw)
    obj.setdefault("status", {})["nominatedNodeName"] = node_name
    obj["metadata"]["resourceVersion"] = str(int(obj["metadata"].get("resourceVersion", 1)) + 1)
    return obj


def bound(raw: dict[str, Any], node_name: str) -> dict[str, Any]:
    obj = copy.deepcopy(raw)
    obj["spec"]["nodeName"] = node_name
    obj["metadata"]["resourceVersion"] = str(int(obj["metadata"].get("resourceVersion", 1)) + 1)
    return obj


def uid(raw: dict[str, Any]) -> str:
    return str(raw["metadata"]["uid"])


async def test_a_pod_bound_elsewhere_has_its_nomination_cleared(
    api: FakeApi, reports: FakeApi, runtime: SchedulerRuntime
) -> None:
    runtime.handle("ADDED", node("n1"))
    runtime.handle("ADDED", node("n2"))
    web = nominated(pod("web", schedulerName=NAME), "n1")
    runtime.handle("ADDED", web)
    # It was nominated to n1 (by an earlier preemption); it got bound to n2.
    runtime.handle("MODIFIED", bound(web, "n2"))
    await runtime.drain()
    assert api.nominations == [("default/web", None)]
    assert reports.calls == []  # the critical lane, not the report lane
    assert runtime.cache.cluster.nomination_of(uid(web)) is None


async def test_a_pod_bound_on_its_nominated_node_has_it_cleared_too(
    api: FakeApi, runtime: SchedulerRuntime
) -> None:
    runtime.handle("ADDED", node("n1"))
    web = nominated(pod("web", schedulerName=NAME), "n1")
    runtime.handle("ADDED", web)
    runtime.handle("MODIFIED", bound(web, "n1"))
    await runtime.drain()
    assert api.nominations == [("default/web", None)]


@pytest.mark.parametrize(
    ("scheduler", "namespace", "namespaces"),
    [
        pytest.param("default-scheduler", "default", (), id="another-schedulers-pod"),
        pytest.param(NAME, "other", ("default",), id="a-namespace-not-scheduled"),
    ],
)
async def test_pods_that_are_not_ours_are_left_alone(
    api: FakeApi,
    reports: FakeApi,
    clock: FakeClock,
    scheduler: str,
    namespace: str,
    namespaces: tuple[str, ...],
) -> None:
    runtime = make(api, reports, clock, namespaces=namespaces)
    runtime.handle("ADDED", node("n1"))
    theirs = nominated(pod("theirs", schedulerName=scheduler, namespace=namespace), "n1")
    runtime.handle("ADDED", theirs)
    runtime.handle("MODIFIED", bound(theirs, "n1"))
    await runtime.drain()
    assert api.nominations == []


async def test_a_pod_bound_without_a_nomination_gets_no_write(
    api: FakeApi, runtime: SchedulerRuntime
) -> None:
    runtime.handle("ADDED", node("n1"))
    web = pod("web", schedulerName=NAME)
    runtime.handle("ADDED", web)
    runtime.handle("MODIFIED", bound(web, "n1"))
    await runtime.drain()
    assert api.calls == []


async def test_a_standby_writes_nothing(api: FakeApi, reports: FakeApi, clock: FakeClock) -> None:
    runtime = make(api, reports, clock, is_leader=lambda: False)
    runtime.handle("ADDED", node("n1"))
    web = nominated(pod("web", schedulerName=NAME), "n1")
    runtime.handle("ADDED", web)
    runtime.handle("MODIFIED", bound(web, "n2"))
    await runtime.drain()
    assert api.nominations == []


async def test_one_clear_at_a_time_however_many_copies_the_watch_shows(
    api: FakeApi, runtime: SchedulerRuntime
) -> None:
    hang = Hang(then=200)
    api.statuses["patch_pod_status"] = hang
    runtime.handle("ADDED", node("n1"))
    web = nominated(pod("web", schedulerName=NAME), "n1")
    runtime.handle("ADDED", web)
    copy_of = bound(web, "n1")
    for _ in range(3):  # the kubelet's status updates, before our clear lands
        copy_of = bound(copy_of, "n1")
        runtime.handle("MODIFIED", copy_of)
    hang.release()
    await runtime.drain()
    assert api.nominations == [("default/web", None)]


# -- no longer a preemptor ------------------------------------------------------------------


def running(name: str, node_name: str, priority: int, cpu: str) -> dict[str, Any]:
    obj = pod(name, requests={"cpu": cpu}, priority=priority, node_name=node_name)
    obj["status"] = {"phase": "Running", "startTime": "2024-01-01T00:00:00Z"}
    return obj


async def test_a_withdrawn_nomination_the_watch_still_shows_holds_no_room_and_is_cleared_again(
    api: FakeApi, runtime: SchedulerRuntime
) -> None:
    runtime.handle("ADDED", node("n1", cpu="2"))
    runtime.handle("ADDED", running("low", "n1", 0, "1500m"))
    # A pod of ours nominated to n1 earlier; a more important one now takes the node.
    waiting = nominated(pod("waiting", requests={"cpu": "1"}, priority=5, schedulerName=NAME), "n1")
    runtime.handle("ADDED", waiting)
    api.statuses["patch_pod_status"] = [200, 0]  # the nomination; the clear is lost
    runtime.handle(
        "ADDED", pod("urgent", requests={"cpu": "1500m"}, priority=1000, schedulerName=NAME)
    )
    queued = runtime.queue.pop_nowait()
    assert queued is not None
    await runtime.schedule_one(queued)
    await runtime.drain()
    assert api.nominations == [("default/urgent", "n1"), ("default/waiting", None)]
    # The watch shows "waiting" again, still nominated (the clear never landed): the
    # cache does not take the nomination back, and the clear is written again.
    api.statuses["patch_pod_status"] = 200
    runtime.handle("MODIFIED", nominated(waiting, "n1"))
    await runtime.drain()
    assert runtime.cache.cluster.nomination_of(uid(waiting)) is None
    assert api.nominations[2:] == [("default/waiting", None)]
    # Once a copy without it comes, nothing more is written.
    cleared = copy.deepcopy(waiting)
    del cleared["status"]["nominatedNodeName"]
    runtime.handle("MODIFIED", cleared)
    await runtime.drain()
    assert len(api.nominations) == 3
    # A new nomination to the same node (a preemption of its own) is taken as it is.
    runtime.handle("MODIFIED", nominated(waiting, "n1"))
    assert runtime.cache.cluster.nomination_of(uid(waiting)) == "n1"
