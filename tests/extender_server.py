"""A scriptable HTTP scheduler extender for tests: a real aiohttp server on 127.0.0.1.

:class:`ExtenderServer` serves ``POST <prefix>/<verb>`` from a thread of its own (with its
own event loop), so engine tests, the CLI (which runs ``asyncio.run`` itself) and the
operator (in its own thread) can all reach it. Each verb is answered by a function of the
:class:`Received` request returning the reply (directly or as an awaitable): a
JSON-able value (200), a :class:`Raw` status and body, or :data:`HANG` (never answers:
a hung extender). Every request is recorded in ``received``, in arrival order, with its
raw bytes.

:class:`Received` reads the request as a Go extender would, keys case-insensitively
(``pod`` / ``Pod``), so the handlers here do not depend on the spelling; tests of the
spelling itself read ``received[i].body``.

:func:`tls_files` makes a throwaway CA, a server certificate for ``127.0.0.1`` and
``extender.test``, and a client certificate, with the ``openssl`` command (the
``cryptography`` package is not a dependency).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import ssl
import subprocess
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web


def folded(value: Any) -> dict[str, Any]:
    """An object's keys lower-cased (Go's case-insensitive field match), {} for null."""
    return {k.casefold(): v for k, v in (value or {}).items()}


@dataclass
class Received:
    """One request as the extender received it."""

    verb: str
    body: bytes
    headers: Mapping[str, str]
    #: The client's (host, port): equal for requests over one kept-alive connection.
    peer: tuple[str, int] = ("", 0)

    @property
    def args(self) -> dict[str, Any]:
        return folded(json.loads(self.body))

    @property
    def pod_name(self) -> str:
        return str(folded(self.args["pod"]["metadata"])["name"])

    @property
    def node_names(self) -> list[str]:
        """NodeNames when sent, else the names of Nodes.items."""
        args = self.args
        if args.get("nodenames") is not None:
            return list(args["nodenames"])
        return [item["metadata"]["name"] for item in args["nodes"]["items"]]

    @property
    def nodes(self) -> list[dict[str, Any]]:
        return list(self.args["nodes"]["items"])


@dataclass
class Raw:
    """A reply given as it goes on the wire."""

    status: int
    body: bytes = b""


HANG = object()

Handler = Callable[[Received], Any]


@dataclass
class ExtenderServer:
    """An extender at ``url`` (its urlPrefix) answering ``routes[verb]``."""

    routes: dict[str, Handler]
    prefix: str = "/scheduler"
    ssl_context: ssl.SSLContext | None = None
    received: list[Received] = field(default_factory=list)
    port: int = 0
    _loop: asyncio.AbstractEventLoop | None = None
    _thread: threading.Thread | None = None
    _runner: web.AppRunner | None = None
    _hung: asyncio.Event | None = None

    @property
    def url(self) -> str:
        scheme = "https" if self.ssl_context is not None else "http"
        return f"{scheme}://127.0.0.1:{self.port}{self.prefix}"

    def verbs(self) -> list[str]:
        return [r.verb for r in self.received]

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        verb = request.match_info["verb"]
        peer = request.transport.get_extra_info("peername") if request.transport else None
        received = Received(
            verb, await request.read(), dict(request.headers), tuple(peer or ("", 0))
        )
        self.received.append(received)
        handler = self.routes.get(verb)
        if handler is None:
            return web.Response(status=404, text=f"no verb {verb}")
        reply = handler(received)
        if inspect.isawaitable(reply):
            reply = await reply
        if reply is HANG:
            assert self._hung is not None
            await self._hung.wait()  # until the server stops
            return web.Response(status=503)
        if isinstance(reply, Raw):
            return web.Response(status=reply.status, body=reply.body)
        return web.Response(body=json.dumps(reply).encode(), content_type="application/json")

    async def _start(self) -> None:
        self._hung = asyncio.Event()
        app = web.Application()
        app.router.add_post(self.prefix + "/{verb}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=self.ssl_context)
        await site.start()
        server = site._server
        assert server is not None
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]

    async def _stop(self) -> None:
        assert self._hung is not None and self._runner is not None
        self._hung.set()
        await self._runner.cleanup()

    def start(self) -> ExtenderServer:
        self._loop = asyncio.new_event_loop()
        started = threading.Event()

        def run() -> None:
            assert self._loop is not None
            asyncio.set_event_loop(self._loop)
            self._loop.run_until_complete(self._start())
            started.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, name="extender", daemon=True)
        self._thread.start()
        if not started.wait(10):
            raise TimeoutError("the extender did not start")
        return self

    def stop(self) -> None:
        assert self._loop is not None and self._thread is not None
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def __enter__(self) -> ExtenderServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# -- ready-made handlers -------------------------------------------------------------


def keep(decide: Callable[[str], str | None], *, names: bool | None = None) -> Handler:
    """A filter: ``decide(node name)`` gives None to pass the node, else the reason.

    Replies as a Go extender on the versioned types: ``nodenames`` for a request that sent
    NodeNames (``names`` forces either), else ``nodes`` with the items it was sent.
    """

    def handle(received: Received) -> Any:
        args = received.args
        by_names = args.get("nodenames") is not None if names is None else names
        failed = {n: why for n in received.node_names if (why := decide(n)) is not None}
        if by_names:
            return {
                "nodenames": [n for n in received.node_names if n not in failed],
                "failedNodes": failed,
                "error": "",
            }
        items = [i for i in received.nodes if i["metadata"]["name"] not in failed]
        return {"nodes": {"metadata": {}, "items": items}, "failedNodes": failed, "error": ""}

    return handle


def score(scores: Mapping[str, int]) -> Handler:
    """A prioritizer: each node it was sent, scored from ``scores`` (0 when absent)."""
    return lambda received: [{"host": n, "score": scores.get(n, 0)} for n in received.node_names]


# -- TLS -----------------------------------------------------------------------------


@dataclass(frozen=True)
class TlsFiles:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path

    def server_context(self, *, require_client_cert: bool = False) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.server_cert, self.server_key)
        if require_client_cert:
            context.verify_mode = ssl.CERT_REQUIRED
            context.load_verify_locations(self.ca)
        return context


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def tls_files(folder: Path) -> TlsFiles:
    """A self-signed CA and two certificates it signed (module docstring)."""
    ca, ca_key = folder / "ca.pem", folder / "ca-key.pem"
    _openssl(
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
        "-subj", "/CN=test extender CA", "-keyout", str(ca_key), "-out", str(ca),
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign",
    )  # fmt: skip

    def issue(name: str, extensions: str) -> tuple[Path, Path]:
        key, csr, cert = folder / f"{name}-key.pem", folder / f"{name}.csr", folder / f"{name}.pem"
        ext = folder / f"{name}.ext"
        ext.write_text(extensions)
        _openssl(
            "req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}",
            "-keyout", str(key), "-out", str(csr),
        )  # fmt: skip
        _openssl(
            "x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key),
            "-CAcreateserial", "-days", "2", "-out", str(cert), "-extfile", str(ext),
        )  # fmt: skip
        return cert, key

    server_cert, server_key = issue(
        "server",
        "subjectAltName=IP:127.0.0.1,DNS:extender.test\nextendedKeyUsage=serverAuth\n",
    )
    client_cert, client_key = issue("client", "extendedKeyUsage=clientAuth\n")
    return TlsFiles(ca, server_cert, server_key, client_cert, client_key)
