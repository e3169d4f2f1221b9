"""Preemption end to end: the real operator, over HTTP, against the emulator.

What a cluster operator would check by hand with kubectl: in a cluster full of
low-priority pods, a high-priority pod gets its node's victims deleted (each with a
Normal ``Preempted`` event naming the preemptor by uid), is nominated to that node, then
bound there; a pod that a PodDisruptionBudget protects is spared when another node
allows; a pod with ``preemptionPolicy: Never`` only waits. The emulator deletes at once
(no kubelet, no grace period), as a cluster does once the victims have terminated; a
victim with a finalizer stays terminating, as a pod in its grace period does. Under
kube-scheduler v1.30's profile the victim carries ``DisruptionTarget`` before it is
deleted, and the preemptor waits for it instead of evicting another pod.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import yaml

from builders import node, pod
from e2e.harness import KubeClient, wait_until
from e2e.operator_harness import OperatorThread
from e2e.test_operator import (
    SCHEDULER,
    bound_node,
    events_for,
    our_pod,
    policy_obj,
    unschedulable,
)

V130 = Path(__file__).parents[2] / "examples" / "policies" / "kube-scheduler-v1.30.yaml"


def running(name: str, node_name: str, priority: int, **labels: str) -> dict[str, Any]:
    """A low-priority pod already on its node, using 1.5 of its 2 CPUs."""
    obj = pod(name, node_name=node_name, requests={"cpu": "1500m"}, priority=priority)
    obj["spec"]["schedulerName"] = "default-scheduler"
    obj["status"] = {"phase": "Running", "startTime": "2024-01-01T00:00:00Z"}
    if labels:
        obj["metadata"]["labels"] = labels
    del obj["metadata"]["uid"]  # the API server assigns it
    del obj["metadata"]["namespace"]
    return obj


async def full_cluster(kube: KubeClient, namespace: str, *pods: dict[str, Any]) -> None:
    await kube.create(node("n1", cpu="2", memory="4Gi"))
    await kube.create(node("n2", cpu="2", memory="4Gi"))
    for obj in pods:
        await kube.create(obj, namespace)


async def preempted_events(kube: KubeClient, namespace: str, victim: str) -> list[dict[str, Any]]:
    return [e for e in await events_for(kube, namespace, victim) if e["reason"] == "Preempted"]


async def test_a_high_priority_pod_evicts_a_nodes_victims_and_is_bound_there(
    emulator: KubeClient, namespace: str, kubeconfig: Path
) -> None:
    await full_cluster(
        emulator, namespace, running("batch-1", "n1", 10), running("batch-2", "n2", 0)
    )
    await emulator.create(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "critical"},
            "value": 1000,
        }
    )
    nominations: list[str] = []

    async def watch_nomination() -> None:
        async for event in emulator.watch("v1", "Pod", namespace):
            obj = event["object"]
            if obj["metadata"]["name"] == "urgent":
                nominated = obj.get("status", {}).get("nominatedNodeName")
                if nominated and nominated not in nominations:
                    nominations.append(nominated)

    watcher = asyncio.create_task(watch_nomination())
    try:
        async with OperatorThread(kubeconfig):
            await emulator.create(
                our_pod("urgent", requests={"cpu": "1"}, priorityClassName="critical"), namespace
            )
            # The cheaper victim is batch-2 (priority 0): n2 is the pod's node.
            assert await bound_node(emulator, namespace, "urgent", timeout=15) == "n2"
            assert await emulator.get("v1", "Pod", "batch-2", namespace) is None
            assert await emulator.get("v1", "Pod", "batch-1", namespace) is not None
            uid = (await emulator.get("v1", "Pod", "urgent", namespace) or {})["metadata"]["uid"]
            await wait_until(lambda: _has_preempted(emulator, namespace, "batch-2", uid), timeout=5)
            [event] = await preempted_events(emulator, namespace, "batch-2")
            assert event["type"] == "Normal"
            assert event["source"]["component"] == SCHEDULER
    finally:
        watcher.cancel()
    assert nominations == ["n2"]
    failed = [e for e in await events_for(emulator, namespace, "urgent") if e["type"] == "Warning"]
    assert failed and failed[0]["message"] == "0/2 nodes are available: 2 Insufficient cpu."


async def _has_preempted(kube: KubeClient, namespace: str, victim: str, uid: str) -> bool:
    # The preemptor by uid: its namespace/name is no business of the victim's tenant.
    return any(
        e["message"] == f"Preempted by pod {uid} on node n2"
        for e in await preempted_events(kube, namespace, victim)
    )


async def test_a_budget_protected_pod_is_spared_when_another_node_allows(
    emulator: KubeClient, namespace: str, kubeconfig: Path
) -> None:
    # Without the budget the victim would be db-0 (priority 0) on n2.
    await full_cluster(
        emulator,
        namespace,
        running("web-0", "n1", 10, app="web"),
        running("db-0", "n2", 0, app="db"),
    )
    await emulator.create(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "db"},
            "spec": {"selector": {"matchLabels": {"app": "db"}}, "minAvailable": 1},
            "status": {"disruptionsAllowed": 0},
        },
        namespace,
    )
    async with OperatorThread(kubeconfig):
        await emulator.create(our_pod("urgent", requests={"cpu": "1"}, priority=1000), namespace)
        assert await bound_node(emulator, namespace, "urgent", timeout=15) == "n1"
    assert await emulator.get("v1", "Pod", "db-0", namespace) is not None
    assert await emulator.get("v1", "Pod", "web-0", namespace) is None


async def test_a_pod_that_never_preempts_just_waits(
    emulator: KubeClient, namespace: str, kubeconfig: Path
) -> None:
    await full_cluster(
        emulator, namespace, running("batch-1", "n1", 0), running("batch-2", "n2", 0)
    )
    async with OperatorThread(kubeconfig):
        await emulator.create(
            our_pod("polite", requests={"cpu": "1"}, priority=1000, preemptionPolicy="Never"),
            namespace,
        )
        await unschedulable(emulator, namespace, "polite")
        # A marker decided after it (a pod that finds no lower-priority victim): a
        # preemption's writes for "polite" would have been sent before its condition.
        await emulator.create(our_pod("marker", requests={"cpu": "1"}), namespace)
        await unschedulable(emulator, namespace, "marker")
        pods = {p["metadata"]["name"]: p for p in await emulator.list("v1", "Pod", namespace)}
        assert set(pods) == {"batch-1", "batch-2", "polite", "marker"}
        assert not pods["polite"]["spec"].get("nodeName")
        assert "nominatedNodeName" not in pods["polite"].get("status", {})


def v130_policy() -> dict[str, Any]:
    """kube-scheduler v1.30's default profile (DefaultPreemption), serving our name."""
    spec = yaml.safe_load(V130.read_text())["spec"]
    return policy_obj("v130", {**spec, "schedulerName": SCHEDULER})


def disruption(obj: dict[str, Any] | None) -> dict[str, Any] | None:
    conditions = (obj or {}).get("status", {}).get("conditions", [])
    return next((c for c in conditions if c["type"] == "DisruptionTarget"), None)


async def test_a_v130_preemptor_marks_its_victim_and_waits_for_it_to_terminate(
    emulator: KubeClient, namespace: str, kubeconfig: Path
) -> None:
    # batch-2 (priority 0) is the victim; a finalizer keeps it terminating, as a grace
    # period would. While it terminates, a more important pod takes room on n2 (n2
    # cannot take the preemptor any more even without batch-2) and a node joins (the
    # preemptor is retried): it must wait for its victim, not evict batch-1 on n1.
    keep = running("batch-2", "n2", 0)
    keep["metadata"]["finalizers"] = ["example.com/keep"]
    await full_cluster(emulator, namespace, running("batch-1", "n1", 10), keep)
    await emulator.create(v130_policy())
    seen: list[tuple[bool, bool]] = []  # batch-2 as watched: (marked, terminating)

    async def watch_victim() -> None:
        async for event in emulator.watch("v1", "Pod", namespace):
            obj = event["object"]
            if obj["metadata"]["name"] == "batch-2":
                state = (disruption(obj) is not None, "deletionTimestamp" in obj["metadata"])
                if not seen or seen[-1] != state:
                    seen.append(state)

    watcher = asyncio.create_task(watch_victim())
    try:
        async with OperatorThread(kubeconfig) as thread:
            created = await emulator.create(
                our_pod("urgent", requests={"cpu": "1"}, priority=1000), namespace
            )
            uid = created["metadata"]["uid"]
            victim = await emulator.wait_for(
                "v1",
                "Pod",
                "batch-2",
                namespace,
                lambda o: bool(o and "deletionTimestamp" in o["metadata"]),
                timeout=15,
            )
            condition = disruption(victim)
            assert condition is not None
            assert {k: condition[k] for k in ("status", "reason", "message")} == {
                "status": "True",
                "reason": "PreemptionByScheduler",
                "message": f"{SCHEDULER}: preempting to accommodate a higher priority pod",
            }
            await wait_until(lambda: _has_preempted(emulator, namespace, "batch-2", uid))

            critical = running("critical", "n2", 2000)  # 1.5 CPU: n2 has no room for urgent
            await emulator.create(critical, namespace)
            # A small node joins: too small to help, NodeResourcesFit's queueing hint
            # skips it (v1.34); the preemptor is retried by the unschedulable pods'
            # flush, brought down from 60 s (the node's event wakes the loop to see it).
            assert thread.operator is not None
            thread.operator.runtime.world.queue.unschedulable_timeout = 0.5
            await emulator.create(node("n3", cpu="500m", memory="1Gi"))

            async def waited_or_evicted() -> bool:
                failed = [
                    e["message"]
                    for e in await events_for(emulator, namespace, "urgent")
                    if e["reason"] == "FailedScheduling"
                ]
                gone = await emulator.get("v1", "Pod", "batch-1", namespace)
                return gone is None or any("terminating pod on the nominated" in m for m in failed)

            await wait_until(waited_or_evicted, timeout=15, message="the preemptor's retry")
            batch_1 = await emulator.get("v1", "Pod", "batch-1", namespace)
            assert batch_1 is not None and "deletionTimestamp" not in batch_1["metadata"]
            failed = [
                e["message"]
                for e in await events_for(emulator, namespace, "urgent")
                if e["reason"] == "FailedScheduling"
            ]
            assert (
                "0/3 nodes are available: 3 Insufficient cpu. preemption: not eligible due "
                "to a terminating pod on the nominated node."
            ) in failed

            # Its victim gone, n2 still has no room: now it may preempt again (n1).
            await emulator.patch(
                "v1", "Pod", "batch-2", {"metadata": {"finalizers": None}}, namespace
            )
            assert await bound_node(emulator, namespace, "urgent", timeout=15) == "n1"
            assert await emulator.get("v1", "Pod", "batch-1", namespace) is None
    finally:
        watcher.cancel()
    # Marked before it was deleted, never deleted unmarked.
    assert seen[:3] == [(False, False), (True, False), (True, True)]
