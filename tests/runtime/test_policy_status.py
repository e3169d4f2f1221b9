"""A SchedulingPolicy's status and the scheduler's metrics mean what they say.

``kubectl describe schedpol`` shows ``podsScheduled`` (pods the policy placed that are
bound: a decision whose binding, or whose volumes' binding, failed is not one) and
``podsUnschedulable`` (pods waiting now for another attempt), each as the CRD describes
it; ``scheduler_pending_pods`` counts only the pods this scheduler serves; the Accepted
message warns when the policy's predicates leave out a safeguard. The API is faked
(``FakeApi``); statuses are read as the operator writes them.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from builders import claim_volume, node, pod, pv, pvc, storage_class
from fakes import FakeApi, FakeClock
from policy_scheduler.crd import status_schema
from policy_scheduler.runtime.metrics import Metrics
from policy_scheduler.runtime.reporting import Reporter
from policy_scheduler.runtime.scheduling import SchedulerRuntime

NAME = "policy-scheduler"
HOSTNAME = "kubernetes.io/hostname"


def scheduling_policy(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "policyscheduler.io/v1alpha1",
        "kind": "SchedulingPolicy",
        "metadata": {
            "name": "main",
            "uid": "uid-main",
            "generation": 1,
            "creationTimestamp": "2024-01-01T00:00:00Z",
        },
        "spec": {"schedulerName": NAME, **spec},
    }


def ours(name: str, cpu: str = "1", **kwargs: Any) -> dict[str, Any]:
    return pod(name, requests={"cpu": cpu}, schedulerName=NAME, **kwargs)


@pytest.fixture
def metrics() -> Metrics:
    return Metrics()


@pytest.fixture
async def runtime(api: FakeApi, clock: FakeClock, metrics: Metrics) -> SchedulerRuntime:
    reporter = Reporter(
        api, instance="replica-0", clock=clock, wall=lambda: datetime(2024, 5, 1, tzinfo=UTC)
    )
    runtime = SchedulerRuntime(api, reporter=reporter, clock=clock, metrics=metrics)
    runtime.handle("ADDED", node("n1", cpu="2", labels={HOSTNAME: "n1"}))
    runtime.handle("ADDED", scheduling_policy())
    return runtime


async def decide_next(runtime: SchedulerRuntime) -> None:
    queued = runtime.queue.pop_nowait()
    assert queued is not None, f"no pod ready: {runtime.queue.lengths()}"
    await runtime.schedule_one(queued)
    await runtime.drain()


async def status(runtime: SchedulerRuntime, api: FakeApi) -> dict[str, Any]:
    """The policy's status as the refresher writes it now."""
    await runtime.policy_status.refresh()
    written = [s for name, s in api.of("patch_policy_status") if name == "main"]
    return dict(written[-1])


def counts(status: dict[str, Any]) -> tuple[int, int]:
    return status["podsScheduled"], status["podsUnschedulable"]


def attempts(metrics: Metrics, result: str) -> float:
    value = metrics.registry.get_sample_value(
        "scheduler_schedule_attempts_total", {"result": result, "profile": NAME}
    )
    return value or 0.0


async def test_a_decision_whose_binding_is_refused_is_not_a_scheduled_pod(
    api: FakeApi, runtime: SchedulerRuntime, metrics: Metrics, clock: FakeClock
) -> None:
    api.statuses["bind"] = [403, 201]
    runtime.handle("ADDED", ours("web"))
    await decide_next(runtime)
    assert api.bindings == [("default/web", "n1")]  # sent, and refused
    assert counts(await status(runtime, api)) == (0, 1)  # waiting in backoff
    assert (attempts(metrics, "scheduled"), attempts(metrics, "error")) == (0, 1)
    clock.now += 1  # the backoff is over: bound this time
    await decide_next(runtime)
    assert api.bindings == [("default/web", "n1")] * 2
    assert counts(await status(runtime, api)) == (1, 0)
    assert (attempts(metrics, "scheduled"), attempts(metrics, "error")) == (1, 1)


async def test_a_decision_whose_volumes_fail_to_bind_is_not_a_scheduled_pod(
    api: FakeApi, runtime: SchedulerRuntime, metrics: Metrics
) -> None:
    api.statuses["replace_persistent_volume"] = 409
    runtime.handle("ADDED", storage_class("local", mode="WaitForFirstConsumer"))
    runtime.handle(
        "ADDED",
        pv(
            "pv-1",
            storage_class="local",
            capacity="10Gi",
            access_modes=["ReadWriteOnce"],
            affinity={HOSTNAME: ["n1"]},
            resource_version="10",
        ),
    )
    runtime.handle(
        "ADDED",
        pvc(
            "data",
            storage_class="local",
            request="1Gi",
            access_modes=["ReadWriteOnce"],
            resource_version="20",
        ),
    )
    runtime.handle("ADDED", ours("db", volumes=[claim_volume("data")]))
    await decide_next(runtime)  # decided for n1; the PV's claimRef write is refused
    assert api.bindings == []
    assert counts(await status(runtime, api)) == (0, 1)
    assert (attempts(metrics, "scheduled"), attempts(metrics, "error")) == (0, 1)


async def test_pods_unschedulable_is_the_pods_waiting_now_not_a_running_total(
    api: FakeApi, runtime: SchedulerRuntime, clock: FakeClock
) -> None:
    runtime.handle("ADDED", ours("big", cpu="3"))
    await decide_next(runtime)
    assert counts(await status(runtime, api)) == (0, 1)
    runtime.handle("ADDED", node("n2", cpu="4", labels={HOSTNAME: "n2"}))  # room appears
    clock.now += 1  # out of its backoff
    await decide_next(runtime)
    assert api.bindings == [("default/big", "n2")]
    assert counts(await status(runtime, api)) == (1, 0)


def test_the_crd_describes_the_counts_as_they_are_counted() -> None:
    described = status_schema()["properties"]
    assert "the API server then bound" in described["podsScheduled"]["description"]
    assert "binding failed are not counted" in described["podsScheduled"]["description"]
    assert "wait now" in described["podsUnschedulable"]["description"]
    assert "not a running total" in described["podsUnschedulable"]["description"]
    serving = described["servingSchedulerName"]["description"]
    assert "also while a newer version is refused" in serving and "Shadow" in serving


async def test_pending_pods_counts_only_the_pods_this_scheduler_serves(
    runtime: SchedulerRuntime, metrics: Metrics
) -> None:
    # Pods of other schedulers wait in the queue in case a policy claims their name.
    for i in range(3):
        runtime.handle("ADDED", pod(f"theirs-{i}", schedulerName="default-scheduler"))
    runtime.handle("ADDED", ours("big", cpu="3"))
    await decide_next(runtime)
    assert runtime.queue.lengths()["waiting"] == 3
    pending = {
        s.labels["queue"]: s.value
        for family in metrics.registry.collect()
        if family.name == "scheduler_pending_pods"
        for s in family.samples
    }
    assert pending == {"active": 0, "backoff": 0, "unschedulable": 1, "waitingOnPermit": 0}


async def test_the_accepted_message_warns_of_a_left_out_safeguard(
    api: FakeApi, runtime: SchedulerRuntime
) -> None:
    unsafe = scheduling_policy(predicates=[{"name": "GeneralPredicates"}])
    unsafe["metadata"]["generation"] = 2
    runtime.handle("MODIFIED", unsafe)
    await runtime.drain()
    [condition] = (await status(runtime, api))["conditions"]
    assert (condition["status"], condition["reason"]) == ("True", "Accepted")
    assert condition["message"].startswith(f'serving schedulerName "{NAME}"; warning: ')
    assert (
        "leaves out PodToleratesNodeTaints, MatchInterPodAffinity, EvenPodsSpread"
        in (condition["message"])
    )


async def test_a_policy_with_thousands_of_errors_still_gets_its_verdict_in_bounds(
    api: FakeApi, runtime: SchedulerRuntime
) -> None:
    # 2000 unknown plugins: 280 000 characters of errors, past the CRD's 32768 (the API
    # refused every status write) and the events' 1024.
    many = scheduling_policy(
        plugins={"multiPoint": {"enabled": [{"name": f"Nope{i}"} for i in range(2000)]}}
    )
    many["metadata"]["generation"] = 2
    runtime.handle("MODIFIED", many)
    await runtime.drain()
    [condition] = (await status(runtime, api))["conditions"]
    assert (condition["status"], condition["reason"]) == ("False", "PluginNotFound")
    limit = status_schema()["properties"]["conditions"]["items"]["properties"]["message"]
    assert len(condition["message"]) <= limit["maxLength"]
    lines = condition["message"].split("\n")
    assert "no plugin 'Nope0' is installed" in lines[0]
    assert lines[-1] == f"... and {2000 - (len(lines) - 1)} more"
    await runtime.reporter.flush()
    [warning] = [e for e in api.events if e["type"] == "Warning"]
    assert len(warning["message"]) <= 1024
    assert "no plugin 'Nope0' is installed" in warning["message"]
    assert warning["message"].endswith("more")
