"""CheckServiceAffinity (custom serviceAffinity) and EvenPodsSpread, ported from upstream.

Tables: TestServiceAffinity (predicates_test.go / plugins/serviceaffinity), and the
EvenPodsSpread TestSingleConstraint / TestMultipleConstraints tables (v1.17
predicates_test.go, later plugins/podtopologyspread/filtering_test.go). Upstream's empty
namespace "" becomes our "default" (the parser defaults it).
"""

from __future__ import annotations

import functools
from types import SimpleNamespace
from typing import Any

import pytest

import builders
from builders import cluster, cycle, decide, node, parsed_pod, pod, policy
from policy_scheduler import names
from policy_scheduler.engine import compiler
from policy_scheduler.engine.cluster import ClusterState
from policy_scheduler.engine.functions import REGISTRY, PolicySettings
from policy_scheduler.engine.predicates.spreading import (
    ERR_SERVICE_AFFINITY,
    ERR_TOPOLOGY_SPREAD,
)
from policy_scheduler.objects import parse_pod


@pytest.fixture(autouse=True, params=[True, False], ids=["fast", "plain"])
def engine_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Every case runs on the fast path (cluster indexes) and on the plain definition."""
    fast: bool = request.param
    settings = functools.partial(PolicySettings, fast=fast)
    monkeypatch.setattr(builders, "PolicySettings", settings)
    monkeypatch.setattr(compiler, "PolicySettings", settings)
    return fast


FOO = {"foo": "bar"}


def service(
    selector: dict[str, str], namespace: str = "default", name: str = "svc"
) -> dict[str, Any]:
    return {
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": selector},
    }


# -- CheckServiceAffinity --------------------------------------------------------------------

SA_NODES = [
    node("machine1", labels={"region": "r1", "zone": "z11"}),
    node("machine2", labels={"region": "r1", "zone": "z12"}),
    node("machine3", labels={"region": "r2", "zone": "z21"}),
    node("machine4", labels={"region": "r2", "zone": "z22"}),
    node("machine5", labels={"region": "r2", "zone": "z22"}),
]


def _placed(node_name: str, labels: dict[str, str], namespace: str = "default") -> dict[str, Any]:
    return pod(f"placed-{node_name}", node_name=node_name, labels=labels, namespace=namespace)


@pytest.mark.parametrize(
    ("incoming", "placed", "services", "target", "keys", "fits"),
    [
        pytest.param(pod("p"), [], [], "machine1", ["region"], True, id="nothing scheduled"),
        pytest.param(
            pod("p", node_selector={"region": "r1"}),
            [],
            [],
            "machine1",
            ["region"],
            True,
            id="pod with region label match",
        ),
        pytest.param(
            pod("p", node_selector={"region": "r2"}),
            [],
            [],
            "machine1",
            ["region"],
            False,
            id="pod with region label mismatch",
        ),
        pytest.param(
            pod("p", labels=FOO),
            [_placed("machine1", FOO)],
            [service(FOO)],
            "machine1",
            ["region"],
            True,
            id="service pod on same node",
        ),
        pytest.param(
            pod("p", labels=FOO),
            [_placed("machine2", FOO)],
            [service(FOO)],
            "machine1",
            ["region"],
            True,
            id="service pod on different node, region match",
        ),
        pytest.param(
            pod("p", labels=FOO),
            [_placed("machine3", FOO)],
            [service(FOO)],
            "machine1",
            ["region"],
            False,
            id="service pod on different node, region mismatch",
        ),
        pytest.param(
            pod("p", labels=FOO, namespace="ns1"),
            [_placed("machine3", FOO, "ns1")],
            [service(FOO, "ns2")],
            "machine1",
            ["region"],
            True,
            id="service in different namespace, region mismatch",
        ),
        pytest.param(
            pod("p", labels=FOO, namespace="ns1"),
            [_placed("machine3", FOO, "ns2")],
            [service(FOO, "ns1")],
            "machine1",
            ["region"],
            True,
            id="pod in different namespace, region mismatch",
        ),
        pytest.param(
            pod("p", labels=FOO, namespace="ns1"),
            [_placed("machine3", FOO, "ns1")],
            [service(FOO, "ns1")],
            "machine1",
            ["region"],
            False,
            id="service and pod in same namespace, region mismatch",
        ),
        pytest.param(
            pod("p", labels=FOO),
            [_placed("machine2", FOO)],
            [service(FOO)],
            "machine1",
            ["region", "zone"],
            False,
            id="service pod on different node, multiple labels, not all match",
        ),
        pytest.param(
            pod("p", labels=FOO),
            [_placed("machine5", FOO)],
            [service(FOO)],
            "machine4",
            ["region", "zone"],
            True,
            id="service pod on different node, multiple labels, all match",
        ),
        # Beyond upstream's table: the rules its code implies.
        pytest.param(
            pod("p", labels=FOO, node_selector={"region": "r1"}),
            [_placed("machine3", FOO)],
            [service(FOO)],
            "machine1",
            ["region"],
            True,
            id="nodeSelector value wins over the placed pod's node",
        ),
        pytest.param(
            pod("p", labels=FOO, node_selector={"region": "r2"}),
            [_placed("machine1", FOO)],
            [service(FOO)],
            "machine3",
            ["region", "zone"],
            False,
            id="nodeSelector fixes region, placed pod fixes zone",
        ),
        pytest.param(
            pod("p", labels=FOO),
            [_placed("machine3", FOO)],
            [],
            "machine1",
            ["region"],
            True,
            id="no service selects the pod: placed pods are not consulted",
        ),
        pytest.param(
            pod("p", labels={"foo": "bar", "extra": "x"}),
            [_placed("machine3", FOO)],
            [service(FOO)],
            "machine1",
            ["region"],
            True,
            id="placed pod lacking one of the pod's labels is not a peer",
        ),
        pytest.param(
            pod("p", labels=FOO),
            [_placed("machine3", {"foo": "bar", "more": "y"})],
            [service(FOO)],
            "machine1",
            ["region"],
            False,
            id="placed pod with a superset of the pod's labels is a peer",
        ),
    ],
)
def test_service_affinity(
    incoming: dict[str, Any],
    placed: list[dict[str, Any]],
    services: list[dict[str, Any]],
    target: str,
    keys: list[str],
    fits: bool,
) -> None:
    state = cluster(SA_NODES, placed, services)
    check = REGISTRY.predicate_factories["serviceAffinity"](SimpleNamespace(labels=keys))
    the_pod = parse_pod(incoming)
    reasons = check(the_pod, state.nodes[target], cycle(the_pod, state))
    assert tuple(reasons) == (() if fits else (ERR_SERVICE_AFFINITY,))


def test_service_affinity_follows_the_first_peer_in_snapshot_order() -> None:
    # Two peers in different regions: the one on the node listed first decides.
    state = cluster(
        SA_NODES,
        [_placed("machine3", FOO), _placed("machine1", FOO)],
        [service(FOO)],
    )
    check = REGISTRY.predicate_factories["serviceAffinity"](SimpleNamespace(labels=["region"]))
    the_pod = parsed_pod("p", labels=FOO)
    c = cycle(the_pod, state)
    assert check(the_pod, state.nodes["machine2"], c) == ()
    assert check(the_pod, state.nodes["machine4"], c) == (ERR_SERVICE_AFFINITY,)


# -- EvenPodsSpread ------------------------------------------------------------------------

HARD = "DoNotSchedule"
SOFT = "ScheduleAnyway"


def exists(key: str) -> dict[str, Any]:
    return {"matchExpressions": [{"key": key, "operator": "Exists"}]}


def constraint(skew: int, key: str, when: str, selector: dict[str, Any]) -> dict[str, Any]:
    return {
        "maxSkew": skew,
        "topologyKey": key,
        "whenUnsatisfiable": when,
        "labelSelector": selector,
    }


def spread_pod(labels: list[str], *constraints: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    return pod("p", labels={k: "" for k in labels}, spread=list(constraints), **kwargs)


def existing(
    name: str, node_name: str, labels: list[str], namespace: str = "default"
) -> dict[str, Any]:
    return pod(name, node_name=node_name, labels={k: "" for k in labels}, namespace=namespace)


def zoned(name: str, zone: str | None, zone_key: str = "zone") -> dict[str, Any]:
    labels = {"node": name}
    if zone is not None:
        labels[zone_key] = zone
    return node(name, labels=labels)


FOUR_NODES = [
    zoned("node-a", "zone1"),
    zoned("node-b", "zone1"),
    zoned("node-x", "zone2"),
    zoned("node-y", "zone2"),
]
SPREAD_2103 = [
    existing("p-a1", "node-a", ["foo"]),
    existing("p-a2", "node-a", ["foo"]),
    existing("p-b1", "node-b", ["foo"]),
    existing("p-y1", "node-y", ["foo"]),
    existing("p-y2", "node-y", ["foo"]),
    existing("p-y3", "node-y", ["foo"]),
]


def _fits(
    incoming: dict[str, Any], nodes: list[dict[str, Any]], pods: list[dict[str, Any]]
) -> dict[str, bool]:
    state = cluster(nodes, pods)
    the_pod = parse_pod(incoming)
    c = cycle(the_pod, state)
    check = REGISTRY.predicates[names.EVEN_PODS_SPREAD]
    out = {}
    for name, info in state.nodes.items():
        reasons = tuple(check(the_pod, info, c))
        assert reasons in ((), (ERR_TOPOLOGY_SPREAD,))
        out[name] = not reasons
    return out


@pytest.mark.parametrize(
    ("incoming", "nodes", "pods", "fits"),
    [
        pytest.param(
            spread_pod(["foo"], constraint(1, "zone", HARD, exists("foo"))),
            FOUR_NODES,
            [],
            {"node-a": True, "node-b": True, "node-x": True, "node-y": True},
            id="no existing pods",
        ),
        pytest.param(
            spread_pod(["foo"], constraint(1, "zone", HARD, exists("bar"))),
            FOUR_NODES,
            [],
            {"node-a": True, "node-b": True, "node-x": True, "node-y": True},
            id="no existing pods, incoming pod doesn't match itself",
        ),
        pytest.param(
            spread_pod(["foo"], constraint(1, "zone", HARD, exists("foo"))),
            FOUR_NODES,
            [
                existing("p-a1", "node-a", ["foo"], "ns1"),
                existing("p-b1", "node-a", ["foo"], "ns2"),
                existing("p-x1", "node-x", ["foo"]),
                existing("p-y1", "node-y", ["foo"]),
            ],
            {"node-a": True, "node-b": True, "node-x": False, "node-y": False},
            id="existing pods with mis-matched namespace doesn't count",
        ),
        pytest.param(
            spread_pod(["foo"], constraint(1, "zone", HARD, exists("foo"))),
            FOUR_NODES,
            SPREAD_2103,
            {"node-a": True, "node-b": True, "node-x": True, "node-y": True},
            id="pods spread across zones as 3/3, all nodes fit",
        ),
        pytest.param(
            spread_pod(["foo"], constraint(1, "zone", HARD, exists("foo"))),
            [
                zoned("node-a", "zone1"),
                zoned("node-b", "zone1", "zon"),
                zoned("node-x", "zone2"),
                zoned("node-y", "zone2"),
            ],
            [
                existing("p-a1", "node-a", ["foo"]),
                existing("p-b1", "node-b", ["foo"]),
                existing("p-x1", "node-x", ["foo"]),
                existing("p-y1", "node-y", ["foo"]),
            ],
            {"node-a": True, "node-b": False, "node-x": False, "node-y": False},
            id="pods spread across zones as 1/2 due to absence of label 'zone' on node-b",
        ),
        pytest.param(
            spread_pod(["foo"], constraint(1, "node", HARD, exists("foo"))),
            FOUR_NODES,
            SPREAD_2103,
            {"node-a": False, "node-b": False, "node-x": True, "node-y": False},
            id="pods spread across nodes as 2/1/0/3, only node-x fits",
        ),
        pytest.param(
            spread_pod(["foo"], constraint(2, "node", HARD, exists("foo"))),
            FOUR_NODES,
            SPREAD_2103,
            {"node-a": False, "node-b": True, "node-x": True, "node-y": False},
            id="pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit",
        ),
        pytest.param(
            spread_pod(["bar"], constraint(1, "node", HARD, exists("foo"))),
            FOUR_NODES,
            SPREAD_2103,
            {"node-a": False, "node-b": True, "node-x": True, "node-y": False},
            id="pods spread across nodes as 2/1/0/3, but pod doesn't match itself",
        ),
        pytest.param(
            spread_pod(
                ["foo"],
                constraint(1, "node", HARD, exists("foo")),
                affinity={
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {
                                            "key": "node",
                                            "operator": "In",
                                            "values": ["node-a", "node-y"],
                                        }
                                    ]
                                }
                            ]
                        }
                    }
                },
            ),
            FOUR_NODES,
            SPREAD_2103,
            # node-b and node-x fit here only because node affinity is another predicate.
            {"node-a": True, "node-b": True, "node-x": True, "node-y": False},
            id="incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence node-a fits",
        ),
        # TestMultipleConstraints
        pytest.param(
            spread_pod(
                ["foo"],
                constraint(1, "zone", HARD, exists("foo")),
                constraint(1, "node", HARD, exists("foo")),
            ),
            FOUR_NODES,
            SPREAD_2103,
            {"node-a": False, "node-b": False, "node-x": True, "node-y": False},
            id="two constraints on zone and node, spreads = [3/3, 2/1/0/3]",
        ),
        pytest.param(
            spread_pod(
                ["foo"],
                constraint(1, "zone", HARD, exists("foo")),
                constraint(1, "node", HARD, exists("foo")),
            ),
            FOUR_NODES,
            [*SPREAD_2103, existing("p-y4", "node-y", ["foo"])],
            {"node-a": False, "node-b": False, "node-x": False, "node-y": False},
            id="two constraints on zone and node, spreads = [3/4, 2/1/0/4]",
        ),
        pytest.param(
            spread_pod(
                ["foo", "bar"],
                constraint(1, "zone", HARD, exists("foo")),
                constraint(1, "node", HARD, exists("bar")),
            ),
            FOUR_NODES,
            [existing("p-a1", "node-a", ["foo"]), existing("p-y1", "node-y", ["bar"])],
            {"node-a": False, "node-b": False, "node-x": True, "node-y": False},
            id="constraints hold different labelSelectors, spreads = [1/0, 1/0/0/1]",
        ),
        pytest.param(
            spread_pod(
                ["foo", "bar"],
                constraint(1, "zone", HARD, exists("foo")),
                constraint(1, "node", HARD, exists("bar")),
            ),
            FOUR_NODES,
            [
                existing("p-a1", "node-a", ["foo"]),
                existing("p-x1", "node-x", ["bar"]),
                existing("p-y1", "node-y", ["bar"]),
            ],
            {"node-a": False, "node-b": False, "node-x": False, "node-y": False},
            id="constraints hold different labelSelectors, spreads = [1/0, 0/0/1/1]",
        ),
        pytest.param(
            spread_pod(
                ["foo", "bar"],
                constraint(1, "zone", HARD, exists("foo")),
                constraint(1, "node", HARD, exists("bar")),
            ),
            FOUR_NODES,
            [
                existing("p-a1", "node-a", ["foo"]),
                existing("p-a2", "node-a", ["foo", "bar"]),
                existing("p-y1", "node-y", ["foo"]),
                existing("p-y2", "node-y", ["foo", "bar"]),
                existing("p-y3", "node-y", ["foo"]),
            ],
            {"node-a": False, "node-b": True, "node-x": False, "node-y": False},
            id="constraints hold different labelSelectors, spreads = [2/3, 1/0/0/1]",
        ),
        pytest.param(
            spread_pod(
                ["bar"],
                constraint(1, "zone", HARD, exists("foo")),
                constraint(1, "node", HARD, exists("bar")),
            ),
            FOUR_NODES,
            [
                existing("p-a1", "node-a", ["foo"]),
                existing("p-x1", "node-x", ["bar"]),
                existing("p-y1", "node-y", ["bar"]),
            ],
            {"node-a": True, "node-b": True, "node-x": False, "node-y": False},
            id="constraints hold different labelSelectors but pod doesn't match itself on 'zone'",
        ),
        # Rules the code implies, beyond the tables.
        pytest.param(
            spread_pod(["foo"], constraint(1, "node", SOFT, exists("foo"))),
            FOUR_NODES,
            SPREAD_2103,
            {"node-a": True, "node-b": True, "node-x": True, "node-y": True},
            id="ScheduleAnyway constraints never filter",
        ),
        pytest.param(
            spread_pod(["foo"], constraint(1, "rack", HARD, exists("foo"))),
            FOUR_NODES,
            SPREAD_2103,
            {"node-a": True, "node-b": True, "node-x": True, "node-y": True},
            id="no node carries the key: no pair, every node passes",
        ),
        pytest.param(
            spread_pod(
                ["foo"],
                constraint(1, "zone", HARD, exists("foo")),
                node_selector={"node": "node-a"},
            ),
            FOUR_NODES,
            [
                existing("p-a1", "node-a", ["foo"]),
                existing("p-x1", "node-x", ["foo"]),
                existing("p-x2", "node-x", ["foo"]),
            ],
            # Only zone1 (node-a passes the nodeSelector) is a domain: zone2 counts 0 there.
            {"node-a": True, "node-b": True, "node-x": True, "node-y": True},
            id="domains come only from nodes passing the nodeSelector",
        ),
    ],
)
def test_even_pods_spread(
    incoming: dict[str, Any],
    nodes: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    fits: dict[str, bool],
) -> None:
    assert _fits(incoming, nodes, pods) == fits


def test_even_pods_spread_ignores_pods_on_other_namespaces_but_not_deleting_ones() -> None:
    deleting = existing("p-x1", "node-x", ["foo"])
    deleting["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    fits = _fits(
        spread_pod(["foo"], constraint(1, "node", HARD, exists("foo"))),
        [zoned("node-a", "zone1"), zoned("node-x", "zone2")],
        [deleting],
    )
    # Upstream's predicate counts a terminating pod like any other.
    assert fits == {"node-a": True, "node-x": False}


# -- today's fields: minDomains, node inclusion policies, matchLabelKeys ---------------------
# PodTopologySpread (v1.25-v1.27) semantics on top of the legacy counting above.

TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}


def with_fields(base: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {**base, **fields}


def tainted(name: str, zone: str) -> dict[str, Any]:
    return node(name, labels={"node": name, "zone": zone}, taints=[TAINT])


ZONE_FOO = constraint(1, "zone", HARD, exists("foo"))
TWO_AND_TWO = [existing("p-a1", "node-a", ["foo"]), existing("p-x1", "node-x", ["foo"])]
ALL_FIT = {"node-a": True, "node-b": True, "node-x": True, "node-y": True}
NONE_FIT = {"node-a": False, "node-b": False, "node-x": False, "node-y": False}
ZONE1_ONLY = {"node-a": True, "node-b": True, "node-x": False, "node-y": False}
ZONE2_ONLY = {"node-a": False, "node-b": False, "node-x": True, "node-y": True}


@pytest.mark.parametrize(
    ("incoming", "nodes", "pods", "fits"),
    [
        pytest.param(
            spread_pod(["foo"], ZONE_FOO),
            FOUR_NODES,
            TWO_AND_TWO,
            ALL_FIT,
            id="minDomains-absent-1-1",
        ),
        pytest.param(
            spread_pod(["foo"], with_fields(ZONE_FOO, minDomains=2)),
            FOUR_NODES,
            TWO_AND_TWO,
            ALL_FIT,
            id="minDomains-met-changes-nothing",
        ),
        pytest.param(
            spread_pod(["foo"], with_fields(ZONE_FOO, minDomains=3)),
            FOUR_NODES,
            TWO_AND_TWO,
            # Two domains < 3: the global minimum counts as 0, so 1 + 1 - 0 > maxSkew 1.
            NONE_FIT,
            id="fewer-domains-than-minDomains-makes-the-minimum-0",
        ),
        pytest.param(
            spread_pod(["foo"], with_fields(ZONE_FOO, minDomains=3, maxSkew=2)),
            FOUR_NODES,
            TWO_AND_TWO,
            ALL_FIT,
            id="minDomains-with-room-in-maxSkew",
        ),
        pytest.param(
            spread_pod(["foo"], ZONE_FOO, node_selector={"node": "node-a"}),
            FOUR_NODES,
            [existing("p-a1", "node-a", ["foo"])],
            # Honor (default): only zone1 is a domain, its count 1 is the minimum.
            ALL_FIT,
            id="nodeAffinityPolicy-honor-counts-selected-nodes-only",
        ),
        pytest.param(
            spread_pod(
                ["foo"],
                with_fields(ZONE_FOO, nodeAffinityPolicy="Ignore"),
                node_selector={"node": "node-a"},
            ),
            FOUR_NODES,
            [existing("p-a1", "node-a", ["foo"])],
            # Ignore: zone2 (count 0) is a domain too, so zone1 would reach skew 2.
            ZONE2_ONLY,
            id="nodeAffinityPolicy-ignore-counts-every-node",
        ),
        pytest.param(
            spread_pod(["foo"], ZONE_FOO),
            [zoned("node-a", "zone1"), zoned("node-b", "zone1"), tainted("node-x", "zone2")],
            [existing("p-a1", "node-a", ["foo"])],
            # Ignore (default): the tainted zone2 counts 0 and is the minimum.
            {"node-a": False, "node-b": False, "node-x": True},
            id="nodeTaintsPolicy-ignore-counts-tainted-nodes",
        ),
        pytest.param(
            spread_pod(["foo"], with_fields(ZONE_FOO, nodeTaintsPolicy="Honor")),
            [zoned("node-a", "zone1"), zoned("node-b", "zone1"), tainted("node-x", "zone2")],
            [existing("p-a1", "node-a", ["foo"])],
            # Honor: the untolerated taint leaves zone2 out; zone1 alone is the minimum.
            {"node-a": True, "node-b": True, "node-x": True},
            id="nodeTaintsPolicy-honor-leaves-untolerated-nodes-out",
        ),
        pytest.param(
            spread_pod(
                ["foo"],
                with_fields(ZONE_FOO, nodeTaintsPolicy="Honor"),
                tolerations=[{"key": "dedicated", "operator": "Exists"}],
            ),
            [zoned("node-a", "zone1"), zoned("node-b", "zone1"), tainted("node-x", "zone2")],
            [existing("p-a1", "node-a", ["foo"])],
            {"node-a": False, "node-b": False, "node-x": True},
            id="nodeTaintsPolicy-honor-keeps-tolerated-nodes",
        ),
        pytest.param(
            pod("p", labels={"foo": "", "version": "v2"}, spread=[ZONE_FOO]),
            FOUR_NODES,
            [existing("old-1", "node-a", ["foo"]), existing("old-2", "node-b", ["foo"])],
            ZONE2_ONLY,
            id="without-matchLabelKeys-every-foo-pod-counts",
        ),
        pytest.param(
            pod(
                "p",
                labels={"foo": "", "version": "v2"},
                spread=[with_fields(ZONE_FOO, matchLabelKeys=["version"])],
            ),
            FOUR_NODES,
            [existing("old-1", "node-a", ["foo"]), existing("old-2", "node-b", ["foo"])],
            # Only pods with version=v2 count: none runs yet, every zone is at 0.
            ALL_FIT,
            id="matchLabelKeys-counts-the-pods-own-revision-only",
        ),
        pytest.param(
            pod(
                "p",
                labels={"foo": ""},
                spread=[with_fields(ZONE_FOO, matchLabelKeys=["version"])],
            ),
            FOUR_NODES,
            [existing("old-1", "node-a", ["foo"]), existing("old-2", "node-b", ["foo"])],
            # A key the pod does not carry adds nothing to the selector.
            ZONE2_ONLY,
            id="matchLabelKeys-key-missing-on-the-pod-is-skipped",
        ),
    ],
)
def test_todays_spread_fields(
    incoming: dict[str, Any],
    nodes: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    fits: dict[str, bool],
) -> None:
    assert _fits(incoming, nodes, pods) == fits


# -- end to end ----------------------------------------------------------------------------


def test_decide_refuses_the_zone_that_would_exceed_max_skew() -> None:
    state: ClusterState = cluster(
        [zoned("n1", "z1"), zoned("n2", "z2"), zoned("n3", "z3")],
        [existing("w-1", "n1", ["app"]), existing("w-2", "n2", ["app"])],
    )
    incoming = spread_pod(["app"], constraint(1, "zone", HARD, exists("app")))
    decision = decide(incoming, state, policy([names.EVEN_PODS_SPREAD], [names.EQUAL]))
    assert decision.node == "n3"
    assert decision.failed == {"n1": [ERR_TOPOLOGY_SPREAD], "n2": [ERR_TOPOLOGY_SPREAD]}


def test_decide_reports_service_affinity_in_the_summary() -> None:
    state = cluster(SA_NODES, [_placed("machine3", FOO)], [service(FOO)])
    decision = decide(
        pod("p", labels=FOO),
        state,
        policy(
            [{"name": "SameRegion", "argument": {"serviceAffinity": {"labels": ["region"]}}}],
            [names.EQUAL],
        ),
    )
    assert set(decision.feasible) == {"machine3", "machine4", "machine5"}
    assert decision.failed == {
        "machine1": [ERR_SERVICE_AFFINITY],
        "machine2": [ERR_SERVICE_AFFINITY],
    }
