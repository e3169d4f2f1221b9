"""The Helm chart, rendered and linted offline, and the container image it runs.

Helm is ``helm-python-sdk`` (PyPI): Helm v4's Go SDK as a shared library inside the
wheel, called through ctypes, so ``helm lint`` and ``helm template`` run with no helm
binary, no download and no cluster. Every rendered manifest of a built-in kind is
validated by ``kubernetes-validate`` in strict mode (unknown fields are errors) against
Kubernetes ``K8S_VERSION``'s schemas, which the wheel ships; the SchedulingPolicy is
validated against our own CRD (``crdcheck``), the ServiceMonitor by hand (its CRD is
prometheus-operator's).
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import tomllib
from collections.abc import Callable
from typing import Any

import helm_python as helm
import kubernetes_validate
import pytest
import yaml

from chart.crdcheck import CHART, ROOT, Errors
from policy_scheduler import names

K8S_VERSION = "1.30.0"
RELEASE = "ps"
NAMESPACE = "scheduling"

VALUE_SETS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "ha": {"replicaCount": 3},
    "metrics-off": {"metrics": {"enabled": False}},
    "custom-scheduler-name": {"schedulerName": "gpu-scheduler"},
    "default-policy": {
        "defaultPolicy": {
            "enabled": True,
            "spec": {
                "predicates": [{"name": "GeneralPredicates"}, {"name": "PodToleratesNodeTaints"}],
                "priorities": [
                    {"name": "LeastRequestedPriority", "weight": 1},
                    {"name": "NodePreferAvoidPodsPriority", "weight": 10000},
                ],
            },
        }
    },
    "service-monitor": {"serviceMonitor": {"enabled": True, "labels": {"release": "prom"}}},
    "namespaced": {"namespaces": ["team-a", "team-b"], "logFormat": "text", "logLevel": "debug"},
    "everything": {
        "replicaCount": 2,
        "schedulerName": "batch",
        "image": {"tag": "0.2.0-rc1", "pullPolicy": "Always"},
        "imagePullSecrets": [{"name": "registry"}],
        "leaderElection": {"leaseName": "batch-leader"},
        "apiClient": {"qps": 50, "burst": 100},
        "volumeBindingTimeout": 120,
        "priorityClassName": "system-cluster-critical",
        "podAnnotations": {"example.com/team": "platform"},
        "podLabels": {"team": "platform"},
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}],
        "serviceAccount": {"name": "custom-sa", "annotations": {"a": "b"}},
        "serviceMonitor": {"enabled": True, "interval": "15s", "scrapeTimeout": "10s"},
        "defaultPolicy": {"enabled": True, "name": "batch", "spec": {"schedulerName": "batch"}},
    },
}

#: What the operator uses cluster-wide, as its code declares it (kubeapi.required_rules(),
#: compared below): policies are read from watches only, pods too except one get after an
#: ambiguous binding reply; pods' status and events are written, preemption victims
#: deleted; PVs and PVCs are updated by the volume binder (a PV's claimRef, a claim's
#: selected-node), nothing else of them.
EXPECTED_CLUSTER_RULES = [
    {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]},
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["list", "watch"]},
    {
        "apiGroups": [""],
        "resources": ["persistentvolumeclaims"],
        "verbs": ["list", "update", "watch"],
    },
    {"apiGroups": [""], "resources": ["persistentvolumes"], "verbs": ["list", "update", "watch"]},
    # get: after an ambiguous binding reply; delete: preemption victims.
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["delete", "get", "list", "watch"]},
    {"apiGroups": [""], "resources": ["pods/binding"], "verbs": ["create"]},
    {"apiGroups": [""], "resources": ["pods/status"], "verbs": ["patch"]},
    {"apiGroups": [""], "resources": ["replicationcontrollers"], "verbs": ["list", "watch"]},
    {"apiGroups": [""], "resources": ["services"], "verbs": ["list", "watch"]},
    {"apiGroups": ["apps"], "resources": ["replicasets"], "verbs": ["list", "watch"]},
    {"apiGroups": ["apps"], "resources": ["statefulsets"], "verbs": ["list", "watch"]},
    {"apiGroups": ["policy"], "resources": ["poddisruptionbudgets"], "verbs": ["list", "watch"]},
    {
        "apiGroups": ["scheduling.k8s.io"],
        "resources": ["priorityclasses"],
        "verbs": ["list", "watch"],
    },
    {
        "apiGroups": ["policyscheduler.io"],
        "resources": ["schedulingpolicies"],
        "verbs": ["list", "watch"],
    },
    {
        "apiGroups": ["policyscheduler.io"],
        "resources": ["schedulingpolicies/status"],
        "verbs": ["get", "patch"],
    },
    {"apiGroups": ["storage.k8s.io"], "resources": ["csinodes"], "verbs": ["list", "watch"]},
    {"apiGroups": ["storage.k8s.io"], "resources": ["storageclasses"], "verbs": ["list", "watch"]},
]
#: Leader election, in the release namespace only (a Role).
EXPECTED_LEASE_RULES = [
    {
        "apiGroups": ["coordination.k8s.io"],
        "resources": ["leases"],
        "verbs": ["create", "get", "update"],
    }
]


class Rendered:
    """One ``helm template``: the manifests by kind and name, and NOTES.txt."""

    def __init__(self, files: dict[str, str]) -> None:
        self.notes = ""
        self.docs: list[dict[str, Any]] = []
        for path, text in files.items():
            if path.endswith("NOTES.txt"):
                self.notes = text
                continue
            self.docs += [doc for doc in yaml.safe_load_all(text) if doc]

    def kinds(self) -> list[str]:
        return sorted(doc["kind"] for doc in self.docs)

    def get(self, kind: str) -> dict[str, Any]:
        (found,) = self.all(kind)
        return found

    def all(self, kind: str) -> list[dict[str, Any]]:
        return [doc for doc in self.docs if doc["kind"] == kind]

    @property
    def container(self) -> dict[str, Any]:
        pod = self.get("Deployment")["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        return container

    @property
    def args(self) -> list[str]:
        args: list[str] = self.container["args"]
        return args

    def arg(self, flag: str) -> str | None:
        args = self.args
        return args[args.index(flag) + 1] if flag in args else None


@pytest.fixture(scope="module")
def chart() -> helm.Chart:
    return helm.Chart.load(CHART)


@pytest.fixture(scope="module")
def rendered(chart: helm.Chart) -> dict[str, Rendered]:
    return {
        name: Rendered(chart.render(values, name=RELEASE, namespace=NAMESPACE, is_install=True))
        for name, values in VALUE_SETS.items()
    }


# -- lint and validate --------------------------------------------------------------


@pytest.mark.parametrize("values_name", list(VALUE_SETS))
def test_helm_lint_strict(values_name: str) -> None:
    report = helm.lint(
        CHART,
        VALUE_SETS[values_name],
        strict=True,
        namespace=NAMESPACE,
        kube_version=f"v{K8S_VERSION}",
    )
    problems = [message for message in report["messages"] if message["severity"] >= 2]
    assert (problems, report["errors"]) == ([], [])


@pytest.mark.parametrize("values_name", list(VALUE_SETS))
def test_every_manifest_validates(
    rendered: dict[str, Rendered],
    crd_errors: Callable[[dict[str, Any]], Errors],
    values_name: str,
) -> None:
    for doc in rendered[values_name].docs:
        if doc["kind"] == "SchedulingPolicy":
            assert crd_errors(doc) == []
        elif doc["kind"] == "ServiceMonitor":
            assert doc["apiVersion"] == "monitoring.coreos.com/v1"
        else:
            kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def test_chart_crds_validate(chart: helm.Chart) -> None:
    (crd_file,) = chart.crds
    kubernetes_validate.validate(yaml.safe_load(crd_file["data"]), K8S_VERSION, strict=True)


@pytest.mark.parametrize(
    ("values_name", "kinds"),
    [
        pytest.param(
            "defaults",
            ["ClusterRole", "ClusterRoleBinding", "Deployment", "Service", "ServiceAccount"],
            id="defaults",
        ),
        pytest.param(
            "ha",
            [
                "ClusterRole",
                "ClusterRoleBinding",
                "Deployment",
                "Role",
                "RoleBinding",
                "Service",
                "ServiceAccount",
            ],
            id="ha-adds-the-lease-role",
        ),
        pytest.param(
            "metrics-off",
            ["ClusterRole", "ClusterRoleBinding", "Deployment", "ServiceAccount"],
            id="metrics-off-has-no-service",
        ),
        pytest.param(
            "default-policy",
            [
                "ClusterRole",
                "ClusterRoleBinding",
                "Deployment",
                "SchedulingPolicy",
                "Service",
                "ServiceAccount",
            ],
            id="default-policy",
        ),
        pytest.param(
            "service-monitor",
            [
                "ClusterRole",
                "ClusterRoleBinding",
                "Deployment",
                "Service",
                "ServiceAccount",
                "ServiceMonitor",
            ],
            id="service-monitor",
        ),
    ],
)
def test_what_each_values_set_creates(
    rendered: dict[str, Rendered], values_name: str, kinds: list[str]
) -> None:
    assert rendered[values_name].kinds() == kinds


# -- the Deployment -----------------------------------------------------------------


def test_default_args(rendered: dict[str, Rendered]) -> None:
    assert rendered["defaults"].args == [
        "--scheduler-name", "policy-scheduler",
        "--all-namespaces",
        "--log-level", "info",
        "--log-format", "json",
        "--metrics-port", "9090",
        "--health-port", "8081",
        "--no-leader-elect",
        "--qps", "200",
        "--burst", "400",
        "--volume-binding-timeout", "600",
    ]  # fmt: skip


def test_single_replica_recreates_rather_than_running_two_schedulers(
    rendered: dict[str, Rendered],
) -> None:
    deployment = rendered["defaults"].get("Deployment")
    assert deployment["spec"]["replicas"] == 1
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}


def test_ha_turns_leader_election_on_with_a_lease_in_the_release_namespace(
    rendered: dict[str, Rendered],
) -> None:
    ha = rendered["ha"]
    assert ha.get("Deployment")["spec"]["replicas"] == 3
    assert "--leader-elect" in ha.args and "--no-leader-elect" not in ha.args
    assert ha.arg("--lease-name") == f"{RELEASE}-policy-scheduler"
    assert ha.arg("--lease-namespace") == NAMESPACE
    assert ha.get("Deployment")["spec"]["strategy"]["type"] == "RollingUpdate"
    assert ha.get("Role")["metadata"]["namespace"] == NAMESPACE


def test_leader_election_can_be_forced_on_for_one_replica(chart: helm.Chart) -> None:
    out = Rendered(
        chart.render({"leaderElection": {"enabled": True}}, name=RELEASE, namespace=NAMESPACE)
    )
    assert "--leader-elect" in out.args
    assert out.kinds().count("Role") == 1


def test_lease_name_from_values(rendered: dict[str, Rendered]) -> None:
    assert rendered["everything"].arg("--lease-name") == "batch-leader"


def test_metrics_off(rendered: dict[str, Rendered]) -> None:
    out = rendered["metrics-off"]
    assert out.arg("--metrics-port") == "0"
    assert [port["name"] for port in out.container["ports"]] == ["health"]


def test_custom_scheduler_name(rendered: dict[str, Rendered]) -> None:
    out = rendered["custom-scheduler-name"]
    assert out.arg("--scheduler-name") == "gpu-scheduler"
    assert "schedulerName: gpu-scheduler" in out.notes


def test_namespaces(rendered: dict[str, Rendered]) -> None:
    out = rendered["namespaced"]
    assert "--all-namespaces" not in out.args
    pairs = [out.args[i + 1] for i, arg in enumerate(out.args) if arg == "--namespace"]
    assert pairs == ["team-a", "team-b"]
    assert (out.arg("--log-format"), out.arg("--log-level")) == ("text", "debug")


def test_probes_hit_healthz_on_the_health_port(rendered: dict[str, Rendered]) -> None:
    out = rendered["defaults"]
    ports = {port["name"]: port["containerPort"] for port in out.container["ports"]}
    assert str(ports["health"]) == out.arg("--health-port") == "8081"
    assert str(ports["metrics"]) == out.arg("--metrics-port") == "9090"
    for probe in ("livenessProbe", "readinessProbe"):
        assert out.container[probe]["httpGet"] == {"path": "/healthz", "port": "health"}


def test_security_context(rendered: dict[str, Rendered]) -> None:
    out = rendered["defaults"]
    pod = out.get("Deployment")["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 10001
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert out.container["securityContext"] == {
        "runAsNonRoot": True,
        "readOnlyRootFilesystem": True,
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert out.container["resources"]["requests"] == {"cpu": "100m", "memory": "128Mi"}


def test_pod_identity_from_the_downward_api(rendered: dict[str, Rendered]) -> None:
    env = {
        item["name"]: item["valueFrom"]["fieldRef"]["fieldPath"]
        for item in rendered["defaults"].container["env"]
    }
    assert env == {"POD_NAME": "metadata.name", "POD_NAMESPACE": "metadata.namespace"}


def test_image_defaults_to_app_version_and_matches_the_project(
    chart: helm.Chart, rendered: dict[str, Rendered]
) -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert chart.metadata["appVersion"] == project["version"] == "0.1.0"
    assert rendered["defaults"].container["image"] == (
        "ghcr.io/policy-scheduler/policy-scheduler:0.1.0"
    )
    assert rendered["everything"].container["image"].endswith(":0.2.0-rc1")


def test_everything_set(rendered: dict[str, Rendered]) -> None:
    out = rendered["everything"]
    pod = out.get("Deployment")["spec"]["template"]["spec"]
    assert pod["priorityClassName"] == "system-cluster-critical"
    assert pod["serviceAccountName"] == "custom-sa"
    assert pod["imagePullSecrets"] == [{"name": "registry"}]
    assert (out.arg("--qps"), out.arg("--burst")) == ("50", "100")
    assert out.arg("--volume-binding-timeout") == "120"
    assert out.get("ServiceAccount")["metadata"]["name"] == "custom-sa"
    subjects = out.get("ClusterRoleBinding")["subjects"]
    assert subjects == [{"kind": "ServiceAccount", "name": "custom-sa", "namespace": NAMESPACE}]


# -- Services, monitoring, the default policy, NOTES ------------------------------


def test_metrics_service_and_service_monitor_select_each_other(
    rendered: dict[str, Rendered],
) -> None:
    out = rendered["service-monitor"]
    service, monitor = out.get("Service"), out.get("ServiceMonitor")
    pod_labels = out.get("Deployment")["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()
    assert service["spec"]["ports"] == [
        {"name": "metrics", "port": 9090, "targetPort": "metrics", "protocol": "TCP"}
    ]
    assert (
        monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    )
    assert monitor["spec"]["endpoints"][0]["port"] == "metrics"
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": [NAMESPACE]}
    assert monitor["metadata"]["labels"]["release"] == "prom"


def test_default_policy_spec_comes_from_values(rendered: dict[str, Rendered]) -> None:
    policy = rendered["default-policy"].get("SchedulingPolicy")
    spec = copy.deepcopy(VALUE_SETS["default-policy"]["defaultPolicy"]["spec"])
    spec["schedulerName"] = names.DEFAULT_SCHEDULER_NAME  # the chart's, by default
    assert policy["metadata"]["name"] == "default"
    assert policy["spec"] == spec
    weights = [entry["weight"] for entry in policy["spec"]["priorities"]]
    assert weights == [1, 10000] and all(type(w) is int for w in weights)


def test_default_policy_keeps_its_own_scheduler_name(rendered: dict[str, Rendered]) -> None:
    policy = rendered["everything"].get("SchedulingPolicy")
    assert policy["spec"] == {"schedulerName": "batch"}


def test_notes_tell_how_to_use_and_observe_the_scheduler(rendered: dict[str, Rendered]) -> None:
    notes = rendered["defaults"].notes
    assert "schedulerName: policy-scheduler" in notes
    assert "kubectl describe pod" in notes
    assert "kubectl get schedpol" in notes


# -- RBAC ---------------------------------------------------------------------------


def test_cluster_role_is_exactly_what_the_operator_uses(rendered: dict[str, Rendered]) -> None:
    assert rendered["defaults"].get("ClusterRole")["rules"] == EXPECTED_CLUSTER_RULES
    assert rendered["ha"].get("Role")["rules"] == EXPECTED_LEASE_RULES


def test_bindings_bind_the_roles_to_the_service_account(rendered: dict[str, Rendered]) -> None:
    out = rendered["ha"]
    account = out.get("ServiceAccount")["metadata"]["name"]
    for binding, role in (("ClusterRoleBinding", "ClusterRole"), ("RoleBinding", "Role")):
        doc = out.get(binding)
        assert doc["roleRef"] == {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": role,
            "name": out.get(role)["metadata"]["name"],
        }
        assert doc["subjects"] == [
            {"kind": "ServiceAccount", "name": account, "namespace": NAMESPACE}
        ]


def test_rules_match_required_rules(rendered: dict[str, Rendered]) -> None:
    """The chart grants what the code declares it uses (runtime.kubeapi.required_rules), no more."""
    pytest.importorskip("policy_scheduler.runtime.kubeapi")
    from policy_scheduler.runtime.kubeapi import required_rules

    def key(rule: dict[str, list[str]]) -> tuple[list[str], list[str]]:
        return (rule["apiGroups"], rule["resources"])

    out = rendered["ha"]
    granted = out.get("ClusterRole")["rules"] + out.get("Role")["rules"]
    assert sorted(granted, key=key) == sorted(required_rules(), key=key)


# -- values schema ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "named"),
    [
        pytest.param({"replicaCount": -1}, "/replicaCount", id="replicas-negative"),
        pytest.param({"replicaCount": "3"}, "/replicaCount", id="replicas-string"),
        pytest.param({"logFormat": "xml"}, "/logFormat", id="unknown-log-format"),
        pytest.param({"logLevel": "verbose"}, "/logLevel", id="unknown-log-level"),
        pytest.param({"schedulerName": "My_Scheduler"}, "/schedulerName", id="bad-scheduler-name"),
        pytest.param({"metrics": {"port": 70000}}, "/metrics/port", id="port-out-of-range"),
        pytest.param({"healthPort": 0}, "/healthPort", id="health-port-zero"),
        pytest.param({"image": {"pullPolicy": "Sometimes"}}, "/image/pullPolicy", id="pull-policy"),
        pytest.param({"apiClient": {"qps": -1}}, "/apiClient/qps", id="qps-negative"),
        pytest.param({"namespaces": ["Team A"]}, "/namespaces/0", id="bad-namespace"),
        pytest.param(
            {"volumeBindingTimeout": 0}, "/volumeBindingTimeout", id="volume-binding-timeout-0"
        ),
        pytest.param({"replicaz": 3}, "replicaz", id="unknown-key"),
        pytest.param(
            {"replicaCount": 3, "leaderElection": {"enabled": False}},
            "/leaderElection/enabled",
            id="replicas-without-leader-election",
        ),
        pytest.param(
            {"serviceMonitor": {"enabled": True}, "metrics": {"enabled": False}},
            "/metrics/enabled",
            id="service-monitor-without-metrics",
        ),
        pytest.param(
            {"defaultPolicy": {"enabled": True, "spec": []}},
            "/defaultPolicy/spec",
            id="policy-spec-not-an-object",
        ),
    ],
)
def test_values_schema_refuses(chart: helm.Chart, values: dict[str, Any], named: str) -> None:
    with pytest.raises(helm.HelmValuesError, match=re.escape(named)):
        chart.render(values, name=RELEASE, namespace=NAMESPACE)


def test_values_yaml_passes_its_schema(chart: helm.Chart) -> None:
    chart.validate_schema(yaml.safe_load((CHART / "values.yaml").read_text()))
    json.loads((CHART / "values.schema.json").read_text())


# -- the image ----------------------------------------------------------------------


def dockerfile_instructions() -> list[tuple[str, str]]:
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            out.append((keyword.upper(), " ".join(rest.split())))
    return out


def test_dockerfile_runs_the_operator_as_a_non_root_user() -> None:
    instructions = dockerfile_instructions()
    assert instructions[0] == ("FROM", "python:3.11-slim")
    users = [value for keyword, value in instructions if keyword == "USER"]
    assert users and users[-1].split(":")[0] == "10001"
    entrypoints = [value for keyword, value in instructions if keyword == "ENTRYPOINT"]
    assert [json.loads(value) for value in entrypoints] == [["policy-scheduler", "run"]]
    assert not [value for keyword, value in instructions if keyword == "CMD"]
    runs = " && ".join(value for keyword, value in instructions if keyword == "RUN")
    assert "pip install --no-cache-dir ." in runs
    assert "useradd" in runs and "--uid 10001" in runs


def test_dockerignore_keeps_what_pip_needs() -> None:
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    assert "*" in lines
    assert {"!pyproject.toml", "!operator/"} <= set(lines)


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            choices: dict[str, argparse.ArgumentParser] = action.choices
            return choices
    return {}


@pytest.mark.parametrize("values_name", list(VALUE_SETS))
def test_chart_args_are_flags_the_cli_accepts(
    rendered: dict[str, Rendered], values_name: str
) -> None:
    from policy_scheduler.cli import build_parser

    parser = build_parser()
    if "run" not in _subcommands(parser):
        pytest.skip("policy-scheduler run is not registered yet")
    try:
        parser.parse_args(["run", *rendered[values_name].args])
    except SystemExit as exc:  # argparse's way of refusing
        pytest.fail(f"policy-scheduler run refuses {rendered[values_name].args}: exit {exc.code}")
