"""The small HTTP servers beside the scheduler: ``/metrics``, ``/healthz`` and ``/readyz``.

One way to start them, so both behave alike: they listen before :func:`serve_get`
returns (a port already in use fails the start, not a later request), they log no access
lines, they leave signals to Kopf, and stopping them waits at most a second for open
connections, so a Prometheus scrape in flight never holds up a shutdown.
"""

from __future__ import annotations

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
    except BaseException:
        await runner.cleanup()
        raise
    return runner.cleanup
