"""DRA end to end: the real operator, the emulator serving ``resource.k8s.io/v1``, and the
test playing the resource claim controller.

A SchedulingPolicy enables DynamicResources; a node publishes its GPUs in a
ResourceSlice. The operator places pods where their claims get devices and, in PreBind,
writes each claim's ``status.allocation`` and the pod in ``status.reservedFor`` (with the
claim's finalizer) before the binding. When a pod is gone, the test does what
kube-controller-manager's resource claim controller does: the claim loses its
reservation and allocation; the devices come back and a waiting pod is placed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from builders import GPU_DRIVER, device_class, gpu_slice, node, pod
from e2e.emulator import EmulatorServer, Fault
from e2e.harness import KubeClient, wait_until
from e2e.operator_harness import OperatorThread

SCHEDULER = "policy-scheduler"
DRIVER = GPU_DRIVER
RESOURCE = "resource.k8s.io/v1"


def policy() -> dict[str, Any]:
    return {
        "apiVersion": "policyscheduler.io/v1alpha1",
        "kind": "SchedulingPolicy",
        "metadata": {"name": "dra"},
        "spec": {
            "schedulerName": SCHEDULER,
            "plugins": {"multiPoint": {"enabled": [{"name": "DynamicResources"}]}},
        },
    }


def claim(name: str, **metadata: Any) -> dict[str, Any]:
    return {
        "apiVersion": RESOURCE,
        "kind": "ResourceClaim",
        "metadata": {"name": name, **metadata},
        "spec": {
            "devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER}}]}
        },
    }


def gpu_pod(name: str, claim_entry: dict[str, str]) -> dict[str, Any]:
    obj = pod(name, requests={"cpu": "100m"}, schedulerName=SCHEDULER)
    del obj["metadata"]["uid"]  # the API server assigns it
    del obj["metadata"]["namespace"]  # the URL decides
    obj["spec"]["resourceClaims"] = [claim_entry]
    return obj


async def node_of(kube: KubeClient, namespace: str, name: str) -> str | None:
    found = await kube.get("v1", "Pod", name, namespace)
    return None if found is None else found["spec"].get("nodeName")


async def failures(kube: KubeClient, namespace: str, name: str) -> list[str]:
    return [
        e.get("message", "")
        for e in await kube.list("v1", "Event", namespace)
        if e.get("involvedObject", {}).get("name") == name and e.get("reason") == "FailedScheduling"
    ]


async def test_pods_get_devices_their_claims_show_it_and_a_freed_device_is_given_again(
    emulator: KubeClient, namespace: str, kubeconfig: Path
) -> None:
    await emulator.create(policy())
    await emulator.create(node("cpu-only", cpu="8"))
    await emulator.create(node("gpu-node", cpu="8"))
    await emulator.create(device_class())
    await emulator.create(gpu_slice("gpu-node", 2))
    names = ["a", "b", "c"]
    for name in names:
        await emulator.create(claim(f"{name}-gpu"), namespace)
        await emulator.create(
            gpu_pod(name, {"name": "gpu", "resourceClaimName": f"{name}-gpu"}), namespace
        )
    async with OperatorThread(kubeconfig):

        async def two_bound_one_refused() -> bool:
            placed = [await node_of(emulator, namespace, n) for n in names]
            refused = [n for n in names if await failures(emulator, namespace, n)]
            return placed.count("gpu-node") == 2 and len(refused) == 1

        await wait_until(
            two_bound_one_refused, timeout=30, message="two GPUs given, one pod refused"
        )
        placed = {n: await node_of(emulator, namespace, n) for n in names}
        (waiting,) = [n for n, where in placed.items() if where is None]
        assert (await failures(emulator, namespace, waiting))[0] == (
            "0/2 nodes are available: 2 cannot allocate all claims."
        )
        devices = []
        for name in names:
            if name == waiting:
                continue
            written = await emulator.get(RESOURCE, "ResourceClaim", f"{name}-gpu", namespace)
            assert written is not None
            allocation = written["status"]["allocation"]
            (result,) = allocation["devices"]["results"]
            assert (result["request"], result["driver"], result["pool"]) == (
                "gpu",
                DRIVER,
                "gpu-node",
            )
            devices.append(result["device"])
            assert allocation["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"] == [
                {"key": "metadata.name", "operator": "In", "values": ["gpu-node"]}
            ]
            the_pod = await emulator.get("v1", "Pod", name, namespace)
            assert the_pod is not None
            assert written["status"]["reservedFor"] == [
                {"resource": "pods", "name": name, "uid": the_pod["metadata"]["uid"]}
            ]
            assert "resource.kubernetes.io/delete-protection" in written["metadata"]["finalizers"]
        assert sorted(devices) == ["gpu-0", "gpu-1"]  # never one GPU twice

        # One pod goes; the resource claim controller deallocates its claim.
        gone = next(n for n in names if n != waiting)
        await emulator.delete("v1", "Pod", gone, namespace)
        freed = await emulator.get(RESOURCE, "ResourceClaim", f"{gone}-gpu", namespace)
        assert freed is not None
        freed["status"] = {}
        await emulator.replace(freed, subresource="status")

        async def waiting_bound() -> bool:
            return await node_of(emulator, namespace, waiting) == "gpu-node"

        await wait_until(
            waiting_bound, timeout=30, message="the freed GPU given to the waiting pod"
        )


async def test_a_pod_waits_for_its_template_claim_then_is_placed(
    emulator: KubeClient, namespace: str, kubeconfig: Path
) -> None:
    await emulator.create(policy())
    await emulator.create(node("gpu-node", cpu="8"))
    await emulator.create(device_class())
    await emulator.create(gpu_slice("gpu-node", 1))
    created = await emulator.create(
        gpu_pod("trainer", {"name": "gpu", "resourceClaimTemplateName": "one-gpu"}), namespace
    )
    async with OperatorThread(kubeconfig):
        # No claim yet (the controller has not made it): the pod waits, unbound.
        await emulator.create(
            gpu_pod("probe", {"name": "gpu", "resourceClaimName": "nope"}), namespace
        )
        # The controller makes the claim for the pod and names it in the pod's status.
        uid = created["metadata"]["uid"]
        owner = {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": "trainer",
            "uid": uid,
            "controller": True,
        }
        await emulator.create(claim("trainer-gpu-x1", ownerReferences=[owner]), namespace)
        assert await node_of(emulator, namespace, "trainer") is None
        await emulator.patch(
            "v1",
            "Pod",
            "trainer",
            {
                "status": {
                    "resourceClaimStatuses": [
                        {"name": "gpu", "resourceClaimName": "trainer-gpu-x1"}
                    ]
                }
            },
            namespace,
            subresource="status",
        )

        async def bound() -> bool:
            return await node_of(emulator, namespace, "trainer") == "gpu-node"

        await wait_until(bound, timeout=30, message="the pod placed once its claim exists")
    written = await emulator.get(RESOURCE, "ResourceClaim", "trainer-gpu-x1", namespace)
    assert written is not None
    assert written["status"]["reservedFor"][0]["uid"] == uid
    assert await node_of(emulator, namespace, "probe") is None  # its claim never came


def v134_policy() -> dict[str, Any]:
    """v1.34's order at PostFilter (DynamicResources, then DefaultPreemption), with a
    framework score, so that FailedScheduling carries PostFilter's words."""
    points = {
        "preEnqueue": ["DynamicResources"],
        "queueSort": ["PrioritySort"],
        "preFilter": ["NodeResourcesFit", "DynamicResources"],
        "postFilter": ["DynamicResources", "DefaultPreemption"],
        "preScore": ["NodeResourcesFit"],
        "reserve": ["DynamicResources"],
        "preBind": ["DynamicResources"],
        "bind": ["DefaultBinder"],
    }
    return {
        "apiVersion": "policyscheduler.io/v1alpha1",
        "kind": "SchedulingPolicy",
        "metadata": {"name": "dra-v134"},
        "spec": {
            "schedulerName": SCHEDULER,
            "predicates": [{"name": "NodeResourcesFit"}, {"name": "DynamicResources"}],
            "priorities": [{"name": "NodeResourcesFit", "weight": 1}],
            "plugins": {
                point: {"enabled": [{"name": n} for n in names], "disabled": [{"name": "*"}]}
                for point, names in points.items()
            },
        },
    }


async def test_no_pod_is_preempted_for_a_device_as_in_v134(
    emulator: KubeClient, namespace: str, kubeconfig: Path
) -> None:
    """The one GPU is a low-priority pod's. v1.34's preemption does not count a victim's
    devices as freed: the urgent pod is refused on the device, preemption is "not
    helpful", and the holder keeps running."""
    await emulator.create(v134_policy())
    await emulator.create(node("gpu-node", cpu="8"))
    await emulator.create(device_class())
    await emulator.create(gpu_slice("gpu-node", 1))
    await emulator.create(claim("held"), namespace)
    await emulator.create(claim("wanted"), namespace)
    await emulator.create(
        gpu_pod("holder", {"name": "gpu", "resourceClaimName": "held"}), namespace
    )
    async with OperatorThread(kubeconfig):

        async def holder_bound() -> bool:
            return await node_of(emulator, namespace, "holder") == "gpu-node"

        await wait_until(holder_bound, timeout=30, message="the holder placed on the GPU")
        urgent = gpu_pod("urgent", {"name": "gpu", "resourceClaimName": "wanted"})
        urgent["spec"]["priority"] = 1000
        await emulator.create(urgent, namespace)

        async def refused() -> bool:
            return bool(await failures(emulator, namespace, "urgent"))

        await wait_until(refused, timeout=30, message="the urgent pod refused")
        assert (await failures(emulator, namespace, "urgent"))[0] == (
            "0/1 nodes are available: 1 cannot allocate all claims. still not schedulable, "
            "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
        )
        holder = await emulator.get("v1", "Pod", "holder", namespace)
        assert holder is not None and holder["metadata"].get("deletionTimestamp") is None
        assert await node_of(emulator, namespace, "urgent") is None


async def allocations(kube: KubeClient, namespace: str) -> dict[str, list[tuple[str, str]]]:
    """Each allocated claim's devices, as (pool, device)."""
    found: dict[str, list[tuple[str, str]]] = {}
    for written in await kube.list(RESOURCE, "ResourceClaim", namespace):
        allocation = (written.get("status") or {}).get("allocation")
        if allocation:
            found[written["metadata"]["name"]] = [
                (r["pool"], r["device"]) for r in allocation["devices"]["results"]
            ]
    return found


async def never_twice(kube: KubeClient, namespace: str) -> dict[str, list[tuple[str, str]]]:
    """No device in two claims' allocations, and every bound pod's claim allocated on
    its node and reserved for it. The pods are read first: a pod bound then had its claim
    written before, so the claims read after show it."""
    pods = await kube.list("v1", "Pod", namespace)
    held = await allocations(kube, namespace)
    devices = [d for ds in held.values() for d in ds]
    assert len(devices) == len(set(devices)), held
    for p in pods:
        where = p["spec"].get("nodeName")
        if not where:
            continue
        name = p["spec"]["resourceClaims"][0]["resourceClaimName"]
        assert [pool for pool, _ in held[name]] == [where], (p["metadata"]["name"], held)
        written = await kube.get(RESOURCE, "ResourceClaim", name, namespace)
        assert written is not None
        assert [r["uid"] for r in written["status"]["reservedFor"]] == [p["metadata"]["uid"]]
    return held


async def test_under_load_and_failing_claim_writes_no_device_is_given_twice(
    emulator: KubeClient, emulator_server: EmulatorServer, namespace: str, kubeconfig: Path
) -> None:
    """Sixteen pods for six GPUs on three nodes, while the first four claims' status
    writes fail (two after the write committed, the reply lost): PreBind fails,
    the pod is unreserved and retried. Six pods end up bound, each on the node of its
    claim's device, no device in two claims; when three go, three waiting pods get the
    freed devices, still never one twice."""
    await emulator.create(policy())
    for i in range(3):
        await emulator.create(node(f"gpu-{i}", cpu="8"))
        await emulator.create(gpu_slice(f"gpu-{i}", 2))
    await emulator.create(device_class())
    faults = [
        Fault("after", "PUT", "/status", status=500, times=2),
        Fault("status", "PUT", "/status", status=500, times=2),
    ]
    emulator_server.call(lambda em: em.faults.extend(faults))
    names = [f"p{i:02d}" for i in range(16)]
    for name in names:
        await emulator.create(claim(f"{name}-gpu"), namespace)
        await emulator.create(
            gpu_pod(name, {"name": "gpu", "resourceClaimName": f"{name}-gpu"}), namespace
        )

    async def bound() -> list[str]:
        return [n for n in names if await node_of(emulator, namespace, n)]

    async with OperatorThread(kubeconfig, api_timeout=1.0):

        async def six_bound() -> bool:
            await never_twice(emulator, namespace)
            return len(await bound()) == 6

        await wait_until(six_bound, timeout=60, interval=0.2, message="six pods bound")
        assert all(f.hits for f in faults), [f.hits for f in faults]  # PreBind did fail
        emulator_server.call(lambda em: em.faults.clear())
        first = await bound()
        assert len(await never_twice(emulator, namespace)) == 6

        # Three go; the resource claim controller deallocates their claims.
        for name in first[:3]:
            await emulator.delete("v1", "Pod", name, namespace)
            freed = await emulator.get(RESOURCE, "ResourceClaim", f"{name}-gpu", namespace)
            assert freed is not None
            freed["status"] = {}
            await emulator.replace(freed, subresource="status")

        async def three_more() -> bool:
            await never_twice(emulator, namespace)
            now = await bound()
            return len(now) == 6 and not set(now) & set(first[:3])

        await wait_until(three_more, timeout=60, interval=0.2, message="freed GPUs given again")
    held = await never_twice(emulator, namespace)
    assert sorted(held) == sorted(f"{n}-gpu" for n in await bound())
    assert sorted(d for ds in held.values() for d in ds) == [
        (f"gpu-{i}", f"gpu-{j}") for i in range(3) for j in range(2)
    ]


async def test_a_claim_allocated_where_its_pod_no_longer_fits_is_deallocated_and_moved(
    emulator: KubeClient, namespace: str, kubeconfig: Path
) -> None:
    """The claim holds gpu-a's GPU, reserved for nobody (a pod that used it went), and
    its new pod does not fit on gpu-a (cpu). v1.34's PostFilter clears the allocation
    (``deallocation of ResourceClaim completed``); the claim's update wakes the pod, and
    its next attempt allocates gpu-b's GPU and binds it there."""
    await emulator.create(v134_policy())
    await emulator.create(node("gpu-a", cpu="50m"))
    await emulator.create(node("gpu-b", cpu="8"))
    await emulator.create(device_class())
    await emulator.create(gpu_slice("gpu-a", 1))
    await emulator.create(gpu_slice("gpu-b", 1))
    created = await emulator.create(claim("train"), namespace)
    created["status"] = {
        "allocation": {
            "devices": {
                "results": [
                    {"request": "gpu", "driver": DRIVER, "pool": "gpu-a", "device": "gpu-0"}
                ]
            },
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {
                        "matchFields": [
                            {"key": "metadata.name", "operator": "In", "values": ["gpu-a"]}
                        ]
                    }
                ]
            },
        }
    }
    await emulator.replace(created, subresource="status")
    await emulator.create(
        gpu_pod("trainer", {"name": "gpu", "resourceClaimName": "train"}), namespace
    )
    async with OperatorThread(kubeconfig):

        async def moved() -> bool:
            return await node_of(emulator, namespace, "trainer") == "gpu-b"

        await wait_until(moved, timeout=30, message="the pod placed on gpu-b")
    said = await failures(emulator, namespace, "trainer")
    assert said[0] == (
        "0/2 nodes are available: 1 Insufficient cpu, 1 resourceclaim not available on the "
        "node. deallocation of ResourceClaim completed, preemption: 0/2 nodes are available: "
        "1 No preemption victims found for incoming pod, 1 Preemption is not helpful for "
        "scheduling."
    )
    written = await emulator.get(RESOURCE, "ResourceClaim", "train", namespace)
    assert written is not None
    (result,) = written["status"]["allocation"]["devices"]["results"]
    assert (result["pool"], result["device"]) == ("gpu-b", "gpu-0")
    the_pod = await emulator.get("v1", "Pod", "trainer", namespace)
    assert the_pod is not None
    assert [r["uid"] for r in written["status"]["reservedFor"]] == [the_pod["metadata"]["uid"]]
