"""What ``GET /healthz`` and ``GET /readyz`` answer: is every part of the scheduler working?

A liveness probe that says 200 while nothing schedules is worse than none: the pod is
never restarted. :class:`Health` therefore knows the parts that must keep running and
answers 503 (with the reasons, as JSON) as soon as one of them is not:

* **supervised tasks** (:meth:`Health.supervise`): leader election, the policy status
  refresher, housekeeping, the resync; a supervised task that ends or raises is dead,
  and reported so, with its error, until the process restarts;
* **the scheduling loop** (:meth:`Health.loop_started` / :meth:`Health.attempt_started`
  / :meth:`Health.attempt_finished`): while this replica leads, the loop task must be
  alive and no single attempt may run for longer than ``stuck_after`` seconds (every
  API call has a deadline, so an attempt that long means something hangs);
* ``/readyz`` adds one condition: the leader is not ready while it LISTs the cluster
  before its first decision (a slow or failing LIST is retried, and is not a reason to
  restart the process, so ``/healthz`` stays 200 meanwhile).

Everything else (a standby replica, an empty queue) is healthy and ready.

The endpoints are served from a thread of their own, with its own event loop
(:meth:`Health.serve`), as kube-scheduler answers health on its own goroutine: a
scheduling cycle that holds the operator's loop (a slow synchronous plugin: a Filter
taking 1 s a node) does not make ``/healthz`` time out. What they answer is read from
the loop's state (plain attributes and finished tasks, read only): an attempt running
past ``stuck_after`` is still reported, by the clock, while it runs.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from aiohttp import web

from .serving import serve_get

logger = logging.getLogger(__name__)

DEFAULT_STUCK_AFTER = 120.0


class Health:
    """The state of the scheduler's moving parts, and the ``/healthz`` endpoint."""

    def __init__(
        self,
        *,
        stuck_after: float = DEFAULT_STUCK_AFTER,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stuck_after = stuck_after
        self.clock = clock
        self._tasks: dict[str, asyncio.Task[Any]] = {}
        self._dead: dict[str, str] = {}
        self._loop: asyncio.Task[Any] | None = None
        self._attempt_since: float | None = None
        #: The leader is listing the cluster before its first decision.
        self.listing = False

    # -- what the operator tells it --------------------------------------------------------

    def supervise(self, name: str, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Run ``coro`` as a task that must never end while the operator runs."""
        task = asyncio.create_task(coro, name=name)
        self._tasks[name] = task
        self._dead.pop(name, None)
        task.add_done_callback(lambda done: self._ended(name, done))
        return task

    def _ended(self, name: str, task: asyncio.Task[Any]) -> None:
        if self._tasks.get(name) is not task:
            return  # replaced meanwhile
        if task.cancelled():
            self._tasks.pop(name, None)
            return  # stopped on purpose (shutdown)
        error = task.exception()
        why = f"{type(error).__name__}: {error}" if error is not None else "it returned"
        self._dead[name] = why
        logger.error("%s stopped: %s", name, why, exc_info=error)

    def tasks(self) -> list[asyncio.Task[Any]]:
        """The supervised tasks (to cancel them at shutdown)."""
        return list(self._tasks.values())

    def forget(self, name: str) -> None:
        """A supervised task stopped on purpose."""
        self._tasks.pop(name, None)
        self._dead.pop(name, None)

    def loop_started(self, task: asyncio.Task[Any] | None) -> None:
        """The scheduling loop task while leading; None when not leading."""
        self._loop = task
        self._attempt_since = None

    def attempt_started(self) -> None:
        self._attempt_since = self.clock()

    def attempt_finished(self) -> None:
        self._attempt_since = None

    # -- what it answers ---------------------------------------------------------------------

    def problems(self, *, readiness: bool = False) -> list[str]:
        """Why the scheduler is not alive (or, with ``readiness``, not ready); [] if it is."""
        out = [f"{name} stopped: {why}" for name, why in sorted(self._dead.items())]
        if readiness and self.listing:
            out.append("listing the cluster before the first decision")
        loop = self._loop
        if loop is not None and loop.done() and not loop.cancelled():
            error = loop.exception()
            out.append(f"the scheduling loop stopped: {error!r}")
        since = self._attempt_since
        if since is not None and self.clock() - since > self.stuck_after:
            out.append(
                f"a scheduling attempt has been running for {self.clock() - since:.0f} s "
                f"(more than {self.stuck_after:.0f} s)"
            )
        return out

    async def _handle(self, request: web.Request) -> web.Response:
        problems = self.problems(readiness=request.path == "/readyz")
        body = {"status": "ok" if not problems else "failing", "problems": problems}
        return web.Response(
            status=200 if not problems else 503,
            text=json.dumps(body),
            content_type="application/json",
        )

    async def serve(self, host: str, port: int) -> Callable[[], Awaitable[None]]:
        """Serve ``/healthz`` and ``/readyz`` on host:port, from a thread of their own
        with its own event loop (see the module doc); returns what stops them."""
        started: concurrent.futures.Future[Callable[[], Awaitable[None]]] = (
            concurrent.futures.Future()
        )
        loop = asyncio.new_event_loop()

        def run() -> None:
            asyncio.set_event_loop(loop)
            try:
                routes = {"/healthz": self._handle, "/readyz": self._handle}
                stop = loop.run_until_complete(serve_get(routes, host, port))
            except BaseException as exc:
                started.set_exception(exc)
                loop.close()
                return
            started.set_result(stop)
            try:
                loop.run_forever()
                loop.run_until_complete(stop())
            finally:
                loop.close()

        thread = threading.Thread(target=run, name="health-server", daemon=True)
        thread.start()
        await asyncio.wrap_future(started)

        async def stop() -> None:
            loop.call_soon_threadsafe(loop.stop)
            await asyncio.to_thread(thread.join, 5.0)

        return stop
