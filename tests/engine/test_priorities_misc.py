"""ImageLocality, NodePreferAvoidPods, Equal and labelPreference: upstream's tables and edges.

Ported from kube-scheduler's TestImageLocalityPriority (v1.13+, with image spread),
TestNodePreferAvoidPriority and TestNewNodeLabelPriority, on the 0..10 scale.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from builders import cluster, container, cycle, decide, node, pod, policy
from policy_scheduler import names
from policy_scheduler.engine import catalogue  # noqa: F401  (registers every family)
from policy_scheduler.engine.functions import REGISTRY, Priority
from policy_scheduler.engine.priorities.misc import image_locality_score
from policy_scheduler.objects import PREFER_AVOID_PODS_ANNOTATION, parse_pod
from policy_scheduler.policy import LabelPreferenceArgument

MB = 1024 * 1024


def run(
    priority: str | Priority, incoming: Mapping[str, Any], nodes: Sequence[Mapping[str, Any]]
) -> list[int]:
    fn = REGISTRY.priorities[priority] if isinstance(priority, str) else priority
    state = cluster(nodes)
    p = parse_pod(incoming)
    infos = [state.nodes[n["metadata"]["name"]] for n in nodes]
    return fn(p, infos, cycle(p, state))


# -- ImageLocalityPriority ----------------------------------------------------------------


def images_pod(*images: str) -> dict[str, Any]:
    return pod("p", containers=[container(image=image) for image in images])


NODE_40_300_2000 = [
    (["gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"], 40 * MB),
    (["gcr.io/300:latest", "gcr.io/300:v1"], 300 * MB),
    (["gcr.io/2000:latest"], 2000 * MB),
]
NODE_250_10 = [
    (["gcr.io/250:latest"], 250 * MB),
    (["gcr.io/10:latest", "gcr.io/10:v1"], 10 * MB),
]
TWO_NODES = [
    node("machine1", images=NODE_40_300_2000),
    node("machine2", images=NODE_250_10),
]


@pytest.mark.parametrize(
    ("incoming", "nodes", "expected"),
    [
        # machine1: 40M/2 = 20M < 23M -> 0; machine2: 10 * (250M/2 - 23M) / 977M = 1
        pytest.param(
            images_pod("gcr.io/40", "gcr.io/250"), TWO_NODES, [0, 1], id="prefer-the-larger-image"
        ),
        # machine1: 10 * ((40M + 300M)/2 - 23M) / 977M = 1
        pytest.param(
            images_pod("gcr.io/40", "gcr.io/300"), TWO_NODES, [1, 0], id="two-images-on-one-node"
        ),
        # machine1: 2000M/2 >= 1000M -> 10; machine2: 10M/2 < 23M -> 0
        pytest.param(images_pod("gcr.io/10", "gcr.io/2000"), TWO_NODES, [10, 0], id="limits-clamp"),
        # A third node without images dilutes the spread: 10 * (2000M/3 - 23M) / 977M = 6
        pytest.param(
            images_pod("gcr.io/10", "gcr.io/2000"),
            [*TWO_NODES, node("machine3")],
            [6, 0, 0],
            id="node-without-images",
        ),
        # Names are compared normalized: "gcr.io/300:v1" as written, "gcr.io/300" as :latest.
        pytest.param(
            images_pod("gcr.io/300:v1", "gcr.io/40:v1"), TWO_NODES, [1, 0], id="tagged-names"
        ),
        # Each container counts, even with the same image: 2 * 150M - 23M -> 2
        pytest.param(
            images_pod("gcr.io/300", "gcr.io/300"), TWO_NODES, [2, 0], id="repeated-image-counts"
        ),
        pytest.param(images_pod("gcr.io/none"), TWO_NODES, [0, 0], id="image-nowhere"),
    ],
)
def test_image_locality_upstream_table(
    incoming: dict[str, Any], nodes: list[dict[str, Any]], expected: list[int]
) -> None:
    assert run(names.IMAGE_LOCALITY, incoming, nodes) == expected


def test_image_locality_ignores_init_containers() -> None:
    incoming = pod(
        "p",
        containers=[container(image="gcr.io/40")],
        init_containers=[container(image="gcr.io/2000")],
    )
    assert run(names.IMAGE_LOCALITY, incoming, TWO_NODES) == [0, 0]


def test_image_spread_counts_all_nodes_not_only_feasible() -> None:
    # The image is on both nodes of the cluster (spread 1), but only one is scored.
    nodes = [
        node("a", images=[(["big:latest"], 500 * MB)]),
        node("b", images=[(["big:latest"], 500 * MB)]),
    ]
    state = cluster(nodes)
    p = parse_pod(images_pod("big"))
    scores = REGISTRY.priorities[names.IMAGE_LOCALITY](p, [state.nodes["a"]], cycle(p, state))
    # 10 * (500M - 23M) / 977M = 4
    assert scores == [4]


def test_image_listed_twice_on_one_node_counts_one_node() -> None:
    nodes = [node("a", images=[(["big:v1", "big:v1"], 500 * MB)]), node("b")]
    # Spread 1/2: 250M -> 10 * (250M - 23M) / 977M = 2 (not 4 as with spread 2/2).
    assert run(names.IMAGE_LOCALITY, images_pod("big:v1"), nodes) == [2, 0]


@pytest.mark.parametrize(
    ("total", "expected"),
    [
        pytest.param(0, 0, id="nothing"),
        pytest.param(23 * MB, 0, id="at-min-threshold"),
        pytest.param(23 * MB + 97 * MB, 0, id="just-below-one"),
        pytest.param(23 * MB + 98 * MB, 1, id="one"),
        pytest.param(1000 * MB - 1, 9, id="just-below-max"),
        pytest.param(1000 * MB, 10, id="at-max-threshold"),
        pytest.param(5000 * MB, 10, id="above-max"),
    ],
)
def test_image_locality_thresholds(total: int, expected: int) -> None:
    assert image_locality_score(total) == expected


# -- NodePreferAvoidPodsPriority ----------------------------------------------------------


def avoid(kind: str, uid: str) -> dict[str, str]:
    entry = {
        "podSignature": {
            "podController": {
                "apiVersion": "v1",
                "kind": kind,
                "name": "foo",
                "uid": uid,
                "controller": True,
            }
        },
        "reason": "some reason",
        "message": "some message",
    }
    return {PREFER_AVOID_PODS_ANNOTATION: json.dumps({"preferAvoidPods": [entry]})}


AVOID_NODES = [
    node("machine1", annotations=avoid("ReplicationController", "abcdef123456")),
    node("machine2", annotations=avoid("ReplicaSet", "qwert12345")),
    node("machine3"),
]


def owned(kind: str, uid: str, *, controller: bool = True) -> dict[str, Any]:
    p = pod("p", owner=(kind, "foo", uid))
    if not controller:
        del p["metadata"]["ownerReferences"][0]["controller"]
    return p


@pytest.mark.parametrize(
    ("incoming", "expected"),
    [
        pytest.param(
            owned("ReplicationController", "abcdef123456"), [0, 10, 10], id="rc-avoids-machine1"
        ),
        pytest.param(owned("RandomController", "abcdef123456"), [10, 10, 10], id="other-kind"),
        pytest.param(
            owned("ReplicationController", "abcdef123456", controller=False),
            [10, 10, 10],
            id="owner-not-controller",
        ),
        pytest.param(owned("ReplicaSet", "qwert12345"), [10, 0, 10], id="rs-avoids-machine2"),
        # Kind and uid must both match.
        pytest.param(owned("ReplicaSet", "abcdef123456"), [10, 10, 10], id="uid-of-another-kind"),
        pytest.param(pod("p"), [10, 10, 10], id="bare-pod"),
    ],
)
def test_node_prefer_avoid_pods_upstream_table(
    incoming: dict[str, Any], expected: list[int]
) -> None:
    assert run(names.NODE_PREFER_AVOID_PODS, incoming, AVOID_NODES) == expected


def test_unreadable_avoid_annotation_is_ignored() -> None:
    nodes = [node("m", annotations={PREFER_AVOID_PODS_ANNOTATION: "{not json"})]
    assert run(names.NODE_PREFER_AVOID_PODS, owned("ReplicaSet", "x"), nodes) == [10]


# -- EqualPriority ------------------------------------------------------------------------


def test_equal_priority_gives_every_node_one() -> None:
    nodes = [node("a"), node("b", cpu="0"), node("c", labels={"x": "y"})]
    assert run(names.EQUAL, pod("p", requests={"cpu": "1"}), nodes) == [1, 1, 1]


# -- labelPreference ----------------------------------------------------------------------


def label_preference(label: str, presence: bool) -> Priority:
    factory = REGISTRY.priority_factories["labelPreference"]
    return factory(LabelPreferenceArgument(label=label, presence=presence))


LABEL_NODES = [
    node("machine1", labels={"foo": "bar"}),
    node("machine2", labels={"bar": "foo"}),
    node("machine3", labels={"bar": "baz"}),
]


@pytest.mark.parametrize(
    ("label", "presence", "expected"),
    [
        pytest.param("baz", True, [0, 0, 0], id="no-match-presence-true"),
        pytest.param("baz", False, [10, 10, 10], id="no-match-presence-false"),
        pytest.param("foo", True, [10, 0, 0], id="one-match-presence-true"),
        pytest.param("foo", False, [0, 10, 10], id="one-match-presence-false"),
        pytest.param("bar", True, [0, 10, 10], id="two-matches-presence-true"),
        pytest.param("bar", False, [10, 0, 0], id="two-matches-presence-false"),
    ],
)
def test_label_preference_upstream_table(label: str, presence: bool, expected: list[int]) -> None:
    assert run(label_preference(label, presence), pod("p"), LABEL_NODES) == expected


def test_label_preference_checks_presence_not_value() -> None:
    nodes = [node("a", labels={"ssd": ""}), node("b")]
    assert run(label_preference("ssd", True), pod("p"), nodes) == [10, 0]


# -- end to end ---------------------------------------------------------------------------


def test_decision_prefers_node_with_the_images() -> None:
    state = cluster(
        [
            node("cold"),
            node("warm", images=[(["registry.example/app:1"], 900 * MB)]),
        ]
    )
    decision = decide(pod("p"), state, policy([], [names.IMAGE_LOCALITY]))
    # 900M * 1/2 = 450M -> 10 * 427M / 977M = 4
    assert decision.node == "warm"
    assert decision.scores["warm"].priorities == {names.IMAGE_LOCALITY: 4}


def test_decision_keeps_replica_set_pods_off_avoided_nodes() -> None:
    state = cluster([node("avoided", annotations=avoid("ReplicaSet", "rs-1")), node("fine")])
    decision = decide(
        pod("p", owner=("ReplicaSet", "web", "rs-1")),
        state,
        policy([], [(names.NODE_PREFER_AVOID_PODS, 10000), names.LEAST_REQUESTED]),
    )
    assert decision.node == "fine"
    assert decision.scores["avoided"].priorities[names.NODE_PREFER_AVOID_PODS] == 0
