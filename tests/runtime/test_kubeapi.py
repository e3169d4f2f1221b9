"""The API door: every call has a deadline, repeatable calls are retried, others are not.

A real aiohttp server on 127.0.0.1 plays the API server (it hangs, fails, or answers),
and the real kubernetes-asyncio client talks to it through :class:`KubeApi`."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from aiohttp import web
from kubernetes_asyncio import client

from policy_scheduler.kinds import NODE
from policy_scheduler.runtime.kubeapi import ApiError, KubeApi

Answer = Callable[[web.Request], Any]


class FakeServer:
    """Answers requests with the next entry of ``answers`` (the last one repeats)."""

    def __init__(self) -> None:
        self.answers: list[int | str | dict[str, Any]] = [200]
        self.requests: list[tuple[str, str]] = []
        #: (method, path, Content-Type, Authorization, the body as JSON) of each request
        self.sent: list[tuple[str, str, str, str, Any]] = []
        self.release = asyncio.Event()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.requests.append((request.method, request.path_qs))
        raw = await request.read()
        self.sent.append(
            (
                request.method,
                request.path,
                request.headers.get("Content-Type", ""),
                request.headers.get("Authorization", ""),
                json.loads(raw) if raw else None,
            )
        )
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if answer == "hang":
            await self.release.wait()
            return web.Response(status=503)
        if isinstance(answer, dict):
            return web.json_response(answer)
        return web.json_response({"kind": "Status", "code": answer}, status=int(answer))


@pytest.fixture
async def server() -> AsyncIterator[tuple[FakeServer, KubeApi]]:
    fake = FakeServer()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", fake.handle)
    runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    configuration = client.Configuration(host=f"http://127.0.0.1:{port}")
    configuration.api_key = {"BearerToken": "secret"}
    configuration.api_key_prefix = {"BearerToken": "Bearer"}
    async with client.ApiClient(configuration) as api_client:

        async def no_wait(seconds: float) -> None:
            return None

        yield fake, KubeApi(api_client, timeout=0.5, retries=2, sleep=no_wait)
    fake.release.set()
    await runner.cleanup()


async def test_a_call_that_never_answers_ends_at_its_deadline(
    server: tuple[FakeServer, KubeApi],
) -> None:
    fake, api = server
    fake.answers = ["hang"]
    started = asyncio.get_running_loop().time()
    assert await api.bind("default", "web", "uid-1", "n1") == 0
    assert asyncio.get_running_loop().time() - started < 5
    assert len(fake.requests) == 1  # a binding is never repeated blindly


@pytest.mark.parametrize(
    ("answers", "status", "sent"),
    [
        pytest.param([503, 200], 200, 2, id="a 503 then an answer"),
        pytest.param(["hang", 200], 200, 2, id="no answer then an answer"),
        pytest.param([500, 500, 500, 500], 500, 3, id="gives up after its retries"),
        pytest.param([404], 404, 1, id="an answer is not retried"),
    ],
)
async def test_a_repeatable_call_is_retried(
    server: tuple[FakeServer, KubeApi], answers: list[Any], status: int, sent: int
) -> None:
    fake, api = server
    fake.answers = answers
    assert await api.patch_pod_status("default", "web", {"status": {}}) == status
    assert len(fake.requests) == sent


@pytest.mark.parametrize(
    ("answers", "status", "sent"),
    [
        pytest.param([500, 201], 500, 1, id="a 500 may come after the write: not repeated"),
        pytest.param([429, 201], 201, 2, id="a 429 was refused before anything: repeated"),
    ],
)
async def test_a_write_is_repeated_only_when_refused_unprocessed(
    server: tuple[FakeServer, KubeApi], answers: list[Any], status: int, sent: int
) -> None:
    fake, api = server
    fake.answers = answers
    assert await api.bind("default", "web", "uid-1", "n1") == status
    assert len(fake.requests) == sent


async def test_lists_are_paginated_and_fail_loudly(server: tuple[FakeServer, KubeApi]) -> None:
    fake, api = server
    page = {"metadata": {"continue": "next"}, "items": [{"metadata": {"name": "n1"}}]}
    last = {"metadata": {}, "items": [{"metadata": {"name": "n2"}}]}
    fake.answers = [page, last]
    items = await api.list_objects(NODE)
    assert [(i["kind"], i["metadata"]["name"]) for i in items] == [("Node", "n1"), ("Node", "n2")]
    assert "continue=next" in fake.requests[1][1]
    fake.answers = [500]
    with pytest.raises(ApiError, match="listing nodes: HTTP 500"):
        await api.list_objects(NODE)


async def test_reading_a_pod_gives_its_object(server: tuple[FakeServer, KubeApi]) -> None:
    fake, api = server
    fake.answers = [{"metadata": {"uid": "u"}, "spec": {"nodeName": "n1"}}]
    status, obj = await api.get_pod("default", "web")
    assert status == 200 and obj is not None and obj["spec"]["nodeName"] == "n1"
    assert json.dumps(obj)  # plain data


STRATEGIC = "application/strategic-merge-patch+json"


@pytest.mark.parametrize(
    ("write", "method", "path", "content_type", "body"),
    [
        pytest.param(
            lambda api: api.bind("team-a", "web-1", "uid-1", "n1"),
            "POST",
            "/api/v1/namespaces/team-a/pods/web-1/binding",
            "application/json",
            {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": "web-1", "namespace": "team-a", "uid": "uid-1"},
                "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"},
            },
            id="binding",
        ),
        pytest.param(
            lambda api: api.patch_pod_status("team-a", "web-1", {"status": {"x": 1}}),
            "PATCH",
            "/api/v1/namespaces/team-a/pods/web-1/status",
            STRATEGIC,
            {"status": {"x": 1}},
            id="pod status",
        ),
        pytest.param(
            lambda api: api.delete_pod("team-a", "web-1", "uid-1"),
            "DELETE",
            "/api/v1/namespaces/team-a/pods/web-1",
            "application/json",
            {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": "uid-1"}},
            id="pod deletion",
        ),
        pytest.param(
            lambda api: api.create_event("team-a", {"metadata": {"name": "e"}, "count": 1}),
            "POST",
            "/api/v1/namespaces/team-a/events",
            "application/json",
            {"metadata": {"name": "e"}, "count": 1},
            id="event",
        ),
        pytest.param(
            lambda api: api.patch_event("team-a", "web-1.abc", {"count": 2}),
            "PATCH",
            "/api/v1/namespaces/team-a/events/web-1.abc",
            "application/merge-patch+json",
            {"count": 2},
            id="event count",
        ),
    ],
)
async def test_writes_reach_the_api_as_the_client_would_send_them(
    server: tuple[FakeServer, KubeApi],
    write: Callable[[KubeApi], Any],
    method: str,
    path: str,
    content_type: str,
    body: dict[str, Any],
) -> None:
    fake, api = server
    fake.answers = [201]
    assert await write(api) == 201
    assert fake.sent == [(method, path, content_type, "Bearer secret", body)]


async def test_a_write_is_sent_with_the_credentials_of_the_moment(
    server: tuple[FakeServer, KubeApi],
) -> None:
    """A refreshed token (an exec plugin's, a rotated service account's) is used by the
    next attempt, a retry of the same write included."""
    fake, api = server
    tokens = iter(["first", "second"])

    def refresh(configuration: client.Configuration) -> None:
        configuration.api_key["BearerToken"] = next(tokens)

    api.api_client.configuration.refresh_api_key_hook = refresh
    fake.answers = [503, 200]
    assert await api.patch_pod_status("team-a", "web-1", {"status": {}}) == 200
    assert [sent[3] for sent in fake.sent] == ["Bearer first", "Bearer second"]
