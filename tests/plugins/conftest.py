"""Fixtures of the plugin tests: the plugin packages installed with pip, the e2e harness.

The sample plugin (``examples/plugins/sample``) and the test-only plugins
(``tests/plugins/pkg``) are installed with the project, as the README's test command
installs them (``pip install -e '.[dev]' -e examples/plugins/sample -e
tests/plugins/pkg``); this conftest only checks that they are, before the test modules
that import them are collected, and says what to run when they are not. Every test here
finds them by entry point, as the scheduler finds any third-party plugin. ``made``
(autouse) resets the test plugins' records. The operator tests reuse the e2e fixtures
(the emulator, a namespace, a kubeconfig) and, as every e2e test, run in real time.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from e2e.conftest import (  # noqa: F401  (fixtures, used by name)
    _emulator_server,
    emulator,
    kubeconfig,
    namespace,
    policy_validator,
    watch_window,
)
from plugins.installing import SAMPLE, TEST_PLUGINS, require_installed

E2E_TESTS = Path(__file__).parent / "test_operator.py"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if Path(str(item.path)) == E2E_TESTS:
            item.add_marker(pytest.mark.looptime(False))


require_installed(SAMPLE, TEST_PLUGINS)


@pytest.fixture(autouse=True)
def made() -> Iterator[None]:
    import policy_scheduler_testplugins

    policy_scheduler_testplugins.reset()
    yield
