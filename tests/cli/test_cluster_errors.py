"""``run`` and ``explain`` without a usable cluster: one line, what to do, exit 1.

As a newcomer meets them: no kubeconfig at all, KUBECONFIG naming a missing or broken
file, a server that does not answer, credentials refused (401), a permission missing
(403), and ``run``'s own port taken. Each command runs as a process, as typed in a shell
(the API client reads KUBECONFIG when it is imported); the API server is an aiohttp
server on 127.0.0.1 in the test's own loop, answering what a real one answers.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from aiohttp import web

from policy_scheduler.kinds import KINDS

FORBIDDEN = (
    'pods is forbidden: User "system:serviceaccount:ps:ps" cannot list resource "pods" '
    'in API group "" at the cluster scope'
)


@dataclass
class Finished:
    code: int
    stdout: str
    stderr: str


async def policy_scheduler(home: Path, *argv: str, kubeconfig: Path | str | None) -> Finished:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KUBERNETES_", "KUBECONFIG"))}
    env["HOME"] = str(home)  # no ~/.kube/config but the one a test writes
    if kubeconfig is not None:
        env["KUBECONFIG"] = str(kubeconfig)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "policy_scheduler.cli",
        *argv,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        async with asyncio.timeout(60):
            out, err = await process.communicate()
    finally:
        if process.returncode is None:  # a command that hangs fails the test, and stops
            process.kill()
            await process.wait()
    assert process.returncode is not None
    return Finished(process.returncode, out.decode(), err.decode())


def write_kubeconfig(path: Path, server: str) -> Path:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": {"token": "expired-token"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "c",
    }
    path.write_text(json.dumps(config))
    return path


def status(code: int, reason: str, message: str) -> web.Response:
    body = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code}
    return web.json_response({**body, "reason": reason, "message": message}, status=code)


def empty_list(request: web.Request) -> web.Response:
    return web.json_response({"kind": "List", "apiVersion": "v1", "items": [], "metadata": {}})


Answer = Callable[[web.Request], web.Response]
StartServer = Callable[[Answer], Awaitable[str]]


@pytest.fixture
async def api_server() -> AsyncIterator[StartServer]:
    """Start a fake API server answering every request with ``answer``; yields its URL."""
    runners: list[web.AppRunner] = []

    async def start(answer: Answer) -> str:
        async def handle(request: web.Request) -> web.Response:
            return answer(request)

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        runners.append(runner)
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        return f"http://127.0.0.1:{port}"

    yield start
    for runner in runners:
        await runner.cleanup()


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (connections are refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


COMMANDS = [
    pytest.param(["run", "--metrics-port", "0", "--health-port", "0"], "pods", id="run"),
    pytest.param(["explain", "web", "-n", "shop"], "nodes", id="explain"),
]


def assert_one_line(done: Finished, *expected: str) -> str:
    assert done.code == 1, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1, done.stderr
    for text in expected:
        assert text in done.stderr, done.stderr
    return done.stderr


@pytest.mark.parametrize(("argv", "first_list"), COMMANDS)
async def test_no_kubeconfig_says_where_it_looked(
    tmp_path: Path, argv: list[str], first_list: str
) -> None:
    done = await policy_scheduler(tmp_path, *argv, kubeconfig=None)
    assert_one_line(
        done,
        "no kubeconfig: KUBECONFIG is not set and ~/.kube/config does not exist",
        "point KUBECONFIG at your cluster's kubeconfig",
    )


@pytest.mark.parametrize(("argv", "first_list"), COMMANDS)
async def test_a_kubeconfig_that_is_not_there(
    tmp_path: Path, argv: list[str], first_list: str
) -> None:
    missing = tmp_path / "nope.yaml"
    done = await policy_scheduler(tmp_path, *argv, kubeconfig=missing)
    assert_one_line(done, f"KUBECONFIG={missing} names no file that exists")


@pytest.mark.parametrize(
    "content",
    [
        pytest.param("clusters: [\n", id="not-yaml"),
        pytest.param("apiVersion: v1\nkind: Config\n", id="no-current-context"),
    ],
)
@pytest.mark.parametrize(("argv", "first_list"), COMMANDS)
async def test_a_broken_kubeconfig(
    tmp_path: Path, argv: list[str], first_list: str, content: str
) -> None:
    path = tmp_path / "config"
    path.write_text(content)
    done = await policy_scheduler(tmp_path, *argv, kubeconfig=path)
    assert_one_line(done, f"cannot use {path}: ", "`kubectl config view`")


@pytest.mark.parametrize(("argv", "first_list"), COMMANDS)
async def test_an_api_server_that_does_not_answer(
    tmp_path: Path, argv: list[str], first_list: str
) -> None:
    server = f"http://127.0.0.1:{closed_port()}"
    kubeconfig = write_kubeconfig(tmp_path / "config", server)
    done = await policy_scheduler(tmp_path, *argv, kubeconfig=kubeconfig)
    assert_one_line(
        done,
        f"listing {first_list}: no answer from the Kubernetes API server at {server}",
        "is the cluster running, and does the kubeconfig point at it?",
    )


@pytest.mark.parametrize(("argv", "first_list"), COMMANDS)
async def test_credentials_refused(
    tmp_path: Path, api_server: StartServer, argv: list[str], first_list: str
) -> None:
    server = await api_server(lambda _: status(401, "Unauthorized", "Unauthorized"))
    kubeconfig = write_kubeconfig(tmp_path / "config", server)
    done = await policy_scheduler(tmp_path, *argv, kubeconfig=kubeconfig)
    assert_one_line(
        done,
        f"listing {first_list}: the API server at {server} refused the credentials "
        "(401 Unauthorized)",
        "log in again or renew",
    )


@pytest.mark.parametrize(
    ("argv", "first_list", "advice"),
    [
        pytest.param(*COMMANDS[0].values, "the chart's ClusterRole", id="run"),
        pytest.param(
            *COMMANDS[1].values,
            # Every kind the scheduler reads, in the order it LISTs them.
            "your account needs list on " + ", ".join(kind.plural for kind in KINDS),
            id="explain",
        ),
    ],
)
async def test_permission_missing(
    tmp_path: Path,
    api_server: StartServer,
    argv: list[str],
    first_list: str,
    advice: str,
) -> None:
    message = FORBIDDEN.replace("pods", first_list)
    server = await api_server(lambda _: status(403, "Forbidden", message))
    kubeconfig = write_kubeconfig(tmp_path / "config", server)
    done = await policy_scheduler(tmp_path, *argv, kubeconfig=kubeconfig)
    assert_one_line(done, f"listing {first_list}: forbidden (403) ({message})", advice)


async def test_run_with_its_port_taken(tmp_path: Path, api_server: StartServer) -> None:
    server = await api_server(empty_list)
    kubeconfig = write_kubeconfig(tmp_path / "config", server)
    port = server.rsplit(":", 1)[1]  # the fake API server's own port: taken
    argv = ["run", "--bind-address", "127.0.0.1", "--metrics-port", port, "--health-port", "0"]
    done = await policy_scheduler(tmp_path, *argv, kubeconfig=kubeconfig)
    assert_one_line(
        done,
        f"cannot serve /metrics on 127.0.0.1:{port}: Address already in use",
        "choose another --metrics-port",
    )
