"""What several in-tree plugins share (kube-scheduler's ``framework/plugins/helper``).

* :func:`default_normalize_score` — ``helper.DefaultNormalizeScore``: scale the scores
  from ``[0, max(scores)]`` onto ``[0, 100]``, optionally reversed; all zeros stay 0
  (reversed: all become 100). Scores are non-negative integers, so Go's truncating
  division is floor division. :func:`normalizing` is the same as an engine reduce step.
* :func:`status_of` — a predicate's reasons as the plugin's Filter status: Success when
  there are none, UnschedulableAndUnresolvable when they are
  :class:`~..functions.Unresolvable`, else Unschedulable.
* :func:`engine_node` — the engine's :class:`~..nodeinfo.NodeInfo` behind a view handed
  to a plugin's public ``filter`` / ``score`` (the framework hands the NodeInfo itself).
* :func:`instance_key` — a key no other plugin instance ever gets (for what an instance
  keeps in a cycle's memo or in the nodes' score memos: an ``id()`` may be reused once
  an instance is gone, with other arguments, and find the old instance's scores).
* :func:`arg` — one field of a plugin's arguments, from the args model or from the
  ``args`` mapping of a ``pluginConfig`` entry as written (camelCase either way).

Each built-in plugin is served twice: by its engine functions (``predicate()``,
``priority()``: what the fast path runs, node lists at a time, with hints) and by its
public points (``filter``, ``score``, ``normalize_score``), which call the same
functions one node at a time, so that both give the same verdicts and scores.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any, Final

from ...objects import Pod
from ..functions import CycleState, Reasons, ReduceFunction, is_unresolvable
from ..interface import NodeInfoView, NodeScore, Status
from ..nodeinfo import NodeInfo

#: framework.MaxNodeScore: every score is within 0..100 after NormalizeScore.
MAX_NODE_SCORE: Final = 100

_instances = itertools.count(1)


def instance_key(what: str) -> str:
    """``what`` made unique to one instance, for good (see the module doc)."""
    return f"{what}#{next(_instances)}"


def default_normalize_score(max_priority: int, reverse: bool, scores: list[int]) -> None:
    """helper.DefaultNormalizeScore, in place (scores are never negative)."""
    highest = max(scores, default=0)
    if highest <= 0:
        if reverse:
            scores[:] = [max_priority] * len(scores)
        return
    if reverse:
        scores[:] = [max_priority - max_priority * s // highest for s in scores]
    else:
        scores[:] = [max_priority * s // highest for s in scores]


def normalizing(reverse: bool) -> ReduceFunction:
    """:func:`default_normalize_score` onto 0..100 as an engine reduce step."""

    def reduce(pod: Pod, nodes: Sequence[NodeInfo], cycle: CycleState, scores: list[int]) -> None:
        default_normalize_score(MAX_NODE_SCORE, reverse, scores)

    return reduce


def normalize_node_scores(reverse: bool, scores: list[NodeScore]) -> None:
    """:func:`default_normalize_score` onto 0..100 over a NormalizeScore list."""
    values = [entry.score for entry in scores]
    default_normalize_score(MAX_NODE_SCORE, reverse, values)
    for entry, value in zip(scores, values, strict=True):
        entry.score = value


def status_of(reasons: Reasons) -> Status | None:
    """A Filter's status from a predicate's reasons (None: Success)."""
    if not reasons:
        return None
    if any(is_unresolvable(reason) for reason in reasons):
        return Status.unresolvable(*reasons)
    return Status.unschedulable(*reasons)


def engine_node(state: CycleState, node: NodeInfoView) -> NodeInfo:
    """The engine's NodeInfo for a view: the view itself, or the cycle's cluster's."""
    if isinstance(node, NodeInfo):
        return node
    return state.cluster.nodes[node.name]


def arg(args: Any, key: str) -> Any:
    """``args[key]`` of a mapping, ``args.key`` of a model; None when absent (or no args)."""
    if args is None:
        return None
    if isinstance(args, Mapping):
        return args.get(key)
    return getattr(args, key, None)
