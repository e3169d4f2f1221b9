"""Parsing API dicts into the engine's objects: what a pod asks for, and bad objects."""

from __future__ import annotations

from typing import Any

import pytest

from builders import container, node, pod
from policy_scheduler.objects import (
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    ObjectError,
    parse_node,
    parse_pod,
)

GI = 2**30
MI = 2**20


def test_requests_sum_containers_take_the_max_with_each_init_container_plus_overhead() -> None:
    p = parse_pod(
        pod(
            "p",
            containers=[
                container({"cpu": "500m", "memory": "1Gi", "example.com/gpu": "1"}),
                container({"cpu": "250m", "memory": "1Gi", "hugepages-2Mi": "4Mi"}),
            ],
            init_containers=[
                container({"cpu": "2", "memory": "512Mi"}),
                container({"cpu": "100m", "memory": "3Gi", "example.com/gpu": "2"}),
            ],
            overhead={"cpu": "100m", "memory": "64Mi"},
        )
    )
    # fit request: max(sum, each init) per resource, then + overhead
    assert p.request.milli_cpu == 2000 + 100
    assert p.request.memory == 3 * GI + 64 * MI
    assert p.request.scalar == {"example.com/gpu": 2, "hugepages-2Mi": 4 * MI}
    # what the pod adds to its node once placed: containers + overhead, no init
    assert p.node_request.milli_cpu == 750 + 100
    assert p.node_request.memory == 2 * GI + 64 * MI
    assert p.node_request.scalar == {"example.com/gpu": 1, "hugepages-2Mi": 4 * MI}


def test_non_zero_defaults_apply_only_to_absent_requests() -> None:
    absent = parse_pod(pod("a", containers=[container(None), container({"cpu": "1"})]))
    assert absent.nonzero_cpu == DEFAULT_MILLI_CPU_REQUEST + 1000
    assert absent.nonzero_memory == 2 * DEFAULT_MEMORY_REQUEST
    explicit_zero = parse_pod(pod("z", requests={"cpu": "0", "memory": "0"}))
    assert (explicit_zero.nonzero_cpu, explicit_zero.nonzero_memory) == (0, 0)
    # ... and never to the fit request
    assert absent.request.memory == 0


@pytest.mark.parametrize(
    ("requests", "limits", "best_effort"),
    [
        pytest.param(None, None, True, id="nothing"),
        pytest.param({"cpu": "0"}, None, True, id="zero request"),
        pytest.param({"example.com/gpu": "1"}, None, True, id="extended only"),
        pytest.param(None, {"memory": "1Gi"}, False, id="a limit"),
        pytest.param({"cpu": "1m"}, None, False, id="a request"),
    ],
)
def test_best_effort(requests: Any, limits: Any, best_effort: bool) -> None:
    assert parse_pod(pod("p", requests=requests, limits=limits)).best_effort is best_effort


def test_limits_sum_containers_and_take_init_max() -> None:
    p = parse_pod(
        pod(
            "p",
            containers=[
                container(None, {"cpu": "1"}),
                container(None, {"cpu": "1", "memory": "1Gi"}),
            ],
            init_containers=[container(None, {"cpu": "3"})],
        )
    )
    assert (p.limit_cpu, p.limit_memory) == (3000, GI)


def test_host_ports_default_protocol_and_ip() -> None:
    p = parse_pod(pod("p", host_ports=[80, (53, "UDP", "10.0.0.1")]))
    assert [(h.ip, h.protocol, h.port) for h in p.host_ports] == [
        ("0.0.0.0", "TCP", 80),
        ("10.0.0.1", "UDP", 53),
    ]


def test_node_allocatable_defaults_to_capacity() -> None:
    raw = node("n", cpu="4", memory="8Gi")
    del raw["status"]["allocatable"]
    parsed = parse_node(raw)
    assert (parsed.allocatable.milli_cpu, parsed.allocatable.memory) == (4000, 8 * GI)


def test_unlabelled_images_get_latest_only_on_pods() -> None:
    p = parse_pod(pod("p", containers=[container(image="nginx")]))
    assert p.images == ("nginx:latest",)
    n = parse_node(node("n", images=[(["nginx"], 100)]))
    assert n.images[0].names == ("nginx",)


def _with(raw: dict[str, Any], path: list[Any], value: Any) -> dict[str, Any]:
    target: Any = raw
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return raw


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        pytest.param(
            pod("p", requests={"memory": "lots"}),
            'Pod "default/p": spec.containers[0].resources.requests.memory: '
            "not a quantity: 'lots'",
            id="bad quantity",
        ),
        pytest.param(
            {"kind": "Pod", "metadata": {"namespace": "x"}, "spec": {}},
            "Pod: metadata.name: is required",
            id="missing name",
        ),
        pytest.param(
            pod("p", requests={"cpu": "-1"}),
            'Pod "default/p": spec.containers[0].resources.requests.cpu: must not be negative',
            id="negative request",
        ),
        pytest.param(
            pod("p", tolerations=[{"key": "k", "operator": "Maybe"}]),
            'Pod "default/p": spec.tolerations[0].operator: must be "Equal" or "Exists"',
            id="bad toleration operator",
        ),
        pytest.param(
            _with(pod("p"), ["spec", "containers"], {"name": "x"}),
            'Pod "default/p": spec.containers: must be a list',
            id="containers not a list",
        ),
        pytest.param(
            pod("p", labels={"tier": 1}),  # type: ignore[dict-item]
            'Pod "default/p": metadata.labels.tier: must be a string, got 1',
            id="label not a string",
        ),
    ],
)
def test_malformed_pods_name_the_object_and_the_field(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ObjectError) as caught:
        parse_pod(raw)
    assert str(caught.value).startswith(message)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        pytest.param(
            node("n", taints=[{"key": "k", "effect": "Sometimes"}]),
            'Node "n": spec.taints[0].effect: '
            'must be "NoSchedule", "PreferNoSchedule" or "NoExecute"',
            id="bad taint effect",
        ),
        pytest.param(
            node("n", cpu="four"),
            "Node \"n\": status.allocatable.cpu: not a quantity: 'four'",
            id="bad allocatable",
        ),
        pytest.param(
            _with(node("n"), ["spec", "unschedulable"], "yes"),
            "Node \"n\": spec.unschedulable: must be true or false, got 'yes'",
            id="bad bool",
        ),
    ],
)
def test_malformed_nodes_name_the_object_and_the_field(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ObjectError) as caught:
        parse_node(raw)
    assert str(caught.value).startswith(message)


# -- what plugins read: annotations and owner references ------------------------------


def _owned_pod(**meta: object) -> dict[str, object]:
    return {
        "metadata": {"name": "web-1", "namespace": "shop", "uid": "u1", **meta},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }


def test_a_pod_carries_its_annotations_but_not_kubectls_copy_of_itself() -> None:
    pod = parse_pod(
        _owned_pod(
            annotations={
                "example.com/rack": "r1",
                "kubectl.kubernetes.io/last-applied-configuration": '{"kind": "Pod"}',
            }
        )
    )
    assert dict(pod.annotations) == {"example.com/rack": "r1"}
    assert parse_pod(_owned_pod()).annotations == {}


def test_replicas_share_one_annotation_map() -> None:
    first = parse_pod(_owned_pod(annotations={"a": "1"}))
    second = parse_pod(
        {
            **_owned_pod(annotations={"a": "1"}),
            "metadata": {
                "name": "web-2",
                "namespace": "shop",
                "uid": "u2",
                "annotations": {"a": "1"},
            },
        }
    )
    assert first.annotations is second.annotations


def test_an_annotation_must_be_a_string_even_when_seen_before() -> None:
    parse_pod(_owned_pod(annotations={"a": "1"}))
    with pytest.raises(ObjectError, match=r"metadata\.annotations\.a: must be a string"):
        parse_pod(_owned_pod(annotations={"a": 1}))


def test_a_pod_lists_every_owner_reference_and_knows_its_controller() -> None:
    refs = [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "cfg", "uid": "c1"},
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "name": "web",
            "uid": "r1",
            "controller": True,
        },
    ]
    pod = parse_pod(_owned_pod(ownerReferences=refs))
    assert [(o.kind, o.name, o.api_version, o.controller) for o in pod.owner_references] == [
        ("ConfigMap", "cfg", "v1", False),
        ("ReplicaSet", "web", "apps/v1", True),
    ]
    assert pod.controller == pod.owner_references[1]
    # Seen again (replicas): the same objects, the same answer.
    again = parse_pod(_owned_pod(ownerReferences=refs))
    assert again.owner_references == pod.owner_references
    assert again.controller is pod.controller


def test_a_bad_owner_reference_is_refused_even_after_a_good_one() -> None:
    parse_pod(_owned_pod(ownerReferences=[{"kind": "ReplicaSet", "name": "web", "uid": "r1"}]))
    with pytest.raises(ObjectError, match=r"metadata\.ownerReferences\[0\]\.name"):
        parse_pod(_owned_pod(ownerReferences=[{"kind": "ReplicaSet", "name": ["x"], "uid": "r1"}]))
