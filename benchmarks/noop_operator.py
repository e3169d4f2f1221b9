"""Kopf's floor: a Kopf operator whose pod event handler does nothing, in a process of its own.

What any Kopf operator pays per pod event before its handler runs: the watch stream's
decoding, Kopf's per-event machinery (worker queues, cause detection, handler
invocation), with the settings the scheduler runs with (``handlers.configure``: no
posting, no diff-base, no scanning). ``e2e_bench.py`` runs it on the same pod stream as
the scheduler and divides its CPU by the events it saw.

With ``--writes NODES`` the handler also does the two writes a scheduler owes each
pending pod, and nothing else: the binding (to node ``n<i mod NODES>``, round robin)
and the ``Scheduled`` event, through the operator's own client (:class:`KubeApi`,
kubernetes-asyncio from the same kubeconfig) and event body (``build_event``). That is
the operator's own stack's floor: Kopf on the same pod stream plus the two writes,
without the cache, the queue or the decision.

Driven over stdin/stdout like ``emulator_process.py``: the process prints ``READY`` once
Kopf is ready (the kubeconfig comes from ``KUBECONFIG``), then answers ``events`` with
``EVENTS <pod events handled>``, and stops on ``quit``.
"""

from __future__ import annotations

import datetime
import logging
import os
import sys
import threading
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "operator")]

import kopf  # noqa: E402
from kubernetes_asyncio import client, config  # noqa: E402

from policy_scheduler import handlers  # noqa: E402
from policy_scheduler.operating import run_loop, untrust_env  # noqa: E402
from policy_scheduler.runtime.kubeapi import KubeApi  # noqa: E402
from policy_scheduler.runtime.reporting import build_event  # noqa: E402

registry = kopf.OperatorRegistry()
kopf.on.startup(registry=registry)(handlers.configure)
kopf.on.login(registry=registry)(handlers.login)

handled = 0
#: ``--writes NODES``: bind each pending pod round robin over that many nodes.
WRITE_NODES = int(sys.argv[sys.argv.index("--writes") + 1]) if "--writes" in sys.argv else 0
_api: list[KubeApi] = []


async def _client() -> KubeApi:
    if not _api:
        configuration = client.Configuration()
        await config.load_kube_config(
            config_file=os.environ["KUBECONFIG"], client_configuration=configuration
        )
        configuration.connection_pool_maxsize = 16
        api_client = client.ApiClient(configuration)
        untrust_env(api_client)
        _api.append(KubeApi(api_client))
    return _api[0]


async def _two_writes(body: Any) -> None:
    """The binding and the ``Scheduled`` event of a pending pod, nothing else."""
    metadata, spec = body["metadata"], body["spec"]
    if spec.get("nodeName") or metadata.get("deletionTimestamp"):
        return
    namespace, name, uid = metadata["namespace"], metadata["name"], metadata["uid"]
    node = f"n{handled % WRITE_NODES}"
    api = await _client()
    if await api.bind(namespace, name, uid, node) >= 300:
        return
    involved = {"apiVersion": "v1", "kind": "Pod", "namespace": namespace, "name": name}
    involved["uid"] = uid
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    event = build_event(
        namespace=namespace,
        involved=involved,
        event_type="Normal",
        reason="Scheduled",
        message=f"Successfully assigned {namespace}/{name} to {node}",
        action="Binding",
        component="noop-operator",
        instance="noop-operator",
        now=now,
    )
    await api.create_event(namespace, event)


@kopf.on.cleanup(registry=registry)
async def close_client(**_: Any) -> None:
    if _api:
        await _api[0].api_client.close()


@kopf.on.event("v1", "pods", registry=registry)
async def pod_event(body: Any, type: str | None = None, **_: Any) -> None:
    global handled
    handled += 1
    if WRITE_NODES and type in (None, "ADDED"):
        await _two_writes(body)


def commands(ready: threading.Event, stop: threading.Event) -> None:
    ready.wait()
    print("READY", flush=True)
    for line in sys.stdin:
        command = line.strip()
        if command == "events":
            print(f"EVENTS {handled}", flush=True)
        elif command == "quit":
            break
    stop.set()


def main() -> int:
    logging.basicConfig(level=logging.WARNING)
    ready, stop = threading.Event(), threading.Event()
    threading.Thread(target=commands, args=(ready, stop), daemon=True).start()
    run_loop(  # the scheduler's event loop (uvloop when installed): the same floor
        kopf.operator(
            registry=registry,
            clusterwide=True,
            standalone=True,
            ready_flag=ready,
            stop_flag=stop,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
