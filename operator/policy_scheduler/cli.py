"""The ``policy-scheduler`` command line: simulate, validate, convert, run, explain.

Every user error (a file that is not YAML, a malformed pod or node, an invalid policy, a
legacy Policy the old scheduler refused) ends with the message on stderr and exit code
1, never a traceback. ``simulate`` exits 0 even when some pods fit nowhere: that is an
answer, not an error.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import yaml

from . import __version__
from .documents import read_file_documents
from .engine.algorithm import Decision, Scheduler
from .engine.compiler import CompiledPolicy, compile_policy
from .legacy import convert_legacy, legacy_document
from .names import DEFAULT_SCHEDULER_NAME
from .objects import ObjectError
from .policy import PolicyError, policy_to_object
from .reports import render_report, summary_line
from .selectors import SelectorError
from .simulation import (
    ALL_DETAIL,
    Detail,
    InputError,
    JsonReportWriter,
    choose_policy,
    is_legacy_policy,
    load_inputs,
    load_policy_document,
    read_documents,
    report_to_json,
    simulate,
)

if TYPE_CHECKING:
    from .runtime.operating import Options

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
    # What was loaded lives until the end: keep the collector from walking it again and
    # again while the decisions allocate (gen-2 passes over a 5000-node cluster).
    gc.freeze()
    chosen = choose_policy(inputs, args.policy)
    policy = compile_policy(chosen)
    if chosen.spec.extenders:
        print(
            f"warning: policy {chosen.name!r} has {len(chosen.spec.extenders)} extender(s); "
            "simulate does not call extenders, so their filters and scores are left out",
            file=sys.stderr,
        )
    for warning in inputs.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    for pod, why in inputs.skipped:
        print(f"note: skipping pod {pod.key}: {why}", file=sys.stderr)
    progress = _progress_printer()
    if args.output == "table":
        decisions = asyncio.run(simulate(inputs, policy, progress=progress))
        sys.stdout.write(render_report(policy, decisions))
        return 0
    # Streamed: each decision is written as it is made, and not kept.
    detail: Detail = args.detail
    # Scores are only built when they are printed; decisions are the same either way.
    scheduler = Scheduler(explain=args.output == "json" and detail.per_node)
    if args.output == "json":
        writer = JsonReportWriter(sys.stdout, policy.name, detail)
        asyncio.run(
            simulate(
                inputs, policy, scheduler=scheduler, progress=progress, on_decision=writer.write
            )
        )
        writer.close()
        return 0
    placed = decided = 0

    def write_line(decision: Decision) -> None:
        nonlocal placed, decided
        decided += 1
        placed += decision.node is not None
        sys.stdout.write(summary_line(decision))

    asyncio.run(
        simulate(inputs, policy, scheduler=scheduler, progress=progress, on_decision=write_line)
    )
    sys.stdout.flush()
    print(f"policy {policy.name!r}: {placed}/{decided} pods scheduled", file=sys.stderr)
    return 0


def _detail(text: str) -> Detail:
    try:
        return Detail.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


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
    source = args.legacy_policy  # a file, or - for stdin
    documents = read_file_documents(source)
    if len(documents) > 1:
        raise InputError(f"{source}: expected one legacy Policy, found {len(documents)} documents")
    data = legacy_document(documents[0] if documents else None)
    result = convert_legacy(data, name=args.name, scheduler_name=args.scheduler_name)
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
    sim.add_argument(
        "-o",
        "--output",
        choices=("table", "json", "summary"),
        default="table",
        help="table: a per-node table per pod; json: every decision with its per-node "
        "scores and reasons, written one per line as they are made; summary: one line per "
        "pod, NS/POD -> NODE or NS/POD: MESSAGE",
    )
    sim.add_argument(
        "--detail",
        type=_detail,
        default=ALL_DETAIL,
        metavar="all|top=N|none",
        help="per-node detail in -o json: all (default), the N best-scored nodes' scores, "
        "or none (no per-node data, feasibleCount instead)",
    )
    sim.set_defaults(func=cmd_simulate)

    val = sub.add_parser("validate", help="check SchedulingPolicy / legacy Policy files")
    val.add_argument("file", metavar="FILE")
    val.set_defaults(func=cmd_validate)

    conv = sub.add_parser(
        "convert", help="turn a legacy kube-scheduler Policy into a SchedulingPolicy"
    )
    conv.add_argument(
        "legacy_policy",
        metavar="LEGACY_POLICY",
        help="a legacy Policy file (JSON or YAML); - for stdin",
    )
    conv.add_argument("--name", default="default", help="metadata.name of the SchedulingPolicy")
    conv.add_argument(
        "--scheduler-name", default="policy-scheduler", help="spec.schedulerName to serve"
    )
    conv.add_argument("-o", "--output", choices=("yaml", "json"), default="yaml")
    conv.set_defaults(func=cmd_convert)

    crd = sub.add_parser("crd", help="print the SchedulingPolicy CustomResourceDefinition")
    crd.set_defaults(func=cmd_crd)

    run = sub.add_parser("run", help="run the scheduler against a cluster (the operator)")
    run.add_argument(
        "--scheduler-name",
        default=DEFAULT_SCHEDULER_NAME,
        help="schedulerName served by the built-in default policy",
    )
    scope = run.add_mutually_exclusive_group()
    scope.add_argument(
        "-n",
        "--namespace",
        action="append",
        dest="namespaces",
        default=[],
        metavar="NS",
        help="schedule pods of this namespace only; repeatable",
    )
    scope.add_argument(
        "-A",
        "--all-namespaces",
        action="store_true",
        help="schedule pods of every namespace (the default)",
    )
    run.add_argument("--log-level", choices=("debug", "info", "warning", "error"), default="info")
    run.add_argument("--log-format", choices=("text", "json"), default="text")
    run.add_argument("--metrics-port", type=int, default=9090, help="0 disables /metrics")
    run.add_argument("--health-port", type=int, default=8081, help="serves GET /healthz")
    run.add_argument(
        "--leader-elect",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="take a Lease before scheduling (for several replicas)",
    )
    run.add_argument("--lease-name", default="policy-scheduler")
    run.add_argument(
        "--lease-namespace", default=None, help="default: $POD_NAMESPACE, else default"
    )
    run.add_argument(
        "--qps", type=float, default=200.0, help="API requests per second (0: unlimited)"
    )
    run.add_argument("--burst", type=int, default=400)
    run.add_argument("--bind-workers", type=int, default=16, help="bindings in flight at once")
    run.set_defaults(func=cmd_run)

    exp = sub.add_parser("explain", help="why is this pod pending? per-node answer, read-only")
    exp.add_argument("pod", metavar="POD")
    exp.add_argument("-n", "--namespace", default="default")
    exp.add_argument(
        "--scheduler-name",
        default=DEFAULT_SCHEDULER_NAME,
        help="the name the built-in default policy serves",
    )
    exp.add_argument("-o", "--output", choices=("table", "json"), default="table")
    exp.set_defaults(func=cmd_explain)
    return parser


def cmd_crd(args: argparse.Namespace) -> int:
    from .crd import render_yaml

    sys.stdout.write(render_yaml())
    return 0


def options_from_args(args: argparse.Namespace) -> Options:
    """The operator's options from ``run``'s flags (and the pod's environment)."""
    # Imported here: the offline commands should not pay for importing Kopf.
    from .runtime.operating import Options

    return Options(
        scheduler_name=args.scheduler_name,
        namespaces=tuple(args.namespaces),
        log_level=args.log_level,
        log_format=args.log_format,
        metrics_port=args.metrics_port,
        health_port=args.health_port,
        leader_elect=args.leader_elect,
        lease_name=args.lease_name,
        lease_namespace=args.lease_namespace or os.environ.get("POD_NAMESPACE", "default"),
        qps=args.qps,
        burst=args.burst,
        bind_workers=args.bind_workers,
    )


def cmd_run(args: argparse.Namespace) -> int:
    from .runtime.operating import operate

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(operate(options_from_args(args)))
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    from .runtime.explaining import explain
    from .runtime.operating import load_client

    async def go() -> tuple[CompiledPolicy, Decision]:
        api_client = await load_client(10)
        try:
            return await explain(api_client, args.namespace, args.pod, args.scheduler_name)
        finally:
            await api_client.close()

    policy, decision = asyncio.run(go())
    if args.output == "json":
        json.dump(report_to_json(policy.name, [decision]), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render_report(policy, [decision]))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "detail", ALL_DETAIL) != ALL_DETAIL and args.output != "json":
        parser.error("--detail applies to -o json only")
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
