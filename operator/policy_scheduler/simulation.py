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
from typing import Any

import yaml

from .engine.algorithm import Decision, Scheduler
from .engine.cluster import OTHER_KINDS, ClusterState
from .engine.compiler import CompiledPolicy, compile_policy
from .legacy import convert_legacy
from .objects import ObjectError, Pod, parse_node, parse_pod
from .policy import PolicyError, SchedulingPolicy, default_policy, parse_policy

SCHEDULING_POLICY_KIND = "SchedulingPolicy"
LEGACY_POLICY_KIND = "Policy"


class InputError(ValueError):
    """A file that cannot be read as Kubernetes objects."""


@dataclass
class Inputs:
    cluster: ClusterState = field(default_factory=ClusterState)
    pending: list[Pod] = field(default_factory=list)
    skipped: list[tuple[Pod, str]] = field(default_factory=list)
    policies: list[SchedulingPolicy] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def read_documents(path: str | Path) -> list[dict[str, Any]]:
    """Every object in a YAML/JSON file, ``kind: List`` expanded; names the file on error."""
    source = str(path)
    try:
        text = Path(path).read_text() if source != "-" else _stdin()
    except OSError as exc:
        raise InputError(f"{source}: {exc.strerror or exc}") from None
    try:
        documents = _json_document(text, source) or list(yaml.safe_load_all(text))
    except yaml.YAMLError as exc:
        raise InputError(f"{source}: not valid YAML: {exc}") from None
    out: list[dict[str, Any]] = []
    for index, doc in enumerate(documents):
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise InputError(f"{source}: document {index + 1}: not a Kubernetes object")
        if str(doc.get("kind", "")).endswith("List") and isinstance(doc.get("items"), list):
            for item_index, item in enumerate(doc["items"]):
                if not isinstance(item, dict):
                    raise InputError(
                        f"{source}: document {index + 1}: items[{item_index}]: "
                        "not a Kubernetes object"
                    )
                out.append(item)
        else:
            out.append(doc)
    return out


def _json_document(text: str, source: str) -> list[Any] | None:
    """A JSON file as one document; None for anything else (YAML reads it then).

    What looks like JSON is read as JSON only, as Kubernetes' decoders do: YAML would
    refuse the tabs JSON files often indent with (kube-scheduler's own example Policy
    does) and forgive trailing commas that JSON does not.
    """
    if not text.lstrip().startswith(("{", "[")):
        return None
    try:
        return [json.loads(text)]
    except json.JSONDecodeError as exc:
        raise InputError(f"{source}: not valid JSON: {exc}") from None


def _stdin() -> str:
    import sys

    return sys.stdin.read()


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
    return inputs_from_objects((doc, str(path)) for path in paths for doc in read_documents(path))


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
) -> list[Decision]:
    """Decide every pending pod in queue order, assuming each before deciding the next."""
    scheduler = scheduler or Scheduler()
    decisions: list[Decision] = []
    total = len(inputs.pending)
    for index, pod in enumerate(inputs.pending):
        decision = await scheduler.schedule(pod, inputs.cluster, policy)
        if decision.node is not None:
            inputs.cluster.add_pod(assumed(pod, decision.node))
        decisions.append(decision)
        if progress is not None:
            progress(index + 1, total)
    return decisions


def assumed(pod: Pod, node: str) -> Pod:
    """The pod as placed on ``node`` (what the cache holds once it is assumed)."""
    return replace(pod, node_name=node)


def decision_to_json(decision: Decision) -> dict[str, Any]:
    """One decision in the ``simulate -o json`` contract of DESIGN.md."""
    return {
        "pod": decision.pod.key,
        "node": decision.node,
        "feasibleNodes": list(decision.feasible),
        "failedPredicates": {name: list(r) for name, r in decision.failed.items()},
        "scores": {
            name: {"total": score.total, "priorities": dict(score.priorities)}
            for name, score in decision.scores.items()
        },
        "message": decision.message,
    }


def report_to_json(policy_name: str, decisions: Sequence[Decision]) -> dict[str, Any]:
    return {"policy": policy_name, "decisions": [decision_to_json(d) for d in decisions]}


__all__ = [
    "InputError",
    "Inputs",
    "ObjectError",
    "PolicyError",
    "choose_policy",
    "compile_policy",
    "decision_to_json",
    "load_inputs",
    "load_policy_file",
    "read_documents",
    "report_to_json",
    "simulate",
]
