"""The ``policy-scheduler`` command line: simulate, validate, convert, plugins, run, explain.

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
import logging
import math
import os
import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

import yaml

from . import __version__
from .documents import collector_paused, read_file_documents
from .engine.algorithm import Decision
from .engine.compiler import CompiledPolicy, compile_policy
from .engine.interface import Plugin
from .legacy import convert_legacy, legacy_document
from .names import KUBE_SCHEDULER_NAME, V134_PLUGIN_POINTS
from .objects import ObjectError
from .options import Options, default_of
from .pluginargs import RELEASE_OF
from .policy import (
    PolicyError,
    SchedulingPolicy,
    policy_to_object,
    safeguard_notes,
    seed_name_notes,
)
from .reports import render_report, shadow_tally_line, summary_line, tally_line
from .schedconfig import Conversion, convert_configuration, is_configuration
from .selectors import SelectorError
from .simulation import (
    ALL_DETAIL,
    DEFAULT_SEED,
    Detail,
    InputError,
    Inputs,
    JsonReportWriter,
    ShadowTally,
    check_profiles,
    is_legacy_policy,
    load_configuration,
    load_inputs,
    load_policy_document,
    load_policy_file,
    out_of_tree_plugins,
    read_documents,
    report_to_json,
    simulate,
)


class ClusterError(Exception):
    """No usable way to the cluster (kubeconfig, server, credentials): the next step."""


USER_ERRORS = (InputError, ObjectError, PolicyError, SelectorError, ClusterError)


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
    override = load_policy_file(args.policy) if args.policy is not None else None
    profiles: tuple[SchedulingPolicy, ...] = ()
    if args.config is not None:
        conversion = load_configuration(args.config)
        for note in conversion.notes:
            print(f"note: {note}", file=sys.stderr)
        profiles = conversion.policies
    # What is loaded lives until the end. Frozen before the collector is back on: the
    # first collection after the load would walk all of it (every object made while
    # loading is still in the youngest generation), and gen-2 passes again and again
    # while the decisions allocate.
    retained = getattr(args, "retained", None)
    with collector_paused():
        inputs = load_inputs(
            args.file,
            policy=override,
            profiles=profiles,
            default_scheduler_name=args.scheduler_name,
            retain=retained,
        )
        if retained is not None:
            # Only a process that exits when simulate ends (the console's): frozen objects
            # stay out of every later collection, which main() called in-process (tests,
            # a library user) must not impose on its caller's heap.
            gc.freeze()
    for warning in inputs.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    for pod, why in inputs.skipped:
        print(f"note: skipping pod {pod.key}: {why}", file=sys.stderr)
    queue = inputs.world.queue
    for pod in queue.pods():
        gate = queue.gated_reason(pod.uid)
        if gate is not None:  # a PreEnqueue plugin keeps it out of the queue
            print(f"note: not scheduling pod {pod.key}: {gate}", file=sys.stderr)
    for line in inputs.unreadable:
        print(f"note: skipping a pod that cannot be read: {line}", file=sys.stderr)
    for scheduler_name, count in sorted(inputs.unserved().items()):
        print(
            f"note: skipping {count} pending pod(s) of schedulerName {scheduler_name!r}: "
            "no policy serves it (--policy FILE decides every pending pod with one policy; "
            "--config FILE with a KubeSchedulerConfiguration's profiles)",
            file=sys.stderr,
        )
    book = inputs.world.book
    # Named before deciding: the queue empties as pods are decided.
    deciding = inputs.deciding_policies()
    report_name = ", ".join(sorted(deciding) or [override.name if override else "default"])
    with_extenders = {name: len(p.extenders) for name, p in deciding.items() if p.extenders}
    if args.skip_extenders:
        for name, count in sorted(with_extenders.items()):
            _note_skipped_extenders(name, count)
    call_extenders = bool(with_extenders) and not args.skip_extenders
    shadows = ShadowTally()
    if args.output == "table":
        decisions = asyncio.run(_simulate(inputs, call_extenders, seed=args.seed))
        policies: dict[str, CompiledPolicy] = {}
        for decision in decisions:
            _warn_extender_errors(decision)
            compiled = book.policy_for(decision.pod.scheduler_name)
            if compiled is not None:
                policies[decision.policy] = compiled
        sys.stdout.write(render_report(policies, decisions))
        for name, window in sorted(shadows.add_all(decisions).items()):
            print(f"\n{shadow_tally_line(name, window)}")
        return 0
    # Streamed: each decision is written as it is made, and not kept.
    detail: Detail = args.detail
    if args.output == "json":
        writer = JsonReportWriter(sys.stdout, report_name, detail)

        def write_json(decision: Decision) -> None:
            _warn_extender_errors(decision)
            writer.write(decision)

        # Scores are only built when they are printed; decisions are the same either way.
        asyncio.run(
            _simulate(inputs, call_extenders, write_json, explain=detail.per_node, seed=args.seed)
        )
        writer.close()
        return 0
    placed: dict[str, bool] = {}  # pod uid -> placed, by its last decision

    def write_line(decision: Decision) -> None:
        _warn_extender_errors(decision)
        placed[decision.pod.uid] = decision.node is not None
        shadows.add(decision)
        sys.stdout.write(summary_line(decision))

    asyncio.run(_simulate(inputs, call_extenders, write_line, explain=False, seed=args.seed))
    sys.stdout.flush()
    # The tally on stderr, so that stdout stays one line per decision.
    names = deciding or [override.name if override else "default"]
    print(tally_line(names, sum(placed.values()), len(placed)), file=sys.stderr)
    for name, window in sorted(shadows.windows.items()):
        print(shadow_tally_line(name, window), file=sys.stderr)
    return 0


def _note_skipped_extenders(policy_name: str, count: int) -> None:
    print(
        f"note: --skip-extenders: policy {policy_name!r} has {count} extender(s); they are "
        "not called, so their filters and scores are left out",
        file=sys.stderr,
    )


def _warn_extender_errors(decision: Decision) -> None:
    for problem in decision.extender_errors:
        print(f"warning: pod {decision.pod.key}: {problem}", file=sys.stderr)


async def _simulate(
    inputs: Inputs,
    call_extenders: bool,
    on_decision: Callable[[Decision], None] | None = None,
    *,
    explain: bool = True,
    seed: int = DEFAULT_SEED,
) -> list[Decision]:
    progress = _progress_printer()
    if not call_extenders:
        return await simulate(
            inputs, explain=explain, progress=progress, on_decision=on_decision, seed=seed
        )
    # Imported here: aiohttp is only loaded when some policy has extenders.
    from .extending import HttpExtenderClient

    async with HttpExtenderClient() as client:
        return await simulate(
            inputs,
            explain=explain,
            progress=progress,
            on_decision=on_decision,
            extenders=client,
            seed=seed,
        )


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
        if is_configuration(doc):
            checked += 1
            failures += _validate_configuration(doc)
            continue
        if kind != "SchedulingPolicy" and not is_legacy_policy(doc):
            continue
        checked += 1
        try:
            if is_legacy_policy(doc):
                converted = convert_legacy(doc)
                policy, notes = converted.policy, list(converted.warnings)
            else:
                policy = load_policy_document(doc)
                notes = [
                    f'{kind} "{policy.name}": {n.render()}' for n in seed_name_notes(policy.spec)
                ]
            compile_policy(policy)
        except PolicyError as exc:
            failures += 1
            print(str(exc), file=sys.stderr)
            continue
        for note in notes:
            print(f"note: {note}", file=sys.stderr)
        # Valid all the same: leaving a safeguard out is the policy's choice, never silent.
        for issue in safeguard_notes(policy.spec):
            print(f'warning: {kind} "{policy.name}": {issue.render()}', file=sys.stderr)
        print(f'{kind} "{policy.name}" is valid')
    if checked == 0:
        print(
            f"{args.file}: no SchedulingPolicy, legacy Policy or KubeSchedulerConfiguration found",
            file=sys.stderr,
        )
        return 1
    return 1 if failures else 0


def _validate_configuration(doc: dict[str, Any]) -> int:
    """Validate a KubeSchedulerConfiguration as kube-scheduler would (and that every
    profile can run here): 1 if refused."""
    try:
        conversion = _configuration(doc)
    except PolicyError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    for note in conversion.notes:
        print(f"note: {note}", file=sys.stderr)
    for policy in conversion.policies:
        print(f'KubeSchedulerConfiguration profile "{policy.name}" is valid')
    return 0


def cmd_convert(args: argparse.Namespace) -> int:
    source = args.legacy_policy  # a file, or - for stdin
    documents = read_file_documents(source)
    if len(documents) == 1 and is_configuration(documents[0]):
        return _convert_configuration(documents[0], args)
    if len(documents) > 1:
        raise InputError(f"{source}: expected one legacy Policy, found {len(documents)} documents")
    data = legacy_document(documents[0] if documents else None)
    result = convert_legacy(
        data, name=args.name, scheduler_name=args.scheduler_name, keep_url_prefixes=True
    )
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    compile_policy(result.policy)
    obj = policy_to_object(result.policy)
    _warn_kube_scheduler_name([obj])
    if args.output == "json":
        json.dump(obj, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        yaml.safe_dump(obj, sys.stdout, sort_keys=False)
    return 0


def _convert_configuration(doc: dict[str, Any], args: argparse.Namespace) -> int:
    """One SchedulingPolicy per profile: multi-document YAML, or a List in JSON."""
    if args.name != "default" or args.scheduler_name != default_of("scheduler_name"):
        raise InputError(
            f"{args.legacy_policy}: --name and --scheduler-name apply to a legacy Policy; "
            "each profile of a KubeSchedulerConfiguration is named after its schedulerName"
        )
    conversion = _configuration(doc)
    for note in conversion.notes:
        print(f"note: {note}", file=sys.stderr)
    _warn_kube_scheduler_name(conversion.objects)
    if args.output == "json":
        listing = {"apiVersion": "v1", "kind": "List", "items": list(conversion.objects)}
        json.dump(listing, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        yaml.safe_dump_all(conversion.objects, sys.stdout, sort_keys=False)
    return 0


def _warn_kube_scheduler_name(objects: Sequence[Mapping[str, Any]]) -> None:
    """A converted policy serving kube-scheduler's name: applied, the operator refuses it
    unless told to serve that name (state/policies.py). One line each, on stderr."""
    for obj in objects:
        spec = obj.get("spec") or {}
        if spec.get("schedulerName") == KUBE_SCHEDULER_NAME and spec.get("mode") != "Shadow":
            name = (obj.get("metadata") or {}).get("name", "")
            print(
                f'warning: SchedulingPolicy "{name}" serves schedulerName '
                f'"{KUBE_SCHEDULER_NAME}", kube-scheduler\'s: the operator serves it only '
                "when run with --allow-default-scheduler (chart value allowDefaultScheduler: "
                "true); else it is Accepted=False (DefaultSchedulerNotAllowed)",
                file=sys.stderr,
            )


def _configuration(doc: dict[str, Any]) -> Conversion:
    """A KubeSchedulerConfiguration's profiles, converted then compiled (the in-tree
    plugins run here: a profile that cannot run is refused, naming it)."""
    conversion = convert_configuration(doc, extra_plugins=out_of_tree_plugins(doc))
    check_profiles(conversion, RELEASE_OF.get(str(doc.get("apiVersion")), ""))
    return conversion


# -- plugins: what is installed, at which points, with which arguments ------------------

#: The points whose calls are async and bounded by the plugin's ``timeout_seconds``.
_DEADLINED_POINTS = ("postFilter", "preBind", "bind", "postBind")
#: Bounds pydantic writes for every int32/int64 field: they say nothing to a reader.
_MACHINE_BOUNDS = {2**31 - 1, -(2**31), 2**63 - 1, -(2**63)}
#: The widest default the arguments' table shows.
_DEFAULT_WIDTH = 32


@dataclass(frozen=True, slots=True)
class PluginInfo:
    """One plugin as ``policy-scheduler plugins`` shows it."""

    name: str
    #: ``built-in (legacy)``, ``built-in (v1.30)``, ``built-in (v1.34)``, or the package
    #: that registers it.
    source: str
    points: tuple[str, ...] = ()
    doc: str = ""
    #: The JSON schema of its ``Args`` model; None when it takes no arguments.
    args: dict[str, Any] | None = None
    #: Its async calls' deadline (only for plugins with such a point: PostFilter and the
    #: binding cycle's).
    timeout_seconds: float | None = None
    #: ``module:Class`` of an entry point.
    entry_point: str = ""
    #: Why it cannot be used (it failed to load, ...); then nothing else is known.
    error: str = ""

    @property
    def summary(self) -> str:
        """The doc's first paragraph on one line."""
        return " ".join(self.doc.split("\n\n")[0].split())

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "source": self.source}
        if self.entry_point:
            out["entryPoint"] = self.entry_point
        if self.error:
            out["error"] = self.error
            return out
        out.update(points=list(self.points), description=self.summary, doc=self.doc, args=self.args)
        if self.timeout_seconds is not None:
            out["timeoutSeconds"] = self.timeout_seconds
        return out


def _clean_doc(text: str | None) -> str:
    """A docstring for people: dedented, reST's double backquotes and roles dropped."""
    import inspect

    text = inspect.cleandoc(text or "")
    text = re.sub(r":(?:class|func|meth|mod|data|attr):`~?\.*([^`]+)`", r"\1", text)
    return text.replace("``", "")


def _plugin_info(name: str, cls: type[Plugin], source: str, entry_point: str = "") -> PluginInfo:
    from .engine.plugins import describe

    described = describe(cls)
    points = tuple(described["points"])
    # A built-in whose own client keeps the deadline says so with an infinite one.
    deadlined = any(point in _DEADLINED_POINTS for point in points) and math.isfinite(
        cls.timeout_seconds
    )
    return PluginInfo(
        name=name,
        source=source,
        points=points,
        doc=_clean_doc(cls.__doc__),
        args=described["args"],
        timeout_seconds=float(cls.timeout_seconds) if deadlined else None,
        entry_point=entry_point,
    )


@contextlib.contextmanager
def _quiet_loader() -> Iterator[None]:
    """The loader logs a failing plugin's traceback (for the operator's log); here the
    listing says what went wrong, in one line."""
    loader = logging.getLogger("policy_scheduler.engine.plugins")
    disabled = loader.disabled
    loader.disabled = True
    try:
        yield
    finally:
        loader.disabled = disabled


def installed_plugins() -> list[PluginInfo]:
    """Every plugin a policy can name: the legacy stages, kube-scheduler v1.30's in-tree
    plugins, then the entry points of installed packages (each group by name)."""
    from .engine.builtins import BUILTIN_PLUGINS
    from .engine.plugins import (
        PluginProblem,
        begin_load,
        builtin_plugins,
        installed_entry_points,
        plugin_class,
    )

    builtins = builtin_plugins()
    found = [
        _plugin_info(name, cls, "built-in (legacy)")
        for name, cls in sorted(BUILTIN_PLUGINS.items())
    ]
    found += [
        _plugin_info(
            name, cls, "built-in (v1.34)" if name in V134_PLUGIN_POINTS else "built-in (v1.30)"
        )
        for name, cls in sorted(builtins.items())
        if name not in BUILTIN_PLUGINS
    ]
    installed = installed_entry_points()
    for name in installed:
        begin_load(name)  # all at once: a hung import costs one deadline, not one each
    for name, entry in sorted(installed.items()):
        dist = entry.dist
        source = f"{dist.name} {dist.version}" if dist is not None else entry.module
        if name in builtins:
            found.append(
                PluginInfo(
                    name,
                    source,
                    entry_point=entry.value,
                    error="ignored: a built-in plugin has this name",
                )
            )
            continue
        try:
            with _quiet_loader():
                cls = plugin_class(name)
        except PluginProblem as exc:
            found.append(PluginInfo(name, source, entry_point=entry.value, error=str(exc)))
            continue
        found.append(_plugin_info(name, cls, source, entry.value))
    return found


def _schema_type(schema: Mapping[str, Any]) -> str:
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    if "anyOf" in schema:
        return " | ".join(_schema_type(option) for option in schema["anyOf"])
    if "enum" in schema:
        return " | ".join(json.dumps(value) for value in schema["enum"])
    kind = schema.get("type", "any")
    if kind == "array":
        return f"list of {_schema_type(schema.get('items') or {})}"
    if kind == "object" and isinstance(schema.get("additionalProperties"), Mapping):
        return f"map of {_schema_type(schema['additionalProperties'])}"
    return str(kind)


def _schema_bounds(schema: Mapping[str, Any]) -> list[str]:
    words = {
        "minimum": ">=",
        "exclusiveMinimum": ">",
        "maximum": "<=",
        "exclusiveMaximum": "<",
        "minLength": "length >=",
        "maxLength": "length <=",
    }
    bounds = [
        f"{word} {schema[key]:g}" if isinstance(schema[key], float) else f"{word} {schema[key]}"
        for key, word in words.items()
        if key in schema and schema[key] not in _MACHINE_BOUNDS
    ]
    for option in schema.get("anyOf") or ():
        bounds += _schema_bounds(option)
    return bounds


def _argument_rows(schema: Mapping[str, Any]) -> list[tuple[str, str, str, str]]:
    """(name, type, default, description) of each top-level argument."""
    rows = []
    required = set(schema.get("required") or ())
    for name, field_schema in (schema.get("properties") or {}).items():
        if name in required:
            default = "(required)"
        elif "default" in field_schema:
            default = json.dumps(field_schema["default"])
            if len(default) > _DEFAULT_WIDTH:  # a structure: -o json shows it whole
                default = default[: _DEFAULT_WIDTH - 3] + "..."
        else:
            default = ""
        text = str(field_schema.get("description") or "")
        bounds = _schema_bounds(field_schema)
        if bounds:
            text = f"({', '.join(bounds)}) {text}".rstrip()
        rows.append((name, _schema_type(field_schema), default, text))
    return rows


def _columns(rows: Sequence[Sequence[str]], indent: str = "") -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    lines = [
        indent
        + "  ".join([*(cell.ljust(w) for cell, w in zip(row, widths, strict=False)), row[-1]])
        for row in rows
    ]
    return "\n".join(line.rstrip() for line in lines) + "\n"


def _render_plugin(info: PluginInfo) -> str:
    where = f" ({info.entry_point})" if info.entry_point else ""
    lines = [f"{info.name}  {info.source}{where}"]
    lines.append(f"  points:   {', '.join(info.points)}")
    if info.timeout_seconds is not None:
        bounded = [p[0].upper() + p[1:] for p in info.points if p in _DEADLINED_POINTS]
        lines.append(f"  deadline: {info.timeout_seconds:g}s for each {', '.join(bounded)} call")
    if info.doc:
        lines.append("")
        lines += [f"  {line}".rstrip() for line in info.doc.splitlines()]
    lines.append("")
    if info.args is None:
        lines.append("  arguments: none")
        return "\n".join(lines) + "\n"
    lines.append("  arguments (spec.pluginConfig[].args; -o json: the JSON schema):")
    rows = [("NAME", "TYPE", "DEFAULT", "DESCRIPTION"), *_argument_rows(info.args)]
    return "\n".join(lines) + "\n" + _columns(rows, "    ")


def cmd_plugins(args: argparse.Namespace) -> int:
    listed = installed_plugins()
    if args.name is None:
        if args.output == "json":
            json.dump({"plugins": [info.to_json() for info in listed]}, sys.stdout, indent=2)
            sys.stdout.write("\n")
            return 0
        rows = [("NAME", "POINTS", "SOURCE", "DESCRIPTION")]
        rows += [
            (
                info.name,
                ",".join(info.points) or "-",
                info.source,
                f"error: {info.error}" if info.error else info.summary,
            )
            for info in listed
        ]
        sys.stdout.write(_columns(rows))
        return 0
    found = next((info for info in listed if info.name == args.name), None)
    if found is None:
        raise InputError(
            f"no plugin {args.name!r} is installed (`policy-scheduler plugins` lists them)"
        )
    if args.output == "json":
        json.dump(found.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif not found.error:
        sys.stdout.write(_render_plugin(found))
    if found.error:
        print(f"error: {found.name} ({found.source}): {found.error}", file=sys.stderr)
        return 1
    return 0


class _DefaultsFormatter(argparse.HelpFormatter):
    """Every option's help ends with its default (or says it is required), so that
    ``--help`` answers "what if I leave it out?". A help text that already says what its
    default is (``default: $POD_NAMESPACE``) is left as it is."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if not action.option_strings or action.default is argparse.SUPPRESS:
            return text
        if "default:" in text or "(the default)" in text:
            return text
        if action.required:
            return f"{text} (required)".lstrip()
        default = action.default
        if isinstance(default, bool):
            shown = "on" if default else "off"
        elif default is None or default == []:
            shown = "none"
        elif isinstance(default, float):
            shown = f"{default:g}"
        else:
            shown = "%(default)s"
        return f"{text} (default: {shown})".lstrip()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="policy-scheduler",
        description="A Kubernetes scheduler driven by SchedulingPolicy resources.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_SubcommandParser)

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
    chosen = sim.add_mutually_exclusive_group()
    chosen.add_argument(
        "--policy",
        metavar="FILE",
        help="a SchedulingPolicy or legacy Policy file deciding every pending pod "
        "(default: the policies among the inputs, and the built-in default for "
        "--scheduler-name)",
    )
    chosen.add_argument(
        "--config",
        metavar="FILE",
        help="a KubeSchedulerConfiguration: each profile decides the pending pods of its "
        "schedulerName, as kube-scheduler v1.30 would",
    )
    sim.add_argument(
        "--seed",
        type=int,
        default=DEFAULT_SEED,
        metavar="N",
        help="seed of the random tie-break among the best nodes of v1.30-style policies "
        f"(default {DEFAULT_SEED}: the same input gives the same output)",
    )
    sim.add_argument(
        "--scheduler-name",
        default=default_of("scheduler_name"),
        help="the schedulerName the built-in default policy serves",
    )
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
        help="per-node detail in -o json: all, the N best-scored nodes' scores, "
        "or none (no per-node data, feasibleCount instead) (default: all)",
    )
    sim.add_argument(
        "--skip-extenders",
        action="store_true",
        help="do not call the policies' HTTP extenders (their filters and scores are left out)",
    )
    sim.set_defaults(func=cmd_simulate)

    val = sub.add_parser(
        "validate",
        help="check SchedulingPolicy / legacy Policy / KubeSchedulerConfiguration files",
    )
    val.add_argument("file", metavar="FILE")
    val.set_defaults(func=cmd_validate)

    conv = sub.add_parser(
        "convert",
        help="turn a legacy kube-scheduler Policy into a SchedulingPolicy, or a "
        "KubeSchedulerConfiguration into one SchedulingPolicy per profile",
    )
    conv.add_argument(
        "legacy_policy",
        metavar="FILE",
        help="a legacy Policy or a KubeSchedulerConfiguration; - for stdin",
    )
    conv.add_argument("--name", default="default", help="metadata.name of the SchedulingPolicy")
    conv.add_argument(
        "--scheduler-name", default=default_of("scheduler_name"), help="spec.schedulerName to serve"
    )
    conv.add_argument(
        "-o", "--output", choices=("yaml", "json"), default="yaml", help="output format"
    )
    conv.set_defaults(func=cmd_convert)

    plug = sub.add_parser(
        "plugins",
        help="list the installed plugins: their extension points and arguments",
        description="List the plugins a SchedulingPolicy can name (built-in, and those "
        "installed packages register under the entry-point group policy_scheduler.plugins), "
        "or show one with its arguments.",
    )
    plug.add_argument("name", nargs="?", metavar="NAME", help="show this plugin only")
    plug.add_argument(
        "-o",
        "--output",
        choices=("table", "json"),
        default="table",
        help="json: every field, the arguments as their JSON schema",
    )
    plug.set_defaults(func=cmd_plugins)

    crd = sub.add_parser("crd", help="print the SchedulingPolicy CustomResourceDefinition")
    crd.set_defaults(func=cmd_crd)

    run = sub.add_parser("run", help="run the scheduler against a cluster (the operator)")
    run.add_argument(
        "--scheduler-name",
        default=default_of("scheduler_name"),
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
        help="schedule pods of this namespace only; repeatable (default: all namespaces)",
    )
    scope.add_argument(
        "-A",
        "--all-namespaces",
        action="store_true",
        help="schedule pods of every namespace (the default)",
    )
    run.add_argument(
        "--log-level",
        choices=("debug", "info", "warning", "error"),
        default=default_of("log_level"),
        help="least severe log records written",
    )
    run.add_argument(
        "--log-format",
        choices=("text", "json"),
        default=default_of("log_format"),
        help="json: one object per line, for log collectors",
    )
    run.add_argument(
        "--metrics-port", type=_port, default=default_of("metrics_port"), help="0 disables /metrics"
    )
    run.add_argument(
        "--health-port",
        type=_port,
        default=default_of("health_port"),
        help="serves GET /healthz; 0 disables",
    )
    run.add_argument(
        "--bind-address",
        dest="host",
        default=default_of("host"),
        help="address the metrics and health servers listen on",
    )
    run.add_argument(
        "--leader-elect",
        action=argparse.BooleanOptionalAction,
        default=default_of("leader_elect"),
        help="take a Lease before scheduling (for several replicas)",
    )
    run.add_argument(
        "--lease-name", default=default_of("lease_name"), help="the coordination.k8s.io Lease"
    )
    run.add_argument(
        "--lease-namespace",
        default=None,
        help="namespace of the Lease (default: $POD_NAMESPACE, else default)",
    )
    run.add_argument(
        "--qps",
        type=_rate,
        default=default_of("qps"),
        help="API requests per second (0: unlimited)",
    )
    run.add_argument(
        "--burst",
        type=_count,
        default=default_of("burst"),
        help="API requests allowed at once above --qps",
    )
    run.add_argument(
        "--report-qps",
        type=_rate,
        default=default_of("report_qps"),
        help="events and pod conditions per second, a budget apart from --qps (default: "
        "as --qps; 0: unlimited)",
    )
    run.add_argument(
        "--report-burst",
        type=_count,
        default=default_of("report_burst"),
        help="burst above --report-qps (default: as --burst)",
    )
    run.add_argument(
        "--report-concurrency",
        type=_count,
        default=default_of("report_concurrency"),
        help="event and pod condition writes in flight at once",
    )
    run.add_argument(
        "--bind-workers",
        type=_count,
        default=default_of("bind_workers"),
        help=(
            "binding calls in flight at once (each pod binds in a task of its own: the "
            "scheduling loop never waits for one)"
        ),
    )
    run.add_argument(
        "--api-timeout",
        type=_positive_seconds,
        default=default_of("api_timeout"),
        metavar="SECONDS",
        help="deadline of every API call",
    )
    run.add_argument(
        "--resync-period",
        type=_seconds,
        default=default_of("resync_period"),
        metavar="SECONDS",
        help="LIST the cluster this often to reconcile the cache (0: only after a re-list)",
    )
    run.add_argument(
        "--shutdown-timeout",
        type=_positive_seconds,
        default=default_of("shutdown_timeout"),
        metavar="SECONDS",
        help="a shutdown abandons what is left after this long",
    )
    run.add_argument(
        "--volume-binding-timeout",
        type=_positive_seconds,
        default=default_of("volume_binding_timeout"),
        metavar="SECONDS",
        help="how long a pod waits for the PV controller to bind its volumes before it "
        "is retried (kube-scheduler's bindTimeoutSeconds)",
    )
    run.add_argument(
        "--pod-initial-backoff-seconds",
        type=_positive_seconds,
        default=default_of("pod_initial_backoff"),
        metavar="SECONDS",
        help="a pod whose attempt failed waits this long before it is tried again, "
        "doubling with each failure (kube-scheduler's podInitialBackoffSeconds)",
    )
    run.add_argument(
        "--pod-max-backoff-seconds",
        type=_positive_seconds,
        default=default_of("pod_max_backoff"),
        metavar="SECONDS",
        help="the longest such wait (kube-scheduler's podMaxBackoffSeconds); at least "
        "--pod-initial-backoff-seconds",
    )
    run.add_argument(
        "--allow-default-scheduler",
        action="store_true",
        default=default_of("allow_default_scheduler"),
        help='let a SchedulingPolicy (or --scheduler-name) serve "default-scheduler", '
        "kube-scheduler's own name (without: such a policy is Accepted=False, "
        "DefaultSchedulerNotAllowed)",
    )
    run.set_defaults(func=cmd_run)

    exp = sub.add_parser("explain", help="why is this pod pending? per-node answer, read-only")
    exp.add_argument("pod", metavar="POD")
    exp.add_argument("-n", "--namespace", default="default", help="the pod's namespace")
    exp.add_argument(
        "--scheduler-name",
        default=default_of("scheduler_name"),
        help="the name the built-in default policy serves",
    )
    exp.add_argument(
        "-o",
        "--output",
        choices=("table", "json"),
        default="table",
        help="table: simulate's per-node table; json: simulate -o json's shape",
    )
    exp.add_argument(
        "--allow-default-scheduler",
        action="store_true",
        default=default_of("allow_default_scheduler"),
        help="answer as an operator run with --allow-default-scheduler: a policy may serve "
        "kube-scheduler's default-scheduler (without: such pods are kube-scheduler's)",
    )
    exp.add_argument(
        "--skip-extenders",
        action="store_true",
        help="do not call the policy's HTTP extenders (their filters and scores are left out)",
    )
    exp.set_defaults(func=cmd_explain)
    return parser


class _SubcommandParser(argparse.ArgumentParser):
    """A subcommand's parser: its help shows every option's default."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _DefaultsFormatter)
        super().__init__(*args, **kwargs)


def _number(
    convert: Callable[[str], Any],
    low: float,
    *,
    above: bool = False,
    high: float | None = None,
    unit: str = "",
) -> Callable[[str], Any]:
    """An argparse ``type`` that reads a number and refuses one out of range, naming it."""
    noun = f"a number of {unit}" if unit else "a number"
    at_least = f"more than {low:g}" if above else f"at least {low:g}"
    bounds = at_least if high is None else f"{at_least} and at most {high:g}"
    suffix = f" {unit}" if unit else ""

    def parse(text: str) -> Any:
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not {noun}: {text!r}") from None
        if (value <= low if above else value < low) or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"must be {bounds}{suffix}, got {text!r}")
        return value

    return parse


_positive_seconds = _number(float, 0, above=True, unit="seconds")
_seconds = _number(float, 0, unit="seconds")
_port = _number(int, 0, high=65535)
_count = _number(int, 1)
_rate = _number(float, 0)


def cmd_crd(args: argparse.Namespace) -> int:
    from .crd import render_yaml

    sys.stdout.write(render_yaml())
    return 0


def options_from_args(args: argparse.Namespace) -> Options:
    """The operator's options from ``run``'s flags (and the pod's environment)."""
    options = Options(
        scheduler_name=args.scheduler_name,
        namespaces=tuple(args.namespaces),
        log_level=args.log_level,
        log_format=args.log_format,
        metrics_port=args.metrics_port,
        health_port=args.health_port,
        host=args.host,
        leader_elect=args.leader_elect,
        lease_name=args.lease_name,
        qps=args.qps,
        burst=args.burst,
        report_qps=args.report_qps,
        report_burst=args.report_burst,
        report_concurrency=args.report_concurrency,
        bind_workers=args.bind_workers,
        api_timeout=args.api_timeout,
        resync_period=args.resync_period,
        shutdown_timeout=args.shutdown_timeout,
        volume_binding_timeout=args.volume_binding_timeout,
        pod_initial_backoff=args.pod_initial_backoff_seconds,
        pod_max_backoff=args.pod_max_backoff_seconds,
        allow_default_scheduler=args.allow_default_scheduler,
    )
    if args.lease_namespace:
        options.lease_namespace = args.lease_namespace
    return options


def cmd_run(args: argparse.Namespace) -> int:
    from .operating import operate, run_loop

    options = options_from_args(args)
    if options.pod_max_backoff < options.pod_initial_backoff:
        raise ClusterError(
            f"--pod-max-backoff-seconds must be at least --pod-initial-backoff-seconds "
            f"({options.pod_initial_backoff:g}), got {options.pod_max_backoff:g}"
        )
    if options.scheduler_name == KUBE_SCHEDULER_NAME and not options.allow_default_scheduler:
        raise ClusterError(
            f'--scheduler-name "{KUBE_SCHEDULER_NAME}" is kube-scheduler\'s own name: add '
            "--allow-default-scheduler (chart value allowDefaultScheduler: true) to serve it"
        )
    with contextlib.suppress(KeyboardInterrupt), _cluster_errors():
        run_loop(operate(options))
    return 0


#: What one does without a kubeconfig, said by every message about one.
_KUBECONFIG_HELP = (
    "point KUBECONFIG at your cluster's kubeconfig (kind, minikube and the cloud CLIs "
    "write one; `kubectl config view` shows it), or run in a pod of the cluster"
)


def _check_kubeconfig() -> None:
    """Refuse at once, with the next step, when there is no kubeconfig to read.

    In a pod the service account is used. Elsewhere kubernetes-asyncio reads
    ``$KUBECONFIG`` (files separated by ``:``) or ``~/.kube/config``; with none of them
    present it reads an empty configuration and says "Expected key current-context".
    """
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        return
    listed = [path for path in os.environ.get("KUBECONFIG", "").split(os.pathsep) if path]
    if listed:
        if not any(os.path.exists(os.path.expanduser(path)) for path in listed):
            raise ClusterError(
                f"KUBECONFIG={os.environ['KUBECONFIG']} names no file that exists: "
                + _KUBECONFIG_HELP
            )
    elif not os.path.exists(os.path.expanduser("~/.kube/config")):
        raise ClusterError(
            "no kubeconfig: KUBECONFIG is not set and ~/.kube/config does not exist: "
            + _KUBECONFIG_HELP
        )


@contextlib.contextmanager
def _cluster_errors() -> Iterator[None]:
    """Inside, failing to reach or to use the cluster is a :class:`ClusterError`.

    The API client is imported here, not with the module: ``simulate`` never loads it.
    """
    from kubernetes_asyncio.config import ConfigException

    from .runtime.access import AccessError
    from .runtime.serving import ListenError

    _check_kubeconfig()
    try:
        yield
    except AccessError as exc:
        raise ClusterError(str(exc)) from None
    except ListenError as exc:
        raise ClusterError(
            f"{exc}: another process has that port; choose another --metrics-port or "
            "--health-port (0 turns that server off), or another --bind-address"
        ) from None
    except (ConfigException, yaml.YAMLError) as exc:  # the kubeconfig, read as the client reads it
        where = os.environ.get("KUBECONFIG") or "~/.kube/config"
        if os.environ.get("KUBERNETES_SERVICE_HOST"):
            where = "the pod's service account"
        detail = " ".join(str(exc).split()) or type(exc).__name__
        raise ClusterError(f"cannot use {where}: {detail}: {_KUBECONFIG_HELP}") from None


def cmd_explain(args: argparse.Namespace) -> int:
    from .extending import HttpExtenderClient
    from .operating import load_client
    from .runtime.explaining import WaitingForVolumes, explain

    async def go() -> tuple[CompiledPolicy, Decision]:
        api_client = await load_client(10)  # a handful of LISTs: a small pool
        try:
            allow = args.allow_default_scheduler
            if args.skip_extenders:
                return await explain(
                    api_client,
                    args.namespace,
                    args.pod,
                    args.scheduler_name,
                    allow_default_scheduler=allow,
                )
            async with HttpExtenderClient() as extenders:
                return await explain(
                    api_client,
                    args.namespace,
                    args.pod,
                    args.scheduler_name,
                    extenders=extenders,
                    allow_default_scheduler=allow,
                )
        finally:
            await api_client.close()

    try:
        with _cluster_errors():
            policy, decision = asyncio.run(go())
    except WaitingForVolumes as answer:
        print(answer)  # an answer about the pod, as the table is: stdout, exit 0
        return 0
    if policy.extenders and args.skip_extenders:
        _note_skipped_extenders(policy.name, len(policy.extenders))
    _warn_extender_errors(decision)
    if args.output == "json":
        json.dump(report_to_json(policy.name, [decision]), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render_report({policy.name: policy}, [decision]))
    return 0


def main(argv: Sequence[str] | None = None, *, exit_fast: bool = False) -> int:
    """Run one command; its exit code. ``exit_fast`` (the console script, not callers in
    a process that goes on): ``simulate`` ends the process itself once its output is out,
    without freeing the cluster (see :func:`entry`)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "detail", ALL_DETAIL) != ALL_DETAIL and args.output != "json":
        parser.error("--detail applies to -o json only")
    exiting = exit_fast and args.func is cmd_simulate
    if exiting:
        # The decoded input stays referenced until the process ends: nothing frees it.
        args.retained = []
    out_of_memory = False
    try:
        code: int = args.func(args)
    except USER_ERRORS as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except MemoryError:
        # Said once out of this block: by then the input it was reading is freed.
        out_of_memory = True
    except BrokenPipeError:
        return 0
    except OSError as exc:
        if args.func is not cmd_simulate:
            raise
        # simulate reads through InputError and reaches extenders through ExtenderError:
        # what is left is its output failing (a full disk). One line, as any user error.
        _output_failed(exc)
        if exiting:
            # What stdout still holds cannot be written: the interpreter's exit would try
            # again and print a traceback-like complaint.
            sys.stderr.flush()
            os._exit(1)
        return 1
    if out_of_memory:
        print(
            "error: out of memory: the input needs more memory than this process may use "
            "(ulimit -v, or the container's limit)",
            file=sys.stderr,
        )
        return 1
    if exiting:
        _exit_now(code)
    return code


def _output_failed(exc: OSError) -> None:
    print(f"error: writing the output: {exc.strerror or exc}", file=sys.stderr)


def _exit_now(code: int) -> NoReturn:
    """Flush the output and end the process without tearing the heap down.

    After ``simulate``, the heap is the whole cluster (half a million objects at 5000
    nodes): freeing it object by object at interpreter exit takes a quarter of a second
    and more, and nothing is left to do that needs it (no file is open for writing but
    stdout and stderr, no thread, no atexit work of ours).
    """
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        pass  # the reader left (``| head``): what it read was written
    except OSError as exc:  # a full disk: the interpreter's own exit would have said so too
        _output_failed(exc)
        code = 1
    sys.stderr.flush()
    os._exit(code)


def entry() -> NoReturn:
    """The ``policy-scheduler`` console script: :func:`main`, exiting fast after simulate."""
    sys.exit(main(exit_fast=True))


if __name__ == "__main__":
    entry()
