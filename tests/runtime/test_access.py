"""``run``'s first LIST: a busy or restarting API server is waited out, only what
retrying cannot fix ends the process.

A 500 or a 429 on the first LIST of pods once ended ``policy-scheduler run`` (``error:
listing pods: HTTP 500``, exit 1); client-go's informers retry it with backoff, and so
does :func:`check_access` now, logging each retry on one line. 401 and 403 still end it
at once. A 429's ``Retry-After`` is waited for. A real aiohttp server on 127.0.0.1 plays
the API server; the waits are recorded, not slept."""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from kubernetes_asyncio import client

from policy_scheduler.runtime.access import AccessError, check_access
from policy_scheduler.runtime.kubeapi import KubeApi

EMPTY = {"kind": "PodList", "apiVersion": "v1", "items": [], "metadata": {}}


class Server:
    """Answers each request with the next of ``answers`` (the last one repeats): a
    status, or (status, Retry-After)."""

    def __init__(self) -> None:
        self.answers: list[int | tuple[int, str]] = [200]
        self.paths: list[str] = []

    async def handle(self, request: web.Request) -> web.Response:
        self.paths.append(request.path)
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        status, after = answer if isinstance(answer, tuple) else (answer, "")
        if status == 200:
            return web.json_response(EMPTY)
        headers = {"Retry-After": after} if after else None
        body = {"kind": "Status", "code": status, "message": "busy"}
        return web.json_response(body, status=status, headers=headers)


@pytest.fixture
async def served() -> AsyncIterator[tuple[Server, KubeApi, list[float]]]:
    fake = Server()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", fake.handle)
    runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    waits: list[float] = []

    async def wait(seconds: float) -> None:
        waits.append(seconds)

    configuration = client.Configuration(host=f"http://127.0.0.1:{port}")
    async with client.ApiClient(configuration) as api_client:
        yield fake, KubeApi(api_client, timeout=2, retries=1, sleep=wait), waits
    await runner.cleanup()


async def test_a_failing_first_list_is_retried_until_it_goes_through(
    served: tuple[Server, KubeApi, list[float]], caplog: pytest.LogCaptureFixture
) -> None:
    fake, api, _ = served
    # More failures than the client's own retries: each LIST fails twice (500, 503).
    fake.answers = [500, 503, 500, 503, 500, 503, 200]
    caplog.set_level(logging.WARNING, logger="policy_scheduler.runtime.access")
    outer: list[float] = []

    async def sleep(seconds: float) -> None:
        outer.append(seconds)

    await check_access(api, sleep=sleep)
    assert len(outer) == 3
    assert fake.paths == ["/api/v1/pods"] * 7
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 3
    assert all(line.startswith("listing pods: HTTP 503 from the API server at") for line in lines)
    assert all("; trying again in " in line for line in lines)


async def test_the_backoff_doubles_up_to_a_cap(
    served: tuple[Server, KubeApi, list[float]],
) -> None:
    fake, api, _ = served
    fake.answers = [500] * 20 + [200]
    outer: list[float] = []

    async def sleep(seconds: float) -> None:
        outer.append(seconds)

    await check_access(api, sleep=sleep)
    assert len(outer) == 10
    # 1 s doubling, jittered to 50..150%, never more than 30 s (x1.5).
    assert 0.5 <= outer[0] <= 1.5 and 4 <= outer[3] <= 12
    assert all(15 <= s <= 45 for s in outer[6:])


async def test_a_429_waits_at_least_its_retry_after(
    served: tuple[Server, KubeApi, list[float]],
) -> None:
    fake, api, waits = served
    fake.answers = [(429, "7"), 200]
    await check_access(api)
    assert fake.paths == ["/api/v1/pods"] * 2
    assert waits == [7.0]


@pytest.mark.parametrize(
    ("status", "text"),
    [
        pytest.param(401, "refused the credentials (401 Unauthorized)", id="401"),
        pytest.param(403, "forbidden (403) (busy)", id="403"),
    ],
)
async def test_what_retrying_cannot_fix_ends_it_at_once(
    served: tuple[Server, KubeApi, list[float]], status: int, text: str
) -> None:
    fake, api, _ = served
    fake.answers = [status]
    slept: list[Any] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    with pytest.raises(AccessError, match=re.escape(text)):
        await check_access(api, sleep=sleep)
    assert slept == []
    assert fake.paths == ["/api/v1/pods"]
