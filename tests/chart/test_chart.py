"""The Helm chart, rendered and linted offline, and the container image it runs.

Helm is ``helm-python-sdk`` (PyPI): Helm v4's Go SDK as a shared library inside the
wheel, called through ctypes, so ``helm lint`` and ``helm template`` run with no helm
binary, no download and no cluster. Every rendered manifest of a built-in kind is
validated by ``kubernetes-validate`` in strict mode (unknown fields are errors) against
Kubernetes ``K8S_VERSION``'s schemas, which the wheel ships; the SchedulingPolicy is
validated against our own CRD (``crdcheck``), the ServiceMonitor by hand (its CRD is
prometheus-operator's). The NetworkPolicy is also evaluated: which connections it lets
in (``test_network_policy.py``). The image and its dependencies: ``test_image.py``.
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
from chart.rendering import K8S_VERSION, NAMESPACE, RELEASE, Rendered
from policy_scheduler import names
from policy_scheduler.options import default_of

VALUE_SETS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "ha": {"replicaCount": 3},
    "metrics-off": {"metrics": {"enabled": False}},
    "podgroup-crd-off": {"podGroups": {"installCRD": False}},
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
    "network-policy": {
        "networkPolicy": {
            "enabled": True,
            "metricsFrom": [
                {
                    "namespaceSelector": {
                        "matchLabels": {"kubernetes.io/metadata.name": "monitoring"}
                    }
                }
            ],
        }
    },
    "network-policy-metrics-closed": {"networkPolicy": {"enabled": True}},
    "namespaced": {"namespaces": ["team-a", "team-b"], "logFormat": "text", "logLevel": "debug"},
    "everything": {
        "replicaCount": 2,
        "schedulerName": "batch",
        "image": {"tag": "0.2.0-rc1", "pullPolicy": "Always"},
        "imagePullSecrets": [{"name": "registry"}],
        "leaderElection": {"leaseName": "batch-leader"},
        "apiClient": {"qps": 50, "burst": 100, "timeout": 10},
        "resyncPeriod": 0,
        "shutdownTimeout": 50,
        "terminationGracePeriodSeconds": 60,
        "bindAddress": "::",
        "healthPort": 9000,
        "volumeBindingTimeout": 120,
        "allowDefaultScheduler": True,
        "networkPolicy": {
            "enabled": True,
            "metricsFrom": [
                {
                    "namespaceSelector": {
                        "matchLabels": {"kubernetes.io/metadata.name": "monitoring"}
                    },
                    "podSelector": {
                        "matchExpressions": [
                            {"key": "app", "operator": "In", "values": ["prometheus"]}
                        ]
                    },
                },
                {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}},
            ],
            "egress": [
                {
                    "to": [{"ipBlock": {"cidr": "172.20.0.1/32"}}],
                    "ports": [{"port": 6443, "protocol": "TCP"}],
                },
                {"ports": [{"port": 53, "protocol": "UDP"}, {"port": "dns-tcp"}]},
            ],
        },
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
    {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["list", "watch"]},
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
    # scheduler-plugins' gangs: watched, and their status written (Coscheduling).
    {"apiGroups": ["scheduling.x-k8s.io"], "resources": ["podgroups"], "verbs": ["list", "watch"]},
    {"apiGroups": ["scheduling.x-k8s.io"], "resources": ["podgroups/status"], "verbs": ["patch"]},
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
    {"apiGroups": ["resource.k8s.io"], "resources": ["deviceclasses"], "verbs": ["list", "watch"]},
    {
        "apiGroups": ["resource.k8s.io"],
        "resources": ["resourceclaims"],
        "verbs": ["get", "list", "update", "watch"],
    },
    {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims/status"], "verbs": ["update"]},
    {
        "apiGroups": ["resource.k8s.io"],
        "resources": ["resourceclaimtemplates"],
        "verbs": ["list", "watch"],
    },
    {"apiGroups": ["resource.k8s.io"], "resources": ["resourceslices"], "verbs": ["list", "watch"]},
    # The storage capacity check of volume binding.
    {"apiGroups": ["storage.k8s.io"], "resources": ["csidrivers"], "verbs": ["list", "watch"]},
    {"apiGroups": ["storage.k8s.io"], "resources": ["csinodes"], "verbs": ["list", "watch"]},
    {
        "apiGroups": ["storage.k8s.io"],
        "resources": ["csistoragecapacities"],
        "verbs": ["list", "watch"],
    },
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
            [
                "ClusterRole",
                "ClusterRoleBinding",
                "CustomResourceDefinition",
                "Deployment",
                "Service",
                "ServiceAccount",
            ],
            id="defaults",
        ),
        pytest.param(
            "ha",
            [
                "ClusterRole",
                "ClusterRoleBinding",
                "CustomResourceDefinition",
                "Deployment",
                "Role",
                "RoleBinding",
                "Service",
                "ServiceAccount",
            ],
            id="ha-adds-the-lease-role",
        ),
        pytest.param(
            "podgroup-crd-off",
            ["ClusterRole", "ClusterRoleBinding", "Deployment", "Service", "ServiceAccount"],
            id="podgroup-crd-off",
        ),
        pytest.param(
            "metrics-off",
            [
                "ClusterRole",
                "ClusterRoleBinding",
                "CustomResourceDefinition",
                "Deployment",
                "ServiceAccount",
            ],
            id="metrics-off-has-no-service",
        ),
        pytest.param(
            "default-policy",
            [
                "ClusterRole",
                "ClusterRoleBinding",
                "CustomResourceDefinition",
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
                "CustomResourceDefinition",
                "Deployment",
                "Service",
                "ServiceAccount",
                "ServiceMonitor",
            ],
            id="service-monitor",
        ),
        pytest.param(
            "network-policy",
            [
                "ClusterRole",
                "ClusterRoleBinding",
                "CustomResourceDefinition",
                "Deployment",
                "NetworkPolicy",
                "Service",
                "ServiceAccount",
            ],
            id="network-policy",
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
        "--bind-address", "0.0.0.0",
        "--no-leader-elect",
        "--qps", "200",
        "--burst", "400",
        "--report-concurrency", "8",
        "--api-timeout", "30",
        "--resync-period", "300",
        "--shutdown-timeout", "20",
        "--volume-binding-timeout", "600",
        "--pod-initial-backoff-seconds", "1",
        "--pod-max-backoff-seconds", "10",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("flag", "option"),
    [
        pytest.param("--scheduler-name", "scheduler_name", id="scheduler-name"),
        pytest.param("--metrics-port", "metrics_port", id="metrics-port"),
        pytest.param("--health-port", "health_port", id="health-port"),
        pytest.param("--bind-address", "host", id="bind-address"),
        pytest.param("--qps", "qps", id="qps"),
        pytest.param("--burst", "burst", id="burst"),
        pytest.param("--api-timeout", "api_timeout", id="api-timeout"),
        pytest.param("--resync-period", "resync_period", id="resync-period"),
        pytest.param("--shutdown-timeout", "shutdown_timeout", id="shutdown-timeout"),
        pytest.param(
            "--volume-binding-timeout", "volume_binding_timeout", id="volume-binding-timeout"
        ),
        pytest.param(
            "--pod-initial-backoff-seconds", "pod_initial_backoff", id="pod-initial-backoff"
        ),
        pytest.param("--pod-max-backoff-seconds", "pod_max_backoff", id="pod-max-backoff"),
    ],
)
def test_chart_defaults_are_the_operators(
    rendered: dict[str, Rendered], flag: str, option: str
) -> None:
    """A default documented for `policy-scheduler run` is the chart's default too."""
    value = rendered["defaults"].arg(flag)
    assert value is not None
    default = default_of(option)
    assert type(default)(value) == default


@pytest.mark.parametrize(
    ("values_name", "shutdown", "grace"),
    [
        pytest.param("defaults", "20", 30, id="defaults"),
        pytest.param("everything", "50", 60, id="custom"),
    ],
)
def test_the_kubelet_waits_longer_than_the_shutdown_takes(
    rendered: dict[str, Rendered], values_name: str, shutdown: str, grace: int
) -> None:
    out = rendered[values_name]
    pod = out.get("Deployment")["spec"]["template"]["spec"]
    assert (out.arg("--shutdown-timeout"), pod["terminationGracePeriodSeconds"]) == (
        shutdown,
        grace,
    )


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


@pytest.mark.parametrize(
    ("values_name", "health_port"),
    [pytest.param("defaults", 8081, id="defaults"), pytest.param("everything", 9000, id="custom")],
)
def test_liveness_on_healthz_and_readiness_on_readyz_on_the_health_port(
    rendered: dict[str, Rendered], values_name: str, health_port: int
) -> None:
    out = rendered[values_name]
    ports = {port["name"]: port["containerPort"] for port in out.container["ports"]}
    assert ports["health"] == health_port
    assert out.arg("--health-port") == str(health_port)
    assert out.container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert out.container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}


def test_liveness_gives_a_failing_scheduler_half_a_minute(rendered: dict[str, Rendered]) -> None:
    """/healthz is 503 only for a dead task or a stuck attempt (never during the startup
    LIST, which is retried), so a restart comes after three failed checks, not before:
    one slow answer (a busy event loop) is no reason to kill the scheduler."""
    liveness = rendered["defaults"].container["livenessProbe"]
    assert liveness["failureThreshold"] * liveness["periodSeconds"] == 30
    assert liveness["timeoutSeconds"] < liveness["periodSeconds"]
    assert liveness["initialDelaySeconds"] >= 10  # Python, Kopf and the client import first


def test_metrics_and_health_listen_on_the_bind_address(rendered: dict[str, Rendered]) -> None:
    assert rendered["defaults"].arg("--bind-address") == "0.0.0.0"
    assert rendered["everything"].arg("--bind-address") == "::"


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
    assert out.arg("--api-timeout") == "10"
    assert out.arg("--resync-period") == "0"
    assert out.arg("--shutdown-timeout") == "50"
    assert out.arg("--volume-binding-timeout") == "120"
    assert "--allow-default-scheduler" in out.args
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


def test_plugins_get_the_extra_rules_asked_for(chart: helm.Chart) -> None:
    extra = {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}
    out = Rendered(
        chart.render(
            {"rbac": {"extraRules": [extra]}}, name=RELEASE, namespace=NAMESPACE, is_install=True
        )
    )
    rules = out.get("ClusterRole")["rules"]
    assert rules[-1] == extra
    assert rules[:-1] == EXPECTED_CLUSTER_RULES
    kubernetes_validate.validate(out.get("ClusterRole"), K8S_VERSION, strict=True)


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
        pytest.param({"apiClient": {"timeout": 0}}, "/apiClient/timeout", id="api-timeout-0"),
        pytest.param(
            {"apiClient": {"timeout": "30s"}}, "/apiClient/timeout", id="api-timeout-string"
        ),
        pytest.param({"apiClient": {"timout": 30}}, "timout", id="api-client-unknown-key"),
        pytest.param({"resyncPeriod": -1}, "/resyncPeriod", id="resync-negative"),
        pytest.param({"resyncPeriod": "5m"}, "/resyncPeriod", id="resync-string"),
        pytest.param({"shutdownTimeout": 0}, "/shutdownTimeout", id="shutdown-timeout-0"),
        pytest.param({"shutdownTimeout": "20"}, "/shutdownTimeout", id="shutdown-timeout-string"),
        pytest.param(
            {"terminationGracePeriodSeconds": 30.5},
            "/terminationGracePeriodSeconds",
            id="grace-period-not-an-integer",
        ),
        pytest.param(
            {"terminationGracePeriodSeconds": 0},
            "/terminationGracePeriodSeconds",
            id="grace-period-0",
        ),
        pytest.param({"bindAddress": ""}, "/bindAddress", id="bind-address-empty"),
        pytest.param({"bindAddress": 0}, "/bindAddress", id="bind-address-number"),
        pytest.param(
            {"networkPolicy": {"enabled": "yes"}}, "/networkPolicy/enabled", id="np-enabled"
        ),
        pytest.param({"networkPolicy": {"ingress": []}}, "ingress", id="np-unknown-key-ingress"),
        pytest.param(
            {"networkPolicy": {"metricsFrom": {"podSelector": {}}}},
            "/networkPolicy/metricsFrom",
            id="np-metrics-from-not-a-list",
        ),
        pytest.param(
            {"networkPolicy": {"metricsFrom": [{"podselector": {}}]}},
            "/networkPolicy/metricsFrom/0",
            id="np-peer-unknown-key",
        ),
        pytest.param(
            {"networkPolicy": {"metricsFrom": [{}]}},
            "/networkPolicy/metricsFrom/0",
            id="np-peer-empty",
        ),
        pytest.param(
            {
                "networkPolicy": {
                    "metricsFrom": [{"ipBlock": {"cidr": "10.0.0.0/8"}, "podSelector": {}}]
                }
            },
            "/networkPolicy/metricsFrom/0",
            id="np-ip-block-with-a-selector",
        ),
        pytest.param(
            {
                "networkPolicy": {
                    "metricsFrom": [
                        {"podSelector": {"matchExpressions": [{"key": "a", "operator": "Is"}]}}
                    ]
                }
            },
            "/networkPolicy/metricsFrom/0/podSelector/matchExpressions/0/operator",
            id="np-selector-operator",
        ),
        pytest.param(
            {"networkPolicy": {"egress": [{"from": []}]}},
            "/networkPolicy/egress/0",
            id="np-egress-from",
        ),
        pytest.param(
            {"networkPolicy": {"egress": [{"ports": [{"port": 443, "protocol": "HTTPS"}]}]}},
            "/networkPolicy/egress/0/ports/0/protocol",
            id="np-egress-protocol",
        ),
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


@pytest.mark.parametrize(
    ("values", "message"),
    [
        pytest.param(
            {"shutdownTimeout": 30},
            "shutdownTimeout (30 s) must be below terminationGracePeriodSeconds (30 s)",
            id="shutdown-equal-to-grace",
        ),
        pytest.param(
            {"shutdownTimeout": 45, "terminationGracePeriodSeconds": 40},
            "shutdownTimeout (45 s) must be below terminationGracePeriodSeconds (40 s)",
            id="shutdown-above-grace",
        ),
        pytest.param(
            {"terminationGracePeriodSeconds": 10},
            "shutdownTimeout (20 s) must be below terminationGracePeriodSeconds (10 s)",
            id="grace-lowered-below-the-default-shutdown",
        ),
        pytest.param(
            {"bindAddress": "127.0.0.1"},
            'bindAddress "127.0.0.1" is a loopback address',
            id="bind-loopback-v4",
        ),
        pytest.param({"bindAddress": "::1"}, 'bindAddress "::1" is a loopback', id="bind-::1"),
        pytest.param(
            {"schedulerName": "default-scheduler"},
            'schedulerName "default-scheduler" is kube-scheduler\'s own name: set '
            "allowDefaultScheduler: true to serve it",
            id="default-scheduler-not-allowed",
        ),
        pytest.param(
            {"defaultPolicy": {"enabled": True, "spec": {"schedulerName": "default-scheduler"}}},
            'defaultPolicy.spec.schedulerName "default-scheduler" is kube-scheduler\'s own name: '
            "set allowDefaultScheduler: true to serve it",
            id="default-policy-serving-default-scheduler-not-allowed",
        ),
        pytest.param(
            {"bindAddress": "localhost"}, 'bindAddress "localhost" is a loopback', id="localhost"
        ),
    ],
)
def test_the_chart_refuses_values_that_would_break_the_pod(
    chart: helm.Chart, values: dict[str, Any], message: str
) -> None:
    with pytest.raises(helm.HelmRenderError, match=re.escape(message)):
        chart.render(values, name=RELEASE, namespace=NAMESPACE)


@pytest.mark.parametrize(
    ("values", "shutdown", "grace"),
    [
        pytest.param({"shutdownTimeout": 29.5}, "29.5", 30, id="just-below-the-default-grace"),
        pytest.param(
            {"shutdownTimeout": 90, "terminationGracePeriodSeconds": 120}, "90", 120, id="both"
        ),
    ],
)
def test_a_shutdown_timeout_below_the_grace_period_renders(
    chart: helm.Chart, values: dict[str, Any], shutdown: str, grace: int
) -> None:
    out = Rendered(chart.render(values, name=RELEASE, namespace=NAMESPACE))
    assert out.arg("--shutdown-timeout") == shutdown
    pod = out.get("Deployment")["spec"]["template"]["spec"]
    assert pod["terminationGracePeriodSeconds"] == grace


def test_values_yaml_passes_its_schema(chart: helm.Chart) -> None:
    chart.validate_schema(yaml.safe_load((CHART / "values.yaml").read_text()))
    json.loads((CHART / "values.schema.json").read_text())


# -- the CLI -----------------------------------------------------------------------


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


@pytest.mark.parametrize(
    ("reports", "args"),
    [
        pytest.param({}, {}, id="unset-as-qps-and-burst"),
        pytest.param(
            {"qps": 0, "burst": 50, "concurrency": 4},
            {"--report-qps": "0", "--report-burst": "50", "--report-concurrency": "4"},
            id="set-zero-included",
        ),
    ],
)
def test_the_report_lane_values_become_flags(
    chart: helm.Chart, reports: dict[str, Any], args: dict[str, str]
) -> None:
    out = Rendered(
        chart.render({"apiClient": {"reports": reports}}, name=RELEASE, namespace=NAMESPACE)
    )
    found = {flag: out.arg(flag) for flag in ("--report-qps", "--report-burst") if flag in out.args}
    assert found == {k: v for k, v in args.items() if k != "--report-concurrency"}
    assert out.arg("--report-concurrency") == args.get("--report-concurrency", "8")


def test_default_scheduler_renders_when_allowed(chart: helm.Chart) -> None:
    values = {
        "allowDefaultScheduler": True,
        "schedulerName": "default-scheduler",
        "defaultPolicy": {"enabled": True},
    }
    out = Rendered(chart.render(values, name=RELEASE, namespace=NAMESPACE))
    assert out.arg("--scheduler-name") == "default-scheduler"
    assert "--allow-default-scheduler" in out.args
    assert out.get("SchedulingPolicy")["spec"]["schedulerName"] == "default-scheduler"
