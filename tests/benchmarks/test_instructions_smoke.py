"""The instruction-count A/B runs: its one-run script decides a small cluster's pods from
the checkout it is started in, and the driver script parses (valgrind itself is not run
here: minutes per side)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_one_run_builds_the_cluster_and_decides_the_pods() -> None:
    env = {**os.environ, "PYTHONPATH": "operator"}
    for pods in ("0", "3"):
        done = subprocess.run(
            [sys.executable, "benchmarks/instructions_run.py", "30", pods, "basic"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr


def test_the_driver_script_parses_and_says_what_it_needs() -> None:
    assert subprocess.run(["bash", "-n", "benchmarks/instructions_ab.sh"], cwd=ROOT).returncode == 0
    refused = subprocess.run(
        ["bash", "benchmarks/instructions_ab.sh"], cwd=ROOT, capture_output=True, text=True
    )
    assert refused.returncode != 0
    assert "a worktree of the commit to compare with" in refused.stderr
