"""The runtime with a policy's extenders (scripted in memory): failed attempts, extender binding.

Over real HTTP, with the operator against the API emulator: tests/e2e/test_extenders.py.
"""

from __future__ import annotations

from typing import Any

from builders import node, pod
from fakes import FakeApi, FakeClock, FakeExtenders
from policy_scheduler.engine.extenders import ExtenderError, FilterReply
from policy_scheduler.runtime.metrics import MetricsSink
from policy_scheduler.runtime.scheduling import SchedulerRuntime
from runtime.test_scheduling import attempt, make_runtime, uid

URL = "http://gpu-extender:8888/scheduler"
GPU = "example.com/gpu"


class Attempts(MetricsSink):
    def __init__(self) -> None:
        self.results: list[str] = []

    def attempt(self, result: str, profile: str, seconds: float) -> None:
        self.results.append(result)


def with_extender(**fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "policyscheduler.io/v1alpha1",
        "kind": "SchedulingPolicy",
        "metadata": {"name": "gpu", "uid": "uid-gpu", "creationTimestamp": "2024-01-01T00:00:00Z"},
        "spec": {"schedulerName": "gpu", "extenders": [{"urlPrefix": URL, **fields}]},
    }


def gpod(name: str, **kw: Any) -> dict[str, Any]:
    return pod(name, schedulerName="gpu", **kw)


def runtime_with(
    api: FakeApi, clock: FakeClock, fake: FakeExtenders, metrics: MetricsSink | None = None
) -> SchedulerRuntime:
    return make_runtime(api, clock, extenders=fake, metrics=metrics)


async def test_a_filter_error_is_reported_naming_the_extender_and_backs_off(
    api: FakeApi, clock: FakeClock
) -> None:
    def down(*args: Any) -> Any:
        raise ExtenderError(URL, "filter", f"no reply from {URL}/filter within 5s")

    metrics = Attempts()
    runtime = runtime_with(api, clock, FakeExtenders({("filter", URL): down}), metrics)
    runtime.handle("ADDED", with_extender(filterVerb="filter"))
    runtime.handle("ADDED", node("n1"))
    web = gpod("web")
    runtime.handle("ADDED", web)
    await attempt(runtime)
    message = f'extender "{URL}" filter failed: no reply from {URL}/filter within 5s'
    assert [(c["reason"], c["message"]) for c in api.conditions] == [("Unschedulable", message)]
    [event] = api.events
    assert (event["type"], event["reason"], event["message"]) == (
        "Warning",
        "FailedScheduling",
        message,
    )
    assert api.bindings == []
    assert metrics.results == ["error"]
    assert runtime.queue.where(uid(web)) == "backoff"
    clock.now += 1
    await attempt(runtime)  # retried after the backoff (and fails again)
    assert metrics.results == ["error", "error"]


async def test_refused_by_the_extender_is_unschedulable_with_its_reasons(
    api: FakeApi, clock: FakeClock
) -> None:
    fake = FakeExtenders(
        {
            ("filter", URL): lambda pod_, nodes: FilterReply(
                (), {n.name: "no GPU left" for n in nodes}
            )
        }
    )
    runtime = runtime_with(api, clock, fake)
    runtime.handle("ADDED", with_extender(filterVerb="filter"))
    runtime.handle("ADDED", node("n1"))
    runtime.handle("ADDED", node("n2"))
    web = gpod("web")
    runtime.handle("ADDED", web)
    await attempt(runtime)
    assert [c["message"] for c in api.conditions] == ["0/2 nodes are available: 2 no GPU left."]
    assert runtime.queue.where(uid(web)) == "unschedulable"


async def test_the_binding_extender_binds_instead_of_the_api(
    api: FakeApi, clock: FakeClock
) -> None:
    fake = FakeExtenders()
    runtime = runtime_with(api, clock, fake)
    runtime.handle("ADDED", with_extender(bindVerb="bind", managedResources=[{"name": GPU}]))
    runtime.handle(
        "ADDED", node("n1", allocatable={"cpu": "4", "memory": "8Gi", "pods": 110, GPU: 1})
    )
    runtime.handle("ADDED", gpod("train", requests={GPU: "1"}))
    runtime.handle("ADDED", gpod("web"))
    await attempt(runtime)
    await attempt(runtime)
    # Only the pod it manages a resource of; the other goes through pods/binding.
    assert [call[0] for call in fake.calls] == ["bind"]
    assert fake.calls[0][2] == ("n1",)
    assert api.bindings == [("default/web", "n1")]
    assert sorted(e["message"] for e in api.events) == [
        "Successfully assigned default/train to n1",
        "Successfully assigned default/web to n1",
    ]


async def test_a_failed_extender_binding_forgets_the_pod_and_retries(
    api: FakeApi, clock: FakeClock
) -> None:
    answers = iter([ExtenderError(URL, "bind", "HTTP 500 from " + URL + "/bind"), None])

    def bind(*args: Any) -> None:
        problem = next(answers)
        if problem is not None:
            raise problem

    fake = FakeExtenders({("bind", URL): bind})
    runtime = runtime_with(api, clock, fake)
    runtime.handle("ADDED", with_extender(bindVerb="bind"))
    runtime.handle("ADDED", node("n1"))
    web = gpod("web")
    runtime.handle("ADDED", web)
    await attempt(runtime)
    message = f'Binding rejected: extender "{URL}" bind failed: HTTP 500 from {URL}/bind'
    assert [e["message"] for e in api.events] == [message]
    assert [(c["reason"], c["message"]) for c in api.conditions] == [("SchedulerError", message)]
    assert not runtime.cache.is_placed(uid(web))
    assert runtime.queue.where(uid(web)) == "backoff"
    clock.now += 1
    await attempt(runtime)
    assert [call[0] for call in fake.calls] == ["bind", "bind"]
    assert runtime.cache.is_placed(uid(web))
    assert api.bindings == []


async def test_a_node_filled_during_the_extenders_call_is_not_overcommitted(
    api: FakeApi, clock: FakeClock
) -> None:
    # The cluster goes on while the extender answers: here the watch shows another
    # scheduler's pod bound to the only node, taking all of its CPU. The decision taken
    # before is checked again on the node as it is now: not bound, tried again later.
    def filter_while_the_node_fills(pod: Any, nodes: Any) -> FilterReply:
        runtime.handle("ADDED", pod_on_n1)
        return FilterReply(tuple(n.name for n in nodes))

    fake = FakeExtenders({("filter", URL): filter_while_the_node_fills})
    metrics = Attempts()
    runtime = runtime_with(api, clock, fake, metrics)
    runtime.handle("ADDED", with_extender(filterVerb="filter"))
    runtime.handle("ADDED", node("n1", cpu="2"))
    pod_on_n1 = pod("other", requests={"cpu": "2"}, node_name="n1")
    web = gpod("web", requests={"cpu": "2"})
    runtime.handle("ADDED", web)
    await attempt(runtime)
    assert api.bindings == []
    assert not runtime.cache.is_placed(uid(web))
    assert runtime.queue.where(uid(web)) == "backoff"
    assert metrics.results == ["unschedulable"]
    # The next attempt sees the node full: no node fits.
    clock.now += 1
    await attempt(runtime)
    assert api.bindings == []
    assert api.conditions[-1]["message"].startswith("0/1 nodes are available: 1 Insufficient cpu")
