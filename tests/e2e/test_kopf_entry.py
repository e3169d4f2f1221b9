"""``kopf run -m policy_scheduler.kopf_entry`` schedules pods, as ``policy-scheduler run`` does."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

from builders import node, pod
from e2e.harness import KubeClient


async def test_kopf_cli_hosts_the_scheduler(
    emulator: KubeClient, kubeconfig: Path, namespace: str
) -> None:
    await emulator.create(node("n1"))
    env = dict(os.environ, KUBECONFIG=str(kubeconfig), POLICY_SCHEDULER_METRICS_PORT="0")
    env.pop("KUBERNETES_SERVICE_HOST", None)
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kopf",
            "run",
            "--standalone",
            "-A",
            "-m",
            "policy_scheduler.kopf_entry",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        obj = pod("via-kopf", namespace=namespace)
        obj["spec"]["schedulerName"] = "policy-scheduler"
        del obj["metadata"]["uid"]
        await emulator.create(obj, namespace)
        bound = await emulator.wait_for(
            "v1",
            "Pod",
            "via-kopf",
            namespace,
            lambda o: bool(o and o["spec"].get("nodeName")),
            timeout=20,
        )
        assert bound is not None and bound["spec"]["nodeName"] == "n1"
    finally:
        process.terminate()
        try:
            output, _ = await asyncio.to_thread(process.communicate, timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            output, _ = process.communicate()
    assert "Traceback" not in output, output
