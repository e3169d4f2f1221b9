"""The queue's backoff is the operator's to set, as kube-scheduler's
``podInitialBackoffSeconds`` / ``podMaxBackoffSeconds`` are: ``run`` flags (the chart's
values pass them), the environment of ``kopf run``, and the queue they reach."""

from __future__ import annotations

import subprocess
import sys

import pytest
from kubernetes_asyncio import client

from policy_scheduler.cli import build_parser, main, options_from_args
from policy_scheduler.operating import Operator, Options


def test_the_flags_set_the_options_and_default_to_kube_schedulers() -> None:
    parser = build_parser()
    defaults = options_from_args(parser.parse_args(["run"]))
    assert (defaults.pod_initial_backoff, defaults.pod_max_backoff) == (1.0, 10.0)
    set_ = options_from_args(
        parser.parse_args(
            ["run", "--pod-initial-backoff-seconds", "2", "--pod-max-backoff-seconds", "30"]
        )
    )
    assert (set_.pod_initial_backoff, set_.pod_max_backoff) == (2.0, 30.0)


def test_a_max_below_the_initial_backoff_is_one_line_naming_both(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["run", "--pod-initial-backoff-seconds", "5", "--pod-max-backoff-seconds", "2"])
    assert code == 1
    assert capsys.readouterr().err == (
        "error: --pod-max-backoff-seconds must be at least --pod-initial-backoff-seconds "
        "(5), got 2\n"
    )


async def test_the_operators_queue_backs_pods_off_as_set() -> None:
    options = Options(
        metrics_port=0,
        health_port=0,
        lease_namespace="default",
        pod_initial_backoff=3.0,
        pod_max_backoff=20.0,
    )
    async with client.ApiClient(client.Configuration(host="http://127.0.0.1:9")) as api:
        queue = Operator(options, api).runtime.queue
    assert [queue.backoff_duration(n) for n in (1, 2, 3, 4)] == [3.0, 6.0, 12.0, 20.0]


def test_kopf_runs_read_them_from_the_environment() -> None:
    # kopf_entry in a process of its own (importing it registers its Kopf handlers).
    probe = (
        "from policy_scheduler.kopf_entry import options_from_environment as o; "
        "print(o().pod_initial_backoff, o().pod_max_backoff)"
    )
    env = {
        "POLICY_SCHEDULER_POD_INITIAL_BACKOFF_SECONDS": "0.5",
        "POLICY_SCHEDULER_POD_MAX_BACKOFF_SECONDS": "4",
    }
    import os

    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
    )
    assert done.stdout.split() == ["0.5", "4.0"], done.stderr
