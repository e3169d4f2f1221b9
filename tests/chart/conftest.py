"""Fixtures of the chart and CRD tests; the checks themselves are in ``crdcheck``."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from chart.crdcheck import Errors, validate_object
from policy_scheduler.crd import build_crd


@pytest.fixture(scope="session")
def crd() -> dict[str, Any]:
    return build_crd()


@pytest.fixture(scope="session")
def crd_errors(crd: dict[str, Any]) -> Callable[[dict[str, Any]], Errors]:
    def check(obj: dict[str, Any]) -> Errors:
        return validate_object(copy.deepcopy(crd), obj)

    return check
