"""Waiting on a condition in async tests: on the loop's clock, with a deadline.

A test waits for what it needs to see (a binding, an assumed pod), never a counted number
of loop turns or a fixed sleep: a slower machine, or one more ``await`` in the code under
test, must not turn a correct change into a failure, and a broken one fails at the
deadline with what it waited for. With looptime the deadline costs no real time.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable


async def until(condition: Callable[[], object], what: str = "", timeout: float = 10.0) -> None:
    """Return once ``condition()`` is true; fail after ``timeout`` seconds of the loop."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, f"still waiting for {what or 'the condition'}"
        await asyncio.sleep(0.005)
