"""The API client's two lanes: reports (events, conditions) have a rate and a share of the
connections of their own, so that they never delay a binding (``runtime/kubeapi.py``).

Rates are checked in the loop's fake time (looptime) on :class:`fakes.FakeApiSession`;
connections against a real aiohttp server on 127.0.0.1 with kubernetes-asyncio's own
connection pool, holding exactly the two lanes' connections.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from kubernetes_asyncio import client

from fakes import FakeApiSession
from policy_scheduler.runtime.kubeapi import (
    CRITICAL,
    REPORTS,
    KubeApi,
    Lane,
    RateLimiter,
)

EVENT = {"metadata": {"name": "e"}, "involvedObject": {"name": "p"}}


# -- rates ----------------------------------------------------------------------------


@pytest.mark.looptime
async def test_the_rate_limiter_lets_a_burst_go_then_one_call_per_interval() -> None:
    loop = asyncio.get_running_loop()
    limiter = RateLimiter(qps=10, burst=3)
    times = []
    for _ in range(6):
        await limiter.acquire()
        times.append(round(loop.time(), 6))
    assert times == [0.0, 0.0, 0.0, 0.1, 0.2, 0.3]
    await asyncio.sleep(10)  # idle: the burst is available again, no more
    start = loop.time()
    for _ in range(4):
        await limiter.acquire()
    assert round(loop.time() - start, 6) == 0.1


@pytest.fixture
async def fake_session() -> AsyncIterator[tuple[client.ApiClient, FakeApiSession]]:
    async with client.ApiClient(client.Configuration(host="http://api.test")) as api_client:
        await api_client.rest_client.pool_manager.close()
        session = FakeApiSession(limit=100)
        api_client.rest_client.pool_manager = session
        yield api_client, session


@pytest.mark.looptime
async def test_reports_spend_their_own_rate_not_the_bindings(
    fake_session: tuple[client.ApiClient, FakeApiSession],
) -> None:
    api_client, _ = fake_session
    api = KubeApi(api_client, Lane(CRITICAL, 10, 1), reports=Lane(REPORTS, 10, 1))
    loop = asyncio.get_running_loop()
    # Fifty events: five seconds of the report lane's rate.
    events = [asyncio.create_task(api.reports.create_event("default", EVENT)) for _ in range(50)]
    await asyncio.sleep(0)
    assert await api.bind("default", "web", "uid-web", "n1") == 201
    assert loop.time() < 0.1  # not behind the events
    assert await asyncio.gather(*events) == [201] * 50
    assert round(loop.time(), 6) == 4.9


# -- connections ------------------------------------------------------------------------


@pytest.fixture
async def hanging_events() -> AsyncIterator[tuple[str, asyncio.Event]]:
    """An API server whose event POSTs never answer; everything else answers at once."""
    release = asyncio.Event()

    async def handle(request: web.Request) -> web.StreamResponse:
        await request.read()
        if request.path.endswith("/events"):
            await release.wait()
        return web.json_response({"kind": "Status"}, status=201)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield f"http://127.0.0.1:{port}", release
    release.set()
    await runner.cleanup()


async def test_hung_reports_hold_only_their_own_connections(
    hanging_events: tuple[str, asyncio.Event],
) -> None:
    host, _ = hanging_events
    configuration = client.Configuration(host=host)
    burst, reports = 4, 2
    # A pool of exactly the lanes' connections (the operator's has 100 at least).
    configuration.connection_pool_maxsize = burst + reports
    async with client.ApiClient(configuration) as api_client:
        api = KubeApi(
            api_client,
            Lane(CRITICAL, 0, burst, burst),
            reports=Lane(REPORTS, 0, 1, reports),
            timeout=60,
        )
        hung = [asyncio.create_task(api.reports.create_event("default", EVENT)) for _ in range(20)]
        await asyncio.sleep(0.1)
        assert api.reports.lane.in_flight == reports  # the other 18 wait for the lane
        # Twelve bindings, three rounds of the critical lane's connections, while every
        # event still hangs: a pool shared without lanes would be full of events.
        bindings = [api.bind("default", f"p{i}", f"uid-{i}", "n1") for i in range(12)]
        async with asyncio.timeout(10):  # a guard: they finish at once, or never
            assert await asyncio.gather(*bindings) == [201] * 12
        assert not any(task.done() for task in hung)
        for task in hung:
            task.cancel()
        await asyncio.gather(*hung, return_exceptions=True)


# -- the operator's wiring ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "critical", "reports"),
    [
        pytest.param({}, (200.0, 400, 400), (200.0, 400, 8), id="defaults-same-budget"),
        pytest.param(
            {"qps": 0, "burst": 50, "report_qps": 5, "report_burst": 10, "report_concurrency": 2},
            (0, 50, 100),  # 100 connections at least
            (5, 10, 2),
            id="set-apart",
        ),
    ],
)
async def test_the_operator_gives_the_reporter_the_report_lane(
    options: dict[str, Any], critical: tuple[float, int, int], reports: tuple[float, int, int]
) -> None:
    from policy_scheduler.operating import Operator, Options

    opts = Options(metrics_port=0, health_port=0, lease_namespace="default", **options)
    async with client.ApiClient(client.Configuration(host="http://127.0.0.1:9")) as api_client:
        operator = Operator(opts, api_client)

    def budget(lane: Lane) -> tuple[float, int, int | None]:
        return lane.limiter.qps, lane.limiter.burst, lane.concurrency

    assert budget(operator.api.lane) == critical
    assert operator.reporter.api is not operator.api
    assert budget(operator.reporter.api.lane) == reports  # type: ignore[attr-defined]
    assert operator.reporter.workers == reports[2]
    assert operator.runtime.api is operator.api
