"""Offline scheduling: Kubernetes objects from files in, one decision per pending pod out.

``simulate`` reads what ``kubectl get -o yaml`` writes (single documents, multi-document
YAML, ``kind: List``), sorts the objects into a :class:`ClusterState` (nodes, running
pods, PVs, PVCs, StorageClasses, CSINodes, Services and controllers) and a queue of
pending pods, then decides the pods one by one with the same engine the operator runs.
Each decision is *assumed* (the pod is placed on its node in the state) before the next
pod is decided, so the decisions see each other, as in a live scheduler.

The queue order is the operator's: higher ``spec.priority`` first, then older
(``creationTimestamp``), then file order. Pods the operator would not take (being
deleted, with ``schedulingGates``) are reported as skipped, never silently dropped.
Finished pods (Succeeded / Failed) use no resources, as kube-scheduler's informer
filters them out.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any, Final

from .documents import InputError, collector_paused, read_file_documents
from .engine.algorithm import Decision, Scheduler
from .engine.cluster import OTHER_KINDS, ClusterState
from .engine.compiler import CompiledPolicy, compile_policy
from .legacy import convert_legacy
from .objects import ObjectError, Pod, parse_node, parse_pod
from .policy import PolicyError, SchedulingPolicy, default_policy, parse_policy

SCHEDULING_POLICY_KIND = "SchedulingPolicy"
LEGACY_POLICY_KIND = "Policy"


@dataclass
class Inputs:
    cluster: ClusterState = field(default_factory=ClusterState)
    pending: list[Pod] = field(default_factory=list)
    skipped: list[tuple[Pod, str]] = field(default_factory=list)
    policies: list[SchedulingPolicy] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def read_documents(path: str | Path) -> list[dict[str, Any]]:
    """Every object in a YAML/JSON file (``-``: stdin), ``kind: List`` expanded.

    Reading and decoding are :mod:`documents`' (JSON by content, libyaml, limits on
    size, depth and aliases); errors name the file.
    """
    return kubernetes_objects(read_file_documents(path), str(path))


def kubernetes_objects(documents: Iterable[Any], source: str) -> list[dict[str, Any]]:
    """The objects of decoded documents, lists expanded, each checked as an API object.

    Each is a mapping whose ``kind`` (if any) is a string and whose ``metadata`` (if
    any) is a mapping with a string ``name``, as the API guarantees: what sorts the
    objects dispatches on the kind and names objects it ignores, and a kind that is a
    list or metadata that is ``true`` would reach it as a TypeError. They are refused
    here, naming the document.
    """
    out: list[dict[str, Any]] = []
    for index, doc in enumerate(documents):
        if doc is None:
            continue
        where = f"{source}: document {index + 1}"
        _check_object(doc, where)
        items, kind = doc.get("items"), doc.get("kind")
        if isinstance(items, list) and isinstance(kind, str) and kind.endswith("List"):
            for item_index, item in enumerate(items):
                _check_object(item, f"{where}: items[{item_index}]")
            out.extend(items)
        else:
            out.append(doc)
    return out


def _check_object(doc: object, where: str) -> None:
    if not isinstance(doc, dict):
        raise InputError(f"{where}: not a Kubernetes object")
    kind = doc.get("kind")
    if kind is not None and not isinstance(kind, str):
        raise InputError(f"{where}: kind: must be a string, got {type(kind).__name__}")
    meta = doc.get("metadata")
    if meta is None:
        return
    if not isinstance(meta, dict):
        raise InputError(f"{where}: metadata: must be an object, got {type(meta).__name__}")
    name = meta.get("name")
    if name is not None and not isinstance(name, str):
        raise InputError(f"{where}: metadata.name: must be a string, got {type(name).__name__}")


def is_legacy_policy(doc: Mapping[str, Any]) -> bool:
    kind = doc.get("kind")
    if kind == LEGACY_POLICY_KIND:
        return True
    legacy_keys = {"predicates", "priorities", "extenders", "hardPodAffinitySymmetricWeight"}
    return kind is None and "metadata" not in doc and bool(legacy_keys & set(doc))


def load_policy_document(doc: Mapping[str, Any]) -> SchedulingPolicy:
    """A SchedulingPolicy object, or a legacy Policy converted to one."""
    if is_legacy_policy(doc):
        return convert_legacy(doc).policy
    return parse_policy(doc)


def load_policy_file(path: str | Path) -> SchedulingPolicy:
    docs = read_documents(path)
    if len(docs) != 1:
        raise InputError(f"{path}: expected one policy, found {len(docs)} documents")
    return load_policy_document(docs[0])


def load_inputs(paths: Iterable[str | Path]) -> Inputs:
    # Parsing builds long-lived objects only: no collection pass would free anything.
    with collector_paused():
        return inputs_from_objects(
            (doc, str(path)) for path in paths for doc in read_documents(path)
        )


def inputs_from_objects(objects: Iterable[tuple[dict[str, Any], str]]) -> Inputs:
    """Sort (object, where it came from) pairs into a cluster and a queue."""
    inputs = Inputs()
    placed: list[Pod] = []
    for doc, source in objects:
        _sort_object(doc, inputs, placed, source)
    for pod in placed:
        inputs.cluster.add_pod(pod)
    # Queue order: priority, then age, then file order (sorted() is stable).
    inputs.pending = sorted(inputs.pending, key=lambda p: (-p.priority, p.created))
    return inputs


def _sort_object(doc: dict[str, Any], inputs: Inputs, placed: list[Pod], source: str) -> None:
    kind = doc.get("kind")
    cluster = inputs.cluster
    if kind == "Pod":
        pod = parse_pod(doc)
        if pod.node_name:
            if pod.phase not in ("Succeeded", "Failed"):
                placed.append(pod)
        elif pod.deleting:
            inputs.skipped.append((pod, "being deleted"))
        elif pod.gated:
            inputs.skipped.append((pod, "has schedulingGates"))
        else:
            inputs.pending.append(pod)
    elif kind == "Node":
        cluster.set_node(parse_node(doc))
    elif kind in OTHER_KINDS:
        cluster.apply_object(doc)
    elif kind == SCHEDULING_POLICY_KIND:
        inputs.policies.append(parse_policy(doc))
    elif is_legacy_policy(doc):
        inputs.policies.append(load_policy_document(doc))
    else:
        name = (doc.get("metadata") or {}).get("name", "?")
        inputs.warnings.append(f"{source}: ignoring {kind or 'an object without kind'} {name!r}")


def choose_policy(inputs: Inputs, policy_file: str | None) -> SchedulingPolicy:
    if policy_file is not None:
        return load_policy_file(policy_file)
    if len(inputs.policies) > 1:
        names = ", ".join(repr(p.name) for p in inputs.policies)
        raise InputError(
            f"the inputs hold several policies ({names}); choose one with --policy FILE"
        )
    if inputs.policies:
        return inputs.policies[0]
    return default_policy()


ProgressFn = Callable[[int, int], None]


async def simulate(
    inputs: Inputs,
    policy: CompiledPolicy,
    *,
    scheduler: Scheduler | None = None,
    progress: ProgressFn | None = None,
    on_decision: Callable[[Decision], None] | None = None,
) -> list[Decision]:
    """Decide every pending pod in queue order, assuming each before deciding the next.

    With ``on_decision``, each decision is handed to it as soon as it is made (and
    assumed) and is not kept: the list returned is then empty, so that a caller writing
    the decisions out as they come holds one at a time, whatever the cluster's size.
    """
    scheduler = scheduler or Scheduler()
    decisions: list[Decision] = []
    total = len(inputs.pending)
    for index, pod in enumerate(inputs.pending):
        decision = await scheduler.schedule(pod, inputs.cluster, policy)
        if decision.node is not None:
            inputs.cluster.add_pod(assumed(pod, decision.node))
        if on_decision is not None:
            on_decision(decision)
        else:
            decisions.append(decision)
        if progress is not None:
            progress(index + 1, total)
    return decisions


def assumed(pod: Pod, node: str) -> Pod:
    """The pod as placed on ``node`` (what the cache holds once it is assumed)."""
    return replace(pod, node_name=node)


@dataclass(frozen=True)
class Detail:
    """How much per-node detail a decision's JSON carries (``--detail``).

    ``all`` (the default): DESIGN.md's shape, every evaluated node. ``top=N``: the same,
    but ``scores`` holds only the N best-scored nodes (and the chosen one). ``none``: no
    per-node data at all: ``feasibleNodes``, ``failedPredicates`` and ``scores`` give
    way to ``feasibleCount``, the number of nodes that fit.
    """

    #: None: every scored node; 0: no per-node detail; N: the N best-scored nodes.
    top: int | None = None

    @property
    def per_node(self) -> bool:
        return self.top != 0

    @classmethod
    def parse(cls, text: str) -> Detail:
        """``all``, ``none`` or ``top=N`` (N >= 1); ValueError otherwise."""
        if text == "all":
            return cls(None)
        if text == "none":
            return cls(0)
        name, _, count = text.partition("=")
        if name == "top" and count.isdigit() and int(count) >= 1:
            return cls(int(count))
        raise ValueError(f"expected all, none or top=N (N >= 1), got {text!r}")

    def __str__(self) -> str:
        return "all" if self.top is None else "none" if self.top == 0 else f"top={self.top}"


ALL_DETAIL: Final = Detail()


def decision_to_json(decision: Decision, detail: Detail = ALL_DETAIL) -> dict[str, Any]:
    """One decision in the ``simulate -o json`` contract of DESIGN.md (``detail``: less)."""
    out: dict[str, Any] = {"pod": decision.pod.key, "node": decision.node}
    if not detail.per_node:
        out["feasibleCount"] = len(decision.feasible)
        out["message"] = decision.message
        return out
    scores = decision.scores
    names: Iterable[str] = scores
    if detail.top is not None and len(scores) > detail.top:
        best = sorted(scores, key=lambda name: -scores[name].total)[: detail.top]
        if decision.node in scores and decision.node not in best:
            best.append(decision.node)  # a tie the round-robin broke past the cut
        names = best
    out["feasibleNodes"] = list(decision.feasible)
    out["failedPredicates"] = {name: list(r) for name, r in decision.failed.items()}
    # The priorities dicts are the decision's own, fresh per node: not copied again.
    out["scores"] = {
        name: {"total": scores[name].total, "priorities": scores[name].priorities} for name in names
    }
    out["message"] = decision.message
    return out


def report_to_json(policy_name: str, decisions: Sequence[Decision]) -> dict[str, Any]:
    return {"policy": policy_name, "decisions": [decision_to_json(d) for d in decisions]}


class JsonReportWriter:
    """``simulate -o json``, streamed: the document is written as decisions come.

    The output is the document :func:`report_to_json` describes, laid out with one
    decision per line (``jq`` indents it for reading; ``grep`` finds a pod's line), and
    nothing of it is kept in memory: each decision is encoded by the C encoder and
    written at once. Call :meth:`write` per decision, then :meth:`close`.
    """

    def __init__(self, out: IO[str], policy_name: str, detail: Detail = ALL_DETAIL) -> None:
        self.out = out
        self.detail = detail
        self.count = 0
        out.write(f"{{{_encode('policy')}: {_encode(policy_name)}, {_encode('decisions')}: [")

    def write(self, decision: Decision) -> None:
        separator = ",\n" if self.count else "\n"
        self.out.write(separator + _encode(decision_to_json(decision, self.detail)))
        self.count += 1

    def close(self) -> None:
        self.out.write("\n]}\n" if self.count else "]}\n")
        self.out.flush()


#: The C encoder, built once (json.dumps with options makes a new encoder per call).
_encode: Final = json.JSONEncoder().encode


__all__ = [
    "ALL_DETAIL",
    "Detail",
    "InputError",
    "Inputs",
    "JsonReportWriter",
    "ObjectError",
    "PolicyError",
    "choose_policy",
    "compile_policy",
    "decision_to_json",
    "kubernetes_objects",
    "load_inputs",
    "load_policy_file",
    "read_documents",
    "report_to_json",
    "simulate",
]
