"""Builders for gang-scheduling tests: PodGroups, members, and a Coscheduling policy.

The policy enables Coscheduling as docs/gang-scheduling.md shows (the QueueSort point on
its own, every other point through multiPoint); the plugin is found through this
project's entry point, as any installed plugin is.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from builders import pod
from policy_scheduler.objects import POD_GROUP_LABEL
from policy_scheduler.policy import SchedulingPolicy, parse_policy
from policy_scheduler.simulation import Inputs, inputs_from_objects, simulate

SCHEDULER = "policy-scheduler"
CREATED = "2024-05-01T00:00:00Z"


def policy_object(args: Mapping[str, Any] | None = None, name: str = "gangs") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": SCHEDULER,
        "plugins": {
            "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]},
            "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
        },
    }
    if args is not None:
        spec["pluginConfig"] = [{"name": "Coscheduling", "args": dict(args)}]
    return {
        "apiVersion": "policyscheduler.io/v1alpha1",
        "kind": "SchedulingPolicy",
        "metadata": {"name": name},
        "spec": spec,
    }


def coscheduling_policy(args: Mapping[str, Any] | None = None) -> SchedulingPolicy:
    return parse_policy(policy_object(args))


def pod_group(
    name: str,
    min_member: int,
    *,
    namespace: str = "default",
    min_resources: Mapping[str, Any] | None = None,
    timeout: int | None = None,
    created: str = CREATED,
    status: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"minMember": min_member}
    if min_resources is not None:
        spec["minResources"] = dict(min_resources)
    if timeout is not None:
        spec["scheduleTimeoutSeconds"] = timeout
    out: dict[str, Any] = {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"pg-uid-{namespace}-{name}",
            "creationTimestamp": created,
        },
        "spec": spec,
    }
    if status is not None:
        out["status"] = dict(status)
    return out


def member(
    name: str,
    group: str | None,
    *,
    memory: str | None = None,
    cpu: str | None = None,
    priority: int = 0,
    namespace: str = "default",
    second: int = 1,
    **extra: Any,
) -> dict[str, Any]:
    """A pod of ``group`` (None: a plain pod) for the Coscheduling policy."""
    requests = {k: v for k, v in (("memory", memory), ("cpu", cpu)) if v is not None}
    raw = pod(
        name,
        namespace=namespace,
        labels={POD_GROUP_LABEL: group} if group else None,
        requests=requests or None,
        priority=priority,
        **extra,
    )
    raw["spec"]["schedulerName"] = SCHEDULER
    raw["metadata"]["creationTimestamp"] = f"2024-05-01T00:01:{second:02d}Z"
    return raw


def inputs(objects: list[dict[str, Any]], args: Mapping[str, Any] | None = None) -> Inputs:
    return inputs_from_objects([(o, "test") for o in objects], policy=coscheduling_policy(args))


def placements(
    objects: list[dict[str, Any]], args: Mapping[str, Any] | None = None
) -> dict[str, tuple[str | None, str]]:
    """Pod name -> (node or None, message), by ``simulate``."""
    decisions = asyncio.run(simulate(inputs(objects, args), explain=False))
    return {d.pod.name: (d.node, d.message) for d in decisions}
