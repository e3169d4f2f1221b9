"""ImageLocality: kube-scheduler v1.30's TestImageLocalityPriority, and the image names.

Ported from pkg/scheduler/framework/plugins/imagelocality/image_locality_test.go of the
v1.28-v1.30 era: the upper bound grows with the pod's containers (1000 MiB each), init
containers' images count, and each image is scaled by its spread over the cluster's
nodes. Scores are ImageLocality's own, 0..100 (no NormalizeScore).
"""

from __future__ import annotations

from typing import Any

import pytest

from intree.cases import ScoreCase, check_score, st_node, st_pod
from policy_scheduler.engine.intree.imagelocality import MB, calculate_priority
from policy_scheduler.objects import normalized_image


def image_node(name: str, *images: tuple[list[str], int]) -> dict[str, Any]:
    return st_node(name, images=[(names, size * MB) for names, size in images])


NODE_40_300_2000 = (
    (["gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"], 40),
    (["gcr.io/300:latest", "gcr.io/300:v1"], 300),
    (["gcr.io/2000:latest"], 2000),
)
NODE_250_10 = ((["gcr.io/250:latest"], 250), (["gcr.io/10:latest", "gcr.io/10:v1"], 10))
NODE_600_40_900 = (
    (["gcr.io/600:latest"], 600),
    (["gcr.io/40:latest"], 40),
    (["gcr.io/900:latest"], 900),
)
NODE_300_600_900 = (
    (["gcr.io/300:latest"], 300),
    (["gcr.io/600:latest"], 600),
    (["gcr.io/900:latest"], 900),
)
NODE_4000_30 = ((["gcr.io/4000:latest"], 4000), (["gcr.io/30:latest"], 30))
NODE_20_30_40 = (
    (["gcr.io/20:latest"], 20),
    (["gcr.io/30:latest"], 30),
    (["gcr.io/40:latest"], 40),
)


def images_pod(*images: str, init: tuple[str, ...] = ()) -> dict[str, Any]:
    pod = st_pod(images=images)
    if init:
        pod["spec"]["initContainers"] = [
            {"name": f"init-{i}", "image": image} for i, image in enumerate(init)
        ]
    return pod


def case(case_id: str, pod: dict[str, Any], nodes: list[dict[str, Any]], scores: list[int]) -> Any:
    names = [n["metadata"]["name"] for n in nodes]
    return pytest.param(
        ScoreCase("ImageLocality", pod, nodes, dict(zip(names, scores, strict=True))), id=case_id
    )


IMAGE_LOCALITY = [
    case(
        "two images spread on two nodes, prefer the larger image one",
        images_pod("gcr.io/40", "gcr.io/250"),
        [image_node("node1", *NODE_40_300_2000), image_node("node2", *NODE_250_10)],
        [0, 5],
    ),
    case(
        "two images on one node, prefer this node",
        images_pod("gcr.io/40", "gcr.io/300"),
        [image_node("node1", *NODE_40_300_2000), image_node("node2", *NODE_250_10)],
        [7, 0],
    ),
    case(
        "if exceed limit, use limit",
        images_pod("gcr.io/10", "gcr.io/4000"),
        [image_node("node1", *NODE_4000_30), image_node("node2", *NODE_250_10)],
        [100, 0],
    ),
    case(
        "if exceed limit, use limit (with node which has no images present)",
        images_pod("gcr.io/10", "gcr.io/4000"),
        [image_node("node1", *NODE_4000_30), image_node("node2", *NODE_250_10), st_node("node3")],
        [66, 0, 0],
    ),
    case(
        "pod with multiple large images, node2 is preferred",
        images_pod("gcr.io/300", "gcr.io/600", "gcr.io/900"),
        [
            image_node("node1", *NODE_600_40_900),
            image_node("node2", *NODE_300_600_900),
            st_node("node3"),
        ],
        [32, 36, 0],
    ),
    case(
        "pod with multiple small images",
        images_pod("gcr.io/30", "gcr.io/40"),
        [image_node("node1", *NODE_20_30_40), image_node("node2", *NODE_4000_30)],
        [1, 0],
    ),
    case(
        "include InitContainers: two images spread on two nodes, prefer the larger image one",
        images_pod("gcr.io/30", init=("gcr.io/300",)),
        [image_node("node1", *NODE_40_300_2000), image_node("node2", *NODE_20_30_40)],
        [6, 0],
    ),
    # Ours: a pod without containers' images scores 0 everywhere (the constant hint).
    case(
        "pod without images",
        st_pod(),
        [image_node("node1", *NODE_40_300_2000), st_node("node2")],
        [0, 0],
    ),
    # Ours: a tag counts: gcr.io/300:v1 is a name node1 lists, 300 MiB / 2 nodes -> 150 MiB
    # over one container's bounds: 100 * (150 - 23) // (1000 - 23) = 12.
    case(
        "a tagged image matches the node's tagged name",
        images_pod("gcr.io/300:v1"),
        [image_node("node1", *NODE_40_300_2000), st_node("node2")],
        [12, 0],
    ),
]


@pytest.mark.parametrize("case", IMAGE_LOCALITY)
def test_image_locality(case: ScoreCase) -> None:
    check_score(case)


@pytest.mark.parametrize(
    ("name", "want"),
    [
        pytest.param("root", "root:latest", id="add :latest postfix 1"),
        pytest.param("gcr.io:5000/root", "gcr.io:5000/root:latest", id="add :latest postfix 2"),
        pytest.param("root:tag", "root:tag", id="keep it as is 1"),
        pytest.param("root@sha256:abc", "root@sha256:abc", id="keep it as is 2"),
    ],
)
def test_normalized_image_name(name: str, want: str) -> None:
    assert normalized_image(name) == want


@pytest.mark.parametrize(
    ("total", "containers", "want"),
    [
        pytest.param(0, 1, 0, id="below the minimum"),
        pytest.param(23 * MB, 1, 0, id="at the minimum"),
        pytest.param(1000 * MB, 1, 100, id="at one container's maximum"),
        pytest.param(1000 * MB, 2, 49, id="the maximum grows with the containers"),
        pytest.param(5000 * MB, 3, 100, id="above the maximum"),
        pytest.param(0, 0, 0, id="no container"),
    ],
)
def test_calculate_priority(total: int, containers: int, want: int) -> None:
    assert calculate_priority(total, containers) == want
