"""DRA at cluster scale: pods with one ResourceClaim each on nodes with a ResourceSlice each.

How it works
------------
The command builds ``--nodes`` nodes (scheduler_perf's node template: 4 cpu, 32Gi, 110
pods), one ResourceSlice per node publishing ``--devices`` GPUs of the driver
``gpu.example.com`` (a model and a memory capacity each), one DeviceClass selecting the
driver with CEL, and ``--pods`` pending pods, each with its own ResourceClaim asking for
one GPU with at least 40Gi (a request selector in CEL: ``compareTo(quantity("40Gi"))``).
Then, in this process, it decides them with a SchedulingPolicy that enables
DynamicResources beside the default set, through the cycle the operator runs
(``simulate``'s: :func:`policy_scheduler.simulation.simulate`), and reports the
decisions per second (CPU time of the deciding alone, loading excluded), the pods placed
and whether any device was given twice. ``--without-claims`` decides the same pods
without their claims, with the same policy, for the cost DRA adds.

Usage::

    python benchmarks/dra_bench.py [--nodes 5000] [--devices 8] [--pods 200]
        [--without-claims]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

from policy_scheduler.engine.intree.dynamicresources import claimed_devices
from policy_scheduler.policy import parse_policy
from policy_scheduler.simulation import inputs_from_objects, simulate

DRIVER = "gpu.example.com"
POLICY: dict[str, Any] = {
    "apiVersion": "policyscheduler.io/v1alpha1",
    "kind": "SchedulingPolicy",
    "metadata": {"name": "dra"},
    "spec": {
        "schedulerName": "policy-scheduler",
        "plugins": {"multiPoint": {"enabled": [{"name": "DynamicResources"}]}},
    },
}


def cluster(nodes: int, devices: int, pods: int, claims: bool) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": DRIVER},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
        }
    ]
    for n in range(nodes):
        name = f"node-{n}"
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                "status": {"allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"}},
            }
        )
        objects.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {"name": f"{name}-gpus"},
                "spec": {
                    "driver": DRIVER,
                    "nodeName": name,
                    "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                    "devices": [
                        {
                            "name": f"gpu-{d}",
                            "attributes": {"model": {"string": "a100"}},
                            "capacity": {"memory": {"value": "80Gi" if d % 2 else "40Gi"}},
                        }
                        for d in range(devices)
                    ],
                },
            }
        )
    selector = f'device.capacity["{DRIVER}"].memory.compareTo(quantity("40Gi")) >= 0'
    for p in range(pods):
        pod: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"pod-{p}",
                "namespace": "bench",
                "uid": f"uid-{p}",
                "creationTimestamp": f"2024-01-01T00:{p // 60 % 60:02d}:{p % 60:02d}Z",
            },
            "spec": {
                "schedulerName": "policy-scheduler",
                "containers": [
                    {"name": "c", "image": "i", "resources": {"requests": {"cpu": "100m"}}}
                ],
            },
        }
        if claims:
            pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": f"claim-{p}"}]
            objects.append(
                {
                    "apiVersion": "resource.k8s.io/v1",
                    "kind": "ResourceClaim",
                    "metadata": {"name": f"claim-{p}", "namespace": "bench", "uid": f"c-{p}"},
                    "spec": {
                        "devices": {
                            "requests": [
                                {
                                    "name": "gpu",
                                    "exactly": {
                                        "deviceClassName": DRIVER,
                                        "selectors": [{"cel": {"expression": selector}}],
                                    },
                                }
                            ]
                        }
                    },
                }
            )
        objects.append(pod)
    return objects


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--devices", type=int, default=8)
    parser.add_argument("--pods", type=int, default=200)
    parser.add_argument("--without-claims", action="store_true")
    args = parser.parse_args(argv)
    objects = cluster(args.nodes, args.devices, args.pods, not args.without_claims)
    inputs = inputs_from_objects(((obj, "bench") for obj in objects), policy=parse_policy(POLICY))
    started = time.process_time()
    decisions = asyncio.run(simulate(inputs, explain=False))
    seconds = time.process_time() - started
    placed = [d for d in decisions if d.node is not None]
    given = [
        device
        for d in placed
        if d.state is not None
        for requests in claimed_devices(d.state).values()
        for devices in requests.values()
        for device in devices
    ]
    print(
        f"{args.nodes} nodes x {args.devices} devices, {len(decisions)} pods "
        f"({'without' if args.without_claims else 'with'} a claim each): "
        f"{len(decisions) / seconds:.0f} pods/s ({1000 * seconds / len(decisions):.1f} ms a pod, "
        f"CPU), {len(placed)} placed, {len(given)} devices given, "
        f"{len(given) - len(set(given))} given twice"
    )
    return {
        "decided": len(decisions),
        "placed": len(placed),
        "devices_given": len(given),
        "given_twice": len(given) - len(set(given)),
        "seconds": seconds,
    }


if __name__ == "__main__":
    main()
