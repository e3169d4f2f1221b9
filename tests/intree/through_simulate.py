"""Run an in-tree plugin's conformance case through ``policy-scheduler simulate --config``.

A :class:`SimCase` is one row of a plugin's table as the user would bring it: the
Kubernetes objects (the pending pod, the nodes, the pods already placed, volumes,
Namespaces) and a KubeSchedulerConfiguration whose one profile runs that plugin with
those ``pluginConfig`` args beside only a queue sort and a binder:

* a **Filter** case enables the plugin at its PreFilter and Filter points, and
  ImageLocality at Score (with nothing to score, v1.30's cycle stops at the first
  feasible node; a Score plugin makes it filter every node); ``simulate`` must refuse
  exactly the expected nodes with exactly the expected reasons (every other node fits),
  or fail the attempt with the expected error;
* a **Score** case enables it at its PreScore and Score points (no Filter: every node is
  scored, as upstream's score tables call Score on every node); each node's score for
  the plugin in simulate's JSON (0..100, after NormalizeScore, before the weight) must
  be the expected one. Nodes upstream's table lists as failing the filters (scored by
  nobody, but in the cluster) get a taint of their own that TaintToleration's Filter,
  enabled for them, refuses.

:func:`check` runs the CLI in-process (``cli.main``: no subprocess per case), with the
objects and the configuration written as files, and compares the one decision.
"""

from __future__ import annotations

import contextlib
import gc
import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

from policy_scheduler import names
from policy_scheduler.cli import main
from policy_scheduler.pluginargs import CATALOGUE

#: The taint a Score case's failing nodes carry (nothing tolerates it).
FAILED_TAINT = {"key": "conformance.example/failed-filters", "effect": "NoSchedule"}
TAINT_TOLERATION = "TaintToleration"
#: Scores in a Filter case, so that every node is filtered (it never refuses a node).
SCORING = "ImageLocality"
FILTER_POINTS = (names.PRE_FILTER, names.FILTER)
SCORE_POINTS = (names.PRE_SCORE, names.SCORE)


@dataclass(frozen=True)
class SimCase:
    """One conformance row, as objects, and what ``simulate --config`` must show."""

    plugin: str
    pod: Mapping[str, Any]
    nodes: Sequence[Mapping[str, Any]]
    #: Pods already placed, PVs, claims, classes, CSINodes, Namespaces, Services...
    objects: Sequence[Mapping[str, Any]] = ()
    args: Mapping[str, Any] | None = None
    #: Filter: node -> the reasons joined as ``Status.Message()`` joins them; a node not
    #: listed fits. None: a Score case.
    refused: Mapping[str, str] | None = None
    #: Filter: the nodes PreFilter's result leaves to filter (None: every node).
    filtered: frozenset[str] | None = None
    #: Filter: the attempt fails (a plugin's Error) with a message holding this text.
    error: str | None = None
    #: Score: node -> the plugin's score after NormalizeScore.
    scores: Mapping[str, int] | None = None
    #: Score: nodes in the cluster that the filters refuse (upstream's failed nodes).
    failing: Sequence[Mapping[str, Any]] = ()
    env: Mapping[str, str] = field(default_factory=dict)


def node_name(obj: Mapping[str, Any]) -> str:
    name: str = obj["metadata"]["name"]
    return name


BETA_ONLY = frozenset(
    {"kubescheduler.config.k8s.io/v1beta2", "kubescheduler.config.k8s.io/v1beta3"}
)


def configuration(case: SimCase) -> dict[str, Any]:
    """A v1 KubeSchedulerConfiguration running only the case's plugin (and the failing
    nodes' TaintToleration Filter), at the points the case looks at."""
    points = FILTER_POINTS if case.refused is not None else SCORE_POINTS
    implemented = CATALOGUE[case.plugin].points
    plugins: dict[str, Any] = {
        "multiPoint": {"disabled": [{"name": "*"}]},
        names.QUEUE_SORT: {"enabled": [{"name": "PrioritySort"}]},
        names.BIND: {"enabled": [{"name": "DefaultBinder"}]},
    }
    for point in points:
        if point in implemented:
            plugins[point] = {"enabled": [{"name": case.plugin}]}
    if case.refused is not None:
        plugins[names.SCORE] = {"enabled": [{"name": SCORING}]}
    if case.failing:
        filters = plugins.setdefault(names.FILTER, {"enabled": []})
        filters["enabled"].append({"name": TAINT_TOLERATION})
    profile: dict[str, Any] = {"schedulerName": "default-scheduler", "plugins": plugins}
    if case.args is not None:
        profile["pluginConfig"] = [{"name": case.plugin, "args": dict(case.args)}]
    # v1 is read as v1.34, which removed the in-tree volume limits (v1.31): their v1.30
    # cases run as v1beta3 (v1.28) reads them.
    version = "v1beta3" if CATALOGUE[case.plugin].versions == BETA_ONLY else "v1"
    return {
        "apiVersion": f"kubescheduler.config.k8s.io/{version}",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [profile],
    }


def _failing(obj: Mapping[str, Any]) -> dict[str, Any]:
    out = json.loads(json.dumps(obj))
    spec = out.setdefault("spec", {})
    spec["taints"] = [*spec.get("taints", []), FAILED_TAINT]
    return out


def _other_copy(obj: Mapping[str, Any], pending: Mapping[str, Any]) -> Mapping[str, Any]:
    """A placed pod that is the pending pod itself in upstream's table (its objects are
    not named; ours are, one object per name): a copy of its own name and uid."""
    meta, own = obj.get("metadata", {}), pending["metadata"]
    if obj.get("kind") != "Pod" or (meta.get("namespace"), meta.get("name")) != (
        own.get("namespace"),
        own.get("name"),
    ):
        return obj
    out = json.loads(json.dumps(obj))
    out["metadata"]["name"] += "-placed"
    if "uid" in out["metadata"]:
        out["metadata"]["uid"] += "-placed"
    return out


def run(case: SimCase, directory: Path) -> dict[str, Any]:
    """The pod's decision in ``simulate --config ... -o json`` (in-process)."""
    others = [_other_copy(obj, case.pod) for obj in case.objects]
    objects = [case.pod, *case.nodes, *(_failing(n) for n in case.failing), *others]
    cluster = directory / "cluster.json"
    cluster.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    config = directory / "config.json"
    config.write_text(json.dumps(configuration(case)))
    out, err = io.StringIO(), io.StringIO()
    # simulate freezes what it loaded, which lives until its process ends (gc.freeze);
    # in a process running it hundreds of times, the frozen heap would only grow, and
    # each pause of the collector counts it (gc.get_freeze_count walks it).
    with (
        mock.patch.object(gc, "freeze"),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        code = main(["simulate", "--config", str(config), "-f", str(cluster), "-o", "json"])
    assert code == 0, err.getvalue()
    decisions = json.loads(out.getvalue())["decisions"]
    key = f"{case.pod['metadata'].get('namespace', 'default')}/{case.pod['metadata']['name']}"
    assert [d["pod"] for d in decisions] == [key], (decisions, err.getvalue())
    decision: dict[str, Any] = decisions[0]
    return decision


def check(case: SimCase, directory: Path) -> None:
    decision = run(case, directory)
    if case.error is not None:
        assert case.error in decision.get("error", ""), decision
        return
    assert not decision.get("error"), decision
    every = [node_name(n) for n in case.nodes]
    if case.refused is not None:
        looked_at = [n for n in every if case.filtered is None or n in case.filtered]
        got = {name: ", ".join(reasons) for name, reasons in decision["failedPredicates"].items()}
        assert got == dict(case.refused), (got, decision)
        assert set(decision["feasibleNodes"]) == set(looked_at) - set(case.refused)
        return
    assert case.scores is not None
    refused = {node_name(n) for n in case.failing}
    assert set(decision["failedPredicates"]) == refused, decision["failedPredicates"]
    got_scores = {
        name: score["priorities"][case.plugin] for name, score in decision["scores"].items()
    }
    assert got_scores == dict(case.scores)
