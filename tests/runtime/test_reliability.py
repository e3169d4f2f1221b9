"""The runtime when the API misbehaves: ambiguous binding replies, deletions the watch
missed, which changes wake which waiting pods, and what /healthz says.

The API is the fake of ``tests/fakes.py``; the real operator against a faulty emulator
is in ``tests/e2e/test_faults.py``."""

from __future__ import annotations

import asyncio
import copy
import socket
import threading
import time
import urllib.request
from typing import Any

import pytest

from builders import node, pod
from fakes import FakeApi, FakeClock
from policy_scheduler.kinds import NODE, POD
from policy_scheduler.runtime.binding import VERIFY_ATTEMPTS
from policy_scheduler.runtime.health import Health
from policy_scheduler.runtime.scheduling import SchedulerRuntime
from policy_scheduler.state.cache import PodState
from runtime.test_scheduling import attempt, bound, make_runtime, spod, uid, warnings

pytestmark = pytest.mark.looptime  # the verification's backoff sleeps in fake time


def events(api: FakeApi, reason: str) -> list[dict[str, Any]]:
    return [e for e in api.events if e["reason"] == reason]


# -- a binding whose reply was lost ----------------------------------------------------------


@pytest.mark.parametrize("answer", [500, 503, 0], ids=["500", "503", "no answer"])
async def test_a_binding_that_happened_despite_the_error_is_kept_and_reported(
    api: FakeApi, clock: FakeClock, answer: int
) -> None:
    runtime = make_runtime(api, clock)
    runtime.handle("ADDED", node("n1"))
    web = spod("web")
    runtime.handle("ADDED", web)
    api.statuses["bind"] = answer if answer else ConnectionResetError("reset")
    api.pods[("default", "web")] = (200, bound(web, "n1"))
    await attempt(runtime)
    # The GET shows it bound: success, not a retry; no false "Binding rejected".
    assert runtime.cache.state_of(uid(web)) is PodState.BINDING_FINISHED
    assert warnings(api) == []
    assert [e["message"] for e in events(api, "Scheduled")] == [
        "Successfully assigned default/web to n1"
    ]
    assert uid(web) not in runtime.queue


async def test_a_binding_that_did_not_happen_is_undone_and_retried(
    api: FakeApi, clock: FakeClock
) -> None:
    runtime = make_runtime(api, clock)
    runtime.handle("ADDED", node("n1"))
    web = spod("web")
    runtime.handle("ADDED", web)
    api.statuses["bind"] = 500  # and the pod reads back unbound (the fake's default)
    await attempt(runtime)
    assert not runtime.cache.is_placed(uid(web))
    assert runtime.queue.where(uid(web)) == "backoff"
    assert warnings(api) == ["Binding rejected: HTTP 500"]


async def test_a_binding_nobody_can_confirm_keeps_its_place_until_it_expires(
    api: FakeApi, clock: FakeClock
) -> None:
    runtime = make_runtime(api, clock)
    runtime.handle("ADDED", node("n1", cpu="1"))
    web = spod("web", "800m")
    runtime.handle("ADDED", web)
    api.statuses["bind"] = 500
    api.pods[("default", "web")] = (0, None)  # the API does not answer the GET either
    await attempt(runtime)
    assert sum(1 for c in api.calls if c.method == "get_pod") == VERIFY_ATTEMPTS
    # Kept: the node stays full for the next decisions, and nothing is reported yet.
    assert runtime.cache.state_of(uid(web)) is PodState.BINDING_FINISHED
    assert runtime.cache.cluster.nodes["n1"].requested_cpu == 800
    assert warnings(api) == [] and events(api, "Scheduled") == []
    # Nobody confirmed it within the TTL: the pod is decided again.
    clock.now += runtime.cache.ttl + 1
    runtime.requeue_expired()
    assert not runtime.cache.is_placed(uid(web))
    assert runtime.queue.where(uid(web)) == "active"


# -- deletions the watch never reported ------------------------------------------------------


async def test_a_resync_frees_what_a_lost_deletion_held(api: FakeApi, clock: FakeClock) -> None:
    runtime = make_runtime(api, clock)
    only = node("only", cpu="1")
    hog = pod("hog", requests={"cpu": "800m"}, node_name="only")
    runtime.handle("ADDED", only)
    runtime.handle("ADDED", hog)
    web = spod("web", "800m")
    runtime.handle("ADDED", web)
    await attempt(runtime)
    assert runtime.queue.where(uid(web)) == "unschedulable"
    clock.now += 5
    since = runtime.world.clock()
    # A LIST after the watch was down: the hog is gone, nobody sent DELETED.
    assert runtime.resync(NODE, [only], since) == 0
    assert runtime.resync(POD, [web], since) == 1
    assert "hog" not in {p.name for p in runtime.cache.cluster.nodes["only"].pods.values()}
    await attempt(runtime)
    assert api.bindings == [("default/web", "only")]


async def test_a_resync_forgets_a_node_whose_deletion_was_missed(
    api: FakeApi, clock: FakeClock
) -> None:
    runtime = make_runtime(api, clock)
    runtime.handle("ADDED", node("small", cpu="2", memory="4Gi"))
    runtime.handle("ADDED", node("big", cpu="16", memory="64Gi"))
    clock.now += 5
    since = runtime.world.clock()
    # "big" went away while the watch was down: only the LIST shows it.
    assert runtime.resync(NODE, [node("small", cpu="2", memory="4Gi")], since) == 1
    runtime.handle("ADDED", spod("web"))
    await attempt(runtime)
    assert api.bindings == [("default/web", "small")]


async def test_a_resync_learns_a_pod_was_bound_by_someone_else(
    api: FakeApi, clock: FakeClock
) -> None:
    runtime = make_runtime(api, clock)
    runtime.handle("ADDED", node("n1", cpu="1"))
    web = spod("web", "800m")
    runtime.handle("ADDED", web)
    clock.now += 5
    since = runtime.world.clock()
    # Bound by another scheduler while the watch was down: the LIST has it on n1.
    runtime.resync(POD, [bound(web, "n1")], since)
    assert runtime.cache.state_of(uid(web)) is PodState.ADDED
    assert runtime.cache.cluster.nodes["n1"].requested_cpu == 800
    assert uid(web) not in runtime.queue
    assert api.of("bind") == []


async def test_a_resync_never_undoes_what_a_newer_watch_event_said(
    api: FakeApi, clock: FakeClock
) -> None:
    runtime = make_runtime(api, clock)
    runtime.handle("ADDED", node("n1", labels={"disk": "hdd"}))
    since = runtime.world.clock()
    clock.now += 1
    relabelled = node("n1", labels={"disk": "ssd"})
    runtime.handle("MODIFIED", relabelled)  # arrives while the LIST is on its way
    newcomer = node("n2")
    runtime.handle("ADDED", newcomer)
    # The LIST began before both: its copy of n1 is older, and n2 is not in it.
    runtime.resync(NODE, [node("n1", labels={"disk": "hdd"})], since)
    assert runtime.cache.cluster.nodes["n1"].node.labels["disk"] == "ssd"
    assert "n2" in runtime.cache.cluster.nodes


# -- which changes wake which waiting pods ---------------------------------------------------


def heartbeat(raw: dict[str, Any], stamp: str) -> dict[str, Any]:
    obj = copy.deepcopy(raw)
    for condition in obj["status"].get("conditions", []):
        condition["lastHeartbeatTime"] = stamp
    obj["metadata"]["resourceVersion"] = stamp
    return obj


@pytest.mark.parametrize(
    ("change", "wakes"),
    [
        pytest.param(lambda n: heartbeat(n, "2024-05-01T12:00:10Z"), False, id="a heartbeat"),
        pytest.param(
            lambda n: {
                **n,
                "status": {**n["status"], "images": [{"names": ["x"], "sizeBytes": 1}]},
            },
            False,
            id="new images",
        ),
        pytest.param(
            lambda n: {**n, "metadata": {**n["metadata"], "labels": {"disk": "ssd"}}},
            True,
            id="a label",
        ),
        pytest.param(lambda n: node("full", cpu="4"), True, id="more allocatable"),
        pytest.param(
            lambda n: node("full", cpu="1", taints=[{"key": "a", "effect": "NoSchedule"}]),
            True,
            id="a taint",
        ),
    ],
)
async def test_only_changes_that_could_help_wake_an_unschedulable_pod(
    api: FakeApi, clock: FakeClock, change: Any, wakes: bool
) -> None:
    runtime = make_runtime(api, clock)
    full = node("full", cpu="1", conditions={"Ready": "True"})
    runtime.handle("ADDED", full)
    web = spod("web", "2")
    runtime.handle("ADDED", web)
    await attempt(runtime)
    assert runtime.queue.where(uid(web)) == "unschedulable"
    clock.now += 5
    runtime.handle("MODIFIED", change(full))
    assert (runtime.queue.where(uid(web)) == "active") is wakes


async def test_a_bound_pod_wakes_the_pods_whose_affinity_it_satisfies(
    api: FakeApi, clock: FakeClock
) -> None:
    runtime = make_runtime(api, clock)
    runtime.handle("ADDED", node("n1", labels={"kubernetes.io/hostname": "n1"}))
    term = {
        "labelSelector": {"matchLabels": {"app": "db"}},
        "topologyKey": "kubernetes.io/hostname",
    }
    near_db = spod(
        "near-db",
        affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}},
    )
    near_cache = spod(
        "near-cache",
        affinity={
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {**term, "labelSelector": {"matchLabels": {"app": "cache"}}}
                ]
            }
        },
    )
    runtime.handle("ADDED", near_db)
    runtime.handle("ADDED", near_cache)
    await attempt(runtime)
    await attempt(runtime)
    assert {runtime.queue.where(uid(p)) for p in (near_db, near_cache)} == {"unschedulable"}
    clock.now += 5
    runtime.handle("ADDED", pod("db", labels={"app": "db"}, node_name="n1"))
    assert runtime.queue.where(uid(near_db)) == "active"
    assert runtime.queue.where(uid(near_cache)) == "unschedulable"


# -- what /healthz says ----------------------------------------------------------------------


async def test_a_background_task_that_dies_turns_health_red() -> None:
    health = Health()

    async def crash() -> None:
        raise RuntimeError("lease API gone")

    async def forever() -> None:
        await asyncio.Event().wait()

    health.supervise("leader election", crash())
    alive = health.supervise("housekeeping", forever())
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert health.problems() == ["leader election stopped: RuntimeError: lease API gone"]
    alive.cancel()
    await asyncio.sleep(0)
    assert len(health.problems()) == 1  # a task stopped on purpose is no problem


async def test_a_stuck_attempt_and_a_dead_loop_turn_health_red() -> None:
    clock = FakeClock()
    health = Health(stuck_after=60, clock=clock)
    health.attempt_started()
    clock.now += 59
    assert health.problems() == []
    clock.now += 2
    assert health.problems() == ["a scheduling attempt has been running for 61 s (more than 60 s)"]
    health.attempt_finished()

    async def broken_loop() -> None:
        raise RuntimeError("queue corrupted")

    loop = asyncio.create_task(broken_loop())
    health.loop_started(loop)
    await asyncio.sleep(0)
    assert health.problems() == ["the scheduling loop stopped: RuntimeError('queue corrupted')"]


async def test_readiness_waits_for_the_first_list_but_liveness_does_not() -> None:
    health = Health()
    health.listing = True
    assert health.problems() == []
    assert health.problems(readiness=True) == ["listing the cluster before the first decision"]


async def test_an_error_in_a_binding_cycle_undoes_and_retries(
    api: FakeApi, clock: FakeClock
) -> None:
    runtime: SchedulerRuntime = make_runtime(api, clock)
    runtime.handle("ADDED", node("n1"))
    web = spod("web")
    runtime.handle("ADDED", web)

    async def broken(*args: Any) -> int:
        raise KeyError("a bug")

    runtime.binding._bind_call = broken  # type: ignore[method-assign]
    await attempt(runtime)
    assert not runtime.cache.is_placed(uid(web))
    assert runtime.queue.where(uid(web)) == "backoff"


@pytest.mark.looptime(False)  # the loop is held for real: a synchronous plugin's time
async def test_health_answers_while_a_scheduling_cycle_holds_the_loop() -> None:
    # A slow synchronous plugin holds the operator's loop for seconds; /healthz is served
    # from its own thread and answers meanwhile (kube-scheduler's is its own goroutine).
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    health = Health()
    stop = await health.serve("127.0.0.1", port)
    holding = threading.Event()
    answers: list[int] = []
    answered = threading.Event()

    def probe() -> None:
        holding.wait(10)
        url = f"http://127.0.0.1:{port}/healthz"
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                answers.append(response.status)
        except OSError as exc:
            answers.append(-1)
            raise AssertionError(f"no answer while the loop was held: {exc}") from exc
        finally:
            answered.set()

    prober = threading.Thread(target=probe)
    prober.start()
    try:
        holding.set()
        held_until = time.monotonic() + 5
        # The "plugin": busy on the loop's thread until the probe was answered (or 5 s).
        while not answered.is_set() and time.monotonic() < held_until:
            time.sleep(0.01)
        assert answers == [200]
    finally:
        prober.join(10)
        await stop()
