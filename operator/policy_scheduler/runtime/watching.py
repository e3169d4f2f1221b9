"""Kopf's watch streams, made to survive the errors a real API server sends.

Kopf restarts a watch stream after "410 Gone", but raises on any other ``ERROR`` event
in the stream (``kopf._cogs.clients.watching.continuous_watch``), and on a LIST that
still fails after its own retries (a 5xx for a minute), which ends the watcher and
stops the operator: one transient etcd error on one watch, and the scheduler goes
down. client-go's reflector, which kube-scheduler's informers run on, logs such an
error and starts over with a fresh LIST. :func:`survive_watch_errors` gives Kopf the
same behaviour: it wraps ``continuous_watch`` so that such an error ends the stream
quietly (with a warning in the log); Kopf's ``infinite_watch`` then waits
``settings.watching.reconnect_backoff`` and starts over with a LIST, whose items reach
the handlers as events of type ``None`` (the runtime reconciles its cache after such a
re-list: deletions missed meanwhile are caught there).

This touches a private Kopf function, on purpose and in one place; the version range of
Kopf in ``pyproject.toml`` is bounded, and ``tests/e2e`` run a watch ``ERROR`` through
the real operator, so an incompatible Kopf release fails the tests, not a cluster.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

from kopf._cogs.clients import errors, watching

logger = logging.getLogger(__name__)

_MARK = "_policy_scheduler_survives"


def survive_watch_errors() -> None:
    """Install the wrapper (once; calling again changes nothing)."""
    original = watching.continuous_watch
    if getattr(original, _MARK, False):
        return

    async def continuous_watch(**kwargs: Any) -> AsyncIterator[Any]:
        try:
            async for event in original(**kwargs):
                yield event
        except (watching.WatchingError, errors.APIError) as exc:
            logger.warning(
                "watch of %s failed (%s); starting over with a fresh list",
                kwargs.get("resource"),
                exc,
            )

    setattr(continuous_watch, _MARK, True)
    watching.continuous_watch = continuous_watch
