"""Reporter: what ``kubectl describe pod`` and ``kubectl get events`` show after
scheduling attempts — FailedScheduling aggregation, the PodScheduled condition, the
Scheduled event — and that a failing API never makes reporting raise."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest

from builders import parsed_pod
from fakes import FakeApi, FakeClock, Hang
from policy_scheduler.objects import Pod
from policy_scheduler.runtime import reporting
from policy_scheduler.runtime.reporting import COMBINED_PREFIX, Reporter

COMPONENT = "policy-scheduler"
NOW = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
STAMP = "2024-05-01T12:00:00Z"
NO_CPU = "0/3 nodes are available: 3 Insufficient cpu."
NO_MEM = "0/3 nodes are available: 3 Insufficient memory."


@pytest.fixture
def reporter(api: FakeApi, clock: FakeClock) -> Reporter:
    return Reporter(api, instance="replica-0", clock=clock, wall=lambda: NOW)


@pytest.fixture
def web() -> Pod:
    return parsed_pod("web", namespace="shop")


# -- FailedScheduling aggregation ------------------------------------------------------------


async def test_the_first_failure_creates_an_event_and_a_condition(
    api: FakeApi, reporter: Reporter, web: Pod
) -> None:
    await reporter.unschedulable(web, NO_CPU, COMPONENT)
    await reporter.flush()
    [(namespace, _)] = api.of("create_event")
    assert namespace == "shop"
    [event] = api.events
    assert event["type"] == "Warning"
    assert event["reason"] == "FailedScheduling"
    assert event["message"] == NO_CPU
    assert event["count"] == 1
    assert event["source"] == {"component": COMPONENT}
    assert event["reportingComponent"] == COMPONENT
    assert event["reportingInstance"] == "replica-0"
    assert event["firstTimestamp"] == event["lastTimestamp"] == STAMP
    assert event["metadata"]["namespace"] == "shop"
    assert event["involvedObject"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "namespace": "shop",
        "name": "web",
        "uid": web.uid,
    }
    assert api.of("patch_pod_status")[0][:2] == ("shop", "web")


async def test_the_same_message_counts_up_one_event(
    api: FakeApi, reporter: Reporter, web: Pod
) -> None:
    for _ in range(30):
        await reporter.unschedulable(web, NO_CPU, COMPONENT)
        await reporter.flush()
    assert len(api.events) == 1
    name = api.events[0]["metadata"]["name"]
    patches = api.of("patch_event")
    assert len(patches) == 29
    assert all(ns == "shop" and event == name for ns, event, _ in patches)
    assert [p["count"] for p in api.event_patches] == list(range(2, 31))
    assert all(p["lastTimestamp"] == STAMP and "message" not in p for p in api.event_patches)


async def test_a_new_message_starts_a_new_event(api: FakeApi, reporter: Reporter, web: Pod) -> None:
    await reporter.unschedulable(web, NO_CPU, COMPONENT)
    await reporter.flush()
    await reporter.unschedulable(web, NO_MEM, COMPONENT)
    await reporter.flush()
    await reporter.unschedulable(web, NO_MEM, COMPONENT)
    await reporter.flush()
    assert [e["message"] for e in api.events] == [NO_CPU, NO_MEM]
    assert [p["count"] for p in api.event_patches] == [2]
    assert api.of("patch_event")[0][1] == api.events[1]["metadata"]["name"]


async def test_events_of_different_pods_are_not_aggregated(
    api: FakeApi, reporter: Reporter
) -> None:
    for name in ("a", "b"):
        await reporter.unschedulable(parsed_pod(name), NO_CPU, COMPONENT)
        await reporter.flush()
    assert [e["involvedObject"]["name"] for e in api.events] == ["a", "b"]
    assert api.event_patches == []


def message(i: int) -> str:
    return f"0/{i + 1} nodes are available: {i + 1} Insufficient cpu."


async def test_from_the_10th_distinct_message_in_10_minutes_they_are_combined(
    api: FakeApi, reporter: Reporter, clock: FakeClock, web: Pod
) -> None:
    for i in range(13):
        await reporter.unschedulable(web, message(i), COMPONENT)
        await reporter.flush()
        clock.now += 30  # 13 attempts within 6 minutes
    # Nine events as they came, then one combined event that keeps the latest message
    # (client-go combines once its set of distinct messages reaches 10).
    assert [e["message"] for e in api.events] == [
        *(message(i) for i in range(9)),
        COMBINED_PREFIX + message(9),
    ]
    combined = api.events[-1]["metadata"]["name"]
    assert [
        (name, p["count"], p["message"])
        for (_, name, _), p in zip(api.of("patch_event"), api.event_patches, strict=True)
    ] == [
        (combined, 2, COMBINED_PREFIX + message(10)),
        (combined, 3, COMBINED_PREFIX + message(11)),
        (combined, 4, COMBINED_PREFIX + message(12)),
    ]


async def test_distinct_messages_spread_over_more_than_10_minutes_stay_separate(
    api: FakeApi, reporter: Reporter, clock: FakeClock, web: Pod
) -> None:
    for i in range(13):
        await reporter.unschedulable(web, message(i), COMPONENT)
        await reporter.flush()
        clock.now += 70  # any 10 messages span more than the 600 s window
    assert [e["message"] for e in api.events] == [message(i) for i in range(13)]
    assert api.event_patches == []


async def test_an_expired_event_is_created_again(
    api: FakeApi, reporter: Reporter, web: Pod
) -> None:
    await reporter.unschedulable(web, NO_CPU, COMPONENT)
    await reporter.flush()
    api.statuses["patch_event"] = 404  # the event was garbage-collected by its TTL
    await reporter.unschedulable(web, NO_CPU, COMPONENT)
    await reporter.flush()
    assert [e["message"] for e in api.events] == [NO_CPU, NO_CPU]
    assert api.events[0]["metadata"]["name"] != api.events[1]["metadata"]["name"]
    api.statuses["patch_event"] = 200
    await reporter.unschedulable(web, NO_CPU, COMPONENT)
    await reporter.flush()
    assert api.of("patch_event")[-1][1] == api.events[1]["metadata"]["name"]


# -- the PodScheduled condition --------------------------------------------------------------


async def test_the_condition_is_a_strategic_merge_patch_of_pod_scheduled(
    api: FakeApi, reporter: Reporter, web: Pod
) -> None:
    await reporter.unschedulable(web, NO_CPU, COMPONENT)
    await reporter.flush()
    [(namespace, name, patch)] = api.of("patch_pod_status")
    assert (namespace, name) == ("shop", "web")
    # Only the one condition, keyed by type: the API server merges it by type.
    assert patch == {
        "status": {
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": NO_CPU,
                    "lastProbeTime": None,
                    "lastTransitionTime": STAMP,
                }
            ]
        }
    }


async def test_the_condition_is_written_once_per_distinct_message(
    api: FakeApi, reporter: Reporter, web: Pod
) -> None:
    for msg in [NO_CPU, NO_CPU, NO_CPU, NO_MEM, NO_MEM, NO_CPU]:
        await reporter.unschedulable(web, msg, COMPONENT)
        await reporter.flush()
    assert [c["message"] for c in api.conditions] == [NO_CPU, NO_MEM, NO_CPU]


async def test_a_failed_condition_write_is_retried_next_time(
    api: FakeApi, reporter: Reporter, web: Pod
) -> None:
    api.statuses["patch_pod_status"] = [500, 200]
    await reporter.unschedulable(web, NO_CPU, COMPONENT)
    await reporter.flush()
    await reporter.unschedulable(web, NO_CPU, COMPONENT)
    await reporter.flush()
    await reporter.unschedulable(web, NO_CPU, COMPONENT)
    await reporter.flush()
    assert [c["message"] for c in api.conditions] == [NO_CPU, NO_CPU]


async def test_a_successful_schedule_resets_what_was_written(
    api: FakeApi, reporter: Reporter, web: Pod
) -> None:
    await reporter.unschedulable(web, NO_CPU, COMPONENT)
    await reporter.flush()
    await reporter.scheduled(web, "node-1", COMPONENT)
    await reporter.flush()
    scheduled = api.events[-1]
    assert (scheduled["type"], scheduled["reason"], scheduled["message"]) == (
        "Normal",
        "Scheduled",
        "Successfully assigned shop/web to node-1",
    )
    assert scheduled["source"] == {"component": COMPONENT}
    await reporter.unschedulable(web, NO_CPU, COMPONENT)  # e.g. the binding was undone
    await reporter.flush()
    assert [c["message"] for c in api.conditions] == [NO_CPU, NO_CPU]


async def test_forget_pod_drops_the_memory_of_a_deleted_pod(
    api: FakeApi, reporter: Reporter, web: Pod
) -> None:
    await reporter.unschedulable(web, NO_CPU, COMPONENT)
    await reporter.flush()
    reporter.forget_pod(web.uid)
    await reporter.unschedulable(web, NO_CPU, COMPONENT)
    await reporter.flush()
    assert len(api.events) == 2
    assert len(api.conditions) == 2


async def test_only_the_most_recently_reported_objects_are_remembered(
    api: FakeApi, reporter: Reporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As client-go's LRU: an event about an object forgotten meanwhile starts anew, one
    about an object reported on recently counts up."""
    monkeypatch.setattr(reporting, "MAX_OBJECTS", 2)
    a, b, c = (parsed_pod(name) for name in "abc")
    await reporter.scheduled(a, "n1", COMPONENT)
    await reporter.flush()
    await reporter.scheduled(b, "n1", COMPONENT)
    await reporter.flush()
    await reporter.scheduled(a, "n1", COMPONENT)  # a is the most recent again
    await reporter.flush()
    await reporter.scheduled(c, "n1", COMPONENT)  # b is forgotten
    await reporter.flush()
    await reporter.scheduled(a, "n1", COMPONENT)
    await reporter.flush()
    await reporter.scheduled(b, "n1", COMPONENT)
    await reporter.flush()
    assert [e["involvedObject"]["name"] for e in api.events] == ["a", "b", "c", "b"]
    assert [p["count"] for p in api.event_patches] == [2, 3]


# -- reporting never raises ------------------------------------------------------------------


@pytest.mark.parametrize(
    "statuses",
    [
        pytest.param({"create_event": RuntimeError("connection reset")}, id="event-raises"),
        pytest.param({"create_event": 500}, id="event-500"),
        pytest.param({"create_event": 403}, id="event-forbidden"),
        pytest.param({"patch_pod_status": OSError("unreachable")}, id="condition-raises"),
        pytest.param({"patch_pod_status": 500}, id="condition-500"),
        pytest.param({"patch_pod_status": 404}, id="condition-pod-gone"),
        pytest.param({"patch_event": TimeoutError()}, id="event-patch-raises"),
        pytest.param(
            {"create_event": ValueError(), "patch_pod_status": ValueError(), "patch_event": 500},
            id="everything-fails",
        ),
    ],
)
async def test_reporting_errors_never_raise(
    api: FakeApi, reporter: Reporter, web: Pod, statuses: dict[str, Any]
) -> None:
    api.statuses.update(statuses)
    for _ in range(3):
        await reporter.unschedulable(web, NO_CPU, COMPONENT)
        await reporter.flush()
        await reporter.scheduled(web, "node-1", COMPONENT)
        await reporter.flush()


async def test_a_failed_event_is_created_again_rather_than_patched(
    api: FakeApi, reporter: Reporter, web: Pod
) -> None:
    api.statuses["create_event"] = [RuntimeError("down"), 201]
    await reporter.unschedulable(web, NO_CPU, COMPONENT)
    await reporter.flush()
    await reporter.unschedulable(web, NO_CPU, COMPONENT)
    await reporter.flush()
    assert len(api.of("create_event")) == 2
    assert api.event_patches == []


# -- queued, best effort: nobody waits for a report ---------------------------------------


async def test_reports_return_at_once_while_the_api_hangs(api: FakeApi, web: Pod) -> None:
    hang = Hang()
    api.statuses.update(create_event=hang, patch_pod_status=hang)
    reporter = Reporter(api, instance="replica-0", workers=3, wall=lambda: NOW)
    for i in range(50):
        await reporter.unschedulable(parsed_pod(f"p{i}"), NO_CPU, COMPONENT)
    await asyncio.sleep(0)  # the workers start
    # The caller never waited; three writes are in flight, the others queued.
    assert hang.waiting == 3
    assert reporter.queued == 100 - 3
    hang.release()
    await reporter.flush()
    assert len(api.events) == 50 and len(api.conditions) == 50


async def test_a_full_event_queue_drops_the_oldest_and_counts_it(api: FakeApi) -> None:
    dropped: list[int] = []
    hang = Hang()
    api.statuses["create_event"] = hang
    reporter = Reporter(
        api,
        instance="replica-0",
        workers=1,
        max_queued_events=3,
        wall=lambda: NOW,
        on_dropped=lambda: dropped.append(1),
    )
    pods = [parsed_pod(f"p{i}") for i in range(6)]
    await reporter.scheduled(pods[0], "n1", COMPONENT)
    await asyncio.sleep(0)  # p0's event is in flight, held
    for p in pods[1:]:
        await reporter.scheduled(p, "n1", COMPONENT)
    # p1 and p2 were the oldest queued: dropped for p3, p4, p5.
    assert reporter.dropped == 2 and dropped == [1, 1]
    hang.release()
    await reporter.flush()
    assert [e["involvedObject"]["name"] for e in api.events] == ["p0", "p3", "p4", "p5"]
    # A dropped event was never created: its next occurrence starts it, with count 1.
    api.statuses["create_event"] = 201
    await reporter.scheduled(pods[1], "n1", COMPONENT)
    await reporter.flush()
    assert api.events[-1]["involvedObject"]["name"] == "p1"
    assert api.events[-1]["count"] == 1
    assert api.event_patches == []


async def test_an_event_repeated_while_queued_is_written_once_with_its_count(
    api: FakeApi, reporter: Reporter, clock: FakeClock, web: Pod
) -> None:
    for _ in range(5):
        await reporter.event(
            namespace="shop",
            involved={"kind": "Pod", "name": "web", "uid": web.uid},
            event_type="Warning",
            reason="FailedScheduling",
            message=NO_CPU,
            action="Scheduling",
            component=COMPONENT,
        )
    await reporter.flush()
    [event] = api.events
    assert event["count"] == 5
    assert api.event_patches == []


async def test_an_event_repeated_while_its_create_is_in_flight_is_patched_after(
    api: FakeApi, web: Pod
) -> None:
    hang = Hang(then=201)
    api.statuses["create_event"] = hang
    reporter = Reporter(api, instance="replica-0", wall=lambda: NOW)
    await reporter.unschedulable(web, NO_CPU, COMPONENT)
    await asyncio.sleep(0)
    assert hang.waiting == 1
    await reporter.unschedulable(web, NO_CPU, COMPONENT)
    await reporter.unschedulable(web, NO_CPU, COMPONENT)
    hang.release()
    await reporter.flush()
    # One event (never two creates racing), then one patch with the count so far.
    assert len(api.events) == 1
    assert [p["count"] for p in api.event_patches] == [3]


async def test_only_the_latest_condition_of_a_pod_is_written(
    api: FakeApi, reporter: Reporter, web: Pod
) -> None:
    await reporter.unschedulable(web, NO_CPU, COMPONENT)
    await reporter.unschedulable(web, NO_MEM, COMPONENT)
    await reporter.unschedulable(web, NO_CPU + " (again)", COMPONENT)
    await reporter.flush()
    assert [c["message"] for c in api.conditions] == [NO_CPU + " (again)"]


async def test_a_condition_asked_while_one_is_in_flight_is_written_after_it(
    api: FakeApi, web: Pod
) -> None:
    hang = Hang(then=200)
    api.statuses["patch_pod_status"] = hang
    reporter = Reporter(api, instance="replica-0", wall=lambda: NOW)
    await reporter.pod_condition(web, NO_CPU, reason="Unschedulable")
    await asyncio.sleep(0)
    await reporter.pod_condition(web, NO_MEM, reason="Unschedulable")
    await reporter.pod_condition(web, NO_MEM + "!", reason="Unschedulable")
    assert hang.waiting == 1  # never two writes of one pod's condition at once
    hang.release()
    await reporter.flush()
    assert [c["message"] for c in api.conditions] == [NO_CPU, NO_MEM + "!"]


async def test_a_condition_not_yet_written_is_dropped_when_the_pod_is_scheduled(
    api: FakeApi, reporter: Reporter, web: Pod
) -> None:
    await reporter.unschedulable(web, NO_CPU, COMPONENT)
    await reporter.scheduled(web, "n1", COMPONENT)
    await reporter.flush()
    # PodScheduled=False written after the binding would contradict it.
    assert api.conditions == []
    assert [e["reason"] for e in api.events] == ["FailedScheduling", "Scheduled"]


async def test_a_create_whose_answer_was_lost_is_not_duplicated(
    api: FakeApi, reporter: Reporter, web: Pod
) -> None:
    # No answer (it was created all the same), then 409 AlreadyExists for the same name.
    api.statuses["create_event"] = [0, 409]
    await reporter.unschedulable(web, NO_CPU, COMPONENT)
    await reporter.flush()
    await reporter.unschedulable(web, NO_CPU, COMPONENT)
    await reporter.flush()
    names = {body["metadata"]["name"] for _, body in api.of("create_event")}
    assert len(names) == 1  # the same event, sent again
    assert [p["count"] for p in api.event_patches] == [2]


# -- bounded messages ------------------------------------------------------------------------


async def test_a_long_message_is_bounded_in_the_event_and_in_the_condition(
    api: FakeApi, reporter: Reporter, web: Pod
) -> None:
    # 5000 lines of 20 characters: the event keeps the first lines within 1024, the
    # condition within 32768, each saying how many lines it left out.
    lines = [f"problem number {i:05d}" for i in range(5000)]
    await reporter.unschedulable(web, "\n".join(lines), COMPONENT)
    await reporter.flush()
    [event] = api.events
    [condition] = api.conditions
    for message, limit in ((event["message"], 1024), (condition["message"], 32768)):
        assert len(message) <= limit
        kept = message.split("\n")[:-1]
        assert kept == lines[: len(kept)]
        assert message.endswith(f"\n... and {5000 - len(kept)} more")
        assert len(message) > limit - 40  # as many lines as fit


def test_one_line_too_long_alone_is_cut_and_a_short_message_is_left_alone() -> None:
    assert reporting.bounded_message("short", 10) == "short"
    cut = reporting.bounded_message("x" * 100, 50)
    assert len(cut) <= 50 and cut.endswith("x ...")
