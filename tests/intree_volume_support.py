"""Conformance cases of the v1.30 volume plugins, and the runner that checks them.

A :class:`Case` is Kubernetes objects as kubectl writes them (the pod to place, the
nodes, the pods already placed, PVs, claims, classes, CSINodes) and what upstream's
tables expect: PreFilter's status and Filter's status on each node, in node order.
:func:`check_case` runs the plugin both ways and compares:

* the public API (``pre_filter`` then, unless it rejected or skipped, ``filter`` per
  node) against the expected statuses, code and reasons;
* the engine predicate the fast path runs (what a policy decides with) against the
  same: no reasons for Success/Skip, the reasons for a rejection, each
  :class:`~policy_scheduler.engine.functions.Unresolvable` exactly when the status is
  UnschedulableAndUnresolvable. A PreFilter rejection is the predicate's reason on every
  node (the framework reports it so).

``intree/test_through_simulate.py`` feeds the same objects to ``simulate --config``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from builders import cluster, cycle
from policy_scheduler.engine.cluster import ClusterState
from policy_scheduler.engine.functions import CycleState, is_unresolvable
from policy_scheduler.engine.interface import Code, Status
from policy_scheduler.objects import parse_pod

SKIP = Status.skip()


def unschedulable(*reasons: str) -> Status:
    return Status.unschedulable(*reasons)


def unresolvable(*reasons: str) -> Status:
    return Status.unresolvable(*reasons)


def error(text: str) -> Status:
    return Status.error(text)


@dataclass(frozen=True)
class Case:
    """One row of an upstream table, as objects."""

    pod: Mapping[str, Any]
    nodes: Sequence[Mapping[str, Any]]
    #: Pods already placed: each carries ``spec.nodeName``.
    pods: Sequence[Mapping[str, Any]] = ()
    #: PVs, PVCs, StorageClasses, CSINodes.
    objects: Sequence[Mapping[str, Any]] = ()
    pre_filter: Status | None = None
    #: Filter's status per node, in ``nodes`` order (None: Success).
    filter: Sequence[Status | None] = field(default_factory=list)
    #: Environment variables the case needs (KUBE_MAX_PD_VOLS).
    env: Mapping[str, str] = field(default_factory=dict)


def build(case: Case) -> ClusterState:
    return cluster(case.nodes, case.pods, case.objects)


def _key(status: Status | None) -> tuple[Code, tuple[str, ...]] | None:
    if status is None or status.is_success:
        return None
    return status.code, tuple(status.reasons)


def _same(got: Any, want: Status | None) -> bool:
    return _key(got) == _key(want)


def _show(status: Status | None) -> str:
    return "Success" if status is None else f"{status.code.name}{list(status.reasons)}"


def check_case(plugin: Any, case: Case, state: ClusterState | None = None) -> None:
    """Run ``plugin`` (PreFilter + Filter plugin with ``predicate()``) on ``case``."""
    state = state if state is not None else build(case)
    pod = parse_pod(case.pod)
    names = [n["metadata"]["name"] for n in case.nodes]
    assert len(case.filter) == len(names), "one expected Filter status per node"

    cycle_state: CycleState = cycle(pod, state)
    got_pre = plugin.pre_filter(cycle_state, pod)
    assert _same(got_pre, case.pre_filter), (
        f"PreFilter: got {_show(got_pre)}, want {_show(case.pre_filter)}"
    )
    rejected = case.pre_filter is not None and case.pre_filter.is_rejected
    skipped = case.pre_filter is not None and case.pre_filter.is_skip
    for name, want in zip(names, case.filter, strict=True):
        info = state.nodes[name]
        if not rejected and not skipped:
            got = plugin.filter(cycle_state, pod, info)
            assert _same(got, want), f"Filter on {name}: got {_show(got)}, want {_show(want)}"
        # The engine predicate, on a fresh cycle as the fast path starts one.
        reasons = tuple(plugin.predicate()(pod, info, cycle(pod, state)))
        expected = case.pre_filter if rejected else (None if skipped else want)
        if expected is None or (not expected.is_rejected and expected.code != Code.ERROR):
            assert reasons == (), f"predicate on {name}: {reasons}, want none"
            continue
        assert reasons == tuple(expected.reasons), f"predicate on {name}: {reasons}"
        want_unresolvable = expected.code in (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.ERROR)
        assert all(is_unresolvable(r) == want_unresolvable for r in reasons), (
            f"predicate on {name}: Unresolvable marks of {reasons}"
        )
