"""Bindings first: no event or condition write, however many or however hung, delays a
binding (issue 26, "the bad hour").

The operator is the real :class:`Operator` (its two API lanes, its reporter, the
connection pool ``load_client`` would size), on kubernetes-asyncio's real client whose
HTTP session is :class:`fakes.FakeApiSession`: the API server's answers and aiohttp's
connection pool, with requests that hang until their deadline. The loop's time is
fake (looptime): a 30 s deadline costs nothing, and "within 60 s" is the loop's clock,
the same one the operator's queue and limiters use.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio import client

from builders import node, pod
from fakes import FakeApiSession
from policy_scheduler.operating import Operator, Options
from policy_scheduler.runtime.kubeapi import pool_size

pytestmark = pytest.mark.looptime

SCHEDULER = "policy-scheduler"


def spod(name: str, cpu: str) -> dict[str, Any]:
    return pod(name, requests={"cpu": cpu, "memory": "64Mi"}, schedulerName=SCHEDULER)


@contextlib.asynccontextmanager
async def operator_on_fake_api(**options: Any) -> AsyncIterator[tuple[Operator, FakeApiSession]]:
    """The operator with these options, its API client's session faked, not yet leading."""
    opts = Options(metrics_port=0, health_port=0, lease_namespace="default", **options)
    configuration = client.Configuration(host="http://api.test")
    async with client.ApiClient(configuration) as api_client:
        await api_client.rest_client.pool_manager.close()
        # The pool `policy-scheduler run` opens for these options (operating.operate).
        session = FakeApiSession(limit=pool_size(opts.burst, opts.report_concurrency))
        api_client.rest_client.pool_manager = session
        operator = Operator(opts, api_client, clock=asyncio.get_running_loop().time)

        async def listed() -> None:  # the cluster is fed by the test, not LISTed
            operator.runtime.primed = True

        operator.prime = listed  # type: ignore[method-assign]
        try:
            yield operator, session
        finally:
            for _, _, hang in session.hangs:
                hang.release()
            await operator.stop()


async def test_300_pods_bind_within_60s_while_every_event_and_status_write_hangs() -> None:
    # A pool of 108 connections (burst 100 + 8 for reports): 300 hung event POSTs would
    # hold every connection, and bindings would wait for one, if reports had no budget
    # of their own.
    async with operator_on_fake_api(burst=100) as (operator, api):
        events = api.hang("POST", "/events")
        statuses = api.hang("PATCH", "/status")
        runtime = operator.runtime
        for i in range(10):
            runtime.handle("ADDED", node(f"n{i}", cpu="64", memory="64Gi"))
        # Twenty pods fit nowhere: their PodScheduled conditions hang too.
        for i in range(20):
            runtime.handle("ADDED", spod(f"huge-{i}", "100"))
        names = [f"default/p{i}" for i in range(300)]
        for name in names:
            runtime.handle("ADDED", spod(name.split("/")[1], "100m"))
        bound = api.bindings(300)
        loop = asyncio.get_running_loop()
        started = loop.time()
        await operator.start_scheduling()
        async with asyncio.timeout(60):
            await bound.wait()
        assert loop.time() - started < 60
        assert sorted(api.bound) == sorted(names)
        # The faults were hit: events and conditions were written, and hung.
        assert events.hits > 0 and statuses.hits > 0


async def test_after_5000_unschedulable_pods_a_new_node_gets_100_pods_bound_within_20s() -> None:
    """At the chart's default --qps: the chatter of 5000 pods that fit nowhere (their
    conditions and FailedScheduling events, twice each) never delays a binding."""
    async with operator_on_fake_api() as (operator, api):
        assert (operator.options.qps, operator.options.burst) == (200.0, 400)
        runtime = operator.runtime
        runtime.handle("ADDED", node("small", cpu="1", memory="64Gi"))
        for i in range(5000):
            runtime.handle("ADDED", spod(f"huge-{i:04}", "1000"))
        names = [f"default/fits-{i:03}" for i in range(100)]
        for name in names:
            runtime.handle("ADDED", spod(name.split("/")[1], "2"))
        # Every pod tried once: none fits the small node; 5100 conditions and events
        # are queued for the report lane.
        while (queued := runtime.queue.pop_nowait()) is not None:
            await runtime.schedule_one(queued)
        assert runtime.queue.lengths()["unschedulable"] == 5100
        assert api.bound == {}
        loop = asyncio.get_running_loop()
        added = loop.time()
        runtime.handle("ADDED", node("big", cpu="256", memory="1Ti", pods=200))
        bound = api.bindings(100)
        await operator.start_scheduling()
        async with asyncio.timeout(20):
            await bound.wait()
        assert loop.time() - added < 20
        assert sorted(api.bound) == names
        assert set(api.bound.values()) == {"big"}
        # The chatter was real: events were written, and more were asked for than the
        # queue holds; what it dropped is counted where Prometheus reads it.
        assert any(path.endswith("/events") for _, path in api.answered)
        assert operator.reporter.dropped > 0
        dropped = f"scheduler_events_dropped_total {float(operator.reporter.dropped)}"
        assert dropped in operator.metrics.render().decode().splitlines()
