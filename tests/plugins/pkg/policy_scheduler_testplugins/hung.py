"""A plugin whose import hangs while the file named by the environment variable
``POLICY_SCHEDULER_TEST_HANG_FILE`` exists (the test removes it at teardown; 90 s at most
in any case), then imports as a plugin that lets every pod through. Without the variable
it imports at once."""

from __future__ import annotations

import os
import time
from pathlib import Path

from policy_scheduler.framework import CycleState, FilterPlugin, NodeInfoView, Pod, Status

_HOLD = os.environ.get("POLICY_SCHEDULER_TEST_HANG_FILE")
_GIVE_UP = time.monotonic() + 90
while _HOLD and Path(_HOLD).exists() and time.monotonic() < _GIVE_UP:
    time.sleep(0.05)


class HungImport(FilterPlugin):
    """Lets every pod through, once its module has imported."""

    name = "TestHungImport"

    def filter(self, state: CycleState, pod: Pod, node: NodeInfoView) -> Status | None:
        return None
