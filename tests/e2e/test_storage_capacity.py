"""Storage capacity end to end: the real operator watches CSIDrivers and
CSIStorageCapacities through the API, and a claim of a driver with
``spec.storageCapacity: true`` is provisioned only on a node whose storage has room, as
kube-scheduler v1.30's VolumeBinding decides (the policy is v1.30's default profile,
converted). A CSIStorageCapacity added or changed wakes the pods that found no room.

The test plays the PV controller and the provisioner (``test_volume_binding``'s
:class:`PVController`): a claim the scheduler annotated with the selected node gets a PV
there, then is bound, and only then is the pod bound. ``explain`` reads both kinds from
the live cluster too, and ``kubectl get`` dumps them for ``simulate``.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client as k8s_client

import e2e.test_kubectl as kubectl
import e2e.test_volume_binding as volume_binding
from builders import claim_volume, csi_driver, csi_storage_capacity, node, pod
from e2e.harness import KubeClient, wait_until
from e2e.operator_harness import OperatorThread
from policy_scheduler.cli import main
from policy_scheduler.runtime.explaining import explain
from policy_scheduler.schedconfig import convert_configuration

SCHEDULER = "policy-scheduler"
ZONE = "topology.example.com/zone"
NOT_ENOUGH = "node(s) did not have enough free storage"
STORAGE_API = "storage.k8s.io/v1"


def v130_policy() -> dict[str, Any]:
    """kube-scheduler v1.30's default profile serving our name, as ``convert`` writes it."""
    conversion = convert_configuration(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [{"schedulerName": SCHEDULER}],
        }
    )
    [policy] = conversion.objects
    return dict(policy)


def claim(name: str, size: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "fast",
            "resources": {"requests": {"storage": size}},
        },
        "status": {"phase": "Pending"},
    }


def our_pod(name: str, claim_name: str) -> dict[str, Any]:
    obj = pod(name, requests={"cpu": "100m"}, volumes=[claim_volume(claim_name)])
    obj["spec"]["schedulerName"] = SCHEDULER
    del obj["metadata"]["uid"]  # the API server assigns it
    del obj["metadata"]["namespace"]  # the URL decides
    return obj


async def cluster(kube: KubeClient, namespace: str) -> None:
    """n1 (zone a, 1Gi free) and n2 (zone b, 200Gi free) behind a capacity-tracking driver."""
    await kube.create(node("n1", labels={ZONE: "a"}))
    await kube.create(node("n2", labels={ZONE: "b"}))
    await kube.create(volume_binding.storage_class("fast", volume_binding.PROVISIONER))
    await kube.create(csi_driver(volume_binding.PROVISIONER))
    for zone, size in (("a", "1Gi"), ("b", "200Gi")):
        capacity = csi_storage_capacity(
            f"fast-{zone}", "fast", capacity=size, node_labels={ZONE: zone}, namespace=namespace
        )
        del capacity["metadata"]["namespace"]  # the URL decides
        await kube.create(capacity, namespace)
    await kube.create(v130_policy())


async def scheduled_condition(kube: KubeClient, namespace: str, name: str) -> dict[str, Any]:
    obj = await kube.get("v1", "Pod", name, namespace)
    conditions = (obj or {}).get("status", {}).get("conditions") or []
    found = [c for c in conditions if c.get("type") == "PodScheduled"]
    return dict(found[0]) if found else {}


async def test_a_claim_is_provisioned_only_where_the_storage_has_room(
    emulator: KubeClient, namespace: str, kubeconfig: Path
) -> None:
    await cluster(emulator, namespace)
    await emulator.create(claim("data", "100Gi"), namespace)
    await emulator.create(our_pod("db", "data"), namespace)
    controller = volume_binding.PVController(emulator, namespace)
    async with controller.running(), OperatorThread(kubeconfig):

        async def db_bound() -> bool:
            return await volume_binding.pod_node(emulator, namespace, "db") is not None

        await wait_until(db_bound, timeout=15, message="db bound")
    assert await volume_binding.pod_node(emulator, namespace, "db") == "n2"
    data = await emulator.get("v1", "PersistentVolumeClaim", "data", namespace)
    assert data is not None
    assert data["metadata"]["annotations"][volume_binding.SELECTED_NODE] == "n2"
    assert data["status"]["phase"] == "Bound"


async def test_a_pod_without_room_waits_until_a_capacity_grows(
    emulator: KubeClient, namespace: str, kubeconfig: Path
) -> None:
    await cluster(emulator, namespace)
    await emulator.create(claim("big", "300Gi"), namespace)
    await emulator.create(our_pod("huge", "big"), namespace)
    async with OperatorThread(kubeconfig):
        # 300Gi fits nowhere: kube-scheduler's reason on every node.
        async def refused() -> bool:
            condition = await scheduled_condition(emulator, namespace, "huge")
            return condition.get("reason") == "Unschedulable"

        await wait_until(refused, timeout=15, message="huge Unschedulable")
        condition = await scheduled_condition(emulator, namespace, "huge")
        assert f"0/2 nodes are available: 2 {NOT_ENOUGH}." in condition["message"]

        # The driver reports room in zone a: the waiting pod is woken, its claim is to be
        # provisioned on n1 (no PV controller here: the pod itself waits for the binding).
        await emulator.patch(
            STORAGE_API, "CSIStorageCapacity", "fast-a", {"capacity": "500Gi"}, namespace
        )

        async def selected() -> str | None:
            big = await emulator.get("v1", "PersistentVolumeClaim", "big", namespace)
            annotations = (big or {}).get("metadata", {}).get("annotations") or {}
            return annotations.get(volume_binding.SELECTED_NODE)

        async def provisioning() -> bool:
            return await selected() is not None

        # Woken by the change itself, at once: without it the pod would wait for an
        # unrelated retry (in this emulated cluster, some 14 s later; 60 s at worst).
        await wait_until(provisioning, timeout=6, message="big's node selected")
        assert await selected() == "n1"


async def test_explain_reads_the_capacities_from_the_cluster(
    emulator: KubeClient, namespace: str, api_client: k8s_client.ApiClient
) -> None:
    await cluster(emulator, namespace)
    await emulator.create(claim("data", "100Gi"), namespace)
    await emulator.create(our_pod("db", "data"), namespace)

    policy, decision = await explain(api_client, namespace, "db", SCHEDULER)

    assert policy.name == SCHEDULER
    assert decision.failed == {"n1": [NOT_ENOUGH]}
    assert decision.feasible == ["n2"]
    assert decision.node == "n2"


@pytest.mark.skipif(kubectl.KUBECTL is None, reason="kubectl is not installed")
async def test_a_kubectl_dump_with_the_capacities_simulates_as_the_cluster_decides(
    emulator: KubeClient,
    namespace: str,
    kubeconfig: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    await cluster(emulator, namespace)
    await emulator.create(claim("data", "100Gi"), namespace)
    await emulator.create(our_pod("db", "data"), namespace)
    kube = kubectl.Kubectl(kubeconfig, tmp_path / "kube-cache")
    kinds = "nodes,pods,pvc,storageclasses,csidrivers,csistoragecapacities,schedulingpolicies"
    dump = await kube.run("get", kinds, "-A", "-o", "json")
    path = tmp_path / "cluster.json"
    path.write_text(dump.stdout)

    # (in a thread: the CLI runs a loop of its own)
    assert await asyncio.to_thread(main, ["simulate", "-f", str(path), "-o", "json"]) == 0
    out, err = capsys.readouterr()
    [decision] = [d for d in json.loads(out)["decisions"] if d["pod"] == f"{namespace}/db"]
    assert (decision["node"], decision["failedPredicates"]) == ("n2", {"n1": [NOT_ENOUGH]})
    assert "ignoring" not in err
