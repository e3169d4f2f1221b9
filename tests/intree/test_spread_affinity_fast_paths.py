"""PodTopologySpread and InterPodAffinity: the fast path decides as the definition.

Seeded generators build clusters (zones and hostnames, some nodes without a zone or with
a rack, taints, pods of two namespaces with labels, terminating pods, pods with pod
(anti-)affinity terms, some with a namespaceSelector, pods on nodes not known yet,
Services and ReplicaSets owning pods) and pending pods with topology spread constraints
(both actions, several keys or one key twice, minDomains, inclusion policies,
matchLabelKeys), node selectors and affinity, tolerations and pod (anti-)affinity. For
each pending pod the plugins' engine functions run with ``fast`` on and off: every
node's reasons (and their unresolvable mark) and the scores of a random feasible subset
must be equal; the declared hints must hold (``never_fails`` and ``fits_everywhere``
only where the predicate passes every node, ``screen`` covering every refused node).
Placed pods are added as they are decided, so later pods see the earlier ones.
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pytest

from builders import add_object
from policy_scheduler.engine.cluster import ClusterState
from policy_scheduler.engine.functions import (
    CycleState,
    PolicySettings,
    Predicate,
    Priority,
    hints_of,
    is_unresolvable,
)
from policy_scheduler.engine.intree.interpodaffinity import InterPodAffinity
from policy_scheduler.engine.intree.podtopologyspread import PodTopologySpread
from policy_scheduler.objects import Pod, parse_node, parse_pod
from policy_scheduler.pluginargs import plugin_args

ZONE = "topology.kubernetes.io/zone"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
HOSTNAME = "kubernetes.io/hostname"
KEYS = (ZONE, ZONE, HOSTNAME, "rack")
APPS = ("web", "db", "cache")
NAMESPACES = ("default", "default", "other")


def random_node(rng: random.Random, i: int, zoned: float) -> dict[str, Any]:
    name = f"node-{i}"
    labels = {HOSTNAME: name, "disk": rng.choice(("ssd", "hdd"))}
    if rng.random() < zoned:
        labels[ZONE] = rng.choice(("z1", "z2", "z3"))
    if rng.random() < 0.3:
        # The beta label, not always agreeing: the GA one is the topology key.
        labels[BETA_ZONE] = rng.choice(("z1", "z2"))
    if rng.random() < 0.5:
        labels[REGION] = "r1"
    if rng.random() < 0.4:
        labels["rack"] = rng.choice(("r1", "r2", ""))
    spec: dict[str, Any] = {}
    if rng.random() < 0.2:
        spec["taints"] = [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
        "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": 110}},
    }


def random_term(rng: random.Random) -> dict[str, Any]:
    term: dict[str, Any] = {
        "labelSelector": {"matchLabels": {"app": rng.choice(APPS)}},
        "topologyKey": rng.choice((ZONE, HOSTNAME, "rack")),
    }
    roll = rng.random()
    if roll < 0.15:
        term["namespaces"] = ["default", "other"]
    elif roll < 0.3:
        term["namespaceSelector"] = {}
    elif roll < 0.35:
        term["namespaceSelector"] = {"matchLabels": {"team": "a"}}
    return term


def random_affinity(rng: random.Random) -> dict[str, Any] | None:
    if rng.random() < 0.5:
        return None
    out: dict[str, Any] = {}
    for kind in ("podAffinity", "podAntiAffinity"):
        if rng.random() < 0.5:
            continue
        block: dict[str, Any] = {}
        if rng.random() < 0.5:
            block["requiredDuringSchedulingIgnoredDuringExecution"] = [
                random_term(rng) for _ in range(rng.choice((1, 1, 2)))
            ]
        if rng.random() < 0.6:
            block["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": rng.choice((1, 5, 50)), "podAffinityTerm": random_term(rng)}
            ]
        if block:
            out[kind] = block
    return out or None


def random_spread(rng: random.Random, app: str) -> list[dict[str, Any]]:
    out = []
    for _ in range(rng.choice((1, 1, 2, 2, 3))):
        when = rng.choice(("DoNotSchedule", "ScheduleAnyway"))
        c: dict[str, Any] = {
            "maxSkew": rng.choice((1, 1, 2, 3)),
            "topologyKey": rng.choice(KEYS),
            "whenUnsatisfiable": when,
            "labelSelector": rng.choice(
                ({"matchLabels": {"app": app}}, {"matchLabels": {"app": app}}, {})
            ),
        }
        if when == "DoNotSchedule" and rng.random() < 0.3:
            c["minDomains"] = rng.choice((2, 3, 5))
        for field_name in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
            if rng.random() < 0.3:
                c[field_name] = rng.choice(("Honor", "Ignore"))
        if rng.random() < 0.2:
            c["matchLabelKeys"] = ["tier"]
        out.append(c)
    return out


def random_pod(rng: random.Random, name: str, node_name: str | None) -> dict[str, Any]:
    app = rng.choice(APPS)
    namespace = rng.choice(NAMESPACES)
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": f"uid-{name}",
        "labels": {"app": app, "tier": rng.choice(("front", "back"))},
    }
    if rng.random() < 0.5:
        meta["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": app,
                "uid": f"rs-{app}",
                "controller": True,
            }
        ]
    if node_name and rng.random() < 0.05:
        meta["deletionTimestamp"] = "2024-05-01T00:00:00Z"
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": "registry.example/app:1"}]}
    if node_name:
        spec["nodeName"] = node_name
    affinity = random_affinity(rng)
    if rng.random() < 0.25:
        node_affinity = {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["z1", "z2"]}]}
                ]
            }
        }
        affinity = {**(affinity or {}), "nodeAffinity": node_affinity}
    if affinity:
        spec["affinity"] = affinity
    if rng.random() < 0.15:
        spec["nodeSelector"] = {"disk": "ssd"}
    if rng.random() < 0.2:
        spec["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
    if not node_name and rng.random() < 0.6:
        spec["topologySpreadConstraints"] = random_spread(rng, app)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def workloads() -> list[dict[str, Any]]:
    """Services, ReplicaSets, and the Namespace ``default`` (team a; ``other`` unknown)."""
    out: list[dict[str, Any]] = [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "default", "labels": {"team": "a"}},
        }
    ]
    for namespace in ("default", "other"):
        out.append(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": "web", "namespace": namespace},
                "spec": {"selector": {"app": "web"}},
            }
        )
        for app in ("web", "db"):
            out.append(
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "metadata": {"name": app, "namespace": namespace, "uid": f"rs-{app}"},
                    "spec": {"selector": {"matchLabels": {"app": app}}},
                }
            )
    return out


def build(seed: int, num_nodes: int) -> tuple[ClusterState, random.Random]:
    rng = random.Random(seed)
    state = ClusterState()
    # Every other seed zones every node (the zone column is then read off zone_key).
    zoned = 1.0 if seed % 2 else 0.85
    for i in range(num_nodes):
        state.set_node(parse_node(random_node(rng, i, zoned)))
    for i in range(num_nodes * 2):
        # A few pods on nodes the cluster does not know (yet).
        target = f"node-{rng.randrange(num_nodes + 2)}"
        state.add_pod(parse_pod(random_pod(rng, f"placed-{i}", target)))
    for obj in workloads():
        add_object(state, obj)
    return state, rng


def spread_list_args() -> Any:
    return plugin_args(
        "PodTopologySpread",
        {
            "defaultingType": "List",
            "defaultConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": ZONE,
                    "whenUnsatisfiable": "DoNotSchedule",
                    "nodeTaintsPolicy": "Honor",
                },
                {
                    "maxSkew": 2,
                    "topologyKey": HOSTNAME,
                    "whenUnsatisfiable": "ScheduleAnyway",
                    "nodeAffinityPolicy": "Ignore",
                },
            ],
        },
    )


PLUGINS = {
    "PodTopologySpread-System": lambda: PodTopologySpread(None, None),  # type: ignore[arg-type]
    "PodTopologySpread-List": lambda: PodTopologySpread(spread_list_args(), None),  # type: ignore[arg-type]
    "InterPodAffinity": lambda: InterPodAffinity(None, None),  # type: ignore[arg-type]
    "InterPodAffinity-hard5-ignore": lambda: InterPodAffinity(
        plugin_args(
            "InterPodAffinity",
            {"hardPodAffinityWeight": 5, "ignorePreferredTermsOfExistingPods": True},
        ),  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
    ),
}


def check_pod(
    predicate: Predicate, priority: Priority, incoming: Pod, state: ClusterState, rng: random.Random
) -> list[str]:
    nodes = list(state.nodes.values())
    fast = CycleState(incoming, state, PolicySettings(fast=True))
    plain = CycleState(incoming, state, PolicySettings(fast=False))
    fast_reasons = [predicate(incoming, info, fast) for info in nodes]
    plain_reasons = [predicate(incoming, info, plain) for info in nodes]
    assert fast_reasons == plain_reasons
    for a, b in zip(fast_reasons, plain_reasons, strict=True):
        assert [is_unresolvable(r) for r in a] == [is_unresolvable(r) for r in b]

    refused = [k for k, reasons in enumerate(fast_reasons) if reasons]
    hints = hints_of(predicate)
    if hints.never_fails is not None and hints.never_fails(incoming):
        assert not refused
    if hints.fits_everywhere is not None:
        fresh = CycleState(incoming, state, PolicySettings())
        if hints.fits_everywhere(incoming, fresh):
            assert not refused
    if hints.screen is not None:
        screened = hints.screen(incoming, nodes, CycleState(incoming, state, PolicySettings()))
        assert set(refused) <= set(screened)

    feasible = [info for info, reasons in zip(nodes, fast_reasons, strict=True) if not reasons]
    subset = rng.sample(feasible, k=len(feasible) // 2 + 1) if feasible else []
    got_fast = priority(incoming, subset, CycleState(incoming, state, PolicySettings(fast=True)))
    got_plain = priority(incoming, subset, CycleState(incoming, state, PolicySettings(fast=False)))
    assert got_fast == got_plain
    assert all(0 <= score <= 100 for score in got_fast)
    return [info.name for info in feasible]


@pytest.mark.parametrize("plugin_name", list(PLUGINS))
@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_fast_path_decides_as_the_definition(plugin_name: str, seed: int) -> None:
    state, rng = build(seed, num_nodes=18)
    plugin = PLUGINS[plugin_name]()
    predicate, priority = plugin.predicate(), plugin.priority()
    refusals = 0
    for i in range(30):
        incoming = parse_pod(random_pod(rng, f"pending-{i}", None))
        feasible = check_pod(predicate, priority, incoming, state, rng)
        refusals += len(state.nodes) - len(feasible)
        if feasible:
            state.add_pod(replace(incoming, node_name=rng.choice(feasible)))
    # The generators must exercise refusals, or the comparison proves little.
    if plugin_name != "PodTopologySpread-System":
        assert refusals > 0
