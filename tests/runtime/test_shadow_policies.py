"""Shadow policies in the running scheduler (fake API): the active policy binds, the
shadow only decides alongside it; its status and metrics say how the two compare, its
status is written at most every few seconds, and promotion is a change of ``mode``.

Over real HTTP, with the operator against the API emulator: tests/e2e/test_shadow.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from builders import node
from fakes import FakeApi, FakeClock, FakeExtenders
from policy_scheduler.engine.extenders import ExtenderError, FilterReply
from policy_scheduler.runtime.metrics import MetricsSink
from policy_scheduler.runtime.policies import SHADOW_STATUS_INTERVAL
from policy_scheduler.runtime.scheduling import SchedulerRuntime
from runtime.test_scheduling import attempt, make_runtime, spod, uid

NAME = "policy-scheduler"


def disk_policy(
    name: str,
    presence: bool,
    *,
    mode: str | None = None,
    created: str = "2024-01-01T00:00:00Z",
    generation: int = 1,
    **spec: Any,
) -> dict[str, Any]:
    """Prefers nodes with (presence=True) or without the disk=ssd label."""
    body: dict[str, Any] = {
        "schedulerName": NAME,
        "priorities": [
            {
                "name": "PreferDisk",
                "weight": 1,
                "argument": {"labelPreference": {"label": "disk", "presence": presence}},
            }
        ],
        **spec,
    }
    if mode is not None:
        body["mode"] = mode
    return {
        "apiVersion": "policyscheduler.io/v1alpha1",
        "kind": "SchedulingPolicy",
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "creationTimestamp": created,
            "generation": generation,
        },
        "spec": body,
    }


class ShadowResults(MetricsSink):
    def __init__(self) -> None:
        self.results: list[tuple[str, str]] = []

    def shadow(self, policy: str, result: str) -> None:
        self.results.append((policy, result))


@pytest.fixture
def metrics() -> ShadowResults:
    return ShadowResults()


@pytest.fixture
async def runtime(api: FakeApi, clock: FakeClock, metrics: ShadowResults) -> SchedulerRuntime:
    runtime = make_runtime(api, clock, metrics=metrics)
    runtime.handle("ADDED", node("ssd", cpu="4", labels={"disk": "ssd"}))
    runtime.handle("ADDED", node("hdd", cpu="4"))
    runtime.handle("ADDED", disk_policy("active", True))
    runtime.handle("ADDED", disk_policy("trial", False, mode="Shadow"))
    return runtime


def shadow_statuses(api: FakeApi, name: str = "trial") -> list[Any]:
    """``status.shadow`` of every status write of policy ``name``, in order."""
    return [status["shadow"] for n, status in api.of("patch_policy_status") if n == name]


async def schedule(runtime: SchedulerRuntime, *pods: dict[str, Any]) -> None:
    for raw in pods:
        runtime.handle("ADDED", raw)
        await attempt(runtime)


async def test_only_the_active_policy_binds_and_the_shadow_is_compared(
    api: FakeApi, clock: FakeClock, runtime: SchedulerRuntime, metrics: ShadowResults
) -> None:
    await schedule(
        runtime,
        spod("web-1"),
        spod("web-2"),
        spod("pinned", node_selector={"disk": "ssd"}),
        spod("huge", "8"),  # fits nowhere, for both
        spod("hdd-only", "3", node_selector={"kubernetes.io/hostname": "hdd"}),
    )
    # Bound where the active policy (prefer ssd) said, and nowhere else.
    assert api.bindings == [
        ("default/web-1", "ssd"),
        ("default/web-2", "ssd"),
        ("default/pinned", "ssd"),
        ("default/hdd-only", "hdd"),
    ]
    # The pods' events and conditions are the active policy's alone.
    assert [e["reason"] for e in api.events] == ["Scheduled"] * 3 + ["FailedScheduling"] + [
        "Scheduled"
    ]
    assert metrics.results == [
        ("trial", "differentNode"),
        ("trial", "differentNode"),
        ("trial", "sameNode"),
        ("trial", "neitherPlaced"),
        ("trial", "sameNode"),
    ]
    clock.now += SHADOW_STATUS_INTERVAL
    await runtime.policy_status.flush()
    status = shadow_statuses(api)[-1]
    assert status == {
        "compared": 5,
        "sameNode": 2,
        "differentNode": 2,
        "onlyActivePlaced": 0,
        "onlyShadowPlaced": 0,
        "neitherPlaced": 1,
        "recentDifferences": [
            {"pod": "default/web-2", "activeNode": "ssd", "shadowNode": "hdd",
             "activeTotal": 10, "shadowTotal": 10},
            {"pod": "default/web-1", "activeNode": "ssd", "shadowNode": "hdd",
             "activeTotal": 10, "shadowTotal": 10},
        ],
    }  # fmt: skip
    # The active policy's status has no shadow part.
    assert all(s is None for s in shadow_statuses(api, "active"))
    verdict = runtime.book.verdict("trial")
    assert verdict is not None and (verdict.accepted, verdict.reason) == (True, "Shadow")


async def test_placed_by_one_policy_only_is_counted_on_its_side(
    api: FakeApi, clock: FakeClock, metrics: ShadowResults
) -> None:
    runtime = make_runtime(api, clock, metrics=metrics)
    runtime.handle("ADDED", node("tainted", taints=[{"key": "gpu", "effect": "NoSchedule"}]))
    runtime.handle("ADDED", disk_policy("active", True))
    # The shadow forgets taints: it would place the pod the active policy cannot.
    runtime.handle(
        "ADDED",
        disk_policy("trial", False, mode="Shadow", predicates=[{"name": "PodFitsResources"}]),
    )
    await schedule(runtime, spod("web"))
    assert api.bindings == []
    assert metrics.results == [("trial", "onlyShadowPlaced")]
    # And the other way round: a shadow that requires a label no node has.
    runtime.handle("ADDED", node("plain"))
    labelled = {
        "name": "NeedsGpu",
        "argument": {"labelsPresence": {"labels": ["gpu"], "presence": True}},
    }
    runtime.handle(
        "MODIFIED", disk_policy("trial", False, mode="Shadow", generation=2, predicates=[labelled])
    )
    await schedule(runtime, spod("api"))
    assert api.bindings == [("default/api", "plain")]
    assert metrics.results[-1] == ("trial", "onlyActivePlaced")
    clock.now += SHADOW_STATUS_INTERVAL
    await runtime.policy_status.flush()
    status = shadow_statuses(api)[-1]
    # A new version of the shadow compares afresh: only "api" is in its window.
    assert (status["compared"], status["onlyActivePlaced"]) == (1, 1)
    assert status["recentDifferences"] == [{"pod": "default/api", "activeNode": "plain"}]


async def test_the_shadows_status_is_written_at_most_every_few_seconds(
    api: FakeApi, clock: FakeClock, runtime: SchedulerRuntime
) -> None:
    # Written with its verdict, when it was accepted: nothing compared yet.
    assert [s["compared"] for s in shadow_statuses(api)] == [0]
    await schedule(runtime, spod("a"))
    await runtime.policy_status.flush()  # too soon after that write
    assert [s["compared"] for s in shadow_statuses(api)] == [0]
    clock.now += SHADOW_STATUS_INTERVAL
    await runtime.policy_status.flush()
    assert [s["compared"] for s in shadow_statuses(api)] == [0, 1]
    await schedule(runtime, spod("b"), spod("c"))
    clock.now += SHADOW_STATUS_INTERVAL - 1
    await runtime.policy_status.flush()  # still too soon
    assert [s["compared"] for s in shadow_statuses(api)] == [0, 1]
    clock.now += 1
    await runtime.policy_status.flush()
    assert [s["compared"] for s in shadow_statuses(api)] == [0, 1, 3]
    clock.now += SHADOW_STATUS_INTERVAL
    await runtime.policy_status.flush()  # nothing new: no write
    assert len(shadow_statuses(api)) == 3


async def test_a_retried_pod_that_compares_the_same_changes_nothing_visible(
    api: FakeApi, clock: FakeClock, runtime: SchedulerRuntime, metrics: ShadowResults
) -> None:
    huge = spod("huge", "8")
    await schedule(runtime, huge)
    clock.now += SHADOW_STATUS_INTERVAL
    await runtime.policy_status.flush()
    runtime.queue.move_all()
    await attempt(runtime)  # the same pod, decided again: still fits nowhere for both
    clock.now += SHADOW_STATUS_INTERVAL
    await runtime.policy_status.flush()
    assert metrics.results == [("trial", "neitherPlaced")] * 2
    assert [s["compared"] for s in shadow_statuses(api)] == [0, 1]
    assert runtime.queue.where(uid(huge)) == "unschedulable"


async def test_a_shadow_outside_its_share_or_over_its_budget_is_not_compared(
    api: FakeApi, clock: FakeClock, metrics: ShadowResults
) -> None:
    runtime = make_runtime(api, clock, metrics=metrics)
    runtime.handle("ADDED", node("n1"))
    runtime.handle("ADDED", disk_policy("active", True))
    runtime.handle(
        "ADDED", disk_policy("trial", False, mode="Shadow", shadow={"maxDecisionsPerSecond": 2})
    )
    await schedule(runtime, *(spod(f"p{i}", "10m") for i in range(3)))
    assert [r for _, r in metrics.results] == ["sameNode", "sameNode", "overBudget"]
    assert len(api.bindings) == 3  # the active policy never waits for a shadow's budget
    clock.now += 1
    await schedule(runtime, spod("later", "10m"))
    assert metrics.results[-1] == ("trial", "sameNode")


async def test_a_shadow_never_calls_its_extenders(
    api: FakeApi, clock: FakeClock, metrics: ShadowResults
) -> None:
    url = "http://extender:8888/scheduler"
    # An extender that would refuse every node: were the shadow to ask, it would differ.
    refuse = lambda pod, nodes: FilterReply((), {n.name: "refused" for n in nodes})  # noqa: E731
    fake = FakeExtenders({("filter", url): refuse})
    runtime = make_runtime(api, clock, metrics=metrics, extenders=fake)
    runtime.handle("ADDED", node("n1"))
    runtime.handle("ADDED", disk_policy("active", True))
    extender = {"urlPrefix": url, "filterVerb": "filter"}
    runtime.handle("ADDED", disk_policy("trial", True, mode="Shadow", extenders=[extender]))
    verdict = runtime.book.verdict("trial")
    assert verdict is not None and verdict.message.endswith(
        "its 1 HTTP extender(s) are not called in Shadow mode"
    )
    await schedule(runtime, spod("web"))
    assert fake.calls == []
    assert metrics.results == [("trial", "sameNode")]


async def test_an_active_decision_that_failed_costs_the_shadow_no_budget(
    api: FakeApi, clock: FakeClock, metrics: ShadowResults
) -> None:
    url = "http://extender:8888/scheduler"

    def filter_(pod: Any, nodes: Any) -> FilterReply:
        if pod.name == "broken":
            raise ExtenderError(url, "filter", f"no reply from {url}/filter within 5s")
        return FilterReply(tuple(n.name for n in nodes))

    fake = FakeExtenders({("filter", url): filter_})
    runtime = make_runtime(api, clock, metrics=metrics, extenders=fake)
    runtime.handle("ADDED", node("n1"))
    extender = {"urlPrefix": url, "filterVerb": "filter"}
    runtime.handle("ADDED", disk_policy("active", True, extenders=[extender]))
    runtime.handle(
        "ADDED", disk_policy("trial", False, mode="Shadow", shadow={"maxDecisionsPerSecond": 1})
    )
    # The budget holds one decision: the failed attempt must not spend it.
    await schedule(runtime, spod("broken"), spod("web"))
    assert api.bindings == [("default/web", "n1")]
    assert metrics.results == [("trial", "sameNode")]


async def test_a_shadow_with_no_active_policy_decides_nothing_and_says_so(
    api: FakeApi, clock: FakeClock, metrics: ShadowResults
) -> None:
    runtime = make_runtime(api, clock, metrics=metrics)
    runtime.handle("ADDED", node("n1"))
    trial = disk_policy("trial", True, mode="Shadow")
    trial["spec"]["schedulerName"] = "gpu"
    runtime.handle("ADDED", trial)
    web = spod("web", scheduler="gpu")
    runtime.handle("ADDED", web)
    await runtime.drain()
    assert runtime.queue.where(uid(web)) == "waiting"  # for an active policy
    [(_, status)] = api.of("patch_policy_status")
    [condition] = status["conditions"]
    assert (condition["status"], condition["reason"]) == ("True", "NoActivePolicy")
    assert 'no active SchedulingPolicy serves schedulerName "gpu"' in condition["message"]
    assert status["shadow"]["compared"] == 0
    assert metrics.results == []


async def test_promoting_the_shadow_changes_the_next_decisions(
    api: FakeApi, runtime: SchedulerRuntime, metrics: ShadowResults
) -> None:
    await schedule(runtime, spod("before"))
    # Promote the shadow first: the older active policy keeps the name meanwhile...
    runtime.handle("MODIFIED", disk_policy("trial", False, mode="Active", generation=2))
    await runtime.drain()
    verdict = runtime.book.verdict("trial")
    assert verdict is not None and verdict.reason == "SchedulerNameConflict"
    await schedule(runtime, spod("between"))
    # ...then demote the old one: the name changes hands in one step.
    runtime.handle("MODIFIED", disk_policy("active", True, mode="Shadow", generation=2))
    await runtime.drain()
    await schedule(runtime, spod("after"))
    assert api.bindings == [
        ("default/before", "ssd"),
        ("default/between", "ssd"),
        ("default/after", "hdd"),
    ]
    assert metrics.results == [
        ("trial", "differentNode"),
        ("active", "differentNode"),  # the old policy is now the shadow of the new one
    ]
    last = {name: status for name, status in api.of("patch_policy_status")}
    assert last["trial"]["shadow"] is None  # the merge patch removes status.shadow
    assert last["trial"]["servingSchedulerName"] == NAME
    assert last["active"]["servingSchedulerName"] is None
    assert last["active"]["conditions"][0]["reason"] == "Shadow"


async def test_a_standby_keeps_the_counts_the_leader_wrote(api: FakeApi, clock: FakeClock) -> None:
    leading = False
    standby = make_runtime(api, clock, is_leader=lambda: leading)
    listed = disk_policy("trial", False, mode="Shadow")
    listed["status"] = {
        "observedGeneration": 1,
        "conditions": [
            {
                "type": "Accepted",
                "status": "True",
                "reason": "NoActivePolicy",
                "message": "...",
                "observedGeneration": 1,
            }
        ],
        "podsScheduled": 0,
        "podsUnschedulable": 0,
        "shadow": {"compared": 12, "sameNode": 12, "differentNode": 0, "onlyActivePlaced": 0,
                   "onlyShadowPlaced": 0, "neitherPlaced": 0, "recentDifferences": []},
    }  # fmt: skip
    standby.handle(None, listed)
    standby.handle(None, disk_policy("active", True))
    await standby.drain()
    # Its verdicts are written (the listed message was stale, then an active policy
    # appeared), each with the leader's counts.
    assert [s["compared"] for s in shadow_statuses(api)] == [12, 12]
    *_, (_, written) = [(n, s) for n, s in api.of("patch_policy_status") if n == "trial"]
    assert written["conditions"][0]["reason"] == "Shadow"
    await standby.policy_status.refresh()  # nothing of its own to add
    assert len(shadow_statuses(api)) == 2
    leading = True
    await standby.policy_status.refresh()  # once leading, its own (empty) window counts
    assert [s["compared"] for s in shadow_statuses(api)] == [12, 12, 0]
