"""QueueingHints end to end for a storage event (kube-scheduler v1.34's VolumeZone): the
operator leaves a pod VolumeZone refused asleep through storage changes that cannot
help it (another claim, an Immediate StorageClass, a label of its volume that is not a
zone) and wakes it when its volume's zone label changes to the node's.

Backoff is 10 ms, so a pod woken by the irrelevant changes (before hints, every PV,
PVC and StorageClass change woke every unschedulable pod) would be decided again at
once: the unschedulable attempts stay at one. Likewise for a pod a Permit plugin
refused: only that plugin's events wake it.
"""

from __future__ import annotations

from pathlib import Path

from builders import claim_volume, node, pv, pvc, storage_class
from e2e.harness import KubeClient, wait_until
from e2e.operator_harness import OperatorThread
from e2e.test_operator import SCHEDULER, bound_node, our_pod, policy_obj, unschedulable
from e2e.test_queueing_hints import _unschedulable_attempts

ZONE = "topology.kubernetes.io/zone"
POLICY = {"schedulerName": SCHEDULER, "predicates": [{"name": "VolumeZone"}], "priorities": []}


async def test_a_pod_volume_zone_refused_sleeps_through_storage_changes_and_wakes_on_its_zone(
    emulator: KubeClient, namespace: str, kubeconfig: Path
) -> None:
    await emulator.create(node("n1", labels={ZONE: "a"}))
    await emulator.create(policy_obj("hinted", POLICY))
    volume = pv("vol", labels={ZONE: "b"}, storage_class="sc", claim=(namespace, "data"))
    await emulator.create(volume)
    claim = pvc("data", namespace=namespace, volume_name="vol", storage_class="sc")
    await emulator.create(claim, namespace)
    async with OperatorThread(kubeconfig, pod_initial_backoff=0.01, pod_max_backoff=0.01) as thread:
        assert thread.operator is not None
        operator = thread.operator
        await emulator.create(our_pod("web", volumes=[claim_volume("data")]), namespace)
        await unschedulable(emulator, namespace, "web")
        await wait_until(
            lambda: _unschedulable_attempts(operator.metrics.render().decode()) == 1,
            message="one unschedulable attempt counted",
        )
        await emulator.create(pvc("other", namespace=namespace, storage_class="sc"), namespace)
        await emulator.create(storage_class("fast", mode="Immediate"))
        await emulator.patch("v1", "PersistentVolume", "vol", {"metadata": {"labels": {"x": "y"}}})
        cluster = operator.runtime.world.cache.cluster

        def seen_all() -> bool:
            seen = cluster.persistent_volumes.get("vol")
            return (
                seen is not None
                and seen.labels.get("x") == "y"
                and "fast" in cluster.storage_classes
            )

        await wait_until(seen_all, message="the operator saw the storage changes")
        assert _unschedulable_attempts(operator.metrics.render().decode()) == 1
        await emulator.patch("v1", "PersistentVolume", "vol", {"metadata": {"labels": {ZONE: "a"}}})
        assert await bound_node(emulator, namespace, "web") == "n1"
        assert _unschedulable_attempts(operator.metrics.render().decode()) == 1


async def test_a_pod_a_permit_plugin_refused_wakes_only_on_that_plugins_events(
    emulator: KubeClient, namespace: str, kubeconfig: Path
) -> None:
    """v1.34 files a pod Permit refused with that plugin as its UnschedulablePlugins:
    ScriptHinted (registers node labels, Queue only for ``rack``) refuses every pod at
    Permit; a label without ``rack`` leaves the pod asleep, ``rack`` wakes it (it is
    refused again: a second attempt)."""
    spec = {
        "schedulerName": SCHEDULER,
        "plugins": {"multiPoint": {"enabled": [{"name": "ScriptHinted"}]}},
        "pluginConfig": [
            {"name": "ScriptHinted", "args": {"permit": "unschedulable", "wakeOnLabel": "rack"}}
        ],
    }
    await emulator.create(node("n1"))
    await emulator.create(policy_obj("permit", spec))
    async with OperatorThread(kubeconfig, pod_initial_backoff=0.01, pod_max_backoff=0.01) as thread:
        assert thread.operator is not None
        operator = thread.operator

        def attempts() -> float:
            return _unschedulable_attempts(operator.metrics.render().decode())

        await emulator.create(our_pod("web"), namespace)
        await unschedulable(emulator, namespace, "web")
        await wait_until(lambda: attempts() >= 1, message="one unschedulable attempt counted")
        print("ATTEMPTS", attempts())
        await emulator.patch("v1", "Node", "n1", {"metadata": {"labels": {"disk": "ssd"}}})
        cluster = operator.runtime.world.cache.cluster

        def seen(label: str) -> bool:
            info = cluster.nodes.get("n1")
            return info is not None and label in info.node.labels

        await wait_until(lambda: seen("disk"), message="the operator saw the label")
        assert attempts() == 1
        await emulator.patch("v1", "Node", "n1", {"metadata": {"labels": {"rack": "r1"}}})
        await wait_until(lambda: attempts() == 2, message="woken by rack, refused again")
