"""matchLabelKeys / mismatchLabelKeys of pod (anti-)affinity terms, as kube-scheduler v1.34
and its API server treat them (KEP-3633, GA in v1.33), through ``simulate``.

Since v1.31 the scheduler merges nothing into an affinity term: kube-apiserver merges
each key the pod carries into the term's labelSelector when the pod is created
(``key In (value)`` / ``key NotIn (value)``, strategy.go's ``mutatePodAffinity``) and
validates the result. A pod without ``metadata.uid`` is a manifest no API server has
created: ``simulate`` does what the API server does at create. A pod with a uid was
created by one and carries the merged selector already: it is read as it is.

The filter and score rows are ported from upstream's integration tables, where the
rows of the v1.29 unit tables went when the merge moved to the API server
(test/integration/scheduler/filters ``TestInterPodAffinity``,
scoring ``TestPodAffinityScoring``, the "matchLabelKeys is merged into LabelSelector"
rows). The validation rows are the API server's (validation.go
``validateMatchLabelKeysAndMismatchLabelKeys``), worded as it words them.
"""

from __future__ import annotations

import contextlib
import gc
import io
import json
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from policy_scheduler.cli import main
from policy_scheduler.objects import ObjectError, parse_pod

TOPOLOGY_KEY = "node-topologykey"


def node(name: str, labels: dict[str, str], memory: str = "1G") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"allocatable": {"memory": memory, "pods": "32"}},
    }


def pod(
    name: str,
    labels: dict[str, str],
    *,
    on: str | None = None,
    affinity: dict[str, Any] | None = None,
    memory: str | None = None,
    namespace: str = "ns1",
    uid: str | None = None,
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "container", "image": "registry.k8s.io/pause:3.10"}
    if memory:
        container["resources"] = {"requests": {"memory": memory}}
    spec: dict[str, Any] = {"containers": [container]}
    if on:
        spec["nodeName"] = on
    if affinity:
        spec["affinity"] = affinity
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": labels}
    if uid:
        meta["uid"] = uid
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


FOO_EXISTS = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}


def term(topology: str, selector: dict[str, Any] | None, **keys: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"topologyKey": topology}
    if selector is not None:
        out["labelSelector"] = selector
    out.update(keys)
    return out


def required(kind: str, *terms: dict[str, Any]) -> dict[str, Any]:
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}}


def preferred(kind: str, *weighted: tuple[int, dict[str, Any]]) -> dict[str, Any]:
    return {
        kind: {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": w, "podAffinityTerm": t} for w, t in weighted
            ]
        }
    }


CONFIG: dict[str, Any] = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [{"schedulerName": "default-scheduler"}],
}
#: Upstream's scoring tests: InterPodAffinity the only Score plugin.
SCORING_CONFIG: dict[str, Any] = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "plugins": {
                "score": {"disabled": [{"name": "*"}], "enabled": [{"name": "InterPodAffinity"}]}
            },
        }
    ],
}


def simulate(
    tmp_path: Path, objects: list[dict[str, Any]], config: dict[str, Any] = CONFIG
) -> tuple[int, list[dict[str, Any]], str]:
    """(exit code, the decisions of ``simulate --config -o json``, stderr), in-process."""
    cluster = tmp_path / "cluster.json"
    cluster.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    out, err = io.StringIO(), io.StringIO()
    with (
        mock.patch.object(gc, "freeze"),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        code = main(["simulate", "--config", str(path), "-f", str(cluster), "-o", "json"])
    decisions = json.loads(out.getvalue())["decisions"] if out.getvalue() else []
    return code, decisions, err.getvalue()


def decide(
    tmp_path: Path, objects: list[dict[str, Any]], config: dict[str, Any] = CONFIG
) -> dict[str, Any]:
    code, decisions, err = simulate(tmp_path, objects, config)
    assert code == 0, err
    [decision] = [d for d in decisions if d["pod"] == "ns1/incoming"]
    return decision


# -- Filter: upstream's TestInterPodAffinity rows ---------------------------------------


def filter_nodes() -> list[dict[str, Any]]:
    zone = {"region": "r1", "zone": "z11"}
    return [
        node("testnode-0", {**zone, "node": "n1"}),
        node("anothernode-0", {**zone, "node": "n2"}),
    ]


FILTER_ROWS = [
    pytest.param(
        pod(
            "incoming",
            {"foo": "", "bar": "a"},
            affinity=required("podAntiAffinity", term("zone", FOO_EXISTS, matchLabelKeys=["bar"])),
        ),
        [
            pod("pod1", {"foo": "", "bar": "fuga"}, on="testnode-0"),
            pod("pod2", {"foo": "", "bar": "hoge"}, on="testnode-0"),
        ],
        True,
        id="anti affinity: matchLabelKeys is merged into LabelSelector with In operator",
    ),
    pytest.param(
        pod(
            "incoming",
            {"foo": "", "bar": "a"},
            affinity=required(
                "podAntiAffinity", term("zone", FOO_EXISTS, mismatchLabelKeys=["bar"])
            ),
        ),
        [
            pod("pod1", {"foo": "", "bar": "a"}, on="testnode-0"),
            pod("pod2", {"foo": "", "bar": "a"}, on="testnode-0"),
        ],
        True,
        id="anti affinity: mismatchLabelKeys is merged into LabelSelector with NotIn operator",
    ),
    pytest.param(
        pod(
            "incoming",
            {"foo": "", "bar": "a"},
            affinity=required("podAffinity", term("node", FOO_EXISTS, matchLabelKeys=["bar"])),
            memory="1G",
        ),
        [
            pod("pod1", {"foo": "", "bar": "a"}, on="anothernode-0", memory="1G"),
            pod("pod2", {"foo": "", "bar": "hoge"}, on="testnode-0"),
            pod("pod3", {"foo": "", "bar": "fuga"}, on="testnode-0"),
        ],
        False,
        id="affinity: matchLabelKeys is merged into LabelSelector with In operator",
    ),
    pytest.param(
        pod(
            "incoming",
            {"foo": "", "bar": "a"},
            affinity=required("podAffinity", term("node", FOO_EXISTS, mismatchLabelKeys=["bar"])),
            memory="1G",
        ),
        [
            pod("pod1", {"foo": "", "bar": "fuga"}, on="anothernode-0", memory="1G"),
            pod("pod2", {"foo": "", "bar": "a"}, on="testnode-0"),
            pod("pod3", {"foo": "", "bar": "a"}, on="testnode-0"),
        ],
        False,
        id="affinity: mismatchLabelKeys is merged into LabelSelector with NotIn operator",
    ),
]


@pytest.mark.parametrize(("incoming", "existing", "fits"), FILTER_ROWS)
def test_filter_rows(
    tmp_path: Path, incoming: dict[str, Any], existing: list[dict[str, Any]], fits: bool
) -> None:
    decision = decide(tmp_path, [*filter_nodes(), *existing, incoming])
    assert (decision["node"] is not None) == fits, decision


def test_the_affinity_rows_refuse_for_the_upstream_reasons(tmp_path: Path) -> None:
    """The matchLabelKeys affinity row: the one node with a pod of the same ``bar`` is
    full, the other has only other values of ``bar`` (without the merge it would fit)."""
    incoming, existing = FILTER_ROWS[2].values[:2]
    decision = decide(tmp_path, [*filter_nodes(), *existing, incoming])
    assert decision["failedPredicates"] == {
        "anothernode-0": ["Insufficient memory"],
        "testnode-0": ["node(s) didn't match pod affinity rules"],
    }


# -- Score: upstream's TestPodAffinityScoring rows --------------------------------------


def score_nodes(count: int) -> list[dict[str, Any]]:
    return [node(f"node{i + 1}", {TOPOLOGY_KEY: f"topologyvalue{i % 3 + 1}"}) for i in range(count)]


SCORE_ROWS = [
    pytest.param(
        preferred("podAntiAffinity", (50, term(TOPOLOGY_KEY, FOO_EXISTS, matchLabelKeys=["bar"]))),
        [
            pod("pod1", {"foo": "", "bar": "fuga"}, on="node1"),
            pod("pod2", {"foo": "", "bar": "a"}, on="node2"),
        ],
        2,
        {"node1"},
        id="anti affinity: matchLabelKeys is merged into LabelSelector with In operator",
    ),
    pytest.param(
        preferred(
            "podAntiAffinity", (50, term(TOPOLOGY_KEY, FOO_EXISTS, mismatchLabelKeys=["bar"]))
        ),
        [
            pod("pod1", {"foo": "", "bar": "fuga"}, on="node1"),
            pod("pod2", {"foo": "", "bar": "a"}, on="node2"),
        ],
        2,
        {"node2"},
        id="anti affinity: mismatchLabelKeys is merged into LabelSelector with NotIn operator",
    ),
    pytest.param(
        preferred(
            "podAffinity",
            (50, term(TOPOLOGY_KEY, FOO_EXISTS, matchLabelKeys=["bar"])),
            (
                10,
                term(
                    TOPOLOGY_KEY,
                    {"matchExpressions": [{"key": "bar", "operator": "In", "values": ["hoge"]}]},
                ),
            ),
        ),
        [
            pod("pod1", {"foo": "", "bar": "hoge"}, on="node1"),
            pod("pod2", {"foo": "", "bar": "hoge"}, on="node2"),
            pod("pod3", {"foo": "", "bar": "a"}, on="node3"),
        ],
        6,
        {"node3", "node6"},
        id="affinity: matchLabelKeys is merged into LabelSelector with In operator",
    ),
    pytest.param(
        preferred(
            "podAffinity",
            (50, term(TOPOLOGY_KEY, FOO_EXISTS, mismatchLabelKeys=["bar"])),
            (
                10,
                term(
                    TOPOLOGY_KEY,
                    {"matchExpressions": [{"key": "bar", "operator": "In", "values": ["hoge"]}]},
                ),
            ),
        ),
        [
            pod("pod1", {"foo": "", "bar": "a"}, on="node1"),
            pod("pod2", {"foo": "", "bar": "a"}, on="node2"),
            pod("pod3", {"foo": "", "bar": "hoge"}, on="node3"),
        ],
        6,
        {"node3", "node6"},
        id="affinity: mismatchLabelKeys is merged into LabelSelector with NotIn operator",
    ),
]


@pytest.mark.parametrize(("affinity", "existing", "nodes", "expected"), SCORE_ROWS)
def test_score_rows(
    tmp_path: Path,
    affinity: dict[str, Any],
    existing: list[dict[str, Any]],
    nodes: int,
    expected: set[str],
) -> None:
    incoming = pod("incoming", {"foo": "", "bar": "a"}, affinity=affinity)
    decision = decide(tmp_path, [*score_nodes(nodes), *existing, incoming], SCORING_CONFIG)
    best = max(s["total"] for s in decision["scores"].values())
    assert {n for n, s in decision["scores"].items() if s["total"] == best} == expected
    assert decision["node"] in expected


# -- A pod the API server created: read as it is ----------------------------------------


def test_a_pod_from_a_cluster_is_not_merged_again(tmp_path: Path) -> None:
    """The API server merged ``bar In (a)`` when the pod was created; its ``bar`` label
    became ``b`` since. v1.34 keeps the term as stored (the KEP: label updates are not
    reflected): the pod still follows ``bar=a``. Merging again (``bar In (b)`` too)
    would select nothing and leave it unschedulable."""
    stored = {
        "matchExpressions": [
            {"key": "foo", "operator": "Exists"},
            {"key": "bar", "operator": "In", "values": ["a"]},
        ]
    }
    incoming = pod(
        "incoming",
        {"foo": "", "bar": "b"},
        affinity=required("podAffinity", term("node", stored, matchLabelKeys=["bar"])),
        uid="uid-incoming",
    )
    existing = [
        pod("pod1", {"foo": "", "bar": "a"}, on="anothernode-0"),
        pod("pod2", {"foo": "", "bar": "b"}, on="testnode-0"),
    ]
    decision = decide(tmp_path, [*filter_nodes(), *existing, incoming])
    assert decision["node"] == "anothernode-0", decision
    assert decision["failedPredicates"] == {
        "testnode-0": ["node(s) didn't match pod affinity rules"]
    }


def test_a_placed_manifest_is_merged_for_its_anti_affinity(tmp_path: Path) -> None:
    """A running pod written as a manifest is created as the API server creates it: its
    own anti-affinity (which an incoming pod must respect) carries its keys too."""
    guard = pod(
        "guard",
        {"app": "web", "version": "v1"},
        on="testnode-0",
        affinity=required(
            "podAntiAffinity",
            term("node", {"matchLabels": {"app": "web"}}, matchLabelKeys=["version"]),
        ),
    )
    same = pod("incoming", {"app": "web", "version": "v1"})
    other = pod("incoming", {"app": "web", "version": "v2"})
    assert decide(tmp_path, [*filter_nodes(), guard, same])["failedPredicates"] == {
        "testnode-0": ["node(s) didn't satisfy existing pods anti-affinity rules"]
    }
    assert decide(tmp_path, [*filter_nodes(), guard, other])["failedPredicates"] == {}


# -- The API server's validation, one line naming the field -----------------------------

REQ = "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
PREF = "spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]"

INVALID = [
    pytest.param(
        {"app": "web"},
        required(
            "podAntiAffinity", term("node", {"matchLabels": {"app": "web"}}, matchLabelKeys=["app"])
        ),
        f'{REQ}[0]: Invalid value: "app": exists in both matchLabelKeys and labelSelector',
        id="key in matchLabels and matchLabelKeys",
    ),
    pytest.param(
        {"app": "web"},
        preferred(
            "podAffinity",
            (
                10,
                term(
                    "node",
                    {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]},
                    matchLabelKeys=["app"],
                ),
            ),
        ),
        f'{PREF}.podAffinityTerm[0]: Invalid value: "app": exists in both matchLabelKeys '
        "and labelSelector",
        id="key in matchExpressions and matchLabelKeys (soft term)",
    ),
    pytest.param(
        {"app": "web"},
        required("podAntiAffinity", term("node", None, matchLabelKeys=["app"])),
        f"{REQ}.matchLabelKeys: Forbidden: must not be specified when labelSelector is not set",
        id="labelSelector nil",
    ),
    pytest.param(
        {"app": "web"},
        required("podAntiAffinity", term("node", None, mismatchLabelKeys=["app"])),
        f"{REQ}.mismatchLabelKeys: Forbidden: must not be specified when labelSelector is not set",
        id="labelSelector nil, mismatchLabelKeys",
    ),
    pytest.param(
        {"app": "web"},
        required(
            "podAntiAffinity",
            term("node", FOO_EXISTS, matchLabelKeys=["tier"], mismatchLabelKeys=["tier"]),
        ),
        f'{REQ}.matchLabelKeys[0]: Invalid value: "tier": exists in both matchLabelKeys '
        "and mismatchLabelKeys",
        id="key in both matchLabelKeys and mismatchLabelKeys",
    ),
    pytest.param(
        {"app": "web"},
        required(
            "podAntiAffinity",
            term("node", FOO_EXISTS, matchLabelKeys=["app"], mismatchLabelKeys=["app"]),
        ),
        # Merged first: ``app In (web)`` then ``app NotIn (web)``, a key twice.
        f'{REQ}[0]: Invalid value: "app": exists in both matchLabelKeys and labelSelector',
        id="key in both lists, the pod carrying it",
    ),
    pytest.param(
        {"app": "web"},
        required("podAntiAffinity", term("node", FOO_EXISTS, mismatchLabelKeys=["/app"])),
        f'{REQ}.mismatchLabelKeys[0]: Invalid value: "/app": a label key must be',
        id="not a label key",
    ),
]


@pytest.mark.parametrize(("labels", "affinity", "expected"), INVALID)
def test_what_the_api_server_refuses_is_refused_naming_the_field(
    tmp_path: Path, labels: dict[str, str], affinity: dict[str, Any], expected: str
) -> None:
    manifest = pod("incoming", labels, affinity=affinity)
    with pytest.raises(ObjectError) as caught:
        parse_pod(manifest)
    assert str(caught.value).startswith(f'Pod "ns1/incoming": {expected}')
    assert "\n" not in str(caught.value)
    code, decisions, err = simulate(tmp_path, [*filter_nodes(), manifest])
    assert (code, decisions) == (0, [])  # the pod is skipped, with the API server's line
    assert f'Pod "ns1/incoming": {expected}' in err


def test_a_key_the_pod_does_not_carry_merges_nothing_and_is_accepted() -> None:
    """Upstream's check runs on the merged selector: a key the pod lacks adds nothing,
    so the user's own requirement on it is no duplicate."""
    manifest = pod(
        "incoming",
        {"app": "web"},
        affinity=required(
            "podAntiAffinity",
            term("node", {"matchLabels": {"tier": "db"}}, matchLabelKeys=["tier"]),
        ),
    )
    parsed = parse_pod(manifest)
    [found] = parsed.anti_affinity_required
    assert [r.key for r in found.selector.requirements] == ["tier"]


def test_a_pod_from_a_cluster_is_not_validated_again() -> None:
    """The merged form a v1.34 API server stores (its own ``In`` next to the key) is read
    as it is."""
    stored = pod(
        "incoming",
        {"app": "web"},
        affinity=required(
            "podAntiAffinity",
            term(
                "node",
                {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]},
                matchLabelKeys=["app"],
            ),
        ),
        uid="uid-1",
    )
    [found] = parse_pod(stored).anti_affinity_required
    assert len(found.selector.requirements) == 1
