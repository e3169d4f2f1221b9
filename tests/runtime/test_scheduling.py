"""SchedulerRuntime with a fake API: watch events in, bindings, events and conditions out.

Each test feeds API-shaped nodes, pods and policies through ``handle``, the door the
Kopf handlers and the startup LIST call, runs scheduling attempts one at a time
(``schedule_one`` on what the queue hands out, then ``drain`` for the asynchronous
bindings and reports), and asserts what a user would notice: which node the pod was
bound to, which events and conditions appeared, whether the pod is waiting, and where."""

from __future__ import annotations

import asyncio
import contextlib
import copy
from datetime import UTC, datetime
from typing import Any

import pytest

from builders import node, pod
from fakes import FakeApi, FakeClock
from policy_scheduler.engine.compiler import compile_policy
from policy_scheduler.policy import parse_policy
from policy_scheduler.runtime.observing import NO_POLICY_REASON
from policy_scheduler.runtime.reporting import Reporter
from policy_scheduler.runtime.scheduling import SchedulerRuntime
from policy_scheduler.state.cache import PodState
from waiting import until

NAME = "policy-scheduler"


def spod(name: str, cpu: str = "500m", *, scheduler: str = NAME, **kw: Any) -> dict[str, Any]:
    """A pending pod for our scheduler (or ``scheduler``)."""
    return pod(name, requests={"cpu": cpu, "memory": "256Mi"}, schedulerName=scheduler, **kw)


def bound(raw: dict[str, Any], node_name: str) -> dict[str, Any]:
    """The same pod as the watch shows it once bound."""
    obj = copy.deepcopy(raw)
    obj["spec"]["nodeName"] = node_name
    return obj


def deleting(raw: dict[str, Any]) -> dict[str, Any]:
    raw["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    return raw


def uid(raw: dict[str, Any]) -> str:
    return str(raw["metadata"]["uid"])


def a_policy(
    name: str, scheduler_name: str, created: str = "2024-01-01T00:00:00Z"
) -> dict[str, Any]:
    return {
        "apiVersion": "policyscheduler.io/v1alpha1",
        "kind": "SchedulingPolicy",
        "metadata": {"name": name, "uid": f"uid-{name}", "creationTimestamp": created},
        "spec": {"schedulerName": scheduler_name},
    }


def make_runtime(api: FakeApi, clock: FakeClock, **kw: Any) -> SchedulerRuntime:
    reporter = Reporter(
        api, instance="replica-0", clock=clock, wall=lambda: datetime(2024, 5, 1, tzinfo=UTC)
    )
    return SchedulerRuntime(api, reporter=reporter, clock=clock, **kw)


@pytest.fixture
def runtime(api: FakeApi, clock: FakeClock) -> SchedulerRuntime:
    return make_runtime(api, clock)


async def attempt(runtime: SchedulerRuntime) -> None:
    """One scheduling attempt on the next ready pod, and everything it sends."""
    queued = runtime.queue.pop_nowait()
    assert queued is not None, f"no pod ready: {runtime.queue.lengths()}"
    await runtime.schedule_one(queued)
    await runtime.drain()


def warnings(api: FakeApi) -> list[str]:
    return [e["message"] for e in api.events if e["type"] == "Warning"]


def node_pods(runtime: SchedulerRuntime) -> dict[str, list[str]]:
    return {
        name: sorted(p.name for p in info.pods.values())
        for name, info in runtime.cache.cluster.nodes.items()
    }


# -- the happy path --------------------------------------------------------------------------


async def test_a_pod_is_bound_to_the_preferred_node(
    api: FakeApi, runtime: SchedulerRuntime
) -> None:
    runtime.handle("ADDED", node("small", cpu="2", memory="4Gi"))
    runtime.handle("ADDED", node("big", cpu="16", memory="64Gi"))
    web = spod("web")
    runtime.handle("MODIFIED", web)
    await attempt(runtime)
    assert api.bindings == [("default/web", "big")]
    assert api.of("bind")[0][2] == uid(web)
    [event] = api.events
    assert (event["type"], event["reason"], event["message"]) == (
        "Normal",
        "Scheduled",
        "Successfully assigned default/web to big",
    )
    assert event["source"] == {"component": NAME}
    assert api.conditions == []
    # Assumed at once, so the next decision sees it; confirmed by the watch later.
    assert node_pods(runtime) == {"small": [], "big": ["web"]}
    assert web["metadata"]["uid"] not in runtime.queue
    runtime.handle("MODIFIED", bound(web, "big"))
    assert runtime.cache.state_of(uid(web)) is PodState.ADDED
    assert node_pods(runtime) == {"small": [], "big": ["web"]}


async def test_two_pods_racing_for_the_last_slot(api: FakeApi, runtime: SchedulerRuntime) -> None:
    runtime.handle("ADDED", node("only", cpu="1"))
    first, second = spod("first", "600m"), spod("second", "600m")
    runtime.handle("MODIFIED", first)
    runtime.handle("MODIFIED", second)
    # The second decision is taken before the first binding is even answered.
    q1 = runtime.queue.pop_nowait()
    assert q1 is not None
    await runtime.schedule_one(q1)
    q2 = runtime.queue.pop_nowait()
    assert q2 is not None
    await runtime.schedule_one(q2)
    await runtime.drain()
    assert api.bindings == [("default/first", "only")]
    assert warnings(api) == ["0/1 nodes are available: 1 Insufficient cpu."]
    [condition] = api.conditions
    assert (condition["type"], condition["status"], condition["reason"]) == (
        "PodScheduled",
        "False",
        "Unschedulable",
    )
    assert condition["message"] == "0/1 nodes are available: 1 Insufficient cpu."
    assert api.of("patch_pod_status")[0][:2] == ("default", "second")
    assert runtime.queue.where(uid(second)) == "unschedulable"
    assert node_pods(runtime) == {"only": ["first"]}


async def test_an_unschedulable_pod_is_retried_when_a_node_is_added(
    api: FakeApi, runtime: SchedulerRuntime, clock: FakeClock
) -> None:
    runtime.handle("ADDED", node("small", cpu="1"))
    web = spod("web", "2")
    runtime.handle("MODIFIED", web)
    await attempt(runtime)
    assert runtime.queue.where(uid(web)) == "unschedulable"
    clock.now += 5
    runtime.handle("ADDED", node("big", cpu="8"))
    await attempt(runtime)
    assert api.bindings == [("default/web", "big")]


async def test_a_freed_node_lets_a_waiting_pod_in(
    api: FakeApi, runtime: SchedulerRuntime, clock: FakeClock
) -> None:
    runtime.handle("ADDED", node("only", cpu="1"))
    hog = pod("hog", requests={"cpu": "800m"}, node_name="only")
    runtime.handle("MODIFIED", hog)
    web = spod("web", "500m")
    runtime.handle("MODIFIED", web)
    await attempt(runtime)
    assert api.bindings == []
    clock.now += 5
    runtime.handle("DELETED", hog)
    await attempt(runtime)
    assert api.bindings == [("default/web", "only")]


async def test_a_shrunk_pod_lets_a_waiting_pod_in(
    api: FakeApi, runtime: SchedulerRuntime, clock: FakeClock
) -> None:
    runtime.handle("ADDED", node("only", cpu="1"))
    hog = pod("hog", requests={"cpu": "800m"}, node_name="only")
    runtime.handle("MODIFIED", hog)
    web = spod("web", "500m")
    runtime.handle("MODIFIED", web)
    await attempt(runtime)
    assert api.bindings == []
    clock.now += 5
    resized = copy.deepcopy(hog)
    resized["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "200m"
    runtime.handle("MODIFIED", resized)  # an in-place resize of a running pod
    await attempt(runtime)
    assert api.bindings == [("default/web", "only")]


# -- binding answers -------------------------------------------------------------------------


async def test_409_forgets_quietly_and_requeues_with_backoff(
    api: FakeApi, runtime: SchedulerRuntime, clock: FakeClock
) -> None:
    runtime.handle("ADDED", node("n1"))
    api.statuses["bind"] = 409
    web = spod("web")
    runtime.handle("MODIFIED", web)
    await attempt(runtime)
    assert api.bindings == [("default/web", "n1")]
    assert api.events == [] and api.conditions == []  # an answer, not an error
    assert node_pods(runtime) == {"n1": []}
    assert not runtime.cache.is_placed(uid(web))
    assert runtime.queue.where(uid(web)) == "backoff"
    # The watch then shows who bound it: the pod leaves the queue for good.
    runtime.handle("MODIFIED", bound(web, "n1"))
    assert uid(web) not in runtime.queue
    clock.now += 60
    assert runtime.queue.pop_nowait() is None
    assert node_pods(runtime) == {"n1": ["web"]}


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        pytest.param(500, "Binding rejected: HTTP 500", id="500"),
        pytest.param(503, "Binding rejected: HTTP 503", id="503"),
        pytest.param(
            ConnectionError("reset"), "Binding rejected: HTTP connection error", id="exception"
        ),
    ],
)
async def test_a_failed_binding_requeues_and_warns(
    api: FakeApi, runtime: SchedulerRuntime, clock: FakeClock, answer: Any, message: str
) -> None:
    runtime.handle("ADDED", node("n1"))
    api.statuses["bind"] = [answer, 201]
    web = spod("web")
    runtime.handle("MODIFIED", web)
    await attempt(runtime)
    assert warnings(api) == [message]
    [event] = api.events
    assert event["reason"] == "FailedScheduling"
    assert event["involvedObject"]["name"] == "web"
    # And the pod's condition, as upstream's recordSchedulingFailure wrote it.
    assert [(c["reason"], c["message"]) for c in api.conditions] == [("SchedulerError", message)]
    assert node_pods(runtime) == {"n1": []}
    assert runtime.queue.where(uid(web)) == "backoff"
    clock.now += 1  # the first backoff
    await attempt(runtime)
    assert api.bindings == [("default/web", "n1")] * 2
    assert node_pods(runtime) == {"n1": ["web"]}


async def test_404_drops_the_pod(api: FakeApi, runtime: SchedulerRuntime, clock: FakeClock) -> None:
    runtime.handle("ADDED", node("n1"))
    api.statuses["bind"] = 404
    web = spod("web")
    runtime.handle("MODIFIED", web)
    await attempt(runtime)
    assert api.events == []
    assert node_pods(runtime) == {"n1": []}
    assert uid(web) not in runtime.queue
    clock.now += 120
    assert runtime.queue.pop_nowait() is None


async def test_a_pod_deleted_while_its_binding_fails_is_not_retried(
    api: FakeApi, runtime: SchedulerRuntime, clock: FakeClock
) -> None:
    runtime.handle("ADDED", node("n1"))
    web = spod("web")
    runtime.handle("MODIFIED", web)
    queued = runtime.queue.pop_nowait()
    assert queued is not None
    api.statuses["bind"] = 500
    await runtime.schedule_one(queued)
    runtime.handle("DELETED", web)  # the DELETED event arrives before the binding answer
    await runtime.drain()
    assert uid(web) not in runtime.queue
    assert node_pods(runtime) == {"n1": []}
    clock.now += 120
    assert runtime.queue.pop_nowait() is None


async def test_no_binding_is_sent_when_not_leader(api: FakeApi, clock: FakeClock) -> None:
    leader = {"now": True}
    runtime = make_runtime(api, clock, is_leader=lambda: leader["now"])
    runtime.handle("ADDED", node("n1"))
    web = spod("web")
    runtime.handle("MODIFIED", web)
    queued = runtime.queue.pop_nowait()
    assert queued is not None
    leader["now"] = False  # leadership lost between the decision and the binding
    await runtime.schedule_one(queued)
    await runtime.drain()
    assert api.of("bind") == []
    assert api.events == []
    assert node_pods(runtime) == {"n1": []}  # the new leader decides again
    assert not runtime.cache.is_placed(uid(web))


# -- which pods are ours ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "where"),
    [
        pytest.param(pod("plain", requests={"cpu": "1"}), "waiting", id="default-scheduler"),
        pytest.param(spod("other", scheduler="someone-else"), "waiting", id="unserved-name"),
        pytest.param(
            spod("gated", schedulingGates=[{"name": "example.com/wait"}]),
            None,
            id="scheduling-gates",
        ),
        pytest.param(spod("bound", nodeName="n1"), None, id="already-bound"),
        pytest.param(deleting(spod("deleting")), None, id="being-deleted"),
    ],
)
async def test_pods_not_for_us_are_untouched(
    api: FakeApi, runtime: SchedulerRuntime, raw: dict[str, Any], where: str | None
) -> None:
    runtime.handle("ADDED", node("n1"))
    runtime.handle("MODIFIED", raw)
    # Pending pods of a name no policy serves wait in the queue for one; the others
    # are not the scheduler's to decide at all.
    assert runtime.queue.where(uid(raw)) == where
    assert runtime.queue.pop_nowait() is None
    await runtime.drain()
    assert api.calls == []


async def test_a_malformed_pod_is_reported_and_does_not_stop_the_others(
    api: FakeApi, runtime: SchedulerRuntime
) -> None:
    runtime.handle("ADDED", node("n1"))
    bad = spod("bad", "lots")
    runtime.handle("MODIFIED", bad)
    good = spod("good")
    runtime.handle("MODIFIED", good)
    await attempt(runtime)
    await runtime.drain()
    assert api.bindings == [("default/good", "n1")]
    [warning] = [e for e in api.events if e["type"] == "Warning"]
    assert warning["reason"] == "FailedScheduling"
    assert warning["involvedObject"]["name"] == "bad"
    assert "spec.containers[0].resources.requests.cpu" in warning["message"]
    assert "lots" in warning["message"]
    assert uid(bad) not in runtime.queue


async def test_a_malformed_pod_of_another_scheduler_is_not_reported(
    api: FakeApi, runtime: SchedulerRuntime
) -> None:
    runtime.handle("MODIFIED", pod("bad", requests={"cpu": "lots"}))
    await runtime.drain()
    assert api.calls == []


async def test_namespaces_limit_what_is_scheduled_but_all_pods_count(
    api: FakeApi, clock: FakeClock
) -> None:
    runtime = make_runtime(api, clock, namespaces=["team-a"])
    runtime.handle("ADDED", node("n1", cpu="2"))
    runtime.handle("ADDED", node("n2", cpu="2"))
    # Another team's pod fills n1: it is not ours to schedule, but it uses n1.
    runtime.handle("MODIFIED", spod("theirs", "1800m", namespace="team-b", nodeName="n1"))
    foreign = spod("pending-b", namespace="team-b")
    runtime.handle("MODIFIED", foreign)
    assert uid(foreign) not in runtime.queue
    runtime.handle("MODIFIED", spod("ours", "500m", namespace="team-a"))
    await attempt(runtime)
    assert runtime.queue.pop_nowait() is None
    assert api.bindings == [("team-a/ours", "n2")]
    assert runtime.cache.cluster.nodes["n1"].requested_cpu == 1800


# -- policies --------------------------------------------------------------------------------


async def test_a_policy_applied_later_picks_up_waiting_pods(
    api: FakeApi, runtime: SchedulerRuntime
) -> None:
    runtime.handle("ADDED", node("n1"))
    gpu_pod = spod("trainer", scheduler="gpu-scheduler")
    runtime.handle("MODIFIED", gpu_pod)
    assert runtime.queue.where(uid(gpu_pod)) == "waiting"
    assert [p.name for p in runtime.queue.pods("gpu-scheduler")] == ["trainer"]
    await runtime.drain()
    assert api.calls == []  # nobody promised to serve this name: no condition either
    [verdict] = runtime.handle("ADDED", a_policy("gpu", "gpu-scheduler")).verdicts
    assert verdict.accepted
    await attempt(runtime)
    assert api.bindings == [("default/trainer", "n1")]
    [event] = api.events
    assert event["source"] == {"component": "gpu-scheduler"}


async def test_a_pod_whose_policy_is_deleted_waits_with_a_condition(
    api: FakeApi, runtime: SchedulerRuntime
) -> None:
    runtime.handle("ADDED", node("n1", cpu="1"))
    runtime.handle("ADDED", a_policy("gpu", "gpu-scheduler"))
    waiting = spod("waiting", "2", scheduler="gpu-scheduler")
    runtime.handle("MODIFIED", waiting)
    await attempt(runtime)  # too big: unschedulable
    assert runtime.queue.where(uid(waiting)) == "unschedulable"
    runtime.handle("DELETED", a_policy("gpu", "gpu-scheduler"))
    await runtime.drain()
    assert runtime.queue.where(uid(waiting)) == "waiting"
    condition = api.conditions[-1]
    assert (condition["type"], condition["status"], condition["reason"]) == (
        "PodScheduled",
        "False",
        NO_POLICY_REASON,
    )
    assert '"gpu-scheduler"' in condition["message"]
    # A pod created for the orphaned name is told too, and waits.
    newcomer = spod("newcomer", "2", scheduler="gpu-scheduler")
    runtime.handle("MODIFIED", newcomer)
    await runtime.drain()
    assert runtime.queue.where(uid(newcomer)) == "waiting"
    assert api.of("patch_pod_status")[-1][1] == "newcomer"
    assert api.conditions[-1]["reason"] == NO_POLICY_REASON
    # A new policy for the name takes both.
    runtime.handle("ADDED", node("n2", cpu="4"))
    runtime.handle("ADDED", a_policy("gpu-v2", "gpu-scheduler", created="2024-02-01T00:00:00Z"))
    assert runtime.queue.where(uid(waiting)) == runtime.queue.where(uid(newcomer)) == "active"
    await attempt(runtime)
    await attempt(runtime)
    assert sorted(api.bindings) == [("default/newcomer", "n2"), ("default/waiting", "n2")]


async def test_a_pod_popped_after_its_policy_went_away_is_not_decided(
    api: FakeApi, runtime: SchedulerRuntime
) -> None:
    runtime.handle("ADDED", node("n1"))
    runtime.handle("ADDED", a_policy("gpu", "gpu-scheduler"))
    web = spod("web", scheduler="gpu-scheduler")
    runtime.handle("MODIFIED", web)
    queued = runtime.queue.pop_nowait()
    assert queued is not None
    runtime.handle("DELETED", a_policy("gpu", "gpu-scheduler"))
    assert await runtime.schedule_one(queued) is None
    await runtime.drain()
    assert api.of("bind") == []
    assert [p.name for p in runtime.queue.pods("gpu-scheduler")] == ["web"]


async def test_the_builtin_default_policy_serves_the_default_name(
    api: FakeApi, runtime: SchedulerRuntime
) -> None:
    runtime.handle("ADDED", node("n1"))
    runtime.handle("MODIFIED", spod("web"))
    await attempt(runtime)
    assert api.bindings == [("default/web", "n1")]


# -- metrics and failures inside the loop ----------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "result"),
    [(201, "success"), (409, "conflict"), (500, "error")],
)
async def test_binding_results_are_counted_by_kind(
    api: FakeApi, clock: FakeClock, answer: int, result: str
) -> None:
    from policy_scheduler.runtime.metrics import Metrics

    metrics = Metrics()
    runtime = make_runtime(api, clock, metrics=metrics)
    runtime.handle("ADDED", node("n1"))
    api.statuses["bind"] = answer
    runtime.handle("MODIFIED", spod("web"))
    await attempt(runtime)
    rendered = metrics.render().decode()
    assert f'scheduler_binding_duration_seconds_count{{result="{result}"}} 1.0' in rendered


async def test_one_attempt_in_ten_is_timed_per_predicate_and_priority(
    api: FakeApi, clock: FakeClock
) -> None:
    """Every attempt is counted and timed as a whole; the per-plugin counters, as
    kube-scheduler's plugin metrics, come from a sample: the 1st, 11th, 21st... attempt."""
    from policy_scheduler.runtime.metrics import Metrics

    metrics = Metrics()
    runtime = make_runtime(api, clock, metrics=metrics)
    runtime.handle("ADDED", node("n1", cpu="64"))

    def timed() -> tuple[float, float]:
        attempts = metrics.registry.get_sample_value(
            "scheduler_schedule_attempts_total", {"result": "scheduled", "profile": NAME}
        )
        fits = metrics.registry.get_sample_value(
            "scheduler_predicate_evaluation_seconds_total", {"predicate": "GeneralPredicates"}
        )
        return attempts or 0.0, fits or 0.0

    seen = []
    for i in range(12):
        runtime.handle("ADDED", spod(f"web-{i}", cpu="100m"))
        await attempt(runtime)
        seen.append(timed())
    assert [attempts for attempts, _ in seen] == [float(n) for n in range(1, 13)]
    grew = [i for i in range(12) if seen[i][1] > (seen[i - 1][1] if i else 0.0)]
    assert grew == [0, 10]


class _FailingPending:
    """A metrics sink that breaks after the pod was handed to its binding."""

    def __getattr__(self, name: str) -> Any:
        def report(*args: Any, **kwargs: Any) -> None:
            if name == "pending":
                raise RuntimeError("metrics backend down")

        return report


async def test_an_error_after_the_binding_started_keeps_the_assumption(
    api: FakeApi, clock: FakeClock
) -> None:
    runtime = make_runtime(api, clock, metrics=_FailingPending())
    runtime.handle("ADDED", node("n1"))
    web = spod("web")
    runtime.handle("MODIFIED", web)
    loop = asyncio.create_task(runtime.run())
    await until(lambda: api.bindings, "the binding")
    loop.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await loop
    assert api.bindings == [("default/web", "n1")]  # bound once, not retried
    assert runtime.cache.is_placed(uid(web))
    assert uid(web) not in runtime.queue


# -- the snapshot a decision runs on, and the re-check after it ------------------------------


def _yielding(runtime: SchedulerRuntime) -> None:
    """Make the default policy's decisions yield to the event loop after every node."""
    from policy_scheduler.engine.algorithm import Scheduler

    policy = runtime.book.policy_for(NAME)
    assert policy is not None
    runtime.decider._schedulers[policy.name] = Scheduler(explain=False, chunk_size=1)


async def _decide_while(runtime: SchedulerRuntime, *events: tuple[str, dict[str, Any]]) -> Any:
    """Start one attempt, deliver ``events`` while the engine is between nodes, finish it."""
    queued = runtime.queue.pop_nowait()
    assert queued is not None
    task = asyncio.create_task(runtime.schedule_one(queued))
    await asyncio.sleep(0)  # the engine has looked at one node and yielded
    assert not task.done()
    for event_type, raw in events:
        runtime.handle(event_type, raw)
    assert runtime.cache.held_writes == len(events)  # held until the decision ends
    decision = await task
    await runtime.drain()
    return decision


async def test_a_node_deleted_mid_decision_is_never_bound_to(
    api: FakeApi, runtime: SchedulerRuntime, clock: FakeClock
) -> None:
    big = node("big", cpu="16", memory="64Gi")
    runtime.handle("ADDED", node("small", cpu="2", memory="4Gi"))
    runtime.handle("ADDED", node("medium", cpu="4", memory="8Gi"))
    runtime.handle("ADDED", big)
    _yielding(runtime)
    web = spod("web")
    runtime.handle("ADDED", web)
    decision = await _decide_while(runtime, ("DELETED", big))
    # The decision is the snapshot's: "big" was there when it was taken...
    assert decision.node == "big"
    assert set(decision.feasible) == {"small", "medium", "big"}
    # ... but it is gone now: nothing is bound, nothing is assumed, the pod tries again.
    assert api.of("bind") == []
    assert not runtime.cache.is_placed(uid(web))
    assert runtime.queue.where(uid(web)) == "backoff"
    assert "big" not in runtime.cache.cluster.nodes
    clock.now += 5
    await attempt(runtime)
    assert api.bindings == [("default/web", "medium")]


@pytest.mark.parametrize(
    ("change", "bound_to"),
    [
        pytest.param(
            {"taints": [{"key": "gpu", "value": "only", "effect": "NoSchedule"}]},
            None,
            id="tainted-now-refuses-the-pod",
        ),
        pytest.param({"labels": {"team": "x"}}, "big", id="relabelled-still-fits"),
    ],
)
async def test_a_node_changed_mid_decision_is_checked_again(
    api: FakeApi, runtime: SchedulerRuntime, change: dict[str, Any], bound_to: str | None
) -> None:
    runtime.handle("ADDED", node("small", cpu="2", memory="4Gi"))
    runtime.handle("ADDED", node("big", cpu="16", memory="64Gi"))
    _yielding(runtime)
    web = spod("web")
    runtime.handle("ADDED", web)
    decision = await _decide_while(
        runtime, ("MODIFIED", node("big", cpu="16", memory="64Gi", **change))
    )
    assert decision.node == "big"
    if bound_to is None:
        assert api.of("bind") == []
        assert runtime.queue.where(uid(web)) == "backoff"
    else:
        assert api.bindings == [("default/web", bound_to)]


async def test_a_pod_bound_elsewhere_mid_decision_is_not_bound_again(
    api: FakeApi, runtime: SchedulerRuntime
) -> None:
    runtime.handle("ADDED", node("small", cpu="2", memory="4Gi"))
    runtime.handle("ADDED", node("big", cpu="16", memory="64Gi"))
    _yielding(runtime)
    web = spod("web")
    runtime.handle("ADDED", web)
    await _decide_while(runtime, ("MODIFIED", bound(web, "small")))
    assert api.of("bind") == []
    assert runtime.cache.node_of(uid(web)) == "small"
    assert uid(web) not in runtime.queue


# -- the cluster as the watches change it ----------------------------------------------------


async def test_a_deleted_node_is_no_longer_offered(api: FakeApi, runtime: SchedulerRuntime) -> None:
    big = node("big", cpu="16", memory="64Gi")
    runtime.handle("ADDED", node("small", cpu="2", memory="4Gi"))
    runtime.handle("ADDED", big)
    runtime.handle("DELETED", big)
    runtime.handle("ADDED", spod("web"))
    await attempt(runtime)
    assert api.bindings == [("default/web", "small")]


async def test_a_claim_being_deleted_keeps_its_pod_waiting(
    api: FakeApi, runtime: SchedulerRuntime
) -> None:
    from builders import claim_volume, pvc

    runtime.handle("ADDED", node("n1"))
    claim = pvc("data", volume_name="pv-1")
    runtime.handle("ADDED", claim)
    claim = copy.deepcopy(claim)
    claim["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    runtime.handle("MODIFIED", claim)
    runtime.handle("ADDED", spod("web", volumes=[claim_volume("data")]))
    await attempt(runtime)
    assert api.of("bind") == []
    assert warnings(api) == ['persistentvolumeclaim "data" is being deleted']


async def test_bind_workers_bound_the_calls_in_flight_but_the_loop_never_waits_for_one(
    api: FakeApi, clock: FakeClock
) -> None:
    release = asyncio.Event()
    in_flight = 0
    most = 0
    bound: list[str] = []

    async def slow_bind(namespace: str, name: str, pod_uid: str, node_name: str) -> int:
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        await release.wait()
        in_flight -= 1
        bound.append(f"{namespace}/{name}")
        return 201

    api.bind = slow_bind  # type: ignore[method-assign]
    runtime = make_runtime(api, clock, bind_workers=2)
    runtime.handle("ADDED", node("n1", cpu="64", memory="64Gi"))
    for i in range(5):
        runtime.handle("ADDED", spod(f"p{i}", "100m"))
    loop = asyncio.create_task(runtime.run())
    # Every pod decided and assumed while the calls hang: they hold up their own pods only.
    await until(
        lambda: (
            runtime.queue.lengths()["active"] == 0
            and len(runtime.cache.cluster.nodes["n1"].pods) == 5
        ),
        "every pod decided and assumed",
    )
    await until(lambda: in_flight == 2, "two calls in flight")
    release.set()
    await until(lambda: len(bound) == 5, "every binding made once released")
    loop.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await loop
    assert most == 2
    assert sorted(bound) == [f"default/p{i}" for i in range(5)]


async def test_a_policy_whose_listed_status_is_current_is_not_rewritten(
    api: FakeApi, runtime: SchedulerRuntime
) -> None:
    # Startup LISTs policies through the same door: a status already true stays untouched,
    # lastTransitionTime included.
    current = a_policy("gpu", "gpu-scheduler")
    current["metadata"]["generation"] = 1
    current["status"] = {
        "observedGeneration": 1,
        "conditions": [
            {
                "type": "Accepted",
                "status": "True",
                "reason": "Accepted",
                "message": 'serving schedulerName "gpu-scheduler"',
                "observedGeneration": 1,
                "lastTransitionTime": "2024-01-01T00:00:00Z",
            }
        ],
        "servingSchedulerName": "gpu-scheduler",
        "podsScheduled": 0,
        "podsUnschedulable": 0,
        "plugins": compile_policy(parse_policy(current)).pipeline.listing(),
    }
    runtime.handle(None, current)
    await runtime.drain()
    assert api.of("patch_policy_status") == []
    stale = copy.deepcopy(current)
    stale["metadata"]["generation"] = 2
    runtime.handle(None, stale)
    await runtime.drain()
    [(_, written)] = api.of("patch_policy_status")
    assert written["observedGeneration"] == 2
    assert written["conditions"][0]["lastTransitionTime"] == "2024-01-01T00:00:00Z"


async def test_a_decision_taken_in_an_earlier_leadership_term_is_not_bound(
    api: FakeApi, clock: FakeClock
) -> None:
    """The Lease was lost and taken again while the pod was decided (a plugin held the
    loop): the decision is the old term's, so it is undone and decided again."""
    terms = iter([1])  # the term read when the decision starts; later reads say 2
    runtime = make_runtime(api, clock, leader_term=lambda: next(terms, 2))
    runtime.handle("ADDED", node("n1"))
    runtime.handle("ADDED", spod("web"))
    await attempt(runtime)
    assert api.bindings == []
    assert runtime.cache.cluster.nodes["n1"].pods == {}  # the assumption undone
    assert runtime.queue.lengths()["active"] + runtime.queue.lengths()["backoff"] == 1


async def test_a_decision_bound_in_the_term_it_was_taken_in(api: FakeApi, clock: FakeClock) -> None:
    runtime = make_runtime(api, clock, leader_term=lambda: 3)
    runtime.handle("ADDED", node("n1"))
    runtime.handle("ADDED", spod("web"))
    await attempt(runtime)
    assert api.bindings == [("default/web", "n1")]
