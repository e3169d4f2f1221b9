"""Chunked evaluation with bounded concurrency, kube-scheduler's ParallelizeUntil in asyncio.

kube-scheduler checks nodes with ``workqueue.ParallelizeUntil(ctx, 16, n, checkNode)``:
16 goroutines take pieces until the work is done or cancelled. Here the pieces are
chunks of consecutive indexes handed out in order to ``workers`` coroutines; each chunk
runs synchronously (the predicates are pure, CPU-bound functions: threads would only
add GIL contention) and every worker yields to the event loop after each chunk, so the
operator's watches and bindings keep flowing while a large cluster is evaluated.

Because chunks are taken in index order and each one completes before the next starts,
the outcome equals a sequential visit: deterministic, and stopping early (``work``
returning False) stops exactly where a single-threaded scheduler would.
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
    if pieces <= chunk_size:
        # One chunk: no worker pool, no extra turn of the event loop.
        work(0, pieces)
        return
    state = {"next": 0, "stop": False}

    async def worker() -> None:
        while not state["stop"]:
            lo = state["next"]
            if lo >= pieces:
                return
            hi = min(lo + chunk_size, pieces)
            state["next"] = hi
            if not work(lo, hi):
                state["stop"] = True
                return
            await asyncio.sleep(0)

    count = min(workers, (pieces + chunk_size - 1) // chunk_size)
    await asyncio.gather(*(worker() for _ in range(count)))
