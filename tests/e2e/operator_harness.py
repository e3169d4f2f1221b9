"""Run the real policy-scheduler operator in a side thread, against the emulator or a cluster.

``OperatorThread`` builds ``policy_scheduler.operating.Operator`` (the same object
``policy-scheduler run`` builds) with its own API client from the test's kubeconfig, and
runs it with Kopf in a thread of its own (as a task in the test's loop, Kopf would
cancel the test's tasks on exit). Metrics and health servers are off unless asked.
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

from kubernetes_asyncio import client, config

from policy_scheduler import handlers
from policy_scheduler.operating import Operator, Options, run_loop, untrust_env


class OperatorThread:
    def __init__(self, kubeconfig: Path, *, startup_timeout: float = 15.0, **options: Any) -> None:
        options.setdefault("metrics_port", 0)
        options.setdefault("health_port", 0)
        options.setdefault("host", "127.0.0.1")
        options.setdefault("lease_namespace", "default")
        self.options = Options(**options)
        self.kubeconfig = kubeconfig
        self.startup_timeout = startup_timeout
        self.ready_flag = threading.Event()
        self.stop_flag = threading.Event()
        self.error: BaseException | None = None
        self.operator: Operator | None = None
        self._thread: threading.Thread | None = None

    async def _main(self) -> None:
        configuration = client.Configuration()
        await config.load_kube_config(
            config_file=str(self.kubeconfig), client_configuration=configuration
        )
        async with client.ApiClient(configuration) as api_client:
            untrust_env(api_client)  # as in a cluster: no proxy between us and the API
            self.operator = Operator(self.options, api_client)
            await self.operator.run(
                stop_flag=self.stop_flag, ready_flag=self.ready_flag, registry=handlers.registry
            )

    def _run(self) -> None:
        try:
            run_loop(self._main())  # the loop `policy-scheduler run` uses
        except BaseException as exc:
            self.error = exc

    def start(self) -> OperatorThread:
        self._thread = threading.Thread(target=self._run, name="policy-scheduler", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + self.startup_timeout
        while not self.ready_flag.wait(0.02):
            if not self._thread.is_alive():
                raise RuntimeError("the operator exited before getting ready") from self.error
            if time.monotonic() > deadline:
                self.stop()
                raise TimeoutError("the operator was not ready in time") from self.error
        return self

    def stop(self, timeout: float = 15.0) -> None:
        self.stop_flag.set()
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                raise TimeoutError("the operator did not stop in time")

    async def __aenter__(self) -> OperatorThread:
        return await asyncio.to_thread(self.start)

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self.stop)
        if self.error is not None and exc[0] is None:
            raise RuntimeError("the operator failed") from self.error
