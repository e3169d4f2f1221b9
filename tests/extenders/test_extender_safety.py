"""Extenders the scheduler will not talk to, and replies it will not swallow (issue 26).

A policy's ``urlPrefix`` must be an http(s) URL with a host, and not a link-local or
cloud metadata address unless the extender says ``allowMetadataAddresses: true``; the
error names the field. At call time: redirects are not followed, replies are read up
to 10 MiB and no further, and a name resolving to a metadata address is refused. The
peers are real aiohttp servers on 127.0.0.1, in the test's own loop (or, for the
memory test, in a subprocess that measures its own RSS).
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from aiohttp import web

from builders import parsed_node, parsed_pod
from policy_scheduler.engine.compiler import compile_policy
from policy_scheduler.engine.extenders import CompiledExtender, ExtenderError
from policy_scheduler.extending import MAX_REPLY_BYTES, HttpExtenderClient
from policy_scheduler.policy import API_VERSION, KIND, PolicyError, parse_policy

ROOT = Path(__file__).resolve().parents[2]
NODES = [parsed_node("n1"), parsed_node("n2")]
FILTERED = {"nodenames": ["n1"], "failedNodes": {}, "error": ""}


def policy(**extender: Any) -> dict[str, Any]:
    spec = {"extenders": [{"filterVerb": "filter", **extender}]}
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": "x"}, "spec": spec}


# -- what a policy may point at ------------------------------------------------------------

HTTP_WITH_HOST = "must be an http:// or https:// URL with a host, got "
METADATA = (
    " is a link-local or cloud metadata address, refused unless the extender sets "
    "allowMetadataAddresses: true"
)


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        pytest.param("file:///etc/passwd", HTTP_WITH_HOST + '"file:///etc/passwd"', id="file"),
        pytest.param("gopher://ext:70/_x", HTTP_WITH_HOST + '"gopher://ext:70/_x"', id="gopher"),
        pytest.param("/prefix", HTTP_WITH_HOST + '"/prefix"', id="a-bare-path"),
        pytest.param("http:///scheduler", HTTP_WITH_HOST + '"http:///scheduler"', id="no-host"),
        pytest.param("ext:8888/scheduler", HTTP_WITH_HOST + '"ext:8888/scheduler"', id="no-scheme"),
        pytest.param(
            "http://ext:99999/s",
            HTTP_WITH_HOST + '"http://ext:99999/s": Port out of range 0-65535',
            id="bad-port",
        ),
        pytest.param(
            "http://169.254.169.254/latest", '"http://169.254.169.254/latest"' + METADATA, id="imds"
        ),
        pytest.param(
            "http://169.254.10.1:8888", '"http://169.254.10.1:8888"' + METADATA, id="link-local-v4"
        ),
        pytest.param("http://[fe80::1]:80/s", '"http://[fe80::1]:80/s"' + METADATA, id="fe80"),
        pytest.param(
            "http://[fd00:ec2::254]/", '"http://[fd00:ec2::254]/"' + METADATA, id="ec2-v6"
        ),
        pytest.param(
            "http://[::ffff:169.254.169.254]/",
            '"http://[::ffff:169.254.169.254]/"' + METADATA,
            id="v4-mapped-v6",
        ),
        pytest.param("http://2852039166/", '"http://2852039166/"' + METADATA, id="decimal-ipv4"),
        pytest.param(
            "http://Metadata.Google.Internal./computeMetadata",
            '"http://Metadata.Google.Internal./computeMetadata"' + METADATA,
            id="gce-name",
        ),
        pytest.param(
            "http://100.100.100.200/latest",
            '"http://100.100.100.200/latest"' + METADATA,
            id="aliyun",
        ),
    ],
)
def test_a_url_prefix_the_scheduler_must_not_call_is_refused_naming_the_field(
    url: str, problem: str
) -> None:
    with pytest.raises(PolicyError) as refused:
        parse_policy(policy(urlPrefix=url))
    assert refused.value.errors == [f'SchedulingPolicy "x": spec.extenders[0].urlPrefix: {problem}']


@pytest.mark.parametrize(
    "extender",
    [
        pytest.param({"urlPrefix": "http://gpu-extender.kube-system:8888/scheduler"}, id="name"),
        pytest.param({"urlPrefix": "HTTPS://10.0.0.7"}, id="https-ip"),
        pytest.param({"urlPrefix": "http://[2001:db8::1]:8080/s"}, id="ipv6"),
        pytest.param({"urlPrefix": "http://127.0.0.1:8888"}, id="loopback"),
        pytest.param(
            {"urlPrefix": "http://169.254.169.254/x", "allowMetadataAddresses": True},
            id="metadata-allowed",
        ),
    ],
)
def test_an_http_service_is_accepted(extender: dict[str, Any]) -> None:
    compiled = compile_policy(parse_policy(policy(**extender)))
    assert compiled.extenders[0].allow_metadata_addresses is bool(
        extender.get("allowMetadataAddresses")
    )


def test_the_crd_describes_allow_metadata_addresses() -> None:
    crd = yaml.safe_load((ROOT / "crds" / "schedulingpolicies.policyscheduler.io.yaml").read_text())
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    extender = schema["properties"]["spec"]["properties"]["extenders"]["items"]
    assert extender["properties"]["allowMetadataAddresses"]["type"] == "boolean"


# -- peers ---------------------------------------------------------------------------------

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class Peer:
    """An aiohttp server on 127.0.0.1 in the test's loop, answering POST /scheduler/*."""

    def __init__(self, handler: Handler, sent: list[int] | None = None) -> None:
        self.handler = handler
        self.sent = sent
        self.received: list[str] = []
        self.url = ""
        self._runner: web.AppRunner | None = None

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        await request.read()
        self.received.append(request.path)
        return await self.handler(request)

    async def __aenter__(self) -> Peer:
        app = web.Application()
        if self.sent is not None:
            app[SENT] = self.sent
        app.router.add_post("/scheduler/{verb}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}/scheduler"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._runner is not None
        await self._runner.cleanup()


def extender(url: str, **fields: Any) -> CompiledExtender:
    return CompiledExtender(url, filter_verb="filter", node_cache_capable=True, **fields)


async def call_filter(url: str, **fields: Any) -> Any:
    async with HttpExtenderClient() as client:
        return await client.filter(extender(url, **fields), parsed_pod("p"), NODES)


# -- redirects ---------------------------------------------------------------------------------


@pytest.fixture
async def elsewhere() -> AsyncIterator[Peer]:
    async def answer(request: web.Request) -> web.StreamResponse:
        return web.json_response(FILTERED)

    async with Peer(answer) as peer:
        yield peer


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
async def test_a_redirect_is_an_extender_error_and_is_not_followed(
    status: int, elsewhere: Peer
) -> None:
    async def redirect(request: web.Request) -> web.StreamResponse:
        return web.Response(status=status, headers={"Location": elsewhere.url + "/filter"})

    async with Peer(redirect) as peer:
        with pytest.raises(ExtenderError) as failed:
            await call_filter(peer.url)
    assert str(failed.value) == (
        f'extender "{peer.url}" filter failed: HTTP {status} from {peer.url}/filter: '
        f"a redirect to {elsewhere.url}/filter, not followed"
    )
    assert peer.received == ["/scheduler/filter"]
    assert elsewhere.received == []  # the pod's object went nowhere else


# -- replies too large ---------------------------------------------------------------------


SENT = web.AppKey("sent", list[int])


async def endless(request: web.Request) -> web.StreamResponse:
    """A 200 that never ends (chunked): JSON that is still open. Counts what it sent in
    the app's ``SENT`` list, if it has one."""
    response = web.StreamResponse(headers={"Content-Type": "application/json"})
    await response.prepare(request)
    await response.write(b'{"nodenames": ["' + b"n" * 1024)
    chunk = b"n" * 65536
    sent = request.app.get(SENT, [0])
    try:
        while True:
            await response.write(chunk)
            sent[0] += len(chunk)
    except ConnectionError:
        pass
    return response


def body_of(size: int) -> bytes:
    padding = b" " * (size - len(json.dumps(FILTERED)))
    return json.dumps(FILTERED).encode() + padding


async def declared_too_long(request: web.Request) -> web.StreamResponse:
    return web.Response(body=body_of(MAX_REPLY_BYTES + 1), content_type="application/json")


async def gzip_bomb(request: web.Request) -> web.StreamResponse:
    # 40 KiB on the wire, 50 MiB once decompressed.
    bomb = gzip.compress(b'{"nodenames": ["' + b" " * (50 * 1024 * 1024))
    return web.Response(
        body=bomb, headers={"Content-Type": "application/json", "Content-Encoding": "gzip"}
    )


@pytest.mark.parametrize(
    ("handler", "detail"),
    [
        pytest.param(
            declared_too_long,
            f"the reply is {MAX_REPLY_BYTES + 1} bytes, more than the 10 MiB read",
            id="content-length",
        ),
        pytest.param(endless, "the reply is longer than the 10 MiB read", id="endless-chunked"),
        pytest.param(gzip_bomb, "the reply is longer than the 10 MiB read", id="gzip-bomb"),
    ],
)
async def test_a_reply_over_10_mib_is_an_extender_error(handler: Handler, detail: str) -> None:
    async with Peer(handler) as peer:
        with pytest.raises(ExtenderError) as failed:
            await call_filter(peer.url, timeout=30.0)
    assert str(failed.value) == (
        f'extender "{peer.url}" filter failed: {detail} (from {peer.url}/filter)'
    )


async def test_a_reply_of_exactly_10_mib_is_read() -> None:
    async def at_the_limit(request: web.Request) -> web.StreamResponse:
        return web.Response(body=body_of(MAX_REPLY_BYTES), content_type="application/json")

    async with Peer(at_the_limit) as peer:
        reply = await call_filter(peer.url, timeout=30.0)
    assert reply.nodes == ("n1",)


async def test_reading_stops_at_the_limit() -> None:
    """The endless reply is abandoned, its connection closed: the extender could send
    little more than the limit and what the sockets buffer, not the rest."""
    sent = [0]
    async with Peer(endless, sent) as peer:
        with pytest.raises(ExtenderError):
            await call_filter(peer.url, timeout=30.0)
    assert MAX_REPLY_BYTES - 65536 <= sent[0] < MAX_REPLY_BYTES + 16 * 1024 * 1024


MEMORY_PROBE = textwrap.dedent(
    """
    import asyncio, json, sys
    from aiohttp import web
    from builders import parsed_node, parsed_pod
    from policy_scheduler.engine.extenders import CompiledExtender, ExtenderError
    from policy_scheduler.extending import HttpExtenderClient

    REPLY = 300 * 1024 * 1024
    CHUNK = b"n" * (1024 * 1024)  # one buffer, written 300 times: the server holds 1 MiB

    async def huge(request):
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        await response.write(b'{"nodenames": ["')
        try:
            for _ in range(REPLY // len(CHUNK)):
                await response.write(CHUNK)
        except ConnectionError:
            pass
        return response

    def peak_kib():
        # VmHWM is this process's own peak; ru_maxrss would carry the parent's peak
        # across exec (a pytest process of 500 MB made the probe report 515 MB).
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
        raise RuntimeError("no VmHWM in /proc/self/status")

    async def main():
        app = web.Application()
        app.router.add_post("/scheduler/{verb}", huge)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]
        target = CompiledExtender(
            f"http://127.0.0.1:{port}/scheduler", filter_verb="filter", timeout=60.0
        )
        async with HttpExtenderClient() as client:
            # One small call first: what the client itself costs is in the baseline.
            before = peak_kib()
            try:
                await client.filter(target, parsed_pod("p"), [parsed_node("n1")])
                outcome = "read"
            except ExtenderError as exc:
                outcome = str(exc)
            after = peak_kib()
        print(json.dumps({"before_kib": before, "after_kib": after, "outcome": outcome}))
        await runner.cleanup()

    asyncio.run(main())
    """
)


def test_a_300_mb_reply_leaves_the_memory_of_the_process_bounded() -> None:
    """Measured in a process of its own (VmHWM is the process's peak): reading the
    whole reply took the operator from 98 to 998 MB, twice the chart's memory limit."""
    done = subprocess.run(
        [sys.executable, "-c", MEMORY_PROBE],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": f"{ROOT / 'operator'}:{ROOT / 'tests'}", "PATH": "/usr/bin:/bin"},
        check=True,
    )
    probe = json.loads(done.stdout.strip().splitlines()[-1])
    grown_mib = (probe["after_kib"] - probe["before_kib"]) / 1024
    # The 10 MiB read, a copy of it, and aiohttp's buffers; never the 300 MB.
    assert grown_mib < 48, probe
    values = yaml.safe_load((ROOT / "charts/policy-scheduler/values.yaml").read_text())
    limit_mib = int(values["resources"]["limits"]["memory"].removesuffix("Mi"))
    assert probe["after_kib"] / 1024 < limit_mib
    assert "filter failed: the reply is longer than the 10 MiB read" in probe["outcome"]


# -- addresses at call time ------------------------------------------------------------------


async def test_a_name_resolving_to_a_metadata_address_is_refused_when_connecting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def resolve(self: Any, host: str, port: int = 0, family: int = 0) -> list[Any]:
        address = "169.254.169.254" if host == "imds-alias.test" else "127.0.0.1"
        return [
            {"hostname": host, "host": address, "port": port, "family": 2, "proto": 0, "flags": 0}
        ]

    monkeypatch.setattr(aiohttp.ThreadedResolver, "resolve", resolve)
    with pytest.raises(ExtenderError) as failed:
        await call_filter("http://imds-alias.test:80/scheduler")
    assert "imds-alias.test resolves to 169.254.169.254, a link-local or cloud metadata " in str(
        failed.value
    )
    assert "allowMetadataAddresses: true" in str(failed.value)


async def test_a_name_resolving_to_a_metadata_address_is_reached_when_allowed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def answer(request: web.Request) -> web.StreamResponse:
        return web.json_response(FILTERED)

    async with Peer(answer) as peer:
        port = int(peer.url.split(":")[2].split("/")[0])
        seen: list[str] = []
        real = aiohttp.DefaultResolver.resolve

        async def resolve(self: Any, host: str, port: int = 0, family: int = 0) -> list[Any]:
            seen.append(host)
            return await real(self, "127.0.0.1", port, family)

        monkeypatch.setattr(aiohttp.DefaultResolver, "resolve", resolve)
        reply = await call_filter(
            f"http://imds-alias.test:{port}/scheduler", allow_metadata_addresses=True
        )
    assert reply.nodes == ("n1",)
    assert seen == ["imds-alias.test"]


async def test_a_metadata_address_is_refused_before_any_call_even_unvalidated() -> None:
    with pytest.raises(ExtenderError) as failed:
        await call_filter("http://169.254.169.254/latest")
    assert str(failed.value) == (
        'extender "http://169.254.169.254/latest" filter failed: urlPrefix '
        '"http://169.254.169.254/latest"' + METADATA
    )
