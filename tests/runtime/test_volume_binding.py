"""The runtime binds a pod's volumes before the pod (the legacy volume binder's cycle).

The test plays the API and the PV controller with a fake API: PV and PVC events go
through ``handle`` as the watches deliver them; what the scheduler writes is read back
from the fake's calls. Checked as a user would notice it: the PV's claimRef and the
claim's selected-node as written, the pod bound only once the claims are, the
``VolumeBindingFailed`` event and condition on failure, the retry, and the other pods
going on meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from builders import claim_volume, node, pod, pv, pvc, storage_class
from fakes import FakeApi, FakeClock
from policy_scheduler.runtime.reporting import Reporter
from policy_scheduler.runtime.scheduling import SchedulerRuntime
from waiting import until

NAME = "policy-scheduler"
HOSTNAME = "kubernetes.io/hostname"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
NO_PV = "node(s) didn't find available persistent volumes to bind"


def local_pv(name: str, node_name: str = "n1", rv: str = "10") -> dict[str, Any]:
    return pv(
        name,
        storage_class="local",
        capacity="10Gi",
        access_modes=["ReadWriteOnce"],
        affinity={HOSTNAME: [node_name]},
        resource_version=rv,
    )


def claim(name: str, class_name: str = "local", rv: str = "20") -> dict[str, Any]:
    return pvc(
        name,
        storage_class=class_name,
        request="1Gi",
        access_modes=["ReadWriteOnce"],
        resource_version=rv,
    )


def vpod(name: str, *claims: str, cpu: str = "100m") -> dict[str, Any]:
    return pod(
        name,
        requests={"cpu": cpu},
        schedulerName=NAME,
        volumes=[claim_volume(c) for c in claims],
    )


def uid(raw: dict[str, Any]) -> str:
    return str(raw["metadata"]["uid"])


def make_runtime(api: FakeApi, clock: FakeClock, **kw: Any) -> SchedulerRuntime:
    reporter = Reporter(
        api, instance="replica-0", clock=clock, wall=lambda: datetime(2024, 5, 1, tzinfo=UTC)
    )
    runtime = SchedulerRuntime(api, reporter=reporter, clock=clock, **kw)
    for name in ("n1", "n2"):
        runtime.handle("ADDED", node(name, labels={HOSTNAME: name}))
    runtime.handle("ADDED", storage_class("local", mode="WaitForFirstConsumer"))
    runtime.handle("ADDED", storage_class("fast", "csi.example.com", mode="WaitForFirstConsumer"))
    return runtime


@pytest.fixture
def runtime(api: FakeApi, clock: FakeClock) -> SchedulerRuntime:
    return make_runtime(api, clock)


async def decide_next(runtime: SchedulerRuntime) -> None:
    queued = runtime.queue.pop_nowait()
    assert queued is not None, f"no pod ready: {runtime.queue.lengths()}"
    await runtime.schedule_one(queued)


async def static_pod_waiting(runtime: SchedulerRuntime) -> dict[str, Any]:
    """Pod "db" with claim "data" matched to PV "pv-1" on n1, decided, its claimRef
    written, waiting for the PV controller."""
    runtime.handle("ADDED", local_pv("pv-1"))
    runtime.handle("ADDED", claim("data"))
    db = vpod("db", "data")
    runtime.handle("ADDED", db)
    await decide_next(runtime)
    await until(lambda: runtime.volume_binder.waiting == 1)
    return db


async def provisioned_pod_waiting(runtime: SchedulerRuntime) -> dict[str, Any]:
    """Pod "db" with claim "cache" to provision, its selected-node written, waiting."""
    runtime.handle("ADDED", claim("cache", "fast"))
    db = vpod("db", "cache")
    runtime.handle("ADDED", db)
    await decide_next(runtime)
    await until(lambda: runtime.volume_binder.waiting == 1)
    return db


def written_pvs(api: FakeApi) -> list[dict[str, Any]]:
    return [body for _name, body in api.of("replace_persistent_volume")]


def written_claims(api: FakeApi) -> list[dict[str, Any]]:
    return [body for _ns, _name, body in api.of("replace_claim")]


def bound_claim(raw: dict[str, Any], volume: str, rv: str) -> dict[str, Any]:
    """The claim as the PV controller leaves it: volumeName, annotations, phase Bound."""
    done = copy.deepcopy(raw)
    done["metadata"]["resourceVersion"] = rv
    done["metadata"].setdefault("annotations", {})[BIND_COMPLETED] = "yes"
    done["metadata"]["annotations"][BOUND_BY_CONTROLLER] = "yes"
    done["spec"]["volumeName"] = volume
    done["status"] = {"phase": "Bound"}
    return done


def volume_failures(api: FakeApi) -> list[str]:
    return [e["message"] for e in api.events if e["reason"] == "VolumeBindingFailed"]


# -- the happy paths ---------------------------------------------------------------------------


@pytest.mark.looptime  # the loop's fake clock: the negative check's second costs nothing
async def test_a_static_pv_gets_its_claimref_then_the_pod_is_bound_once_the_claim_is(
    api: FakeApi, runtime: SchedulerRuntime
) -> None:
    runtime.handle("ADDED", local_pv("pv-1", rv="10"))
    data = claim("data", rv="20")
    runtime.handle("ADDED", data)
    db = vpod("db", "data")
    runtime.handle("ADDED", db)
    await decide_next(runtime)
    await until(lambda: runtime.volume_binder.waiting == 1)
    [body] = written_pvs(api)
    assert body["metadata"]["resourceVersion"] == "10"  # the version the decision read
    assert body["spec"]["claimRef"] == {
        "kind": "PersistentVolumeClaim",
        "namespace": "default",
        "name": "data",
        "uid": "uid-data",
        "apiVersion": "v1",
        "resourceVersion": "20",
    }
    assert body["metadata"]["annotations"] == {BOUND_BY_CONTROLLER: "yes"}
    assert api.bindings == []  # not before the PV controller has bound the claim
    # The PV controller: the claim gets its volume, its annotations, then its phase.
    half_done = bound_claim(data, "pv-1", "21")
    del half_done["status"]
    runtime.handle("MODIFIED", half_done)
    await asyncio.sleep(1)  # a second on the loop's clock: a binding had every chance
    assert api.bindings == []
    assert runtime.volume_binder.waiting == 1
    runtime.handle("MODIFIED", bound_claim(data, "pv-1", "22"))
    await runtime.drain()
    assert api.bindings == [("default/db", "n1")]
    assert [c.method for c in api.calls if c.method in ("replace_persistent_volume", "bind")] == [
        "replace_persistent_volume",
        "bind",
    ]
    assert runtime.volume_binder.waiting == 0
    assert api.conditions == []


async def test_a_claim_to_provision_gets_its_selected_node_then_the_pod_follows(
    api: FakeApi, runtime: SchedulerRuntime
) -> None:
    cache = claim("cache", "fast", rv="30")
    runtime.handle("ADDED", cache)
    runtime.handle("ADDED", vpod("db", "cache"))
    await decide_next(runtime)
    await until(lambda: runtime.volume_binder.waiting == 1)
    [body] = written_claims(api)
    chosen = body["metadata"]["annotations"][SELECTED_NODE]
    assert body["metadata"]["resourceVersion"] == "30"
    assert written_pvs(api) == []
    # The provisioner creates a PV on that node, the PV controller binds the claim.
    provisioned = local_pv("pvc-123", chosen, rv="40")
    provisioned["spec"]["claimRef"] = {"namespace": "default", "name": "cache", "uid": "uid-cache"}
    runtime.handle("ADDED", provisioned)
    assert api.bindings == []
    annotated = copy.deepcopy(cache)
    annotated["metadata"]["annotations"] = {SELECTED_NODE: chosen}
    runtime.handle("MODIFIED", bound_claim(annotated, "pvc-123", "500"))
    await runtime.drain()
    assert api.bindings == [("default/db", chosen)]


async def test_bound_claims_need_no_write(api: FakeApi, runtime: SchedulerRuntime) -> None:
    done = local_pv("pv-1")
    done["spec"]["claimRef"] = {"namespace": "default", "name": "data", "uid": "uid-data"}
    done["status"]["phase"] = "Bound"
    runtime.handle("ADDED", done)
    runtime.handle("ADDED", bound_claim(claim("data"), "pv-1", "21"))
    runtime.handle("ADDED", vpod("db", "data"))
    await decide_next(runtime)
    await runtime.drain()
    assert api.bindings == [("default/db", "n1")]
    assert written_pvs(api) == [] and written_claims(api) == []


async def test_a_user_pre_bound_pv_is_not_marked_bound_by_controller(
    api: FakeApi, runtime: SchedulerRuntime
) -> None:
    pre_bound = local_pv("pv-1")
    pre_bound["spec"]["claimRef"] = {"namespace": "default", "name": "data"}  # no uid
    runtime.handle("ADDED", pre_bound)
    runtime.handle("ADDED", claim("data"))
    runtime.handle("ADDED", vpod("db", "data"))
    await decide_next(runtime)
    await until(lambda: runtime.volume_binder.waiting == 1)
    [body] = written_pvs(api)
    assert body["spec"]["claimRef"]["uid"] == "uid-data"
    assert BOUND_BY_CONTROLLER not in body["metadata"].get("annotations", {})


# -- one PV, two pods ----------------------------------------------------------------------------


async def test_two_pods_competing_for_one_pv_never_both_get_it(
    api: FakeApi, runtime: SchedulerRuntime
) -> None:
    runtime.handle("ADDED", local_pv("only"))
    runtime.handle("ADDED", claim("a"))
    runtime.handle("ADDED", claim("b"))
    first, second = vpod("first", "a"), vpod("second", "b")
    runtime.handle("ADDED", first)
    runtime.handle("ADDED", second)
    await decide_next(runtime)
    await decide_next(runtime)  # decided while the first one waits for its volumes
    await until(lambda: runtime.volume_binder.waiting == 1)
    [body] = written_pvs(api)
    assert body["spec"]["claimRef"]["name"] == "a"
    assert not runtime.cache.is_placed(uid(second))
    await until(lambda: bool(api.conditions))
    assert api.conditions[0]["message"] == f"0/2 nodes are available: 2 {NO_PV}."
    runtime.volume_binder.stop()
    await runtime.drain()


# -- failures: undo, tell, retry ------------------------------------------------------------------


async def test_a_409_on_the_pv_undoes_the_assumption_warns_and_retries(
    api: FakeApi, runtime: SchedulerRuntime, clock: FakeClock
) -> None:
    api.statuses["replace_persistent_volume"] = 409
    runtime.handle("ADDED", local_pv("pv-1"))
    runtime.handle("ADDED", claim("data"))
    db = vpod("db", "data")
    runtime.handle("ADDED", db)
    await decide_next(runtime)
    await runtime.drain()
    message = 'binding volumes: PersistentVolume "pv-1" was modified meanwhile (409 Conflict)'
    assert volume_failures(api) == [message]
    [condition] = api.conditions
    assert (condition["status"], condition["reason"], condition["message"]) == (
        "False",
        "VolumeBindingFailed",
        message,
    )
    assert api.bindings == []
    assert not runtime.cache.is_placed(uid(db))
    assert runtime.cache.cluster.persistent_volumes["pv-1"].claim == ""  # given back
    assert runtime.queue.where(uid(db)) == "backoff"
    # Retried after the backoff: this time the write goes through.
    api.statuses["replace_persistent_volume"] = 200
    clock.now += 1
    await decide_next(runtime)
    await until(lambda: runtime.volume_binder.waiting == 1)
    assert len(written_pvs(api)) == 2
    runtime.handle("MODIFIED", bound_claim(claim("data"), "pv-1", "25"))
    await runtime.drain()
    assert api.bindings == [("default/db", "n1")]


async def test_a_409_on_the_claim_is_a_failure_too(api: FakeApi, runtime: SchedulerRuntime) -> None:
    api.statuses["replace_claim"] = 409
    runtime.handle("ADDED", claim("cache", "fast"))
    db = vpod("db", "cache")
    runtime.handle("ADDED", db)
    await decide_next(runtime)
    await runtime.drain()
    assert volume_failures(api) == [
        'binding volumes: PersistentVolumeClaim "default/cache" was modified meanwhile '
        "(409 Conflict)"
    ]
    assert SELECTED_NODE not in runtime.cache.cluster.claims["default/cache"].annotations
    assert runtime.queue.where(uid(db)) == "backoff"


async def test_a_pv_changed_after_the_decision_is_never_written_over(
    api: FakeApi, runtime: SchedulerRuntime
) -> None:
    runtime.handle("ADDED", local_pv("pv-1", rv="10"))
    runtime.handle("ADDED", claim("data"))
    runtime.handle("ADDED", vpod("db", "data"))
    await decide_next(runtime)  # the binding task has not run yet
    taken = local_pv("pv-1", rv="11")
    taken["spec"]["claimRef"] = {"namespace": "other", "name": "theirs", "uid": "uid-theirs"}
    runtime.handle("MODIFIED", taken)
    await runtime.drain()
    assert written_pvs(api) == []
    assert volume_failures(api) == [
        'binding volumes: PersistentVolume "pv-1" was modified meanwhile (409 Conflict)'
    ]
    assert runtime.cache.cluster.persistent_volumes["pv-1"].claim == "other/theirs"


async def test_a_write_that_fails_otherwise_is_reported_with_its_status(
    api: FakeApi, runtime: SchedulerRuntime
) -> None:
    api.statuses["replace_persistent_volume"] = [500]
    runtime.handle("ADDED", local_pv("pv-1"))
    runtime.handle("ADDED", claim("data"))
    runtime.handle("ADDED", vpod("db", "data"))
    await decide_next(runtime)
    await runtime.drain()
    assert volume_failures(api) == [
        'binding volumes: updating PersistentVolume "pv-1" failed: HTTP 500'
    ]


@pytest.mark.looptime
async def test_a_pv_controller_that_never_answers_times_out_and_the_pod_is_retried(
    api: FakeApi, clock: FakeClock
) -> None:
    runtime = make_runtime(api, clock, volume_binding_timeout=30)
    runtime.handle("ADDED", claim("cache", "fast"))
    db = vpod("db", "cache")
    runtime.handle("ADDED", db)
    await decide_next(runtime)
    await until(lambda: runtime.volume_binder.waiting == 1)
    await asyncio.sleep(29)
    assert volume_failures(api) == []
    await asyncio.sleep(2)
    await runtime.drain()
    message = (
        "binding volumes: timed out after 30s waiting for "
        'PersistentVolumeClaim "default/cache" to be bound'
    )
    assert volume_failures(api) == [message]
    assert api.conditions[-1]["reason"] == "VolumeBindingFailed"
    assert api.bindings == []
    assert runtime.queue.where(uid(db)) == "backoff"
    assert not runtime.cache.is_placed(uid(db))


@pytest.mark.parametrize(
    ("undo", "message"),
    [
        pytest.param(
            lambda raw: raw["spec"].pop("claimRef"),
            'ClaimRef got reset for pv "pv-1"',
            id="claimref-reset",
        ),
        pytest.param(
            lambda raw: raw["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0][
                "matchExpressions"
            ][0].update(values=["n2"]),
            'pv "pv-1" node affinity doesn\'t match node "n1"',
            id="node-affinity-changed",
        ),
    ],
)
async def test_a_pv_controller_undoing_the_claimref_fails_the_binding(
    api: FakeApi, runtime: SchedulerRuntime, undo: Callable[[dict[str, Any]], Any], message: str
) -> None:
    db = await static_pod_waiting(runtime)
    [body] = written_pvs(api)
    undone = copy.deepcopy(body)
    undone["metadata"]["resourceVersion"] = "5000"
    undo(undone)
    runtime.handle("MODIFIED", undone)
    await runtime.drain()
    assert volume_failures(api) == [f"binding volumes: {message}"]
    assert runtime.queue.where(uid(db)) == "backoff"


@pytest.mark.parametrize(
    ("annotations", "message"),
    [
        pytest.param({}, 'selectedNode annotation reset for PVC "cache"', id="reset"),
        pytest.param(
            {SELECTED_NODE: "elsewhere"},
            'selectedNode annotation value "elsewhere" not set to scheduled node "{node}"',
            id="moved",
        ),
    ],
)
async def test_a_selected_node_undone_fails_the_binding(
    api: FakeApi, runtime: SchedulerRuntime, annotations: dict[str, str], message: str
) -> None:
    await provisioned_pod_waiting(runtime)
    [body] = written_claims(api)
    chosen = body["metadata"]["annotations"][SELECTED_NODE]
    undone = copy.deepcopy(body)
    undone["metadata"]["resourceVersion"] = "5000"
    undone["metadata"]["annotations"] = annotations
    runtime.handle("MODIFIED", undone)
    await runtime.drain()
    assert volume_failures(api) == [f"binding volumes: {message.format(node=chosen)}"]


async def test_a_pod_deleted_while_waiting_is_dropped_quietly(
    api: FakeApi, runtime: SchedulerRuntime, clock: FakeClock
) -> None:
    db = await static_pod_waiting(runtime)
    runtime.handle("DELETED", db)
    await runtime.drain()
    assert api.events == [] and api.bindings == []
    assert uid(db) not in runtime.queue
    clock.now += 60
    assert runtime.queue.pop_nowait() is None


async def test_stopping_ends_the_waits_without_a_word(
    api: FakeApi, runtime: SchedulerRuntime
) -> None:
    db = await static_pod_waiting(runtime)
    runtime.volume_binder.stop()
    await runtime.drain()
    assert api.events == [] and api.bindings == []
    assert not runtime.cache.is_placed(uid(db))
    # What the API holds now (our claimRef) is the PV controller's to finish.
    assert runtime.cache.cluster.persistent_volumes["pv-1"].claim == "default/data"


# -- the loop goes on -------------------------------------------------------------------------


async def test_pods_waiting_for_volumes_hold_no_bind_slot(api: FakeApi, clock: FakeClock) -> None:
    runtime = make_runtime(api, clock, bind_workers=1)
    runtime.handle("ADDED", claim("a", "fast"))
    runtime.handle("ADDED", claim("b", "fast"))
    runtime.handle("ADDED", vpod("with-a", "a"))
    runtime.handle("ADDED", vpod("with-b", "b"))
    for i in range(3):
        runtime.handle("ADDED", vpod(f"plain-{i}"))
    loop = asyncio.create_task(runtime.run())
    try:
        await until(lambda: len(api.bindings) == 3)
        assert runtime.volume_binder.waiting == 2
        assert sorted(name for name, _ in api.bindings) == [
            "default/plain-0",
            "default/plain-1",
            "default/plain-2",
        ]
    finally:
        loop.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await loop
    # Cancelling the loop ended the waits: nothing left assumed, nothing reported.
    assert runtime.volume_binder.waiting == 0
    assert runtime.cache.assumed_volumes == 0
    assert volume_failures(api) == []


async def test_an_unbound_immediate_claim_keeps_the_pod_waiting_until_it_is_bound(
    api: FakeApi, runtime: SchedulerRuntime
) -> None:
    runtime.handle("ADDED", storage_class("standard", "csi.example.com", mode="Immediate"))
    data = claim("data", "standard")
    runtime.handle("ADDED", data)
    db = vpod("db", "data")
    runtime.handle("ADDED", db)
    await decide_next(runtime)
    await runtime.drain()
    assert api.conditions[-1]["message"] == (
        "0/2 nodes are available: 2 pod has unbound immediate PersistentVolumeClaims."
    )
    assert runtime.queue.where(uid(db)) == "unschedulable"
    bound_pv = local_pv("pv-9", "n2", rv="50")
    bound_pv["spec"]["storageClassName"] = "standard"
    bound_pv["spec"]["claimRef"] = {"namespace": "default", "name": "data", "uid": "uid-data"}
    runtime.handle("ADDED", bound_pv)
    runtime.handle("MODIFIED", bound_claim(data, "pv-9", "51"))
    assert runtime.queue.where(uid(db)) in ("active", "backoff")


@pytest.mark.looptime
async def test_a_policys_bind_timeout_cuts_the_wait_before_the_operators(
    api: FakeApi, clock: FakeClock
) -> None:
    # kube-scheduler v1.30's VolumeBinding with bindTimeoutSeconds: 5; the operator's own
    # --volume-binding-timeout is 30: the policy's pods wait 5 s, as its args say.
    runtime = make_runtime(api, clock, volume_binding_timeout=30)
    runtime.handle(
        "ADDED",
        {
            "apiVersion": "policyscheduler.io/v1alpha1",
            "kind": "SchedulingPolicy",
            "metadata": {"name": "v130", "creationTimestamp": "2024-01-01T00:00:00Z"},
            "spec": {
                "schedulerName": "policy-scheduler",
                "predicates": [{"name": "VolumeBinding"}],
                "priorities": [],
                "pluginConfig": [{"name": "VolumeBinding", "args": {"bindTimeoutSeconds": 5}}],
            },
        },
    )
    runtime.handle("ADDED", claim("cache", "fast"))
    runtime.handle("ADDED", vpod("db", "cache"))
    await decide_next(runtime)
    await until(lambda: runtime.volume_binder.waiting == 1)
    await asyncio.sleep(4)
    assert volume_failures(api) == []
    await asyncio.sleep(2)
    await runtime.drain()
    assert volume_failures(api) == [
        "binding volumes: timed out after 5s waiting for "
        'PersistentVolumeClaim "default/cache" to be bound'
    ]
