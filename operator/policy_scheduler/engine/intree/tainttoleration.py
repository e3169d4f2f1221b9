"""TaintToleration, as kube-scheduler v1.34 has it (Filter, PreScore, Score, NormalizeScore).

Filter: a node with a taint of effect ``NoSchedule`` or ``NoExecute`` that none of the
pod's tolerations tolerates is refused, UnschedulableAndUnresolvable, with
``node(s) had untolerated taint(s)``. v1.24-v1.34.1 named the first such taint
(``node(s) had untolerated taint {key: value}``); since kubernetes#134740 (v1.35,
cherry-picked into the v1.34 patch releases as #135023) the reason no longer shows taint
keys or values, which may be sensitive, in pod statuses and events. (The legacy
predicate said "node(s) had taints that the pod didn't tolerate".)

Score: the number of the node's ``PreferNoSchedule`` taints not tolerated by the pod's
tolerations whose effect is empty or ``PreferNoSchedule`` (PreScore keeps those);
NormalizeScore reverses it onto 0..100 (``DefaultNormalizeScore(100, reverse)``): no
such taint scores 100, the most-tainted node 0.

A toleration tolerates a taint as ``v1.Toleration.ToleratesTaint`` says (empty effect:
any effect; empty key with ``Exists``: any key; ``Equal`` compares values).

Fast path: both read only the pod and the node (node-local); a taint makes a node
``NodeInfo.flagged``, so the filter's screen and the score's batch form skip the other
nodes without a look at their taints.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from ...objects import Pod, Taint, Toleration, tolerations_tolerate
from ..events import ActionType, ClusterEventWithHint
from ..functions import FITS, CycleState, Predicate, Priority, Reasons, Unresolvable, hint, mapped
from ..interface import (
    FilterPlugin,
    Handle,
    NodeInfoView,
    NodeScore,
    PreScorePlugin,
    ScorePlugin,
    Status,
)
from ..nodeinfo import NodeInfo
from ._queueing import NODE, on, taint_hint
from .helper import engine_node, normalize_node_scores, normalizing, status_of

NAME: Final = "TaintToleration"

NO_SCHEDULE: Final = "NoSchedule"
NO_EXECUTE: Final = "NoExecute"
PREFER_NO_SCHEDULE: Final = "PreferNoSchedule"

#: The legacy reason, kept by v1.30 as ErrReasonNotMatch (its Filter names the taint).
ERR_REASON_NOT_MATCH: Final = "node(s) had taints that the pod didn't tolerate"


#: The Filter's reason (v1.34 patch releases on, v1.35): no taint key or value in it.
ERR_REASON_UNTOLERATED: Final = "node(s) had untolerated taint(s)"


def untolerated_taint_reason(taint: Taint) -> Unresolvable:
    """The Filter's reason for an untolerated ``taint``: ``node(s) had untolerated
    taint(s)``, whichever taint it is."""
    return Unresolvable(ERR_REASON_UNTOLERATED)


def find_untolerated_taint(pod: Pod, taints: Sequence[Taint]) -> Taint | None:
    """FindMatchingUntoleratedTaint with DoNotScheduleTaintsFilterFunc: the first
    NoSchedule / NoExecute taint the pod does not tolerate."""
    tolerations = pod.tolerations
    for taint in taints:
        if taint.effect in (NO_SCHEDULE, NO_EXECUTE) and not tolerations_tolerate(
            tolerations, taint
        ):
            return taint
    return None


def taint_toleration_filter(pod: Pod, node: NodeInfo, cycle: CycleState) -> Reasons:
    taints = node.node.taints
    if not taints:
        return FITS
    taint = find_untolerated_taint(pod, taints)
    if taint is None:
        return FITS
    return (untolerated_taint_reason(taint),)


def _tainted(pod: Pod, nodes: Sequence[NodeInfo], cycle: CycleState) -> list[int]:
    # Tainted nodes are flagged: the flag answers for most nodes in one look.
    return [k for k, info in enumerate(nodes) if info.flagged and info.node.taints]


hint(taint_toleration_filter, node_local=True, screen=_tainted)

_TOLERATIONS: Final = "TaintToleration/prefer-no-schedule"


def prefer_no_schedule_tolerations(pod: Pod) -> tuple[Toleration, ...]:
    """getAllTolerationPreferNoSchedule: an empty effect tolerates PreferNoSchedule too."""
    return tuple(t for t in pod.tolerations if t.effect in ("", PREFER_NO_SCHEDULE))


def intolerable_prefer_no_schedule(pod: Pod, info: NodeInfo, cycle: CycleState) -> int:
    """countIntolerableTaintsPreferNoSchedule: the Score before NormalizeScore."""
    taints = info.node.taints
    if not taints:
        return 0
    tolerations = cycle.memo(_TOLERATIONS, lambda: prefer_no_schedule_tolerations(pod))
    return sum(
        1
        for taint in taints
        if taint.effect == PREFER_NO_SCHEDULE and not tolerations_tolerate(tolerations, taint)
    )


def _count_batch(pod: Pod, nodes: Sequence[NodeInfo], cycle: CycleState) -> list[int]:
    return [
        intolerable_prefer_no_schedule(pod, info, cycle) if info.flagged else 0 for info in nodes
    ]


hint(intolerable_prefer_no_schedule, node_local=True, batch=_count_batch)
_PRIORITY: Final = mapped(intolerable_prefer_no_schedule, normalizing(reverse=True))


class TaintToleration(FilterPlugin, PreScorePlugin, ScorePlugin):
    """Keeps pods off nodes with taints they do not tolerate; prefers fewer soft ones."""

    name = NAME

    def __init__(self, args: Any, handle: Handle) -> None:
        super().__init__(args, handle)

    def predicate(self) -> Predicate:
        return taint_toleration_filter

    def priority(self) -> Priority:
        return _PRIORITY

    def filter(self, state: CycleState, pod: Pod, node: NodeInfoView) -> Status | None:
        return status_of(taint_toleration_filter(pod, engine_node(state, node), state))

    def pre_score(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfoView]
    ) -> Status | None:
        return None

    def score(self, state: CycleState, pod: Pod, node: NodeInfoView) -> int | Status:
        return intolerable_prefer_no_schedule(pod, engine_node(state, node), state)

    def normalize_score(
        self, state: CycleState, pod: Pod, scores: list[NodeScore]
    ) -> Status | None:
        normalize_node_scores(True, scores)
        return None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """v1.34: a node added or its taints changed, now tolerated."""
        return [on(NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT, taint_hint)]
