"""``policy-scheduler SUBCOMMAND --help`` says, for every option, what happens without it.

Each option's line ends with its default (``(default: 30)``, ``(default: off)`` for a
flag), or says it is required; a help text may say its default in its own words
(``default: $POD_NAMESPACE``). The value shown is the one the parser uses.
"""

from __future__ import annotations

import argparse
import re

import pytest

from policy_scheduler.cli import build_parser, main


def subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def help_of(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    """The action's help as ``--help`` prints it, on one line."""
    formatter = parser._get_formatter()
    return " ".join(formatter._expand_help(action).split())


SAYS_DEFAULT = re.compile(r"\((default: [^)]*|required|the default)\)|default: ")


@pytest.mark.parametrize("name", sorted(subcommands()))
def test_every_option_says_its_default(name: str) -> None:
    parser = subcommands()[name]
    for action in parser._actions:
        if not action.option_strings or isinstance(action, argparse._HelpAction):
            continue
        assert SAYS_DEFAULT.search(help_of(parser, action)), (name, action.option_strings)


@pytest.mark.parametrize(
    ("argv", "shown"),
    [
        pytest.param(["run"], "deadline of every API call (default: 30)", id="run-number"),
        pytest.param(["run"], "(for several replicas) (default: off)", id="run-flag"),
        pytest.param(["run"], "(default: all namespaces)", id="run-namespaces"),
        pytest.param(["run"], "(default: policy-scheduler)", id="run-scheduler-name"),
        pytest.param(["simulate"], "(default: table)", id="simulate-output"),
        pytest.param(["simulate"], "- for stdin (required)", id="simulate-file"),
        pytest.param(["convert"], "output format (default: yaml)", id="convert-output"),
        pytest.param(["explain"], "the pod's namespace (default: default)", id="explain-ns"),
    ],
)
def test_help_prints_the_default(
    argv: list[str], shown: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as done:
        main([*argv, "--help"])
    assert done.value.code == 0
    assert shown in " ".join(capsys.readouterr().out.split())


def test_the_defaults_shown_are_the_parsers() -> None:
    run = subcommands()["run"]
    for action in run._actions:
        if isinstance(action.default, int | float) and not isinstance(action.default, bool):
            assert f"(default: {action.default:g})" in help_of(run, action), action.dest
