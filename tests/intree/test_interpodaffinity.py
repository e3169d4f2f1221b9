"""InterPodAffinity, kube-scheduler v1.30: conformance tables ported from upstream.

Filter: upstream's ``filtering_test.go`` (TestRequiredAffinitySingleNode,
TestRequiredAffinityMultipleNodes) with v1.30's reasons and codes (one reason per
status: affinity refusals are UnschedulableAndUnresolvable, the two anti-affinity ones
Unschedulable) and v1.30's order of the checks (the incoming pod's affinity, then its
anti-affinity, then the existing pods' anti-affinity: where the older tables expected
the existing pods' reason for a node failing both anti-affinity checks, v1.30 gives the
incoming pod's). Score: ``scoring_test.go`` (TestPreferredAffinity,
TestPreferredAffinityWithHardPodAffinitySymmetricWeight), normalised scores. Upstream's
pods have no namespace; here they are in ``default``.

Each case runs through the plugin's engine functions (``predicate()``, ``priority()``),
both by the definition and the fast path, and through its plugin API, which must agree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from builders import cluster
from policy_scheduler.engine.functions import CycleState, PolicySettings, is_unresolvable
from policy_scheduler.engine.interface import Code, NodeScore
from policy_scheduler.engine.intree.interpodaffinity import (
    ERR_AFFINITY_RULES_NOT_MATCH,
    ERR_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
    InterPodAffinity,
)
from policy_scheduler.objects import parse_pod
from policy_scheduler.pluginargs import InterPodAffinityArgs, plugin_args

# -- objects as kubectl shows them ------------------------------------------------------------


def node(name: str, labels: Mapping[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": dict(labels)},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": 110}},
    }


_serial = iter(range(1, 1_000_000))


def pod(
    labels: Mapping[str, str] | None = None,
    *,
    on: str | None = None,
    namespace: str = "default",
    affinity: Mapping[str, Any] | None = None,
    name: str | None = None,
) -> dict[str, Any]:
    name = name or f"pod-{next(_serial)}"
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"uid-{name}"}
    if labels:
        meta["labels"] = dict(labels)
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": "registry.example/app:1"}]}
    if on:
        spec["nodeName"] = on
    if affinity:
        spec["affinity"] = dict(affinity)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    e: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        e["values"] = list(values)
    return e


def term(
    *exprs: dict[str, Any],
    key: str | None,
    namespaces: Sequence[str] = (),
    namespace_selector: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    t: dict[str, Any] = {"labelSelector": {"matchExpressions": list(exprs)}}
    if key is not None:
        t["topologyKey"] = key
    if namespaces:
        t["namespaces"] = list(namespaces)
    if namespace_selector is not None:
        t["namespaceSelector"] = dict(namespace_selector)
    return t


def weighted(weight: int, t: dict[str, Any]) -> dict[str, Any]:
    return {"weight": weight, "podAffinityTerm": t}


def affinity(
    *,
    required: Sequence[dict[str, Any]] = (),
    anti: Sequence[dict[str, Any]] = (),
    preferred: Sequence[dict[str, Any]] = (),
    anti_preferred: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    req, pref = (
        "requiredDuringSchedulingIgnoredDuringExecution",
        "preferredDuringSchedulingIgnoredDuringExecution",
    )
    if required or preferred:
        out["podAffinity"] = {
            **({req: list(required)} if required else {}),
            **({pref: list(preferred)} if preferred else {}),
        }
    if anti or anti_preferred:
        out["podAntiAffinity"] = {
            **({req: list(anti)} if anti else {}),
            **({pref: list(anti_preferred)} if anti_preferred else {}),
        }
    return out


def affinity_args(hard_weight: int = 1, ignore_existing: bool = False) -> InterPodAffinityArgs:
    """InterPodAffinityArgs from a pluginConfig ``args`` object, as kube-scheduler reads it."""
    args = plugin_args(
        "InterPodAffinity",
        {
            "hardPodAffinityWeight": hard_weight,
            "ignorePreferredTermsOfExistingPods": ignore_existing,
        },
    )
    assert isinstance(args, InterPodAffinityArgs)
    return args


def namespace(name: str, team: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": {"team": team}},
    }


#: Upstream's four namespaces, in every case's cluster (as its informers hold them).
NAMESPACES = [
    namespace("subteam1.team1", "team1"),
    namespace("subteam2.team1", "team1"),
    namespace("subteam1.team2", "team2"),
    namespace("subteam2.team2", "team2"),
]
TEAM1 = {"matchExpressions": [{"key": "team", "operator": "In", "values": ["team1"]}]}

SCAN = {"service": "securityscan"}
S1 = {"security": "S1"}
MACHINE1 = [node("machine1", {"region": "r1", "zone": "z11"})]
CHINA, CHINA_AZ1, INDIA = {"region": "China"}, {"region": "China", "az": "az1"}, {"region": "India"}
AZ1, AZ2 = {"az": "az1"}, {"az": "az2"}
RZ = [
    node("nodeA", {"region": "r1", "zone": "z1", "hostname": "nodeA"}),
    node("nodeB", {"region": "r1", "zone": "z2", "hostname": "nodeB"}),
]
RZ_SAME_ZONE = [
    node("nodeA", {"region": "r1", "zone": "z1", "hostname": "nodeA"}),
    node("nodeB", {"region": "r1", "zone": "z1", "hostname": "nodeB"}),
]
ABC_REGIONS = [node("nodeA", CHINA), node("nodeB", CHINA_AZ1), node("nodeC", INDIA)]

OK = None
AFF = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_AFFINITY_RULES_NOT_MATCH)
ANTI = (Code.UNSCHEDULABLE, ERR_ANTI_AFFINITY_RULES_NOT_MATCH)
EXIST = (Code.UNSCHEDULABLE, ERR_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH)

IN_SCAN = expr("service", "In", "securityscan", "value2")
IN_ANTIVIRUS = expr("service", "In", "antivirusscan", "value2")

# -- Filter -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class FilterCase:
    pod: dict[str, Any]
    nodes: list[dict[str, Any]]
    want: dict[str, tuple[Code, str] | None]
    existing: list[dict[str, Any]] = field(default_factory=list)


def single(
    p: dict[str, Any], want: tuple[Code, str] | None, *existing: dict[str, Any]
) -> FilterCase:
    return FilterCase(p, MACHINE1, {"machine1": want}, list(existing))


FILTER_CASES = [
    # TestRequiredAffinitySingleNode
    pytest.param(
        single(pod(), OK),
        id="A pod without required pod affinity rules can schedule onto a node with no pods",
    ),
    pytest.param(
        single(
            pod({"security": "S1"}, affinity=affinity(required=[term(IN_SCAN, key="region")])),
            OK,
            pod(SCAN, on="machine1"),
        ),
        id="satisfies the required PodAffinity using In operator",
    ),
    pytest.param(
        single(
            pod(
                {"security": "S1"},
                affinity=affinity(
                    required=[
                        term(expr("service", "NotIn", "securityscan3", "value3"), key="region")
                    ]
                ),
            ),
            OK,
            pod(SCAN, on="machine1"),
        ),
        id="satisfies the pod with PodAffinity using not in operator in labelSelector",
    ),
    pytest.param(
        single(
            pod(
                {"security": "S1"},
                affinity=affinity(required=[term(IN_SCAN, key=None, namespaces=["DiffNameSpace"])]),
            ),
            AFF,
            pod(SCAN, on="machine1", namespace="ns"),
        ),
        id="Does not satisfy the PodAffinity with labelSelector because of diff Namespace",
    ),
    pytest.param(
        single(
            pod(SCAN, affinity=affinity(required=[term(IN_ANTIVIRUS, key=None)])),
            AFF,
            pod(SCAN, on="machine1"),
        ),
        id="Doesn't satisfy the PodAffinity: labelSelector doesn't match the existing pod",
    ),
    pytest.param(
        single(
            pod(
                {"security": "S1"},
                affinity=affinity(
                    required=[
                        term(
                            expr("service", "Exists"),
                            expr("wrongkey", "DoesNotExist"),
                            key="region",
                        ),
                        term(
                            expr("service", "In", "securityscan"),
                            expr("service", "NotIn", "WrongValue"),
                            key="region",
                        ),
                    ]
                ),
            ),
            OK,
            pod(SCAN, on="machine1"),
        ),
        id="satisfies the PodAffinity with different label Operators in multiple terms",
    ),
    pytest.param(
        single(
            pod(
                {"security": "S1"},
                affinity=affinity(
                    required=[
                        term(
                            expr("service", "Exists"),
                            expr("wrongkey", "DoesNotExist"),
                            key="region",
                        ),
                        term(
                            expr("service", "In", "securityscan2"),
                            expr("service", "NotIn", "WrongValue"),
                            key="region",
                        ),
                    ]
                ),
            ),
            AFF,
            pod(SCAN, on="machine1"),
        ),
        id="The labelSelector requirements are ANDed: one matchExpression doesn't match",
    ),
    pytest.param(
        single(
            pod(
                {"security": "S1"},
                affinity=affinity(
                    required=[term(IN_SCAN, key="region")], anti=[term(IN_ANTIVIRUS, key="node")]
                ),
            ),
            OK,
            pod(SCAN, on="machine1"),
        ),
        id="satisfies the PodAffinity and PodAntiAffinity with the existing pod",
    ),
    pytest.param(
        single(
            pod(
                {"security": "S1"},
                affinity=affinity(
                    required=[term(IN_SCAN, key="region")], anti=[term(IN_ANTIVIRUS, key="node")]
                ),
            ),
            OK,
            pod(SCAN, on="machine1", affinity=affinity(anti=[term(IN_ANTIVIRUS, key="node")])),
        ),
        id="satisfies the PodAffinity and PodAntiAffinity and PodAntiAffinity symmetry",
    ),
    pytest.param(
        single(
            pod(
                {"security": "S1"},
                affinity=affinity(
                    required=[term(IN_SCAN, key="region")], anti=[term(IN_SCAN, key="zone")]
                ),
            ),
            ANTI,
            pod(SCAN, on="machine1"),
        ),
        id="satisfies the PodAffinity but not the PodAntiAffinity with the existing pod",
    ),
    pytest.param(
        single(
            pod(
                SCAN,
                affinity=affinity(
                    required=[term(IN_SCAN, key="region")], anti=[term(IN_ANTIVIRUS, key="node")]
                ),
            ),
            EXIST,
            pod(SCAN, on="machine1", affinity=affinity(anti=[term(IN_SCAN, key="zone")])),
        ),
        id="satisfies PodAffinity and PodAntiAffinity but not PodAntiAffinity symmetry",
    ),
    pytest.param(
        single(
            pod(
                SCAN,
                affinity=affinity(
                    required=[
                        term(expr("service", "NotIn", "securityscan", "value2"), key="region")
                    ]
                ),
            ),
            AFF,
            pod(SCAN, on="machine2"),
        ),
        id="pod matches its own Label in PodAffinity and that matches the existing pod Labels",
    ),
    pytest.param(
        single(
            pod(SCAN),
            EXIST,
            pod(SCAN, on="machine1", affinity=affinity(anti=[term(IN_SCAN, key="zone")])),
        ),
        id="existing pod's PodAntiAffinity respected when pod has none; not satisfied",
    ),
    pytest.param(
        single(
            pod(SCAN),
            OK,
            pod(
                SCAN,
                on="machine1",
                affinity=affinity(
                    anti=[term(expr("service", "NotIn", "securityscan", "value2"), key="zone")]
                ),
            ),
        ),
        id="PodAntiAffinity from existing pod is respected when pod has no AntiAffinity; satisfied",
    ),
    pytest.param(
        single(
            pod(
                SCAN,
                affinity=affinity(
                    anti=[
                        term(expr("service", "Exists"), key="region"),
                        term(expr("security", "Exists"), key="region"),
                    ]
                ),
            ),
            ANTI,
            pod(
                S1,
                on="machine1",
                affinity=affinity(anti=[term(expr("security", "Exists"), key="zone")]),
            ),
        ),
        id="satisfies PodAntiAffinity with existing pod but not its symmetry with incoming pod",
    ),
    pytest.param(
        single(
            pod(
                SCAN,
                affinity=affinity(
                    anti=[
                        term(expr("service", "Exists"), key="zone"),
                        term(expr("security", "Exists"), key="zone"),
                    ]
                ),
            ),
            ANTI,
            pod(
                S1,
                on="machine1",
                affinity=affinity(anti=[term(expr("security", "Exists"), key="zone")]),
            ),
        ),
        id="PodAntiAffinity symmetry check a1: incoming and existing pod partially match",
    ),
    pytest.param(
        single(
            pod(S1, affinity=affinity(anti=[term(expr("security", "Exists"), key="zone")])),
            EXIST,
            pod(
                SCAN,
                on="machine1",
                affinity=affinity(
                    anti=[
                        term(expr("service", "Exists"), key="zone"),
                        term(expr("security", "Exists"), key="zone"),
                    ]
                ),
            ),
        ),
        id="PodAntiAffinity symmetry check a2: incoming and existing pod partially match",
    ),
    pytest.param(
        single(
            pod(
                {"abc": "", "xyz": ""},
                affinity=affinity(
                    anti=[
                        term(expr("abc", "Exists"), key="zone"),
                        term(expr("def", "Exists"), key="zone"),
                    ]
                ),
            ),
            ANTI,  # v1.30 checks the incoming pod's anti-affinity first (older tables: EXIST)
            pod(
                {"def": "", "xyz": ""},
                on="machine1",
                affinity=affinity(
                    anti=[
                        term(expr("abc", "Exists"), key="zone"),
                        term(expr("def", "Exists"), key="zone"),
                    ]
                ),
            ),
        ),
        id="PodAntiAffinity symmetry check b1: both ways refused, the incoming pod's reason first",
    ),
    pytest.param(
        single(
            pod(
                {"def": "", "xyz": ""},
                affinity=affinity(
                    anti=[
                        term(expr("abc", "Exists"), key="zone"),
                        term(expr("def", "Exists"), key="zone"),
                    ]
                ),
            ),
            ANTI,
            pod(
                {"abc": "", "xyz": ""},
                on="machine1",
                affinity=affinity(
                    anti=[
                        term(expr("abc", "Exists"), key="zone"),
                        term(expr("def", "Exists"), key="zone"),
                    ]
                ),
            ),
        ),
        id="PodAntiAffinity symmetry check b2: both ways refused, the incoming pod's reason first",
    ),
    # TestRequiredAffinityMultipleNodes
    pytest.param(
        FilterCase(
            pod(affinity=affinity(required=[term(expr("foo", "In", "bar"), key="region")])),
            [node("machine1", CHINA), node("machine2", CHINA_AZ1), node("machine3", INDIA)],
            {"machine1": OK, "machine2": OK, "machine3": AFF},
            [pod({"foo": "bar"}, on="machine1")],
        ),
        id="A pod can be scheduled onto all the nodes of the topology domain of a matching pod",
    ),
    pytest.param(
        FilterCase(
            pod(
                {"foo": "bar", "service": "securityscan"},
                affinity=affinity(
                    required=[
                        term(expr("foo", "In", "bar"), key="zone"),
                        term(expr("service", "In", "securityscan"), key="zone"),
                    ]
                ),
            ),
            [
                node("nodeA", {"zone": "az1", "hostname": "h1"}),
                node("nodeB", {"zone": "az2", "hostname": "h2"}),
            ],
            {"nodeA": OK, "nodeB": OK},
            [pod({"foo": "bar"}, on="nodeA")],
        ),
        id="The first pod of the collection is not blocked though no existing pod matches",
    ),
    pytest.param(
        FilterCase(
            pod(affinity=affinity(anti=[term(expr("foo", "In", "abc"), key="region")])),
            [
                node("nodeA", {"region": "r1", "hostname": "nodeA"}),
                node("nodeB", {"region": "r1", "hostname": "nodeB"}),
            ],
            {"nodeA": ANTI, "nodeB": ANTI},
            [pod({"foo": "abc"}, on="nodeA")],
        ),
        id="NodeA and nodeB have same topologyKey and label value: anti-affinity refuses both",
    ),
    pytest.param(
        FilterCase(
            pod(
                affinity=affinity(
                    anti=[
                        term(expr("foo", "In", "abc"), key="region"),
                        term(expr("service", "In", "securityscan"), key="zone"),
                    ]
                )
            ),
            RZ,
            {"nodeA": ANTI, "nodeB": ANTI},
            [pod({"foo": "abc", "service": "securityscan"}, on="nodeA")],
        ),
        id="anti-affinity matches a pod when any term of the anti-affinity rule matches",
    ),
    pytest.param(
        FilterCase(
            pod(affinity=affinity(anti=[term(expr("foo", "In", "abc"), key="region")])),
            ABC_REGIONS,
            {"nodeA": ANTI, "nodeB": ANTI, "nodeC": OK},
            [pod({"foo": "abc"}, on="nodeA")],
        ),
        id="anti-affinity: nodeA and nodeB refused, nodeC fits",
    ),
    pytest.param(
        FilterCase(
            pod(
                {"foo": "123"},
                namespace="NS1",
                affinity=affinity(anti=[term(expr("foo", "In", "bar"), key="region")]),
            ),
            ABC_REGIONS,
            {"nodeA": ANTI, "nodeB": ANTI, "nodeC": OK},
            [
                pod({"foo": "bar"}, on="nodeA", namespace="NS1"),
                pod(
                    on="nodeC",
                    namespace="NS2",
                    affinity=affinity(anti=[term(expr("foo", "In", "123"), key="region")]),
                ),
            ],
        ),
        id="anti-affinity of an existing pod in another namespace does not select the pod",
    ),
    pytest.param(
        FilterCase(
            pod({"foo": ""}),
            RZ_SAME_ZONE,
            {"nodeA": OK, "nodeB": OK},
            [
                pod(
                    on="nodeA",
                    affinity=affinity(anti=[term(expr("foo", "Exists"), key="invalid-node-label")]),
                )
            ],
        ),
        id="existing pod's anti-affinity with a topologyKey no node has",
    ),
    pytest.param(
        FilterCase(
            pod(affinity=affinity(anti=[term(expr("foo", "Exists"), key="invalid-node-label")])),
            RZ_SAME_ZONE,
            {"nodeA": OK, "nodeB": OK},
            [pod({"foo": ""}, on="nodeA")],
        ),
        id="incoming pod's anti-affinity: even if labelSelector matches, topologyKey must too",
    ),
    pytest.param(
        FilterCase(
            pod({"foo": "", "bar": ""}),
            RZ,
            {"nodeA": EXIST, "nodeB": EXIST},
            [
                pod(on="nodeA", affinity=affinity(anti=[term(expr("foo", "Exists"), key="zone")])),
                pod(
                    on="nodeA", affinity=affinity(anti=[term(expr("bar", "Exists"), key="region")])
                ),
            ],
        ),
        id="existing pods' anti-affinity: the pod violates each existing pod's terms on all nodes",
    ),
    pytest.param(
        FilterCase(
            pod(
                affinity=affinity(
                    anti=[
                        term(expr("foo", "Exists"), key="zone"),
                        term(expr("bar", "Exists"), key="region"),
                    ]
                )
            ),
            RZ,
            {"nodeA": ANTI, "nodeB": ANTI},
            [pod({"foo": ""}, on="nodeA"), pod({"bar": ""}, on="nodeB")],
        ),
        id="incoming pod's anti-affinity: at least one term violated on every node",
    ),
    pytest.param(
        FilterCase(
            pod({"foo": "", "bar": ""}),
            RZ,
            {"nodeA": EXIST, "nodeB": OK},
            [
                pod(
                    on="nodeA",
                    affinity=affinity(
                        anti=[
                            term(expr("foo", "Exists"), key="invalid-node-label"),
                            term(expr("bar", "Exists"), key="zone"),
                        ]
                    ),
                )
            ],
        ),
        id="existing pod's anti-affinity: one term with an invalid topologyKey",
    ),
    pytest.param(
        FilterCase(
            pod(
                affinity=affinity(
                    anti=[
                        term(expr("foo", "Exists"), key="invalid-node-label"),
                        term(expr("bar", "Exists"), key="zone"),
                    ]
                )
            ),
            RZ,
            {"nodeA": ANTI, "nodeB": OK},
            [pod({"foo": "", "bar": ""}, on="nodeA")],
        ),
        id="incoming pod's anti-affinity: one term with an invalid topologyKey",
    ),
    pytest.param(
        FilterCase(
            pod({"foo": "", "bar": ""}),
            RZ,
            {"nodeA": EXIST, "nodeB": EXIST},
            [
                pod(
                    on="nodeA",
                    affinity=affinity(
                        anti=[
                            term(expr("foo", "Exists"), key="region"),
                            term(expr("bar", "Exists"), key="zone"),
                        ]
                    ),
                )
            ],
        ),
        id="existing pod's anti-affinity: all terms with valid topologyKeys",
    ),
    pytest.param(
        FilterCase(
            pod(
                affinity=affinity(
                    anti=[
                        term(expr("foo", "Exists"), key="region"),
                        term(expr("bar", "Exists"), key="zone"),
                    ]
                )
            ),
            RZ,
            {"nodeA": ANTI, "nodeB": ANTI},
            [pod({"foo": "", "bar": ""}, on="nodeA")],
        ),
        id="incoming pod's anti-affinity: all terms with valid topologyKeys",
    ),
    pytest.param(
        FilterCase(
            pod({"foo": "", "bar": ""}),
            [*RZ, node("nodeC", {"region": "r1", "zone": "z3", "hostname": "nodeC"})],
            {"nodeA": EXIST, "nodeB": EXIST, "nodeC": OK},
            [
                pod(
                    on="nodeA",
                    affinity=affinity(
                        anti=[
                            term(expr("foo", "Exists"), key="zone"),
                            term(expr("labelA", "Exists"), key="zone"),
                        ]
                    ),
                ),
                pod(
                    on="nodeB",
                    affinity=affinity(
                        anti=[
                            term(expr("bar", "Exists"), key="zone"),
                            term(expr("labelB", "Exists"), key="zone"),
                        ]
                    ),
                ),
            ],
        ),
        id="existing pods on nodeA and nodeB each have a term selecting the pod: only nodeC fits",
    ),
    pytest.param(
        FilterCase(
            pod(
                affinity=affinity(
                    required=[
                        term(expr("foo", "Exists"), key="region"),
                        term(expr("bar", "Exists"), key="zone"),
                    ]
                )
            ),
            RZ_SAME_ZONE,
            {"nodeA": OK, "nodeB": OK},
            [pod({"foo": "", "bar": ""}, on="nodeA")],
        ),
        id="incoming pod's affinity: all terms match the pod, then all topologyKeys",
    ),
    # v1.30 rules beyond upstream's tables
    pytest.param(
        FilterCase(
            pod(
                {"app": "web"},
                affinity=affinity(required=[term(expr("app", "In", "web"), key="zone")]),
            ),
            [node("nodeA", {"zone": "z1"}), node("nodeB", {"region": "r1"})],
            {"nodeA": OK, "nodeB": AFF},
        ),
        id="the first pod of a group still needs the topology key on the node",
    ),
    pytest.param(
        FilterCase(
            pod(
                {"foo": ""}, affinity=affinity(required=[term(expr("app", "In", "db"), key="zone")])
            ),
            [node("nodeA", {"zone": "z1"})],
            {"nodeA": AFF},
            [pod(on="nodeA", affinity=affinity(anti=[term(expr("foo", "Exists"), key="zone")]))],
        ),
        id="affinity is checked before the existing pods' anti-affinity",
    ),
    pytest.param(
        FilterCase(
            pod(
                affinity=affinity(
                    required=[term(expr("foo", "In", "bar"), key="region", namespace_selector={})]
                )
            ),
            ABC_REGIONS,
            {"nodeA": OK, "nodeB": OK, "nodeC": AFF},
            [pod({"foo": "bar"}, on="nodeA", namespace="other")],
        ),
        id="an empty namespaceSelector selects pods of every namespace",
    ),
    pytest.param(
        FilterCase(
            pod({"foo": ""}, namespace="team-a"),
            ABC_REGIONS,
            {"nodeA": EXIST, "nodeB": EXIST, "nodeC": OK},
            [
                pod(
                    on="nodeA",
                    affinity=affinity(
                        anti=[term(expr("foo", "Exists"), key="region", namespace_selector={})]
                    ),
                )
            ],
        ),
        id="an existing pod's anti-affinity with an empty namespaceSelector selects any namespace",
    ),
    pytest.param(
        FilterCase(
            pod({"foo": ""}),
            ABC_REGIONS,
            {"nodeA": OK, "nodeB": OK, "nodeC": OK},
            [
                pod(
                    on="nodeA",
                    affinity=affinity(
                        anti=[
                            term(
                                expr("foo", "Exists"),
                                key="region",
                                namespace_selector={"matchLabels": {"team": "a"}},
                            )
                        ]
                    ),
                )
            ],
        ),
        # The namespaceSelector stands in for the own namespace: the term lists none.
        id="a namespaceSelector without namespaces does not default to the pod's own namespace",
    ),
    pytest.param(
        FilterCase(
            pod(
                namespace="subteam1.team1",
                affinity=affinity(
                    required=[
                        term(expr("foo", "In", "bar"), key="region", namespace_selector=TEAM1)
                    ]
                ),
            ),
            ABC_REGIONS,
            {"nodeA": OK, "nodeB": OK, "nodeC": AFF},
            [pod({"foo": "bar"}, on="nodeA", namespace="subteam2.team1")],
        ),
        id="affinity's namespaceSelector selects the namespaces by their labels",
    ),
    pytest.param(
        FilterCase(
            pod(
                namespace="subteam1.team1",
                affinity=affinity(
                    required=[
                        term(expr("foo", "In", "bar"), key="region", namespace_selector=TEAM1)
                    ]
                ),
            ),
            ABC_REGIONS,
            {"nodeA": AFF, "nodeB": AFF, "nodeC": AFF},
            [pod({"foo": "bar"}, on="nodeA", namespace="subteam1.team2")],
        ),
        id="affinity's namespaceSelector: a pod of another team's namespace does not count",
    ),
    pytest.param(
        FilterCase(
            pod({"foo": ""}, namespace="subteam1.team1"),
            ABC_REGIONS,
            {"nodeA": EXIST, "nodeB": EXIST, "nodeC": OK},
            [
                pod(
                    on="nodeA",
                    affinity=affinity(
                        anti=[term(expr("foo", "Exists"), key="region", namespace_selector=TEAM1)]
                    ),
                )
            ],
        ),
        id="an existing pod's anti-affinity selects the pod by its namespace's labels",
    ),
    pytest.param(
        FilterCase(
            pod({"foo": ""}, namespace="subteam1.team2"),
            ABC_REGIONS,
            {"nodeA": OK, "nodeB": OK, "nodeC": OK},
            [
                pod(
                    on="nodeA",
                    affinity=affinity(
                        anti=[term(expr("foo", "Exists"), key="region", namespace_selector=TEAM1)]
                    ),
                )
            ],
        ),
        id="an existing pod's anti-affinity: a namespace of another team is not selected",
    ),
    pytest.param(
        FilterCase(
            pod({"foo": ""}, namespace="unknown"),
            ABC_REGIONS,
            {"nodeA": EXIST, "nodeB": EXIST, "nodeC": OK},
            [
                pod(
                    on="nodeA",
                    affinity=affinity(
                        anti=[
                            term(
                                expr("foo", "Exists"),
                                key="region",
                                namespace_selector={
                                    "matchExpressions": [expr("team", "NotIn", "team2")]
                                },
                            )
                        ]
                    ),
                )
            ],
        ),
        # No such Namespace: its labels are read as none, which NotIn matches.
        id="an unknown namespace has no labels for an existing pod's namespaceSelector",
    ),
]


def _code(reasons: Sequence[str]) -> tuple[Code, str]:
    unresolvable = any(is_unresolvable(reason) for reason in reasons)
    return (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE if unresolvable else Code.UNSCHEDULABLE,
        ", ".join(reasons),
    )


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "plain"])
@pytest.mark.parametrize("case", FILTER_CASES)
def test_filter(case: FilterCase, fast: bool) -> None:
    state = cluster(case.nodes, case.existing, NAMESPACES)
    plugin = InterPodAffinity(None, None)  # type: ignore[arg-type]
    incoming = parse_pod(case.pod)
    settings = PolicySettings(fast=fast)
    predicate = plugin.predicate()
    cycle = CycleState(incoming, state, settings)
    engine = {}
    for name, info in state.nodes.items():
        reasons = predicate(incoming, info, cycle)
        engine[name] = _code(reasons) if reasons else None
    assert engine == case.want

    cycle = CycleState(incoming, state, settings)
    pre = plugin.pre_filter(cycle, incoming)
    public = {}
    for name, info in state.nodes.items():
        status = (
            None
            if pre is not None and pre.code is Code.SKIP
            else plugin.filter(cycle, incoming, info)
        )
        public[name] = None if status is None else (status.code, status.message)
    assert public == case.want


@pytest.mark.parametrize(
    ("raw_pod", "existing", "skipped"),
    [
        pytest.param(
            pod({"foo": ""}), [pod({"foo": ""}, on="nodeA")], True, id="no required terms anywhere"
        ),
        pytest.param(
            pod({"foo": ""}),
            [pod(on="nodeA", affinity=affinity(anti=[term(expr("bar", "Exists"), key="region")]))],
            True,
            id="an existing pod's anti-affinity that does not select the pod",
        ),
        pytest.param(
            pod({"foo": ""}),
            [pod(on="nodeA", affinity=affinity(anti=[term(expr("foo", "Exists"), key="region")]))],
            False,
            id="an existing pod's anti-affinity selecting the pod",
        ),
        pytest.param(
            pod(affinity=affinity(required=[term(expr("foo", "Exists"), key="region")])),
            [],
            False,
            id="the pod's own required affinity",
        ),
    ],
)
def test_pre_filter_skip(
    raw_pod: dict[str, Any], existing: list[dict[str, Any]], skipped: bool
) -> None:
    state = cluster(ABC_REGIONS, existing, NAMESPACES)
    plugin = InterPodAffinity(None, None)  # type: ignore[arg-type]
    incoming = parse_pod(raw_pod)
    for fast in (True, False):
        status = plugin.pre_filter(CycleState(incoming, state, PolicySettings(fast=fast)), incoming)
        assert (status is not None and status.code is Code.SKIP) is skipped


# -- Score ------------------------------------------------------------------------------------

STAY_WITH_S1_IN_REGION = affinity(
    preferred=[weighted(5, term(expr("security", "In", "S1"), key="region"))]
)
STAY_WITH_S2_IN_REGION = affinity(
    preferred=[weighted(6, term(expr("security", "In", "S2"), key="region"))]
)
AFFINITY3 = affinity(
    preferred=[
        weighted(
            8, term(expr("security", "NotIn", "S1"), expr("security", "In", "S2"), key="region")
        ),
        weighted(
            2, term(expr("security", "Exists"), expr("wrongkey", "DoesNotExist"), key="region")
        ),
    ]
)
HARD_AFFINITY = affinity(
    required=[
        term(expr("security", "In", "S1", "value2"), key="region"),
        term(expr("security", "Exists"), expr("wrongkey", "DoesNotExist"), key="region"),
    ]
)
AWAY_FROM_S1_IN_AZ = affinity(
    anti_preferred=[weighted(5, term(expr("security", "In", "S1"), key="az"))]
)
AWAY_FROM_S2_IN_AZ = affinity(
    anti_preferred=[weighted(5, term(expr("security", "In", "S2"), key="az"))]
)
STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ = affinity(
    preferred=[weighted(8, term(expr("security", "In", "S1"), key="region"))],
    anti_preferred=[weighted(5, term(expr("security", "In", "S2"), key="az"))],
)
S2 = {"security": "S2"}
AFFINITY_NS_SELECTOR = affinity(
    preferred=[
        weighted(
            5,
            term(
                expr("security", "In", "S1"),
                key="region",
                namespaces=["subteam2.team2"],
                namespace_selector=TEAM1,
            ),
        )
    ]
)
ANTI_AFFINITY_NS_SELECTOR = affinity(
    anti_preferred=[
        weighted(
            5,
            term(
                expr("security", "In", "S1"),
                key="region",
                namespaces=["subteam2.team2"],
                namespace_selector=TEAM1,
            ),
        )
    ]
)
HARD_AFFINITY_NS = affinity(
    required=[
        term(
            expr("service", "In", "S1"),
            key="region",
            namespaces=["default", "subteam2.team2"],
            namespace_selector=TEAM1,
        )
    ]
)


@dataclass(frozen=True)
class ScoreCase:
    pod: dict[str, Any]
    nodes: list[dict[str, Any]]
    #: None: PreScore skips (the plugin adds nothing to any node).
    want: dict[str, int] | None
    existing: list[dict[str, Any]] = field(default_factory=list)
    hard_weight: int = 1
    ignore_existing: bool = False


def nodes_of(*labels: Mapping[str, str]) -> list[dict[str, Any]]:
    return [node(f"node{i}", lab) for i, lab in enumerate(labels, start=1)]


SCORE_CASES = [
    # TestPreferredAffinity
    pytest.param(
        ScoreCase(pod(S1), nodes_of(CHINA, INDIA, AZ1), None),
        id="all nodes are same priority as Affinity is nil",
    ),
    pytest.param(
        ScoreCase(
            pod(S1, affinity=STAY_WITH_S1_IN_REGION),
            nodes_of(CHINA, INDIA, AZ1),
            {"node1": 100, "node2": 0, "node3": 0},
            [pod(S1, on="node1"), pod(S2, on="node2"), pod(S1, on="node3")],
        ),
        id="Affinity: pod that matches topology key & pods in nodes will get high score",
    ),
    pytest.param(
        ScoreCase(
            pod(affinity=STAY_WITH_S1_IN_REGION),
            nodes_of(CHINA, CHINA_AZ1, INDIA),
            {"node1": 100, "node2": 100, "node3": 0},
            [pod(S1, on="node1")],
        ),
        id="All the nodes that have the same topology key & label value have the same score",
    ),
    pytest.param(
        ScoreCase(
            pod(S1, affinity=STAY_WITH_S2_IN_REGION),
            nodes_of(CHINA, INDIA, CHINA, CHINA, INDIA),
            {"node1": 100, "node2": 0, "node3": 100, "node4": 100, "node5": 0},
            [
                pod(S2, on="node1"),
                pod(S2, on="node1"),
                pod(S2, on="node2"),
                pod(S2, on="node3"),
                pod(S2, on="node4"),
                pod(S2, on="node5"),
            ],
        ),
        id="Affinity: nodes in one region has more matching pods comparing to other region",
    ),
    pytest.param(
        ScoreCase(
            pod(S1, affinity=AFFINITY3),
            nodes_of(CHINA, INDIA, AZ1),
            {"node1": 20, "node2": 100, "node3": 0},
            [pod(S1, on="node1"), pod(S2, on="node2"), pod(S1, on="node3")],
        ),
        id="Affinity: different Label operators and values, including some match failures",
    ),
    pytest.param(
        ScoreCase(
            pod(S2),
            nodes_of(CHINA, INDIA, AZ1),
            {"node1": 0, "node2": 100, "node3": 0},
            [
                pod(S1, on="node1", affinity=STAY_WITH_S1_IN_REGION),
                pod(S2, on="node2", affinity=STAY_WITH_S2_IN_REGION),
            ],
        ),
        id="Affinity symmetry: considered only the preferred terms in pod affinity symmetry",
    ),
    pytest.param(
        ScoreCase(
            pod(S1),
            nodes_of(CHINA, INDIA, AZ1),
            {"node1": 100, "node2": 100, "node3": 0},
            [
                pod(S1, on="node1", affinity=HARD_AFFINITY),
                pod(S2, on="node2", affinity=HARD_AFFINITY),
            ],
        ),
        id="Affinity symmetry: considered required terms in pod affinity symmetry",
    ),
    pytest.param(
        ScoreCase(
            pod(S1, affinity=AWAY_FROM_S1_IN_AZ),
            nodes_of(AZ1, CHINA),
            {"node1": 0, "node2": 100},
            [pod(S1, on="node1"), pod(S2, on="node2")],
        ),
        id="Anti Affinity: pod that does not match existing pods in node will get high score",
    ),
    pytest.param(
        ScoreCase(
            pod(S1, affinity=AWAY_FROM_S1_IN_AZ),
            nodes_of(AZ1, CHINA),
            {"node1": 0, "node2": 100},
            [pod(S1, on="node1"), pod(S1, on="node2")],
        ),
        id="Anti Affinity: pod that does not match topology key & match the pods gets higher score",
    ),
    pytest.param(
        ScoreCase(
            pod(S1, affinity=AWAY_FROM_S1_IN_AZ),
            nodes_of(AZ1, INDIA),
            {"node1": 0, "node2": 100},
            [pod(S1, on="node1"), pod(S1, on="node1"), pod(S2, on="node2")],
        ),
        id="Anti Affinity: one node has more matching pods comparing to other node",
    ),
    pytest.param(
        ScoreCase(
            pod(S2),
            nodes_of(AZ1, AZ2),
            {"node1": 0, "node2": 100},
            [
                pod(S1, on="node1", affinity=AWAY_FROM_S2_IN_AZ),
                pod(S2, on="node2", affinity=AWAY_FROM_S1_IN_AZ),
            ],
        ),
        id="Anti Affinity symmetry: nodes whose pods' anti affinity matches score low",
    ),
    pytest.param(
        ScoreCase(
            pod(S1, affinity=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
            nodes_of(CHINA, AZ1),
            {"node1": 100, "node2": 0},
            [pod(S1, on="node1"), pod(S1, on="node2")],
        ),
        id="Affinity and Anti Affinity: considered only preferred terms in both",
    ),
    pytest.param(
        ScoreCase(
            pod(S1, affinity=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
            nodes_of(CHINA_AZ1, INDIA, CHINA, CHINA, INDIA),
            {"node1": 100, "node2": 0, "node3": 100, "node4": 100, "node5": 0},
            [
                pod(S1, on="node1"),
                pod(S1, on="node1"),
                pod(S1, on="node2"),
                pod(S1, on="node3"),
                pod(S1, on="node3"),
                pod(S1, on="node4"),
                pod(S1, on="node5"),
            ],
        ),
        id="Affinity and Anti Affinity: the pod to schedule and existing pods have the same labels",
    ),
    pytest.param(
        ScoreCase(
            pod(S1, affinity=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
            nodes_of(CHINA, AZ1, INDIA, AZ2),
            {"node1": 100, "node2": 0, "node3": 100, "node4": 0},
            [
                pod(S1, on="node1"),
                pod(S2, on="node2"),
                pod(on="node3", affinity=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
                pod(on="node4", affinity=AWAY_FROM_S1_IN_AZ),
            ],
        ),
        id="Affinity and Anti Affinity and symmetry: preferred terms in all of them",
    ),
    pytest.param(
        ScoreCase(
            pod(S1),
            nodes_of(CHINA, CHINA),
            {"node1": 0, "node2": 0},
            [
                pod(S1, on="node1"),
                pod(on="node2", affinity=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
            ],
        ),
        id="Avoid panic when partial nodes in a topology don't have pods with affinity",
    ),
    pytest.param(
        ScoreCase(
            pod(S2),
            nodes_of(CHINA, INDIA),
            None,
            [
                pod(S1, on="node1", affinity=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
                pod(S2, on="node2", affinity=STAY_WITH_S2_IN_REGION),
            ],
            ignore_existing=True,
        ),
        id="Ignore preferred terms of existing pods",
    ),
    pytest.param(
        ScoreCase(
            pod(S2),
            nodes_of(CHINA, INDIA),
            {"node1": 0, "node2": 100},
            [
                pod(S1, on="node1", affinity=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
                pod(S2, on="node2", affinity=STAY_WITH_S2_IN_REGION),
            ],
        ),
        id="Do not ignore preferred terms of existing pods",
    ),
    pytest.param(ScoreCase(pod(S2), [], None), id="No nodes to score"),
    # TestPreferredAffinityWithHardPodAffinitySymmetricWeight (namespaces listed)
    pytest.param(
        ScoreCase(
            pod({"service": "S1"}),
            nodes_of(CHINA, INDIA, AZ1),
            {"node1": 100, "node2": 100, "node3": 0},
            [
                pod(
                    on="node1",
                    affinity=affinity(
                        required=[
                            term(
                                expr("service", "In", "S1"),
                                key="region",
                                namespaces=["default", "subteam2.team2"],
                                namespace_selector={
                                    "matchExpressions": [expr("team", "In", "team1")]
                                },
                            )
                        ]
                    ),
                ),
                pod(
                    on="node2",
                    affinity=affinity(
                        required=[
                            term(
                                expr("service", "In", "S1"),
                                key="region",
                                namespaces=["default", "subteam2.team2"],
                                namespace_selector={
                                    "matchExpressions": [expr("team", "In", "team1")]
                                },
                            )
                        ]
                    ),
                ),
            ],
        ),
        id="hard pod affinity symmetric weight: with default weight",
    ),
    pytest.param(
        ScoreCase(
            pod({"service": "S1"}),
            nodes_of(CHINA, INDIA, AZ1),
            None,
            [
                pod(
                    on="node1",
                    affinity=affinity(required=[term(expr("service", "In", "S1"), key="region")]),
                ),
                pod(
                    on="node2",
                    affinity=affinity(required=[term(expr("service", "In", "S1"), key="region")]),
                ),
            ],
            hard_weight=0,
        ),
        id="hard pod affinity symmetric weight: with zero weight",
    ),
    pytest.param(
        ScoreCase(
            pod({"service": "S1"}, namespace="subteam1.team2"),
            nodes_of(CHINA, INDIA, AZ1),
            None,
            [
                pod(
                    on="node1",
                    affinity=affinity(
                        required=[
                            term(
                                expr("service", "In", "S1"),
                                key="region",
                                namespaces=["default", "subteam2.team2"],
                                namespace_selector={
                                    "matchExpressions": [expr("team", "In", "team1")]
                                },
                            )
                        ]
                    ),
                ),
                pod(
                    on="node2",
                    affinity=affinity(
                        required=[
                            term(
                                expr("service", "In", "S1"),
                                key="region",
                                namespaces=["default", "subteam2.team2"],
                                namespace_selector={
                                    "matchExpressions": [expr("team", "In", "team1")]
                                },
                            )
                        ]
                    ),
                ),
            ],
        ),
        id="hard pod affinity symmetric weight: with no matching namespace",
    ),
    pytest.param(
        ScoreCase(
            pod({"service": "S1"}, namespace="subteam2.team2"),
            nodes_of(CHINA, INDIA, AZ1),
            {"node1": 100, "node2": 100, "node3": 0},
            [
                pod(
                    on="node1",
                    affinity=affinity(
                        required=[
                            term(
                                expr("service", "In", "S1"),
                                key="region",
                                namespaces=["default", "subteam2.team2"],
                                namespace_selector={
                                    "matchExpressions": [expr("team", "In", "team1")]
                                },
                            )
                        ]
                    ),
                ),
                pod(
                    on="node2",
                    affinity=affinity(
                        required=[
                            term(
                                expr("service", "In", "S1"),
                                key="region",
                                namespaces=["default", "subteam2.team2"],
                                namespace_selector={
                                    "matchExpressions": [expr("team", "In", "team1")]
                                },
                            )
                        ]
                    ),
                ),
            ],
        ),
        id="hard pod affinity symmetric weight: with matching Namespaces",
    ),
    pytest.param(
        ScoreCase(
            pod({"service": "S1"}, namespace="subteam1.team1"),
            nodes_of(CHINA, INDIA, AZ1),
            {"node1": 100, "node2": 100, "node3": 0},
            [
                pod(on="node1", affinity=HARD_AFFINITY_NS),
                pod(on="node2", affinity=HARD_AFFINITY_NS),
            ],
        ),
        id="hard pod affinity symmetric weight: with matching NamespaceSelector",
    ),
    # TestPreferredAffinity's namespaceSelector cases
    pytest.param(
        ScoreCase(
            pod(S1, namespace="subteam1.team1"),
            nodes_of(CHINA, INDIA, AZ1),
            {"node1": 100, "node2": 0, "node3": 0},
            [
                pod(S1, on="node1", affinity=AFFINITY_NS_SELECTOR),
                pod(S2, on="node2", affinity=STAY_WITH_S2_IN_REGION),
            ],
        ),
        id="Affinity symmetry with namespace selector",
    ),
    pytest.param(
        ScoreCase(
            pod(S1, namespace="subteam1.team1"),
            nodes_of(CHINA, INDIA, AZ1),
            {"node1": 0, "node2": 100, "node3": 100},
            [
                pod(S1, on="node1", affinity=ANTI_AFFINITY_NS_SELECTOR),
                pod(S2, on="node2", affinity=STAY_WITH_S2_IN_REGION),
            ],
        ),
        id="AntiAffinity symmetry with namespace selector",
    ),
    pytest.param(
        ScoreCase(
            pod(S1, namespace="subteam1.team1", affinity=AFFINITY_NS_SELECTOR),
            nodes_of(CHINA, INDIA),
            {"node1": 100, "node2": 0},
            [
                pod(S1, on="node1", namespace="subteam1.team1"),
                pod(S1, on="node1", namespace="subteam1.team1"),
                pod(S1, on="node1", namespace="subteam1.team2"),
                pod(S1, on="node2", namespace="subteam2.team1"),
            ],
        ),
        id="Affinity with pods matching NamespaceSelector",
    ),
    pytest.param(
        ScoreCase(
            pod(S1, namespace="subteam1.team1", affinity=AFFINITY_NS_SELECTOR),
            nodes_of(CHINA, INDIA),
            {"node1": 100, "node2": 0},
            [
                pod(S1, on="node1", namespace="subteam1.team1"),
                pod(S1, on="node1", namespace="subteam1.team1"),
                pod(S1, on="node1", namespace="subteam2.team2"),
                pod(S1, on="node2", namespace="subteam2.team1"),
            ],
        ),
        id="Affinity with pods matching both NamespaceSelector and Namespaces fields",
    ),
    pytest.param(
        ScoreCase(
            pod(S1, namespace="subteam1.team1", affinity=ANTI_AFFINITY_NS_SELECTOR),
            nodes_of(CHINA, INDIA),
            {"node1": 0, "node2": 100},
            [
                pod(S1, on="node1", namespace="subteam1.team1"),
                pod(S1, on="node1", namespace="subteam1.team1"),
                pod(S1, on="node1", namespace="subteam1.team2"),
                pod(S1, on="node2", namespace="subteam2.team1"),
            ],
        ),
        id="AntiAffinity with pods matching NamespaceSelector",
    ),
    pytest.param(
        ScoreCase(
            pod(S1, namespace="subteam1.team1", affinity=ANTI_AFFINITY_NS_SELECTOR),
            nodes_of(CHINA, INDIA),
            {"node1": 0, "node2": 100},
            [
                pod(S1, on="node1", namespace="subteam1.team1"),
                pod(S1, on="node1", namespace="subteam1.team1"),
                pod(S1, on="node1", namespace="subteam2.team2"),
                pod(S1, on="node2", namespace="subteam2.team1"),
            ],
        ),
        id="AntiAffinity with pods matching both NamespaceSelector and Namespaces fields",
    ),
    # v1.30 rules beyond upstream's tables
    pytest.param(
        ScoreCase(
            pod(S1, affinity=STAY_WITH_S2_IN_REGION),
            nodes_of(CHINA, INDIA, AZ1),
            {"node1": 45, "node2": 100, "node3": 0},
            [pod(S2, on="node2"), pod(on="node3", affinity=AWAY_FROM_S1_IN_AZ)],
            ignore_existing=True,
        ),
        # China 0, India +6, az1 -5: the existing pod's preferred anti-affinity still counts
        # since the pod has preferred terms; int(100 * 5 / 11) = 45.
        id="ignorePreferredTermsOfExistingPods does not ignore them for a pod with preferred terms",
    ),
    pytest.param(
        ScoreCase(
            pod(
                S1,
                affinity=affinity(
                    preferred=[weighted(3, term(expr("security", "In", "S1"), key="region"))]
                ),
            ),
            nodes_of(CHINA, INDIA),
            {"node1": 0, "node2": 100},
            [pod(S1, on="node1"), pod(S1, on="node2"), pod(S1, on="node2")],
        ),
        # Scores 3 and 6: min and max are the scored nodes' own (v1.30; v1.17 started both
        # at 0 and gave node1 50).
        id="normalised between the lowest and the highest score",
    ),
]


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "plain"])
@pytest.mark.parametrize("case", SCORE_CASES)
def test_score(case: ScoreCase, fast: bool) -> None:
    state = cluster(case.nodes, case.existing, NAMESPACES)
    plugin = InterPodAffinity(affinity_args(case.hard_weight, case.ignore_existing), None)  # type: ignore[arg-type]
    incoming = parse_pod(case.pod)
    settings = PolicySettings(fast=fast)
    feasible = list(state.nodes.values())
    engine = plugin.priority()(incoming, feasible, CycleState(incoming, state, settings))
    cycle = CycleState(incoming, state, settings)
    status = plugin.pre_score(cycle, incoming, feasible)
    if case.want is None:
        assert status is not None and status.code is Code.SKIP
        assert engine == [0] * len(feasible)
        return
    assert status is None
    assert dict(zip(state.nodes, engine, strict=True)) == case.want
    listed = []
    for info in feasible:
        score = plugin.score(cycle, incoming, info)
        assert isinstance(score, int)
        listed.append(NodeScore(info.name, score))
    assert plugin.normalize_score(cycle, incoming, listed) is None
    assert [entry.score for entry in listed] == engine
