"""Kopf's floor: a Kopf operator whose pod event handler does nothing, in a process of its own.

What any Kopf operator pays per pod event before its handler runs: the watch stream's
decoding, Kopf's per-event machinery (worker queues, cause detection, handler
invocation), with the settings the scheduler runs with (``handlers.configure``: no
posting, no diff-base, no scanning). ``e2e_bench.py`` runs it on the same pod stream as
the scheduler and divides its CPU by the events it saw.

Driven over stdin/stdout like ``emulator_process.py``: the process prints ``READY`` once
Kopf is ready (the kubeconfig comes from ``KUBECONFIG``), then answers ``events`` with
``EVENTS <pod events handled>``, and stops on ``quit``.
"""

from __future__ import annotations

import logging
import sys
import threading
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "operator")]

import kopf  # noqa: E402

from policy_scheduler import handlers  # noqa: E402
from policy_scheduler.operating import run_loop  # noqa: E402

registry = kopf.OperatorRegistry()
kopf.on.startup(registry=registry)(handlers.configure)
kopf.on.login(registry=registry)(handlers.login)

handled = 0


@kopf.on.event("v1", "pods", registry=registry)
async def pod_event(**_: Any) -> None:
    global handled
    handled += 1


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
