"""The chart rendered and checked with no helm binary, as its README documents it.

``charts/render.py`` is ``helm lint --strict`` and ``helm template`` through
helm-python-sdk; ``kubernetes-validate --strict`` checks what it renders. Both run here
as a person runs them (processes, the commands of charts/policy-scheduler/README.md),
and what they print is compared with what the chart's own tests render.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from chart.crdcheck import ROOT
from chart.rendering import K8S_VERSION

RENDER = ROOT / "charts" / "render.py"
VALIDATE = Path(sys.executable).parent / "kubernetes-validate"


def run(*argv: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(arg) for arg in argv], capture_output=True, text=True, timeout=120, check=False
    )


def render(*argv: str) -> subprocess.CompletedProcess[str]:
    return run(sys.executable, RENDER, *argv)


def test_the_documented_commands_lint_render_and_validate_the_chart(tmp_path: Path) -> None:
    linted = render("--lint", "--set", "replicaCount=2")
    assert linted.returncode == 0, linted.stderr
    rendered = render("--set", "replicaCount=2", "--include-crds")
    assert rendered.returncode == 0, rendered.stderr
    docs = [doc for doc in yaml.safe_load_all(rendered.stdout) if doc]
    by_kind = {doc["kind"]: doc for doc in docs}
    assert sorted(by_kind) == [
        "ClusterRole",
        "ClusterRoleBinding",
        "CustomResourceDefinition",
        "Deployment",
        "Role",
        "RoleBinding",
        "Service",
        "ServiceAccount",
    ]
    deployment = by_kind["Deployment"]
    assert deployment["spec"]["replicas"] == 2
    assert "--leader-elect" in deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert deployment["metadata"]["namespace"] == "policy-scheduler"
    assert rendered.stdout.startswith(
        "---\n# Source: policy-scheduler/crds/schedulingpolicies.policyscheduler.io.yaml\n"
    )
    path = tmp_path / "rendered.yaml"
    path.write_text(rendered.stdout)
    checked = run(VALIDATE, "--strict", "-k", K8S_VERSION, path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.count(" passed for resource ") == len(docs)


def test_values_files_merge_in_order_and_set_wins(tmp_path: Path) -> None:
    first = tmp_path / "first.yaml"
    first.write_text("replicaCount: 2\nmetrics: {port: 9191}\nlogLevel: debug\n")
    second = tmp_path / "second.yaml"
    second.write_text("metrics: {service: {port: 9292}}\n")
    rendered = render("-f", str(first), "-f", str(second), "--set", "logLevel=warning")
    assert rendered.returncode == 0, rendered.stderr
    by_kind = {doc["kind"]: doc for doc in yaml.safe_load_all(rendered.stdout) if doc}
    args = by_kind["Deployment"]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[args.index("--metrics-port") + 1] == "9191"  # from the first file
    assert args[args.index("--log-level") + 1] == "warning"  # --set wins
    assert by_kind["Service"]["spec"]["ports"][0]["port"] == 9292  # merged, not replaced


def test_lint_says_what_the_schema_refuses() -> None:
    linted = render("--lint", "--set", "replicaCount=-1")
    assert linted.returncode == 1
    assert linted.stdout == ""
    assert linted.stderr.startswith(
        "error: values.yaml: - at '/replicaCount': minimum: got -1, want 0\n"
    )


def test_rendering_what_a_template_refuses_is_one_line() -> None:
    rendered = render("--set", "shutdownTimeout=100")
    assert (rendered.returncode, rendered.stdout) == (1, "")
    assert rendered.stderr.count("\n") == 1 and "Traceback" not in rendered.stderr
    assert rendered.stderr.startswith("error: ")
    assert "shutdownTimeout (100 s) must be below terminationGracePeriodSeconds (30 s)" in (
        rendered.stderr
    )


def test_strict_validation_refuses_an_unknown_field(tmp_path: Path) -> None:
    # Guards the check above: a typo in a manifest is caught, not ignored.
    rendered = render()
    docs = [doc for doc in yaml.safe_load_all(rendered.stdout) if doc]
    deployment = next(doc for doc in docs if doc["kind"] == "Deployment")
    deployment["spec"]["template"]["spec"]["containers"][0]["resource"] = {}
    path = tmp_path / "rendered.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    checked = run(VALIDATE, "--strict", "-k", K8S_VERSION, path)
    assert checked.returncode != 0
    assert "resource" in checked.stdout + checked.stderr


def test_help_shows_every_default() -> None:
    shown = render("--help")
    assert shown.returncode == 0
    for default in ("default: policy-scheduler", "default: 1.30.0", "default: []"):
        assert default in shown.stdout
