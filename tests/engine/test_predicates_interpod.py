"""MatchInterPodAffinity: upstream's TestInterPodAffinity and TestInterPodAffinityWithMultipleNodes.

The tables are ported from kube-scheduler v1.13-v1.17
(pkg/scheduler/algorithm/predicates/predicates_test.go), run through our parsers and
the real predicate; a few end-to-end cases go through ``decide()``.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest

import builders
from builders import cluster, cycle, decide, node, parsed_pod, pod, policy
from policy_scheduler import names
from policy_scheduler.engine import compiler
from policy_scheduler.engine.functions import PolicySettings
from policy_scheduler.engine.predicates import interpod
from policy_scheduler.engine.predicates.interpod import (
    AFFINITY_FAILED,
    ANTI_AFFINITY_FAILED,
    EXISTING_ANTI_AFFINITY_FAILED,
    match_inter_pod_affinity,
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


FITS: tuple[str, ...] = ()

SERVICE_SCAN = {"service": "securityscan"}
SECURITY_S1 = {"security": "S1"}
MACHINE1_LABELS = {"region": "r1", "zone": "z11"}
CHINA = {"region": "China"}
CHINA_AZ1 = {"region": "China", "az": "az1"}
INDIA = {"region": "India"}
US = {"region": "US"}


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    return out


def term(
    *exprs: dict[str, Any], topology: str = "", namespaces: list[str] | None = None
) -> dict[str, Any]:
    """A PodAffinityTerm; an empty topology key stays absent, as in upstream's tables."""
    out: dict[str, Any] = {"labelSelector": {"matchExpressions": list(exprs)}}
    if topology:
        out["topologyKey"] = topology
    if namespaces is not None:
        out["namespaces"] = namespaces
    return out


def affinity(
    required: list[dict[str, Any]] | None = None,
    anti: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    key = "requiredDuringSchedulingIgnoredDuringExecution"
    if required is not None:
        out["podAffinity"] = {key: required}
    if anti is not None:
        out["podAntiAffinity"] = {key: anti}
    return out


def placed(
    name: str, node_name: str, labels: dict[str, str] | None = None, **kw: Any
) -> dict[str, Any]:
    return pod(name, node_name=node_name, labels=labels, **kw)


def check_nodes(
    incoming: dict[str, Any], nodes: list[dict[str, Any]], pods: list[dict[str, Any]]
) -> dict[str, tuple[str, ...]]:
    """Run the predicate on every node with one cycle, as one scheduling attempt does."""
    state = cluster(nodes, pods)
    the_pod = parse_pod(incoming)
    cyc = cycle(the_pod, state)
    return {
        name: tuple(match_inter_pod_affinity(the_pod, info, cyc))
        for name, info in state.nodes.items()
    }


# -- TestInterPodAffinity: one node (machine1: region=r1, zone=z11) ----------------------

SINGLE_NODE_CASES = [
    pytest.param(
        pod("p"),
        [],
        FITS,
        id="no required pod affinity fits a node with no existing pods",
    ),
    pytest.param(
        pod(
            "p",
            labels=SECURITY_S1,
            affinity=affinity(
                [term(expr("service", "In", "securityscan", "value2"), topology="region")]
            ),
        ),
        [placed("e", "machine1", SERVICE_SCAN)],
        FITS,
        id="affinity In operator matches the existing pod",
    ),
    pytest.param(
        pod(
            "p",
            labels=SECURITY_S1,
            affinity=affinity(
                [term(expr("service", "NotIn", "securityscan3", "value3"), topology="region")]
            ),
        ),
        [placed("e", "machine1", SERVICE_SCAN)],
        FITS,
        id="affinity NotIn operator matches the existing pod",
    ),
    pytest.param(
        pod(
            "p",
            labels=SECURITY_S1,
            affinity=affinity(
                [
                    term(
                        expr("service", "In", "securityscan", "value2"),
                        namespaces=["DiffNameSpace"],
                    )
                ]
            ),
        ),
        [placed("e", "machine1", SERVICE_SCAN, namespace="ns")],
        AFFINITY_FAILED,
        id="affinity not satisfied: existing pod in another namespace",
    ),
    pytest.param(
        pod(
            "p",
            labels=SERVICE_SCAN,
            affinity=affinity([term(expr("service", "In", "antivirusscan", "value2"))]),
        ),
        [placed("e", "machine1", SERVICE_SCAN)],
        AFFINITY_FAILED,
        id="affinity not satisfied: selector does not match the existing pod",
    ),
    pytest.param(
        pod(
            "p",
            labels=SECURITY_S1,
            affinity=affinity(
                [
                    term(
                        expr("service", "Exists"),
                        expr("wrongkey", "DoesNotExist"),
                        topology="region",
                    ),
                    term(
                        expr("service", "In", "securityscan"),
                        expr("service", "NotIn", "WrongValue"),
                        topology="region",
                    ),
                ]
            ),
        ),
        [placed("e", "machine1", SERVICE_SCAN)],
        FITS,
        id="several terms with Exists, DoesNotExist, In, NotIn all match",
    ),
    pytest.param(
        pod(
            "p",
            labels=SECURITY_S1,
            affinity=affinity(
                [
                    term(
                        expr("service", "Exists"),
                        expr("wrongkey", "DoesNotExist"),
                        topology="region",
                    ),
                    term(
                        expr("service", "In", "securityscan2"),
                        expr("service", "NotIn", "WrongValue"),
                        topology="region",
                    ),
                ]
            ),
        ),
        [placed("e", "machine1", SERVICE_SCAN)],
        AFFINITY_FAILED,
        id="matchExpressions are ANDed: one failing expression fails the term",
    ),
    pytest.param(
        pod(
            "p",
            labels=SECURITY_S1,
            affinity=affinity(
                [term(expr("service", "In", "securityscan", "value2"), topology="region")],
                [term(expr("service", "In", "antivirusscan", "value2"), topology="node")],
            ),
        ),
        [placed("e", "machine1", SERVICE_SCAN)],
        FITS,
        id="affinity and anti-affinity both satisfied",
    ),
    pytest.param(
        pod(
            "p",
            labels=SECURITY_S1,
            affinity=affinity(
                [term(expr("service", "In", "securityscan", "value2"), topology="region")],
                [term(expr("service", "In", "antivirusscan", "value2"), topology="node")],
            ),
        ),
        [
            placed(
                "e",
                "machine1",
                SERVICE_SCAN,
                affinity=affinity(
                    anti=[term(expr("service", "In", "antivirusscan", "value2"), topology="node")]
                ),
            )
        ],
        FITS,
        id="affinity, anti-affinity and anti-affinity symmetry all satisfied",
    ),
    pytest.param(
        pod(
            "p",
            labels=SECURITY_S1,
            affinity=affinity(
                [term(expr("service", "In", "securityscan", "value2"), topology="region")],
                [term(expr("service", "In", "securityscan", "value2"), topology="zone")],
            ),
        ),
        [placed("e", "machine1", SERVICE_SCAN)],
        ANTI_AFFINITY_FAILED,
        id="affinity satisfied but anti-affinity not",
    ),
    pytest.param(
        pod(
            "p",
            labels=SERVICE_SCAN,
            affinity=affinity(
                [term(expr("service", "In", "securityscan", "value2"), topology="region")],
                [term(expr("service", "In", "antivirusscan", "value2"), topology="node")],
            ),
        ),
        [
            placed(
                "e",
                "machine1",
                SERVICE_SCAN,
                affinity=affinity(
                    anti=[term(expr("service", "In", "securityscan", "value2"), topology="zone")]
                ),
            )
        ],
        EXISTING_ANTI_AFFINITY_FAILED,
        id="affinity and anti-affinity satisfied but anti-affinity symmetry not",
    ),
    pytest.param(
        pod(
            "p",
            labels=SERVICE_SCAN,
            affinity=affinity(
                [term(expr("service", "NotIn", "securityscan", "value2"), topology="region")]
            ),
        ),
        [placed("e", "machine2", SERVICE_SCAN)],
        AFFINITY_FAILED,
        id="pod does not match its own NotIn affinity: no first-of-group pass",
    ),
    pytest.param(
        pod("p", labels=SERVICE_SCAN),
        [
            placed(
                "e",
                "machine1",
                SERVICE_SCAN,
                affinity=affinity(
                    anti=[term(expr("service", "In", "securityscan", "value2"), topology="zone")]
                ),
            )
        ],
        EXISTING_ANTI_AFFINITY_FAILED,
        id="existing pod's anti-affinity applies to a pod without affinity",
    ),
    pytest.param(
        pod("p", labels=SERVICE_SCAN),
        [
            placed(
                "e",
                "machine1",
                SERVICE_SCAN,
                affinity=affinity(
                    anti=[term(expr("service", "NotIn", "securityscan", "value2"), topology="zone")]
                ),
            )
        ],
        FITS,
        id="existing pod's NotIn anti-affinity does not select the pod",
    ),
    pytest.param(
        pod(
            "p",
            labels=SERVICE_SCAN,
            affinity=affinity(
                anti=[
                    term(expr("service", "Exists"), topology="region"),
                    term(expr("security", "Exists"), topology="region"),
                ]
            ),
        ),
        [
            placed(
                "e",
                "machine1",
                SECURITY_S1,
                affinity=affinity(anti=[term(expr("security", "Exists"), topology="zone")]),
            )
        ],
        ANTI_AFFINITY_FAILED,
        id="symmetry satisfied but the pod's own anti-affinity selects the existing pod",
    ),
    pytest.param(
        pod(
            "p",
            labels=SERVICE_SCAN,
            affinity=affinity(
                anti=[
                    term(expr("service", "Exists"), topology="zone"),
                    term(expr("security", "Exists"), topology="zone"),
                ]
            ),
        ),
        [
            placed(
                "e",
                "machine1",
                SECURITY_S1,
                affinity=affinity(anti=[term(expr("security", "Exists"), topology="zone")]),
            )
        ],
        ANTI_AFFINITY_FAILED,
        id="symmetry a1: pods partially match each other",
    ),
    pytest.param(
        pod(
            "p",
            labels=SECURITY_S1,
            affinity=affinity(anti=[term(expr("security", "Exists"), topology="zone")]),
        ),
        [
            placed(
                "e",
                "machine1",
                SERVICE_SCAN,
                affinity=affinity(
                    anti=[
                        term(expr("service", "Exists"), topology="zone"),
                        term(expr("security", "Exists"), topology="zone"),
                    ]
                ),
            )
        ],
        EXISTING_ANTI_AFFINITY_FAILED,
        id="symmetry a2: pods partially match each other",
    ),
    pytest.param(
        pod(
            "p",
            labels={"abc": "", "xyz": ""},
            affinity=affinity(
                anti=[
                    term(expr("abc", "Exists"), topology="zone"),
                    term(expr("def", "Exists"), topology="zone"),
                ]
            ),
        ),
        [
            placed(
                "e",
                "machine1",
                {"def": "", "xyz": ""},
                affinity=affinity(
                    anti=[
                        term(expr("abc", "Exists"), topology="zone"),
                        term(expr("def", "Exists"), topology="zone"),
                    ]
                ),
            )
        ],
        EXISTING_ANTI_AFFINITY_FAILED,
        id="symmetry b1: pods partially match each other",
    ),
    pytest.param(
        pod(
            "p",
            labels={"def": "", "xyz": ""},
            affinity=affinity(
                anti=[
                    term(expr("abc", "Exists"), topology="zone"),
                    term(expr("def", "Exists"), topology="zone"),
                ]
            ),
        ),
        [
            placed(
                "e",
                "machine1",
                {"abc": "", "xyz": ""},
                affinity=affinity(
                    anti=[
                        term(expr("abc", "Exists"), topology="zone"),
                        term(expr("def", "Exists"), topology="zone"),
                    ]
                ),
            )
        ],
        EXISTING_ANTI_AFFINITY_FAILED,
        id="symmetry b2: pods partially match each other",
    ),
]


@pytest.mark.parametrize(("incoming", "pods", "expected"), SINGLE_NODE_CASES)
def test_inter_pod_affinity_single_node(
    incoming: dict[str, Any], pods: list[dict[str, Any]], expected: tuple[str, ...]
) -> None:
    # Pods on machine2 reference a node the cluster does not know: they count nowhere,
    # as upstream's test keeps only machine1 in its node map.
    result = check_nodes(incoming, [node("machine1", labels=MACHINE1_LABELS)], pods)
    assert result["machine1"] == expected


# -- TestInterPodAffinityWithMultipleNodes ---------------------------------------------

R1Z1 = {"region": "r1", "zone": "z1"}
R1Z2 = {"region": "r1", "zone": "z2"}
R1Z3 = {"region": "r1", "zone": "z3"}

MULTI_NODE_CASES = [
    pytest.param(
        pod("p", affinity=affinity([term(expr("foo", "In", "bar"), topology="region")])),
        [placed("p1", "machine1", {"foo": "bar"})],
        [("machine1", CHINA), ("machine2", CHINA_AZ1), ("machine3", INDIA)],
        {"machine1": FITS, "machine2": FITS, "machine3": AFFINITY_FAILED},
        id="every node in the matching pod's region fits",
    ),
    pytest.param(
        pod("p", affinity=affinity([term(expr("foo", "In", "abc"), topology="region")])),
        [placed("a", "nodeA", {"foo": "abc"}), placed("b", "nodeB", {"foo": "def"})],
        [
            ("nodeA", {"region": "r1", "hostname": "h1"}),
            ("nodeB", {"region": "r1", "hostname": "h2"}),
        ],
        {"nodeA": FITS, "nodeB": FITS},
        id="nodes sharing the region of a matching pod both satisfy the affinity",
    ),
    pytest.param(
        pod(
            "p",
            labels={"foo": "bar", "service": "securityscan"},
            affinity=affinity(
                [
                    term(expr("foo", "In", "bar"), topology="zone"),
                    term(expr("service", "In", "securityscan"), topology="zone"),
                ]
            ),
        ),
        [placed("p1", "nodeA", {"foo": "bar"})],
        [
            ("nodeA", {"zone": "az1", "hostname": "h1"}),
            ("nodeB", {"zone": "az2", "hostname": "h2"}),
        ],
        {"nodeA": FITS, "nodeB": FITS},
        id="first pod of a collection with affinity to itself is not blocked",
    ),
    pytest.param(
        pod("p", affinity=affinity(anti=[term(expr("foo", "In", "abc"), topology="region")])),
        [placed("a", "nodeA", {"foo": "abc"})],
        [
            ("nodeA", {"region": "r1", "hostname": "nodeA"}),
            ("nodeB", {"region": "r1", "hostname": "nodeB"}),
        ],
        {"nodeA": ANTI_AFFINITY_FAILED, "nodeB": ANTI_AFFINITY_FAILED},
        id="anti-affinity forbids the whole region of the matching pod",
    ),
    pytest.param(
        pod(
            "p",
            affinity=affinity(
                anti=[
                    term(expr("foo", "In", "abc"), topology="region"),
                    term(expr("service", "In", "securityscan"), topology="zone"),
                ]
            ),
        ),
        [placed("a", "nodeA", {"foo": "abc", "service": "securityscan"})],
        [("nodeA", {**R1Z1, "hostname": "nodeA"}), ("nodeB", {**R1Z2, "hostname": "nodeB"})],
        {"nodeA": ANTI_AFFINITY_FAILED, "nodeB": ANTI_AFFINITY_FAILED},
        id="anti-affinity matches when any term matches",
    ),
    pytest.param(
        pod("p", affinity=affinity(anti=[term(expr("foo", "In", "abc"), topology="region")])),
        [placed("a", "nodeA", {"foo": "abc"})],
        [("nodeA", CHINA), ("nodeB", CHINA_AZ1), ("nodeC", INDIA)],
        {"nodeA": ANTI_AFFINITY_FAILED, "nodeB": ANTI_AFFINITY_FAILED, "nodeC": FITS},
        id="anti-affinity region: only the other region fits",
    ),
    pytest.param(
        pod(
            "p",
            labels={"foo": "123"},
            affinity=affinity(anti=[term(expr("foo", "In", "bar"), topology="region")]),
        ),
        [
            placed("a", "nodeA", {"foo": "bar"}),
            placed(
                "c",
                "nodeC",
                affinity=affinity(anti=[term(expr("foo", "In", "123"), topology="region")]),
            ),
        ],
        [("nodeA", CHINA), ("nodeB", CHINA_AZ1), ("nodeC", INDIA), ("nodeD", US)],
        {
            "nodeA": ANTI_AFFINITY_FAILED,
            "nodeB": ANTI_AFFINITY_FAILED,
            "nodeC": EXISTING_ANTI_AFFINITY_FAILED,
            "nodeD": FITS,
        },
        id="own anti-affinity blocks one region, an existing pod's another",
    ),
    pytest.param(
        pod(
            "p",
            namespace="NS1",
            labels={"foo": "123"},
            affinity=affinity(anti=[term(expr("foo", "In", "bar"), topology="region")]),
        ),
        [
            placed("a", "nodeA", {"foo": "bar"}, namespace="NS1"),
            placed(
                "c",
                "nodeC",
                namespace="NS2",
                affinity=affinity(anti=[term(expr("foo", "In", "123"), topology="region")]),
            ),
        ],
        [("nodeA", CHINA), ("nodeB", CHINA_AZ1), ("nodeC", INDIA)],
        {"nodeA": ANTI_AFFINITY_FAILED, "nodeB": ANTI_AFFINITY_FAILED, "nodeC": FITS},
        id="existing pod's anti-affinity only looks in its own namespace",
    ),
    pytest.param(
        pod("p", labels={"foo": ""}),
        [
            placed(
                "a",
                "nodeA",
                affinity=affinity(
                    anti=[term(expr("foo", "Exists"), topology="invalid-node-label")]
                ),
            )
        ],
        [("nodeA", {**R1Z1, "hostname": "nodeA"}), ("nodeB", {**R1Z1, "hostname": "nodeB"})],
        {"nodeA": FITS, "nodeB": FITS},
        id="existing pod's anti-affinity on a topology key no node has blocks nothing",
    ),
    pytest.param(
        pod(
            "p",
            affinity=affinity(anti=[term(expr("foo", "Exists"), topology="invalid-node-label")]),
        ),
        [placed("a", "nodeA", {"foo": ""})],
        [("nodeA", {**R1Z1, "hostname": "nodeA"}), ("nodeB", {**R1Z1, "hostname": "nodeB"})],
        {"nodeA": FITS, "nodeB": FITS},
        id="own anti-affinity on a topology key no node has blocks nothing",
    ),
    pytest.param(
        pod("p", labels={"foo": "", "bar": ""}),
        [
            placed(
                "pod1",
                "nodeA",
                affinity=affinity(anti=[term(expr("foo", "Exists"), topology="zone")]),
            ),
            placed(
                "pod2",
                "nodeA",
                affinity=affinity(anti=[term(expr("bar", "Exists"), topology="region")]),
            ),
        ],
        [("nodeA", {**R1Z1, "hostname": "nodeA"}), ("nodeB", {**R1Z2, "hostname": "nodeB"})],
        {"nodeA": EXISTING_ANTI_AFFINITY_FAILED, "nodeB": EXISTING_ANTI_AFFINITY_FAILED},
        id="each existing pod's anti-affinity forbids its own domain",
    ),
    pytest.param(
        pod(
            "p",
            affinity=affinity(
                anti=[
                    term(expr("foo", "Exists"), topology="zone"),
                    term(expr("bar", "Exists"), topology="region"),
                ]
            ),
        ),
        [placed("a", "nodeA", {"foo": ""}), placed("b", "nodeB", {"bar": ""})],
        [("nodeA", {**R1Z1, "hostname": "nodeA"}), ("nodeB", {**R1Z2, "hostname": "nodeB"})],
        {"nodeA": ANTI_AFFINITY_FAILED, "nodeB": ANTI_AFFINITY_FAILED},
        id="own anti-affinity: violating one term is enough",
    ),
    pytest.param(
        pod("p", labels={"foo": "", "bar": ""}),
        [
            placed(
                "a",
                "nodeA",
                affinity=affinity(
                    anti=[
                        term(expr("foo", "Exists"), topology="invalid-node-label"),
                        term(expr("bar", "Exists"), topology="zone"),
                    ]
                ),
            )
        ],
        [("nodeA", {**R1Z1, "hostname": "nodeA"}), ("nodeB", {**R1Z2, "hostname": "nodeB"})],
        {"nodeA": EXISTING_ANTI_AFFINITY_FAILED, "nodeB": FITS},
        id="existing pod's term counts only when selector and topology key both match",
    ),
    pytest.param(
        pod(
            "p",
            affinity=affinity(
                anti=[
                    term(expr("foo", "Exists"), topology="invalid-node-label"),
                    term(expr("bar", "Exists"), topology="zone"),
                ]
            ),
        ),
        [placed("podA", "nodeA", {"foo": "", "bar": ""})],
        [("nodeA", {**R1Z1, "hostname": "nodeA"}), ("nodeB", {**R1Z2, "hostname": "nodeB"})],
        {"nodeA": ANTI_AFFINITY_FAILED, "nodeB": FITS},
        id="own term counts only when selector and topology key both match",
    ),
    pytest.param(
        pod("p", labels={"foo": "", "bar": ""}),
        [
            placed(
                "a",
                "nodeA",
                affinity=affinity(
                    anti=[
                        term(expr("foo", "Exists"), topology="region"),
                        term(expr("bar", "Exists"), topology="zone"),
                    ]
                ),
            )
        ],
        [("nodeA", {**R1Z1, "hostname": "nodeA"}), ("nodeB", {**R1Z2, "hostname": "nodeB"})],
        {"nodeA": EXISTING_ANTI_AFFINITY_FAILED, "nodeB": EXISTING_ANTI_AFFINITY_FAILED},
        id="existing pod's anti-affinity: all terms with valid topology keys",
    ),
    pytest.param(
        pod(
            "p",
            affinity=affinity(
                anti=[
                    term(expr("foo", "Exists"), topology="region"),
                    term(expr("bar", "Exists"), topology="zone"),
                ]
            ),
        ),
        [placed("a", "nodeA", {"foo": "", "bar": ""})],
        [("nodeA", {**R1Z1, "hostname": "nodeA"}), ("nodeB", {**R1Z2, "hostname": "nodeB"})],
        {"nodeA": ANTI_AFFINITY_FAILED, "nodeB": ANTI_AFFINITY_FAILED},
        id="own anti-affinity: all terms with valid topology keys",
    ),
    pytest.param(
        pod("p", labels={"foo": "", "bar": ""}),
        [
            placed(
                "a",
                "nodeA",
                affinity=affinity(
                    anti=[
                        term(expr("foo", "Exists"), topology="zone"),
                        term(expr("labelA", "Exists"), topology="zone"),
                    ]
                ),
            ),
            placed(
                "b",
                "nodeB",
                affinity=affinity(
                    anti=[
                        term(expr("bar", "Exists"), topology="zone"),
                        term(expr("labelB", "Exists"), topology="zone"),
                    ]
                ),
            ),
        ],
        [
            ("nodeA", {**R1Z1, "hostname": "nodeA"}),
            ("nodeB", {**R1Z2, "hostname": "nodeB"}),
            ("nodeC", {**R1Z3, "hostname": "nodeC"}),
        ],
        {
            "nodeA": EXISTING_ANTI_AFFINITY_FAILED,
            "nodeB": EXISTING_ANTI_AFFINITY_FAILED,
            "nodeC": FITS,
        },
        id="existing pods on nodeA and nodeB each forbid their zone: only nodeC fits",
    ),
    pytest.param(
        pod(
            "p",
            affinity=affinity(
                [
                    term(expr("foo", "Exists"), topology="region"),
                    term(expr("bar", "Exists"), topology="zone"),
                ]
            ),
        ),
        [placed("pod1", "nodeA", {"foo": "", "bar": ""})],
        [("nodeA", {**R1Z1, "hostname": "nodeA"}), ("nodeB", {**R1Z1, "hostname": "nodeB"})],
        {"nodeA": FITS, "nodeB": FITS},
        id="affinity: all terms match one pod, then every topology key matches",
    ),
    pytest.param(
        pod(
            "p",
            affinity=affinity(
                [
                    term(expr("foo", "Exists"), topology="region"),
                    term(expr("bar", "Exists"), topology="zone"),
                ]
            ),
        ),
        [placed("pod1", "nodeA", {"foo": ""}), placed("pod2", "nodeB", {"bar": ""})],
        [("nodeA", {**R1Z1, "hostname": "nodeA"}), ("nodeB", {**R1Z2, "hostname": "nodeB"})],
        {"nodeA": AFFINITY_FAILED, "nodeB": AFFINITY_FAILED},
        id="affinity: the terms must be satisfied by the same pod",
    ),
    # Beyond upstream's tables: the topology label itself.
    pytest.param(
        pod("p", affinity=affinity([term(expr("foo", "In", "bar"), topology="region")])),
        [placed("p1", "machine1", {"foo": "bar"})],
        [("machine1", CHINA), ("machine2", {"az": "az1"})],
        {"machine1": FITS, "machine2": AFFINITY_FAILED},
        id="a node without the topology label fails required affinity",
    ),
    pytest.param(
        pod(
            "p",
            labels={"app": "db"},
            affinity=affinity([term(expr("app", "In", "db"), topology="region")]),
        ),
        [placed("p1", "machine1", {"app": "db"})],
        [("machine1", {"az": "az1"}), ("machine2", CHINA)],
        {"machine1": FITS, "machine2": FITS},
        id="a matching pod on a node without the topology label counts as no match at all",
    ),
    pytest.param(
        pod(
            "p",
            labels={"app": "db"},
            affinity=affinity(
                [term(expr("app", "In", "db"), topology="region", namespaces=["other"])]
            ),
        ),
        [],
        [("machine1", CHINA)],
        {"machine1": AFFINITY_FAILED},
        id="first-of-group needs the pod in its own term's namespaces",
    ),
    pytest.param(
        pod(
            "p",
            labels={"app": "db"},
            affinity=affinity(anti=[term(expr("app", "In", "db"), topology="region")]),
        ),
        [placed("x", "machine1", {"app": "db"}, namespace="other")],
        [("machine1", CHINA)],
        {"machine1": FITS},
        id="own anti-affinity looks only in the pod's namespace by default",
    ),
]


@pytest.mark.parametrize(("incoming", "pods", "nodes", "expected"), MULTI_NODE_CASES)
def test_inter_pod_affinity_multiple_nodes(
    incoming: dict[str, Any],
    pods: list[dict[str, Any]],
    nodes: list[tuple[str, dict[str, str]]],
    expected: dict[str, tuple[str, ...]],
) -> None:
    result = check_nodes(incoming, [node(name, labels=labels) for name, labels in nodes], pods)
    assert result == expected


def test_metadata_is_computed_once_per_attempt(
    monkeypatch: pytest.MonkeyPatch, engine_path: bool
) -> None:
    """The metadata (index lookups or scan of placed pods) is built once per attempt."""
    state = cluster(
        [node(f"n{i}", labels={"zone": f"z{i % 3}"}) for i in range(9)],
        [placed(f"e{i}", f"n{i}", {"app": "web"}) for i in range(9)],
    )
    incoming = parsed_pod(
        "p", affinity=affinity(anti=[term(expr("app", "In", "web"), topology="zone")])
    )
    calls = 0
    target = "indexed_inter_pod_metadata" if engine_path else "inter_pod_metadata"
    original = getattr(interpod, target)

    def counting(*args: Any) -> Any:
        nonlocal calls
        calls += 1
        return original(*args)

    monkeypatch.setattr(interpod, target, counting)
    cyc = cycle(incoming, state)
    results = [match_inter_pod_affinity(incoming, info, cyc) for info in state.nodes.values()]
    assert results == [ANTI_AFFINITY_FAILED] * 9
    assert calls == 1


# -- end to end through decide() -------------------------------------------------------

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
INTERPOD_ONLY = policy([names.MATCH_INTER_POD_AFFINITY], [])


def web_replica(name: str, topology: str, **kw: Any) -> dict[str, Any]:
    return pod(
        name,
        labels={"app": "web"},
        affinity=affinity(anti=[term(expr("app", "In", "web"), topology=topology)]),
        **kw,
    )


def test_anti_affinity_pod_refuses_the_node_of_its_twin() -> None:
    state = cluster(
        [node("n1"), node("n2"), node("n3")],
        [placed("twin", "n2", {"app": "web"})],
    )
    decision = decide(web_replica("web-1", HOSTNAME), state, INTERPOD_ONLY)
    assert decision.node in {"n1", "n3"}
    assert decision.failed == {"n2": list(ANTI_AFFINITY_FAILED)}


def test_anti_affinity_pod_refuses_the_zone_of_its_twin() -> None:
    state = cluster(
        [
            node("a1", labels={ZONE: "a"}),
            node("a2", labels={ZONE: "a"}),
            node("b1", labels={ZONE: "b"}),
        ],
        [placed("twin", "a1", {"app": "web"})],
    )
    decision = decide(web_replica("web-1", ZONE), state, INTERPOD_ONLY)
    assert decision.node == "b1"
    assert sorted(decision.failed) == ["a1", "a2"]


def test_existing_pod_anti_affinity_refuses_a_pod_without_affinity() -> None:
    state = cluster(
        [node("n1"), node("n2")],
        [web_replica("guard", HOSTNAME, node_name="n1")],
    )
    decision = decide(pod("web-2", labels={"app": "web"}), state, INTERPOD_ONLY)
    assert decision.node == "n2"
    assert decision.failed == {"n1": list(EXISTING_ANTI_AFFINITY_FAILED)}


def test_self_anti_affinity_replicas_decided_in_turn_spread_then_run_out() -> None:
    # The placed replicas' own anti-affinity (symmetry) is checked first, so the third
    # replica is refused by their rules before its own.
    state = cluster([node("n1"), node("n2")])
    placed_on: list[str] = []
    for i in range(2):
        replica = web_replica(f"web-{i}", HOSTNAME)
        decision = decide(replica, state, INTERPOD_ONLY)
        assert decision.node is not None
        placed_on.append(decision.node)
        replica["spec"]["nodeName"] = decision.node
        state.add_pod(parse_pod(replica))
    assert sorted(placed_on) == ["n1", "n2"]

    third = decide(web_replica("web-3", HOSTNAME), state, INTERPOD_ONLY)
    assert third.node is None
    assert third.message == (
        "0/2 nodes are available: 2 node(s) didn't match pod affinity/anti-affinity, "
        "2 node(s) didn't satisfy existing pods anti-affinity rules."
    )


def test_required_affinity_follows_the_first_pod_of_its_group() -> None:
    state = cluster(
        [
            node("a1", labels={ZONE: "a"}),
            node("b1", labels={ZONE: "b"}),
            node("b2", labels={ZONE: "b"}),
        ]
    )
    group = affinity([term(expr("app", "In", "cache"), topology=ZONE)])
    first = pod("cache-0", labels={"app": "cache"}, affinity=group)
    decision = decide(first, state, INTERPOD_ONLY)
    assert decision.node is not None and decision.failed == {}
    first["spec"]["nodeName"] = decision.node
    state.add_pod(parse_pod(first))
    zone = state.nodes[decision.node].node.labels[ZONE]

    second = decide(pod("cache-1", labels={"app": "cache"}, affinity=group), state, INTERPOD_ONLY)
    assert second.node is not None
    assert state.nodes[second.node].node.labels[ZONE] == zone
    assert all(reasons == list(AFFINITY_FAILED) for reasons in second.failed.values())
