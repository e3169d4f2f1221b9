"""Hypothesis strategies for arbitrary JSON-like input, and valid objects bent out of shape.

Arbitrary values alone mostly die at the first check (no ``metadata``), so the parsers
are also fed *mutations* of valid objects: a valid Pod (or Node, PV, policy, ...) with a
few of its values replaced by arbitrary ones, keys deleted, or keys added, anywhere in
the tree. Keys are drawn from the Kubernetes field names the parsers read as well as
from arbitrary text, so that added keys land on real fields.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
#: PROPERTY_SCALE=N runs N times the examples, at random (see conftest.py).
SCALE = max(1, int(os.environ.get("PROPERTY_SCALE", "1")))


def examples(count: int) -> int:
    """``count`` examples, times PROPERTY_SCALE."""
    return count * SCALE


#: Field names the parsers read: added keys hit them often, arbitrary text the rest.
FIELD_NAMES = [
    "metadata",
    "name",
    "namespace",
    "uid",
    "labels",
    "annotations",
    "ownerReferences",
    "controller",
    "kind",
    "spec",
    "status",
    "containers",
    "initContainers",
    "resources",
    "requests",
    "limits",
    "cpu",
    "memory",
    "pods",
    "ephemeral-storage",
    "example.com/gpu",
    "hugepages-2Mi",
    "overhead",
    "ports",
    "hostPort",
    "hostIP",
    "protocol",
    "image",
    "nodeName",
    "nodeSelector",
    "affinity",
    "nodeAffinity",
    "podAffinity",
    "podAntiAffinity",
    "requiredDuringSchedulingIgnoredDuringExecution",
    "preferredDuringSchedulingIgnoredDuringExecution",
    "nodeSelectorTerms",
    "matchExpressions",
    "matchFields",
    "matchLabels",
    "labelSelector",
    "key",
    "operator",
    "values",
    "weight",
    "preference",
    "podAffinityTerm",
    "topologyKey",
    "namespaces",
    "tolerations",
    "effect",
    "value",
    "tolerationSeconds",
    "topologySpreadConstraints",
    "maxSkew",
    "whenUnsatisfiable",
    "volumes",
    "persistentVolumeClaim",
    "claimName",
    "gcePersistentDisk",
    "pdName",
    "awsElasticBlockStore",
    "volumeID",
    "rbd",
    "monitors",
    "pool",
    "iscsi",
    "iqn",
    "lun",
    "targetPortal",
    "csi",
    "driver",
    "volumeHandle",
    "readOnly",
    "fsType",
    "priority",
    "schedulerName",
    "schedulingGates",
    "deletionTimestamp",
    "creationTimestamp",
    "phase",
    "taints",
    "unschedulable",
    "conditions",
    "type",
    "allocatable",
    "capacity",
    "images",
    "names",
    "sizeBytes",
    "storageClassName",
    "accessModes",
    "claimRef",
    "volumeName",
    "volumeMode",
    "selector",
    "allowedTopologies",
    "matchLabelExpressions",
    "volumeBindingMode",
    "provisioner",
    "drivers",
    "nodeID",
    "count",
    "topologyKeys",
    "predicates",
    "priorities",
    "argument",
    "order",
    "labelsPresence",
    "presence",
    "serviceAffinity",
    "labelPreference",
    "label",
    "serviceAntiAffinity",
    "requestedToCapacityRatioArguments",
    "shape",
    "utilization",
    "score",
    "extenders",
    "urlPrefix",
    "filterVerb",
    "prioritizeVerb",
    "bindVerb",
    "preemptVerb",
    "enableHTTPS",
    "httpTimeout",
    "managedResources",
    "ignoredByScheduler",
    "nodeCacheCapable",
    "ignorable",
    "tlsConfig",
    "hardPodAffinitySymmetricWeight",
    "alwaysCheckAllPredicates",
    "percentageOfNodesToScore",
    "disablePreemption",
    "mode",
    "apiVersion",
    "In",
    "NotIn",
    "Exists",
    "DoesNotExist",
    "Gt",
    "Lt",
    "NoSchedule",
    "NoExecute",
    "PreferNoSchedule",
    "Equal",
    "DoNotSchedule",
    "ScheduleAnyway",
]

keys = st.one_of(st.sampled_from(FIELD_NAMES), st.text(max_size=12))

#: Quantity-shaped strings ("-12.5Mi", "3e4", "100m"): from_regex would be the obvious
#: way, but it costs seconds of set-up per process.
quantity_like = st.builds(
    "{}{}{}{}".format,
    st.sampled_from(["", "-", "+"]),
    st.integers(min_value=0, max_value=10**6),
    st.sampled_from(["", ".", ".5", ".125", ".0001"]),
    st.sampled_from(["", "m", "k", "M", "G", "Ki", "Mi", "Gi", "Ei", "e3", "E-2", "u", "n"]),
)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(),
    st.text(max_size=20),
    st.sampled_from(FIELD_NAMES),
    quantity_like,
    st.sampled_from(["", "0", "-1", "1e3", "NaN", "2024-02-30T00:00:00Z", "a/b/c", "x" * 80]),
)

#: Any JSON-like value: what json.loads or a YAML safe load can hand a parser.
json_values: st.SearchStrategy[Any] = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(keys, children, max_size=5),
    ),
    max_leaves=12,
)


def _paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _paths(child, (*path, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _paths(child, (*path, index))


def _apply(template: str, paths: list[tuple[Any, ...]], edits: list[Any]) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(template)  # a fresh copy, faster than deepcopy
    for pick, action, key, value in edits:
        path = paths[pick]
        parent: Any = None
        target: Any = result
        try:
            for step in path:
                parent, target = target, target[step]
        except (KeyError, IndexError, TypeError):  # an earlier edit changed the shape
            continue
        if not isinstance(parent, dict | list):  # the root, or inside a replaced string
            parent = None
        if action == "replace" and parent is not None:
            parent[path[-1]] = value
        elif action == "delete" and parent is not None:
            del parent[path[-1]]
        elif action == "add" and isinstance(target, dict):
            target[key] = value
        elif action == "add" and isinstance(target, list):
            target.append(value)
    return result


def mutations(base: dict[str, Any], *, max_edits: int = 3) -> st.SearchStrategy[dict[str, Any]]:
    """``base`` with 1..max_edits values replaced, deleted or added anywhere."""
    paths = list(_paths(base))
    template = json.dumps(base)
    edit = st.tuples(
        st.integers(min_value=0, max_value=len(paths) - 1),
        st.sampled_from(["replace", "replace", "delete", "add"]),
        keys,
        json_values,
    )
    return st.lists(edit, min_size=1, max_size=max_edits).map(
        lambda edits: _apply(template, paths, edits)
    )


def mutated_or_arbitrary(base: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Mostly mutations of ``base``; sometimes any value at all."""
    return st.one_of(mutations(base), mutations(base), json_values)


def example_file(relative: str) -> Any:
    text = (ROOT / relative).read_text()
    if relative.endswith(".json"):
        return json.loads(text)
    import yaml

    return yaml.safe_load(text)


def succeeds_or_raises(call: Callable[[], Any], *errors: type[BaseException]) -> Any:
    """``call()``'s result, or None when it raised one of ``errors`` (anything else fails)."""
    try:
        return call()
    except errors:
        return None
