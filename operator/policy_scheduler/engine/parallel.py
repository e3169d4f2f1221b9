"""Chunked evaluation that yields to the event loop, kube-scheduler's ParallelizeUntil in asyncio.

kube-scheduler checks nodes with ``workqueue.ParallelizeUntil(ctx, 16, n, checkNode)``:
16 goroutines take pieces until the work is done or cancelled. Here the predicates are
pure, CPU-bound functions under one GIL, so threads or several coroutines would only add
contention and scheduling overhead: the pieces are chunks of consecutive indexes run in
index order by one coroutine, which yields to the event loop after every chunk, so the
operator's watches and bindings keep flowing while a large cluster is evaluated.

Because chunks run in index order and each one completes before the next starts, the
outcome is a sequential visit: deterministic, and stopping early (``work`` returning
False) stops exactly where a single-threaded scheduler would. ``workers`` is accepted for
the shape of the upstream call; since chunks never overlap it cannot change the outcome,
and one worker is what runs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable


async def parallelize_until(
    pieces: int,
    work: Callable[[int, int], bool],
    *,
    chunk_size: int = 64,
    workers: int = 16,
) -> None:
    """Run ``work(lo, hi)`` over ``range(pieces)`` in chunks until done or it returns False."""
    if pieces <= 0:
        return
    chunk_size = max(1, chunk_size)
    lo = 0
    while lo < pieces:
        hi = min(lo + chunk_size, pieces)
        if not work(lo, hi):
            return
        lo = hi
        if lo < pieces:
            # Let the watches and bindings run between chunks.
            await asyncio.sleep(0)
