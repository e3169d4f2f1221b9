"""The real operator, over HTTP, against the emulator (or a real cluster with KUBECONFIG).

What a cluster operator would check by hand: pods land where the policy prefers, a pod
that fits nowhere says why (condition + one aggregated event), the scheduler reacts to
new nodes and to policy changes, refuses a bad policy without stopping, leaves other
schedulers' pods alone, never binds a pod twice (races, restarts), and writes nothing
of Kopf's on pods.
"""

from __future__ import annotations

import asyncio
import copy
from collections import Counter
from pathlib import Path
from typing import Any

import kmock

from builders import node, pod
from e2e.emulator import EmulatorServer, validator_from_crd
from e2e.harness import KubeClient, wait_until
from e2e.operator_harness import OperatorThread

SCHEDULER = "policy-scheduler"
POLICY_API = "policyscheduler.io/v1alpha1"


def our_pod(name: str, **kwargs: Any) -> dict[str, Any]:
    obj = pod(name, **kwargs)
    obj["spec"]["schedulerName"] = kwargs.pop("scheduler_name", SCHEDULER)
    del obj["metadata"]["uid"]  # the API server assigns it
    del obj["metadata"]["namespace"]  # the URL decides
    return obj


def policy_obj(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": POLICY_API,
        "kind": "SchedulingPolicy",
        "metadata": {"name": name},
        "spec": spec,
    }


async def bound_node(kube: KubeClient, namespace: str, name: str, timeout: float = 10) -> str:
    obj = await kube.wait_for(
        "v1",
        "Pod",
        name,
        namespace,
        lambda o: bool(o and o["spec"].get("nodeName")),
        timeout=timeout,
    )
    assert obj is not None
    return str(obj["spec"]["nodeName"])


async def unschedulable(kube: KubeClient, namespace: str, name: str) -> dict[str, Any]:
    """The pod once the scheduler has marked it PodScheduled=False/Unschedulable."""
    obj = await kube.wait_for(
        "v1",
        "Pod",
        name,
        namespace,
        lambda o: any(
            c.get("reason") == "Unschedulable"
            for c in (o or {}).get("status", {}).get("conditions", [])
        ),
        timeout=10,
    )
    assert obj is not None
    return obj


async def events_for(kube: KubeClient, namespace: str, pod_name: str) -> list[dict[str, Any]]:
    return [
        e
        for e in await kube.list("v1", "Event", namespace)
        if e.get("involvedObject", {}).get("name") == pod_name
    ]


async def test_pods_land_on_the_node_the_policy_prefers(
    emulator: KubeClient, namespace: str, kubeconfig: Path
) -> None:
    await emulator.create(node("small", cpu="2", memory="4Gi"))
    await emulator.create(node("big", cpu="16", memory="64Gi"))
    await emulator.create(
        policy_obj(
            "spread",
            {
                "schedulerName": SCHEDULER,
                "priorities": [{"name": "LeastRequestedPriority", "weight": 1}],
            },
        )
    )
    await emulator.create(our_pod("web", requests={"cpu": "1", "memory": "1Gi"}), namespace)
    async with OperatorThread(kubeconfig):
        assert await bound_node(emulator, namespace, "web") == "big"
        obj = await emulator.get("v1", "Pod", "web", namespace)
        assert obj is not None
        scheduled = [c for c in obj["status"].get("conditions", []) if c["type"] == "PodScheduled"]
        assert scheduled and scheduled[0]["status"] == "True"
        await wait_until(
            lambda: _has_event(
                emulator,
                namespace,
                "web",
                "Scheduled",
                f"Successfully assigned {namespace}/web to big",
            ),
            timeout=5,
        )
        # No Kopf annotation nor finalizer on any pod.
        assert not [k for k in obj["metadata"].get("annotations", {}) if "kopf" in k]
        assert not obj["metadata"].get("finalizers")


async def _has_event(
    kube: KubeClient, namespace: str, pod_name: str, reason: str, message: str
) -> bool:
    return any(
        e["reason"] == reason and e["message"] == message
        for e in await events_for(kube, namespace, pod_name)
    )


async def _scheduled_event(kube: KubeClient, namespace: str, pod_name: str) -> bool:
    return any(e["reason"] == "Scheduled" for e in await events_for(kube, namespace, pod_name))


async def test_unschedulable_pod_gets_condition_and_one_aggregated_event_then_a_new_node_helps(
    emulator: KubeClient, namespace: str, kubeconfig: Path
) -> None:
    await emulator.create(node("n1", cpu="1", memory="2Gi"))
    await emulator.create(
        node(
            "n2",
            cpu="8",
            memory="2Gi",
            taints=[{"key": "dedicated", "value": "db", "effect": "NoSchedule"}],
        )
    )
    await emulator.create(our_pod("big", requests={"cpu": "4"}), namespace)
    message = (
        "0/2 nodes are available: 1 Insufficient cpu, "
        "1 node(s) had taints that the pod didn't tolerate."
    )
    async with OperatorThread(kubeconfig):
        obj = await unschedulable(emulator, namespace, "big")
        condition = next(c for c in obj["status"]["conditions"] if c["type"] == "PodScheduled")
        assert (condition["status"], condition["reason"], condition["message"]) == (
            "False",
            "Unschedulable",
            message,
        )
        # Retries (a node change moves the pod back) do not multiply events.
        await emulator.patch("v1", "Node", "n1", {"metadata": {"labels": {"touched": "1"}}})

        async def retried() -> bool:  # the retry's report: one more event, or a count of 2
            failed = [
                e
                for e in await events_for(emulator, namespace, "big")
                if e["reason"] == "FailedScheduling"
            ]
            return len(failed) > 1 or any(e.get("count", 1) >= 2 for e in failed)

        await wait_until(retried, timeout=10, message="the retry's FailedScheduling")
        failed = [
            e
            for e in await events_for(emulator, namespace, "big")
            if e["reason"] == "FailedScheduling"
        ]
        assert len(failed) == 1, failed
        assert failed[0]["type"] == "Warning" and failed[0]["message"] == message
        assert failed[0]["count"] >= 2
        assert failed[0]["source"]["component"] == SCHEDULER
        assert failed[0]["reportingComponent"] == SCHEDULER

        await emulator.create(node("n3", cpu="8", memory="16Gi"))
        assert await bound_node(emulator, namespace, "big", timeout=12) == "n3"


async def test_policy_update_changes_the_next_decisions(
    emulator: KubeClient, namespace: str, kubeconfig: Path
) -> None:
    await emulator.create(node("n1", cpu="4", memory="8Gi", labels={"disk": "ssd"}))
    await emulator.create(node("n2", cpu="4", memory="8Gi"))
    prefer = lambda presence: {  # noqa: E731
        "schedulerName": SCHEDULER,
        "priorities": [
            {
                "name": "PreferSSD",
                "weight": 1,
                "argument": {"labelPreference": {"label": "disk", "presence": presence}},
            }
        ],
    }
    await emulator.create(policy_obj("disk", prefer(True)))
    async with OperatorThread(kubeconfig):
        await emulator.create(our_pod("first"), namespace)
        assert await bound_node(emulator, namespace, "first") == "n1"
        await emulator.patch(POLICY_API, "SchedulingPolicy", "disk", {"spec": prefer(False)})
        await emulator.wait_for(
            POLICY_API,
            "SchedulingPolicy",
            "disk",
            None,
            lambda o: (o or {}).get("status", {}).get("observedGeneration") == 2,
        )
        await emulator.create(our_pod("second"), namespace)
        assert await bound_node(emulator, namespace, "second") == "n2"


async def test_invalid_policy_is_refused_and_the_last_good_one_keeps_scheduling(
    emulator: KubeClient, namespace: str, kubeconfig: Path
) -> None:
    await emulator.create(node("n1", cpu="4", memory="8Gi", labels={"disk": "ssd"}))
    await emulator.create(node("n2", cpu="4", memory="8Gi"))
    good = {
        "schedulerName": SCHEDULER,
        "priorities": [
            {
                "name": "PreferSSD",
                "weight": 1,
                "argument": {"labelPreference": {"label": "disk", "presence": True}},
            }
        ],
    }
    await emulator.create(policy_obj("disk", good))
    async with OperatorThread(kubeconfig):
        await emulator.wait_for(
            POLICY_API,
            "SchedulingPolicy",
            "disk",
            None,
            lambda o: _accepted(o) == "True",
        )
        bad = copy.deepcopy(good)
        bad["priorities"][0]["weight"] = 0
        await emulator.patch(POLICY_API, "SchedulingPolicy", "disk", {"spec": bad})
        obj = await emulator.wait_for(
            POLICY_API, "SchedulingPolicy", "disk", None, lambda o: _accepted(o) == "False"
        )
        assert obj is not None
        condition = obj["status"]["conditions"][0]
        assert "spec.priorities[0].weight" in condition["message"]
        assert obj["status"]["observedGeneration"] == 2
        await wait_until(
            lambda: _policy_warning(emulator, "disk", "spec.priorities[0].weight"), timeout=5
        )
        # Scheduling goes on with the last accepted version (prefers disk=ssd).
        await emulator.create(our_pod("after"), namespace)
        assert await bound_node(emulator, namespace, "after") == "n1"


def _accepted(obj: dict[str, Any] | None) -> str | None:
    for condition in (obj or {}).get("status", {}).get("conditions", []):
        if condition.get("type") == "Accepted":
            return str(condition.get("status"))
    return None


async def _policy_warning(kube: KubeClient, name: str, text: str) -> bool:
    return any(
        e.get("involvedObject", {}).get("name") == name
        and e["type"] == "Warning"
        and text in e["message"]
        for e in await kube.list("v1", "Event", "default")
    )


async def test_a_policy_with_thousands_of_errors_gets_its_verdict_within_the_crds_limits(
    emulator: KubeClient, emulator_server: EmulatorServer, kubeconfig: Path
) -> None:
    # The emulator checks every policy write against the CRD's schema, as the API server
    # does: a condition message past 32768 characters is refused (422).
    crds = Path(__file__).resolve().parents[2] / "crds"
    crd = crds / "schedulingpolicies.policyscheduler.io.yaml"
    emulator_server.set_validator(validator_from_crd(crd))
    unknown = [{"name": f"Nope{i}"} for i in range(2000)]
    spec = {"schedulerName": SCHEDULER, "plugins": {"multiPoint": {"enabled": unknown}}}
    await emulator.create(policy_obj("many", spec))
    async with OperatorThread(kubeconfig):
        # Judging 2000 unknown plugins takes seconds of its own (each name is looked up).
        obj = await emulator.wait_for(
            POLICY_API,
            "SchedulingPolicy",
            "many",
            None,
            lambda o: _accepted(o) == "False",
            timeout=60,
        )
        assert obj is not None
        message = obj["status"]["conditions"][0]["message"]
        assert len(message) <= 32768
        assert "no plugin 'Nope0' is installed" in message
        assert message.endswith("more")
        await wait_until(lambda: _policy_warning(emulator, "many", "'Nope0'"), timeout=10)
        [warning] = [
            e
            for e in await emulator.list("v1", "Event", "default")
            if e["involvedObject"]["name"] == "many"
        ]
        assert len(warning["message"]) <= 1024


async def test_pods_of_other_schedulers_are_untouched(
    emulator: KubeClient, namespace: str, kubeconfig: Path
) -> None:
    await emulator.create(node("n1"))
    await emulator.create(our_pod("theirs", scheduler_name="default-scheduler"), namespace)
    await emulator.create(our_pod("mine"), namespace)
    async with OperatorThread(kubeconfig):
        await bound_node(emulator, namespace, "mine")
        # A marker: a pod of ours created after, decided and reported after anything
        # the scheduler would have done with "theirs" (listed before it).
        await emulator.create(our_pod("later"), namespace)
        await bound_node(emulator, namespace, "later")
        await wait_until(
            lambda: _scheduled_event(emulator, namespace, "later"), message="later's event"
        )
        theirs = await emulator.get("v1", "Pod", "theirs", namespace)
        assert theirs is not None
        assert not theirs["spec"].get("nodeName")
        assert not theirs.get("status", {}).get("conditions")
        assert not await events_for(emulator, namespace, "theirs")


async def test_two_pods_racing_for_the_last_slot_never_both_bind(
    emulator: KubeClient, namespace: str, kubeconfig: Path
) -> None:
    await emulator.create(node("only", cpu="1", memory="2Gi"))
    await emulator.create(our_pod("a", requests={"cpu": "600m"}), namespace)
    await emulator.create(our_pod("b", requests={"cpu": "600m"}), namespace)
    async with OperatorThread(kubeconfig):

        async def one_bound() -> bool:
            return await _count_bound(emulator, namespace) >= 1

        await wait_until(one_bound, timeout=10)

        async def other_refused() -> bool:  # decided after the first took the slot
            return any(
                c.get("reason") == "Unschedulable"
                for p in await emulator.list("v1", "Pod", namespace)
                for c in p.get("status", {}).get("conditions", [])
            )

        await wait_until(other_refused, timeout=10, message="the other pod refused")
        assert await _count_bound(emulator, namespace) == 1
    if emulator.is_emulated:
        successes = [b for b in emulator.bindings if b.status < 300]
        assert len(successes) == 1


async def _count_bound(kube: KubeClient, namespace: str) -> int:
    return sum(1 for p in await kube.list("v1", "Pod", namespace) if p["spec"].get("nodeName"))


async def test_restart_with_failed_bindings_loses_no_pod_and_binds_none_twice(
    emulator: KubeClient, emulator_server: Any, namespace: str, kubeconfig: Path
) -> None:
    for i in range(3):
        await emulator.create(node(f"n{i}", cpu="4", memory="8Gi"))
    names = [f"p{i}" for i in range(6)]
    # The first operator's first six bindings fail: it stops with pods it had assumed
    # but not bound; the next operator must bind each of them, once.
    emulator_server.call(
        lambda em: (
            em["post", kmock.subresource("binding")][:6] << 500 << {"kind": "Status", "code": 500}
        )
    )
    for name in names:
        await emulator.create(our_pod(name, requests={"cpu": "100m"}), namespace)
    async with OperatorThread(kubeconfig):
        await wait_until(lambda: len(emulator.bindings) >= 6, timeout=10)
    async with OperatorThread(kubeconfig):
        for name in names:
            await bound_node(emulator, namespace, name)
        # A marker decided after every one of them: a second binding would come first.
        await emulator.create(our_pod("later", requests={"cpu": "100m"}), namespace)
        await bound_node(emulator, namespace, "later")
    successes = Counter(b.pod for b in emulator.bindings if b.status < 300)
    assert successes == Counter([*names, "later"])


async def test_standby_takes_over_without_double_binding(
    emulator: KubeClient, namespace: str, kubeconfig: Path
) -> None:
    await emulator.create(node("n1", cpu="8", memory="16Gi"))
    election = dict(leader_elect=True, lease_duration=2.0, renew_deadline=1.5, retry_period=0.2)
    first = OperatorThread(kubeconfig, identity="first", **election)
    second = OperatorThread(kubeconfig, identity="second", **election)
    await asyncio.to_thread(first.start)
    try:
        await asyncio.to_thread(second.start)
        await emulator.create(our_pod("one"), namespace)
        await bound_node(emulator, namespace, "one")
        lease = await emulator.get("coordination.k8s.io/v1", "Lease", "policy-scheduler", "default")
        assert lease is not None
        leader = lease["spec"]["holderIdentity"]
        survivor = second if leader == "first" else first
        await asyncio.to_thread((first if leader == "first" else second).stop)
        await emulator.create(our_pod("two"), namespace)
        await bound_node(emulator, namespace, "two", timeout=15)
        lease = await emulator.get("coordination.k8s.io/v1", "Lease", "policy-scheduler", "default")
        assert lease is not None and lease["spec"]["holderIdentity"] == survivor.options.identity
    finally:
        await asyncio.to_thread(first.stop)
        await asyncio.to_thread(second.stop)
    if emulator.is_emulated:
        successes = Counter(b.pod for b in emulator.bindings if b.status < 300)
        assert successes == Counter(["one", "two"])


async def test_health_and_metrics_endpoints_answer(
    emulator: KubeClient, namespace: str, kubeconfig: Path
) -> None:
    import socket

    import aiohttp

    def free_port() -> int:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            return int(sock.getsockname()[1])

    health, metrics = free_port(), free_port()
    await emulator.create(node("n1"))
    await emulator.create(our_pod("counted"), namespace)
    async with OperatorThread(kubeconfig, health_port=health, metrics_port=metrics):
        await bound_node(emulator, namespace, "counted")
        async with aiohttp.ClientSession() as session:

            async def healthy() -> bool:
                # Kopf's ready flag comes before its liveness server listens; probes
                # retry in a cluster too (initialDelaySeconds, periodSeconds).
                try:
                    async with session.get(f"http://127.0.0.1:{health}/healthz") as response:
                        return response.status == 200
                except aiohttp.ClientConnectionError:
                    return False

            await wait_until(healthy, timeout=10)
            async with session.get(f"http://127.0.0.1:{metrics}/metrics") as response:
                text = await response.text()
        assert (
            'scheduler_schedule_attempts_total{profile="policy-scheduler",result="scheduled"} 1.0'
            in text
        )
        assert "scheduler_binding_duration_seconds_count" in text


def test_handlers_run_on_the_event_loop_not_in_kopfs_thread_pool() -> None:
    # Kopf runs sync handlers in an executor thread; the runtime is not thread-safe.
    import inspect

    from policy_scheduler import handlers
    from policy_scheduler.kinds import KINDS

    watching = handlers.registry._watching.get_all_handlers()
    assert sorted(h.id for h in watching) == sorted(f"{k.plural}_event" for k in KINDS)
    for handler in watching:
        assert inspect.iscoroutinefunction(handler.fn), handler.id
    assert inspect.iscoroutinefunction(handlers.login)


async def test_kopf_lists_in_pages_and_still_schedules_every_pod(
    emulator: KubeClient,
    emulator_server: Any,
    namespace: str,
    kubeconfig: Path,
    monkeypatch: Any,
) -> None:
    # An unpaged LIST of a big cluster's pods is one response of some 100 MB: Kopf's
    # initial listing goes a page at a time, as our own does (2 here, LIST_PAGE in use).
    from policy_scheduler import handlers

    monkeypatch.setattr(handlers, "LIST_PAGE", 2)
    await emulator.create(node("n1", cpu="8", memory="16Gi"))
    names = [f"paged-{i}" for i in range(5)]
    for name in names:
        await emulator.create(our_pod(name, requests={"cpu": "100m"}), namespace)
    async with OperatorThread(kubeconfig):
        for name in names:
            assert await bound_node(emulator, namespace, name) == "n1"

    def kopf_pod_lists(server: Any) -> list[dict[str, str]]:
        return [
            dict(request.params)
            for request in list(server)
            if "kopf" in request.headers.get("User-Agent", "")
            and str(request.method.value).upper() == "GET"
            and request.url.path.endswith("/pods")
            and request.params.get("watch", "").lower() not in ("true", "1")
        ]

    lists = emulator_server.call(kopf_pod_lists)
    assert lists and all(params.get("limit") == "2" for params in lists)
    assert any(params.get("continue") for params in lists)  # 5 pods: three pages
