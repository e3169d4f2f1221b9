"""The chart's NetworkPolicy (``networkPolicy.enabled``), judged by what it lets in.

Each rendered policy is validated by ``kubernetes-validate --strict`` (in
``test_chart.py``, with every manifest) and then evaluated here the way a NetworkPolicy
implementation reads it (NetworkPolicy v1 semantics: a pod selected by a policy with
``Ingress`` in its policyTypes accepts a connection only if one ingress rule matches
both its port and its source; a rule without ``from`` matches every source; a
``podSelector`` peer alone means pods of the policy's namespace; an ``ipBlock`` matches
addresses, ``except`` excluded). The questions are a cluster operator's: can the
kubelet probe the scheduler, can Prometheus scrape it, can anything else get in?
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any

import helm_python as helm
import pytest

from chart.crdcheck import CHART
from chart.rendering import NAMESPACE, RELEASE, Rendered

HEALTH, METRICS, OTHER = 8081, 9090, 8080

PROMETHEUS_PEER = {
    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}},
    "podSelector": {
        "matchExpressions": [{"key": "app", "operator": "In", "values": ["prometheus"]}]
    },
}
OFFICE_PEER = {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}}


@dataclass(frozen=True)
class Source:
    """Where a connection comes from: a pod (namespace and labels) or only an address."""

    ip: str
    namespace: str | None = None  # None: not a pod (the node's kubelet, outside)
    namespace_labels: dict[str, str] = field(default_factory=dict)
    pod_labels: dict[str, str] = field(default_factory=dict)


KUBELET = Source("192.168.1.5")
PROMETHEUS = Source(
    "10.244.3.7",
    "monitoring",
    {"kubernetes.io/metadata.name": "monitoring"},
    {"app": "prometheus"},
)
GRAFANA = Source(
    "10.244.3.8", "monitoring", {"kubernetes.io/metadata.name": "monitoring"}, {"app": "grafana"}
)
IMPOSTOR = Source(
    "10.244.4.2", "team-a", {"kubernetes.io/metadata.name": "team-a"}, {"app": "prometheus"}
)
NEIGHBOUR = Source("10.244.5.1", NAMESPACE, {"kubernetes.io/metadata.name": NAMESPACE}, {})
OFFICE = Source("10.2.3.4")
OFFICE_EXCEPTED = Source("10.1.2.3")


def selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """A LabelSelector; ``{}`` selects everything."""
    if any(labels.get(k) != v for k, v in selector.get("matchLabels", {}).items()):
        return False
    for expression in selector.get("matchExpressions", []):
        key, operator = expression["key"], expression["operator"]
        values = expression.get("values", [])
        present = key in labels
        ok = {
            "In": present and labels.get(key) in values,
            "NotIn": not present or labels.get(key) not in values,
            "Exists": present,
            "DoesNotExist": not present,
        }[operator]
        if not ok:
            return False
    return True


def peer_admits(peer: dict[str, Any], source: Source, policy_namespace: str) -> bool:
    if "ipBlock" in peer:
        address = ipaddress.ip_address(source.ip)
        block = peer["ipBlock"]
        return address in ipaddress.ip_network(block["cidr"]) and not any(
            address in ipaddress.ip_network(cidr) for cidr in block.get("except", [])
        )
    if source.namespace is None:
        return False  # selectors select pods
    if "namespaceSelector" in peer:
        in_namespace = selects(peer["namespaceSelector"], source.namespace_labels)
    else:
        in_namespace = source.namespace == policy_namespace
    return in_namespace and selects(peer.get("podSelector", {}), source.pod_labels)


def admits(policy: dict[str, Any], source: Source, port: int) -> bool:
    """Whether the pods the policy selects accept a TCP connection from ``source``."""
    spec = policy["spec"]
    if "Ingress" not in spec["policyTypes"]:
        return True
    namespace = policy["metadata"]["namespace"]
    for rule in spec.get("ingress", []):
        ports = rule.get("ports")
        if ports and not any(
            p["port"] == port and p.get("protocol", "TCP") == "TCP" for p in ports
        ):
            continue
        peers = rule.get("from")
        if not peers or any(peer_admits(peer, source, namespace) for peer in peers):
            return True
    return False


def render(values: dict[str, Any]) -> Rendered:
    chart = helm.Chart.load(CHART)
    return Rendered(chart.render(values, name=RELEASE, namespace=NAMESPACE, is_install=True))


@pytest.fixture(scope="module")
def policies() -> dict[str, dict[str, Any]]:
    value_sets: dict[str, dict[str, Any]] = {
        "scraped": {"networkPolicy": {"enabled": True, "metricsFrom": [PROMETHEUS_PEER]}},
        "scraped-and-office": {
            "networkPolicy": {"enabled": True, "metricsFrom": [PROMETHEUS_PEER, OFFICE_PEER]}
        },
        "metrics-closed": {"networkPolicy": {"enabled": True}},
        "metrics-off": {
            "metrics": {"enabled": False},
            "networkPolicy": {"enabled": True, "metricsFrom": [PROMETHEUS_PEER]},
        },
    }
    return {name: render(values).get("NetworkPolicy") for name, values in value_sets.items()}


@pytest.mark.parametrize(
    ("policy", "source", "port", "admitted"),
    [
        pytest.param("scraped", KUBELET, HEALTH, True, id="kubelet-probes-health"),
        pytest.param("scraped", PROMETHEUS, HEALTH, True, id="health-is-open-to-all"),
        pytest.param("scraped", PROMETHEUS, METRICS, True, id="prometheus-scrapes"),
        pytest.param("scraped", KUBELET, METRICS, False, id="kubelet-no-metrics"),
        pytest.param("scraped", GRAFANA, METRICS, False, id="other-pod-of-monitoring"),
        pytest.param("scraped", IMPOSTOR, METRICS, False, id="prometheus-label-elsewhere"),
        pytest.param("scraped", NEIGHBOUR, METRICS, False, id="same-namespace-pod"),
        pytest.param("scraped", PROMETHEUS, OTHER, False, id="prometheus-other-port"),
        pytest.param("scraped", NEIGHBOUR, OTHER, False, id="neighbour-other-port"),
        pytest.param("scraped", OFFICE, METRICS, False, id="outside-not-listed"),
        pytest.param("scraped-and-office", OFFICE, METRICS, True, id="ip-block"),
        pytest.param("scraped-and-office", OFFICE_EXCEPTED, METRICS, False, id="ip-block-except"),
        pytest.param("scraped-and-office", PROMETHEUS, METRICS, True, id="both-peers"),
        pytest.param("metrics-closed", PROMETHEUS, METRICS, False, id="empty-metrics-from"),
        pytest.param("metrics-closed", KUBELET, HEALTH, True, id="closed-still-probed"),
        pytest.param("metrics-off", PROMETHEUS, METRICS, False, id="metrics-off-port-closed"),
        pytest.param("metrics-off", KUBELET, HEALTH, True, id="metrics-off-still-probed"),
    ],
)
def test_who_gets_in(
    policies: dict[str, dict[str, Any]], policy: str, source: Source, port: int, admitted: bool
) -> None:
    assert admits(policies[policy], source, port) is admitted


def test_it_applies_to_the_scheduler_pods_and_nothing_else() -> None:
    out = render({"networkPolicy": {"enabled": True}})
    policy = out.get("NetworkPolicy")
    pod_labels = out.get("Deployment")["spec"]["template"]["metadata"]["labels"]
    assert policy["metadata"]["namespace"] == NAMESPACE
    assert policy["spec"]["podSelector"] == {
        "matchLabels": {
            "app.kubernetes.io/name": "policy-scheduler",
            "app.kubernetes.io/instance": RELEASE,
        }
    }
    assert selects(policy["spec"]["podSelector"], pod_labels)


def test_the_ports_it_opens_are_the_containers() -> None:
    out = render(
        {
            "healthPort": 9000,
            "metrics": {"port": 9100},
            "networkPolicy": {"enabled": True, "metricsFrom": [PROMETHEUS_PEER]},
        }
    )
    opened = sorted(
        port["port"]
        for rule in out.get("NetworkPolicy")["spec"]["ingress"]
        for port in rule["ports"]
    )
    listening = sorted(port["containerPort"] for port in out.container["ports"])
    assert opened == listening == [9000, 9100]
    assert admits(out.get("NetworkPolicy"), PROMETHEUS, 9100)
    assert not admits(out.get("NetworkPolicy"), PROMETHEUS, METRICS)


def test_egress_is_unrestricted_unless_rules_are_given() -> None:
    open_egress = render({"networkPolicy": {"enabled": True}}).get("NetworkPolicy")
    assert open_egress["spec"]["policyTypes"] == ["Ingress"]
    assert "egress" not in open_egress["spec"]

    rules = [
        {"to": [{"ipBlock": {"cidr": "172.20.0.1/32"}}], "ports": [{"port": 6443}]},
        {"ports": [{"port": 53, "protocol": "UDP"}]},
    ]
    restricted = render({"networkPolicy": {"enabled": True, "egress": rules}}).get("NetworkPolicy")
    assert restricted["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert restricted["spec"]["egress"] == rules


@pytest.mark.parametrize(
    ("values", "warned"),
    [
        pytest.param({"networkPolicy": {"enabled": True}}, True, id="metrics-from-empty"),
        pytest.param(
            {"networkPolicy": {"enabled": True, "metricsFrom": [PROMETHEUS_PEER]}},
            False,
            id="metrics-from-set",
        ),
        pytest.param(
            {"metrics": {"enabled": False}, "networkPolicy": {"enabled": True}},
            False,
            id="no-metrics",
        ),
    ],
)
def test_notes_warn_when_the_policy_closes_the_metrics_port(
    values: dict[str, Any], warned: bool
) -> None:
    notes = render(values).notes
    assert ("lets nobody reach the metrics port" in notes) is warned


def test_off_by_default() -> None:
    assert "NetworkPolicy" not in render({}).kinds()
