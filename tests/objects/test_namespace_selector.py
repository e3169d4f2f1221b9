"""Namespaces and a pod affinity term's namespaceSelector.

A term's scope as kube-scheduler v1.22+ reads it (``framework.AffinityTerm``): its
``namespaces`` or, with a ``namespaceSelector``, the namespaces it lists plus those the
selector selects by their labels (the pod's own namespace only when a term has neither).
The legacy predicates and priorities of v1.13-v1.17 knew no namespaceSelector: they read
``namespaces`` (the own namespace when none is listed), and decide as before.
"""

from __future__ import annotations

from typing import Any

import pytest

from builders import node, pod
from policy_scheduler.kinds import NAMESPACE, kind_of
from policy_scheduler.objects import ObjectError, PodAffinityTerm, parse_namespace, parse_pod
from policy_scheduler.selectors import label_selector
from policy_scheduler.simulation import inputs_from_objects, simulate
from policy_scheduler.state.world import DELETED, World


def affinity_term(**term: Any) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone", **term}


def required_term(namespace: str = "shop", **term: Any) -> PodAffinityTerm:
    raw = pod(
        "web",
        namespace=namespace,
        affinity={
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [affinity_term(**term)]
            }
        },
    )
    [parsed] = parse_pod(raw).affinity_required
    return parsed


LABELS = {"shop": {"team": "a"}, "billing": {"team": "b"}, "audit": {}}


@pytest.mark.parametrize(
    ("term", "scope"),
    [
        pytest.param({}, {"shop"}, id="neither: the pod's own namespace"),
        pytest.param({"namespaces": ["billing"]}, {"billing"}, id="listed namespaces"),
        pytest.param(
            {"namespaceSelector": {}},
            {"shop", "billing", "audit", "unknown"},
            id="{} selects every namespace",
        ),
        pytest.param(
            {"namespaceSelector": {"matchLabels": {"team": "b"}}},
            {"billing"},
            id="selected by labels, not the own one",
        ),
        pytest.param(
            {"namespaces": ["audit"], "namespaceSelector": {"matchLabels": {"team": "b"}}},
            {"audit", "billing"},
            id="listed or selected",
        ),
        pytest.param(
            {
                "namespaceSelector": {
                    "matchExpressions": [{"key": "team", "operator": "DoesNotExist"}]
                }
            },
            {"audit"},
            id="an unknown namespace is selected by no non-empty selector",
        ),
        pytest.param({"namespaceSelector": None}, {"shop"}, id="null is absent"),
    ],
)
def test_a_terms_namespace_scope(term: dict[str, Any], scope: set[str]) -> None:
    parsed = required_term(**term)
    namespaces = {*LABELS, "unknown"}
    assert {ns for ns in namespaces if parsed.matches_namespace(ns, LABELS.get(ns))} == scope


def test_the_legacy_scope_is_unchanged_by_a_namespace_selector() -> None:
    plain = required_term()
    selecting = required_term(namespaceSelector={"matchLabels": {"team": "b"}})
    assert plain.namespace_selector is None and plain.namespaces == {"shop"}
    assert selecting.namespaces == plain.namespaces  # what v1.13-v1.17 read
    assert selecting.listed_namespaces == frozenset()


def test_a_bad_namespace_selector_names_the_field() -> None:
    raw = pod(
        "web",
        affinity={
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 1,
                        "podAffinityTerm": affinity_term(
                            namespaceSelector={
                                "matchExpressions": [{"key": "team", "operator": "In"}]
                            }
                        ),
                    }
                ]
            }
        },
    )
    with pytest.raises(ObjectError) as refused:
        parse_pod(raw)
    assert (
        "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]"
        ".podAffinityTerm.namespaceSelector.matchExpressions[0]" in str(refused.value)
    )


def namespace(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def test_a_namespace_is_read_for_its_labels() -> None:
    raw = namespace("shop", team="a")
    assert kind_of(raw) is NAMESPACE
    parsed = parse_namespace(raw)
    assert (parsed.name, dict(parsed.labels)) == ("shop", {"team": "a"})
    with pytest.raises(ObjectError):
        parse_namespace(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x", "labels": ["a"]}}
        )


async def test_simulate_reads_namespaces_and_legacy_affinity_ignores_the_selector() -> None:
    objects = [
        namespace("shop", team="a"),
        namespace("billing", team="b"),
        node("node-1", labels={"zone": "z1"}),
        node("node-2", labels={"zone": "z2"}),
        pod("db", namespace="shop", labels={"app": "db"}, node_name="node-1"),
        pod("db", namespace="billing", labels={"app": "db"}, node_name="node-2"),
    ]
    pending = [
        pod(
            name,
            namespace="shop",
            schedulerName="policy-scheduler",
            affinity={
                "podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [affinity_term(**term)]
                }
            },
        )
        for name, term in (
            ("plain", {}),
            ("selecting", {"namespaceSelector": {"matchLabels": {"team": "b"}}}),
        )
    ]
    inputs = inputs_from_objects([(o, "test") for o in objects + pending])
    assert inputs.warnings == []  # Namespaces are read, not ignored
    cluster = inputs.world.cache.cluster
    assert cluster.namespace_labels("billing") == {"team": "b"}
    assert cluster.namespace_labels("nowhere") is None
    decisions = await simulate(inputs)
    # The legacy MatchInterPodAffinity (v1.13-v1.17) reads no namespaceSelector: both
    # pods look for app=db in their own namespace, on node-1's zone.
    assert [(d.pod.name, d.node) for d in decisions] == [
        ("plain", "node-1"),
        ("selecting", "node-1"),
    ]


def test_the_world_keeps_namespace_labels_through_changes_and_deletion() -> None:
    world = World(default_scheduler_name="policy-scheduler")
    world.observe("ADDED", namespace("shop", team="a"))
    world.observe("ADDED", namespace("billing", team="b"))
    world.observe("MODIFIED", namespace("shop", team="b"))
    cluster = world.cache.cluster
    team_b = label_selector({"matchLabels": {"team": "b"}}, "namespaceSelector")
    assert cluster.namespaces_selected(team_b) == ["shop", "billing"]
    world.observe(DELETED, namespace("shop", team="b"))
    assert cluster.namespace_labels("shop") is None
    assert cluster.namespaces_selected(team_b) == ["billing"]
