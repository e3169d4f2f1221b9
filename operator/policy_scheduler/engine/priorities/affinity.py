"""Node affinity and taint priorities: soft preferences between a pod and node labels/taints.

Both are a per-node count followed by legacy ``NormalizeReduce`` over the feasible nodes
(kube-scheduler v1.13-v1.17):

* **NodeAffinityPriority** — the sum of the weights of the pod's
  ``preferredDuringSchedulingIgnoredDuringExecution`` terms the node's labels satisfy,
  then scaled so the best node gets 10. Terms of weight 0 are skipped. As upstream, a
  preference is judged on its ``matchExpressions`` only (``matchFields`` is ignored by
  the legacy priority), a preference without expressions matches no node, and one that
  upstream could not turn into a selector matches no node either.
* **TaintTolerationPriority** — the number of the node's ``PreferNoSchedule`` taints the
  pod does not tolerate, counting only tolerations whose effect is empty or
  ``PreferNoSchedule``; then reversed, so a node with no such taint gets 10 and the
  node with the most gets 0.

The pod's side of both (the weighted selectors, the relevant tolerations) is computed
once per scheduling attempt through ``cycle.memo``.

Both maps read the pod and the one node only (hinted ``node_local`` for the fast path's
equivalence cache; TaintToleration's batch form skips the nodes without taints);
NodeAffinityPriority's map is a constant 0 for a pod without a usable preference (and
NormalizeReduce keeps all-zero scores at 0).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from ... import names
from ...objects import Pod, Toleration, tolerations_tolerate
from ...selectors import Selector
from ..functions import CycleState, hint, mapped, normalize_reduce, register_priority
from ..nodeinfo import NodeInfo

PREFER_NO_SCHEDULE: Final = "PreferNoSchedule"

_NODE_AFFINITY_MEMO: Final = "priorities.affinity.preferred_node_selectors"
_TOLERATIONS_MEMO: Final = "priorities.affinity.prefer_no_schedule_tolerations"


def _preferred_selectors(pod: Pod) -> tuple[tuple[int, Selector], ...]:
    """(weight, label selector) of each preference that can match a node."""
    selectors: list[tuple[int, Selector]] = []
    for preferred in pod.preferred_node_terms:
        if preferred.weight == 0:
            continue
        labels = preferred.term.labels
        # No requirements: either no matchExpressions (upstream's selector from an empty
        # list is labels.Nothing()) or an expression it could not convert.
        if not labels.requirements or labels.nothing:
            continue
        selectors.append((preferred.weight, labels))
    return tuple(selectors)


def node_affinity(pod: Pod, info: NodeInfo, cycle: CycleState) -> int:
    selectors = cycle.memo(_NODE_AFFINITY_MEMO, lambda: _preferred_selectors(pod))
    labels = info.node.labels
    return sum(weight for weight, selector in selectors if selector.matches(labels))


def _prefer_no_schedule_tolerations(pod: Pod) -> tuple[Toleration, ...]:
    # An empty effect tolerates every effect, PreferNoSchedule included.
    return tuple(t for t in pod.tolerations if t.effect in ("", PREFER_NO_SCHEDULE))


def taint_toleration(pod: Pod, info: NodeInfo, cycle: CycleState) -> int:
    taints = info.node.taints
    if not taints:
        return 0
    tolerations = cycle.memo(_TOLERATIONS_MEMO, lambda: _prefer_no_schedule_tolerations(pod))
    return sum(
        1
        for taint in taints
        if taint.effect == PREFER_NO_SCHEDULE and not tolerations_tolerate(tolerations, taint)
    )


def taint_toleration_batch(pod: Pod, nodes: Sequence[NodeInfo], cycle: CycleState) -> list[int]:
    """``taint_toleration`` over ``nodes``: 0 without a look for nodes that are not
    flagged (a tainted node always is)."""
    return [taint_toleration(pod, info, cycle) if info.flagged else 0 for info in nodes]


def _without_preferences(pod: Pod) -> int | None:
    return None if _preferred_selectors(pod) else 0


register_priority(
    names.NODE_AFFINITY,
    mapped(
        hint(node_affinity, node_local=True, constant=_without_preferences),
        normalize_reduce(names.MAX_PRIORITY, reverse=False),
    ),
)
register_priority(
    names.TAINT_TOLERATION,
    mapped(
        hint(taint_toleration, node_local=True, batch=taint_toleration_batch),
        normalize_reduce(names.MAX_PRIORITY, reverse=True),
    ),
)
