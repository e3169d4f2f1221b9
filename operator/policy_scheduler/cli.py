"""The ``policy-scheduler`` command line: simulate, validate, convert.

Every user error (a file that is not YAML, a malformed pod or node, an invalid policy, a
legacy Policy the old scheduler refused) ends with the message on stderr and exit code
1, never a traceback. ``simulate`` exits 0 even when some pods fit nowhere: that is an
answer, not an error.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable, Sequence

import yaml

from . import __version__
from .engine.compiler import compile_policy
from .legacy import convert_legacy, load_legacy
from .objects import ObjectError
from .policy import PolicyError, policy_to_object
from .reports import render_report
from .selectors import SelectorError
from .simulation import (
    InputError,
    choose_policy,
    is_legacy_policy,
    load_inputs,
    load_policy_document,
    read_documents,
    report_to_json,
    simulate,
)

USER_ERRORS = (InputError, ObjectError, PolicyError, SelectorError)


def _progress_printer() -> Callable[[int, int], None] | None:
    """Progress on stderr for people at a terminal; nothing for pipes and CI logs."""
    if not sys.stderr.isatty():
        return None

    def show(done: int, total: int) -> None:
        if total >= 20 and (done == total or done % max(1, total // 100) == 0):
            end = "\n" if done == total else ""
            print(f"\rscheduling: {done}/{total} pods", end=end, file=sys.stderr, flush=True)

    return show


def cmd_simulate(args: argparse.Namespace) -> int:
    inputs = load_inputs(args.file)
    policy = compile_policy(choose_policy(inputs, args.policy))
    for warning in inputs.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    for pod, why in inputs.skipped:
        print(f"note: skipping pod {pod.key}: {why}", file=sys.stderr)
    decisions = asyncio.run(simulate(inputs, policy, progress=_progress_printer()))
    if args.output == "json":
        json.dump(report_to_json(policy.name, decisions), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render_report(policy, decisions))
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    failures = 0
    checked = 0
    for doc in read_documents(args.file):
        kind = doc.get("kind") or "Policy"
        if kind != "SchedulingPolicy" and not is_legacy_policy(doc):
            continue
        checked += 1
        try:
            policy = load_policy_document(doc)
            compile_policy(policy)
        except PolicyError as exc:
            failures += 1
            print(str(exc), file=sys.stderr)
            continue
        print(f'{kind} "{policy.name}" is valid')
    if checked == 0:
        print(f"{args.file}: no SchedulingPolicy or legacy Policy found", file=sys.stderr)
        return 1
    return 1 if failures else 0


def cmd_convert(args: argparse.Namespace) -> int:
    try:
        with open(args.legacy_policy) as handle:
            text = handle.read()
    except OSError as exc:
        raise InputError(f"{args.legacy_policy}: {exc.strerror or exc}") from None
    result = convert_legacy(load_legacy(text), name=args.name, scheduler_name=args.scheduler_name)
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    compile_policy(result.policy)
    obj = policy_to_object(result.policy)
    if args.output == "json":
        json.dump(obj, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        yaml.safe_dump(obj, sys.stdout, sort_keys=False)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="policy-scheduler",
        description="A Kubernetes scheduler driven by SchedulingPolicy resources.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    sim = sub.add_parser("simulate", help="decide pending pods offline, from files")
    sim.add_argument(
        "-f",
        "--file",
        action="append",
        required=True,
        metavar="FILE",
        help="Kubernetes objects (YAML/JSON, multi-document or kind: List); repeatable; "
        "- for stdin",
    )
    sim.add_argument("--policy", metavar="FILE", help="a SchedulingPolicy or legacy Policy file")
    sim.add_argument("-o", "--output", choices=("table", "json"), default="table")
    sim.set_defaults(func=cmd_simulate)

    val = sub.add_parser("validate", help="check SchedulingPolicy / legacy Policy files")
    val.add_argument("file", metavar="FILE")
    val.set_defaults(func=cmd_validate)

    conv = sub.add_parser(
        "convert", help="turn a legacy kube-scheduler Policy into a SchedulingPolicy"
    )
    conv.add_argument("legacy_policy", metavar="LEGACY_POLICY")
    conv.add_argument("--name", default="default", help="metadata.name of the SchedulingPolicy")
    conv.add_argument(
        "--scheduler-name", default="policy-scheduler", help="spec.schedulerName to serve"
    )
    conv.add_argument("-o", "--output", choices=("yaml", "json"), default="yaml")
    conv.set_defaults(func=cmd_convert)

    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.func(args)
    except USER_ERRORS as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0
    return code


if __name__ == "__main__":
    sys.exit(main())
