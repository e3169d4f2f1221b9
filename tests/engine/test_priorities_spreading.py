"""SelectorSpread, ServiceSpreading, serviceAntiAffinity and EvenPodsSpread priorities.

Ported from upstream's selector_spreading_test.go (TestSelectorSpreadPriority with v1.17's
expectations, where a placed pod must match *all* selecting workloads;
TestZoneSelectorSpreadPriority; TestZoneSpreadPriority) and even_pods_spread_test.go
(TestCalculateEvenPodsSpreadPriority), on the legacy 0..10 scale. Upstream's empty
namespace "" becomes our "default" (the parser defaults it) and upstream's explicit
"default" namespace becomes "ns-default", so that the two stay distinct as in the Go tests.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import pytest

import builders
from builders import cluster, cycle, decide, node, pod, policy
from policy_scheduler import names
from policy_scheduler.engine import compiler
from policy_scheduler.engine.functions import REGISTRY, PolicySettings, Priority
from policy_scheduler.engine.priorities import spreading  # noqa: F401  (registers the names)
from policy_scheduler.objects import parse_pod


@pytest.fixture(autouse=True, params=[True, False], ids=["fast", "plain"])
def engine_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Every case runs on the fast path (cluster indexes) and on the plain definition."""
    fast: bool = request.param
    settings = functools.partial(PolicySettings, fast=fast)
    monkeypatch.setattr(builders, "PolicySettings", settings)
    monkeypatch.setattr(compiler, "PolicySettings", settings)
    return fast


NS = "default"  # upstream ""
NS_DEFAULT = "ns-default"  # upstream metav1.NamespaceDefault
ZONE = "failure-domain.beta.kubernetes.io/zone"

_names = itertools.count(1)


def placed(
    node_name: str, labels: dict[str, str] | None = None, namespace: str = NS
) -> dict[str, Any]:
    return pod(f"q{next(_names)}", node_name=node_name, labels=labels, namespace=namespace)


def incoming(labels: dict[str, str] | None = None, namespace: str = NS) -> dict[str, Any]:
    return pod("p", labels=labels, namespace=namespace)


def workload(kind: str, selector: dict[str, str], namespace: str = NS) -> dict[str, Any]:
    spec: dict[str, Any]
    if kind in ("Service", "ReplicationController"):
        spec = {"selector": selector}
    else:
        spec = {"selector": {"matchLabels": selector}}
    return {
        "kind": kind,
        "metadata": {"name": f"{kind.lower()}-{next(_names)}", "namespace": namespace},
        "spec": spec,
    }


def svc(selector: dict[str, str], namespace: str = NS) -> dict[str, Any]:
    return workload("Service", selector, namespace)


def run(
    priority: Priority,
    the_pod: dict[str, Any],
    nodes: Sequence[dict[str, Any]],
    pods: Sequence[dict[str, Any]] = (),
    objects: Sequence[dict[str, Any]] = (),
    scored: Sequence[str] | None = None,
) -> dict[str, int]:
    state = cluster(nodes, pods, objects)
    parsed = parse_pod(the_pod)
    names_ = list(scored) if scored is not None else [n["metadata"]["name"] for n in nodes]
    infos = [state.nodes[n] for n in names_]
    return dict(zip(names_, priority(parsed, infos, cycle(parsed, state)), strict=True))


# -- TestSelectorSpreadPriority --------------------------------------------------------------

L1 = {"foo": "bar", "baz": "blah"}
L2 = {"bar": "foo", "baz": "blah"}
M12 = [node("machine1"), node("machine2")]


@pytest.mark.parametrize(
    ("the_pod", "pods", "objects", "expected"),
    [
        pytest.param(pod("p"), [], [], {"machine1": 10, "machine2": 10}, id="nothing scheduled"),
        pytest.param(
            incoming(L1),
            [placed("machine1")],
            [],
            {"machine1": 10, "machine2": 10},
            id="no services",
        ),
        pytest.param(
            incoming(L1),
            [placed("machine1", L2)],
            [svc({"key": "value"})],
            {"machine1": 10, "machine2": 10},
            id="different services",
        ),
        pytest.param(
            incoming(L1),
            [placed("machine1", L2), placed("machine2", L1)],
            [svc(L1)],
            {"machine1": 10, "machine2": 0},
            id="two pods, one service pod",
        ),
        pytest.param(
            incoming(L1),
            [
                placed("machine1", L2),
                placed("machine1", L1, NS_DEFAULT),
                placed("machine1", L1, "ns1"),
                placed("machine2", L1),
                placed("machine2", L2),
            ],
            [svc(L1)],
            {"machine1": 10, "machine2": 0},
            id="five pods, one service pod in no namespace",
        ),
        pytest.param(
            incoming(L1, NS_DEFAULT),
            [
                placed("machine1", L1),
                placed("machine1", L1, "ns1"),
                placed("machine2", L1, NS_DEFAULT),
                placed("machine2", L2),
            ],
            [svc(L1, NS_DEFAULT)],
            {"machine1": 10, "machine2": 0},
            id="four pods, one service pod in default namespace",
        ),
        pytest.param(
            incoming(L1, "ns1"),
            [
                placed("machine1", L1),
                placed("machine1", L1, NS_DEFAULT),
                placed("machine1", L1, "ns2"),
                placed("machine2", L1, "ns1"),
                placed("machine2", L2),
            ],
            [svc(L1, "ns1")],
            {"machine1": 10, "machine2": 0},
            id="five pods, one service pod in specific namespace",
        ),
        pytest.param(
            incoming(L1),
            [placed("machine1", L2), placed("machine1", L1), placed("machine2", L1)],
            [svc(L1)],
            {"machine1": 0, "machine2": 0},
            id="three pods, two service pods on different machines",
        ),
        pytest.param(
            incoming(L1),
            [
                placed("machine1", L2),
                placed("machine1", L1),
                placed("machine2", L1),
                placed("machine2", L1),
            ],
            [svc(L1)],
            {"machine1": 5, "machine2": 0},
            id="four pods, three service pods",
        ),
        pytest.param(
            incoming(L1),
            [placed("machine1", L2), placed("machine1", L1), placed("machine2", L1)],
            [svc({"baz": "blah"})],
            {"machine1": 0, "machine2": 5},
            id="service with partial pod label matches",
        ),
        *[
            pytest.param(
                incoming(L1),
                [placed("machine1", L2), placed("machine1", L1), placed("machine2", L1)],
                # A pod counts only if it matches every selector: labels2 lacks foo=bar.
                [workload(kind, {"foo": "bar"}), svc({"baz": "blah"})],
                {"machine1": 0, "machine2": 0},
                id=f"service with partial pod label matches with service and {kind}",
            )
            for kind in ("ReplicationController", "ReplicaSet", "StatefulSet")
        ],
        *[
            pytest.param(
                incoming({"foo": "bar", "bar": "foo"}),
                [placed("machine1", L2), placed("machine1", L1), placed("machine2", L1)],
                # Taken together the service and the controller match no placed pod.
                [workload(kind, {"foo": "bar"}), svc({"bar": "foo"})],
                {"machine1": 10, "machine2": 10},
                id=f"disjoined service and {kind} matches no pods",
            )
            for kind in ("ReplicationController", "ReplicaSet", "StatefulSet")
        ],
        *[
            pytest.param(
                incoming(L1),
                [placed("machine1", L2), placed("machine1", L1), placed("machine2", L1)],
                [workload(kind, {"foo": "bar"})],
                {"machine1": 0, "machine2": 0},
                id=f"{kind} with partial pod label matches",
            )
            for kind in ("ReplicationController", "ReplicaSet", "StatefulSet")
        ],
        *[
            pytest.param(
                incoming(L1),
                [placed("machine1", L2), placed("machine1", L1), placed("machine2", L1)],
                [workload(kind, {"baz": "blah"})],
                {"machine1": 0, "machine2": 5},
                id=f"another {kind} with partial pod label matches",
            )
            for kind in ("ReplicationController", "ReplicaSet", "StatefulSet")
        ],
        # Rules the code implies, beyond the table.
        pytest.param(
            incoming(L1),
            [placed("machine1", L1), placed("machine2", L1), placed("machine2", L1)],
            [workload("ReplicaSet", {"foo": "bar"}), workload("ReplicaSet", {"nope": "x"})],
            {"machine1": 5, "machine2": 0},
            id="a controller not selecting the pod is ignored",
        ),
        pytest.param(
            incoming(L1),
            [placed("machine1", L1), placed("machine1", L1)],
            [
                {
                    "kind": "ReplicaSet",
                    "metadata": {"name": "rs", "namespace": NS},
                    "spec": {"selector": {}},
                }
            ],
            {"machine1": 10, "machine2": 10},
            id="an empty ReplicaSet selector selects nothing",
        ),
    ],
)
def test_selector_spread(
    the_pod: dict[str, Any],
    pods: list[dict[str, Any]],
    objects: list[dict[str, Any]],
    expected: dict[str, int],
) -> None:
    assert run(REGISTRY.priorities[names.SELECTOR_SPREAD], the_pod, M12, pods, objects) == expected


def test_selector_spread_ignores_pods_being_deleted() -> None:
    gone = placed("machine2", L1)
    gone["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    scores = run(
        REGISTRY.priorities[names.SELECTOR_SPREAD],
        incoming(L1),
        M12,
        [placed("machine1", L1), gone],
        [svc(L1)],
    )
    assert scores == {"machine1": 0, "machine2": 10}


def test_selector_spread_max_is_taken_over_scored_nodes_only() -> None:
    # machine3 holds 3 matching pods but is not feasible: it does not set the scale.
    nodes = [*M12, node("machine3")]
    scores = run(
        REGISTRY.priorities[names.SELECTOR_SPREAD],
        incoming(L1),
        nodes,
        [
            placed("machine1", L1),
            placed("machine3", L1),
            placed("machine3", L1),
            placed("machine3", L1),
        ],
        [svc(L1)],
        scored=["machine1", "machine2"],
    )
    assert scores == {"machine1": 0, "machine2": 10}


@pytest.mark.parametrize(
    ("objects", "expected"),
    [
        pytest.param([svc(L1)], {"machine1": 5, "machine2": 0}, id="services count"),
        pytest.param(
            [workload("ReplicaSet", {"foo": "bar"})],
            {"machine1": 10, "machine2": 10},
            id="controllers do not count",
        ),
    ],
)
def test_service_spreading(objects: list[dict[str, Any]], expected: dict[str, int]) -> None:
    pods = [placed("machine1", L1), placed("machine2", L1), placed("machine2", L1)]
    scores = run(REGISTRY.priorities[names.SERVICE_SPREADING], incoming(L1), M12, pods, objects)
    assert scores == expected


# -- TestZoneSelectorSpreadPriority ---------------------------------------------------------

ZL1 = {"label1": "l1", "baz": "blah"}
ZL2 = {"label2": "l2", "baz": "blah"}
Z_NODES = [
    node("machine1.zone1", labels={ZONE: "zone1"}),
    node("machine1.zone2", labels={ZONE: "zone2"}),
    node("machine2.zone2", labels={ZONE: "zone2"}),
    node("machine1.zone3", labels={ZONE: "zone3"}),
    node("machine2.zone3", labels={ZONE: "zone3"}),
    node("machine3.zone3", labels={ZONE: "zone3"}),
]
Z_ORDER = [
    "machine1.zone1",
    "machine1.zone2",
    "machine2.zone2",
    "machine1.zone3",
    "machine2.zone3",
    "machine3.zone3",
]


@pytest.mark.parametrize(
    ("the_pod", "pods", "objects", "expected"),
    [
        pytest.param(pod("p"), [], [], [10, 10, 10, 10, 10, 10], id="nothing scheduled"),
        pytest.param(incoming(ZL1), [placed("machine1.zone1")], [], [10] * 6, id="no services"),
        pytest.param(
            incoming(ZL1),
            [placed("machine1.zone1", ZL2)],
            [svc({"key": "value"})],
            [10] * 6,
            id="different services",
        ),
        pytest.param(
            incoming(ZL1),
            [placed("machine1.zone1", ZL2), placed("machine1.zone2", ZL2)],
            [svc(ZL1)],
            [10] * 6,
            id="two pods, 0 matching",
        ),
        pytest.param(
            incoming(ZL1),
            [placed("machine1.zone1", ZL2), placed("machine1.zone2", ZL1)],
            [svc(ZL1)],
            [10, 0, 3, 10, 10, 10],
            id="two pods, 1 matching (in z2)",
        ),
        pytest.param(
            incoming(ZL1),
            [
                placed("machine1.zone1", ZL2),
                placed("machine1.zone2", ZL1),
                placed("machine2.zone2", ZL1),
                placed("machine1.zone3", ZL2),
                placed("machine2.zone3", ZL1),
            ],
            [svc(ZL1)],
            [10, 0, 0, 6, 3, 6],
            id="five pods, 3 matching (z2=2, z3=1)",
        ),
        pytest.param(
            incoming(ZL1),
            [
                placed("machine1.zone1", ZL1),
                placed("machine1.zone2", ZL1),
                placed("machine2.zone2", ZL2),
                placed("machine1.zone3", ZL1),
            ],
            [svc(ZL1)],
            [0, 0, 3, 0, 3, 3],
            id="four pods, 3 matching (z1=1, z2=1, z3=1)",
        ),
        pytest.param(
            incoming(ZL1),
            [
                placed("machine1.zone1", ZL1),
                placed("machine1.zone2", ZL1),
                placed("machine1.zone3", ZL1),
                placed("machine2.zone2", ZL2),
            ],
            [svc(ZL1)],
            [0, 0, 3, 0, 3, 3],
            id="four pods, 3 matching (z1=1, z2=1, z3=1), other order",
        ),
        pytest.param(
            incoming(ZL1),
            [
                placed("machine1.zone3", ZL1),
                placed("machine1.zone2", ZL1),
                placed("machine1.zone3", ZL1),
            ],
            [workload("ReplicationController", ZL1)],
            [10, 5, 6, 0, 3, 3],
            id="Replication controller spreading (z1=0, z2=1, z3=2)",
        ),
    ],
)
def test_zone_selector_spread(
    the_pod: dict[str, Any],
    pods: list[dict[str, Any]],
    objects: list[dict[str, Any]],
    expected: list[int],
) -> None:
    scores = run(REGISTRY.priorities[names.SELECTOR_SPREAD], the_pod, Z_NODES, pods, objects)
    assert scores == dict(zip(Z_ORDER, expected, strict=True))


def test_zone_spread_uses_region_and_zone_together() -> None:
    # Same zone name in two regions: two different zones for spreading.
    region = "failure-domain.beta.kubernetes.io/region"
    nodes = [
        node("a", labels={region: "r1", ZONE: "z"}),
        node("b", labels={region: "r2", ZONE: "z"}),
        node("c", labels={region: "r2", ZONE: "z"}),
    ]
    scores = run(
        REGISTRY.priorities[names.SELECTOR_SPREAD],
        incoming(ZL1),
        nodes,
        [placed("a", ZL1)],
        [svc(ZL1)],
    )
    # a: node 0, zone 0 -> 0; b and c: node 10, zone 10 -> 10.
    assert scores == {"a": 0, "b": 10, "c": 10}


# -- TestZoneSpreadPriority (serviceAntiAffinity) --------------------------------------------

NOZONE = {"name": "value"}
AA_NODES = [
    node("machine01", labels=NOZONE),
    node("machine02", labels=NOZONE),
    node("machine11", labels={"zone": "zone1"}),
    node("machine12", labels={"zone": "zone1"}),
    node("machine21", labels={"zone": "zone2"}),
    node("machine22", labels={"zone": "zone2"}),
]


def _aa(m11: int, m21: int) -> dict[str, int]:
    return {
        "machine01": 0,
        "machine02": 0,
        "machine11": m11,
        "machine12": m11,
        "machine21": m21,
        "machine22": m21,
    }


@pytest.mark.parametrize(
    ("the_pod", "pods", "objects", "expected"),
    [
        pytest.param(pod("p"), [], [], _aa(10, 10), id="nothing scheduled"),
        pytest.param(incoming(L1), [placed("machine11")], [], _aa(10, 10), id="no services"),
        pytest.param(
            incoming(L1),
            [placed("machine11", L2)],
            [svc({"key": "value"})],
            _aa(10, 10),
            id="different services",
        ),
        pytest.param(
            incoming(L1),
            [placed("machine01", L2), placed("machine11", L2), placed("machine21", L1)],
            [svc(L1)],
            _aa(10, 0),
            id="three pods, one service pod",
        ),
        pytest.param(
            incoming(L1),
            [placed("machine11", L2), placed("machine11", L1), placed("machine21", L1)],
            [svc(L1)],
            _aa(5, 5),
            id="three pods, two service pods on different machines",
        ),
        pytest.param(
            incoming(L1, NS_DEFAULT),
            [
                placed("machine11", L1),
                placed("machine11", L1, NS_DEFAULT),
                placed("machine21", L1),
                placed("machine21", L1, "ns1"),
            ],
            [svc(L1, NS_DEFAULT)],
            _aa(0, 10),
            id="three service label match pods in different namespaces",
        ),
        pytest.param(
            incoming(L1),
            [
                placed("machine11", L2),
                placed("machine11", L1),
                placed("machine21", L1),
                placed("machine21", L1),
            ],
            [svc(L1)],
            _aa(6, 3),
            id="four pods, three service pods",
        ),
        pytest.param(
            incoming(L1),
            [placed("machine11", L2), placed("machine11", L1), placed("machine21", L1)],
            [svc({"baz": "blah"})],
            _aa(3, 6),
            id="service with partial pod label matches",
        ),
        pytest.param(
            incoming(L1),
            [
                placed("machine01", L1),
                placed("machine11", L1),
                placed("machine21", L1),
                placed("machine21", L1),
            ],
            [svc(L1)],
            _aa(7, 5),
            id="service pod on non-zoned node",
        ),
    ],
)
def test_service_anti_affinity(
    the_pod: dict[str, Any],
    pods: list[dict[str, Any]],
    objects: list[dict[str, Any]],
    expected: dict[str, int],
) -> None:
    priority = REGISTRY.priority_factories["serviceAntiAffinity"](SimpleNamespace(label="zone"))
    assert run(priority, the_pod, AA_NODES, pods, objects) == expected


def test_service_anti_affinity_uses_only_the_first_service() -> None:
    # The second service would count every pod; only the first one's selector counts.
    priority = REGISTRY.priority_factories["serviceAntiAffinity"](SimpleNamespace(label="zone"))
    scores = run(
        priority,
        incoming(L1),
        AA_NODES,
        [placed("machine11", L1), placed("machine21", L2), placed("machine21", L2)],
        [svc({"foo": "bar"}), svc({"baz": "blah"})],
    )
    assert scores == _aa(0, 10)


# -- TestCalculateEvenPodsSpreadPriority -------------------------------------------------------

SOFT = "ScheduleAnyway"


def exists(key: str) -> dict[str, Any]:
    return {"matchExpressions": [{"key": key, "operator": "Exists"}]}


def soft(key: str, selector_key: str, when: str = SOFT) -> dict[str, Any]:
    return {
        "maxSkew": 1,
        "topologyKey": key,
        "whenUnsatisfiable": when,
        "labelSelector": exists(selector_key),
    }


def spread_pod(labels: list[str], *constraints: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    return pod("p", labels={k: "" for k in labels}, spread=list(constraints), **kwargs)


def ex(node_name: str, *labels: str, namespace: str = NS) -> dict[str, Any]:
    return placed(node_name, {k: "" for k in labels}, namespace)


def tnode(name: str, **labels: str) -> dict[str, Any]:
    return node(name, labels=labels)


def zn(name: str, zone: str) -> dict[str, Any]:
    return tnode(name, zone=zone, node=name)


PODS_4_2_1_3 = [
    *[ex("node-a", "foo") for _ in range(4)],
    *[ex("node-b", "foo") for _ in range(2)],
    ex("node-x", "foo"),
    *[ex("node-y", "foo") for _ in range(3)],
]


@pytest.mark.parametrize(
    ("the_pod", "pods", "nodes", "failed", "expected"),
    [
        pytest.param(
            spread_pod(["foo"], soft("node", "foo")),
            [],
            [tnode("node-a", node="node-a"), tnode("node-b", node="node-b")],
            [],
            {"node-a": 10, "node-b": 10},
            id="one constraint on node, no existing pods",
        ),
        pytest.param(
            spread_pod(["foo"], soft("node", "foo")),
            [ex("node-a", "foo"), ex("node-a", "foo"), ex("node-b", "foo")],
            [tnode("node-a", node="node-a")],
            [tnode("node-b", node="node-b")],
            {"node-a": 10},
            id="one constraint on node, only one node is candidate",
        ),
        pytest.param(
            spread_pod(["foo"], soft("node", "foo")),
            [ex("node-a", "foo"), ex("node-b", "foo")],
            [tnode("node-a", node="node-a"), tnode("node-b", node="node-b")],
            [],
            {"node-a": 10, "node-b": 10},
            id="one constraint on node, all nodes have the same number of matching pods",
        ),
        pytest.param(
            spread_pod(["foo"], soft("node", "foo")),
            [
                ex("node-a", "foo"),
                ex("node-a", "foo"),
                ex("node-b", "foo"),
                ex("node-d", "foo"),
                ex("node-d", "foo"),
                ex("node-d", "foo"),
            ],
            [tnode(n, node=n) for n in ("node-a", "node-b", "node-c", "node-d")],
            [],
            {"node-a": 6, "node-b": 8, "node-c": 10, "node-d": 5},
            id="one constraint on node, all 4 nodes are candidates",
        ),
        pytest.param(
            spread_pod(["foo"], soft("node", "foo")),
            PODS_4_2_1_3,
            [tnode(n, node=n) for n in ("node-a", "node-b", "node-x")],
            [tnode("node-y", node="node-y")],
            {"node-a": 5, "node-b": 8, "node-x": 10},
            id="one constraint on node, 3 out of 4 nodes are candidates",
        ),
        pytest.param(
            spread_pod(["foo"], soft("node", "foo")),
            PODS_4_2_1_3,
            [
                tnode("node-a", node="node-a"),
                tnode("node-b", n="node-b"),
                tnode("node-x", node="node-x"),
            ],
            [tnode("node-y", node="node-y")],
            {"node-a": 2, "node-b": 0, "node-x": 10},
            id="one constraint on node, 3 out of 4 nodes are candidates, one lacks the key",
        ),
        pytest.param(
            spread_pod(["foo"], soft("zone", "foo")),
            PODS_4_2_1_3,
            [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-x", "zone2")],
            [zn("node-y", "zone2")],
            {"node-a": 8, "node-b": 8, "node-x": 10},
            id="one constraint on zone, 3 out of 4 nodes are candidates",
        ),
        pytest.param(
            spread_pod(["foo"], soft("zone", "foo"), soft("node", "foo")),
            [
                ex("node-a", "foo"),
                ex("node-a", "foo"),
                ex("node-b", "foo"),
                ex("node-x", "foo"),
                ex("node-x", "foo"),
                *[ex("node-y", "foo") for _ in range(4)],
            ],
            [zn("node-a", "zone1"), zn("node-x", "zone2")],
            [zn("node-b", "zone1"), zn("node-y", "zone2")],
            {"node-a": 10, "node-x": 6},
            id="two constraints on zone and node, 2 out of 4 nodes are candidates",
        ),
        pytest.param(
            spread_pod(["foo", "bar"], soft("zone", "foo"), soft("node", "bar")),
            [
                ex("node-a", "foo"),
                ex("node-b", "foo", "bar"),
                ex("node-y", "foo"),
                ex("node-y", "bar"),
            ],
            [
                zn("node-a", "zone1"),
                zn("node-b", "zone1"),
                zn("node-x", "zone2"),
                zn("node-y", "zone2"),
            ],
            [],
            {"node-a": 8, "node-b": 7, "node-x": 10, "node-y": 8},
            id="two constraints on zone and node, with different labelSelectors",
        ),
        pytest.param(
            spread_pod(["foo", "bar"], soft("zone", "foo"), soft("node", "bar")),
            [ex("node-b", "bar"), ex("node-x", "foo"), ex("node-y", "foo", "bar")],
            [
                zn("node-a", "zone1"),
                zn("node-b", "zone1"),
                zn("node-x", "zone2"),
                zn("node-y", "zone2"),
            ],
            [],
            {"node-a": 10, "node-b": 8, "node-x": 6, "node-y": 5},
            id="two constraints, different labelSelectors, some nodes have 0 pods",
        ),
        pytest.param(
            spread_pod(["foo", "bar"], soft("zone", "foo"), soft("node", "bar")),
            [
                ex("node-a", "foo"),
                ex("node-b", "foo", "bar"),
                ex("node-y", "foo"),
                ex("node-y", "bar"),
            ],
            [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-x", "zone2")],
            [zn("node-y", "zone2")],
            {"node-a": 8, "node-b": 6, "node-x": 10},
            id="two constraints, different labelSelectors, 3 out of 4 nodes are candidates",
        ),
        # Rules the v1.17 code implies, beyond the table.
        pytest.param(
            spread_pod(["foo"], soft("node", "foo", "DoNotSchedule")),
            [ex("node-a", "foo")],
            [tnode("node-a", node="node-a"), tnode("node-b", node="node-b")],
            [],
            {"node-a": 0, "node-b": 0},
            id="no ScheduleAnyway constraint: every node scores 0",
        ),
        pytest.param(
            spread_pod(["foo"], soft("node", "foo")),
            [],
            [tnode("node-a", node="node-a"), tnode("node-b", n="node-b")],
            [],
            {"node-a": 10, "node-b": 10},
            id="equal qualified scores: even a node lacking the key gets 10",
        ),
        pytest.param(
            spread_pod(["foo"], soft("node", "foo")),
            [ex("node-a", "foo")],
            [tnode("node-a", n="node-a"), tnode("node-b", n="node-b")],
            [],
            {"node-a": 0, "node-b": 0},
            id="no node carries the key: every node scores 0",
        ),
        pytest.param(
            spread_pod(["foo"], soft("node", "foo")),
            [ex("node-a", "foo", namespace="other"), ex("node-a", "foo", namespace="other")],
            [tnode("node-a", node="node-a"), tnode("node-b", node="node-b")],
            [],
            {"node-a": 0, "node-b": 10},
            id="pods of other namespaces count, as in v1.17",
        ),
    ],
)
def test_even_pods_spread_priority(
    the_pod: dict[str, Any],
    pods: list[dict[str, Any]],
    nodes: list[dict[str, Any]],
    failed: list[dict[str, Any]],
    expected: dict[str, int],
) -> None:
    scored = [n["metadata"]["name"] for n in nodes]
    scores = run(
        REGISTRY.priorities[names.EVEN_PODS_SPREAD_PRIORITY],
        the_pod,
        [*nodes, *failed],
        pods,
        scored=scored,
    )
    assert scores == expected


TAINTED = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
A_AND_X = [zn("node-a", "zone1"), zn("node-x", "zone2")]
TWO_ON_X = [ex("node-x", "foo"), ex("node-x", "foo")]


@pytest.mark.parametrize(
    ("the_pod", "nodes", "pods", "expected"),
    [
        pytest.param(
            spread_pod(["foo"], soft("zone", "foo")),
            [zn("node-a", "zone1"), node("node-x", labels={"zone": "zone2"}, taints=[TAINTED])],
            TWO_ON_X,
            {"node-a": 10, "node-x": 0},
            id="nodeTaintsPolicy-ignore-counts-the-tainted-nodes-pods",
        ),
        pytest.param(
            spread_pod(["foo"], {**soft("zone", "foo"), "nodeTaintsPolicy": "Honor"}),
            [zn("node-a", "zone1"), node("node-x", labels={"zone": "zone2"}, taints=[TAINTED])],
            TWO_ON_X,
            {"node-a": 10, "node-x": 10},
            id="nodeTaintsPolicy-honor-leaves-them-out",
        ),
        pytest.param(
            spread_pod(["foo"], soft("zone", "foo"), node_selector={"node": "node-a"}),
            A_AND_X,
            TWO_ON_X,
            {"node-a": 10, "node-x": 10},
            id="nodeAffinityPolicy-honor-counts-selected-nodes-only",
        ),
        pytest.param(
            spread_pod(
                ["foo"],
                {**soft("zone", "foo"), "nodeAffinityPolicy": "Ignore"},
                node_selector={"node": "node-a"},
            ),
            A_AND_X,
            TWO_ON_X,
            {"node-a": 10, "node-x": 0},
            id="nodeAffinityPolicy-ignore-counts-every-node",
        ),
        pytest.param(
            pod("p", labels={"foo": "", "version": "v2"}, spread=[soft("zone", "foo")]),
            A_AND_X,
            TWO_ON_X,
            {"node-a": 10, "node-x": 0},
            id="without-matchLabelKeys-every-foo-pod-counts",
        ),
        pytest.param(
            pod(
                "p",
                labels={"foo": "", "version": "v2"},
                spread=[{**soft("zone", "foo"), "matchLabelKeys": ["version"]}],
            ),
            A_AND_X,
            TWO_ON_X,
            {"node-a": 10, "node-x": 10},
            id="matchLabelKeys-counts-the-pods-own-revision-only",
        ),
    ],
)
def test_even_pods_spread_priority_with_todays_fields(
    the_pod: dict[str, Any],
    nodes: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    expected: dict[str, int],
) -> None:
    assert run(REGISTRY.priorities[names.EVEN_PODS_SPREAD_PRIORITY], the_pod, nodes, pods) == (
        expected
    )


# -- end to end ----------------------------------------------------------------------------


def test_three_replicas_spread_over_three_zones() -> None:
    zone_nodes = [
        node("z1-a", labels={ZONE: "z1"}),
        node("z1-b", labels={ZONE: "z1"}),
        node("z2-a", labels={ZONE: "z2"}),
        node("z2-b", labels={ZONE: "z2"}),
        node("z3-a", labels={ZONE: "z3"}),
        node("z3-b", labels={ZONE: "z3"}),
    ]
    state = cluster(zone_nodes, [], [workload("ReplicaSet", {"app": "web"})])
    the_policy = policy([], [names.SELECTOR_SPREAD])
    zones = []
    for i in range(3):
        replica = pod(f"web-{i}", labels={"app": "web"})
        decision = decide(replica, state, the_policy)
        assert decision.node is not None
        zones.append(decision.node.split("-")[0])
        replica["spec"]["nodeName"] = decision.node
        state.add_pod(parse_pod(replica))
    assert sorted(zones) == ["z1", "z2", "z3"]


def test_selector_spread_scores_in_a_decision() -> None:
    state = cluster(
        [node("n1"), node("n2")],
        [placed("n1", {"app": "web"})],
        [svc({"app": "web"})],
    )
    decision = decide(incoming({"app": "web"}), state, policy([], [names.SELECTOR_SPREAD]))
    assert decision.node == "n2"
    assert decision.scores["n1"].priorities == {names.SELECTOR_SPREAD: 0}
    assert decision.scores["n2"].priorities == {names.SELECTOR_SPREAD: 10}


def test_service_anti_affinity_in_a_decision() -> None:
    state = cluster(
        [
            node("r1-a", labels={"rack": "r1"}),
            node("r1-b", labels={"rack": "r1"}),
            node("r2-a", labels={"rack": "r2"}),
        ],
        [placed("r1-a", {"app": "web"})],
        [svc({"app": "web"})],
    )
    the_policy = policy(
        [],
        [
            {
                "name": "RackSpread",
                "weight": 1,
                "argument": {"serviceAntiAffinity": {"label": "rack"}},
            }
        ],
    )
    decision = decide(incoming({"app": "web"}), state, the_policy)
    assert decision.node == "r2-a"
    assert {n: s.priorities["RackSpread"] for n, s in decision.scores.items()} == {
        "r1-a": 0,
        "r1-b": 0,
        "r2-a": 10,
    }
