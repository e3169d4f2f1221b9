"""WaitForFirstConsumer claims end to end: the real operator, the emulator, and the test
playing the PV controller.

:class:`PVController` watches PVCs and PVs through the API, as kube-controller-manager's
PV controller and an external provisioner do, and acts in their order: a claim whose PV
names it in ``spec.claimRef`` (written by the scheduler) gets bound to it; a claim the
scheduler annotated with ``volume.kubernetes.io/selected-node`` gets a PV provisioned on
that node, then bound. Binding is the PV controller's sequence: the PV's phase Bound,
the claim's ``spec.volumeName`` with its ``bind-completed`` / ``bound-by-controller``
annotations, then the claim's phase Bound. The scheduler must wait for that before it
binds the pod. A write over an object the scheduler's watch has not caught up with is
refused 409 by the API (its ``resourceVersion`` is stale); the pod is tried again.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from builders import claim_volume, node, pod
from e2e.emulator import EmulatorServer
from e2e.harness import KubeClient, wait_until
from e2e.operator_harness import OperatorThread

SCHEDULER = "policy-scheduler"
HOSTNAME = "kubernetes.io/hostname"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
PROVISIONER = "csi.example.com"


def storage_class(name: str, provisioner: str) -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": "WaitForFirstConsumer",
    }


def local_pv(name: str, node_name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": "10Gi"},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "local",
            "local": {"path": f"/mnt/disks/{name}"},
            "nodeAffinity": {
                "required": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": HOSTNAME, "operator": "In", "values": [node_name]}
                            ]
                        }
                    ]
                }
            },
        },
        "status": {"phase": "Available"},
    }


def claim(name: str, class_name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": class_name,
            "resources": {"requests": {"storage": "1Gi"}},
        },
        "status": {"phase": "Pending"},
    }


def our_pod(name: str, *claims: str) -> dict[str, Any]:
    obj = pod(name, requests={"cpu": "100m"}, volumes=[claim_volume(c) for c in claims])
    obj["spec"]["schedulerName"] = SCHEDULER
    del obj["metadata"]["uid"]  # the API server assigns it
    del obj["metadata"]["namespace"]  # the URL decides
    return obj


async def cluster(kube: KubeClient) -> None:
    for name in ("n1", "n2"):
        await kube.create(node(name, labels={HOSTNAME: name}))
    await kube.create(storage_class("local", "kubernetes.io/no-provisioner"))
    await kube.create(storage_class("fast", PROVISIONER))


class PVController:
    """The PV controller and a provisioner, played through the API (module docstring)."""

    def __init__(self, kube: KubeClient, namespace: str) -> None:
        self.kube = kube
        self.namespace = namespace
        #: claim name -> when its step happened (time.time(), the emulator's clock)
        self.saw_claim_ref: dict[str, float] = {}
        self.saw_selected_node: dict[str, float] = {}
        self.bound: dict[str, float] = {}
        self._changed = asyncio.Event()

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[PVController]:
        tasks = [
            asyncio.create_task(self._watch("PersistentVolumeClaim", self.namespace)),
            asyncio.create_task(self._watch("PersistentVolume", None)),
            asyncio.create_task(self._reconcile_forever()),
        ]
        try:
            yield self
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _watch(self, kind: str, namespace: str | None) -> None:
        while True:
            async for _ in self.kube.watch("v1", kind, namespace, timeout=60):
                self._changed.set()

    async def _reconcile_forever(self) -> None:
        while True:
            await self._changed.wait()
            self._changed.clear()
            await self.reconcile()

    async def reconcile(self) -> None:
        claims = await self.kube.list("v1", "PersistentVolumeClaim", self.namespace)
        pvs = await self.kube.list("v1", "PersistentVolume")
        for pvc in claims:
            if pvc["spec"].get("volumeName"):
                continue
            meta = pvc["metadata"]
            name, uid = meta["name"], meta["uid"]
            pv = next((v for v in pvs if _refers_to(v, self.namespace, name, uid)), None)
            if pv is not None:
                self.saw_claim_ref.setdefault(name, time.time())
                await self.bind(pv, pvc)
                continue
            selected = (meta.get("annotations") or {}).get(SELECTED_NODE)
            if selected and pvc["spec"]["storageClassName"] == "fast":
                self.saw_selected_node.setdefault(name, time.time())
                await self.bind(await self.provision(pvc, selected), pvc)

    async def provision(self, pvc: dict[str, Any], node_name: str) -> dict[str, Any]:
        meta = pvc["metadata"]
        pv = local_pv(f"pvc-{meta['uid']}", node_name)
        pv["metadata"]["annotations"] = {
            "pv.kubernetes.io/provisioned-by": PROVISIONER,
            BOUND_BY_CONTROLLER: "yes",
        }
        pv["spec"]["storageClassName"] = "fast"
        del pv["spec"]["local"]
        pv["spec"]["csi"] = {"driver": PROVISIONER, "volumeHandle": meta["uid"]}
        pv["spec"]["claimRef"] = {
            "kind": "PersistentVolumeClaim",
            "apiVersion": "v1",
            "namespace": self.namespace,
            "name": meta["name"],
            "uid": meta["uid"],
        }
        pv["status"] = {"phase": "Pending"}
        return await self.kube.create(pv)

    async def bind(self, pv: dict[str, Any], pvc: dict[str, Any]) -> None:
        """The PV controller's bind(): the volume's phase, the claim, the claim's phase."""
        name = pvc["metadata"]["name"]
        await self.kube.patch(
            "v1",
            "PersistentVolume",
            pv["metadata"]["name"],
            {"status": {"phase": "Bound"}},
            subresource="status",
        )
        await self.kube.patch(
            "v1",
            "PersistentVolumeClaim",
            name,
            {
                "metadata": {"annotations": {BIND_COMPLETED: "yes", BOUND_BY_CONTROLLER: "yes"}},
                "spec": {"volumeName": pv["metadata"]["name"]},
            },
            self.namespace,
        )
        # Stamped as the last write starts, not when its reply comes: the operator's own
        # thread may see the claim Bound, and bind the pod, before this loop reads the reply.
        self.bound[name] = time.time()
        await self.kube.patch(
            "v1",
            "PersistentVolumeClaim",
            name,
            {"status": {"phase": "Bound", "capacity": pv["spec"]["capacity"]}},
            self.namespace,
            subresource="status",
        )


def _refers_to(pv: dict[str, Any], namespace: str, name: str, uid: str) -> bool:
    ref = pv["spec"].get("claimRef") or {}
    return (ref.get("namespace"), ref.get("name"), ref.get("uid")) == (namespace, name, uid)


async def pod_node(kube: KubeClient, namespace: str, name: str) -> str | None:
    obj = await kube.get("v1", "Pod", name, namespace)
    return (obj or {}).get("spec", {}).get("nodeName")


async def claim_phase(kube: KubeClient, namespace: str, name: str) -> str | None:
    obj = await kube.get("v1", "PersistentVolumeClaim", name, namespace)
    return (obj or {}).get("status", {}).get("phase")


async def state_of(
    kube: KubeClient, namespace: str, pods: tuple[str, ...], claims: tuple[str, ...]
) -> tuple[dict[str, str | None], dict[str, str | None]]:
    """Each pod's node and each claim's phase."""
    nodes = {name: await pod_node(kube, namespace, name) for name in pods}
    phases = {name: await claim_phase(kube, namespace, name) for name in claims}
    return nodes, phases


async def events_of(kube: KubeClient, namespace: str, pod_name: str, reason: str) -> list[Any]:
    return [
        e
        for e in await kube.list("v1", "Event", namespace)
        if e["involvedObject"]["name"] == pod_name and e["reason"] == reason
    ]


async def test_a_local_pv_and_a_provisioned_volume_both_end_up_bound_with_their_pods(
    emulator: KubeClient, namespace: str, kubeconfig: Path
) -> None:
    await cluster(emulator)
    await emulator.create(local_pv("local-n2", "n2"))
    await emulator.create(claim("data", "local"), namespace)
    await emulator.create(claim("cache", "fast"), namespace)
    await emulator.create(our_pod("db", "data"), namespace)
    await emulator.create(our_pod("web", "cache"), namespace)
    controller = PVController(emulator, namespace)
    async with controller.running(), OperatorThread(kubeconfig):

        async def all_bound() -> bool:
            nodes, phases = await state_of(emulator, namespace, ("db", "web"), ("data", "cache"))
            return all(nodes.values()) and set(phases.values()) == {"Bound"}

        await wait_until(all_bound, timeout=15, message="both pods and claims bound")
    assert await pod_node(emulator, namespace, "db") == "n2"  # where its local PV is
    pv = await emulator.get("v1", "PersistentVolume", "local-n2")
    assert pv is not None
    assert pv["spec"]["claimRef"]["name"] == "data"
    assert pv["metadata"]["annotations"][BOUND_BY_CONTROLLER] == "yes"
    cache = await emulator.get("v1", "PersistentVolumeClaim", "cache", namespace)
    assert cache is not None
    web_node = await pod_node(emulator, namespace, "web")
    assert cache["metadata"]["annotations"][SELECTED_NODE] == web_node
    # Upstream's order: the scheduler's write, the PV controller's binding, the pod.
    if emulator.is_emulated:
        bound_at = {b.pod: b.time for b in emulator.bindings if b.ok}
        assert controller.saw_claim_ref["data"] <= controller.bound["data"] < bound_at["db"]
        assert controller.saw_selected_node["cache"] <= controller.bound["cache"]
        assert controller.bound["cache"] < bound_at["web"]


async def test_two_pods_competing_for_one_pv_never_both_get_it(
    emulator: KubeClient, namespace: str, kubeconfig: Path
) -> None:
    await cluster(emulator)
    await emulator.create(local_pv("only", "n1"))
    await emulator.create(claim("a", "local"), namespace)
    await emulator.create(claim("b", "local"), namespace)
    await emulator.create(our_pod("pod-a", "a"), namespace)
    await emulator.create(our_pod("pod-b", "b"), namespace)
    async with PVController(emulator, namespace).running(), OperatorThread(kubeconfig):

        async def one_bound() -> bool:
            nodes, _ = await state_of(emulator, namespace, ("pod-a", "pod-b"), ())
            return any(nodes.values())

        await wait_until(one_bound, timeout=15, message="one pod bound")

        async def settled() -> bool:  # the winner's claim bound, the loser refused
            nodes, phases = await state_of(emulator, namespace, ("pod-a", "pod-b"), ("a", "b"))
            loser = "pod-b" if nodes["pod-a"] else "pod-a"
            obj = await emulator.get("v1", "Pod", loser, namespace)
            refused = any(
                c.get("reason") == "Unschedulable"
                for c in (obj or {}).get("status", {}).get("conditions", [])
            )
            return refused and "Bound" in phases.values()

        await wait_until(settled, timeout=15, message="the winner's claim bound")
        # A marker decided after that: a second, wrong binding would have come first.
        await emulator.create(our_pod("marker"), namespace)
        await wait_until(
            lambda: pod_node(emulator, namespace, "marker"), timeout=15, message="the marker"
        )
        nodes, phases = await state_of(emulator, namespace, ("pod-a", "pod-b"), ("a", "b"))
    winner = "a" if nodes["pod-a"] else "b"
    loser = "b" if winner == "a" else "a"
    assert nodes == {f"pod-{winner}": "n1", f"pod-{loser}": None}
    assert phases == {winner: "Bound", loser: "Pending"}
    pv = await emulator.get("v1", "PersistentVolume", "only")
    assert pv is not None and pv["spec"]["claimRef"]["name"] == winner
    loser_pod = await emulator.get("v1", "Pod", f"pod-{loser}", namespace)
    assert loser_pod is not None
    [condition] = [c for c in loser_pod["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert condition["reason"] == "Unschedulable"
    assert "didn't find available persistent volumes to bind" in condition["message"]


async def test_a_pv_controller_that_never_answers_fails_the_binding_and_the_pod_is_retried(
    emulator: KubeClient, namespace: str, kubeconfig: Path
) -> None:
    await cluster(emulator)
    await emulator.create(claim("cache", "fast"), namespace)
    await emulator.create(our_pod("stuck", "cache"), namespace)
    async with OperatorThread(kubeconfig, volume_binding_timeout=1.0):
        # Nobody provisions: the scheduler's selected-node stays unanswered.
        await emulator.wait_for(
            "v1",
            "PersistentVolumeClaim",
            "cache",
            namespace,
            lambda o: SELECTED_NODE in ((o or {}).get("metadata", {}).get("annotations") or {}),
        )
        # Meanwhile other pods are scheduled as usual.
        started = time.monotonic()
        await emulator.create(our_pod("plain"), namespace)
        await wait_until(
            lambda: pod_node(emulator, namespace, "plain"), timeout=5, message="plain bound"
        )
        assert time.monotonic() - started < 5
        assert await pod_node(emulator, namespace, "stuck") is None

        async def failed_twice() -> bool:
            found = await events_of(emulator, namespace, "stuck", "VolumeBindingFailed")
            return bool(found) and found[0]["count"] >= 2  # retried, and failed again

        await wait_until(failed_twice, timeout=15, message="two VolumeBindingFailed events")
        [event] = await events_of(emulator, namespace, "stuck", "VolumeBindingFailed")
        assert event["type"] == "Warning"
        assert event["message"] == (
            "binding volumes: timed out after 1s waiting for "
            f'PersistentVolumeClaim "{namespace}/cache" to be bound'
        )
        obj = await emulator.get("v1", "Pod", "stuck", namespace)
        assert obj is not None
        [condition] = [c for c in obj["status"]["conditions"] if c["type"] == "PodScheduled"]
        assert (condition["status"], condition["reason"]) == ("False", "VolumeBindingFailed")
        assert not obj["spec"].get("nodeName")
        # Once a provisioner answers, the next retry goes through.
        async with PVController(emulator, namespace).running():
            await wait_until(
                lambda: pod_node(emulator, namespace, "stuck"), timeout=15, message="stuck bound"
            )
        assert await claim_phase(emulator, namespace, "cache") == "Bound"


async def test_a_write_over_a_pv_changed_meanwhile_is_refused_409_and_the_pod_retried(
    emulator: KubeClient, emulator_server: EmulatorServer, namespace: str, kubeconfig: Path
) -> None:
    await cluster(emulator)
    await emulator.create(local_pv("pv-1", "n1"))
    await emulator.create(claim("data", "local"), namespace)
    async with PVController(emulator, namespace).running(), OperatorThread(kubeconfig):
        # A first pod bound: the operator has listed the cluster, pv-1 included.
        await emulator.create(our_pod("first"), namespace)
        await wait_until(
            lambda: pod_node(emulator, namespace, "first"), timeout=10, message="first bound"
        )
        # Someone labels pv-1; the operator's watch has not told it yet. Its decision
        # for "db" reads the older version, and its claimRef write carries that version.
        emulator_server.call(
            lambda em: em.update_silently(
                "v1",
                "PersistentVolume",
                "pv-1",
                None,
                lambda pv: pv["metadata"].setdefault("labels", {}).update({"tier": "gold"}),
            )
        )
        await emulator.create(our_pod("db", "data"), namespace)

        async def refused() -> bool:
            return bool(await events_of(emulator, namespace, "db", "VolumeBindingFailed"))

        await wait_until(refused, timeout=10, message="a VolumeBindingFailed event")
        [event] = await events_of(emulator, namespace, "db", "VolumeBindingFailed")
        assert event["message"] == (
            'binding volumes: PersistentVolume "pv-1" was modified meanwhile (409 Conflict)'
        )
        assert await pod_node(emulator, namespace, "db") is None
        # The watch catches up (a newer change of pv-1): the retry writes over it.
        await emulator.patch("v1", "PersistentVolume", "pv-1", {"metadata": {"labels": {"a": "b"}}})
        await wait_until(
            lambda: pod_node(emulator, namespace, "db"), timeout=15, message="db bound"
        )
    assert await claim_phase(emulator, namespace, "data") == "Bound"
    pv = await emulator.get("v1", "PersistentVolume", "pv-1")
    assert pv is not None
    assert pv["spec"]["claimRef"]["name"] == "data"
    assert pv["metadata"]["labels"] == {"tier": "gold", "a": "b"}  # nothing written over
