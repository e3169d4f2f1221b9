"""Image locality, avoid-pods annotation, equal and label-preference priorities.

Per-node maps without a reduce step (kube-scheduler v1.13-v1.17):

* **ImageLocalityPriority** — for each of the pod's containers (init containers are not
  counted) whose image the node already has, the image size scaled by its spread:
  ``int(size * (nodes having the image / all nodes))``, so an image present everywhere
  does not pull every pod to the same few nodes. The sum is clamped to [23 MiB, 1000 MiB]
  and mapped linearly onto 0..10 with integer division. "All nodes" is the whole
  cluster, not only the feasible nodes; image names are compared normalized (no tag
  means ``:latest``).
* **NodePreferAvoidPodsPriority** — 0 on a node whose
  ``scheduler.alpha.kubernetes.io/preferAvoidPods`` annotation names the pod's
  controlling ReplicationController or ReplicaSet (kind and uid), 10 everywhere else
  (pods of other controllers and bare pods are never avoided).
* **EqualPriority** — 1 for every node.
* ``labelPreference`` factory (NodeLabelPriority) — 10 on nodes that have the label when
  ``presence`` is true, on nodes that lack it when false; 0 otherwise.

Fast path hints: every map reads the pod and its one node (``node_local``);
ImageLocality also reads the cluster-wide spread of the pod's images, which becomes
part of the equivalence cache's key (``context``), and its batch form looks the images
up in each node's ``image_sizes`` instead of walking the node's image list.
NodePreferAvoidPods is a constant 10 for a pod without an RC/RS controller,
EqualPriority a constant 1, ImageLocality a constant 0 for a pod without container
images.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from ... import names
from ...objects import Pod
from ..functions import (
    CycleState,
    Priority,
    hint,
    mapped,
    priority_factory,
    register_priority,
)
from ..nodeinfo import MEMO_LIMIT, NodeInfo, memo_key

MAX_PRIORITY: Final = names.MAX_PRIORITY

MB: Final = 1024 * 1024
#: Bounds of the summed image score; 90% of Docker Hub images fall in this range.
MIN_IMAGE_THRESHOLD: Final = 23 * MB
MAX_IMAGE_THRESHOLD: Final = 1000 * MB

#: Controllers whose pods the preferAvoidPods annotation can keep away.
AVOIDABLE_CONTROLLER_KINDS: Final = frozenset({"ReplicationController", "ReplicaSet"})

_IMAGE_SPREAD_MEMO: Final = "priorities.misc.image_spread"


# -- ImageLocalityPriority ----------------------------------------------------------------


def image_locality_score(sum_scores: int) -> int:
    """calculatePriority: clamp the summed image score, then scale it onto 0..10."""
    if sum_scores <= MIN_IMAGE_THRESHOLD:
        return 0
    clamped = min(sum_scores, MAX_IMAGE_THRESHOLD)
    # Both operands are positive here: Go's truncation is floor division.
    return (
        MAX_PRIORITY
        * (clamped - MIN_IMAGE_THRESHOLD)
        // (MAX_IMAGE_THRESHOLD - MIN_IMAGE_THRESHOLD)
    )


def _image_spread(pod: Pod, cycle: CycleState) -> tuple[tuple[str, float], ...]:
    """Each container image of the pod (repeats kept) with its share of the cluster's nodes."""
    cluster = cycle.cluster
    total = len(cluster.nodes)
    if total == 0:
        return ()
    return tuple(
        (image, float(cluster.image_nodes.get(image, 0)) / float(total)) for image in pod.images
    )


def _image_size(info: NodeInfo, image: str) -> int | None:
    """Size of the first image the node lists under that name (the cache keeps the first)."""
    for state in info.node.images:
        if image in state.names:
            return state.size
    return None


def image_locality(pod: Pod, info: NodeInfo, cycle: CycleState) -> int:
    spread = cycle.memo(_IMAGE_SPREAD_MEMO, lambda: _image_spread(pod, cycle))
    total = 0
    if info.node.images:
        for image, share in spread:
            size = _image_size(info, image)
            if size is not None:
                # int64(float64(size) * spread): Go truncates the product.
                total += int(float(size) * share)
    return image_locality_score(total)


def image_locality_batch(pod: Pod, nodes: Sequence[NodeInfo], cycle: CycleState) -> list[int]:
    """``image_locality`` over ``nodes``, each node's images looked up by name."""
    spread = cycle.memo(_IMAGE_SPREAD_MEMO, lambda: _image_spread(pod, cycle))
    # A node's score reads its images and the spread only: kept in its ``node_scores``
    # (replaced when the node changes) under the spread, which pods of a template share.
    key = memo_key((_IMAGE_SCORE, spread))
    out: list[int] = []
    append = out.append
    for info in nodes:
        memo = info.node_scores
        score = memo.get(key)
        if score is not None:
            append(score)
            continue
        sizes = info.image_sizes
        if sizes is None:
            sizes = info.index_images()
        total = 0
        for image, share in spread:
            size = sizes.get(image)
            if size is not None:
                # int64(float64(size) * spread): Go truncates the product.
                total += int(float(size) * share)
        score = image_locality_score(total) if total > MIN_IMAGE_THRESHOLD else 0
        if len(memo) >= MEMO_LIMIT:
            memo.clear()
        memo[key] = score
        append(score)
    return out


#: What a node's ``node_scores`` holds ImageLocality's score under (with the spread).
_IMAGE_SCORE: Final = "priorities.misc.image_locality"


# -- NodePreferAvoidPodsPriority ----------------------------------------------------------


def node_prefer_avoid_pods(pod: Pod, info: NodeInfo, cycle: CycleState) -> int:
    controller = pod.controller
    if controller is None or controller.kind not in AVOIDABLE_CONTROLLER_KINDS:
        return MAX_PRIORITY
    if (controller.kind, controller.uid) in info.node.avoid_pods:
        return 0
    return MAX_PRIORITY


def node_prefer_avoid_pods_batch(
    pod: Pod, nodes: Sequence[NodeInfo], cycle: CycleState
) -> list[int]:
    """``node_prefer_avoid_pods`` over ``nodes``."""
    controller = pod.controller
    if controller is None or controller.kind not in AVOIDABLE_CONTROLLER_KINDS:
        return [MAX_PRIORITY] * len(nodes)
    signature = (controller.kind, controller.uid)
    return [0 if signature in info.node.avoid_pods else MAX_PRIORITY for info in nodes]


# -- EqualPriority ------------------------------------------------------------------------


def equal(pod: Pod, info: NodeInfo, cycle: CycleState) -> int:
    return 1


# -- labelPreference ----------------------------------------------------------------------


@priority_factory("labelPreference")
def label_preference(argument: Any) -> Priority:
    """NodeLabelPriority for ``argument.label`` and ``argument.presence``."""
    label = str(argument.label)
    presence = bool(argument.presence)

    def score(pod: Pod, info: NodeInfo, cycle: CycleState) -> int:
        return MAX_PRIORITY if (label in info.node.labels) == presence else 0

    return mapped(hint(score, node_local=True))


def _image_context(cycle: CycleState) -> tuple[tuple[str, float], ...]:
    return cycle.memo(_IMAGE_SPREAD_MEMO, lambda: _image_spread(cycle.pod, cycle))


def _not_avoidable(pod: Pod) -> int | None:
    controller = pod.controller
    if controller is None or controller.kind not in AVOIDABLE_CONTROLLER_KINDS:
        return MAX_PRIORITY
    return None


register_priority(
    names.IMAGE_LOCALITY,
    mapped(
        hint(
            image_locality,
            node_local=True,
            context=_image_context,
            constant=lambda pod: None if pod.images else 0,
            batch=image_locality_batch,
        )
    ),
)
register_priority(
    names.NODE_PREFER_AVOID_PODS,
    mapped(
        hint(
            node_prefer_avoid_pods,
            node_local=True,
            constant=_not_avoidable,
            batch=node_prefer_avoid_pods_batch,
        )
    ),
)
register_priority(names.EQUAL, mapped(hint(equal, node_local=True, constant=lambda pod: 1)))
