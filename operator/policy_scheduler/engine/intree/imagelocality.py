"""ImageLocality, as kube-scheduler v1.30 scores it (Score only, no NormalizeScore).

For each of the pod's init containers and containers whose image (normalized: no tag
means ``:latest``) the node lists, the image's size scaled by its spread, ``int(size *
nodes having it / all nodes)`` (all nodes of the cluster, not only the feasible ones);
the sum is clamped to ``[23 MiB, 1000 MiB x number of containers]`` (init containers
included) and mapped linearly onto 0..100: ``100 * (sum - 23 MiB) // (max - 23 MiB)``.
Since v1.26 the upper bound grows with the containers; the legacy priority (0..10) kept
it at 1000 MiB and counted no init container.

A node's size of an image is the first size it lists under the name, from its
``NodeInfo.image_sizes`` index; the spread is the cluster's count of nodes listing the
name (``ClusterState.image_nodes``), computed once per attempt.

Fast path: node-local, with the spread as the equivalence cache's context; the map and
its batch form keep each node's score in its ``NodeInfo.node_scores`` (replaced when
the node changes, not when its pods do) under the pod's images and their spread. A pod
without images scores 0 on every node (constant).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from ...objects import Pod
from ..functions import CycleState, Priority, hint, mapped
from ..interface import Handle, NodeInfoView, ScorePlugin, Status
from ..nodeinfo import MEMO_LIMIT, NodeInfo, memo_key
from .helper import MAX_NODE_SCORE, engine_node

NAME: Final = "ImageLocality"

MB: Final = 1024 * 1024
#: Bounds of an image score; 90% of Docker Hub images fall between them.
MIN_THRESHOLD: Final = 23 * MB
MAX_CONTAINER_THRESHOLD: Final = 1000 * MB

_SPREAD: Final = "ImageLocality/spread"
_SCORE: Final = "ImageLocality/score"
_SCORE_KEY: Final = "ImageLocality/score-key"

#: (images, each with its share of the cluster's nodes) and the number of containers.
Spread = tuple[tuple[tuple[str, float], ...], int]


def pod_images(pod: Pod) -> tuple[str, ...]:
    """The images of the init containers, then of the containers, normalized."""
    init = pod.init
    return pod.images if init is None else (*init.images, *pod.images)


def calculate_priority(sum_scores: int, num_containers: int) -> int:
    """calculatePriority: clamp the summed image scores, then scale onto 0..100."""
    max_threshold = MAX_CONTAINER_THRESHOLD * num_containers
    if sum_scores < MIN_THRESHOLD:
        sum_scores = MIN_THRESHOLD
    elif sum_scores > max_threshold:
        sum_scores = max_threshold
    # Non-negative numerator over a positive denominator: floor division is Go's. (No
    # container at all: 0 over a negative number, 0 either way.)
    return MAX_NODE_SCORE * (sum_scores - MIN_THRESHOLD) // (max_threshold - MIN_THRESHOLD)


def image_spread(pod: Pod, cycle: CycleState) -> Spread:
    """Each image of the pod (repeats kept) with its share of the cluster's nodes."""
    cluster = cycle.cluster
    total = len(cluster.nodes)
    images = pod_images(pod)
    if total == 0:
        return (), len(images)
    counts = cluster.image_nodes
    return (
        tuple((image, float(counts.get(image, 0)) / float(total)) for image in images),
        len(images),
    )


def _spread(pod: Pod, cycle: CycleState) -> Spread:
    return cycle.memo(_SPREAD, lambda: image_spread(pod, cycle))


def _node_score(spread: Spread, info: NodeInfo) -> int:
    images, containers = spread
    sizes = info.image_sizes
    if sizes is None:
        sizes = info.index_images()
    total = 0
    for image, share in images:
        size = sizes.get(image)
        if size is not None:
            # int64(float64(size) * spread): Go truncates the product.
            total += int(float(size) * share)
    return calculate_priority(total, containers)


def _score_key(pod: Pod, cycle: CycleState) -> object:
    """What a node's ``node_scores`` keeps this pod's score under (per attempt)."""
    return cycle.memo(_SCORE_KEY, lambda: memo_key((_SCORE, _spread(pod, cycle))))


def image_locality(pod: Pod, info: NodeInfo, cycle: CycleState) -> int:
    """The Score of one node (the engine's map); kept in the node's ``node_scores``."""
    key = _score_key(pod, cycle)
    memo = info.node_scores
    score: int | None = memo.get(key)
    if score is None:
        score = _node_score(_spread(pod, cycle), info)
        if len(memo) >= MEMO_LIMIT:
            memo.clear()
        memo[key] = score
    return score


def image_locality_batch(pod: Pod, nodes: Sequence[NodeInfo], cycle: CycleState) -> list[int]:
    """``image_locality`` over ``nodes``; each node's score kept in its ``node_scores``."""
    spread = _spread(pod, cycle)
    images, containers = spread
    key = _score_key(pod, cycle)
    out: list[int] = []
    append = out.append
    for info in nodes:
        memo = info.node_scores
        score = memo.get(key)
        if score is None:
            # _node_score, inline: a node's first look for this spread.
            sizes = info.image_sizes
            if sizes is None:
                sizes = info.index_images()
            total = 0
            for image, share in images:
                size = sizes.get(image)
                if size is not None:
                    total += int(float(size) * share)
            score = calculate_priority(total, containers)
            if len(memo) >= MEMO_LIMIT:
                memo.clear()
            memo[key] = score
        append(score)
    return out


def _context(cycle: CycleState) -> Spread:
    return _spread(cycle.pod, cycle)


def _no_images(pod: Pod) -> int | None:
    # No container at all: nothing on any node, the clamped sum scores 0.
    return None if pod_images(pod) else 0


hint(
    image_locality,
    node_local=True,
    context=_context,
    constant=_no_images,
    batch=image_locality_batch,
)
_PRIORITY: Final = mapped(image_locality)


class ImageLocality(ScorePlugin):
    """Nodes that already hold the pod's images (weighted by how rare they are)."""

    name = NAME

    def __init__(self, args: Any, handle: Handle) -> None:
        super().__init__(args, handle)

    def priority(self) -> Priority:
        return _PRIORITY

    def score(self, state: CycleState, pod: Pod, node: NodeInfoView) -> int | Status:
        return image_locality(pod, engine_node(state, node), state)
