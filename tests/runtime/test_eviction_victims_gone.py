"""A victim already gone when preemption deletes it (issue 26, item 6).

kube-scheduler deletes the victims one by one and gives up at the first deletion that
fails. A victim the API answers 404 for (deleted meanwhile) or 409 for (a new pod of the
same name: its uid precondition failed) is not a failure: the other victims are still
deleted, the preemptor keeps its nomination, and the lower nominations on the node are
cleared. Any other failure stops there. What a user sees: which pods were deleted, which
got a ``Preempted`` event, which nominations were written.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from builders import node
from fakes import FakeApi, FakeClock
from policy_scheduler.runtime.metrics import Metrics
from policy_scheduler.runtime.reporting import Reporter
from policy_scheduler.runtime.scheduling import SchedulerRuntime
from runtime.test_preemption import attempt, pending, running, sample


@pytest.fixture
def metrics() -> Metrics:
    return Metrics()


@pytest.fixture
def runtime(api: FakeApi, metrics: Metrics, clock: FakeClock) -> SchedulerRuntime:
    reporter = Reporter(
        api, instance="replica-0", clock=clock, wall=lambda: datetime(2024, 5, 1, tzinfo=UTC)
    )
    return SchedulerRuntime(api, reporter=reporter, clock=clock, metrics=metrics)


def two_victims_on_n1(runtime: SchedulerRuntime) -> None:
    """n1 holds two low pods the preemptor needs both gone for; n2 holds one it may not
    evict; a lower pod of another scheduler is nominated to n1."""
    runtime.handle("ADDED", node("n1", cpu="2"))
    runtime.handle("ADDED", node("n2", cpu="2"))
    runtime.handle("ADDED", running("low-a", "n1", 1, cpu="900m"))
    runtime.handle("ADDED", running("low-b", "n1", 0, cpu="900m"))
    runtime.handle("ADDED", running("vip", "n2", 5000, cpu="1500m"))
    waiting = pending("waiting", 5, cpu="100m", schedulerName="default-scheduler")
    waiting["status"] = {"nominatedNodeName": "n1"}
    runtime.handle("ADDED", waiting)
    runtime.handle("ADDED", pending("urgent", 1000, cpu="1800m"))


def preempted(api: FakeApi) -> list[str]:
    return [e["involvedObject"]["name"] for e in api.events if e["reason"] == "Preempted"]


@pytest.mark.parametrize(
    "gone",
    [pytest.param(404, id="404-deleted-meanwhile"), pytest.param(409, id="409-uid-changed")],
)
async def test_a_victim_already_gone_does_not_stop_the_preemption(
    api: FakeApi, runtime: SchedulerRuntime, metrics: Metrics, gone: int
) -> None:
    two_victims_on_n1(runtime)
    api.statuses["delete_pod"] = [gone, 200]  # most important victim first: low-a
    await attempt(runtime)
    assert api.deletions == ["default/low-a", "default/low-b"]
    assert preempted(api) == ["low-b"]  # only the pod we deleted hears of it
    assert api.nominations == [("default/urgent", "n1"), ("default/waiting", None)]
    assert sample(metrics, "scheduler_preemption_victims_sum") == 2


@pytest.mark.parametrize(
    "failure",
    [pytest.param(500, id="500"), pytest.param(ConnectionError("reset"), id="no-answer")],
)
async def test_a_victim_that_cannot_be_deleted_stops_the_preemption(
    api: FakeApi, runtime: SchedulerRuntime, metrics: Metrics, failure: Any
) -> None:
    two_victims_on_n1(runtime)
    api.statuses["delete_pod"] = [failure, 200]
    await attempt(runtime)
    assert api.deletions == ["default/low-a"]
    assert preempted(api) == []
    assert api.nominations == [("default/urgent", "n1")]  # the lower one keeps its own
    assert sample(metrics, "scheduler_preemption_victims_sum") == 0
