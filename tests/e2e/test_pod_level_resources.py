"""Pod-level resources (``spec.resources``, v1.34) with the real operator and with
``explain``, against the emulator (or a real cluster with KUBECONFIG): the pod's
pod-level request decides where it lands and why a node is refused, and a pod with a
pod-level request an API server refuses is reported on the pod while the others bind.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client as k8s_client

from builders import node, pod
from e2e.harness import KubeClient, wait_until
from e2e.operator_harness import OperatorThread
from e2e.test_operator import bound_node, events_for, policy_obj, unschedulable
from policy_scheduler.runtime.explaining import explain

SCHEDULER = "policy-scheduler"


def level_pod(name: str, cpu: str) -> dict[str, Any]:
    """Our pod: one container asking 100m, ``cpu`` at pod level."""
    obj: dict[str, Any] = pod(name, requests={"cpu": "100m", "memory": "64Mi"})
    obj["spec"]["schedulerName"] = SCHEDULER
    obj["spec"]["resources"] = {"requests": {"cpu": cpu, "memory": "64Mi"}}
    del obj["metadata"]["uid"]  # the API server assigns it
    del obj["metadata"]["namespace"]  # the URL decides
    return obj


async def test_the_operator_places_a_pod_by_its_pod_level_request(
    emulator: KubeClient, namespace: str, kubeconfig: Path
) -> None:
    # MostRequested prefers the smaller node for 100m; the pod asks 3 cpus at pod level,
    # which only the bigger one holds.
    small, big = f"{namespace}-small", f"{namespace}-big"
    await emulator.create(node(small, cpu="2", memory="4Gi"))
    await emulator.create(node(big, cpu="4", memory="4Gi"))
    await emulator.create(
        policy_obj(
            f"{namespace}-most",
            {
                "schedulerName": SCHEDULER,
                "priorities": [{"name": "MostRequestedPriority", "weight": 1}],
            },
        )
    )
    await emulator.create(level_pod("web", "3"), namespace)
    await emulator.create(level_pod("huge", "8"), namespace)
    async with OperatorThread(kubeconfig):
        assert await bound_node(emulator, namespace, "web") == big
        obj = await unschedulable(emulator, namespace, "huge")
        condition = next(c for c in obj["status"]["conditions"] if c["type"] == "PodScheduled")
        assert condition["message"] == "0/2 nodes are available: 2 Insufficient cpu."


async def test_the_operator_reports_a_pod_level_request_below_its_containers(
    emulator: KubeClient, namespace: str, kubeconfig: Path
) -> None:
    # The emulator takes what an API server would refuse (a real one never stores it):
    # the operator says why on the pod and goes on with the others.
    if not emulator.is_emulated:
        pytest.skip("A real API server refuses the pod.")
    await emulator.create(node(f"{namespace}-n1", cpu="4", memory="4Gi"))
    await emulator.create(
        policy_obj(f"{namespace}-p", {"schedulerName": SCHEDULER, "priorities": []})
    )
    bad = level_pod("bad", "50m")
    await emulator.create(bad, namespace)
    await emulator.create(level_pod("good", "1"), namespace)
    message = (
        "the scheduler cannot read this pod: "
        f'Pod "{namespace}/bad": spec.resources.requests.cpu: must be greater than or '
        "equal to aggregate container requests of 100m"
    )

    async def reported() -> bool:
        return any(
            e["reason"] == "FailedScheduling" and e["message"] == message
            for e in await events_for(emulator, namespace, "bad")
        )

    async with OperatorThread(kubeconfig):
        assert await bound_node(emulator, namespace, "good") == f"{namespace}-n1"
        await wait_until(reported, timeout=10, message="the event on the bad pod")
        obj = await emulator.get("v1", "Pod", "bad", namespace)
        assert obj is not None and not obj["spec"].get("nodeName")


async def test_explain_refuses_a_node_by_the_pod_level_request(
    emulator: KubeClient, namespace: str, api_client: k8s_client.ApiClient
) -> None:
    small, big = f"{namespace}-small", f"{namespace}-big"
    await emulator.create(node(small, cpu="1", memory="2Gi"))
    await emulator.create(node(big, cpu="16", memory="64Gi"))
    await emulator.create(level_pod("web", "2"), namespace)

    _, decision = await explain(api_client, namespace, "web", SCHEDULER)

    assert decision.failed[small] == ["Insufficient cpu"]
    assert big in decision.feasible
