"""Every command shown in the docs is exercised, by this test, by another test, or by CI.

Commands are the lines of fenced ``bash``/``sh``/``shell`` blocks (comment lines skipped,
``\\`` continuations joined) and the ``$ `` lines of ``console`` blocks, in README.md and
docs/*.md. A line is split into simple commands at ``&&``, ``||``, ``;`` and ``|``;
redirections are dropped and leading ``VAR=value`` assignments become the environment.

* ``policy-scheduler simulate|validate|convert|crd|plugins`` run offline: they are run here,
  in-process through ``policy_scheduler.cli.main(argv)`` with the repository root as
  the working directory. The exit code must be the one the doc implies: 0, unless the
  line's comment says ``exit N`` / ``exits N``. In a ``console`` block, the lines shown
  under the command must appear in its output (stdout then stderr), in that order, with
  gaps allowed (``...`` marks an elision for the reader). Files must exist in the
  repository, except the few names the docs use for the reader's own files
  (``PLACEHOLDERS``), which are replaced by a repository file of the same kind. The
  sample plugin package (``examples/plugins/sample``) is pip-installed first, as the docs
  say, for a command about plugins or one reading its files.
* An offline command reading ``examples/extender/policy.yaml`` (whose extender the docs
  start by hand) runs against the example extender started here on a free port, through
  a copy of the policy pointing at it; its output is compared with that port read as
  the documented one and blanks collapsed (the table's columns are as wide as the port).
* Every other command (helm, kubectl, curl, ``policy-scheduler run|explain``, kopf,
  pip, venv, pytest, ...) must match a prefix of ``EXERCISED_ELSEWHERE``, which names
  the tests (``path::test_function``, checked to exist) or the CI script lines
  (``.ci/run`` plus a string it must contain) that exercise it.

A documented command matching neither fails the test: document only what is exercised,
or exercise what you document.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import shlex
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from plugins.installing import SAMPLE, ensure_installed
from policy_scheduler import cli

ROOT = Path(__file__).resolve().parents[2]
DOCS = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    ROOT / "charts" / "policy-scheduler" / "README.md",
]
CI_SCRIPT = ".ci/run"

SHELL_LANGUAGES = {"bash", "sh", "shell"}
CONSOLE_LANGUAGES = {"console"}
OFFLINE_SUBCOMMANDS = {"simulate", "validate", "convert", "crd", "plugins"}
#: Shell built-ins that only set the stage for the next command.
STAGE_SETTERS = {"cd"}

#: Names the docs use for the reader's own files -> (a valid stand-in, an invalid one).
#: The invalid stand-in is used when the doc says the command exits 1.
PLACEHOLDERS: dict[str, tuple[str, str | None]] = {
    "cluster.yaml": ("examples/cluster.yaml", None),
    # JSON or YAML is told by content: the YAML example stands in for a kubectl JSON dump.
    "cluster.json": ("examples/cluster.yaml", None),
    "my-policy.yaml": ("examples/policies/bin-packing.yaml", "docs/examples/invalid-policy.yaml"),
    "policy.yaml": ("examples/policies/zone-spread.yaml", "docs/examples/invalid-policy.yaml"),
    "gpu-policy.yaml": ("examples/policies/gpu.yaml", "docs/examples/invalid-policy.yaml"),
    "old-policy.json": ("examples/legacy-policy.json", "docs/examples/invalid-legacy-policy.json"),
    # docs/from-kube-scheduler.md: the reader's KubeSchedulerConfiguration, a replayed dump
    "scheduler-config.yaml": (
        "examples/kube-scheduler-config.yaml",
        "docs/examples/invalid-kube-scheduler-config.yaml",
    ),
    "replay.json": ("examples/cluster.yaml", None),
}

CHART_TEST = "tests/chart/test_chart.py"
CRD_TEST = "tests/chart/test_crd.py"
E2E_OPERATOR = "tests/e2e/test_operator.py"
UNSCHEDULABLE_E2E = (
    f"{E2E_OPERATOR}::"
    "test_unschedulable_pod_gets_condition_and_one_aggregated_event_then_a_new_node_helps"
)
POLICY_STATUS_E2E = (
    f"{E2E_OPERATOR}::test_invalid_policy_is_refused_and_the_last_good_one_keeps_scheduling"
)
PREEMPTION_E2E = (
    "tests/e2e/test_preemption.py::"
    "test_a_high_priority_pod_evicts_a_nodes_victims_and_is_bound_there"
)
VOLUME_E2E = "tests/e2e/test_volume_binding.py"
METRICS_OVER_HTTP = (
    "tests/runtime/test_metrics.py::test_metrics_are_served_over_http_and_the_server_stops"
)
PROBES_E2E = (
    "tests/e2e/test_probes.py::"
    "test_a_failing_startup_list_is_not_ready_but_alive_until_the_api_answers"
)
IMAGE_TEST = "tests/chart/test_image.py"
KUBECTL_E2E = "tests/e2e/test_kubectl.py"
RENDER_TEST = "tests/chart/test_render_offline.py"

#: Command prefix (normalised: ``.venv/bin/`` dropped, ``python3`` is ``python``) -> what
#: exercises it: ``path::test_function`` or ``.ci/run::<text the script contains>``.
DRA_WALKTHROUGH = (
    "tests/e2e/test_kubectl.py::test_the_dra_walkthrough_serve_kubectl_and_the_operator"
)
EXERCISED_ELSEWHERE: dict[str, tuple[str, ...]] = {
    # installing and testing: what CI runs
    "python -m venv": (f"{CI_SCRIPT}::$PY -m venv .venv",),
    "pip install -q -e .[dev]": (f"{CI_SCRIPT}::.venv/bin/pip install -q -e '.[dev]'",),
    "python -m pytest": (f"{CI_SCRIPT}::.venv/bin/python -m pytest",),
    # the sample plugin package (docs/plugins.md); tests/plugins installs it the same way
    "pip install -e examples/plugins/sample": (
        f"{CI_SCRIPT}::.venv/bin/pip install -q --no-deps -e examples/plugins/sample",
        "tests/plugins/test_sample.py::"
        "test_the_sample_is_found_by_its_entry_point_in_the_package_pip_installed",
    ),
    "kubectl apply -f examples/plugins/sample/policy.yaml": (
        "tests/plugins/test_operator.py::"
        "test_the_sample_plugin_filters_scores_thanks_and_follows_its_policy",
    ),
    "lint-imports --config ../.importlinter": (
        f"{CI_SCRIPT}::lint-imports --config ../.importlinter",
    ),
    # benchmarks (docs/performance.md)
    "python benchmarks/engine_bench.py": (
        "tests/benchmarks/test_bench_smoke.py::test_quick_mode_runs_every_workload_once",
        "tests/benchmarks/test_bench_smoke.py::test_plot_is_a_png",
    ),
    "python benchmarks/simulate_bench.py": (
        "tests/benchmarks/test_simulate_bench_smoke.py::"
        "test_quick_mode_loads_and_runs_every_command",
        "tests/benchmarks/test_simulate_bench_smoke.py::test_the_yaml_dump_reads_the_same",
        "tests/benchmarks/test_simulate_bench_smoke.py::test_the_v130_profile_and_the_a_b",
    ),
    "python benchmarks/dra_bench.py": (
        "tests/benchmarks/test_dra_bench_smoke.py::test_more_pods_than_devices_get_each_its_own",
        "tests/benchmarks/test_dra_bench_smoke.py::test_without_claims_every_pod_is_placed",
    ),
    "python benchmarks/queueing_bench.py": (
        "tests/benchmarks/test_queueing_bench_smoke.py::test_a_storm_costs_no_redecisions_with_hints",
    ),
    "python benchmarks/scheduler_perf.py": (
        "tests/benchmarks/test_scheduler_perf_smoke.py::"
        "test_every_workload_runs_with_both_policies",
        "tests/benchmarks/test_scheduler_perf_smoke.py::"
        "test_the_workloads_decide_what_their_names_say",
    ),
    "python benchmarks/intree_spread_bench.py": (
        "tests/benchmarks/test_intree_spread_bench_smoke.py::"
        "test_small_run_times_both_sides_for_every_pod",
    ),
    "benchmarks/instructions_ab.sh": (
        "tests/benchmarks/test_instructions_smoke.py::"
        "test_one_run_builds_the_cluster_and_decides_the_pods",
        "tests/benchmarks/test_instructions_smoke.py::"
        "test_the_driver_script_parses_and_says_what_it_needs",
    ),
    "python benchmarks/e2e_bench.py": (
        "tests/benchmarks/test_e2e_bench_smoke.py::test_quick_e2e_benchmark_reports_the_operator_beside_its_floors",
        "tests/benchmarks/test_e2e_bench_smoke.py::"
        "test_the_own_stack_floor_binds_each_pod_once_and_reports_its_cpu",
    ),
    # the chart and the CRD
    "helm install policy-scheduler charts/policy-scheduler": (
        "tests/e2e/test_chart_install.py::test_default_chart_applied_to_the_emulator_schedules_pods",
        f"{CHART_TEST}::test_every_manifest_validates",
        f"{CHART_TEST}::test_ha_turns_leader_election_on_with_a_lease_in_the_release_namespace",
        f"{CHART_TEST}::test_metrics_service_and_service_monitor_select_each_other",
    ),
    "helm upgrade policy-scheduler charts/policy-scheduler": (
        f"{CHART_TEST}::test_every_manifest_validates",
        f"{CHART_TEST}::test_single_replica_recreates_rather_than_running_two_schedulers",
    ),
    "kubectl apply -f crds/": (
        f"{CRD_TEST}::test_crd_file_is_build_crd_output",
        f"{CRD_TEST}::test_crd_passes_kubernetes_validate_strict",
    ),
    # `policy-scheduler crd | kubectl apply -f -`: the output is the CRD file
    "kubectl apply -f -": (f"{CRD_TEST}::test_crd_file_is_build_crd_output",),
    "python -m policy_scheduler.crd": (f"{CRD_TEST}::test_crd_file_is_build_crd_output",),
    "cp crds/schedulingpolicies.policyscheduler.io.yaml charts/policy-scheduler/crds/": (
        f"{CRD_TEST}::test_chart_installs_the_same_crd_file",
    ),
    "kubectl apply -f examples/policies/": (
        f"{CRD_TEST}::test_examples_are_accepted",
        "tests/e2e/test_chart_install.py::test_default_chart_applied_to_the_emulator_schedules_pods",
    ),
    # the chart rendered and checked with no helm binary (charts/policy-scheduler/README.md)
    "python charts/render.py": (
        f"{RENDER_TEST}::test_the_documented_commands_lint_render_and_validate_the_chart",
        f"{RENDER_TEST}::test_lint_says_what_the_schema_refuses",
    ),
    "kubernetes-validate --strict -k 1.30.0 rendered.yaml": (
        f"{RENDER_TEST}::test_the_documented_commands_lint_render_and_validate_the_chart",
        f"{RENDER_TEST}::test_strict_validation_refuses_an_unknown_field",
    ),
    # observing
    "kubectl get schedpol": (
        POLICY_STATUS_E2E,
        f"{KUBECTL_E2E}::test_apply_validates_the_policy_on_the_server_and_get_prints_its_columns",
        f"{CRD_TEST}::test_printer_columns",
        "tests/cli/test_cli.py::test_simulate_reads_a_kind_list_and_a_policy_file",
    ),
    "kubectl describe schedpol": (POLICY_STATUS_E2E,),
    # promoting a Shadow policy (docs/rolling-out.md)
    "kubectl patch schedpol": (
        "tests/e2e/test_shadow.py::test_a_shadow_policy_is_compared_on_live_traffic_then_promoted",
    ),
    "kubectl describe pod": (
        UNSCHEDULABLE_E2E,
        PREEMPTION_E2E,
        f"{KUBECTL_E2E}::test_describe_pod_shows_the_pod_and_only_its_events",
    ),
    "kubectl get events": (UNSCHEDULABLE_E2E, PREEMPTION_E2E),
    "kubectl get events -n shop --field-selector reason=VolumeBindingFailed": (
        f"{VOLUME_E2E}::"
        "test_a_pv_controller_that_never_answers_fails_the_binding_and_the_pod_is_retried",
    ),
    # what the volume binder wrote: the claim's selected-node, the PV's claimRef
    "kubectl get pvc": (
        f"{VOLUME_E2E}::test_a_local_pv_and_a_provisioned_volume_both_end_up_bound_with_their_pods",
    ),
    "kubectl get pv -o": (f"{VOLUME_E2E}::test_two_pods_competing_for_one_pv_never_both_get_it",),
    "kubectl describe pvc": (
        f"{VOLUME_E2E}::test_a_local_pv_and_a_provisioned_volume_both_end_up_bound_with_their_pods",
    ),
    "kubectl get pod": (
        UNSCHEDULABLE_E2E,
        f"{E2E_OPERATOR}::test_pods_of_other_schedulers_are_untouched",
        PREEMPTION_E2E,
    ),
    # `kubectl get ... -A -o yaml > cluster.yaml`, read back by simulate
    "kubectl get nodes,pods,": (
        "tests/cli/test_cli.py::test_simulate_reads_a_kind_list_and_a_policy_file",
    ),
    "kubectl -n policy-scheduler get lease": (
        "tests/runtime/test_leadership.py::test_first_elector_creates_the_lease_and_the_other_stands_by",
        f"{E2E_OPERATOR}::test_standby_takes_over_without_double_binding",
    ),
    "kubectl -n policy-scheduler port-forward": (METRICS_OVER_HTTP,),
    "curl -s localhost:9090/metrics": (METRICS_OVER_HTTP,),
    "kubectl -n policy-scheduler port-forward deploy/policy-scheduler 8081:8081": (PROBES_E2E,),
    "curl -s localhost:8081/healthz": (PROBES_E2E,),
    # the image (docs/operations.md): what refreshing its pins and its base must keep true
    "docker run --rm -v": (
        f"{IMAGE_TEST}::test_every_runtime_requirement_is_pinned_within_its_range",
        f"{IMAGE_TEST}::test_constraints_pin_the_dependencies_of_what_they_pin",
    ),
    "docker buildx imagetools inspect python:3.11-slim": (
        f"{IMAGE_TEST}::test_the_base_image_is_pinned_by_digest",
    ),
    # docs/dra.md's walk-through: the DRA kinds through kubectl, the operator's writes
    "kubectl get deviceclasses,resourceslices": (DRA_WALKTHROUGH,),
    "kubectl get resourceclaim": (DRA_WALKTHROUGH,),
    # kubectl without a cluster (README "Tests"): the emulator served on a port
    "python tests/e2e/serve.py": (
        f"{KUBECTL_E2E}::test_the_serve_command_starts_an_emulator_kubectl_can_use",
    ),
    "export KUBECONFIG=": (
        f"{KUBECTL_E2E}::test_the_serve_command_starts_an_emulator_kubectl_can_use",
    ),
    "kubectl get nodes,pods -A": (f"{KUBECTL_E2E}::test_get_nodes_and_pods_in_every_namespace",),
    "kubectl apply -f examples/policies/bin-packing.yaml": (
        f"{KUBECTL_E2E}::test_apply_validates_the_policy_on_the_server_and_get_prints_its_columns",
    ),
    # the operator and explain, which need a cluster
    "policy-scheduler run": (
        "tests/e2e/test_chart_install.py::test_default_chart_applied_to_the_emulator_schedules_pods",
        f"{CHART_TEST}::test_chart_args_are_flags_the_cli_accepts",
        f"{E2E_OPERATOR}::test_pods_land_on_the_node_the_policy_prefers",
    ),
    "policy-scheduler explain": (
        "tests/e2e/test_explain.py::test_the_cli_command_prints_the_table",
        "tests/e2e/test_explain.py::test_explain_names_the_refusing_predicate_and_scores_the_rest",
    ),
    "kopf run --standalone -A -m policy_scheduler.kopf_entry": (
        "tests/e2e/test_kopf_entry.py::test_kopf_cli_hosts_the_scheduler",
    ),
    # replaying placed pods (docs/from-kube-scheduler.md): the guide's jq lines, as written
    "jq ": ("tests/config/test_simulate_config.py::test_the_guides_replay_recipe_runs_as_written",),
    # the example extender (docs/extenders.md), which simulate then calls (see services())
    "python examples/extender/extender.py": (
        "tests/docs/test_extender_example.py::test_the_example_extender_runs_as_documented",
    ),
}

#: A documented input naming a service the reader starts by hand (the example extender
#: at 127.0.0.1:8888): commands reading it run against that service started here, on a
#: free port, through a copy of the file pointing at it (see services()).
EXAMPLE_EXTENDER_POLICY = "examples/extender/policy.yaml"
EXAMPLE_EXTENDER_ADDRESS = "127.0.0.1:8888"


@dataclass
class Documented:
    """One documented command line, where it is, and what the doc shows of its output."""

    where: str
    line: str
    comment: str = ""
    output: list[str] = field(default_factory=list)

    @property
    def expected_exit(self) -> int:
        found = re.search(r"\bexits?\s+(\d+)", self.comment)
        return int(found.group(1)) if found else 0


@dataclass
class Simple:
    """A simple command: environment assignments and argv."""

    env: dict[str, str]
    argv: list[str]

    @property
    def text(self) -> str:
        return " ".join(self.argv)


# -- extraction ------------------------------------------------------------------------


def split_comment(line: str) -> tuple[str, str]:
    """(command, comment): the comment starts at a ``#`` outside quotes after a blank."""
    quote = ""
    for i, char in enumerate(line):
        if quote:
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip(), line[i + 1 :].strip()
    return line.rstrip(), ""


def documented_commands(path: Path) -> Iterator[Documented]:
    lines = path.read_text().splitlines()
    relative = path.relative_to(ROOT)
    language: str | None = None
    current: Documented | None = None
    pending = ""
    pending_at = 0
    for number, raw in enumerate(lines, start=1):
        fence = re.match(r"^\s*```\s*([\w-]*)", raw)
        if fence:
            if language is None:
                language = fence.group(1) or "text"
            else:
                if current is not None:
                    yield current
                language, current, pending = None, None, ""
            continue
        if language in SHELL_LANGUAGES:
            text = raw.strip()
            if not pending and (not text or text.startswith("#")):
                continue
            if not pending:
                pending_at = number
            if text.endswith("\\"):
                pending += text[:-1] + " "
                continue
            command, comment = split_comment(pending + text)
            pending = ""
            yield Documented(f"{relative}:{pending_at}", command, comment)
        elif language in CONSOLE_LANGUAGES:
            if raw.startswith("$ "):
                if current is not None:
                    yield current
                command, comment = split_comment(raw[2:])
                current = Documented(f"{relative}:{number}", command, comment)
            elif current is not None:
                current.output.append(raw.rstrip())


def simple_commands(line: str) -> list[Simple]:
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    tokens = list(lexer)
    out: list[Simple] = []
    words: list[str] = []
    for token in [*tokens, ";"]:
        if token in ("&&", "||", ";", "|"):
            if words:
                out.append(_simple(words))
            words = []
        else:
            words.append(token)
    return out


def _simple(words: list[str]) -> Simple:
    env: dict[str, str] = {}
    argv: list[str] = []
    skip = False
    for i, word in enumerate(words):
        if skip:
            skip = False
            continue
        if word in (">", ">>", "<", ">&", "&>"):
            skip = True  # the redirection's target
            continue
        if word.isdigit() and i + 1 < len(words) and words[i + 1] in (">", ">>", ">&"):
            continue  # 2> ...
        if not argv and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", word):
            name, _, value = word.partition("=")
            env[name] = value
            continue
        argv.append(word)
    if argv:
        program = argv[0]
        if ".venv/bin/" in program:
            program = program.rsplit("/", 1)[1]
        argv[0] = {"python3": "python"}.get(program, program)
    return Simple(env, argv)


def all_documented() -> list[Documented]:
    return [command for path in DOCS for command in documented_commands(path)]


# -- checks ----------------------------------------------------------------------------


def is_offline(simple: Simple) -> bool:
    argv = simple.argv
    return len(argv) >= 2 and argv[0] == "policy-scheduler" and argv[1] in OFFLINE_SUBCOMMANDS


def resolve_files(argv: list[str], expected_exit: int, where: str) -> list[str]:
    """Repository paths as they are; the reader's placeholder files replaced by stand-ins."""
    resolved: list[str] = []
    for arg in argv:
        if arg.startswith("-") or not re.search(r"\.(ya?ml|json)$", arg):
            resolved.append(arg)
            continue
        if (ROOT / arg).is_file():
            resolved.append(arg)
            continue
        standin = PLACEHOLDERS.get(arg)
        assert standin is not None, (
            f"{where}: {arg} is not a file in the repository; add it (docs/examples/) "
            f"or, for a file of the reader's own, to PLACEHOLDERS"
        )
        valid, invalid = standin
        chosen = invalid if expected_exit != 0 and invalid is not None else valid
        resolved.append(chosen)
    return resolved


def check_exercised(simple: Simple, where: str) -> None:
    text = simple.text
    matches = [prefix for prefix in EXERCISED_ELSEWHERE if text.startswith(prefix)]
    assert matches, (
        f"{where}: `{text}` is neither an offline policy-scheduler command nor listed in "
        f"EXERCISED_ELSEWHERE with the test that exercises it"
    )
    for target in EXERCISED_ELSEWHERE[max(matches, key=len)]:
        path, _, needle = target.partition("::")
        file = ROOT / path
        assert file.is_file(), f"{where}: {path} (said to exercise `{text}`) does not exist"
        content = file.read_text()
        if path.startswith("tests/"):
            assert re.search(rf"^(async )?def {re.escape(needle)}\(", content, re.M), (
                f"{where}: {path} has no test {needle} (said to exercise `{text}`)"
            )
        else:
            assert needle in content, f"{where}: {path} does not run `{needle}`"


@contextlib.contextmanager
def services(argv: list[str], tmp_path: Path) -> Iterator[tuple[list[str], bool]]:
    """The argv to run, and whether a service was started for it (module docstring).

    With a service on another port, the tables' columns are as wide as its address: the
    output is then compared with the port read as the documented one and blanks collapsed.
    """
    if EXAMPLE_EXTENDER_POLICY not in argv:
        yield argv, False
        return
    spec = importlib.util.spec_from_file_location(
        "example_extender", ROOT / "examples/extender/extender.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    server = module.serve("127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    address = f"127.0.0.1:{server.server_port}"
    try:
        copy = tmp_path / "policy.yaml"
        copy.write_text(
            (ROOT / EXAMPLE_EXTENDER_POLICY).read_text().replace(EXAMPLE_EXTENDER_ADDRESS, address)
        )
        yield [str(copy) if arg == EXAMPLE_EXTENDER_POLICY else arg for arg in argv], True
    finally:
        server.shutdown()
        server.server_close()


def is_subsequence(expected: list[str], actual: list[str]) -> bool:
    it = iter(actual)
    return all(any(line == got for got in it) for line in expected)


DOCUMENTED = all_documented()


def test_the_docs_show_commands_of_every_kind() -> None:
    """The extraction itself works: a silent parser would make every check vacuous."""
    simples = [s for d in DOCUMENTED for s in simple_commands(d.line)]
    offline = {s.argv[1] for s in simples if is_offline(s)}
    assert offline == OFFLINE_SUBCOMMANDS
    assert any(d.expected_exit == 1 for d in DOCUMENTED)
    assert any(d.output for d in DOCUMENTED)
    assert any(s.text.startswith("helm install") for s in simples)
    assert any(s.env for s in simples)


@pytest.mark.parametrize("documented", DOCUMENTED, ids=[d.where for d in DOCUMENTED])
def test_documented_command(
    documented: Documented,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    monkeypatch.chdir(ROOT)
    simples = simple_commands(documented.line)
    assert simples, f"{documented.where}: no command in {documented.line!r}"
    # Output shown under commands that need a cluster is illustrative: not compared.
    for simple in simples:
        if not simple.argv or simple.argv[0] in STAGE_SETTERS:
            continue
        if not is_offline(simple):
            check_exercised(simple, documented.where)
            continue
        if simple.argv[1] == "plugins" or "examples/plugins/" in simple.text:
            ensure_installed(SAMPLE)  # as docs/plugins.md says to first
        for name, value in simple.env.items():
            monkeypatch.setenv(name, os.path.expanduser(value))
        argv = resolve_files(simple.argv[1:], documented.expected_exit, documented.where)
        with services(argv, tmp_path) as (argv, served):
            capsys.readouterr()
            code = cli.main(argv)
            out, err = capsys.readouterr()
        assert code == documented.expected_exit, (
            f"{documented.where}: `{simple.text}` exited {code}, the doc implies "
            f"{documented.expected_exit}\n{err}"
        )
        shown = [line for line in documented.output if line.strip() and line.strip() != "..."]
        actual = [line.rstrip() for line in (out + err).splitlines()]
        if served:
            address = re.compile(r"127\.0\.0\.1:\d+")
            shown = [" ".join(line.split()) for line in shown]
            actual = [
                " ".join(address.sub(EXAMPLE_EXTENDER_ADDRESS, line).split()) for line in actual
            ]
        assert is_subsequence(shown, actual), (
            f"{documented.where}: the output shown in the doc is not what "
            f"`{simple.text}` prints:\n" + "\n".join(actual)
        )


def test_placeholders_point_at_repository_files() -> None:
    for valid, invalid in PLACEHOLDERS.values():
        assert (ROOT / valid).is_file()
        assert invalid is None or (ROOT / invalid).is_file()


@pytest.mark.parametrize("line", ["a && b | c; d", "X=1 b > out 2>&1"])
def test_the_splitter(line: str) -> None:
    simples = simple_commands(line)
    if "&&" in line:
        assert [s.argv for s in simples] == [["a"], ["b"], ["c"], ["d"]]
    else:
        assert simples == [Simple({"X": "1"}, ["b"])]


def test_a_command_exercised_nowhere_is_refused() -> None:
    with pytest.raises(AssertionError, match="neither an offline"):
        check_exercised(Simple({}, ["kubectl", "delete", "node", "n1"]), "here")
