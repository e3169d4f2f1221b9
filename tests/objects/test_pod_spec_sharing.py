"""Pods of one template share what is derived from their spec, and only byte-identical
twins do: a value of another type, an init container or another namespace is parsed
anew, and a malformed pod after a valid twin is refused exactly as on its own."""

from __future__ import annotations

import copy
import itertools
import json
import pickle
from collections.abc import Callable
from datetime import date
from typing import Any

import pytest
import yaml

from builders import container, pod
from policy_scheduler import objects
from policy_scheduler.objects import ObjectError, Pod, parse_pod

_templates = itertools.count(1)

#: The Pod fields a ReplicaSet's pods have in common (all but identity and volumes).
SPEC_FIELDS = (
    "request",
    "node_request",
    "nonzero_cpu",
    "nonzero_memory",
    "limit_cpu",
    "limit_memory",
    "best_effort",
    "host_ports",
    "images",
    "node_selector",
    "has_node_selector",
    "required_node_terms",
    "preferred_node_terms",
    "tolerations",
    "affinity_required",
    "affinity_preferred",
    "anti_affinity_required",
    "anti_affinity_preferred",
    "resource_names",
)


def template() -> Callable[..., dict[str, Any]]:
    """Pods of a new template (an image no other test uses), as a ReplicaSet makes them:
    each with its own name and service-account volume, mounted by the container."""
    image = f"registry.example/template-{next(_templates)}:1"

    def replica(name: str, namespace: str = "default", **changes: Any) -> dict[str, Any]:
        volume = f"kube-api-access-{name}"
        app = container(
            {"cpu": "500m", "memory": "1Gi", "example.com/gpu": "1"},
            {"memory": "1Gi"},
            name="app",
            image=image,
            host_ports=[8080],
        )
        app["volumeMounts"] = [{"name": volume, "mountPath": "/var/run/secrets"}]
        raw = pod(
            name,
            namespace=namespace,
            labels={"app": "web"},
            containers=[app],
            init_containers=[container({"cpu": "1"}, name="init", image=image)],
            node_selector={"disk": "ssd"},
            tolerations=[{"key": "k", "operator": "Exists", "tolerationSeconds": 300}],
            affinity={
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "labelSelector": {"matchLabels": {"app": "web"}},
                            "topologyKey": "kubernetes.io/hostname",
                        }
                    ]
                }
            },
            volumes=[{"name": volume, "projected": {"sources": []}}],
        )
        for path, value in changes.items():
            target = raw
            *parents, last = path.split(".")
            for key in parents:
                target = target[int(key)] if isinstance(target, list) else target[key]
            if isinstance(target, list):
                target[int(last)] = value
            else:
                target[last] = value
        return raw

    return replica


def spec_fields(p: Pod) -> dict[str, Any]:
    return {name: getattr(p, name) for name in SPEC_FIELDS}


def test_a_twin_gets_equal_spec_fields_and_its_own_identity() -> None:
    replica = template()
    first, second = parse_pod(replica("web-1")), parse_pod(replica("web-2"))
    assert spec_fields(second) == spec_fields(first)
    assert (first.request.milli_cpu, first.node_request.milli_cpu) == (1000, 500)
    assert [h.port for h in second.host_ports] == [8080]
    assert second.resource_names == {"example.com/gpu"}
    assert (second.name, second.volumes[0].name) == ("web-2", "kube-api-access-web-2")
    assert first.uid != second.uid


def test_a_templates_pods_parse_their_containers_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = objects._container_resources

    def counting(*args: Any) -> Any:
        calls.append(args[2])
        return real(*args)

    monkeypatch.setattr(objects.pods, "_container_resources", counting)
    replica = template()
    for i in range(5):
        parse_pod(replica(f"web-{i}"))
    assert calls == ["spec.containers", "spec.initContainers"]
    # A twin in another namespace is parsed anew: its pod affinity terms default to it.
    other = parse_pod(replica("web-0", namespace="other"))
    assert len(calls) == 4
    assert other.anti_affinity_required[0].namespaces == {"other"}


@pytest.mark.parametrize(
    ("path", "valid", "other", "field"),
    [
        pytest.param(
            "spec.containers.0.ports.0.hostPort",
            80,
            True,
            "spec.containers[0].ports[0].hostPort",
            id="1 vs true",
        ),
        pytest.param(
            "spec.containers.0.ports.0.hostPort",
            80,
            "80",
            "spec.containers[0].ports[0].hostPort",
            id="'80' vs 80",
        ),
        pytest.param(
            "spec.containers.0.ports.0.hostPort",
            80,
            80.0,
            "spec.containers[0].ports[0].hostPort",
            id="80 vs 80.0",
        ),
        pytest.param(
            "spec.containers.0.ports",
            [{"hostPort": 80}],
            ({"hostPort": 80},),
            "spec.containers[0].ports",
            id="a tuple for a list",
        ),
        pytest.param(
            "spec.containers.0.resources.requests.cpu",
            1,
            True,
            "spec.containers[0].resources.requests.cpu",
            id="cpu 1 vs true",
        ),
        pytest.param(
            "spec.tolerations.0.tolerationSeconds",
            300,
            "300",
            "spec.tolerations[0].tolerationSeconds",
            id="toleration 300 vs '300'",
        ),
        pytest.param(
            "spec.initContainers.0.resources.requests.cpu",
            "1",
            "x",
            "spec.initContainers[0].resources.requests.cpu",
            id="init container",
        ),
    ],
)
def test_a_value_of_another_type_is_not_a_twin(
    path: str, valid: Any, other: Any, field: str
) -> None:
    replica = template()
    for name in ("web-1", "web-2"):
        parse_pod(replica(name, **{path: valid}))
    with pytest.raises(ObjectError) as caught:
        parse_pod(replica("web-3", **{path: other}))
    assert (caught.value.name, caught.value.field) == ("default/web-3", field)


def test_pods_differing_in_an_init_container_do_not_share() -> None:
    replica = template()
    with_init = parse_pod(replica("web-1"))
    bigger = parse_pod(replica("web-2", **{"spec.initContainers.0.resources.requests.cpu": "3"}))
    without = parse_pod(replica("web-3", **{"spec.initContainers": []}))
    assert [p.request.milli_cpu for p in (with_init, bigger, without)] == [1000, 3000, 500]
    # The same requests in a second container instead: summed, not the max.
    moved = replica("web-4", **{"spec.initContainers": []})
    moved["spec"]["containers"].append(container({"cpu": "1"}, name="init"))
    assert parse_pod(moved).request.milli_cpu == 1500


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        pytest.param(
            "spec.containers.0.resources.requests.memory",
            "lots",
            'Pod "default/bad": spec.containers[0].resources.requests.memory: '
            "not a quantity: 'lots'",
            id="bad quantity",
        ),
        pytest.param(
            "metadata.labels",
            {"app": 1},
            'Pod "default/bad": metadata.labels.app: must be a string, got 1',
            id="bad label, same spec",
        ),
        pytest.param(
            "spec.priority",
            "high",
            "Pod \"default/bad\": spec.priority: must be an integer, got 'high'",
            id="bad priority, same spec",
        ),
        pytest.param(
            "spec.volumes",
            {"name": "v"},
            'Pod "default/bad": spec.volumes: must be a list',
            id="bad volumes, same spec",
        ),
    ],
)
def test_a_malformed_pod_after_a_valid_twin_is_refused_the_same(
    path: str, value: Any, message: str
) -> None:
    replica = template()
    parse_pod(replica("web-1"))
    with pytest.raises(ObjectError) as caught:
        parse_pod(replica("bad", **{path: value}))
    assert str(caught.value).startswith(message)


def test_with_two_errors_the_first_in_parsing_order_is_reported_after_a_twin() -> None:
    replica = template()
    parse_pod(replica("web-1"))
    # Same spec parts: a label (read before tolerations) and a bad phase (after).
    raw = replica("bad", **{"metadata.labels": {"app": 1}})
    raw["status"] = {"phase": 7}
    with pytest.raises(ObjectError, match=r"metadata\.labels\.app"):
        parse_pod(raw)
    # A bad phase is found before a bad toleration, as without a twin.
    raw = replica("bad", **{"spec.tolerations.0.operator": "Maybe"})
    raw["status"] = {"phase": 7}
    with pytest.raises(ObjectError, match=r"status\.phase"):
        parse_pod(raw)


#: An unquoted date is a date to YAML; here in a port's name, which the scheduler does
#: not read but the spec key covers.
YAML_POD = """
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default}}
spec:
  containers:
  - name: app
    image: registry.example/dated:1
    resources: {{requests: {{cpu: 250m}}}}
    ports:
    - {{containerPort: 8080, hostPort: 8080}}
    - {{containerPort: 9090, name: 2024-01-01}}
  tolerations:
  - {{key: release, operator: Equal, value: "2024-01-01", effect: NoSchedule}}
  overhead: {{cpu: 10m}}
"""


def test_a_yaml_pod_with_a_date_still_parses() -> None:
    loaded = [yaml.safe_load(YAML_POD.format(name=f"dated-{i}")) for i in range(2)]
    spec = loaded[0]["spec"]
    assert isinstance(spec["containers"][0]["ports"][1]["name"], date)
    assert objects._spec_key(spec, spec["containers"], [], "default") is None  # not cached
    first, second = (parse_pod(raw) for raw in loaded)
    assert spec_fields(first) == spec_fields(second)
    assert first.request.milli_cpu == 260
    assert [h.port for h in second.host_ports] == [8080]
    assert second.tolerations[0].value == "2024-01-01"


@pytest.mark.parametrize("labels", [{"app": "web"}, {}], ids=["labelled", "no-labels"])
def test_a_pods_labels_cannot_be_changed_through_it_so_no_twin_changes(
    labels: dict[str, str],
) -> None:
    # Label maps are shared between pods (and every label-less object shares one): a
    # plugin writing to its pod's labels would write to every twin's. It is refused.
    first = parse_pod(pod("first", labels=dict(labels)))
    second = parse_pod(pod("second", labels=dict(labels)))
    with pytest.raises(TypeError, match="read-only"):
        first.labels["app"] = "changed"  # type: ignore[index]
    for change in (
        lambda m: m.update(app="changed"),
        lambda m: m.setdefault("extra", "x"),
        lambda m: m.pop("app", None),
        lambda m: m.clear(),
        lambda m: m.popitem(),
    ):
        with pytest.raises(TypeError, match="read-only"):
            change(first.labels)
    assert dict(second.labels) == labels == dict(first.labels)
    # A copy is the plugin's own, and reads as before.
    own = dict(first.labels) | {"app": "changed"}
    assert own["app"] == "changed" and dict(second.labels) == labels
    assert copy.deepcopy(first.labels) == labels
    assert pickle.loads(pickle.dumps(first.labels)) == labels
    assert json.loads(json.dumps(first.labels)) == labels
