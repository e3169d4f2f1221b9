"""Real legacy Policy files (tests/policy/corpus): accepted and refused as kube-scheduler did.

``corpus/index.yaml`` says where each file comes from, what kube-scheduler v1.13-v1.22
did with it, and what ``convert`` must do: convert it (with the notes it must give) or
refuse it (with the error it must start with). ``convert`` and ``validate`` are run as a
person runs them, so the file readers are part of what is tested (tab-indented JSON,
YAML, a file without kind).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from policy_scheduler.cli import main
from policy_scheduler.engine.compiler import compile_policy
from policy_scheduler.legacy import convert_legacy, load_legacy
from policy_scheduler.policy import PolicyError

CORPUS = Path(__file__).parent / "corpus"
INDEX: dict[str, dict[str, Any]] = yaml.safe_load((CORPUS / "index.yaml").read_text())


def entries(expect: str) -> list[Any]:
    return [
        pytest.param(name, entry, id=name.split("/", 1)[1])
        for name, entry in INDEX.items()
        if entry["expect"] == expect
    ]


def test_every_corpus_file_is_indexed_with_its_source() -> None:
    files = {str(p.relative_to(CORPUS)) for p in CORPUS.glob("*/*")}
    assert files == set(INDEX)
    for name, entry in INDEX.items():
        assert entry["source"] and entry["upstream"], name
        assert name.startswith(f"{entry['expect']}/"), name


@pytest.mark.parametrize(("name", "entry"), entries("valid"))
def test_files_kube_scheduler_accepted_convert(
    name: str, entry: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    result = convert_legacy(load_legacy((CORPUS / name).read_text()))
    compile_policy(result.policy)
    for note in entry.get("notes", []):
        assert any(note in warning for warning in result.warnings), (note, result.warnings)
    assert main(["validate", str(CORPUS / name)]) == 0
    assert main(["convert", str(CORPUS / name)]) == 0
    assert "kind: SchedulingPolicy" in capsys.readouterr().out


@pytest.mark.parametrize(("name", "entry"), entries("invalid"))
def test_files_kube_scheduler_refused_are_refused(
    name: str, entry: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(PolicyError) as refused:
        convert_legacy(load_legacy((CORPUS / name).read_text()))
    assert refused.value.errors[0].startswith(entry["error"]), refused.value.errors
    if entry.get("cli") == "converts with a warning":
        # Converting loses nothing (the value is kept, with a warning); what would call
        # the extender refuses it, naming the field.
        assert main(["convert", str(CORPUS / name)]) == 0
        out, err = capsys.readouterr()
        assert "kind: SchedulingPolicy" in out
        assert f"warning: {entry['error']}" in err
        assert main(["validate", str(CORPUS / name)]) == 1
        assert entry["error"] in capsys.readouterr().err
        return
    if entry.get("cli") == "converts a KubeSchedulerConfiguration":
        assert main(["convert", str(CORPUS / name)]) == 0
        assert "kind: SchedulingPolicy" in capsys.readouterr().out
        return
    assert main(["convert", str(CORPUS / name)]) == 1
    assert entry.get("cli_error", entry["error"]) in capsys.readouterr().err
