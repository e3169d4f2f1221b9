"""``simulate -o summary`` and the streamed ``-o json`` with ``--detail``, as a user reads them.

The summary is one line per decision (``NS/POD -> NODE`` or ``NS/POD: MESSAGE``), the
JSON is DESIGN.md's document written one decision at a time, and ``--detail`` trims the
per-node part of each decision: all of it (the default, the contract), the N best
scores, or none.
"""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from builders import node
from builders import pod as any_pod
from policy_scheduler.cli import main
from policy_scheduler.engine.algorithm import Decision
from policy_scheduler.simulation import (
    Detail,
    JsonReportWriter,
    load_inputs,
    report_to_json,
    simulate,
)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "cluster.yaml"


def pod(name: str, **kwargs: Any) -> dict[str, Any]:
    """A pod for the default policy's schedulerName (simulate decides those)."""
    kwargs.setdefault("schedulerName", "policy-scheduler")
    return any_pod(name, **kwargs)


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def write(tmp_path: Path, *docs: Any) -> str:
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(list(docs)))
    return str(path)


def three_nodes_two_pods(tmp_path: Path) -> str:
    return write(
        tmp_path,
        node("big", cpu="8", memory="16Gi"),
        node("mid", cpu="4", memory="16Gi"),
        node("tiny", cpu="1", memory="1Gi"),
        pod("web", namespace="shop", requests={"cpu": "2", "memory": "1Gi"}),
        pod("huge", namespace="ml", requests={"cpu": "64"}),
    )


def test_summary_is_one_line_per_pod(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        ["simulate", "-f", three_nodes_two_pods(tmp_path), "-o", "summary"], capsys
    )
    assert code == 0
    assert out == ("shop/web -> big\nml/huge: 0/3 nodes are available: 3 Insufficient cpu.\n")
    # The tally goes to stderr, so that stdout stays one line per pod.
    assert err == "policy 'default': 1/2 pods scheduled\n"


def test_summary_of_the_example_matches_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    _, table, _ = run(["simulate", "-f", str(EXAMPLE)], capsys)
    code, summary, err = run(["simulate", "-f", str(EXAMPLE), "-o", "summary"], capsys)
    assert code == 0
    lines = summary.splitlines()
    headlines = [
        line.split("  (")[0].replace(": not scheduled: ", ": ")
        for line in table.splitlines()
        if line and not line.startswith((" ", "policy "))
    ]
    assert lines == headlines
    assert "ml/gpu-train -> node-b2" in lines
    assert "skipping pod batch/gated-job: has schedulingGates" in err


def test_json_is_the_contract_written_one_decision_per_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(["simulate", "-f", three_nodes_two_pods(tmp_path), "-o", "json"], capsys)
    assert code == 0
    report = json.loads(out)
    assert list(report) == ["policy", "decisions"]
    web, huge = report["decisions"]
    assert list(web) == [
        "pod",
        "node",
        "feasibleNodes",
        "failedPredicates",
        "scores",
        "message",
        "preemption",
    ]
    assert (web["pod"], web["node"], web["message"]) == ("shop/web", "big", "")
    assert web["feasibleNodes"] == ["big", "mid"]
    assert web["failedPredicates"] == {"tiny": ["Insufficient cpu"]}
    assert set(web["scores"]) == {"big", "mid"}
    assert huge["node"] is None and huge["scores"] == {}
    lines = out.splitlines()
    assert lines[0] == '{"policy": "default", "decisions": ['
    assert [json.loads(line.rstrip(","))["pod"] for line in lines[1:-1]] == ["shop/web", "ml/huge"]
    assert lines[-1] == "]}"


def test_json_of_nothing_to_decide(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["simulate", "-f", write(tmp_path, node("a")), "-o", "json"], capsys)
    assert code == 0
    assert json.loads(out) == {"policy": "default", "decisions": []}


def test_streamed_json_equals_the_document_built_in_memory(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(["simulate", "-f", str(EXAMPLE), "-o", "json"], capsys)
    assert code == 0
    inputs = load_inputs([EXAMPLE])
    decisions = asyncio.run(simulate(inputs))
    assert json.loads(out) == report_to_json("default", decisions)


def test_each_decision_is_written_before_the_next_is_made() -> None:
    # Nothing of the document is held back: the writer has written decision k when
    # decision k+1 is being made, and simulate keeps no list of them.
    out = io.StringIO()
    writer = JsonReportWriter(out, "default")
    written_before: list[int] = []

    def on_decision(decision: Decision) -> None:
        written_before.append(out.getvalue().count('"pod": '))
        writer.write(decision)

    inputs = load_inputs([EXAMPLE])
    kept = asyncio.run(simulate(inputs, on_decision=on_decision))
    writer.close()
    assert kept == []
    assert written_before == list(range(len(written_before))) and len(written_before) > 10
    assert len(json.loads(out.getvalue())["decisions"]) == len(written_before)


@pytest.mark.parametrize(
    ("detail", "keys", "scored"),
    [
        pytest.param(
            "all",
            ["pod", "node", "feasibleNodes", "failedPredicates", "scores", "message"],
            {"big", "mid"},
            id="all",
        ),
        pytest.param(
            "top=1",
            ["pod", "node", "feasibleNodes", "failedPredicates", "scores", "message"],
            {"big"},
            id="top-1",
        ),
        pytest.param(
            "top=5",
            ["pod", "node", "feasibleNodes", "failedPredicates", "scores", "message"],
            {"big", "mid"},
            id="top-more-than-scored",
        ),
        pytest.param("none", ["pod", "node", "feasibleCount", "message"], None, id="none"),
    ],
)
def test_detail_trims_the_per_node_part(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    detail: str,
    keys: list[str],
    scored: set[str] | None,
) -> None:
    path = three_nodes_two_pods(tmp_path)
    code, out, _ = run(["simulate", "-f", path, "-o", "json", "--detail", detail], capsys)
    assert code == 0
    web, huge = json.loads(out)["decisions"]
    # The pod that fits nowhere also says what would make it fit, when nodes are shown.
    hints = ["hints"] if detail != "none" else []
    assert list(web) == [*keys, "preemption"]
    assert list(huge) == [*keys, *hints, "preemption"]
    assert (web["node"], huge["node"]) == ("big", None)
    assert huge["message"] == "0/3 nodes are available: 3 Insufficient cpu."
    if scored is None:
        assert (web["feasibleCount"], huge["feasibleCount"]) == (2, 0)
    else:
        assert set(web["scores"]) == scored
        assert web["failedPredicates"] == {"tiny": ["Insufficient cpu"]}


def test_top_n_keeps_the_best_scores_and_the_chosen_node(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, full, _ = run(["simulate", "-f", str(EXAMPLE), "-o", "json"], capsys)
    _, top, _ = run(["simulate", "-f", str(EXAMPLE), "-o", "json", "--detail", "top=2"], capsys)
    for whole, trimmed in zip(
        json.loads(full)["decisions"], json.loads(top)["decisions"], strict=True
    ):
        assert {k: v for k, v in trimmed.items() if k != "scores"} == {
            k: v for k, v in whole.items() if k != "scores"
        }
        totals = sorted((s["total"] for s in whole["scores"].values()), reverse=True)
        assert (
            sorted((s["total"] for s in trimmed["scores"].values()), reverse=True)[:2]
            == (totals[:2])
        )
        for name, score in trimmed["scores"].items():
            assert whole["scores"][name] == score
        if whole["node"] is not None and whole["scores"]:
            assert whole["node"] in trimmed["scores"]
            assert len(trimmed["scores"]) <= 3  # two best, and the choice if it tied below


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(["--detail", "none"], "--detail applies to -o json only", id="with-table"),
        pytest.param(
            ["-o", "summary", "--detail", "top=3"],
            "--detail applies to -o json only",
            id="with-summary",
        ),
        pytest.param(
            ["-o", "json", "--detail", "top=0"],
            "expected all, none or top=N (N >= 1), got 'top=0'",
            id="top-0",
        ),
        pytest.param(
            ["-o", "json", "--detail", "some"],
            "expected all, none or top=N (N >= 1), got 'some'",
            id="unknown",
        ),
    ],
)
def test_detail_misuse_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["simulate", "-f", str(EXAMPLE), *argv])
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "detail"),
    [
        pytest.param("all", Detail(None), id="all"),
        pytest.param("none", Detail(0), id="none"),
        pytest.param("top=7", Detail(7), id="top"),
    ],
)
def test_detail_round_trips(text: str, detail: Detail) -> None:
    assert Detail.parse(text) == detail and str(detail) == text


def test_a_reader_that_stops_early_gets_no_traceback(tmp_path: Path) -> None:
    # `simulate ... | head -1`: the pipe closes under the streamed output, raised from
    # inside the decision loop now rather than from one final write.
    import subprocess
    import sys

    docs = [node(f"n{i}") for i in range(3)] + [pod(f"p{i}") for i in range(400)]
    path = write(tmp_path, *docs)
    proc = subprocess.Popen(
        [sys.executable, "-m", "policy_scheduler.cli", "simulate", "-f", path, "-o", "json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={"PYTHONPATH": str(ROOT / "operator"), "PATH": "/usr/bin:/bin"},
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0
    assert first.startswith(b'{"policy": "default", "decisions": [')
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
