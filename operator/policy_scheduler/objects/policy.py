"""Workload and policy kinds: the workloads (Service, ReplicationController, ReplicaSet,
StatefulSet) that spread pods, PodDisruptionBudget, Namespace, PriorityClass and
scheduler-plugins' PodGroup (the gang), with their parsers.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from ..selectors import Selector, set_selector
from .common import (
    Resources,
    _metadata,
    _preemption_policy,
    _Reader,
    _time_text,
    parse_timestamp,
    shared_labels,
)
from .pods import Pod


@dataclass(frozen=True, slots=True)
class Workload:
    """A Service, ReplicationController, ReplicaSet or StatefulSet: what selects pods."""

    kind: str
    namespace: str
    name: str
    selector: Selector

    @property
    def key(self) -> str:
        return f"{self.kind}/{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class PodDisruptionBudget:
    """A PodDisruptionBudget (policy/v1 or v1beta1) as preemption reads it.

    ``selector`` None: the budget selects no pod (kube-scheduler's rule for a nil or an
    empty selector, whatever the API version says about empty ones).
    """

    namespace: str
    name: str
    selector: Selector | None
    #: ``status.disruptionsAllowed`` (0 when the status is not written yet).
    disruptions_allowed: int
    #: ``status.disruptedPods``' names: evictions the API server already counted.
    disrupted_pods: frozenset[str] = frozenset()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def selects(self, pod: Pod) -> bool:
        """The pod is in the budget's namespace and its selector matches the pod's labels."""
        return (
            self.selector is not None
            and pod.namespace == self.namespace
            and self.selector.matches(pod.labels)
        )


@dataclass(frozen=True, slots=True)
class Namespace:
    """A Namespace, for its labels: a pod affinity term's namespaceSelector selects by them."""

    name: str
    labels: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class PriorityClass:
    """A PriorityClass (scheduling.k8s.io/v1): what admission writes into a pod's spec."""

    name: str
    value: int
    global_default: bool
    preemption_policy: str = ""


#: The label that makes a pod a member of a PodGroup (scheduler-plugins'
#: ``v1alpha1.PodGroupLabel``): its value is the PodGroup's name, in the pod's namespace.
POD_GROUP_LABEL: Final = "scheduling.x-k8s.io/pod-group"
#: PodGroup phases (scheduler-plugins v0.30's ``PodGroupPhase``).
POD_GROUP_PENDING: Final = "Pending"
POD_GROUP_SCHEDULING: Final = "Scheduling"
POD_GROUP_RUNNING: Final = "Running"
POD_GROUP_FINISHED: Final = "Finished"
POD_GROUP_FAILED: Final = "Failed"


@dataclass(frozen=True, slots=True)
class PodGroup:
    """A PodGroup (``scheduling.x-k8s.io/v1alpha1``, scheduler-plugins' gang): pods
    labelled ``scheduling.x-k8s.io/pod-group: NAME`` in its namespace are its members.

    ``min_member``: how many members must be placed together (0 when the spec says
    none: every group is then satisfied); ``min_resources``: what the cluster must have
    free for ``min_member`` members (None: not checked), in the units of
    :class:`Resources`; ``schedule_timeout_seconds``: how long a member may wait at
    Permit (None: the plugin's default). The status fields are as the API holds them
    (the operator keeps them up to date, ``runtime/podgroups.py``).
    """

    namespace: str
    name: str
    uid: str = ""
    #: ``metadata.creationTimestamp`` in epoch seconds (0.0 when unknown).
    created: float = 0.0
    min_member: int = 0
    min_resources: Resources | None = None
    schedule_timeout_seconds: int | None = None
    resource_version: str = ""
    #: ``status.phase``: "" (not written yet), Pending, Scheduling, Running, Finished,
    #: Failed (or Unknown, which v0.30 defines and never writes).
    phase: str = ""
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    #: ``status.scheduleStartTime`` as written ("" when absent).
    schedule_start_time: str = ""
    occupied_by: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


#: The classes every API server creates at startup (``SystemPriorityClasses``).
SYSTEM_PRIORITY_CLASSES: Final = (
    PriorityClass("system-node-critical", 2000001000, False),
    PriorityClass("system-cluster-critical", 2000000000, False),
)


# -- workloads -----------------------------------------------------------------------------


def parse_workload(raw: Mapping[str, Any]) -> Workload:
    """A Service, ReplicationController, ReplicaSet or StatefulSet, by its selector."""
    kind = str(raw.get("kind", "")) if isinstance(raw, Mapping) else ""
    _, name, namespace = _metadata(raw, kind or "Workload", namespaced=True)
    r = _Reader(kind, f"{namespace}/{name}")
    spec = r.mapping(raw.get("spec"), "spec")
    if kind in ("Service", "ReplicationController"):
        # Map selectors; an absent or empty one selects no pod for spreading purposes.
        selector_map = r.labels(spec.get("selector"), "spec.selector")
        selector = set_selector(selector_map) if selector_map else Selector(nothing=True)
    elif kind in ("ReplicaSet", "StatefulSet"):
        selector = r.selector(spec.get("selector"), "spec.selector")
    else:
        raise r.fail("kind", f"is not a workload kind: {kind!r}")
    return Workload(kind=kind, namespace=namespace, name=name, selector=selector)


WORKLOAD_KINDS: Final = frozenset({"Service", "ReplicationController", "ReplicaSet", "StatefulSet"})


# -- priority and disruption ---------------------------------------------------------------


def parse_pod_disruption_budget(raw: Mapping[str, Any]) -> PodDisruptionBudget:
    """policy/v1 or policy/v1beta1: both keep the selector and ``disruptionsAllowed``."""
    _, name, namespace = _metadata(raw, "PodDisruptionBudget", namespaced=True)
    r = _Reader("PodDisruptionBudget", f"{namespace}/{name}")
    spec = r.mapping(raw.get("spec"), "spec")
    status = r.mapping(raw.get("status"), "status")
    selector: Selector | None = r.selector(spec.get("selector"), "spec.selector")
    if selector is not None and (selector.nothing or selector.empty):
        # kube-scheduler: "A PDB with a nil or empty selector matches nothing."
        selector = None
    return PodDisruptionBudget(
        namespace=sys.intern(namespace),
        name=name,
        selector=selector,
        disruptions_allowed=r.integer(
            status.get("disruptionsAllowed"), "status.disruptionsAllowed"
        ),
        disrupted_pods=frozenset(r.mapping(status.get("disruptedPods"), "status.disruptedPods")),
    )


def parse_namespace(raw: Mapping[str, Any]) -> Namespace:
    meta, name, _ = _metadata(raw, "Namespace", namespaced=False)
    r = _Reader("Namespace", name)
    labels = shared_labels(r.labels(meta.get("labels"), "metadata.labels"))
    return Namespace(name=name, labels=labels)


def parse_priority_class(raw: Mapping[str, Any]) -> PriorityClass:
    _, name, _ = _metadata(raw, "PriorityClass", namespaced=False)
    r = _Reader("PriorityClass", name)
    if raw.get("value") is None:
        raise r.fail("value", "is required")
    return PriorityClass(
        name=name,
        value=r.integer(raw.get("value"), "value"),
        global_default=r.boolean(raw.get("globalDefault"), "globalDefault"),
        preemption_policy=_preemption_policy(r, raw.get("preemptionPolicy"), "preemptionPolicy"),
    )


# -- gangs -----------------------------------------------------------------------------------


def parse_pod_group(raw: Mapping[str, Any]) -> PodGroup:
    """A PodGroup of scheduler-plugins (``scheduling.x-k8s.io/v1alpha1``), spec and status."""
    meta, name, namespace = _metadata(raw, "PodGroup", namespaced=True)
    r = _Reader("PodGroup", f"{namespace}/{name}")
    spec = r.mapping(raw.get("spec"), "spec")
    status = r.mapping(raw.get("status"), "status")
    min_member = r.integer(spec.get("minMember"), "spec.minMember", bits=32)
    if min_member < 0:
        raise r.fail("spec.minMember", f"must not be negative, got {min_member}")
    raw_resources = spec.get("minResources")
    timeout = spec.get("scheduleTimeoutSeconds")
    return PodGroup(
        namespace=sys.intern(namespace),
        name=name,
        uid=r.string(meta.get("uid"), "metadata.uid"),
        created=parse_timestamp(meta.get("creationTimestamp")),
        min_member=min_member,
        min_resources=(
            r.resources(raw_resources, "spec.minResources") if raw_resources is not None else None
        ),
        schedule_timeout_seconds=(
            r.integer(timeout, "spec.scheduleTimeoutSeconds", bits=32)
            if timeout is not None
            else None
        ),
        resource_version=r.string(meta.get("resourceVersion"), "metadata.resourceVersion"),
        phase=r.string(status.get("phase"), "status.phase"),
        running=r.integer(status.get("running"), "status.running", bits=32),
        succeeded=r.integer(status.get("succeeded"), "status.succeeded", bits=32),
        failed=r.integer(status.get("failed"), "status.failed", bits=32),
        schedule_start_time=_time_text(status.get("scheduleStartTime")),
        occupied_by=r.string(status.get("occupiedBy"), "status.occupiedBy"),
    )
