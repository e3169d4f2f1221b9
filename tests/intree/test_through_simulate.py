"""Every in-tree plugin's conformance tables, through ``simulate --config`` (the CLI, in-process).

The tables of ``tests/intree`` (kube-scheduler v1.30's plugin unit-test tables written
as Kubernetes objects) run here as a user would run them: the objects as a file, a
KubeSchedulerConfiguration enabling the plugin with the row's args (see
:mod:`intree.through_simulate`), ``policy-scheduler simulate --config ... -o json``.
Filter rows: the refused nodes and their reasons; Score rows: each node's score for the
plugin after normalisation. Each table is also run by its own module against the
plugin's engine functions and public points; here the pipeline between them is what is
checked (PreFilter's verdicts and node sets, Skip, Filter, PreScore, NormalizeScore, the
fast path, the cycle of v1.30).

Left out: NodeName's rows (their pod names its node: ``simulate`` reads such a pod as
running there, as a scheduler never sees it), VolumeBinding's scores (they need the
VolumeCapacityPriority gate, off in v1.30, which a configuration cannot turn on) and
DefaultPreemption (a PostFilter: its tables are in ``test_defaultpreemption.py``, and
``simulate``'s preemption is checked in tests/config).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from intree import (
    test_imagelocality,
    test_interpodaffinity,
    test_nodeaffinity,
    test_nodeports,
    test_noderesources,
    test_nodeunschedulable,
    test_nodevolumelimits,
    test_podtopologyspread,
    test_tainttoleration,
    test_volumebinding,
    test_volumerestrictions,
    test_volumezone,
)
from intree.cases import FilterCase, ScoreCase
from intree.through_simulate import SimCase, check
from intree_volume_support import Case
from policy_scheduler.engine.interface import Code, Status

# -- each table format as SimCases ---------------------------------------------------------


def _params(table: Iterable[Any]) -> Iterator[tuple[str, tuple[Any, ...]]]:
    for entry in table:
        yield entry.id, tuple(entry.values)


def _message(want: tuple[Code, str] | None) -> str | None:
    return None if want is None else want[1]


def from_filter_case(case: FilterCase) -> SimCase:
    """``intree.cases.FilterCase``: the refused nodes, PreFilter's verdict or node set."""
    every = [n["metadata"]["name"] for n in case.nodes]
    pre = case.pre_filter
    filtered: frozenset[str] | None = None
    refused = {name: ", ".join(r.reasons) for name, r in case.refused.items()}
    if isinstance(pre, Status):
        if pre.is_rejected:
            refused = {name: pre.message for name in every}
        elif pre.is_skip:
            refused = {}
    elif pre is not None:
        filtered = pre
        refused = {name: why for name, why in refused.items() if name in pre}
    return SimCase(
        case.plugin,
        case.pod,
        case.nodes,
        case.placed,
        case.args,
        refused=refused,
        filtered=filtered,
    )


def from_score_case(case: ScoreCase) -> SimCase:
    scores = {name: 0 for name in case.scores} if case.skip else dict(case.scores)
    return SimCase(case.plugin, case.pod, case.nodes, case.placed, case.args, scores=scores)


def from_volume_case(plugin: str, case: Case) -> SimCase:
    """``intree_volume_support.Case``: PreFilter's status, then Filter's per node."""
    every = [n["metadata"]["name"] for n in case.nodes]
    objects = [*case.pods, *case.objects]
    pre = case.pre_filter
    if pre is not None and pre.code is Code.ERROR:
        return SimCase(plugin, case.pod, case.nodes, objects, error=pre.message, env=case.env)
    if pre is not None and pre.is_rejected:
        refused = {name: pre.message for name in every}
    elif pre is not None and pre.is_skip:
        refused = {}
    else:
        refused = {
            name: status.message
            for name, status in zip(every, case.filter, strict=True)
            if status is not None and not status.is_success and not status.is_skip
        }
    return SimCase(plugin, case.pod, case.nodes, objects, refused=refused, env=case.env)


def from_spread_filter(case: Any) -> SimCase:
    refused = {name: msg for name, want in case.want.items() if (msg := _message(want))}
    return SimCase(
        "PodTopologySpread",
        case.pod,
        case.nodes,
        [*case.existing, *case.objects],
        case.args,
        refused=refused,
    )


def from_spread_score(case: Any) -> SimCase:
    return SimCase(
        "PodTopologySpread",
        case.pod,
        case.nodes,
        [*case.existing, *case.objects],
        case.args,
        scores=dict(case.want),
        failing=case.failed_nodes,
    )


def from_affinity_filter(case: Any) -> SimCase:
    refused = {name: msg for name, want in case.want.items() if (msg := _message(want))}
    return SimCase(
        "InterPodAffinity",
        case.pod,
        case.nodes,
        [*case.existing, *test_interpodaffinity.NAMESPACES],
        refused=refused,
    )


def from_affinity_score(case: Any) -> SimCase:
    every = [n["metadata"]["name"] for n in case.nodes]
    scores = {name: 0 for name in every} if case.want is None else dict(case.want)
    args = {
        "hardPodAffinityWeight": case.hard_weight,
        "ignorePreferredTermsOfExistingPods": case.ignore_existing,
    }
    return SimCase(
        "InterPodAffinity",
        case.pod,
        case.nodes,
        [*case.existing, *test_interpodaffinity.NAMESPACES],
        args,
        scores=scores,
    )


def tables() -> Iterator[Any]:
    """Every row, as ``pytest.param(SimCase, id="Plugin: row")``."""
    cases_format: list[tuple[Mapping[str, Any] | Iterable[Any], Any]] = [
        (test_nodeaffinity.FILTER, from_filter_case),
        (test_nodeaffinity.SCORE, from_score_case),
        (test_nodeports.CASES, from_filter_case),
        (test_nodeunschedulable.CASES, from_filter_case),
        (test_tainttoleration.FILTER, from_filter_case),
        (test_tainttoleration.SCORE, from_score_case),
        (test_imagelocality.IMAGE_LOCALITY, from_score_case),
        (
            test_noderesources.ENOUGH_REQUESTS
            + test_noderesources.NOT_ENOUGH_REQUESTS
            + test_noderesources.STORAGE_REQUESTS
            + test_noderesources.OUR_FILTER_CASES
            + test_noderesources.POD_LEVEL_REQUESTS,
            from_filter_case,
        ),
        (
            test_noderesources.LEAST_ALLOCATED
            + test_noderesources.MOST_ALLOCATED
            + test_noderesources.REQUESTED_TO_CAPACITY_RATIO
            + test_noderesources.FIT_SCORE
            + test_noderesources.BALANCED_ALLOCATION
            + test_noderesources.OUR_SCORE_CASES
            + test_noderesources.POD_LEVEL_SCORES,
            from_score_case,
        ),
        (test_podtopologyspread.FILTER_CASES, from_spread_filter),
        (test_podtopologyspread.SCORE_CASES, from_spread_score),
        (test_interpodaffinity.FILTER_CASES, from_affinity_filter),
        (test_interpodaffinity.SCORE_CASES, from_affinity_score),
    ]
    for table, convert in cases_format:
        for row_id, (row,) in _params(table):  # type: ignore[arg-type]
            sim = convert(row)
            yield pytest.param(sim, id=f"{sim.plugin}: {row_id}")
    volume_tables: list[tuple[str, Iterable[Any]]] = [
        (
            "VolumeRestrictions",
            test_volumerestrictions.DISK_CASES + test_volumerestrictions.ACCESS_MODE_CASES,
        ),
        (
            "VolumeZone",
            test_volumezone.SINGLE_ZONE + test_volumezone.MULTI_ZONE + test_volumezone.WITH_BINDING,
        ),
        ("NodeVolumeLimits", test_nodevolumelimits.CSI_CASES),
        ("VolumeBinding", test_volumebinding.BINDER),
    ]
    for plugin, table in volume_tables:
        for row_id, (row,) in _params(table):
            yield pytest.param(from_volume_case(plugin, row), id=f"{plugin}: {row_id}")
    for row_id, (scored,) in _params(test_volumebinding.TABLE):
        sim = from_volume_case("VolumeBinding", scored.case)
        yield pytest.param(sim, id=f"VolumeBinding: {row_id}")
    limits = (
        test_nodevolumelimits.EBS_ROWS
        + test_nodevolumelimits.AZURE_ROWS
        + test_nodevolumelimits.GCE_ROWS
        + test_nodevolumelimits.EPHEMERAL_ROWS
        + test_nodevolumelimits.CINDER_ROWS
    )
    for row_id, (filter_name, row) in _params(limits):
        plugin = test_nodevolumelimits.PLUGINS[filter_name].name
        yield pytest.param(from_volume_case(plugin, row), id=f"{plugin}: {row_id}")


TABLES = list(tables())


@pytest.mark.parametrize("case", TABLES)
def test_conformance_through_simulate(
    case: SimCase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in case.env.items():
        monkeypatch.setenv(key, value)
    check(case, tmp_path)


def test_every_in_tree_filter_and_score_plugin_has_rows() -> None:
    from policy_scheduler import names

    covered = {case.values[0].plugin for case in TABLES}
    wanted = {
        name
        for name, points in names.IN_TREE_PLUGIN_POINTS.items()
        if names.FILTER in points or names.SCORE in points
    }
    assert wanted - covered == {"NodeName"}
