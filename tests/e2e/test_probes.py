"""What the chart's probes see: liveness on /healthz, readiness on /readyz, over HTTP.

The chart points the kubelet's liveness probe at ``/healthz`` and its readiness probe
at ``/readyz`` on the health port (tests/chart). Here the real operator serves them
while the API server refuses its startup LIST (500 to every LIST of nodes from the
scheduler's client; Kopf's own watches are left alone): the LIST is retried, the pod is
not ready, and it stays alive (a liveness failure would restart it into the same busy
API server). Once the API answers, it becomes ready and schedules.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import aiohttp

from builders import node, pod
from e2e.emulator import EmulatorServer, Fault
from e2e.harness import KubeClient, wait_until
from e2e.operator_harness import OperatorThread

SCHEDULER = "policy-scheduler"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def probe(port: int, path: str) -> tuple[int, dict[str, Any]]:
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{port}{path}") as response,
    ):
        return response.status, await response.json()


async def test_a_failing_startup_list_is_not_ready_but_alive_until_the_api_answers(
    emulator: KubeClient, emulator_server: EmulatorServer, namespace: str, kubeconfig: Path
) -> None:
    await emulator.create(node("n1"))
    web = pod("web", schedulerName=SCHEDULER)
    del web["metadata"]["uid"], web["metadata"]["namespace"]
    await emulator.create(web, namespace)
    refused = Fault("status", "GET", "/api/v1/nodes", status=500, agents=("OpenAPI-Generator",))
    emulator_server.call(lambda em: em.faults.append(refused))
    health = free_port()

    async with OperatorThread(kubeconfig, health_port=health, api_timeout=1.0):

        async def refused_twice() -> bool:
            return refused.hits >= 2

        await wait_until(refused_twice, timeout=10)
        ready = await probe(health, "/readyz")
        assert ready == (
            503,
            {"status": "failing", "problems": ["listing the cluster before the first decision"]},
        )
        assert await probe(health, "/healthz") == (200, {"status": "ok", "problems": []})
        unbound = await emulator.get("v1", "Pod", "web", namespace)
        assert unbound is not None and not unbound["spec"].get("nodeName")

        emulator_server.call(lambda em: em.faults.remove(refused))

        async def is_ready() -> bool:
            return (await probe(health, "/readyz"))[0] == 200

        await wait_until(is_ready, timeout=20)
        bound = await emulator.wait_for(
            "v1", "Pod", "web", namespace, lambda o: bool(o and o["spec"].get("nodeName"))
        )
        assert bound is not None and bound["spec"]["nodeName"] == "n1"
        assert await probe(health, "/healthz") == (200, {"status": "ok", "problems": []})
