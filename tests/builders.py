"""Build Kubernetes objects in memory for tests, as plain API dicts or parsed values.

``pod(...)`` and ``node(...)`` return the dicts the API would serve (so the parsing
edge is exercised too); ``parsed_pod`` / ``parsed_node`` give the typed objects, and
``cluster(...)`` a ready ClusterState. ``decide(...)`` runs one real engine decision.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from policy_scheduler.engine.algorithm import Decision, Scheduler
from policy_scheduler.engine.cluster import ClusterState
from policy_scheduler.engine.functions import CycleState, PolicySettings
from policy_scheduler.kinds import kind_of
from policy_scheduler.objects import (
    Node,
    Pod,
    parse_node,
    parse_pod,
)
from policy_scheduler.state.cache import OBJECT_KINDS, store

_uids = itertools.count(1)


def container(
    requests: Mapping[str, Any] | None = None,
    limits: Mapping[str, Any] | None = None,
    *,
    name: str | None = None,
    image: str = "registry.example/app:1",
    host_ports: Iterable[int | tuple[int, str, str]] = (),
) -> dict[str, Any]:
    """A container; host_ports are ints or (port, protocol, hostIP) triples."""
    c: dict[str, Any] = {"name": name or f"c{next(_uids)}", "image": image}
    resources: dict[str, Any] = {}
    if requests is not None:
        resources["requests"] = dict(requests)
    if limits is not None:
        resources["limits"] = dict(limits)
    if resources:
        c["resources"] = resources
    ports = []
    for p in host_ports:
        if isinstance(p, int):
            ports.append({"containerPort": p, "hostPort": p})
        else:
            port, protocol, ip = p
            entry: dict[str, Any] = {"containerPort": port, "hostPort": port, "protocol": protocol}
            if ip:
                entry["hostIP"] = ip
            ports.append(entry)
    if ports:
        c["ports"] = ports
    return c


def pod(
    name: str = "p",
    *,
    namespace: str = "default",
    requests: Mapping[str, Any] | None = None,
    limits: Mapping[str, Any] | None = None,
    containers: list[dict[str, Any]] | None = None,
    init_containers: list[dict[str, Any]] | None = None,
    labels: Mapping[str, str] | None = None,
    node_name: str | None = None,
    node_selector: Mapping[str, str] | None = None,
    affinity: Mapping[str, Any] | None = None,
    tolerations: list[Mapping[str, Any]] | None = None,
    host_ports: Iterable[int | tuple[int, str, str]] = (),
    volumes: list[Mapping[str, Any]] | None = None,
    priority: int | None = None,
    owner: tuple[str, str, str] | None = None,
    spread: list[Mapping[str, Any]] | None = None,
    overhead: Mapping[str, Any] | None = None,
    **spec_extra: Any,
) -> dict[str, Any]:
    """A Pod dict; ``requests``/``limits`` give one container, or pass ``containers``."""
    if containers is None:
        containers = [container(requests, limits, name="main", host_ports=host_ports)]
    spec: dict[str, Any] = {"containers": containers}
    if init_containers:
        spec["initContainers"] = init_containers
    if node_name:
        spec["nodeName"] = node_name
    if node_selector is not None:
        spec["nodeSelector"] = dict(node_selector)
    if affinity is not None:
        spec["affinity"] = dict(affinity)
    if tolerations is not None:
        spec["tolerations"] = list(tolerations)
    if volumes is not None:
        spec["volumes"] = list(volumes)
    if priority is not None:
        spec["priority"] = priority
    if spread is not None:
        spec["topologySpreadConstraints"] = list(spread)
    if overhead is not None:
        spec["overhead"] = dict(overhead)
    spec.update(spec_extra)
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": f"uid-{name}-{next(_uids)}",
    }
    if labels:
        meta["labels"] = dict(labels)
    if owner is not None:
        kind, oname, uid = owner
        meta["ownerReferences"] = [
            {"apiVersion": "v1", "kind": kind, "name": oname, "uid": uid, "controller": True}
        ]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def node(
    name: str = "n",
    *,
    cpu: Any = "4",
    memory: Any = "8Gi",
    pods: Any = 110,
    allocatable: Mapping[str, Any] | None = None,
    labels: Mapping[str, str] | None = None,
    taints: list[Mapping[str, Any]] | None = None,
    unschedulable: bool = False,
    conditions: Mapping[str, str] | None = None,
    images: list[tuple[list[str], int]] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A Node dict. ``conditions`` maps type -> status; by default Ready=True."""
    alloc: dict[str, Any] = {"cpu": cpu, "memory": memory, "pods": pods}
    if allocatable is not None:
        alloc = {k: v for k, v in allocatable.items()}
    meta: dict[str, Any] = {"name": name, "uid": f"node-uid-{name}"}
    meta["labels"] = {"kubernetes.io/hostname": name, **(labels or {})}
    if annotations:
        meta["annotations"] = dict(annotations)
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = list(taints)
    if unschedulable:
        spec["unschedulable"] = True
    conds = {"Ready": "True"} if conditions is None else conditions
    status: dict[str, Any] = {
        "allocatable": alloc,
        "capacity": dict(alloc),
        "conditions": [{"type": t, "status": s} for t, s in conds.items()],
    }
    if images:
        status["images"] = [{"names": names, "sizeBytes": size} for names, size in images]
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": spec, "status": status}


def parsed_pod(name: str = "p", **kwargs: Any) -> Pod:
    return parse_pod(pod(name, **kwargs))


def parsed_node(name: str = "n", **kwargs: Any) -> Node:
    return parse_node(node(name, **kwargs))


def cluster(
    nodes: Iterable[Mapping[str, Any]] = (),
    pods: Iterable[Mapping[str, Any]] = (),
    objects: Iterable[Mapping[str, Any]] = (),
) -> ClusterState:
    """A ClusterState from node dicts, placed pod dicts (with nodeName) and other objects."""
    state = ClusterState()
    for n in nodes:
        state.set_node(parse_node(n))
    for p in pods:
        state.add_pod(parse_pod(p))
    for obj in objects:
        add_object(state, obj)
    return state


def cluster_picture(state: ClusterState) -> dict[str, Any]:
    """Everything a decision can read of ``state``, copied: equal pictures, same cluster.

    Per node its pods in order, its sums, ports and generation; the cluster's pods,
    indexes (as sets and counts: their iteration order carries no meaning), nominations
    and generation.
    """
    nodes = {
        name: {
            "pods": list(info.pods),
            "with_affinity": list(info.pods_with_affinity),
            "sums": (
                info.requested_cpu,
                info.requested_memory,
                info.requested_ephemeral,
                dict(info.requested_scalar),
                info.nonzero_cpu,
                info.nonzero_memory,
            ),
            "ports": dict(info.used_ports),
            "generation": info.generation,
        }
        for name, info in state.nodes.items()
    }
    labels = {
        (ns, key, value): sorted(bucket) if isinstance(bucket, dict) else [bucket.uid]
        for ns, keys in state._by_label.items()
        for key, values in keys.items()
        for value, bucket in values.items()
    }
    return {
        "nodes": nodes,
        "pods": dict(state.pods),
        "affinity_pods": set(state.affinity_pods),
        "namespaces": {ns: set(pods) for ns, pods in state._by_namespace.items()},
        "labels": labels,
        "terms": [
            {term: dict(domains) for term, domains in index.items()}
            for index in (
                state.required_anti_affinity_terms,
                state.required_affinity_terms,
                state.preferred_affinity_terms,
                state.preferred_anti_affinity_terms,
            )
        ],
        "nominated": {node: dict(pods) for node, pods in state.nominated.items()},
        "generation": state.generation,
    }


def add_object(state: ClusterState, obj: Mapping[str, Any]) -> None:
    """Parse a PV, PVC, StorageClass, CSINode, Service or controller into ``state``."""
    kind = kind_of(obj)
    assert kind is not None and kind in OBJECT_KINDS, f"not a kind the cache keeps: {obj['kind']}"
    store(state, kind, kind.parse(obj))


def cycle(pod_obj: Pod, state: ClusterState, **settings: Any) -> CycleState:
    return CycleState(pod_obj, state, PolicySettings(**settings))


def policy(
    predicates: list[Any] | None = None,
    priorities: list[Any] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A SchedulingPolicy dict. Predicates/priorities may be names or (name, weight) pairs."""
    body: dict[str, Any] = dict(spec)
    if predicates is not None:
        body["predicates"] = [p if isinstance(p, dict) else {"name": p} for p in predicates]
    if priorities is not None:
        body["priorities"] = [
            p
            if isinstance(p, dict)
            else {"name": p[0], "weight": p[1]}
            if isinstance(p, tuple)
            else {"name": p, "weight": 1}
            for p in priorities
        ]
    return {
        "apiVersion": "policyscheduler.io/v1alpha1",
        "kind": "SchedulingPolicy",
        "metadata": {"name": "test"},
        "spec": body,
    }


def decide(
    pod_obj: Mapping[str, Any],
    state: ClusterState,
    policy_obj: Mapping[str, Any] | None = None,
    scheduler: Scheduler | None = None,
) -> Decision:
    """One real engine decision for a pod dict under a policy dict (default policy if None)."""
    from policy_scheduler.engine.compiler import compile_policy
    from policy_scheduler.policy import default_policy, parse_policy

    compiled = compile_policy(parse_policy(policy_obj) if policy_obj else default_policy())
    return asyncio.run((scheduler or Scheduler()).schedule(parse_pod(pod_obj), state, compiled))


# -- priority and disruption ------------------------------------------------------------------


def priority_class(
    name: str, value: int, *, global_default: bool = False, preemption_policy: str | None = None
) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }
    if global_default:
        obj["globalDefault"] = True
    if preemption_policy is not None:
        obj["preemptionPolicy"] = preemption_policy
    return obj


def pod_disruption_budget(
    name: str,
    labels: Mapping[str, str],
    allowed: int,
    *,
    namespace: str = "default",
    api_version: str = "policy/v1",
) -> dict[str, Any]:
    """A budget selecting ``labels`` whose status allows ``allowed`` disruptions now."""
    return {
        "apiVersion": api_version,
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": {"matchLabels": dict(labels)}},
        "status": {"disruptionsAllowed": allowed},
    }


# -- storage --------------------------------------------------------------------------------


def pv(
    name: str,
    *,
    source: Mapping[str, Any] | None = None,
    labels: Mapping[str, str] | None = None,
    storage_class: str | None = None,
    capacity: str | None = None,
    access_modes: Sequence[str] = (),
    affinity: Mapping[str, Sequence[str]] | None = None,
    claim: tuple[str, str] | None = None,
    phase: str = "Available",
    volume_mode: str | None = None,
    resource_version: str | None = None,
) -> dict[str, Any]:
    """A PV; ``affinity`` is {label: values} as one required In term per label."""
    spec: dict[str, Any] = dict(source or {})
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    if capacity is not None:
        spec["capacity"] = {"storage": capacity}
    if access_modes:
        spec["accessModes"] = list(access_modes)
    if affinity is not None:
        exprs = [{"key": k, "operator": "In", "values": list(v)} for k, v in affinity.items()]
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": exprs}]}}
    if claim is not None:
        spec["claimRef"] = {"namespace": claim[0], "name": claim[1]}
    if volume_mode is not None:
        spec["volumeMode"] = volume_mode
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = dict(labels)
    if resource_version is not None:
        meta["resourceVersion"] = resource_version
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": meta,
        "spec": spec,
        "status": {"phase": phase},
    }


def pvc(
    name: str,
    *,
    namespace: str = "default",
    volume_name: str = "",
    storage_class: str | None = None,
    request: str | None = None,
    access_modes: Sequence[str] = (),
    annotations: Mapping[str, str] | None = None,
    selector: Mapping[str, Any] | None = None,
    volume_mode: str | None = None,
    resource_version: str | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if volume_name:
        spec["volumeName"] = volume_name
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    if request is not None:
        spec["resources"] = {"requests": {"storage": request}}
    if access_modes:
        spec["accessModes"] = list(access_modes)
    if selector is not None:
        spec["selector"] = dict(selector)
    if volume_mode is not None:
        spec["volumeMode"] = volume_mode
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"uid-{name}"}
    if annotations:
        meta["annotations"] = dict(annotations)
    if resource_version is not None:
        meta["resourceVersion"] = resource_version
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec}


def storage_class(
    name: str,
    provisioner: str = "kubernetes.io/no-provisioner",
    *,
    mode: str | None = None,
    topologies: Sequence[Mapping[str, Sequence[str]]] | None = None,
) -> dict[str, Any]:
    """A StorageClass; ``topologies`` is a list of {label: values} terms."""
    sc: dict[str, Any] = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
    }
    if mode is not None:
        sc["volumeBindingMode"] = mode
    if topologies is not None:
        sc["allowedTopologies"] = [
            {"matchLabelExpressions": [{"key": k, "values": list(v)} for k, v in t.items()]}
            for t in topologies
        ]
    return sc


def csi_node(name: str, drivers: Mapping[str, int | None]) -> dict[str, Any]:
    entries = []
    for driver, count in drivers.items():
        entry: dict[str, Any] = {"name": driver, "nodeID": name}
        if count is not None:
            entry["allocatable"] = {"count": count}
        entries.append(entry)
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": name},
        "spec": {"drivers": entries},
    }


def csi_driver(name: str, *, storage_capacity: bool | None = True) -> dict[str, Any]:
    """A CSIDriver; ``storage_capacity``: its ``spec.storageCapacity`` (None: absent)."""
    spec: dict[str, Any] = {}
    if storage_capacity is not None:
        spec["storageCapacity"] = storage_capacity
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIDriver",
        "metadata": {"name": name},
        "spec": spec,
    }


def csi_storage_capacity(
    name: str,
    storage_class: str,
    *,
    capacity: str | None,
    maximum_volume_size: str | None = None,
    node_labels: Mapping[str, str] | None = None,
    namespace: str = "kube-system",
) -> dict[str, Any]:
    """A CSIStorageCapacity; ``node_labels``: its nodeTopology's matchLabels (None: no
    nodeTopology, which reaches no node)."""
    raw: dict[str, Any] = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIStorageCapacity",
        "metadata": {"name": name, "namespace": namespace},
        "storageClassName": storage_class,
    }
    if capacity is not None:
        raw["capacity"] = capacity
    if maximum_volume_size is not None:
        raw["maximumVolumeSize"] = maximum_volume_size
    if node_labels is not None:
        raw["nodeTopology"] = {"matchLabels": dict(node_labels)}
    return raw


def claim_volume(claim: str, name: str | None = None) -> dict[str, Any]:
    """A pod volume using a PVC."""
    return {"name": name or f"v-{claim}", "persistentVolumeClaim": {"claimName": claim}}


# -- dynamic resource allocation (resource.k8s.io/v1) -------------------------------------

#: The driver of the tests' GPUs.
GPU_DRIVER = "gpu.example.com"


def device_class(name: str = GPU_DRIVER, *selectors: str) -> dict[str, Any]:
    """A DeviceClass; by default the tests' GPUs: every device of ``GPU_DRIVER``."""
    exprs = selectors or (f'device.driver == "{GPU_DRIVER}"',)
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": e}} for e in exprs]},
    }


def gpu_slice(node_name: str, count: int, *, model: str | None = None) -> dict[str, Any]:
    """The ResourceSlice of ``count`` GPUs ("gpu-0"...) on ``node_name``, a pool of its
    own; with ``model``, each device has the attribute ``model``."""
    attributes = {"attributes": {"model": {"string": model}}} if model is not None else {}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node_name}-gpus"},
        "spec": {
            "driver": GPU_DRIVER,
            "nodeName": node_name,
            "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": f"gpu-{i}", **attributes} for i in range(count)],
        },
    }
