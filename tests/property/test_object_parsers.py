"""Every object parser, on any JSON-like input: a parsed object or an ObjectError, nothing else.

Inputs are valid objects of each kind with a few values replaced, removed or added
anywhere (see strategies.py), and arbitrary values. A TypeError, KeyError,
RecursionError, ... escaping a parser is a bug: the operator would lose the event and
``simulate`` would print a traceback instead of naming the object and the field.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import claim_volume, container, csi_node, node, pod, pv, pvc, storage_class
from policy_scheduler.cli import USER_ERRORS
from policy_scheduler.objects import (
    ObjectError,
    parse_csi_node,
    parse_node,
    parse_persistent_volume,
    parse_persistent_volume_claim,
    parse_pod,
    parse_storage_class,
    parse_workload,
)
from policy_scheduler.simulation import inputs_from_objects, kubernetes_objects
from property.strategies import examples, mutated_or_arbitrary, succeeds_or_raises

SELECTOR = {
    "matchLabels": {"app": "web"},
    "matchExpressions": [
        {"key": "tier", "operator": "In", "values": ["a", "b"]},
        {"key": "gone", "operator": "DoesNotExist"},
    ],
}
NODE_TERM = {
    "matchExpressions": [
        {"key": "zone", "operator": "In", "values": ["z1"]},
        {"key": "cores", "operator": "Gt", "values": ["4"]},
    ],
    "matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n9"]}],
}
POD_TERM = {"labelSelector": SELECTOR, "topologyKey": "zone", "namespaces": ["a", "b"]}

RICH_POD = pod(
    "web-1",
    namespace="shop",
    containers=[
        container({"cpu": "500m", "memory": "1Gi", "example.com/gpu": "1"}, {"cpu": "1"}),
        container({"cpu": "250m"}, host_ports=[8080, (53, "UDP", "10.0.0.1")]),
    ],
    init_containers=[container({"cpu": "2", "memory": "512Mi"})],
    overhead={"cpu": "100m", "memory": "64Mi"},
    labels={"app": "web", "tier": "a"},
    node_selector={"disk": "ssd"},
    affinity={
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [NODE_TERM]},
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 5, "preference": NODE_TERM}
            ],
        },
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [POD_TERM],
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 10, "podAffinityTerm": POD_TERM}
            ],
        },
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [POD_TERM],
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 100, "podAffinityTerm": POD_TERM}
            ],
        },
    },
    tolerations=[
        {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "tolerationSeconds": 300},
    ],
    volumes=[
        claim_volume("data"),
        {"name": "pd", "gcePersistentDisk": {"pdName": "disk-1", "readOnly": True}},
        {"name": "rbd", "rbd": {"image": "i", "monitors": ["m1"], "pool": "p"}},
        {"name": "iscsi", "iscsi": {"iqn": "iqn.x", "targetPortal": "1.2.3.4", "lun": 1}},
        {"name": "csi", "csi": {"driver": "d", "volumeHandle": "h", "fsType": "ext4"}},
        {"name": "cm", "configMap": {"name": "c"}},
    ],
    priority=1000,
    owner=("ReplicaSet", "web-7d9f", "rs-uid"),
    spread=[
        {
            "maxSkew": 1,
            "topologyKey": "zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": SELECTOR,
        }
    ],
    schedulingGates=[],
    schedulerName="policy-scheduler",
)
RICH_POD["metadata"]["creationTimestamp"] = "2024-05-01T10:00:00Z"
RICH_POD["status"] = {"phase": "Pending", "nominatedNodeName": "n1"}

RICH_NODE = node(
    "n1",
    allocatable={"cpu": "3900m", "memory": "15Gi", "pods": "110", "example.com/gpu": "2"},
    labels={"zone": "z1", "disk": "ssd"},
    taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}],
    conditions={"Ready": "True", "MemoryPressure": "False"},
    images=[(["registry.example/app:1", "registry.example/app@sha256:ab"], 123456789)],
    annotations={
        "scheduler.alpha.kubernetes.io/preferAvoidPods": (
            '{"preferAvoidPods": [{"podSignature": {"podController": '
            '{"kind": "ReplicaSet", "uid": "rs-uid"}}}]}'
        )
    },
)

WORKLOADS = [
    {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {"selector": {"app": "web"}},
    },
    {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "metadata": {"name": "rc", "namespace": "shop"},
        "spec": {"selector": {"app": "web"}},
    },
    {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "rs", "namespace": "shop"},
        "spec": {"selector": SELECTOR},
    },
    {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": "shop"},
        "spec": {"selector": SELECTOR},
    },
]

PARSERS: list[tuple[str, Callable[[Any], Any], dict[str, Any]]] = [
    ("pod", parse_pod, RICH_POD),
    ("bound-pod", parse_pod, {**RICH_POD, "spec": {**RICH_POD["spec"], "nodeName": "n1"}}),
    ("node", parse_node, RICH_NODE),
    (
        "pv",
        parse_persistent_volume,
        pv(
            "pv-1",
            source={"csi": {"driver": "d", "volumeHandle": "h"}},
            labels={"zone": "z1"},
            storage_class="fast",
            capacity="10Gi",
            access_modes=["ReadWriteOnce"],
            affinity={"zone": ["z1", "z2"]},
            claim=("shop", "data"),
            volume_mode="Block",
        ),
    ),
    (
        "pvc",
        parse_persistent_volume_claim,
        pvc(
            "data",
            namespace="shop",
            volume_name="pv-1",
            storage_class="fast",
            request="5Gi",
            access_modes=["ReadWriteOnce"],
            annotations={"volume.beta.kubernetes.io/storage-class": "fast"},
            selector=SELECTOR,
        ),
    ),
    (
        "storage-class",
        parse_storage_class,
        storage_class("fast", mode="WaitForFirstConsumer", topologies=[{"zone": ["z1"]}]),
    ),
    ("csi-node", parse_csi_node, csi_node("n1", {"ebs.csi.aws.com": 25, "d": None})),
    *[(f"workload-{w['kind']}", parse_workload, w) for w in WORKLOADS],
]


@pytest.mark.parametrize(("parse", "base"), [pytest.param(p, b, id=name) for name, p, b in PARSERS])
def test_the_bases_parse(parse: Callable[[Any], Any], base: dict[str, Any]) -> None:
    # Mutations start from valid objects; a base that fails would test nothing.
    assert parse(base) is not None


def _property(parse: Callable[[Any], Any], base: dict[str, Any]) -> Callable[[], None]:
    @settings(max_examples=examples(150))
    @given(raw=mutated_or_arbitrary(base))
    def check(raw: Any) -> None:
        succeeds_or_raises(lambda: parse(raw), ObjectError)

    return check


@pytest.mark.parametrize(("parse", "base"), [pytest.param(p, b, id=name) for name, p, b in PARSERS])
def test_a_parser_succeeds_or_names_the_field(
    parse: Callable[[Any], Any], base: dict[str, Any]
) -> None:
    _property(parse, base)()


@settings(max_examples=examples(300))
@given(raw=mutated_or_arbitrary(RICH_POD))
def test_an_error_is_one_line_that_names_the_pod(raw: Any) -> None:
    try:
        parse_pod(raw)
    except ObjectError as exc:
        text = str(exc)
        assert text.startswith("Pod"), text
        assert "\n" not in text and len(text) < 400, text


@settings(max_examples=examples(150))
@given(
    documents=st.lists(
        st.one_of(
            mutated_or_arbitrary(RICH_POD),
            mutated_or_arbitrary(RICH_NODE),
            *[mutated_or_arbitrary(w) for w in WORKLOADS],
            mutated_or_arbitrary({"kind": "List", "items": [RICH_NODE, WORKLOADS[0]]}),
        ),
        max_size=3,
    )
)
def test_simulate_sorts_decoded_documents_or_names_the_problem(documents: list[Any]) -> None:
    # What `simulate -f` does after decoding: objects out of documents, then a cluster.
    def load() -> Any:
        objects = kubernetes_objects(documents, "f.yaml")
        return inputs_from_objects((obj, "f.yaml") for obj in objects)

    succeeds_or_raises(load, *USER_ERRORS)
