"""``policy-scheduler plugins``: what a policy can name, at which points, with which arguments."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from policy_scheduler_sample import SampleArgs

from plugins.offline import run
from policy_scheduler import names
from policy_scheduler.engine.builtins import BUILTIN_PLUGINS

BROKEN = (
    "plugin 'TestBroken' (policy_scheduler_testplugins.broken:Broken) failed to load: "
    "RuntimeError: this plugin is broken on purpose"
)


def table_rows(out: str) -> dict[str, list[str]]:
    """The listing's rows by name: [points, source, description]."""
    lines = out.splitlines()
    header = lines[0]
    starts = [header.index(title) for title in ("NAME", "POINTS", "SOURCE", "DESCRIPTION")]
    rows = {}
    for line in lines[1:]:
        cells = [line[a:b].strip() for a, b in zip(starts, [*starts[1:], None], strict=True)]
        rows[cells[0]] = cells[1:]
    return rows


def test_the_listing_shows_built_ins_and_installed_packages_with_their_points(
    capsys: pytest.CaptureFixture[str],
) -> None:
    ran = run(capsys, "plugins")
    assert ran.code == 0
    rows = table_rows(ran.out)
    assert rows["Sample"] == [
        "preFilter,filter,score,preBind",
        "policy-scheduler-sample 0.1.0",
        "The seed's sample plugin: a node label required, a favorite color preferred, thanks said.",
    ]
    assert rows["TestGate"][:2] == ["reserve,permit", "policy-scheduler-testplugins 0.1.0"]
    assert rows["PrioritySort"][:2] == ["queueSort", "built-in (legacy)"]
    assert rows["DefaultPreemption"][:2] == ["postFilter", "built-in (v1.30)"]
    # Every built-in, at the points kube-scheduler v1.30 has it.
    for name, points in names.IN_TREE_PLUGIN_POINTS.items():
        assert rows[name][0] == ",".join(points), name
    assert set(BUILTIN_PLUGINS) <= set(rows)
    # A package that fails to import is one line with its error, and no traceback.
    assert rows["TestBroken"] == ["-", "policy-scheduler-testplugins 0.1.0", f"error: {BROKEN}"]
    assert "Traceback" not in ran.out + ran.err
    assert ran.err == ""


def test_json_gives_each_plugins_argument_schema(capsys: pytest.CaptureFixture[str]) -> None:
    ran = run(capsys, "plugins", "-o", "json")
    assert ran.code == 0
    listed = json.loads(ran.out)["plugins"]
    by_name = {p["name"]: p for p in listed}
    assert len(by_name) == len(listed)  # each name once
    sample = by_name["Sample"]
    assert sample["args"] == SampleArgs.model_json_schema()
    assert (sample["entryPoint"], sample["timeoutSeconds"]) == (
        "policy_scheduler_sample:Sample",
        5.0,
    )
    assert by_name["TestRaiser"]["args"] is None
    assert by_name["TestBroken"] == {
        "name": "TestBroken",
        "source": "policy-scheduler-testplugins 0.1.0",
        "entryPoint": "policy_scheduler_testplugins.broken:Broken",
        "error": BROKEN,
    }


def test_one_plugin_in_full_with_its_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    ran = run(capsys, "plugins", "Sample")
    assert ran.code == 0
    lines = ran.out.splitlines()
    assert lines[:3] == [
        "Sample  policy-scheduler-sample 0.1.0 (policy_scheduler_sample:Sample)",
        "  points:   preFilter, filter, score, preBind",
        "  deadline: 5s for each PreBind call",
    ]
    arguments = lines[
        lines.index("  arguments (spec.pluginConfig[].args; -o json: the JSON schema):") + 1 :
    ]
    assert arguments[0].split() == ["NAME", "TYPE", "DEFAULT", "DESCRIPTION"]
    by_name = {line.split()[0]: line for line in arguments[1:]}
    assert list(by_name) == list(SampleArgs.model_fields)
    assert by_name["favoriteNumber"].split()[:6] == [
        "favoriteNumber",
        "integer",
        "7",
        "(>=",
        "0,",
        "<=",
    ]
    assert by_name["requiredNodeLabel"].split()[:5] == [
        "requiredNodeLabel",
        "string",
        "|",
        "null",
        "null",
    ]

    ran = run(capsys, "plugins", "Sample", "-o", "json")
    assert json.loads(ran.out)["args"]["properties"]["favoriteNumber"]["maximum"] == 100


def test_a_plugin_without_arguments_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    ran = run(capsys, "plugins", "TestRaiser")
    assert (ran.code, ran.out.splitlines()[-1]) == (0, "  arguments: none")


@pytest.mark.parametrize(
    ("name", "err"),
    [
        pytest.param(
            "Nope",
            "error: no plugin 'Nope' is installed (`policy-scheduler plugins` lists them)\n",
            id="unknown",
        ),
        pytest.param(
            "TestBroken",
            f"error: TestBroken (policy-scheduler-testplugins 0.1.0): {BROKEN}\n",
            id="fails-to-load",
        ),
    ],
)
def test_a_plugin_that_cannot_be_shown_is_one_line_and_exit_1(
    name: str, err: str, capsys: pytest.CaptureFixture[str]
) -> None:
    ran = run(capsys, "plugins", name)
    assert (ran.code, ran.out, ran.err) == (1, "", err)


def test_a_fresh_process_finds_the_installed_plugin_by_its_entry_point() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "policy_scheduler.cli", "plugins", "Sample", "-o", "json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["points"] == ["preFilter", "filter", "score", "preBind"]


def test_a_plugin_whose_import_hangs_costs_the_cli_its_deadline_only(tmp_path: Path) -> None:
    hold = tmp_path / "hold"
    hold.write_text("the hung plugin's import waits while this file exists")
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        "apiVersion: policyscheduler.io/v1alpha1\nkind: SchedulingPolicy\n"
        "metadata: {name: hung}\n"
        "spec:\n  plugins:\n    multiPoint:\n      enabled: [{name: TestHungImport}]\n"
    )
    env = {
        **os.environ,
        "POLICY_SCHEDULER_TEST_HANG_FILE": str(hold),
        "POLICY_SCHEDULER_PLUGIN_LOAD_TIMEOUT": "1",
    }
    timed_out = (
        "plugin 'TestHungImport' (policy_scheduler_testplugins.hung:HungImport) failed to "
        "load: its import timed out after 1 s"
    )
    try:

        def cli(*args: str) -> subprocess.CompletedProcess[str]:
            command = [sys.executable, "-m", "policy_scheduler.cli", *args]
            return subprocess.run(command, capture_output=True, text=True, timeout=30, env=env)

        listed = cli("plugins")
        assert listed.returncode == 0, listed.stderr
        assert table_rows(listed.stdout)["TestHungImport"][2] == f"error: {timed_out}"
        assert table_rows(listed.stdout)["Sample"][0] == "preFilter,filter,score,preBind"

        validated = cli("validate", str(policy))
        assert validated.returncode == 1
        assert timed_out in validated.stderr
        assert "Traceback" not in validated.stderr
    finally:
        hold.unlink(missing_ok=True)


def test_a_bad_load_deadline_is_one_warning_and_the_default(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from policy_scheduler.engine.plugins import _load_deadline

    assert _load_deadline("2.5") == 2.5
    assert _load_deadline(None) == _load_deadline("") == 10.0
    for bad in ("soon", "0", "-1", "inf"):
        caplog.clear()
        assert _load_deadline(bad) == 10.0
        assert [r.getMessage().split(":")[0] for r in caplog.records] == [
            "POLICY_SCHEDULER_PLUGIN_LOAD_TIMEOUT"
        ]
