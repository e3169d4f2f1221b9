"""The default policy (v1.22 DefaultProvider) against the v1.13 set, on today's nodes.

Since TaintNodesByCondition, the node lifecycle controller taints a node that is not
ready, unreachable, under pressure or cordoned; the default policy reads those taints
(PodToleratesNodeTaints, CheckNodeUnschedulable) and so lets in the pods that tolerate
them (DaemonSet pods), where the v1.13 set (CheckNodeCondition and the pressure
predicates, as ``examples/policies/legacy-v1.13.yaml`` has them) reads the conditions
and refuses.
"""

from __future__ import annotations

from typing import Any

import pytest

from builders import cluster, decide, node, pod
from policy_scheduler import names

#: The v1.13 gate-off provider itself (the example adds EvenPodsSpread to it).
LEGACY_V1_13 = {
    "apiVersion": "policyscheduler.io/v1alpha1",
    "kind": "SchedulingPolicy",
    "metadata": {"name": "legacy-v1-13"},
    "spec": {
        "predicates": [
            {"name": name}
            for name in names.LEGACY_PREDICATE_ORDER
            if name in names.LEGACY_V1_13_PREDICATES
        ],
        "priorities": [
            {"name": name, "weight": weight} for name, weight in names.LEGACY_V1_13_PRIORITY_WEIGHTS
        ],
    },
}

NOT_READY = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}
UNSCHEDULABLE = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
MEMORY_PRESSURE = {"key": "node.kubernetes.io/memory-pressure", "effect": "NoSchedule"}


def tolerating(*taints: dict[str, str]) -> list[dict[str, str]]:
    return [{"key": t["key"], "operator": "Exists", "effect": t["effect"]} for t in taints]


def not_ready_node(**kwargs: Any) -> dict[str, Any]:
    return node("n", conditions={"Ready": "False"}, taints=[NOT_READY], **kwargs)


def cordoned_node() -> dict[str, Any]:
    return node("n", unschedulable=True, taints=[UNSCHEDULABLE])


def pressured_node() -> dict[str, Any]:
    return node("n", conditions={"Ready": "True", "MemoryPressure": "True"})


SPREAD = [
    {
        "maxSkew": 1,
        "topologyKey": "zone",
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}},
    }
]


@pytest.mark.parametrize(
    ("node_obj", "pod_obj", "default_reasons", "legacy_reasons"),
    [
        pytest.param(
            not_ready_node(),
            pod("web"),
            ["node(s) had taints that the pod didn't tolerate"],
            ["node(s) were not ready"],
            id="not-ready-node-refuses-a-plain-pod-under-both",
        ),
        pytest.param(
            not_ready_node(),
            pod("agent", tolerations=tolerating(NOT_READY)),
            None,
            ["node(s) were not ready"],
            id="daemonset-pod-tolerating-not-ready-is-placed-by-the-default",
        ),
        pytest.param(
            cordoned_node(),
            pod("web"),
            ["node(s) were unschedulable"],
            ["node(s) were unschedulable"],
            id="cordoned-node-refuses-a-plain-pod-under-both",
        ),
        pytest.param(
            cordoned_node(),
            pod("agent", tolerations=tolerating(UNSCHEDULABLE)),
            None,
            ["node(s) were unschedulable"],
            id="pod-tolerating-the-cordon-is-placed-by-the-default",
        ),
        pytest.param(
            pressured_node(),
            pod("best-effort"),
            None,
            ["node(s) had memory pressure"],
            id="untainted-pressure-condition-is-left-to-the-lifecycle-controller",
        ),
        pytest.param(
            node(
                "n",
                conditions={"Ready": "True", "MemoryPressure": "True"},
                taints=[MEMORY_PRESSURE],
            ),
            pod("best-effort"),
            ["node(s) had taints that the pod didn't tolerate"],
            # The v1.13 set checks taints before pressure too.
            ["node(s) had taints that the pod didn't tolerate"],
            id="memory-pressure-taint-refuses-under-both",
        ),
    ],
)
def test_node_health_is_read_from_taints_by_default(
    node_obj: dict[str, Any],
    pod_obj: dict[str, Any],
    default_reasons: list[str] | None,
    legacy_reasons: list[str] | None,
) -> None:
    state = cluster([node_obj])
    default = decide(pod_obj, state)
    legacy = decide(pod_obj, state, LEGACY_V1_13)
    assert default.failed.get("n") == default_reasons
    assert default.node == (None if default_reasons else "n")
    assert legacy.failed.get("n") == legacy_reasons
    assert legacy.node == (None if legacy_reasons else "n")


def test_a_hard_spread_constraint_is_kept_by_default_and_ignored_by_the_v1_13_set() -> None:
    # Two zones; zone a already runs two web pods, zone b none: maxSkew 1 allows only b.
    nodes = [node("a1", labels={"zone": "a"}), node("b1", labels={"zone": "b"})]
    running = [pod(f"web-{i}", labels={"app": "web"}, node_name="a1") for i in range(2)]
    state = cluster(nodes, running)
    incoming = pod("web-new", labels={"app": "web"}, spread=SPREAD)
    default = decide(incoming, state)
    assert default.failed == {"a1": ["node(s) didn't match pod topology spread constraints"]}
    assert default.node == "b1"
    legacy = decide(incoming, state, LEGACY_V1_13)
    assert legacy.failed == {}
    assert set(legacy.feasible) == {"a1", "b1"}


def test_a_soft_spread_constraint_scores_by_default_at_weight_two() -> None:
    soft = [dict(SPREAD[0], whenUnsatisfiable="ScheduleAnyway")]
    nodes = [node("a1", labels={"zone": "a"}), node("b1", labels={"zone": "b"})]
    running = [pod("web-0", labels={"app": "web"}, node_name="a1")]
    decision = decide(pod("web-new", labels={"app": "web"}, spread=soft), cluster(nodes, running))
    spread_a = decision.scores["a1"].priorities["EvenPodsSpreadPriority"]
    spread_b = decision.scores["b1"].priorities["EvenPodsSpreadPriority"]
    assert (spread_a, spread_b) == (0, 10)
    assert decision.node == "b1"
