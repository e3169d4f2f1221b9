"""Fixtures of the gang-scheduling tests: the fake API and the fake clock."""

from __future__ import annotations

import pytest

from fakes import FakeApi, FakeClock


@pytest.fixture
def api() -> FakeApi:
    return FakeApi()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()
