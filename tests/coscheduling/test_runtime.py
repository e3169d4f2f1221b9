"""Gangs in the operator's runtime (fake API): bound whole, a failed binding bound again
on its place, and PodGroup status as scheduler-plugins' controller writes it."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest

from builders import node
from coscheduling.gangs import SCHEDULER, member, pod_group, policy_object
from fakes import FakeApi, FakeClock
from policy_scheduler.objects import parse_pod_group
from policy_scheduler.runtime.podgroups import GroupStatus, Member, next_status
from policy_scheduler.runtime.reporting import Reporter
from policy_scheduler.runtime.scheduling import SchedulerRuntime

NOW = "2024-05-01T00:10:00Z"


def make_runtime(api: FakeApi, clock: FakeClock, *, leader: bool = True) -> SchedulerRuntime:
    reporter = Reporter(
        api, instance="replica-0", clock=clock, wall=lambda: datetime(2024, 5, 1, tzinfo=UTC)
    )
    runtime = SchedulerRuntime(
        api,
        default_scheduler_name=SCHEDULER,
        reporter=reporter,
        clock=clock,
        is_leader=lambda: leader,
    )
    runtime.pod_groups.now = lambda: NOW
    return runtime


@pytest.fixture
async def runtime(api: FakeApi, clock: FakeClock) -> SchedulerRuntime:
    runtime = make_runtime(api, clock)
    runtime.handle("ADDED", policy_object())
    return runtime


async def schedule_all(runtime: SchedulerRuntime) -> None:
    """Every pod ready now, one attempt each (a gang's members in its first one's)."""
    while (queued := runtime.queue.pop_nowait()) is not None:
        await runtime.schedule_one(queued)
    await runtime.drain()


def status_writes(api: FakeApi) -> list[tuple[str, dict[str, Any]]]:
    return [(f"{ns}/{name}", dict(status)) for ns, name, status in api.of("patch_pod_group_status")]


# -- bound whole -----------------------------------------------------------------------------


async def test_a_gang_is_bound_whole_and_one_that_cannot_fit_holds_nothing(
    api: FakeApi, runtime: SchedulerRuntime
) -> None:
    runtime.handle("ADDED", node("n1", cpu="4", memory="400", pods=32))
    runtime.handle("ADDED", pod_group("a", 3, created="2024-05-01T00:00:00Z"))
    runtime.handle("ADDED", pod_group("b", 3, created="2024-05-01T00:00:01Z"))
    for i in (1, 2, 3):
        runtime.handle("ADDED", member(f"a-{i}", "a", memory="100"))
        runtime.handle("ADDED", member(f"b-{i}", "b", memory="100"))
    await schedule_all(runtime)
    assert sorted(api.bindings) == [
        ("default/a-1", "n1"),
        ("default/a-2", "n1"),
        ("default/a-3", "n1"),
    ]
    failed = {
        e["involvedObject"]["name"]: e["message"]
        for e in api.events
        if e["reason"] == "FailedScheduling"
    }
    assert sorted(failed) == ["b-1", "b-2", "b-3"]
    assert failed["b-1"].startswith(
        'Coscheduling: pod group "default/b": 1 of 3 members would fit; none is placed'
    )
    # Gang "b" holds nothing: only gang "a" is on the node.
    assert sorted(p.name for p in runtime.cache.cluster.nodes["n1"].pods.values()) == [
        "a-1",
        "a-2",
        "a-3",
    ]


async def test_a_member_whose_binding_fails_is_bound_again_on_its_place(
    api: FakeApi, runtime: SchedulerRuntime
) -> None:
    api.statuses["bind"] = [201, 403, 201, 201]  # the second binding is refused once
    runtime.handle("ADDED", node("n1", cpu="4", memory="400", pods=32))
    runtime.handle("ADDED", node("n2", cpu="4", memory="400", pods=32))
    runtime.handle("ADDED", pod_group("g", 3))
    for i in (1, 2, 3):
        runtime.handle("ADDED", member(f"g-{i}", "g", memory="100"))
    await schedule_all(runtime)
    sent = api.bindings
    assert len(sent) == 4
    assert sorted(set(sent)) == sorted(sent[:1] + sent[2:])  # the refused one sent again
    refused = sent[1]
    assert sent.count(refused) == 2  # ... to the same node
    assert not [e for e in api.events if e["reason"] == "FailedScheduling"]


# -- PodGroup status -------------------------------------------------------------------------


def members(*phases: str, owner: str = "") -> list[Member]:
    return [Member(phase, SCHEDULER, (f"default/{owner}",) if owner else ()) for phase in phases]


@pytest.mark.parametrize(
    ("status", "min_member", "pods", "expected"),
    [
        pytest.param({}, 2, [], GroupStatus("Pending"), id="new-group-pending"),
        pytest.param(
            {"phase": "Pending"}, 2, members("Pending"), GroupStatus("Pending"), id="short"
        ),
        pytest.param(
            {},
            2,
            members("Pending", "Pending", owner="job"),
            GroupStatus("Scheduling", schedule_start_time=NOW, occupied_by="default/job"),
            id="enough-members-scheduling",
        ),
        pytest.param(
            {"phase": "Scheduling", "scheduleStartTime": "2024-05-01T00:00:05Z"},
            2,
            members("Running", "Running", "Pending"),
            GroupStatus("Running", 2, schedule_start_time="2024-05-01T00:00:05Z"),
            id="quorum-running",
        ),
        pytest.param(
            {},
            2,
            members("Running", "Succeeded"),
            GroupStatus("Running", 1, 1, schedule_start_time=NOW),
            id="from-nothing-to-running-in-one-write",
        ),
        pytest.param(
            {"phase": "Running"},
            2,
            members("Succeeded", "Succeeded"),
            GroupStatus("Finished", 0, 2),
            id="finished",
        ),
        pytest.param(
            {"phase": "Running"},
            2,
            members("Running", "Failed"),
            GroupStatus("Failed", 1, 0, 1),
            id="failed",
        ),
        pytest.param(
            {"phase": "Running", "running": 2},
            3,
            members("Running", "Running"),
            GroupStatus("Pending", 2),
            id="members-gone-pending-again",
        ),
        pytest.param(
            {"phase": "Finished", "succeeded": 2},
            2,
            members("Running"),
            GroupStatus("Finished", 0, 2),
            id="finished-is-final",
        ),
    ],
)
def test_status_follows_scheduler_plugins_controller(
    status: dict[str, Any], min_member: int, pods: list[Member], expected: GroupStatus
) -> None:
    group = parse_pod_group(pod_group("g", min_member, status=status))
    assert next_status(group, pods, NOW) == expected


def running(raw: dict[str, Any], node_name: str, phase: str = "Running") -> dict[str, Any]:
    obj = copy.deepcopy(raw)
    obj["spec"]["nodeName"] = node_name
    obj["status"] = {"phase": phase}
    return obj


async def test_status_is_written_coalesced_and_only_when_it_changes(
    api: FakeApi, runtime: SchedulerRuntime
) -> None:
    runtime.handle("ADDED", node("n1"))
    runtime.handle("ADDED", pod_group("g", 2))
    pods = [member(f"g-{i}", "g", memory="100") for i in (1, 2)]
    for raw in pods:
        runtime.handle("ADDED", raw)
    await runtime.pod_groups.flush()
    # Three events (the group, two pods) in a row: one write, with the result of all.
    assert status_writes(api) == [
        (
            "default/g",
            {
                "phase": "Scheduling",
                "running": 0,
                "succeeded": 0,
                "failed": 0,
                "scheduleStartTime": NOW,
            },
        )
    ]
    # Our write comes back through the watch: nothing to write again.
    written = status_writes(api)[0][1]
    runtime.handle("MODIFIED", pod_group("g", 2, status=written))
    await runtime.pod_groups.flush()
    assert len(status_writes(api)) == 1
    for raw in pods:
        runtime.handle("MODIFIED", running(raw, "n1"))
    await runtime.pod_groups.flush()
    assert status_writes(api)[-1] == (
        "default/g",
        {"phase": "Running", "running": 2, "succeeded": 0, "failed": 0, "scheduleStartTime": NOW},
    )
    # A finished pod leaves the scheduler's cache, but still counts for its group.
    runtime.handle("MODIFIED", pod_group("g", 2, status=status_writes(api)[-1][1]))
    for raw in pods:
        runtime.handle("MODIFIED", running(raw, "n1", "Succeeded"))
    await runtime.pod_groups.flush()
    assert status_writes(api)[-1][1]["phase"] == "Finished"


async def test_a_standby_writes_no_status(api: FakeApi, clock: FakeClock) -> None:
    runtime = make_runtime(api, clock, leader=False)
    runtime.handle("ADDED", policy_object())
    runtime.handle("ADDED", pod_group("g", 1))
    runtime.handle("ADDED", member("g-1", "g"))
    await runtime.pod_groups.flush()
    assert status_writes(api) == []


async def test_a_group_of_another_schedulers_pods_is_left_to_it(
    api: FakeApi, runtime: SchedulerRuntime
) -> None:
    runtime.handle("ADDED", pod_group("theirs", 1))
    other = member("t-1", "theirs")
    other["spec"]["schedulerName"] = "scheduler-plugins-scheduler"
    runtime.handle("ADDED", other)
    runtime.handle("ADDED", pod_group("ours", 1))
    runtime.handle("ADDED", member("o-1", "ours"))
    await runtime.pod_groups.flush()
    assert [key for key, _ in status_writes(api)] == ["default/ours"]
