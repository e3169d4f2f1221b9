"""Stopping the operator ends within ``--shutdown-timeout``, whatever still hangs.

A binding the API never answers (a hung connection; the API deadline is not what ends
it here) once kept SIGTERM waiting in the drain until the kubelet killed the pod. The
operator is the real :class:`Operator`; only its API calls are replaced, and the loop's
time is fake (looptime), so the test waits for nothing."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio import client

from builders import node, pod
from policy_scheduler.operating import Operator, Options

pytestmark = pytest.mark.looptime

SHUTDOWN = 7.0


@pytest.fixture
async def operator() -> AsyncIterator[Operator]:
    options = Options(
        metrics_port=0, health_port=0, shutdown_timeout=SHUTDOWN, lease_namespace="default"
    )
    async with client.ApiClient(client.Configuration(host="http://127.0.0.1:9")) as api_client:
        yield Operator(options, api_client)


async def test_a_binding_that_never_ends_does_not_hold_the_shutdown(
    operator: Operator, caplog: pytest.LogCaptureFixture
) -> None:
    sent = asyncio.Event()
    never = asyncio.Event()

    async def hung_bind(*args: Any) -> int:
        sent.set()
        await never.wait()
        return 201

    async def listed() -> None:  # the cluster is fed below, not LISTed
        operator.runtime.primed = True

    operator.api.bind = hung_bind  # type: ignore[method-assign]
    operator.prime = listed  # type: ignore[method-assign]
    runtime = operator.runtime
    runtime.handle("ADDED", node("n1"))
    runtime.handle("ADDED", pod("web", schedulerName="policy-scheduler"))
    await operator.start_scheduling()
    await asyncio.wait_for(sent.wait(), timeout=5)

    loop = asyncio.get_running_loop()
    started = loop.time()
    with caplog.at_level(logging.WARNING, "policy_scheduler.operating"):
        # The outer limit only turns a hang into a failure instead of a stuck test.
        async with asyncio.timeout(3 * SHUTDOWN):
            await operator.stop()
    assert loop.time() - started == pytest.approx(SHUTDOWN, abs=0.5)
    assert "shutdown took more than 7 s; abandoning what is left" in caplog.text
    for task in list(runtime._bindings):
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
