"""``policy-scheduler explain POD``: why is my pod pending, node by node, read-only.

It LISTs the cluster with the user's credentials (nothing is written), finds the
SchedulingPolicy that serves the pod's schedulerName exactly as the operator would
(oldest valid claim wins; the built-in default serves the default name), and runs one
decision with every node evaluated (``percentageOfNodesToScore`` is raised to 100 so
the table covers the whole cluster). The output is ``simulate``'s table for that pod.
"""

from __future__ import annotations

from dataclasses import replace

from kubernetes_asyncio import client

from ..engine.algorithm import Decision, Scheduler
from ..engine.compiler import CompiledPolicy
from ..simulation import InputError, inputs_from_objects
from ..state.policies import PolicyBook
from .listing import list_cluster


async def explain(
    api_client: client.ApiClient, namespace: str, name: str, default_scheduler_name: str
) -> tuple[CompiledPolicy, Decision]:
    objects = await list_cluster(api_client)
    target = None
    others = []
    for obj in objects:
        meta = obj.get("metadata") or {}
        if (
            obj.get("kind") == "Pod"
            and meta.get("namespace") == namespace
            and meta.get("name") == name
        ):
            target = obj
        else:
            others.append((obj, "cluster"))
    if target is None:
        raise InputError(f'pod "{namespace}/{name}" not found')
    node_name = (target.get("spec") or {}).get("nodeName")
    if node_name:
        raise InputError(f'pod "{namespace}/{name}" is already bound to node "{node_name}"')

    book = PolicyBook(default_scheduler_name)
    inputs = inputs_from_objects(others)
    for obj, _ in others:
        if obj.get("kind") == "SchedulingPolicy":
            book.apply(obj)
    pod_inputs = inputs_from_objects([(target, "cluster")])
    if not pod_inputs.pending:
        why = pod_inputs.skipped[0][1] if pod_inputs.skipped else "it is not pending"
        raise InputError(f'pod "{namespace}/{name}" is not scheduled: {why}')
    pod = pod_inputs.pending[0]
    policy = book.policy_for(pod.scheduler_name)
    if policy is None:
        raise InputError(
            f'no accepted SchedulingPolicy serves schedulerName "{pod.scheduler_name}"'
        )
    every_node = replace(policy, percentage_of_nodes_to_score=100)
    decision = await Scheduler().schedule(pod, inputs.cluster, every_node)
    return every_node, decision
