"""The HTTP extender client against real servers on 127.0.0.1: calls, failures, TLS."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from builders import node, parsed_node, parsed_pod, pod
from extender_server import HANG, ExtenderServer, Raw, TlsFiles, keep, score, tls_files
from policy_scheduler.engine.extenders import (
    CompiledExtender,
    ExtenderError,
    ExtenderTLS,
    FilterReply,
    MetaVictims,
    Victims,
)
from policy_scheduler.extending import HttpExtenderClient, call_url
from policy_scheduler.objects import parse_pod

NODES = [parsed_node("n1"), parsed_node("n2")]


def extender(url: str, **fields: Any) -> CompiledExtender:
    return CompiledExtender(url, filter_verb="filter", prioritize_verb="prioritize", **fields)


@pytest.fixture
def server() -> Iterator[ExtenderServer]:
    routes = {
        "filter": keep(lambda n: "full" if n == "n2" else None),
        "prioritize": score({"n1": 3, "n2": 7}),
        "bind": lambda received: {},
    }
    with ExtenderServer(routes) as running:
        yield running


async def test_filter_prioritize_and_bind_over_http(server: ExtenderServer) -> None:
    calls: list[tuple[str, str, str]] = []
    target = extender(server.url, bind_verb="bind")
    pod = parsed_pod("p")
    async with HttpExtenderClient(observe=lambda u, v, r, s: calls.append((u, v, r))) as client:
        reply = await client.filter(target, pod, NODES)
        ranked = await client.prioritize(target, pod, NODES)
        await client.bind(target, pod, "n1")
    assert reply == FilterReply(("n1",), {"n2": "full"})
    assert ranked == [("n1", 3), ("n2", 7)]
    assert server.verbs() == ["filter", "prioritize", "bind"]
    assert all(r.headers["Content-Type"] == "application/json" for r in server.received)
    assert server.received[0].node_names == ["n1", "n2"]
    assert server.received[2].args == {
        "podname": "p",
        "podnamespace": "default",
        "poduid": pod.uid,
        "node": "n1",
    }
    assert calls == [
        (server.url, "filter", "success"),
        (server.url, "prioritize", "success"),
        (server.url, "bind", "success"),
    ]


async def test_one_connection_is_kept_for_an_extender(server: ExtenderServer) -> None:
    async with HttpExtenderClient() as client:
        for _ in range(3):
            await client.filter(extender(server.url), parsed_pod("p"), NODES)
    assert len({r.peer for r in server.received}) == 1


async def test_trailing_slashes_of_the_prefix_are_dropped(server: ExtenderServer) -> None:
    async with HttpExtenderClient() as client:
        await client.filter(extender(server.url + "//"), parsed_pod("p"), NODES)
    assert server.verbs() == ["filter"]


@pytest.mark.parametrize(
    ("prefix", "verb", "url"),
    [
        pytest.param("http://x/s", "filter", "http://x/s/filter", id="plain"),
        pytest.param("http://x/s//", "filter", "http://x/s/filter", id="trailing-slashes"),
        pytest.param("http://x:8888", "filter", "http://x:8888/filter", id="no-path"),
        # Upstream joined with one slash whatever the verb: these keep their double slash.
        pytest.param("http://x/s", "/", "http://x/s//", id="slash-verb"),
        pytest.param("http://x/s/", "/filter", "http://x/s//filter", id="verb-with-slash"),
    ],
)
def test_the_url_of_a_call_is_upstreams(prefix: str, verb: str, url: str) -> None:
    assert call_url(prefix, verb) == url


def failing(reply: Any) -> dict[str, Any]:
    return {"filter": lambda received: reply}


@pytest.mark.parametrize(
    ("routes", "detail"),
    [
        pytest.param(
            failing(Raw(500, b"panic: nil map\n")),
            "HTTP 500 from {url}/filter: panic: nil map",
            id="500",
        ),
        pytest.param(failing(Raw(404)), "HTTP 404 from {url}/filter", id="404"),
        pytest.param(
            failing({"error": "GPU inventory unavailable"}),
            "GPU inventory unavailable",
            id="error-field",
        ),
        pytest.param(
            failing(Raw(200, b"OK")),
            "the reply is not JSON: Expecting value: line 1 column 1 (char 0) (from {url}/filter)",
            id="bad-json",
        ),
        pytest.param(failing(HANG), "no reply from {url}/filter within 0.2s", id="hung"),
    ],
)
async def test_failures_name_the_extender(routes: dict[str, Any], detail: str) -> None:
    with ExtenderServer(routes) as server:
        seen: list[str] = []
        async with HttpExtenderClient(observe=lambda u, v, r, s: seen.append(r)) as client:
            with pytest.raises(ExtenderError) as info:
                await client.filter(extender(server.url, timeout=0.2), parsed_pod("p"), NODES)
    assert str(info.value) == f'extender "{server.url}" filter failed: ' + detail.format(
        url=server.url
    )
    assert seen == ["error"]


async def test_an_extender_nobody_listens_to() -> None:
    with ExtenderServer({}) as server:
        url = server.url
    async with HttpExtenderClient() as client:
        with pytest.raises(ExtenderError) as info:
            await client.filter(extender(url), parsed_pod("p"), NODES)
    assert str(info.value).startswith(
        f'extender "{url}" filter failed: {url}/filter: Cannot connect'
    )


# -- TLS -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return tls_files(tmp_path_factory.mktemp("tls"))


def b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


@pytest.mark.parametrize(
    ("settings", "https", "client_cert", "fails_with"),
    [
        pytest.param(lambda t: ExtenderTLS(ca_data=b64(t.ca)), False, False, None, id="caData"),
        pytest.param(lambda t: ExtenderTLS(ca_file=str(t.ca)), False, False, None, id="caFile"),
        pytest.param(lambda t: None, False, False, "certificate verify failed", id="unknown-ca"),
        pytest.param(lambda t: None, True, False, None, id="enableHTTPS-without-ca-skips-verify"),
        pytest.param(lambda t: ExtenderTLS(insecure=True), False, False, None, id="insecure"),
        pytest.param(
            lambda t: ExtenderTLS(ca_file=str(t.ca), server_name="extender.test"),
            False, False, None, id="serverName",
        ),
        pytest.param(
            lambda t: ExtenderTLS(ca_file=str(t.ca), server_name="elsewhere.test"),
            False, False, "certificate verify failed", id="serverName-mismatch",
        ),
        pytest.param(
            lambda t: ExtenderTLS(
                ca_data=b64(t.ca), cert_data=b64(t.client_cert), key_data=b64(t.client_key)
            ),
            False, True, None, id="client-cert-data",
        ),
        pytest.param(
            lambda t: ExtenderTLS(
                ca_file=str(t.ca), cert_file=str(t.client_cert), key_file=str(t.client_key)
            ),
            False, True, None, id="client-cert-files",
        ),
        pytest.param(
            lambda t: ExtenderTLS(ca_file=str(t.ca)), False, True, "", id="client-cert-missing"
        ),
        pytest.param(
            lambda t: ExtenderTLS(ca_file=str(t.ca) + ".missing"),
            False, False, "its TLS settings do not load: [Errno 2]", id="ca-file-missing",
        ),
    ],
)  # fmt: skip
async def test_tls(
    tls: TlsFiles, settings: Any, https: bool, client_cert: bool, fails_with: str | None
) -> None:
    context = tls.server_context(require_client_cert=client_cert)
    with ExtenderServer({"filter": keep(lambda n: None)}, ssl_context=context) as server:
        target = extender(server.url, tls=settings(tls), enable_https=https)
        async with HttpExtenderClient() as client:
            if fails_with is None:
                reply = await client.filter(target, parsed_pod("p"), NODES)
                assert reply.nodes == ("n1", "n2")
            else:
                with pytest.raises(ExtenderError) as info:
                    await client.filter(target, parsed_pod("p"), NODES)
                assert str(info.value).startswith(f'extender "{server.url}" filter failed: ')
                assert fails_with in str(info.value)


async def test_nodes_are_sent_whole(server: ExtenderServer) -> None:
    raw = node("n1", labels={"gpu": "a100"})
    async with HttpExtenderClient() as client:
        await client.filter(
            extender(server.url), parsed_pod("p"), [parsed_node("n1", labels={"gpu": "a100"})]
        )
    assert server.received[0].nodes == [raw]


async def test_preempt_over_http() -> None:
    victim = parse_pod(pod("small", node_name="n1"))
    routes = {
        "preempt": lambda received: {
            "NodeNameToMetaVictims": {"n1": {"Pods": [{"UID": victim.uid}], "NumPDBViolations": 1}}
        }
    }
    with ExtenderServer(routes) as server:
        target = CompiledExtender(server.url, preempt_verb="preempt", node_cache_capable=True)
        async with HttpExtenderClient() as client:
            kept = await client.preempt(target, parsed_pod("big"), {"n1": Victims((victim,))})
    assert kept == {"n1": MetaVictims((victim.uid,), 1)}
    assert server.received[0].args["nodenametometavictims"] == {
        "n1": {"pods": [{"uid": victim.uid}], "numPDBViolations": 0}
    }
