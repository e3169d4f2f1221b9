"""The small HTTP servers beside the scheduler: ``/metrics``, ``/healthz`` and ``/readyz``.

One way to start them, so both behave alike: they listen before :func:`serve_get`
returns (a port already in use fails the start with :class:`ListenError`, naming the
server, not a later request), they log no access lines, they leave signals to Kopf, and
stopping them waits at most a second for open connections, so a Prometheus scrape in
flight never holds up a shutdown.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


async def serve_get(
    routes: Mapping[str, Handler], host: str, port: int
) -> Callable[[], Awaitable[None]]:
    """Serve ``GET path`` with each handler on host:port; returns what stops the server."""
    app = web.Application()
    for path, handler in routes.items():
        app.router.add_get(path, handler)
    runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=1.0)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
    except OSError as exc:
        await runner.cleanup()
        paths = ", ".join(routes)
        why = os.strerror(exc.errno) if exc.errno else str(exc)
        raise ListenError(exc.errno, f"cannot serve {paths} on {host}:{port}: {why}") from None
    except BaseException:
        await runner.cleanup()
        raise
    return runner.cleanup


class ListenError(OSError):
    """A server that could not listen (port in use, address not here): says which."""

    def __str__(self) -> str:
        return str(self.strerror)
