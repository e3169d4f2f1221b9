"""The two scheduling cycles, as two small strategies holding only their differences.

:class:`~.algorithm.Scheduler` runs one cycle for every policy (PreFilter, Filter, the
extenders, PreScore, Score, select); where kube-scheduler's legacy
``genericScheduler.Schedule`` (v1.13-v1.17) and v1.30's ``schedule_one.go`` differ, it
asks the policy's strategy (:func:`cycle_of`, chosen once by
``CompiledPolicy.framework_cycle``, the rule in :func:`~.compiler.framework_cycle`):

=============================  ============================  ============================
difference                     :data:`LEGACY`                :data:`FRAMEWORK`
=============================  ============================  ============================
basic checks (PVCs exist)      yes (podPassesBasicChecks)    no (VolumeBinding's PreFilter)
nominated node tried first     no                            yes (evaluateNominatedNode)
search when nothing scores     numFeasibleNodesToFind        stops at the first feasible
no Filter plugin at all        every node, rotation stays    the rotation's next nodes
ties among the best totals     round-robin (lastNodeIndex)   selectHost's reservoir sample
PostFilter after Unresolvable  not run                       run (on every fit error)
PostFilter's message           not in the decision's         ends the decision's message
=============================  ============================  ============================

A strategy holds no state: the rotation and the tie-breaking state (``last_node_index``,
``rng``) stay the scheduler's, handed in as :class:`TieState`.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Final, Protocol

if TYPE_CHECKING:
    from ..objects import Pod
    from .cluster import ClusterState
    from .compiler import CompiledPolicy


class TieState(Protocol):
    """What breaking a tie may read and move: the scheduler's round-robin and generator."""

    last_node_index: int
    rng: random.Random


class Cycle:
    """The legacy cycle (``genericScheduler.Schedule``); :class:`FrameworkCycle` overrides
    only what v1.30 does differently."""

    __slots__ = ()

    #: Under v1.30's cycle (``framework_cycle``): for the docs and callers that only ask.
    framework: bool = False
    #: A nominated pod tries its nominated node first, alone (``evaluateNominatedNode``).
    tries_nominated_node: bool = False
    #: PostFilter runs after a PreFilter's UnschedulableAndUnresolvable too.
    post_filter_when_unresolvable: bool = False
    #: PostFilter's message ends the decision's message (v1.30's FitError).
    post_filter_message: bool = False
    #: Without Filter plugins, the rotation's next ``wanted`` nodes (else every node).
    rotates_without_filters: bool = False

    def basic_problem(self, pod: Pod, cluster: ClusterState) -> str | None:
        """podPassesBasicChecks: the pod's PVCs exist and are not being deleted."""
        for volume in pod.volumes:
            if volume.kind != "persistentVolumeClaim":
                continue
            claim = cluster.claims.get(f"{pod.namespace}/{volume.handle}")
            if claim is None:
                return f'persistentvolumeclaim "{volume.handle}" not found'
            if claim.deleting:
                return f'persistentvolumeclaim "{volume.handle}" is being deleted'
        return None

    def wanted(self, policy: CompiledPolicy, usual: int) -> int:
        """How many feasible nodes end the search, given numFeasibleNodesToFind."""
        return usual

    def pick(self, totals: list[int], ties: TieState) -> int:
        """The index of the chosen node among several: the best total, ties round-robin
        in the order the nodes were found (``lastNodeIndex``, moved on every pick)."""
        best = max(totals)
        if totals.count(best) == 1:
            # No tie (the usual case): no list of candidates to build.
            pick = totals.index(best)
        else:
            tied = [i for i, total in enumerate(totals) if total == best]
            pick = tied[ties.last_node_index % len(tied)]
        ties.last_node_index += 1
        return pick


class FrameworkCycle(Cycle):
    """kube-scheduler v1.30's cycle (``schedule_one.go``): only what differs."""

    __slots__ = ()

    framework = True
    tries_nominated_node = True
    post_filter_when_unresolvable = True
    post_filter_message = True
    rotates_without_filters = True

    def basic_problem(self, pod: Pod, cluster: ClusterState) -> str | None:
        """None: v1.30 has no basic checks (VolumeBinding's PreFilter refuses a claim
        that is missing or being deleted; without it, nothing does)."""
        return None

    def wanted(self, policy: CompiledPolicy, usual: int) -> int:
        """The first feasible node ends the search when neither a Score plugin nor an
        extender would tell the nodes apart (``hasScoring``, ``hasExtenderFilters``)."""
        if not policy.priorities and not any(
            e.prioritize_verb or e.filter_verb for e in policy.extenders
        ):
            return min(usual, 1)
        return usual

    def pick(self, totals: list[int], ties: TieState) -> int:
        """``selectHost``: reservoir sampling over the nodes of the best total.

        Each node of the best total seen so far replaces the pick with probability
        1/(how many such nodes have been seen), so every best node is equally likely
        whatever their order. One draw per tied node after the first, none without a
        tie; the round-robin does not move.
        """
        best = max(totals)
        if totals.count(best) == 1:
            return totals.index(best)
        tied = [i for i, total in enumerate(totals) if total == best]
        randrange = ties.rng.randrange
        pick = tied[0]
        for seen in range(2, len(tied) + 1):
            if randrange(seen) == 0:
                pick = tied[seen - 1]
        return pick


LEGACY: Final = Cycle()
FRAMEWORK: Final = FrameworkCycle()


def cycle_of(policy: CompiledPolicy) -> Cycle:
    """The policy's cycle strategy (``CompiledPolicy.framework_cycle``)."""
    return FRAMEWORK if policy.framework_cycle else LEGACY
