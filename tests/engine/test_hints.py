"""Fit hints: what single change would make a pod that fits nowhere fit, per family.

Each family of failure reasons is driven through a real decision (``decide``, which
explains, so hints are computed) and the hints are compared as ``(change, nodes)``
pairs. Then the promises every hint keeps: a node needing two changes gets none, a pod
that fits nowhere whatever single change gets ``[]``, the live cluster is untouched, the
operator (``explain=False``) never computes them, and, on randomized clusters, every
(hint, node) pair applied independently to the raw objects makes that node feasible.
"""

from __future__ import annotations

import asyncio
import copy
import random
from collections.abc import Sequence
from typing import Any

import pytest

from builders import claim_volume, cluster, cluster_picture, decide, node, pod, policy, pv, pvc
from policy_scheduler.engine import algorithm
from policy_scheduler.engine.algorithm import Scheduler
from policy_scheduler.engine.cluster import ClusterState
from policy_scheduler.engine.compiler import compile_policy
from policy_scheduler.engine.hinting import Hint, fit_hints
from policy_scheduler.objects import parse_persistent_volume, parse_pod
from policy_scheduler.policy import default_policy, parse_policy

ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
UNSCHEDULABLE = "node.kubernetes.io/unschedulable"

Hints = list[tuple[str, tuple[str, ...]]]


def hints(
    pod_obj: dict[str, Any],
    nodes: list[dict[str, Any]],
    placed: Sequence[dict[str, Any]] = (),
    policy_obj: dict[str, Any] | None = None,
    objects: Sequence[dict[str, Any]] = (),
) -> Hints:
    decision = decide(pod_obj, cluster(nodes, placed, objects), policy_obj)
    assert decision.node is None, "the case must leave the pod unscheduled"
    return [(hint.change, hint.nodes) for hint in decision.hints]


def taint(key: str, value: str = "", effect: str = "NoSchedule") -> dict[str, Any]:
    return {"key": key, "value": value, "effect": effect}


def required(*terms: list[dict[str, Any]]) -> dict[str, Any]:
    """A required node affinity with these terms (each a list of matchExpressions)."""
    selector = {"nodeSelectorTerms": [{"matchExpressions": exprs} for exprs in terms]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": selector}}


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    return out


def presence(labels: list[str], present: bool) -> dict[str, Any]:
    argument = {"labelsPresence": {"labels": labels, "presence": present}}
    return {"name": "TeamLabel", "argument": argument}


def using(name: str, node_name: str, **requests: str) -> dict[str, Any]:
    """A pod already running on a node with these requests."""
    return pod(name, node_name=node_name, requests=requests)


# -- requests ----------------------------------------------------------------------------

REQUESTS = [
    pytest.param(
        pod("p", requests={"cpu": "1"}),
        [node("n1", cpu="2")],
        [using("b", "n1", cpu="1500m")],
        [("cpu request <= 500m", ("n1",))],
        id="cpu: the node's allocatable minus what its pods request",
    ),
    pytest.param(
        pod("p", requests={"memory": "4Gi"}),
        [node("n1", memory="4Gi")],
        [using("b", "n1", memory=str(2**30 + 100))],
        [("memory request <= 3071Mi", ("n1",))],
        id="memory rounded down to a whole Mi",
    ),
    pytest.param(
        pod("p", requests={"memory": "4Gi"}),
        [node("n1", memory="4Gi")],
        [using("b", "n1", memory="2Gi")],
        [("memory request <= 2Gi", ("n1",))],
        id="memory written in the largest exact unit",
    ),
    pytest.param(
        pod("p", requests={"cpu": "3", "memory": "2Gi"}),
        [node("n1", cpu="4", memory="2Gi")],
        [using("b", "n1", cpu="2", memory="1Gi")],
        [("cpu request <= 2, memory request <= 1Gi", ("n1",))],
        id="every resource the node is short of, in one change",
    ),
    pytest.param(
        pod("p", requests={"ephemeral-storage": "10Gi"}),
        [
            node(
                "n1",
                allocatable={"cpu": "4", "memory": "8Gi", "pods": 110, "ephemeral-storage": "8Gi"},
            )
        ],
        [],
        [("ephemeral-storage request <= 8Gi", ("n1",))],
        id="ephemeral-storage",
    ),
    pytest.param(
        pod("p", requests={"example.com/gpu": "2"}),
        [node("n1", allocatable={"cpu": "4", "memory": "8Gi", "pods": 110, "example.com/gpu": 4})],
        [using("b", "n1", **{"example.com/gpu": "3"})],
        [("example.com/gpu request <= 1", ("n1",))],
        id="an extended resource, in units",
    ),
    pytest.param(
        pod("p", requests={"cpu": "1"}),
        [node("n1", cpu="2"), node("n2", cpu="2"), node("n3", cpu="2")],
        [
            using("b1", "n1", cpu="1500m"),
            using("b2", "n2", cpu="1200m"),
            using("b3", "n3", cpu="1200m"),
        ],
        # The smallest cut first: it changes the pod least.
        [("cpu request <= 800m", ("n2", "n3")), ("cpu request <= 500m", ("n1", "n2", "n3"))],
        id="a smaller request also fits the nodes with more room",
    ),
    pytest.param(
        pod("p", requests={"cpu": "1"}),
        [node("n1", cpu="2")],
        [using("b", "n1", cpu="2")],
        [],
        id="no room left: no request fits",
    ),
    pytest.param(
        pod("p", requests={"cpu": "1"}),
        [node("n1", cpu="8", pods=1)],
        [using("b", "n1", cpu="100m")],
        [],
        id="Insufficient pods: no request change helps",
    ),
    pytest.param(
        pod("p", requests={"cpu": "1"}, tolerations=[]),
        [node("n1", cpu="2", taints=[taint("dedicated", "gpu")])],
        [using("b", "n1", cpu="1500m")],
        [],
        id="short of cpu and tainted: no single change",
    ),
]


@pytest.mark.parametrize(("pod_obj", "nodes", "placed", "expected"), REQUESTS)
def test_request_hints(
    pod_obj: dict[str, Any],
    nodes: list[dict[str, Any]],
    placed: list[dict[str, Any]],
    expected: Hints,
) -> None:
    assert hints(pod_obj, nodes, placed) == expected


def test_the_request_is_the_one_insufficient_compares_init_containers_included() -> None:
    # Containers ask 500m, the init container 3: the pod's request is 3 (max of both).
    obj = pod(
        "p",
        requests={"cpu": "500m"},
        init_containers=[{"name": "init", "image": "i", "resources": {"requests": {"cpu": "3"}}}],
    )
    assert hints(obj, [node("n1", cpu="2")]) == [("cpu request <= 2", ("n1",))]


# -- tolerations and cordons ---------------------------------------------------------------

NO_EXECUTE_ONLY = policy(["PodToleratesNodeNoExecuteTaints"], [])
UNSCHEDULABLE_ONLY = policy(["CheckNodeUnschedulable"], [])

TAINTS = [
    pytest.param(
        [node("n1", taints=[taint("dedicated", "gpu")])],
        None,
        [("tolerate dedicated=gpu:NoSchedule", ("n1",))],
        id="one NoSchedule taint",
    ),
    pytest.param(
        [node("n1", taints=[taint("dedicated", "gpu"), taint("spot", effect="NoExecute")])],
        None,
        [("tolerate dedicated=gpu:NoSchedule, spot:NoExecute", ("n1",))],
        id="every untolerated taint, in one change",
    ),
    pytest.param(
        [
            node(
                "n1",
                taints=[
                    taint("dedicated", "gpu"),
                    taint("spot", effect="NoExecute"),
                    taint("soft", effect="PreferNoSchedule"),
                ],
            )
        ],
        NO_EXECUTE_ONLY,
        [("tolerate spot:NoExecute", ("n1",))],
        id="only the NoExecute ones when the policy checks only those",
    ),
    pytest.param(
        [
            node("n1", taints=[taint("dedicated", "gpu")]),
            node("n2", taints=[taint("dedicated", "gpu")]),
            node("n3", taints=[taint("dedicated", "db")]),
        ],
        None,
        [
            ("tolerate dedicated=gpu:NoSchedule", ("n1", "n2")),
            ("tolerate dedicated=db:NoSchedule", ("n3",)),
        ],
        id="nodes grouped by change, most nodes first",
    ),
    pytest.param(
        [node("n1", taints=[taint("node.kubernetes.io/not-ready", effect="NoExecute")])],
        None,
        [],
        id="not for the taints of an unhealthy node",
    ),
    pytest.param(
        [node("n1", unschedulable=True)],
        None,
        [("uncordon", ("n1",))],
        id="cordoned: CheckNodeCondition refuses it whatever the pod tolerates",
    ),
    pytest.param(
        [node("n1", unschedulable=True)],
        UNSCHEDULABLE_ONLY,
        [("uncordon", ("n1",))],
        id="cordoned: uncordon, never a toleration of the cordon",
    ),
    pytest.param(
        [node("n1", unschedulable=True, taints=[taint(UNSCHEDULABLE)])],
        None,
        [("uncordon", ("n1",))],
        id="cordoned with its taint: uncordoning removes both",
    ),
    pytest.param(
        [
            node(
                "n1",
                unschedulable=True,
                conditions={"Ready": "False"},
                taints=[taint("node.kubernetes.io/not-ready")],
            )
        ],
        None,
        [],
        id="cordoned and not ready: no single change",
    ),
]


@pytest.mark.parametrize(("nodes", "policy_obj", "expected"), TAINTS)
def test_toleration_and_cordon_hints(
    nodes: list[dict[str, Any]], policy_obj: dict[str, Any] | None, expected: Hints
) -> None:
    assert hints(pod("p"), nodes, policy_obj=policy_obj) == expected


# -- labels ---------------------------------------------------------------------------------

LABELS = [
    pytest.param(
        pod("p", node_selector={"disktype": "ssd"}),
        [node("n1"), node("n2", labels={"disktype": "hdd"})],
        None,
        [("label disktype=ssd", ("n1", "n2"))],
        id="nodeSelector: the label the node lacks or has another value of",
    ),
    pytest.param(
        pod("p", affinity=required([expr("disk", "In", "ssd", "nvme")])),
        [
            node("n1"),
            node(
                "n2",
                labels={"disk": "nvme"},
                conditions={"Ready": "False"},
                taints=[taint("node.kubernetes.io/not-ready")],
            ),
        ],
        None,
        [("label disk=nvme", ("n1",))],
        id="In: the value most nodes carry",
    ),
    pytest.param(
        pod("p", affinity=required([expr("disk", "In", "ssd", "nvme")])),
        [node("n1")],
        None,
        [("label disk=nvme", ("n1",))],
        id="In: else the first value by name",
    ),
    pytest.param(
        pod("p", affinity=required([expr("spot", "NotIn", "true")])),
        [node("n1", labels={"spot": "true"})],
        None,
        [("label spot-", ("n1",))],
        id="NotIn: remove the label",
    ),
    pytest.param(
        pod("p", affinity=required([expr("spot", "DoesNotExist")])),
        [node("n1", labels={"spot": "true"})],
        None,
        [("label spot-", ("n1",))],
        id="DoesNotExist: remove the label",
    ),
    pytest.param(
        pod("p", affinity=required([expr("gen", "Gt", "3")])),
        [node("n1", labels={"gen": "2"})],
        None,
        [("label gen=4", ("n1",))],
        id="Gt: the next integer",
    ),
    pytest.param(
        pod("p", affinity=required([expr("team", "Exists")])),
        [node("n1"), node("n2", labels={"team": "ml"}, unschedulable=True)],
        None,
        # Uncordoning restores a node; relabelling makes it claim to be another kind.
        [("uncordon", ("n2",)), ("label team=ml", ("n1",))],
        id="Exists: the value other nodes carry",
    ),
    pytest.param(
        pod(
            "p",
            affinity=required(
                [expr("a", "In", "1"), expr("b", "In", "1")],
                [expr("c", "In", "1")],
            ),
        ),
        [node("n1")],
        None,
        [("label c=1", ("n1",))],
        id="terms are ORed: the one needing the fewest edits",
    ),
    pytest.param(
        pod("p", node_selector={"disktype": "ssd"}, affinity=required([expr("gen", "Gt", "3")])),
        [node("n1", labels={"gen": "1"})],
        None,
        [("label disktype=ssd gen=4", ("n1",))],
        id="nodeSelector and a term together, in one change",
    ),
    pytest.param(
        pod("p", node_selector={ZONE: "z9"}),
        [node("n1", labels={ZONE: "z1"})],
        None,
        [],
        id="never relabels what describes the machine (zone)",
    ),
    pytest.param(
        pod("p", node_selector={"kubernetes.io/hostname": "elsewhere"}),
        [node("n1")],
        None,
        [],
        id="never relabels the hostname",
    ),
    pytest.param(
        pod("p"),
        [node("n1"), node("n2", labels={"team": "ml"}, conditions={"Ready": "False"})],
        policy(["CheckNodeCondition", presence(["team"], True)], []),
        [("label team=ml", ("n1",))],
        id="labelsPresence true: the label, with the value other nodes carry",
    ),
    pytest.param(
        pod("p"),
        [node("n1")],
        policy([presence(["team"], True)], []),
        [("label team=", ("n1",))],
        id="labelsPresence true: an empty value when no node has one",
    ),
    pytest.param(
        pod("p"),
        [node("n1", labels={"team": "ml", "spot": "1"})],
        policy([presence(["team", "spot"], False)], []),
        [("label spot- team-", ("n1",))],
        id="labelsPresence false: remove them",
    ),
    pytest.param(
        pod("p", node_selector={"disktype": "ssd"}),
        [node("n1")],
        policy(["MatchNodeSelector", presence(["team"], True)], [], alwaysCheckAllPredicates=True),
        [("label disktype=ssd team=", ("n1",))],
        id="selector and labelsPresence: one label command",
    ),
    pytest.param(
        pod(
            "p",
            affinity={
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [expr("disk", "In", "ssd")],
                                "matchFields": [expr("metadata.name", "In", "other")],
                            }
                        ]
                    }
                }
            },
        ),
        [node("n1")],
        None,
        [],
        id="a term naming another node by matchFields: no label helps",
    ),
]


@pytest.mark.parametrize(("pod_obj", "nodes", "policy_obj", "expected"), LABELS)
def test_label_hints(
    pod_obj: dict[str, Any],
    nodes: list[dict[str, Any]],
    policy_obj: dict[str, Any] | None,
    expected: Hints,
) -> None:
    assert hints(pod_obj, nodes, policy_obj=policy_obj) == expected


def test_a_label_hint_does_not_claim_a_node_that_is_also_tainted() -> None:
    nodes = [node("n1"), node("n2", taints=[taint("dedicated", "gpu")])]
    # Both lack the label; only n1 fits once labelled: n2 needs a toleration as well.
    assert hints(pod("p", node_selector={"disktype": "ssd"}), nodes) == [
        ("label disktype=ssd", ("n1",))
    ]


def test_a_relabelled_node_takes_its_pods_into_the_new_topology_domain() -> None:
    # "web" runs on n1, which has no rack label: labelling n1 rack=r1 puts web in rack r1,
    # where the pod's anti-affinity forbids it. Only the cordoned n2 is a fix.
    nodes = [node("n1"), node("n2", labels={"rack": "r1"}, unschedulable=True)]
    placed = [pod("web", node_name="n1", labels={"app": "web"})]
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "rack"}
            ]
        }
    }
    obj = pod("p", node_selector={"rack": "r1"}, affinity=anti)
    assert hints(obj, nodes, placed) == [("uncordon", ("n2",))]


# -- host ports -----------------------------------------------------------------------------


def test_host_ports_have_no_hint() -> None:
    nodes = [node("n1"), node("n2")]
    placed = [pod(f"b{n}", node_name=n, host_ports=[8080]) for n in ("n1", "n2")]
    assert hints(pod("p", host_ports=[8080]), nodes, placed) == []


# -- volume zone ----------------------------------------------------------------------------


def zonal_volume(zone: str, region: str = "r1", *, affinity: bool = True) -> list[dict[str, Any]]:
    return [
        pv(
            "data-pv",
            labels={ZONE: zone, REGION: region},
            affinity={ZONE: [zone]} if affinity else None,
            claim=("default", "data"),
            phase="Bound",
        ),
        pvc("data", volume_name="data-pv", annotations={"pv.kubernetes.io/bind-completed": "yes"}),
    ]


def zoned(name: str, zone: str, region: str = "r1") -> dict[str, Any]:
    return node(name, labels={ZONE: zone, REGION: region})


VOLUME_ZONES = [
    pytest.param(
        zonal_volume("z1", affinity=False),
        [zoned("a", "z2"), zoned("b", "z2"), zoned("c", "z3")],
        [("volume data-pv in zone z2", ("a", "b")), ("volume data-pv in zone z3", ("c",))],
        id="the volume in the node's zone",
    ),
    pytest.param(
        zonal_volume("z1"),
        [zoned("a", "z2")],
        [("volume data-pv in zone z2", ("a",))],
        id="its node affinity follows the zone (CheckVolumeBinding agrees)",
    ),
    pytest.param(
        zonal_volume("z1", affinity=False),
        [zoned("a", "z2", "r2")],
        [("volume data-pv in region r2 zone z2", ("a",))],
        id="region and zone",
    ),
]


@pytest.mark.parametrize(("objects", "nodes", "expected"), VOLUME_ZONES)
def test_volume_zone_hints(
    objects: list[dict[str, Any]], nodes: list[dict[str, Any]], expected: Hints
) -> None:
    assert hints(pod("p", volumes=[claim_volume("data")]), nodes, objects=objects) == expected


# -- no single change --------------------------------------------------------------------


@pytest.mark.parametrize("check_all", [False, True], ids=["first failure", "all failures"])
def test_blocked_on_several_predicates_on_every_node_has_no_hint(check_all: bool) -> None:
    # Every node is short of cpu and tainted, or short of cpu and lacks the label:
    # each node needs two changes, so no single one makes the pod fit anywhere.
    nodes = [
        node("n1", cpu="1", taints=[taint("dedicated", "gpu")]),
        node("n2", cpu="1"),
    ]
    obj = pod("p", requests={"cpu": "2"}, node_selector={"disktype": "ssd"})
    pol = policy(
        ["PodFitsResources", "PodToleratesNodeTaints", "MatchNodeSelector"],
        [],
        alwaysCheckAllPredicates=check_all,
    )
    assert hints(obj, nodes, policy_obj=pol) == []


def test_a_pod_that_fits_nowhere_whatever_changes_has_no_hint() -> None:
    nodes = [
        node("full", pods=1),
        # Taints as the node lifecycle controller sets them (the default policy reads them).
        node("down", conditions={"Ready": "False"}, taints=[taint("node.kubernetes.io/not-ready")]),
        node(
            "pressured",
            conditions={"Ready": "True", "DiskPressure": "True"},
            taints=[taint("node.kubernetes.io/disk-pressure")],
        ),
        node("ports"),
    ]
    placed = [pod("b1", node_name="full"), pod("b2", node_name="ports", host_ports=[80])]
    assert hints(pod("p", host_ports=[80]), nodes, placed) == []


def test_no_nodes_no_hints() -> None:
    assert hints(pod("p"), []) == []


# -- nominated pods ---------------------------------------------------------------------

TOLERATING_AND_FITTING = policy(
    ["PodFitsResources", "PodToleratesNodeTaints", "MatchNodeSelector"],
    [],
    alwaysCheckAllPredicates=True,
)

NOMINATED = [
    pytest.param(
        node("n1", cpu="4"),
        pod("p", requests={"cpu": "3500m"}),
        1000,
        [("cpu request <= 1", ("n1",))],
        id="request: the room promised to a nominated pod of higher priority is not the pod's",
    ),
    pytest.param(
        node("n1", cpu="4"),
        pod("p", priority=1000, requests={"cpu": "3500m"}),
        1000,
        [("cpu request <= 1", ("n1",))],
        id="request: nor the room of one of equal priority",
    ),
    pytest.param(
        node("n1", cpu="4"),
        pod("p", priority=1000, requests={"cpu": "3500m"}),
        0,
        [("cpu request <= 3", ("n1",))],
        id="request: a lower-priority nomination is ignored, as the decision ignores it",
    ),
    pytest.param(
        node("n1", cpu="3", taints=[taint("dedicated", "gpu")]),
        pod("p", requests={"cpu": "1500m"}),
        1000,
        [],
        id="toleration: fits the node only without the nominated pod, so not alone",
    ),
    pytest.param(
        node("n1", cpu="3"),
        pod("p", requests={"cpu": "1500m"}, node_selector={"disktype": "ssd"}),
        1000,
        [],
        id="label: fits the node only without the nominated pod, so not alone",
    ),
]


@pytest.mark.parametrize(("node_obj", "pod_obj", "nominated_priority", "expected"), NOMINATED)
def test_hints_count_the_nominated_pods_the_pod_yields_to(
    node_obj: dict[str, Any], pod_obj: dict[str, Any], nominated_priority: int, expected: Hints
) -> None:
    # The node runs a 1-cpu pod, and a 2-cpu pod is nominated to it (a preemption set
    # the room aside): the decision checks the node with that pod on it, so must a hint.
    state = cluster([node_obj], [using("running", "n1", cpu="1")])
    waiting = pod("waiting", priority=nominated_priority, requests={"cpu": "2"})
    state.set_nominated(parse_pod(waiting), "n1")
    before = cluster_picture(state)
    decision = decide(pod_obj, state, TOLERATING_AND_FITTING)
    assert decision.node is None
    assert cluster_picture(state) == before  # the nominated pod was on it for a trial only
    assert [(hint.change, hint.nodes) for hint in decision.hints] == expected
    # Each hint, applied, is what the decision then accepts.
    if expected == [("cpu request <= 1", ("n1",))]:
        fixed = copy.deepcopy(pod_obj)
        fixed["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1"
        assert decide(fixed, state, TOLERATING_AND_FITTING).node == "n1"


# -- what hints never do ---------------------------------------------------------------------


def live(state: ClusterState) -> dict[str, Any]:
    return copy.deepcopy(
        {
            "nodes": {name: info.node for name, info in state.nodes.items()},
            "generations": {name: info.generation for name, info in state.nodes.items()},
            "ordered": [info.name for info in state.ordered_nodes()],
            "labels": state.node_label_values,
            "images": state.image_nodes,
            "pvs": state.persistent_volumes,
            "generation": state.generation,
        }
    )


@pytest.mark.parametrize(
    ("pod_obj", "expected"),
    [
        pytest.param(
            pod("p", node_selector={"x": "1"}),
            [("label x=1", ("plain", "zoned"))],
            id="label",
        ),
        pytest.param(
            pod("p", node_selector={"only": "this"}),
            [("uncordon", ("cordoned",)), ("label only=this", ("plain", "zoned"))],
            id="uncordon",
        ),
        pytest.param(
            pod("p", requests={"cpu": "2"}),
            [("cpu request <= 1", ("plain", "zoned"))],
            id="request",
        ),
        pytest.param(
            pod("p", volumes=[claim_volume("data")]),
            [("volume data-pv in zone z2", ("zoned",))],
            id="volume zone",
        ),
    ],
)
def test_the_live_cluster_is_left_untouched(pod_obj: dict[str, Any], expected: Hints) -> None:
    state = cluster(
        [
            node(
                "cordoned",
                cpu="1",
                unschedulable=True,
                taints=[taint(UNSCHEDULABLE)],
                labels={"only": "this"},
            ),
            node("zoned", cpu="1", labels={ZONE: "z2", REGION: "r1"}),
            node("plain", cpu="1"),
        ],
        [],
        zonal_volume("z1"),
    )
    before = live(state)
    decision = decide(pod_obj, state)
    assert [(h.change, h.nodes) for h in decision.hints] == expected
    assert live(state) == before


def test_the_operator_never_computes_hints(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> list[Hint]:
        raise AssertionError("hints computed without explain")

    monkeypatch.setattr(algorithm, "fit_hints", refuse)
    state = cluster([node("n1", cpu="1")])
    decision = decide(pod("p", requests={"cpu": "2"}), state, scheduler=Scheduler(explain=False))
    assert decision.node is None and decision.hints == []


def test_the_budget_bounds_the_checks() -> None:
    state = cluster([node(f"n{i}", cpu="1") for i in range(5)])
    obj = parse_pod(pod("p", requests={"cpu": "2"}))
    failed = {name: ["Insufficient cpu"] for name in state.nodes}
    compiled = compile_policy(default_policy())
    assert fit_hints(obj, state, compiled, failed) == [
        Hint("cpu request <= 1", tuple(sorted(failed)))
    ]
    assert fit_hints(obj, state, compiled, failed, budget=2) == [
        Hint("cpu request <= 1", ("n0", "n1"))
    ]


# -- every hint, applied independently, makes its nodes feasible --------------------------


def apply_change(change: str, pod_obj: dict[str, Any], node_obj: dict[str, Any]) -> None:
    """Apply a hint's change to the raw objects, from its text alone."""
    if change == "uncordon":
        node_obj["spec"].pop("unschedulable", None)
        taints = [t for t in node_obj["spec"].get("taints", []) if t["key"] != UNSCHEDULABLE]
        node_obj["spec"]["taints"] = taints
    elif change.startswith("label "):
        labels = node_obj["metadata"]["labels"]
        for edit in change.removeprefix("label ").split(" "):
            if edit.endswith("-"):
                labels.pop(edit[:-1])
            else:
                key, _, value = edit.partition("=")
                labels[key] = value
    elif change.startswith("tolerate "):
        for text in change.removeprefix("tolerate ").split(", "):
            key_value, _, effect = text.rpartition(":")
            key, _, value = key_value.partition("=")
            toleration = {"key": key, "operator": "Equal", "value": value, "effect": effect}
            pod_obj["spec"].setdefault("tolerations", []).append(toleration)
    elif " request <= " in change:
        requests = pod_obj["spec"]["containers"][0]["resources"]["requests"]
        for part in change.split(", "):
            name, _, amount = part.partition(" request <= ")
            requests[name] = amount
    else:
        raise AssertionError(f"a change this test cannot apply: {change}")


def random_case(
    seed: int,
) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]], dict[str, Any] | None]:
    rng = random.Random(seed)
    nodes = []
    placed = []
    for i in range(rng.randint(1, 6)):
        labels = {}
        for key, values in (
            ("disktype", ("ssd", "hdd")),
            ("team", ("a", "b")),
            ("gen", ("1", "5")),
        ):
            if rng.random() < 0.5:
                labels[key] = rng.choice(values)
        taints = [
            t
            for t in (
                taint("dedicated", "gpu"),
                taint("spot", effect="NoExecute"),
                taint(UNSCHEDULABLE),
            )
            if rng.random() < 0.25
        ]
        nodes.append(
            node(
                f"n{i}",
                cpu=rng.choice(("1", "2", "4")),
                memory=rng.choice(("2Gi", "4Gi")),
                pods=rng.choice((2, 110)),
                labels=labels,
                taints=taints,
                unschedulable=rng.random() < 0.2,
                conditions=rng.choice(({"Ready": "True"}, {"Ready": "True"}, {"Ready": "False"})),
            )
        )
        for j in range(rng.randint(0, 2)):
            placed.append(
                using(
                    f"b{i}-{j}",
                    f"n{i}",
                    cpu=rng.choice(("500m", "1")),
                    memory=rng.choice(("512Mi", "1Gi")),
                )
            )
    requests = {"cpu": rng.choice(("500m", "1", "2", "3")), "memory": rng.choice(("1Gi", "3Gi"))}
    spec: dict[str, Any] = {"requests": requests}
    if rng.random() < 0.4:
        spec["node_selector"] = {"disktype": "ssd"}
    if rng.random() < 0.3:
        spec["affinity"] = required(
            [expr("gen", "Gt", "3")], [expr("team", "In", "a"), expr("disktype", "NotIn", "hdd")]
        )
    if rng.random() < 0.3:
        spec["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
    pod_obj = pod("p", **spec)
    policy_obj = rng.choice(
        (
            None,
            policy(
                [
                    "CheckNodeUnschedulable",
                    "GeneralPredicates",
                    "PodToleratesNodeNoExecuteTaints",
                    presence(["team"], rng.random() < 0.5),
                ],
                [],
                alwaysCheckAllPredicates=rng.random() < 0.5,
            ),
        )
    )
    return pod_obj, nodes, placed, policy_obj


def family_rank(change: str) -> int:
    """How much a hint changes, by its kind: the pod, then the cluster's state, then what a
    node says it is."""
    for rank, start in enumerate(("tolerate ", "", "uncordon", "volume ", "label ")):
        if start and change.startswith(start):
            return rank
    assert " request <= " in change, change
    return 1


@pytest.mark.parametrize("seed", [pytest.param(seed, id=f"seed{seed}") for seed in range(150)])
def test_every_hint_makes_each_of_its_nodes_feasible(seed: int) -> None:
    pod_obj, nodes, placed, policy_obj = random_case(seed)
    decision = decide(pod_obj, cluster(nodes, placed), policy_obj)
    if decision.node is not None:
        return
    ranks = [family_rank(hint.change) for hint in decision.hints]
    assert ranks == sorted(ranks), decision.hints  # the least change first
    for hint in decision.hints:
        assert hint.nodes == tuple(sorted(hint.nodes))
        for name in hint.nodes:
            assert name in decision.failed
            changed_pod = copy.deepcopy(pod_obj)
            changed_nodes = copy.deepcopy(nodes)
            target = next(n for n in changed_nodes if n["metadata"]["name"] == name)
            apply_change(hint.change, changed_pod, target)
            # Only that node: whether the pod fits it says nothing about the others.
            again = decide(
                changed_pod,
                cluster([target], [p for p in placed if p["spec"]["nodeName"] == name]),
                policy_obj,
            )
            assert again.node == name, (hint, again.failed)


def test_the_random_cases_do_produce_hints_of_every_kind() -> None:
    # Guards the test above against passing vacuously.
    kinds: set[str] = set()
    for seed in range(150):
        pod_obj, nodes, placed, policy_obj = random_case(seed)
        decision = decide(pod_obj, cluster(nodes, placed), policy_obj)
        for hint in decision.hints:
            kinds.add(hint.change.split(" ")[0] if " request " not in hint.change else "request")
    assert kinds >= {"uncordon", "label", "tolerate", "request"}


def test_a_volume_zone_hint_applied_by_hand_fits() -> None:
    objects = zonal_volume("z1")
    nodes = [zoned("a", "z2")]
    obj = pod("p", volumes=[claim_volume("data")])
    assert hints(obj, nodes, objects=objects) == [("volume data-pv in zone z2", ("a",))]
    moved = copy.deepcopy(objects)
    moved[0] = pv(
        "data-pv",
        labels={ZONE: "z2", REGION: "r1"},
        affinity={ZONE: ["z2"]},
        claim=("default", "data"),
        phase="Bound",
    )
    assert decide(obj, cluster(nodes, [], moved)).node == "a"
    assert parse_persistent_volume(objects[0]).labels[ZONE] == "z1"


def test_hints_are_computed_for_the_cluster_as_it_is_at_that_decision() -> None:
    # simulate assumes each decision: the second pod's hint sees the first pod's request.
    state = cluster([node("n1", cpu="2")])
    compiled = compile_policy(parse_policy(policy(["PodFitsResources"], [])))
    scheduler = Scheduler()
    first = parse_pod(pod("a", requests={"cpu": "1500m"}))
    placed = asyncio.run(scheduler.schedule(first, state, compiled))
    assert placed.node == "n1"
    state.add_pod(parse_pod(using("a", "n1", cpu="1500m")))
    second = asyncio.run(
        scheduler.schedule(parse_pod(pod("b", requests={"cpu": "1"})), state, compiled)
    )
    assert [(h.change, h.nodes) for h in second.hints] == [("cpu request <= 500m", ("n1",))]
