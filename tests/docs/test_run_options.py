"""The ``policy-scheduler run`` option tables say what the CLI does.

README.md and docs/operations.md each have a table of ``run``'s options. Every long
option the CLI's ``run`` accepts is in each table, no table names an option the CLI
lacks, and where a row gives one default per option (in backticks), each is the CLI's.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

import pytest

from policy_scheduler.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
TABLES = [
    pytest.param(ROOT / "README.md", "### `policy-scheduler run`", id="README"),
    pytest.param(ROOT / "docs" / "operations.md", "## `policy-scheduler run`", id="operations"),
]


def run_options() -> dict[str, Any]:
    """``run``'s long options and their defaults."""
    parser = build_parser()
    (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    run: argparse.ArgumentParser = sub.choices["run"]
    return {
        flag: action.default
        for action in run._actions
        for flag in action.option_strings
        if flag.startswith("--") and flag != "--help"
    }


def table(path: Path, heading: str) -> list[tuple[list[str], list[str]]]:
    """(options, backticked defaults) of each row of the table under ``heading``."""
    lines = path.read_text().splitlines()
    rows = []
    for line in lines[lines.index(heading) + 1 :]:
        if line.startswith("#"):
            break
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        if len(cells) < 2 or not cells[0].startswith("`-"):
            continue
        options = re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", cells[0])
        rows.append((options, re.findall(r"`([^`]+)`", cells[1])))
    return rows


def shown(default: Any) -> str | None:
    """A default as a doc writes it; None for those a doc describes in words."""
    if isinstance(default, bool) or default is None or isinstance(default, list):
        return None
    if isinstance(default, float) and default.is_integer():
        return str(int(default))
    return str(default)


@pytest.mark.parametrize(("path", "heading"), TABLES)
def test_the_table_lists_every_option_and_no_other(path: Path, heading: str) -> None:
    documented = {option for options, _ in table(path, heading) for option in options}
    cli = run_options()
    assert documented - cli.keys() == set(), "options the CLI does not have"
    assert {o for o in cli if not o.startswith("--no-")} - documented == set(), "undocumented"


@pytest.mark.parametrize(("path", "heading"), TABLES)
def test_the_defaults_shown_are_the_clis(path: Path, heading: str) -> None:
    cli = run_options()
    compared = 0
    for options, defaults in table(path, heading):
        options = [o for o in options if not o.startswith("--no-")]
        if len(options) != len(defaults):
            continue  # a default in words ("off", "all"), or none
        for option, default in zip(options, defaults, strict=True):
            expected = shown(cli[option])
            if expected is not None:
                assert default == expected, f"{path.name}: {option} defaults to {expected}"
                compared += 1
    assert compared >= 10  # the table was read
