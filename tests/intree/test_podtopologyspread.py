"""PodTopologySpread, kube-scheduler v1.30: conformance tables ported from upstream.

The cases are upstream's ``filtering_test.go`` (TestPreFilterState, TestSingleConstraint,
TestMultipleConstraints) and ``scoring_test.go`` (TestPreScoreSkip,
TestPreScoreStateEmptyNodes, TestPodTopologySpreadScore) of v1.30, written as the
Kubernetes objects kubectl shows (every pod in namespace ``default``, where upstream's
have none), plus cases for v1.30 rules those tables leave implicit. Upstream's cases with
a feature gate off (node inclusion policies, matchLabelKeys: both on in v1.30) and with
fields the API server refuses (minDomains with ScheduleAnyway, matchLabelKeys without a
labelSelector) are left out.

Each case runs through the plugin's engine functions (``predicate()``, ``priority()``),
both by the definition and the fast path, and through its plugin API (``pre_filter`` /
``filter``, ``pre_score`` / ``score`` / ``normalize_score``), which must agree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from builders import cluster
from policy_scheduler.engine.cluster import ClusterState
from policy_scheduler.engine.functions import CycleState, PolicySettings, hints_of
from policy_scheduler.engine.interface import Code, NodeScore
from policy_scheduler.engine.intree.podtopologyspread import (
    ERR_CONSTRAINTS_NOT_MATCH,
    ERR_NODE_LABEL_NOT_MATCH,
    PodTopologySpread,
    filter_state,
)
from policy_scheduler.objects import parse_pod
from policy_scheduler.pluginargs import PodTopologySpreadArgs, plugin_args

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
FOO = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
BAR = {"matchExpressions": [{"key": "bar", "operator": "Exists"}]}
UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}

# -- objects as kubectl shows them ------------------------------------------------------------


def node(name: str, labels: Mapping[str, str], *, tainted: bool = False) -> dict[str, Any]:
    """A node with exactly these labels (no implicit hostname label)."""
    spec: dict[str, Any] = {"taints": [UNSCHEDULABLE_TAINT]} if tainted else {}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": dict(labels)},
        "spec": spec,
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": 110}},
    }


def pod(
    name: str,
    labels: Mapping[str, str] | None = None,
    *,
    on: str | None = None,
    namespace: str = "default",
    spread: Sequence[Mapping[str, Any]] = (),
    node_selector: Mapping[str, str] | None = None,
    affinity: Mapping[str, Any] | None = None,
    tolerations: Sequence[Mapping[str, Any]] = (),
    owner: tuple[str, str, str] | None = None,
    terminating: bool = False,
) -> dict[str, Any]:
    """A pod; ``on``: the node it is bound to; ``owner``: (apiVersion, kind, name)."""
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}"}
    if labels:
        meta["labels"] = dict(labels)
    if owner is not None:
        api_version, kind, owner_name = owner
        meta["ownerReferences"] = [
            {
                "apiVersion": api_version,
                "kind": kind,
                "name": owner_name,
                "uid": f"uid-{owner_name}",
                "controller": True,
            }
        ]
    if terminating:
        meta["deletionTimestamp"] = "2024-05-01T00:00:00Z"
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": "registry.example/app:1"}]}
    if on:
        spec["nodeName"] = on
    if spread:
        spec["topologySpreadConstraints"] = [dict(c) for c in spread]
    if node_selector is not None:
        spec["nodeSelector"] = dict(node_selector)
    if affinity is not None:
        spec["affinity"] = dict(affinity)
    if tolerations:
        spec["tolerations"] = [dict(t) for t in tolerations]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def tsc(
    max_skew: int,
    key: str,
    when: str,
    selector: Mapping[str, Any] | None,
    *,
    min_domains: int | None = None,
    node_affinity_policy: str | None = None,
    node_taints_policy: str | None = None,
    match_label_keys: Sequence[str] = (),
) -> dict[str, Any]:
    """A topologySpreadConstraints entry."""
    c: dict[str, Any] = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when}
    if selector is not None:
        c["labelSelector"] = dict(selector)
    if min_domains is not None:
        c["minDomains"] = min_domains
    if node_affinity_policy is not None:
        c["nodeAffinityPolicy"] = node_affinity_policy
    if node_taints_policy is not None:
        c["nodeTaintsPolicy"] = node_taints_policy
    if match_label_keys:
        c["matchLabelKeys"] = list(match_label_keys)
    return c


def hard(max_skew: int, key: str, selector: Mapping[str, Any] | None, **kw: Any) -> dict[str, Any]:
    return tsc(max_skew, key, "DoNotSchedule", selector, **kw)


def soft(max_skew: int, key: str, selector: Mapping[str, Any] | None, **kw: Any) -> dict[str, Any]:
    return tsc(max_skew, key, "ScheduleAnyway", selector, **kw)


def required_node_affinity(key: str, operator: str, values: Sequence[str]) -> dict[str, Any]:
    term = {"matchExpressions": [{"key": key, "operator": operator, "values": list(values)}]}
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    }


def service(name: str, selector: Mapping[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": dict(selector)},
    }


def replica_set(name: str, selector: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {"selector": dict(selector)},
    }


def pods_on(
    node_name: str, count: int, labels: Mapping[str, str], prefix: str = ""
) -> list[dict[str, Any]]:
    stem = prefix or f"p-{node_name[-1]}"
    return [pod(f"{stem}{i + 1}", labels, on=node_name) for i in range(count)]


def zone_nodes(*names_zones: tuple[str, str]) -> list[dict[str, Any]]:
    return [node(name, {"zone": zone, "node": name}) for name, zone in names_zones]


ABXY = zone_nodes(
    ("node-a", "zone1"), ("node-b", "zone1"), ("node-x", "zone2"), ("node-y", "zone2")
)
ABY = zone_nodes(("node-a", "zone1"), ("node-b", "zone1"), ("node-y", "zone2"))
F = {"foo": ""}
FB = {"foo": "", "bar": ""}


def spread_args(raw: Mapping[str, Any] | None) -> PodTopologySpreadArgs | None:
    """PodTopologySpreadArgs from a pluginConfig ``args`` object, decoded, defaulted and
    validated as kube-scheduler does (None: the plugin's defaults)."""
    if raw is None:
        return None
    args = plugin_args("PodTopologySpread", raw)
    assert isinstance(args, PodTopologySpreadArgs)
    return args


LIST = {"defaultingType": "List"}

# -- Filter -----------------------------------------------------------------------------------

OK = None
NO = (Code.UNSCHEDULABLE, ERR_CONSTRAINTS_NOT_MATCH)
MISSING = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_NODE_LABEL_NOT_MATCH)


@dataclass(frozen=True)
class FilterCase:
    pod: dict[str, Any]
    nodes: list[dict[str, Any]]
    want: dict[str, tuple[Code, str] | None]
    existing: list[dict[str, Any]] = field(default_factory=list)
    objects: list[dict[str, Any]] = field(default_factory=list)
    args: dict[str, Any] | None = None


FILTER_CASES = [
    # TestSingleConstraint
    pytest.param(
        FilterCase(
            pod("p", F, spread=[hard(1, "zone", FOO)]),
            ABXY,
            {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK},
        ),
        id="no existing pods",
    ),
    pytest.param(
        FilterCase(
            pod("p", F, spread=[hard(1, "zone", BAR)]),
            ABXY,
            {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK},
        ),
        id="no existing pods, incoming pod doesn't match itself",
    ),
    pytest.param(
        FilterCase(
            pod("p", F, spread=[hard(1, "zone", FOO)]),
            ABXY,
            {"node-a": OK, "node-b": OK, "node-x": NO, "node-y": NO},
            existing=[
                pod("p-a1", F, on="node-a", namespace="ns1"),
                pod("p-b1", F, on="node-a", namespace="ns2"),
                pod("p-x1", F, on="node-x"),
                pod("p-y1", F, on="node-y"),
            ],
        ),
        id="existing pods in a different namespace do not count",
    ),
    pytest.param(
        FilterCase(
            pod("p", F, spread=[hard(1, "zone", None)]),
            ABXY,
            {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK},
            existing=[pod("p-x1", F, on="node-x"), pod("p-y1", F, on="node-y")],
        ),
        id="existing pods do not match null selector",
    ),
    pytest.param(
        FilterCase(
            pod("p", F, spread=[hard(1, "zone", FOO)]),
            ABXY,
            {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK},
            existing=[*pods_on("node-a", 2, F), *pods_on("node-b", 1, F), *pods_on("node-y", 3, F)],
        ),
        id="pods spread across zones as 3/3, all nodes fit",
    ),
    pytest.param(
        FilterCase(
            pod("p", F, spread=[hard(1, "zone", FOO)]),
            [
                node("node-a", {"zone": "zone1", "node": "node-a"}),
                node("node-b", {"zon": "zone1", "node": "node-b"}),
                node("node-x", {"zone": "zone2", "node": "node-x"}),
                node("node-y", {"zone": "zone2", "node": "node-y"}),
            ],
            {"node-a": OK, "node-b": MISSING, "node-x": NO, "node-y": NO},
            existing=[
                *pods_on("node-a", 1, F),
                *pods_on("node-b", 1, F),
                *pods_on("node-x", 1, F),
                *pods_on("node-y", 1, F),
            ],
        ),
        id="pods spread across zones as 1/2 due to absence of label 'zone' on node-b",
    ),
    pytest.param(
        FilterCase(
            pod("p", F, spread=[hard(1, "rack", FOO)]),
            zone_nodes(("node-a", "zone1"), ("node-x", "zone2")),
            {"node-a": MISSING, "node-x": MISSING},
        ),
        id="pod cannot be scheduled as all nodes don't have label 'rack'",
    ),
    pytest.param(
        FilterCase(
            pod("p", F, spread=[hard(1, "node", FOO)]),
            ABXY,
            {"node-a": NO, "node-b": NO, "node-x": OK, "node-y": NO},
            existing=[*pods_on("node-a", 2, F), *pods_on("node-b", 1, F), *pods_on("node-y", 3, F)],
        ),
        id="pods spread across nodes as 2/1/0/3, only node-x fits",
    ),
    pytest.param(
        FilterCase(
            pod("p", F, spread=[hard(2, "node", FOO)]),
            ABXY,
            {"node-a": NO, "node-b": OK, "node-x": OK, "node-y": NO},
            existing=[*pods_on("node-a", 2, F), *pods_on("node-b", 1, F), *pods_on("node-y", 3, F)],
        ),
        id="pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit",
    ),
    pytest.param(
        FilterCase(
            pod("p", {"bar": ""}, spread=[hard(1, "node", FOO)]),
            ABXY,
            {"node-a": NO, "node-b": OK, "node-x": OK, "node-y": NO},
            existing=[*pods_on("node-a", 2, F), *pods_on("node-b", 1, F), *pods_on("node-y", 3, F)],
        ),
        id="pods spread across nodes as 2/1/0/3, but pod doesn't match itself",
    ),
    pytest.param(
        FilterCase(
            pod(
                "p",
                F,
                spread=[hard(1, "node", FOO)],
                affinity=required_node_affinity("node", "In", ["node-a", "node-y"]),
            ),
            ABXY,
            {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": NO},
            existing=[*pods_on("node-a", 2, F), *pods_on("node-b", 1, F), *pods_on("node-y", 3, F)],
        ),
        id="incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence node-a fits",
    ),
    pytest.param(
        FilterCase(
            pod("p", F, spread=[hard(1, "node", FOO)]),
            [node("node-a", {"node": "node-a"}), node("node-b", {"node": "node-b"})],
            {"node-a": OK, "node-b": NO},
            existing=[
                pod("p-a", F, on="node-a", terminating=True),
                pod("p-b", F, on="node-b"),
            ],
        ),
        id="terminating Pods should be excluded",
    ),
    pytest.param(
        FilterCase(
            pod(
                "p",
                F,
                spread=[hard(1, "zone", FOO)],
                affinity=required_node_affinity("node", "NotIn", ["node-b"]),
            ),
            ABXY,
            {"node-a": OK, "node-b": OK, "node-x": NO, "node-y": NO},
            existing=[*pods_on("node-b", 2, F), *pods_on("node-y", 1, F)],
        ),
        id="incoming pod has nodeAffinity, pods spread as 0/~2~/0/1, hence node-a fits",
    ),
    pytest.param(
        FilterCase(
            pod("p", F, spread=[hard(2, "node", FOO, min_domains=4)]),
            [node(f"node-{n}", {"node": f"node-{n}"}) for n in "abc"],
            {"node-a": NO, "node-b": NO, "node-c": OK},
            existing=[*pods_on("node-a", 2, F), *pods_on("node-b", 2, F), *pods_on("node-c", 1, F)],
        ),
        id="pods spread across nodes as 2/2/1, maxSkew is 2, domains < minDomains, node-c fits",
    ),
    pytest.param(
        FilterCase(
            pod("p", F, spread=[hard(2, "node", FOO, min_domains=2)]),
            [node(f"node-{n}", {"node": f"node-{n}"}) for n in "abc"],
            {"node-a": OK, "node-b": OK, "node-c": OK},
            existing=[*pods_on("node-a", 2, F), *pods_on("node-b", 2, F), *pods_on("node-c", 1, F)],
        ),
        id="pods spread across nodes as 2/2/1, maxSkew is 2, domains > minDomains, all fit",
    ),
    pytest.param(
        FilterCase(
            pod("p", F, spread=[hard(2, "zone", FOO, min_domains=3)]),
            ABXY,
            {"node-a": NO, "node-b": NO, "node-x": OK, "node-y": OK},
            existing=[*pods_on("node-a", 1, F), *pods_on("node-b", 1, F), *pods_on("node-y", 1, F)],
        ),
        id="pods spread across zone as 2/1, maxSkew is 2, domains < minDomains, zone2 fits",
    ),
    pytest.param(
        FilterCase(
            pod("p", F, spread=[hard(2, "zone", FOO, min_domains=1)]),
            ABXY,
            {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK},
            existing=[*pods_on("node-a", 1, F), *pods_on("node-b", 1, F), *pods_on("node-y", 1, F)],
        ),
        id="pods spread across zone as 2/1, maxSkew is 2, domains > minDomains, all fit",
    ),
    pytest.param(
        FilterCase(
            pod("p", F, node_selector={"foo": ""}, spread=[hard(1, "node", FOO)]),
            [
                node("node-a", {"node": "node-a", "foo": ""}),
                node("node-b", {"node": "node-b", "foo": ""}),
                node("node-x", {"node": "node-x", "foo": ""}),
                node("node-y", {"node": "node-y"}),
            ],
            {"node-a": NO, "node-b": NO, "node-x": OK, "node-y": OK},
            existing=[
                pod("p-b1", F, on="node-a"),
                pod("p-b2", F, on="node-b"),
                pod("p-y1", F, on="node-y"),
            ],
        ),
        id="NodeAffinityPolicy honored with labelSelectors",
    ),
    pytest.param(
        FilterCase(
            pod(
                "p",
                F,
                node_selector={"foo": ""},
                spread=[hard(1, "node", FOO, node_affinity_policy="Ignore")],
            ),
            [
                node("node-a", {"node": "node-a", "foo": ""}),
                node("node-b", {"node": "node-b", "foo": ""}),
                node("node-x", {"node": "node-x", "foo": ""}),
                node("node-y", {"node": "node-y"}),
            ],
            {"node-a": NO, "node-b": NO, "node-x": OK, "node-y": NO},
            existing=[
                pod("p-b1", F, on="node-a"),
                pod("p-b2", F, on="node-b"),
                pod("p-y1", F, on="node-y"),
            ],
        ),
        id="NodeAffinityPolicy ignored with labelSelectors",
    ),
    pytest.param(
        FilterCase(
            pod(
                "p",
                F,
                affinity=required_node_affinity("foo", "In", [""]),
                spread=[hard(1, "node", FOO)],
            ),
            [
                node("node-a", {"node": "node-a", "foo": ""}),
                node("node-b", {"node": "node-b", "foo": ""}),
                node("node-x", {"node": "node-x", "foo": ""}),
                node("node-y", {"node": "node-y"}),
            ],
            {"node-a": NO, "node-b": NO, "node-x": OK, "node-y": OK},
            existing=[
                pod("p-b1", F, on="node-a"),
                pod("p-b2", F, on="node-b"),
                pod("p-y1", F, on="node-y"),
            ],
        ),
        id="NodeAffinityPolicy honored with nodeAffinity",
    ),
    pytest.param(
        FilterCase(
            pod(
                "p",
                F,
                affinity=required_node_affinity("foo", "In", [""]),
                spread=[hard(1, "node", FOO, node_affinity_policy="Ignore")],
            ),
            [
                node("node-a", {"node": "node-a", "foo": ""}),
                node("node-b", {"node": "node-b", "foo": ""}),
                node("node-x", {"node": "node-x", "foo": ""}),
                node("node-y", {"node": "node-y"}),
            ],
            {"node-a": NO, "node-b": NO, "node-x": OK, "node-y": NO},
            existing=[
                pod("p-b1", F, on="node-a"),
                pod("p-b2", F, on="node-b"),
                pod("p-y1", F, on="node-y"),
            ],
        ),
        id="NodeAffinityPolicy ignored with nodeAffinity",
    ),
    pytest.param(
        FilterCase(
            pod("p", F, spread=[hard(1, "node", FOO, node_taints_policy="Honor")]),
            [
                node("node-a", {"node": "node-a", "foo": ""}),
                node("node-b", {"node": "node-b", "foo": ""}),
                node("node-x", {"node": "node-x", "foo": ""}),
                node("node-y", {"node": "node-y"}, tainted=True),
            ],
            {"node-a": NO, "node-b": NO, "node-x": OK, "node-y": OK},
            existing=[
                pod("p-b1", F, on="node-a"),
                pod("p-b2", F, on="node-b"),
                pod("p-y1", F, on="node-y"),
            ],
        ),
        id="NodeTaintsPolicy honored",
    ),
    pytest.param(
        FilterCase(
            pod("p", F, spread=[hard(1, "node", FOO)]),
            [
                node("node-a", {"node": "node-a", "foo": ""}),
                node("node-b", {"node": "node-b", "foo": ""}),
                node("node-x", {"node": "node-x", "foo": ""}),
                node("node-y", {"node": "node-y"}, tainted=True),
            ],
            {"node-a": NO, "node-b": NO, "node-x": OK, "node-y": NO},
            existing=[
                pod("p-b1", F, on="node-a"),
                pod("p-b2", F, on="node-b"),
                pod("p-y1", F, on="node-y"),
            ],
        ),
        id="NodeTaintsPolicy ignored",
    ),
    # TestMultipleConstraints
    pytest.param(
        FilterCase(
            pod("p", F, spread=[hard(1, "zone", FOO), hard(1, "node", FOO)]),
            ABXY,
            {"node-a": NO, "node-b": NO, "node-x": OK, "node-y": NO},
            existing=[*pods_on("node-a", 2, F), *pods_on("node-b", 1, F), *pods_on("node-y", 3, F)],
        ),
        id="two Constraints on zone and node, spreads = [3/3, 2/1/0/3]",
    ),
    pytest.param(
        FilterCase(
            pod("p", F, spread=[hard(1, "zone", FOO), hard(1, "node", FOO)]),
            ABXY,
            {"node-a": NO, "node-b": NO, "node-x": NO, "node-y": NO},
            existing=[*pods_on("node-a", 2, F), *pods_on("node-b", 1, F), *pods_on("node-y", 4, F)],
        ),
        id="two Constraints on zone and node, spreads = [3/4, 2/1/0/4]",
    ),
    pytest.param(
        FilterCase(
            pod("p", FB, spread=[hard(1, "zone", FOO), hard(1, "node", BAR)]),
            ABXY,
            {"node-a": NO, "node-b": NO, "node-x": OK, "node-y": NO},
            existing=[pod("p-a1", F, on="node-a"), pod("p-y1", {"bar": ""}, on="node-y")],
        ),
        id="Constraints hold different labelSelectors, spreads = [1/0, 1/0/0/1]",
    ),
    pytest.param(
        FilterCase(
            pod("p", FB, spread=[hard(1, "zone", FOO), hard(1, "node", BAR)]),
            ABXY,
            {"node-a": NO, "node-b": NO, "node-x": NO, "node-y": NO},
            existing=[
                pod("p-a1", F, on="node-a"),
                pod("p-x1", {"bar": ""}, on="node-x"),
                pod("p-y1", {"bar": ""}, on="node-y"),
            ],
        ),
        id="Constraints hold different labelSelectors, spreads = [1/0, 0/0/1/1]",
    ),
    pytest.param(
        FilterCase(
            pod("p", FB, spread=[hard(1, "zone", FOO), hard(1, "node", BAR)]),
            ABXY,
            {"node-a": NO, "node-b": OK, "node-x": NO, "node-y": NO},
            existing=[
                pod("p-a1", F, on="node-a"),
                pod("p-a2", FB, on="node-a"),
                pod("p-y1", F, on="node-y"),
                pod("p-y2", FB, on="node-y"),
                pod("p-y3", F, on="node-y"),
            ],
        ),
        id="Constraints hold different labelSelectors, spreads = [2/3, 1/0/0/1]",
    ),
    pytest.param(
        FilterCase(
            pod("p", {"bar": ""}, spread=[hard(1, "zone", FOO), hard(1, "node", BAR)]),
            ABXY,
            {"node-a": OK, "node-b": OK, "node-x": NO, "node-y": NO},
            existing=[
                pod("p-a1", F, on="node-a"),
                pod("p-x1", {"bar": ""}, on="node-x"),
                pod("p-y1", {"bar": ""}, on="node-y"),
            ],
        ),
        id="Constraints hold different labelSelectors but pod doesn't match itself on 'zone'",
    ),
    pytest.param(
        FilterCase(
            pod("p", F, spread=[hard(1, "zone", FOO), hard(1, "node", FOO)]),
            [
                node("node-a", {"zone": "zone1", "node": "node-a"}),
                node("node-b", {"zone": "zone1", "node": "node-b"}),
                node("node-x", {"zone": "zone2"}),
                node("node-y", {"zone": "zone2", "node": "node-y"}),
            ],
            {"node-a": NO, "node-b": OK, "node-x": MISSING, "node-y": NO},
            existing=[pod("p-a1", F, on="node-a"), pod("p-y3", F, on="node-y")],
        ),
        id="two Constraints on zone and node, absence of label 'node' on node-x",
    ),
    pytest.param(
        FilterCase(
            pod(
                "p",
                F,
                node_selector={"foo": ""},
                spread=[hard(1, "zone", FOO), hard(1, "node", FOO, node_affinity_policy="Ignore")],
            ),
            [
                node("node-a", {"zone": "zone1", "node": "node-a", "foo": ""}),
                node("node-b", {"zone": "zone1", "node": "node-b", "foo": ""}),
                node("node-x", {"zone": "zone2", "node": "node-x", "foo": ""}),
                node("node-y", {"zone": "zone2", "node": "node-y"}),
            ],
            {"node-a": NO, "node-b": NO, "node-x": OK, "node-y": NO},
            existing=[
                pod("p-a1", F, on="node-a"),
                pod("p-b1", F, on="node-b"),
                pod("p-y1", F, on="node-y"),
            ],
        ),
        id="two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore",
    ),
    pytest.param(
        FilterCase(
            pod(
                "p",
                F,
                spread=[hard(1, "zone", FOO, node_taints_policy="Honor"), hard(1, "node", FOO)],
            ),
            [
                node("node-a", {"zone": "zone1", "node": "node-a", "foo": ""}),
                node("node-b", {"zone": "zone1", "node": "node-b", "foo": ""}),
                node("node-x", {"zone": "zone2", "node": "node-x", "foo": ""}),
                node("node-y", {"zone": "zone2", "node": "node-y"}, tainted=True),
            ],
            {"node-a": NO, "node-b": NO, "node-x": OK, "node-y": NO},
            existing=[
                pod("p-a1", F, on="node-a"),
                pod("p-b1", F, on="node-b"),
                pod("p-y1", F, on="node-y"),
            ],
        ),
        id="two node inclusion Constraints, zone: honor/honor, node: honor/ignore",
    ),
    pytest.param(
        FilterCase(
            pod(
                "p",
                F,
                node_selector={"foo": ""},
                spread=[hard(1, "zone", FOO), hard(1, "node", FOO)],
            ),
            [
                node("node-a", {"zone": "zone1", "node": "node-a", "foo": ""}),
                node("node-b", {"zone": "zone1", "node": "node-b"}),
                node("node-x", {"zone": "zone2", "node": "node-x", "foo": ""}),
                node("node-y", {"zone": "zone2", "node": "node-y", "foo": ""}, tainted=True),
            ],
            {"node-a": NO, "node-b": OK, "node-x": OK, "node-y": NO},
            existing=[
                pod("p-a1", F, on="node-a"),
                pod("p-b1", F, on="node-b"),
                pod("p-y1", F, on="node-y"),
            ],
        ),
        id="two node inclusion Constraints, zone: honor/ignore, node: honor/ignore",
    ),
    pytest.param(
        FilterCase(
            pod(
                "p",
                F,
                node_selector={"foo": ""},
                spread=[
                    hard(1, "zone", FOO, node_taints_policy="Honor"),
                    hard(1, "node", FOO, node_affinity_policy="Ignore"),
                ],
            ),
            [
                node("node-a", {"zone": "zone1", "node": "node-a", "foo": ""}),
                node("node-b", {"zone": "zone1", "node": "node-b"}),
                node("node-x", {"zone": "zone2", "node": "node-x", "foo": ""}),
                node("node-y", {"zone": "zone2", "node": "node-y", "foo": ""}, tainted=True),
            ],
            {"node-a": NO, "node-b": NO, "node-x": OK, "node-y": NO},
            existing=[
                pod("p-a1", F, on="node-a"),
                pod("p-b1", F, on="node-b"),
                pod("p-y1", F, on="node-y"),
            ],
        ),
        id="two node inclusion Constraints, zone: honor/honor, node: ignore/ignore",
    ),
    # v1.30 rules beyond upstream's tables
    pytest.param(
        FilterCase(
            pod("p", F, node_selector={"pool": "gpu"}, spread=[hard(1, "zone", FOO)]),
            [
                node("node-a", {"zone": "zone1"}),
                node("node-b", {"node": "node-b"}),
            ],
            {"node-a": OK, "node-b": MISSING},
            existing=[*pods_on("node-a", 3, F)],
        ),
        id="no node counts for the key (none passes the nodeSelector): labelled nodes pass",
    ),
    pytest.param(
        FilterCase(
            pod("p", F, spread=[hard(1, "zone", {})]),
            ABXY,
            {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK},
            existing=[*pods_on("node-a", 3, F)],
        ),
        id="an empty selector counts no pod, and the pod matches it itself",
    ),
    pytest.param(
        FilterCase(
            pod("p", F, spread=[hard(1, "zone", FOO), hard(3, "zone", BAR)]),
            ABXY,
            {"node-a": OK, "node-b": OK, "node-x": NO, "node-y": NO},
            existing=[*pods_on("node-a", 2, F), pod("p-x1", {"bar": ""}, on="node-x")],
        ),
        # Per node the last included constraint's count is the domain's: zone1 0, zone2 1
        # (summed they would be 2 and 1, the first's 2 and 0: node-a would fail either way).
        id="two constraints on one key: the last one's counts",
    ),
    pytest.param(
        FilterCase(
            pod(
                "p",
                {"foo": "", "app": "web"},
                spread=[hard(1, "zone", FOO, match_label_keys=["app"])],
            ),
            ABXY,
            {"node-a": OK, "node-b": OK, "node-x": NO, "node-y": NO},
            existing=[
                *pods_on("node-a", 2, F),
                pod("p-x1", {"foo": "", "app": "web"}, on="node-x"),
            ],
        ),
        id="matchLabelKeys narrows the selector to the pod's own value",
    ),
    pytest.param(
        FilterCase(
            pod("p", {"foo": "bar"}),
            [node("node-a", {"node": "node-a"}), node("node-b", {"node": "node-b"})],
            {"node-a": NO, "node-b": OK},
            existing=[pod("p-a1", {"foo": "bar"}, on="node-a")],
            objects=[service("svc", {"foo": "bar"})],
            args={
                "defaultingType": "List",
                "defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": "node", "whenUnsatisfiable": "DoNotSchedule"}
                ],
            },
        ),
        id="default constraints (List) select the pod's Service's pods",
    ),
    pytest.param(
        FilterCase(
            pod("p", {"foo": "bar"}),
            [node("node-a", {"zone": "zone1"})],
            {"node-a": OK},
            existing=[*pods_on("node-a", 3, {"foo": "bar"})],
            objects=[service("svc", {"foo": "bar"})],
        ),
        id="system defaults are ScheduleAnyway: Filter lets every node through",
    ),
]


def _statuses(
    plugin: PodTopologySpread, state: ClusterState, raw_pod: dict[str, Any], fast: bool
) -> tuple[dict[str, tuple[Code, str] | None], dict[str, tuple[Code, str] | None]]:
    incoming = parse_pod(raw_pod)
    settings = PolicySettings(fast=fast)
    predicate = plugin.predicate()
    cycle = CycleState(incoming, state, settings)
    engine: dict[str, tuple[Code, str] | None] = {}
    for name, info in state.nodes.items():
        reasons = predicate(incoming, info, cycle)
        if not reasons:
            engine[name] = None
        else:
            code = (
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE
                if type(reasons[0]).__name__ == "Unresolvable"
                else Code.UNSCHEDULABLE
            )
            engine[name] = (code, str(reasons[0]))
    public: dict[str, tuple[Code, str] | None] = {}
    cycle = CycleState(incoming, state, settings)
    pre = plugin.pre_filter(cycle, incoming)
    for name, info in state.nodes.items():
        if pre is not None and pre.code is Code.SKIP:
            public[name] = None
            continue
        status = plugin.filter(cycle, incoming, info)
        public[name] = None if status is None else (status.code, status.message)
    return engine, public


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "plain"])
@pytest.mark.parametrize("case", FILTER_CASES)
def test_filter(case: FilterCase, fast: bool) -> None:
    state = cluster(case.nodes, case.existing, case.objects)
    plugin = PodTopologySpread(spread_args(case.args), None)  # type: ignore[arg-type]
    engine, public = _statuses(plugin, state, case.pod, fast)
    assert engine == case.want
    assert public == case.want


@pytest.mark.parametrize(
    ("raw_pod", "objects", "args", "skipped"),
    [
        pytest.param(pod("p", F), [], None, True, id="skip if not specified"),
        pytest.param(
            pod("p", {"foo": "bar"}),
            [service("svc", {"baz": "kep"})],
            {**LIST, "defaultConstraints": [hard(3, "node", None)]},
            True,
            id="default constraints and a service that doesn't match",
        ),
        pytest.param(
            pod("p", {"foo": "bar"}),
            [service("svc", {"foo": "bar"})],
            {**LIST, "defaultConstraints": [soft(2, "node", None)]},
            True,
            id="default soft constraints and a service",
        ),
        pytest.param(
            pod("p", F, spread=[soft(1, "zone", FOO)]), [], None, True, id="only soft constraints"
        ),
        pytest.param(
            pod("p", {"foo": "bar"}),
            [service("svc", {"foo": "bar"})],
            {**LIST, "defaultConstraints": [hard(3, "node", None)]},
            False,
            id="default constraints and a service",
        ),
    ],
)
def test_pre_filter_skips_without_do_not_schedule_constraints(
    raw_pod: dict[str, Any],
    objects: list[dict[str, Any]],
    args: dict[str, Any] | None,
    skipped: bool,
) -> None:
    state = cluster(ABXY, [], objects)
    plugin = PodTopologySpread(spread_args(args), None)  # type: ignore[arg-type]
    incoming = parse_pod(raw_pod)
    status = plugin.pre_filter(CycleState(incoming, state, PolicySettings()), incoming)
    assert (status is not None and status.code is Code.SKIP) is skipped
    fits_everywhere = hints_of(plugin.predicate()).fits_everywhere
    assert fits_everywhere is not None
    assert fits_everywhere(incoming, CycleState(incoming, state, PolicySettings())) is skipped


# -- PreFilter's counts (TestPreFilterState) -----------------------------------------------


@dataclass(frozen=True)
class CountsCase:
    pod: dict[str, Any]
    nodes: list[dict[str, Any]]
    want: dict[tuple[str, str], int]
    existing: list[dict[str, Any]] = field(default_factory=list)
    objects: list[dict[str, Any]] = field(default_factory=list)
    args: dict[str, Any] | None = None


TWO_ZONES_SEVEN_PODS = [
    *pods_on("node-a", 2, F),
    *pods_on("node-b", 1, F),
    *pods_on("node-y", 4, F),
]
BAR_NODES = [
    node("node-a", {"node": "node-a", "foo": ""}),
    node("node-b", {"node": "node-b", "foo": ""}),
    node("node-c", {"node": "node-c", "bar": ""}),
]
BAR_PODS = [
    pod("p-a", {"bar": ""}, on="node-a"),
    pod("p-b", {"bar": ""}, on="node-b"),
    pod("p-c", {"bar": ""}, on="node-b"),
    pod("p-d", on="node-c"),
]
TAINTED_C = [
    node("node-a", {"node": "node-a"}),
    node("node-b", {"node": "node-b"}),
    node("node-c", {"node": "node-c", "bar": ""}, tainted=True),
]

COUNTS_CASES = [
    pytest.param(
        CountsCase(
            pod("p", F, spread=[hard(5, "zone", {"matchLabels": {"foo": "bar"}})]),
            ABXY,
            {("zone", "zone1"): 0, ("zone", "zone2"): 0},
        ),
        id="clean cluster with one spreadConstraint",
    ),
    pytest.param(
        CountsCase(
            pod("p", F, spread=[hard(1, "zone", FOO)]),
            [*ABXY, *zone_nodes(("node-o", "zone3"), ("node-p", "zone3"))],
            {("zone", "zone1"): 3, ("zone", "zone2"): 2, ("zone", "zone3"): 0},
            existing=[*pods_on("node-a", 2, F), *pods_on("node-b", 1, F), *pods_on("node-y", 2, F)],
        ),
        id="normal case with one spreadConstraint, on a 3-zone cluster",
    ),
    pytest.param(
        CountsCase(
            pod("p", F, spread=[hard(1, "zone", FOO), hard(1, "node", FOO)]),
            ABXY,
            {
                ("zone", "zone1"): 3,
                ("zone", "zone2"): 4,
                ("node", "node-a"): 2,
                ("node", "node-b"): 1,
                ("node", "node-x"): 0,
                ("node", "node-y"): 4,
            },
            existing=TWO_ZONES_SEVEN_PODS,
        ),
        id="normal case with two spreadConstraints",
    ),
    pytest.param(
        CountsCase(
            pod(
                "p",
                F,
                spread=[
                    soft(1, "zone", FOO),
                    hard(1, "zone", FOO),
                    soft(1, "node", FOO),
                    hard(1, "node", FOO),
                ],
            ),
            ABY,
            {
                ("zone", "zone1"): 3,
                ("zone", "zone2"): 4,
                ("node", "node-a"): 2,
                ("node", "node-b"): 1,
                ("node", "node-y"): 4,
            },
            existing=TWO_ZONES_SEVEN_PODS,
        ),
        id="soft spreadConstraints should be bypassed",
    ),
    pytest.param(
        CountsCase(
            pod("p", FB, spread=[hard(1, "zone", FOO), hard(1, "node", BAR)]),
            ABY,
            {
                ("zone", "zone1"): 3,
                ("zone", "zone2"): 4,
                ("node", "node-a"): 1,
                ("node", "node-b"): 0,
                ("node", "node-y"): 2,
            },
            existing=[
                pod("p-a1", F, on="node-a"),
                pod("p-a2", FB, on="node-a"),
                pod("p-b1", F, on="node-b"),
                pod("p-y1", F, on="node-y"),
                pod("p-y2", FB, on="node-y"),
                pod("p-y3", F, on="node-y"),
                pod("p-y4", FB, on="node-y"),
            ],
        ),
        id="different labelSelectors - complex pods",
    ),
    pytest.param(
        CountsCase(
            pod(
                "p",
                F,
                affinity=required_node_affinity("node", "NotIn", ["node-x"]),
                spread=[hard(1, "zone", FOO), hard(1, "node", FOO)],
            ),
            ABXY,
            {
                ("zone", "zone1"): 3,
                ("zone", "zone2"): 4,
                ("node", "node-a"): 2,
                ("node", "node-b"): 1,
                ("node", "node-y"): 4,
            },
            existing=TWO_ZONES_SEVEN_PODS,
        ),
        id="two spreadConstraints, and with podAffinity",
    ),
    pytest.param(
        CountsCase(
            pod("p", {"foo": "bar", "baz": "kar"}),
            ABXY,
            {},
            objects=[service("svc", {"foo": "bar"})],
            args={
                **LIST,
                "defaultConstraints": [
                    hard(3, "node", None),
                    soft(2, "node", None),
                    hard(5, "rack", None),
                ],
            },
        ),
        id="default constraints and a service",
    ),
    pytest.param(
        CountsCase(
            pod(
                "p",
                {"foo": "bar", "baz": "tar"},
                spread=[
                    hard(1, "zone", {"matchLabels": {"baz": "tar"}}),
                    soft(2, "planet", {"matchLabels": {"fot": "rok"}}),
                ],
            ),
            [],
            {},
            objects=[service("svc", {"foo": "bar"})],
            args={**LIST, "defaultConstraints": [hard(2, "node", None)]},
        ),
        id="default constraints and a service, but pod has constraints",
    ),
    pytest.param(
        CountsCase(
            pod("p", F, node_selector={"foo": ""}, spread=[hard(1, "node", BAR)]),
            BAR_NODES,
            {("node", "node-a"): 1, ("node", "node-b"): 2},
            existing=BAR_PODS,
        ),
        id="NodeAffinityPolicy honored with labelSelectors",
    ),
    pytest.param(
        CountsCase(
            pod(
                "p",
                F,
                node_selector={"foo": ""},
                spread=[hard(1, "node", BAR, node_affinity_policy="Ignore")],
            ),
            BAR_NODES,
            {("node", "node-a"): 1, ("node", "node-b"): 2, ("node", "node-c"): 0},
            existing=BAR_PODS,
        ),
        id="NodeAffinityPolicy ignored with labelSelectors",
    ),
    pytest.param(
        CountsCase(
            pod(
                "p",
                F,
                affinity=required_node_affinity("foo", "In", [""]),
                spread=[hard(1, "node", BAR)],
            ),
            BAR_NODES,
            {("node", "node-a"): 1, ("node", "node-b"): 2},
            existing=BAR_PODS,
        ),
        id="NodeAffinityPolicy honored with nodeAffinity",
    ),
    pytest.param(
        CountsCase(
            pod("p", F, spread=[hard(1, "node", BAR)]),
            TAINTED_C,
            {("node", "node-a"): 1, ("node", "node-b"): 2, ("node", "node-c"): 0},
            existing=BAR_PODS,
        ),
        id="NodeTaintsPolicy ignored",
    ),
    pytest.param(
        CountsCase(
            pod("p", F, spread=[hard(1, "node", BAR, node_taints_policy="Honor")]),
            TAINTED_C,
            {("node", "node-a"): 1, ("node", "node-b"): 2},
            existing=BAR_PODS,
        ),
        id="NodeTaintsPolicy honored",
    ),
    pytest.param(
        CountsCase(
            pod(
                "p",
                F,
                tolerations=[
                    {
                        "key": "node.kubernetes.io/unschedulable",
                        "operator": "Exists",
                        "effect": "NoSchedule",
                    }
                ],
                spread=[hard(1, "node", BAR, node_taints_policy="Honor")],
            ),
            TAINTED_C,
            {("node", "node-a"): 1, ("node", "node-b"): 2, ("node", "node-c"): 0},
            existing=BAR_PODS,
        ),
        id="NodeTaintsPolicy honored with tolerated taints",
    ),
    pytest.param(
        CountsCase(
            pod(
                "p",
                F,
                node_selector={"foo": ""},
                spread=[hard(1, "zone", FOO), hard(1, "node", FOO, node_affinity_policy="Ignore")],
            ),
            [
                node("node-a", {"zone": "zone1", "node": "node-a", "foo": ""}),
                node("node-b", {"zone": "zone1", "node": "node-b"}),
                node("node-x", {"zone": "zone2", "node": "node-x", "foo": ""}),
            ],
            {
                ("zone", "zone1"): 0,
                ("zone", "zone2"): 1,
                ("node", "node-a"): 0,
                ("node", "node-b"): 2,
                ("node", "node-x"): 1,
            },
            existing=[*pods_on("node-b", 2, F), *pods_on("node-x", 1, F)],
        ),
        id="two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore",
    ),
    pytest.param(
        CountsCase(
            pod(
                "p",
                F,
                node_selector={"foo": ""},
                spread=[
                    hard(1, "zone", FOO, node_affinity_policy="Ignore"),
                    hard(1, "node", FOO, node_taints_policy="Honor"),
                ],
            ),
            [
                node("node-a", {"zone": "zone1", "node": "node-a"}),
                node("node-b", {"zone": "zone1", "node": "node-b", "foo": ""}, tainted=True),
                node("node-x", {"zone": "zone2", "node": "node-x", "foo": ""}),
                node("node-y", {"zone": "zone2", "node": "node-y", "foo": ""}),
            ],
            {
                ("zone", "zone1"): 2,
                ("zone", "zone2"): 3,
                ("node", "node-x"): 2,
                ("node", "node-y"): 1,
            },
            existing=[*pods_on("node-a", 2, F), *pods_on("node-x", 2, F), *pods_on("node-y", 1, F)],
        ),
        id="two node inclusion Constraints, zone: ignore/ignore, node: honor/honor",
    ),
    pytest.param(
        CountsCase(
            pod(
                "p",
                {"foo": "", "bar": "a"},
                spread=[hard(1, "zone", FOO, match_label_keys=["bar"])],
            ),
            ABXY,
            {("zone", "zone1"): 1, ("zone", "zone2"): 1},
            existing=[
                pod("p-a1", F, on="node-a"),
                pod("p-a2", {"foo": "", "bar": "a"}, on="node-a"),
                pod("p-b1", F, on="node-b"),
                pod("p-y1", {"foo": "", "bar": "a"}, on="node-y"),
                pod("p-y2", {"bar": ""}, on="node-y"),
            ],
        ),
        id="matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty",
    ),
    pytest.param(
        CountsCase(
            pod("p", {"foo": "a"}, spread=[hard(1, "zone", {}, match_label_keys=["foo"])]),
            ABXY,
            {("zone", "zone1"): 3, ("zone", "zone2"): 2},
            existing=[
                *pods_on("node-a", 2, {"foo": "a"}),
                *pods_on("node-b", 1, {"foo": "a"}),
                *pods_on("node-y", 2, {"foo": "a"}),
            ],
        ),
        id="matchLabelKeys ANDed with LabelSelector when LabelSelector is empty",
    ),
    pytest.param(
        CountsCase(
            pod("p", F, spread=[hard(1, "zone", FOO, match_label_keys=["bar"])]),
            ABXY,
            {("zone", "zone1"): 3, ("zone", "zone2"): 2},
            existing=[
                *pods_on("node-a", 2, {"foo": "a"}),
                *pods_on("node-b", 1, {"foo": "a"}),
                *pods_on("node-y", 2, {"foo": "a"}),
            ],
        ),
        id="key in matchLabelKeys is ignored when it isn't exist in pod.labels",
    ),
]


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "plain"])
@pytest.mark.parametrize("case", COUNTS_CASES)
def test_pre_filter_counts(case: CountsCase, fast: bool) -> None:
    state = cluster(case.nodes, case.existing, case.objects)
    plugin = PodTopologySpread(spread_args(case.args), None)  # type: ignore[arg-type]
    got = filter_state(parse_pod(case.pod), state, plugin.defaults, fast)
    assert got.pair_counts == case.want


# -- Score ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScoreCase:
    pod: dict[str, Any]
    nodes: list[dict[str, Any]]
    want: dict[str, int]
    failed_nodes: list[dict[str, Any]] = field(default_factory=list)
    existing: list[dict[str, Any]] = field(default_factory=list)
    objects: list[dict[str, Any]] = field(default_factory=list)
    args: dict[str, Any] | None = None


def hosts(*names: str, **extra: str) -> list[dict[str, Any]]:
    return [node(name, {HOSTNAME: name, **extra}) for name in names]


def zoned_hosts(*names_zones: tuple[str, str]) -> list[dict[str, Any]]:
    return [node(name, {"zone": zone, HOSTNAME: name}) for name, zone in names_zones]


SPREAD_4321 = [
    *pods_on("node-a", 4, F),
    *pods_on("node-b", 3, F),
    *pods_on("node-c", 2, F),
    *pods_on("node-d", 1, F),
]
SPREAD_4213 = [
    *pods_on("node-a", 4, F),
    *pods_on("node-b", 2, F),
    *pods_on("node-x", 1, F),
    *pods_on("node-y", 3, F),
]
POLICY_NODES = [
    node("node-a", {"node": "node-a", "foo": ""}),
    node("node-b", {"node": "node-b", "foo": ""}),
    node("node-c", {"node": "node-c"}),
]
POLICY_PODS = [*pods_on("node-a", 2, F), *pods_on("node-b", 1, F), *pods_on("node-c", 1, F)]
TAINT_NODES = [
    node("node-a", {"node": "node-a"}),
    node("node-b", {"node": "node-b"}),
    node("node-c", {"node": "node-c"}, tainted=True),
]
ABCD_ZONED = zoned_hosts(
    ("node-a", "zone1"), ("node-b", "zone1"), ("node-c", "zone2"), ("node-d", "zone2")
)
MIXED_PODS = [
    pod("p-a1", F, on="node-a"),
    pod("p-b1", FB, on="node-b"),
    pod("p-y1", F, on="node-c"),
    pod("p-y2", {"bar": ""}, on="node-c"),
]

SCORE_CASES = [
    pytest.param(
        ScoreCase(
            pod("p", F, spread=[soft(1, HOSTNAME, FOO)]),
            hosts("node-a", "node-b"),
            {"node-a": 100, "node-b": 100},
        ),
        id="one constraint on node, no existing pods",
    ),
    pytest.param(
        ScoreCase(
            pod("p", F, spread=[soft(1, HOSTNAME, FOO)]),
            hosts("node-a"),
            {"node-a": 100},
            failed_nodes=hosts("node-b"),
            existing=[*pods_on("node-a", 2, F), *pods_on("node-b", 1, F)],
        ),
        id="one constraint on node, only one node is candidate",
    ),
    pytest.param(
        ScoreCase(
            pod("p", F, spread=[soft(1, HOSTNAME, FOO)]),
            hosts("node-a", "node-b"),
            {"node-a": 100, "node-b": 100},
            existing=[*pods_on("node-a", 1, F), *pods_on("node-b", 1, F)],
        ),
        id="one constraint on node, all nodes have the same number of matching pods",
    ),
    pytest.param(
        ScoreCase(
            pod("p", F, spread=[soft(1, HOSTNAME, FOO)]),
            hosts("node-a", "node-b", "node-c", "node-d"),
            {"node-a": 20, "node-b": 60, "node-c": 100, "node-d": 0},
            existing=[*pods_on("node-a", 2, F), *pods_on("node-b", 1, F), *pods_on("node-d", 3, F)],
        ),
        id="one constraint on node, all 4 nodes are candidates",
    ),
    pytest.param(
        ScoreCase(
            pod("p", F, spread=[soft(1, HOSTNAME, None)]),
            hosts("node-a", "node-b", "node-c", "node-d"),
            {"node-a": 100, "node-b": 100, "node-c": 100, "node-d": 100},
            existing=[*pods_on("node-a", 2, F), *pods_on("node-b", 1, F), *pods_on("node-d", 3, F)],
        ),
        id="one constraint on node, null selector",
    ),
    pytest.param(
        ScoreCase(
            pod("p", F, spread=[soft(2, HOSTNAME, FOO)]),
            hosts("node-a", "node-b", "node-c", "node-d"),
            {"node-a": 33, "node-b": 66, "node-c": 100, "node-d": 16},
            existing=[*pods_on("node-a", 2, F), *pods_on("node-b", 1, F), *pods_on("node-d", 3, F)],
        ),
        id="one constraint on node, all 4 nodes are candidates, maxSkew=2",
    ),
    pytest.param(
        ScoreCase(
            pod("p", F, spread=[soft(3, HOSTNAME, FOO)]),
            hosts("node-a", "node-b", "node-c", "node-d"),
            {"node-a": 44, "node-b": 66, "node-c": 77, "node-d": 100},
            existing=SPREAD_4321,
        ),
        id="one constraint on node, all 4 nodes are candidates, maxSkew=3",
    ),
    pytest.param(
        ScoreCase(
            pod("p", F),
            hosts("node-a", "node-b", "node-c", "node-d"),
            {"node-a": 44, "node-b": 66, "node-c": 77, "node-d": 100},
            existing=SPREAD_4321,
            objects=[service("svc", F)],
        ),
        id="system defaulting, nodes don't have zone, pods match service",
    ),
    pytest.param(
        ScoreCase(
            pod("p", F, spread=[soft(1, HOSTNAME, FOO)]),
            hosts("node-a", "node-b", "node-x"),
            {"node-a": 33, "node-b": 83, "node-x": 100},
            failed_nodes=hosts("node-y"),
            existing=SPREAD_4213,
        ),
        id="one constraint on node, 3 out of 4 nodes are candidates",
    ),
    pytest.param(
        ScoreCase(
            pod("p", F, spread=[soft(1, HOSTNAME, FOO)]),
            [
                node("node-a", {HOSTNAME: "node-a"}),
                node("node-b", {"n": "node-b"}),
                node("node-x", {HOSTNAME: "node-x"}),
            ],
            {"node-a": 16, "node-b": 0, "node-x": 100},
            failed_nodes=hosts("node-y"),
            existing=SPREAD_4213,
        ),
        id="one constraint on node, 3 out of 4 candidates, one node doesn't match topology key",
    ),
    pytest.param(
        ScoreCase(
            pod("p", F, spread=[soft(1, "zone", FOO)]),
            zoned_hosts(("node-a", "zone1"), ("node-b", "zone1"), ("node-x", "zone2")),
            {"node-a": 75, "node-b": 75, "node-x": 100},
            failed_nodes=zoned_hosts(("node-y", "zone2")),
            existing=SPREAD_4213,
        ),
        id="one constraint on zone, 3 out of 4 nodes are candidates",
    ),
    pytest.param(
        ScoreCase(
            pod("p", F, spread=[soft(1, "zone", FOO), soft(1, HOSTNAME, FOO)]),
            zoned_hosts(("node-a", "zone1"), ("node-x", "zone2")),
            {"node-a": 100, "node-x": 63},
            failed_nodes=zoned_hosts(("node-b", "zone1"), ("node-y", "zone2")),
            existing=[
                *pods_on("node-a", 2, F),
                *pods_on("node-b", 1, F),
                *pods_on("node-x", 2, F),
                *pods_on("node-y", 4, F),
            ],
        ),
        id="two Constraints on zone and node, 2 out of 4 nodes are candidates",
    ),
    pytest.param(
        ScoreCase(
            pod("p", FB, spread=[soft(1, "zone", FOO), soft(1, HOSTNAME, BAR)]),
            zoned_hosts(
                ("node-a", "zone1"), ("node-b", "zone1"), ("node-x", "zone2"), ("node-y", "zone2")
            ),
            {"node-a": 60, "node-b": 20, "node-x": 100, "node-y": 60},
            existing=[
                pod("p-a1", F, on="node-a"),
                pod("p-b1", FB, on="node-b"),
                pod("p-y1", F, on="node-y"),
                pod("p-y2", {"bar": ""}, on="node-y"),
            ],
        ),
        id="two Constraints on zone and node, with different labelSelectors",
    ),
    pytest.param(
        ScoreCase(
            pod("p", FB, spread=[soft(1, "zone", FOO), soft(1, HOSTNAME, BAR)]),
            zoned_hosts(
                ("node-a", "zone1"), ("node-b", "zone1"), ("node-x", "zone2"), ("node-y", "zone2")
            ),
            {"node-a": 100, "node-b": 60, "node-x": 40, "node-y": 0},
            existing=[
                pod("p-b1", {"bar": ""}, on="node-b"),
                pod("p-x1", F, on="node-x"),
                pod("p-y1", FB, on="node-y"),
            ],
        ),
        id="two Constraints on zone and node, different labelSelectors, some nodes have 0 pods",
    ),
    pytest.param(
        ScoreCase(
            pod("p", FB, spread=[soft(1, "zone", FOO), soft(1, HOSTNAME, BAR)]),
            zoned_hosts(("node-a", "zone1"), ("node-b", "zone1"), ("node-x", "zone2")),
            {"node-a": 50, "node-b": 25, "node-x": 100},
            failed_nodes=zoned_hosts(("node-y", "zone2")),
            existing=[
                pod("p-a1", F, on="node-a"),
                pod("p-b1", FB, on="node-b"),
                pod("p-y1", F, on="node-y"),
                pod("p-y2", {"bar": ""}, on="node-y"),
            ],
        ),
        id="two Constraints on zone and node, with different labelSelectors, 3 out of 4 candidates",
    ),
    pytest.param(
        ScoreCase(
            pod("p", F, spread=[soft(1, HOSTNAME, FOO)]),
            hosts("node-a", "node-b"),
            {"node-a": 100, "node-b": 33},
            existing=[
                pod("p-a1", F, on="node-a", namespace="ns1"),
                pod("p-a2", F, on="node-a"),
                *pods_on("node-b", 2, F),
            ],
        ),
        id="existing pods in a different namespace do not count",
    ),
    pytest.param(
        ScoreCase(
            pod("p", F, spread=[soft(1, HOSTNAME, FOO)]),
            hosts("node-a", "node-b"),
            {"node-a": 100, "node-b": 0},
            existing=[pod("p-a", F, on="node-a", terminating=True), pod("p-b", F, on="node-b")],
        ),
        id="terminating Pods should be excluded",
    ),
    pytest.param(
        ScoreCase(
            pod("p", F, node_selector={"foo": ""}, spread=[soft(1, "node", FOO)]),
            POLICY_NODES,
            {"node-a": 0, "node-b": 33, "node-c": 100},
            existing=POLICY_PODS,
        ),
        id="NodeAffinityPolicy honoed with labelSelectors",
    ),
    pytest.param(
        ScoreCase(
            pod(
                "p",
                F,
                node_selector={"foo": ""},
                spread=[soft(1, "node", FOO, node_affinity_policy="Ignore")],
            ),
            POLICY_NODES,
            {"node-a": 66, "node-b": 100, "node-c": 100},
            existing=POLICY_PODS,
        ),
        id="NodeAffinityPolicy ignored with labelSelectors",
    ),
    pytest.param(
        ScoreCase(
            pod(
                "p",
                F,
                affinity=required_node_affinity("foo", "In", [""]),
                spread=[soft(1, "node", FOO)],
            ),
            POLICY_NODES,
            {"node-a": 0, "node-b": 33, "node-c": 100},
            existing=POLICY_PODS,
        ),
        id="NodeAffinityPolicy honoed with nodeAffinity",
    ),
    pytest.param(
        ScoreCase(
            pod(
                "p",
                F,
                affinity=required_node_affinity("foo", "In", [""]),
                spread=[soft(1, "node", FOO, node_affinity_policy="Ignore")],
            ),
            POLICY_NODES,
            {"node-a": 66, "node-b": 100, "node-c": 100},
            existing=POLICY_PODS,
        ),
        id="NodeAffinityPolicy ignored with nodeAffinity",
    ),
    pytest.param(
        ScoreCase(
            pod("p", F, spread=[soft(1, "node", FOO, node_taints_policy="Honor")]),
            TAINT_NODES,
            {"node-a": 0, "node-b": 33, "node-c": 100},
            existing=POLICY_PODS,
        ),
        id="NodeTaintsPolicy honored",
    ),
    pytest.param(
        ScoreCase(
            pod("p", F, spread=[soft(1, "node", FOO)]),
            TAINT_NODES,
            {"node-a": 66, "node-b": 100, "node-c": 100},
            existing=POLICY_PODS,
        ),
        id="NodeTaintsPolicy ignored",
    ),
    pytest.param(
        ScoreCase(
            pod(
                "p",
                FB,
                spread=[
                    soft(1, "zone", {}, match_label_keys=["foo"]),
                    soft(1, HOSTNAME, {}, match_label_keys=["bar"]),
                ],
            ),
            ABCD_ZONED,
            {"node-a": 60, "node-b": 20, "node-c": 60, "node-d": 100},
            existing=MIXED_PODS,
        ),
        id="matchLabelKeys ANDed with LabelSelector when LabelSelector is empty",
    ),
    pytest.param(
        ScoreCase(
            pod(
                "p",
                {"foo": "", "bar": "", "baz": ""},
                spread=[soft(1, "zone", FOO), soft(1, HOSTNAME, BAR, match_label_keys=["baz"])],
            ),
            ABCD_ZONED,
            {"node-a": 60, "node-b": 20, "node-c": 60, "node-d": 100},
            existing=[
                pod("p-a1", F, on="node-a"),
                pod("p-b1", {"foo": "", "bar": "", "baz": ""}, on="node-b"),
                pod("p-c1", F, on="node-c"),
                pod("p-c2", {"bar": ""}, on="node-c"),
                pod("p-d3", {"bar": "", "baz": ""}, on="node-c"),
            ],
        ),
        id="matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty",
    ),
    # System defaults (TestPreScoreStateEmptyNodes' case, scored) and v1.30 rules
    pytest.param(
        ScoreCase(
            pod("p", {"foo": "tar", "baz": "sup"}, owner=("apps/v1", "ReplicaSet", "rs1")),
            [
                node("node-a", {HOSTNAME: "node-a", ZONE: "mars"}),
                node("node-b", {HOSTNAME: "node-b", ZONE: "mars"}),
                node("node-c", {HOSTNAME: "node-c"}),
                node("node-d", {HOSTNAME: "node-d"}),
            ],
            # weights ln(6) (hostnames), ln(4) (zones "mars" and ""); raw a 1.79+2+1.39+4,
            # b 2+1.39+4, c 1.79+2 (no zone label: no zone term), d 2 -> 9, 7, 4, 2
            {"node-a": 22, "node-b": 44, "node-c": 77, "node-d": 100},
            existing=[
                pod("p-a1", {"foo": "x"}, on="node-a"),
                pod("p-c1", {"foo": "y"}, on="node-c"),
                pod("other", {"bar": ""}, on="node-d"),
            ],
            objects=[replica_set("rs1", FOO)],
        ),
        id="system default constraints and a replicaset: nodes without zone are one zone",
    ),
    pytest.param(
        ScoreCase(
            pod("p", {"foo": "tar"}, owner=("apps/v1", "ReplicaSet", "rs2")),
            hosts("node-a", "node-b"),
            {"node-a": 0, "node-b": 0},
            existing=[*pods_on("node-a", 3, {"foo": "x"})],
            objects=[replica_set("rs1", FOO)],
        ),
        id="the controller is found by name: an unknown replicaset gives no constraint",
    ),
    pytest.param(
        ScoreCase(
            pod("p", {"foo": "tar"}, owner=("extensions/v1beta1", "ReplicaSet", "rs1")),
            hosts("node-a", "node-b"),
            {"node-a": 0, "node-b": 0},
            existing=[*pods_on("node-a", 3, {"foo": "x"})],
            objects=[replica_set("rs1", FOO)],
        ),
        id="a controller of another apiVersion gives no constraint",
    ),
    pytest.param(
        ScoreCase(
            pod("p", {"foo": "bar"}),
            [
                node("node-a", {HOSTNAME: "node-a", "rack": "r1"}),
                node("node-b", {HOSTNAME: "node-b", "rack": "r2"}),
                node("node-c", {HOSTNAME: "node-c"}),
            ],
            # weights ln(4) (2 hosts not ignored), ln(4) (2 racks); raw a 0+1, b 2.77+3.77 -> 1, 7
            {"node-a": 100, "node-b": 14, "node-c": 0},
            existing=[*pods_on("node-b", 2, {"foo": "bar"})],
            objects=[service("svc", {"foo": "bar"})],
            args={**LIST, "defaultConstraints": [soft(1, HOSTNAME, None), soft(2, "rack", None)]},
        ),
        id="List defaulting requires every key: a node without one is ignored",
    ),
]


def _scores(
    plugin: PodTopologySpread,
    state: ClusterState,
    raw_pod: dict[str, Any],
    names: Sequence[str],
    fast: bool,
) -> tuple[list[int], list[int] | None]:
    incoming = parse_pod(raw_pod)
    settings = PolicySettings(fast=fast)
    feasible = [state.nodes[name] for name in names]
    engine = plugin.priority()(incoming, feasible, CycleState(incoming, state, settings))
    cycle = CycleState(incoming, state, settings)
    status = plugin.pre_score(cycle, incoming, feasible)
    if status is not None:
        assert status.code is Code.SKIP
        return engine, None
    listed = []
    for info in feasible:
        score = plugin.score(cycle, incoming, info)
        assert isinstance(score, int)
        listed.append(NodeScore(info.name, score))
    assert plugin.normalize_score(cycle, incoming, listed) is None
    return engine, [entry.score for entry in listed]


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "plain"])
@pytest.mark.parametrize("case", SCORE_CASES)
def test_score(case: ScoreCase, fast: bool) -> None:
    state = cluster([*case.nodes, *case.failed_nodes], case.existing, case.objects)
    plugin = PodTopologySpread(spread_args(case.args), None)  # type: ignore[arg-type]
    names = [n["metadata"]["name"] for n in case.nodes]
    engine, public = _scores(plugin, state, case.pod, names, fast)
    assert dict(zip(names, engine, strict=True)) == case.want
    if public is None:  # PreScore skipped: the plugin adds nothing to any node
        assert set(case.want.values()) == {0}
    else:
        assert public == engine


@pytest.mark.parametrize(
    ("raw_pod", "nodes", "objects", "args"),
    [
        pytest.param(
            pod("p"),
            hosts("node-a", "node-b"),
            [],
            LIST,
            id="the pod doesn't have soft topology spread Constraints",
        ),
        pytest.param(
            pod("p", {"foo": "bar", "baz": "sup"}, owner=("apps/v1", "ReplicaSet", "rs2")),
            [node("node-a", {"planet": "mars"})],
            [replica_set("rs1", {"matchExpressions": [{"key": "tar", "operator": "Exists"}]})],
            {**LIST, "defaultConstraints": [soft(2, "planet", None)]},
            id="default constraints and a replicaset that doesn't match",
        ),
        pytest.param(
            pod("p", F, spread=[soft(1, "zone", FOO)]), [], [], None, id="no node in the cluster"
        ),
    ],
)
def test_pre_score_skip(
    raw_pod: dict[str, Any],
    nodes: list[dict[str, Any]],
    objects: list[dict[str, Any]],
    args: dict[str, Any] | None,
) -> None:
    state = cluster(nodes, [], objects)
    plugin = PodTopologySpread(spread_args(args), None)  # type: ignore[arg-type]
    incoming = parse_pod(raw_pod)
    feasible = list(state.nodes.values())
    status = plugin.pre_score(CycleState(incoming, state, PolicySettings()), incoming, feasible)
    assert status is not None and status.code is Code.SKIP
    assert plugin.priority()(incoming, feasible, CycleState(incoming, state, PolicySettings())) == [
        0
    ] * len(feasible)
