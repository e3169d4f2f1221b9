"""``policy-scheduler run`` runs on uvloop's event loop when it is installed (a dependency
on Linux), as ``kopf run`` does, and on asyncio's own loop when it is not."""

from __future__ import annotations

import asyncio
import sys

import pytest
import uvloop

from policy_scheduler.operating import run_loop


async def loop_type() -> type[asyncio.AbstractEventLoop]:
    return type(asyncio.get_running_loop())


def test_the_operator_runs_on_uvloop() -> None:
    assert issubclass(run_loop(loop_type()), uvloop.Loop)


def test_without_uvloop_the_operator_runs_on_asyncios_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)  # import uvloop raises ImportError
    found = run_loop(loop_type())
    assert not issubclass(found, uvloop.Loop)
    assert issubclass(found, asyncio.BaseEventLoop)


def test_run_loop_returns_what_the_coroutine_returns_and_closes_its_loop() -> None:
    async def main() -> tuple[str, asyncio.AbstractEventLoop]:
        return "done", asyncio.get_running_loop()

    result, loop = run_loop(main())
    assert result == "done"
    assert loop.is_closed()
