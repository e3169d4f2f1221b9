"""Conformance cases of the in-tree plugins, as data, and how to run them here.

A case is Kubernetes objects (the pod to schedule, the nodes, the pods already placed,
as the API or ``kubectl get -o json`` writes them), the plugin's name and its
``pluginConfig`` args as a KubeSchedulerConfiguration would carry them, and what
kube-scheduler v1.30 answers: per refused node its status code and reasons
(:class:`FilterCase`), or per node its final score after NormalizeScore
(:class:`ScoreCase`). ``test_through_simulate.py`` runs the same data through
``simulate --config`` (:mod:`intree.through_simulate`); here :func:`check_filter` /
:func:`check_score` run the plugin's engine functions (what the fast path runs) over an
in-memory cluster, and its public points (``pre_filter`` / ``filter``, ``pre_score`` / ``score`` /
``normalize_score``), and require both to give the expected answer.

The object builders mirror kube-scheduler's test wrappers (``st.MakePod()``,
``st.MakeNode()``): :func:`st_pod` makes one container per request map (none: a pod
without containers), :func:`st_node` a node whose capacity and allocatable are the given
list.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from builders import cluster
from policy_scheduler.engine.builtins import PrioritySort
from policy_scheduler.engine.cluster import ClusterState
from policy_scheduler.engine.functions import CycleState, PolicySettings, hints_of
from policy_scheduler.engine.interface import (
    Code,
    NodeScore,
    Plugin,
    PluginApi,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
    Snapshot,
    Status,
    WaitingPod,
    normalizes,
)
from policy_scheduler.engine.intree.imagelocality import ImageLocality
from policy_scheduler.engine.intree.nodeaffinity import NodeAffinity
from policy_scheduler.engine.intree.nodename import NodeName
from policy_scheduler.engine.intree.nodeports import NodePorts
from policy_scheduler.engine.intree.noderesources import (
    NodeResourcesBalancedAllocation,
    NodeResourcesFit,
)
from policy_scheduler.engine.intree.nodeunschedulable import NodeUnschedulable
from policy_scheduler.engine.intree.schedulinggates import SchedulingGates
from policy_scheduler.engine.intree.tainttoleration import TaintToleration
from policy_scheduler.objects import Pod, parse_pod
from policy_scheduler.pluginargs import plugin_args

#: The plugins of this family, by name (``engine.plugins`` finds them all by name).
PLUGINS: dict[str, type[Plugin]] = {
    cls.name: cls
    for cls in (
        NodeResourcesFit,
        NodeResourcesBalancedAllocation,
        ImageLocality,
        TaintToleration,
        NodeAffinity,
        NodeName,
        NodePorts,
        NodeUnschedulable,
        PrioritySort,
        SchedulingGates,
    )
}

_names = itertools.count(1)


# -- objects ----------------------------------------------------------------------------


def st_pod(
    *requests: Mapping[str, Any],
    name: str | None = None,
    namespace: str = "default",
    node: str | None = None,
    init: Sequence[Mapping[str, Any]] = (),
    overhead: Mapping[str, Any] | None = None,
    images: Sequence[str] = (),
    **spec: Any,
) -> dict[str, Any]:
    """A Pod like ``st.MakePod().Req(r1).Req(r2)...``: one container per request map.

    ``images`` name the containers' images, one each (extra images make extra
    containers without requests); ``init`` gives init containers' requests.
    """
    containers: list[dict[str, Any]] = []
    for i in range(max(len(requests), len(images))):
        c: dict[str, Any] = {"name": f"c{i}", "image": images[i] if i < len(images) else "img"}
        if i < len(requests):
            c["resources"] = {"requests": dict(requests[i])}
        containers.append(c)
    body: dict[str, Any] = {"containers": containers, **spec}
    if init:
        body["initContainers"] = [
            {"name": f"i{i}", "image": "img", "resources": {"requests": dict(r)}}
            for i, r in enumerate(init)
        ]
    if overhead is not None:
        body["overhead"] = dict(overhead)
    if node is not None:
        body["nodeName"] = node
    pod_name = name or f"pod-{next(_names)}"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": pod_name, "namespace": namespace, "uid": f"uid-{pod_name}"},
        "spec": body,
    }


def st_node(
    name: str,
    capacity: Mapping[str, Any] | None = None,
    *,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, Any]] = (),
    unschedulable: bool = False,
    images: Sequence[tuple[Sequence[str], int]] = (),
) -> dict[str, Any]:
    """A Node like ``st.MakeNode().Name(name).Capacity(capacity)``: capacity and
    allocatable both ``capacity`` (nothing: an empty list)."""
    alloc = {key: str(value) for key, value in (capacity or {}).items()}
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = [dict(t) for t in taints]
    if unschedulable:
        spec["unschedulable"] = True
    status: dict[str, Any] = {"capacity": dict(alloc), "allocatable": dict(alloc)}
    if images:
        status["images"] = [{"names": list(n), "sizeBytes": size} for n, size in images]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "uid": f"node-{name}", "labels": dict(labels or {})},
        "spec": spec,
        "status": status,
    }


def resources(
    milli_cpu: int = 0,
    memory: int = 0,
    *,
    pods: int = 0,
    ephemeral: int = 0,
    scalar: Mapping[str, int] | None = None,
) -> dict[str, str]:
    """A ResourceList as kube-scheduler's tests make one from a ``framework.Resource``:
    cpu, memory, pods and ephemeral-storage always listed (0 included), then scalars."""
    out = {
        "cpu": f"{milli_cpu}m",
        "memory": str(memory),
        "pods": str(pods),
        "ephemeral-storage": str(ephemeral),
    }
    for key, value in (scalar or {}).items():
        out[key] = str(value)
    return out


# -- expected answers ---------------------------------------------------------------------


@dataclass(frozen=True)
class Refused:
    """A node a Filter refuses: the status code and reasons kube-scheduler gives."""

    reasons: tuple[str, ...]
    code: Code = Code.UNSCHEDULABLE


def unschedulable(*reasons: str) -> Refused:
    return Refused(reasons, Code.UNSCHEDULABLE)


def unresolvable(*reasons: str) -> Refused:
    return Refused(reasons, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)


@dataclass(frozen=True)
class FilterCase:
    """A pod, a cluster and what the plugin's Filter says of each node (absent: fits).

    ``pre_filter`` is what PreFilter returns when it is not plain Success: a Status
    (Skip, a rejection), or the node names of a PreFilterResult.
    """

    plugin: str
    pod: Mapping[str, Any]
    nodes: Sequence[Mapping[str, Any]]
    refused: Mapping[str, Refused] = field(default_factory=dict)
    placed: Sequence[Mapping[str, Any]] = ()
    args: Mapping[str, Any] | None = None
    pre_filter: Status | frozenset[str] | None = None


@dataclass(frozen=True)
class ScoreCase:
    """A pod, a cluster and each node's final score (after NormalizeScore, 0..100).

    ``skip``: PreScore returns Skip (the framework calls no Score; every node counts 0).
    """

    plugin: str
    pod: Mapping[str, Any]
    nodes: Sequence[Mapping[str, Any]]
    scores: Mapping[str, int]
    placed: Sequence[Mapping[str, Any]] = ()
    args: Mapping[str, Any] | None = None
    skip: bool = False


# -- running them -------------------------------------------------------------------------


class FakeHandle:
    """A framework handle over a cluster, offline, with an optional API."""

    def __init__(self, state: ClusterState, api: PluginApi | None = None) -> None:
        self._state = state
        self._api = api

    def snapshot(self) -> Snapshot:
        return Snapshot(self._state)

    @property
    def api(self) -> PluginApi | None:
        return self._api

    @property
    def events(self) -> Any:
        raise NotImplementedError

    @property
    def offline(self) -> bool:
        return self._api is None

    def now(self) -> float:
        return 0.0

    def waiting_pods(self) -> Iterator[WaitingPod]:
        return iter(())

    def get_waiting_pod(self, uid: str) -> WaitingPod | None:
        return None

    def reject_waiting_pod(self, uid: str, plugin: str, message: str) -> bool:
        return False


def make_plugin(name: str, args: Any, state: ClusterState, api: PluginApi | None = None) -> Any:
    """The plugin made as the framework makes it: its ``pluginConfig`` args decoded,
    defaulted and validated by its Args model (kube-scheduler's), or None without one."""
    cls = PLUGINS[name]
    model = plugin_args(name, args) if cls.Args is not None else None
    return cls(model, FakeHandle(state, api))


def setup(
    case: FilterCase | ScoreCase, *, fast: bool = True
) -> tuple[Any, Pod, ClusterState, CycleState]:
    state = cluster(case.nodes, case.placed)
    plugin = make_plugin(case.plugin, case.args, state)
    pod = parse_pod(case.pod)
    return plugin, pod, state, CycleState(pod, state, PolicySettings(fast=fast))


def node_names(case: FilterCase | ScoreCase) -> list[str]:
    return [n["metadata"]["name"] for n in case.nodes]


def check_filter(case: FilterCase) -> None:
    """The predicate (plain and screened) and the public Filter both give the verdicts."""
    plugin, pod, state, cycle = setup(case)
    names = node_names(case)
    infos = [state.nodes[name] for name in names]
    predicate = plugin.predicate()
    got: dict[str, Refused] = {}
    for info in infos:
        reasons = tuple(predicate(pod, info, cycle))
        if reasons:
            status = plugin.filter(CycleState(pod, state, PolicySettings()), pod, info)
            assert status is not None and status.reasons == reasons, (info.name, status)
            got[info.name] = Refused(reasons, status.code)
        else:
            assert plugin.filter(CycleState(pod, state, PolicySettings()), pod, info) is None
    assert got == dict(case.refused)
    # The fast path's declarations agree with the verdicts.
    hints = hints_of(predicate)
    if hints.never_fails is not None and hints.never_fails(pod):
        assert not got
    if hints.screen is not None:
        suspects = {infos[k].name for k in hints.screen(pod, infos, cycle)}
        assert set(got) <= suspects
    if isinstance(plugin, PreFilterPlugin):
        answer = plugin.pre_filter(CycleState(pod, state, PolicySettings()), pod)
        if isinstance(answer, PreFilterResult):
            assert answer.node_names == case.pre_filter
        else:
            assert answer == case.pre_filter


def check_score(case: ScoreCase) -> None:
    """The priority (plain map, batch form) and the public points give the scores."""
    plugin, pod, state, cycle = setup(case)
    names = node_names(case)
    infos = [state.nodes[name] for name in names]
    priority = plugin.priority()
    got = dict(zip(names, priority(pod, infos, cycle), strict=True))
    if case.skip:
        # Skipped, the plugin adds nothing: the engine's priority must say 0 everywhere.
        assert set(got.values()) <= {0}, got
    else:
        assert got == dict(case.scores)
    map_fn = getattr(priority, "map", None)
    if map_fn is not None:
        hints = hints_of(map_fn)
        plain = [map_fn(pod, info, cycle) for info in infos]
        if hints.batch is not None:
            fresh = CycleState(pod, state, PolicySettings())
            assert hints.batch(pod, infos, fresh) == plain
            assert hints.batch(pod, infos, fresh) == plain  # served from the node memos
        if hints.constant is not None and hints.constant(pod) is not None:
            assert plain == [hints.constant(pod)] * len(infos)
    # The public points, as the framework calls them.
    public = CycleState(pod, state, PolicySettings())
    if isinstance(plugin, PreScorePlugin):
        status = plugin.pre_score(public, pod, infos)
        if case.skip:
            assert status is not None and status.is_skip
            return
        assert status is None
    assert not case.skip
    assert isinstance(plugin, ScorePlugin)
    raw = [plugin.score(public, pod, info) for info in infos]
    scores = [NodeScore(name, score) for name, score in zip(names, raw, strict=True)]
    if normalizes(plugin):
        assert plugin.normalize_score(public, pod, scores) is None
    assert {s.name: s.score for s in scores} == dict(case.scores)
