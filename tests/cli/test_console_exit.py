"""The console script's simulate ends the process itself, with all of its output out.

``policy-scheduler simulate`` (and ``python -m policy_scheduler.cli``) flushes its output
and leaves with ``os._exit`` instead of freeing the loaded cluster object by object;
``main()`` called in a process that goes on returns as always. Both must print the
same, and a failed final write must still be a clean error.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from builders import node
from builders import pod as any_pod
from policy_scheduler.cli import main

ROOT = Path(__file__).resolve().parents[2]


def pod(name: str, **kwargs: Any) -> dict[str, Any]:
    kwargs.setdefault("schedulerName", "policy-scheduler")
    return any_pod(name, **kwargs)


def cluster_file(tmp_path: Path) -> str:
    docs = [node("big", cpu="8", memory="16Gi"), node("tiny", cpu="1", memory="1Gi")]
    docs += [pod(f"p{i}", requests={"cpu": "500m"}) for i in range(5)]
    docs.append(pod("huge", requests={"cpu": "64"}))  # fits nowhere: a tally of 5/6
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


def console(
    *argv: str, stdout: Any = subprocess.PIPE, buffered: bool = True
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "operator"))
    env.pop("PYTHONUNBUFFERED", None)  # buffered, as a terminal-less run is by default
    if not buffered:
        env["PYTHONUNBUFFERED"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "policy_scheduler.cli", *argv],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        timeout=120,
    )


@pytest.mark.parametrize(
    "output",
    [
        pytest.param(["-o", "summary"], id="summary"),
        pytest.param(["-o", "json"], id="json"),
        pytest.param(["-o", "json", "--detail", "none"], id="json-detail-none"),
        pytest.param([], id="table"),
    ],
)
def test_the_console_prints_what_main_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], output: list[str]
) -> None:
    argv = ["simulate", "-f", cluster_file(tmp_path), *output]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    done = console(*argv)
    assert done.returncode == 0, done.stderr
    assert done.stdout == out
    assert done.stderr == err
    assert out  # something was printed: the comparison is not of two empty strings


def test_the_summary_tally_reaches_stderr(tmp_path: Path) -> None:
    done = console("simulate", "-f", cluster_file(tmp_path), "-o", "summary")
    assert done.returncode == 0
    assert done.stdout.count("\n") == 6
    assert "5/6 pods scheduled" in done.stderr, done.stderr


@pytest.mark.parametrize(
    "output",
    [
        pytest.param(["-o", "summary"], id="summary"),
        pytest.param(["-o", "json"], id="json"),
        pytest.param([], id="table"),
    ],
)
@pytest.mark.parametrize("buffered", [True, False], ids=["buffered", "unbuffered"])
def test_a_full_disk_is_a_clean_error(tmp_path: Path, output: list[str], buffered: bool) -> None:
    # Buffered, the output fits the buffer and fails at the final flush; unbuffered, at
    # the first write.
    with open("/dev/full", "w") as full:
        done = console(
            "simulate", "-f", cluster_file(tmp_path), *output, stdout=full, buffered=buffered
        )
    assert done.returncode == 1
    assert done.stderr.endswith("error: writing the output: No space left on device\n")
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr
