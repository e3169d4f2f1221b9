"""The ``labelsPresence`` custom predicate (legacy CheckNodeLabelPresence).

A policy entry such as ``{name: ZoneLabelRequired, argument: {labelsPresence: {labels:
[topology.kubernetes.io/zone], presence: true}}}`` becomes a predicate that looks only
at the *keys* of the node's labels: with ``presence: true`` the node must carry every
listed label, with ``presence: false`` none of them. Values never matter. A node that
breaks the rule fails with kube-scheduler's single reason, whichever label broke it.

The built-in name ``CheckNodeLabelPresence`` used bare (no argument) checks no label and
fits every node, as kube-scheduler v1.17+ did with no labels configured (v1.13-v1.16
refused it bare).

The factory runs once per compiled policy and returns a :class:`LabelPresenceCheck`
holding the label keys, so a node costs one dictionary lookup per label; the rule stays
readable on the compiled policy, which is how fit hints (``engine/hinting.py``) learn
which labels a node would need. It reads the node only, so it is hinted ``node_local``
for the fast path's equivalence cache, and screens a chunk of nodes in one pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Protocol

from ... import names
from ...objects import Pod
from ..functions import (
    FITS,
    CycleState,
    Predicate,
    Reasons,
    Screen,
    hint,
    predicate,
    predicate_factory,
)
from ..nodeinfo import NodeInfo

ERR_NODE_LABEL_PRESENCE_VIOLATED: Final = "node(s) didn't have the requested labels"

#: The argument kind (a key of ``names.PREDICATE_ARGUMENT_KINDS``).
LABELS_PRESENCE: Final = "labelsPresence"


class LabelsPresence(Protocol):
    """What the factory reads of ``policy.LabelsPresenceArgument``."""

    @property
    def labels(self) -> Sequence[str]: ...

    @property
    def presence(self) -> bool: ...


# eq=False: compared and hashed by identity, as the closure it replaces was, so that two
# policies' equal rules keep their own entries in the weak registry of hints.
@dataclass(frozen=True, eq=False, slots=True, weakref_slot=True)
class LabelPresenceCheck:
    """One labelsPresence rule as a predicate: every label present (or every one absent)."""

    labels: tuple[str, ...]
    presence: bool

    def __call__(self, pod: Pod, node: NodeInfo, cycle: CycleState) -> Reasons:
        node_labels = node.node.labels
        presence = self.presence
        for label in self.labels:
            if (label in node_labels) != presence:
                return (ERR_NODE_LABEL_PRESENCE_VIOLATED,)
        return FITS


def _screen(labels: tuple[str, ...], presence: bool) -> Screen:
    """The fast path's screen of one rule: the nodes breaking it, in one pass. (A closure
    over the rule, not the check: the registry of hints holds the check weakly.)"""

    def screen(pod: Pod, nodes: Sequence[NodeInfo], cycle: CycleState) -> list[int]:
        out: list[int] = []
        for k, info in enumerate(nodes):
            node_labels = info.node.labels
            for label in labels:
                if (label in node_labels) != presence:
                    out.append(k)
                    break
        return out

    return screen


@predicate_factory(LABELS_PRESENCE)
def check_node_label_presence(argument: LabelsPresence) -> Predicate:
    check = LabelPresenceCheck(tuple(argument.labels), bool(argument.presence))
    return hint(check, node_local=True, screen=_screen(check.labels, check.presence))


@predicate(names.CHECK_NODE_LABEL_PRESENCE)
def bare_check_node_label_presence(pod: Pod, node: NodeInfo, cycle: CycleState) -> Reasons:
    """CheckNodeLabelPresence without labels: nothing to check."""
    return FITS


hint(bare_check_node_label_presence, never_fails=lambda pod: True, node_local=True)
