"""End-to-end benchmark: the real operator against the KMock emulator on loopback.

Two measurements in one run, on the same emulator, the same machine, the same client
library:

1. **raw** — the emulator's own rate for the binding requests alone: ``pods`` pending
   pods are bound by a plain client (kubernetes-asyncio, ``bind_workers`` requests in
   flight, as the operator), with no scheduling at all;
2. **operator** — the same number of fresh pending pods, scheduled and bound by the
   real operator (``Operator`` from ``policy_scheduler.operating``, default
   policy, QPS limit off), from its start (LIST included) until the last binding.

Our figure is operator pods/s divided by raw bindings/s (the issue's target: >= 50%).
Traffic stays on 127.0.0.1. Run ``python benchmarks/e2e_bench.py [--nodes 500]
[--pods 2000] [--json FILE]``; ``--quick`` (50 nodes, 100 pods) is the CI smoke.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "operator"), str(ROOT / "tests")]

from kubernetes_asyncio import client, config  # noqa: E402
from kubernetes_asyncio.config import kube_config  # noqa: E402

from e2e.harness import KubeClient, write_kubeconfig  # noqa: E402
from e2e.operator_harness import OperatorThread  # noqa: E402
from policy_scheduler.operating import untrust_env  # noqa: E402
from policy_scheduler.runtime.kubeapi import KubeApi  # noqa: E402


def node(name: str, zone: str) -> dict[str, Any]:
    resources = {"cpu": "32", "memory": "128Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone},
        },
        "status": {
            "allocatable": resources,
            "capacity": resources,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pending_pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "schedulerName": "policy-scheduler",
            "containers": [
                {
                    "name": "main",
                    "image": "registry.k8s.io/pause:3.9",
                    "resources": {"requests": {"cpu": "100m", "memory": "200Mi"}},
                }
            ],
        },
    }


async def create_many(kube: KubeClient, objs: list[dict[str, Any]], namespace: str | None) -> None:
    gate = asyncio.Semaphore(32)

    async def one(obj: dict[str, Any]) -> None:
        async with gate:
            await kube.create(obj, namespace)

    await asyncio.gather(*(one(o) for o in objs))


async def raw_binding_rate(kubeconfig: Path, names: list[str], nodes: int, workers: int) -> float:
    configuration = client.Configuration()
    await config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
    configuration.connection_pool_maxsize = workers
    async with client.ApiClient(configuration) as api_client:
        untrust_env(api_client)  # the same client settings as the operator's
        api = KubeApi(api_client)
        gate = asyncio.Semaphore(workers)

        async def bind(i: int, name: str) -> None:
            async with gate:
                status = await api.bind("raw", name, "", f"n{i % nodes}")
                if status >= 300:
                    raise RuntimeError(f"raw binding of {name}: HTTP {status}")

        started = time.perf_counter()
        await asyncio.gather(*(bind(i, n) for i, n in enumerate(names)))
        return len(names) / (time.perf_counter() - started)


class EmulatorProcess:
    """benchmarks/emulator_process.py as a child process (its own GIL, like an API server)."""

    def __enter__(self) -> EmulatorProcess:
        self.process = subprocess.Popen(
            [sys.executable, str(Path(__file__).with_name("emulator_process.py"))],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline().split()
        if line[:1] != ["URL"]:
            raise RuntimeError(f"the emulator did not start: {line}")
        self.url = line[1]
        return self

    def bindings(self) -> tuple[int, int, int]:
        """(successful bindings, attempts, most successful bindings of a single pod)."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write("bindings\n")
        self.process.stdin.flush()
        _, ok, total, most = self.process.stdout.readline().split()
        return int(ok), int(total), int(most)

    def __exit__(self, *exc: object) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write("quit\n")
        self.process.stdin.flush()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()


async def run(nodes: int, pods: int, workers: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp, EmulatorProcess() as emulator:
        kubeconfig = write_kubeconfig(Path(tmp) / "kubeconfig", emulator.url)
        # Kopf's login reads kubernetes-asyncio's default location, fixed at its import.
        os.environ["KUBECONFIG"] = str(kubeconfig)
        os.environ.pop("KUBERNETES_SERVICE_HOST", None)
        kube_config.KUBE_CONFIG_DEFAULT_LOCATION = str(kubeconfig)
        async with await KubeClient.from_kubeconfig(str(kubeconfig)) as kube:
            for ns in ("raw", "bench"):
                await kube.create(
                    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
                )
            await create_many(kube, [node(f"n{i}", f"zone-{i % 3}") for i in range(nodes)], None)
            raw_names = [f"raw-{i}" for i in range(pods)]
            await create_many(kube, [pending_pod(n) for n in raw_names], "raw")
            raw_rate = await raw_binding_rate(kubeconfig, raw_names, nodes, workers)

            await create_many(kube, [pending_pod(f"p-{i}") for i in range(pods)], "bench")
            before, _, _ = await asyncio.to_thread(emulator.bindings)
            operator = OperatorThread(
                kubeconfig, qps=0.0, bind_workers=workers, startup_timeout=120.0
            )
            started = time.perf_counter()
            await asyncio.to_thread(operator.start)
            try:
                deadline = started + max(120.0, pods / 5)
                while True:
                    ok, _, most = await asyncio.to_thread(emulator.bindings)
                    if ok - before >= pods:
                        break
                    if time.perf_counter() > deadline:
                        raise TimeoutError("the operator did not bind every pod in time")
                    await asyncio.sleep(0.05)
                elapsed = time.perf_counter() - started
            finally:
                await asyncio.to_thread(operator.stop)
            if most > 1:
                raise RuntimeError("a pod was bound twice")
    # The ratio is that of the rates as reported, so a reader can recompute it exactly.
    raw_reported = round(raw_rate, 1)
    operator_reported = round(pods / elapsed, 1)
    return {
        "nodes": nodes,
        "pods": pods,
        "bind_workers": workers,
        "raw_bindings_per_s": raw_reported,
        "operator_pods_per_s": operator_reported,
        "ratio": round(operator_reported / raw_reported, 3),
        "operator_seconds": round(elapsed, 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--bind-workers", type=int, default=16)
    parser.add_argument("--quick", action="store_true", help="50 nodes, 100 pods (CI smoke)")
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args(argv)
    if args.quick:
        args.nodes, args.pods = 50, 100
    report = asyncio.run(run(args.nodes, args.pods, args.bind_workers))
    print(
        f"{report['nodes']} nodes, {report['pods']} pods: emulator raw binding rate "
        f"{report['raw_bindings_per_s']}/s, operator {report['operator_pods_per_s']} pods/s "
        f"({report['operator_seconds']} s incl. startup and LIST), ratio {report['ratio']:.0%}"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
