"""``policy-scheduler explain POD``: why is my pod pending, node by node, read-only.

It LISTs the cluster with the user's credentials (nothing is written) and feeds every
object through the scheduler's own door (:class:`~..state.world.World`), so the pod is
judged by the same admission rule and the same policy as the operator would use (oldest
valid claim wins; the built-in default serves the default name; a policy serving
kube-scheduler's ``default-scheduler`` counts only with ``allow_default_scheduler``, the
operator's ``--allow-default-scheduler``). It then runs one
decision with every node evaluated (``percentageOfNodesToScore`` is raised to 100 so the
table covers the whole cluster) and, when no node fits, asks preemption whether evicting
lower-priority pods would make room, and whom (nothing is evicted). The output is
``simulate``'s table for that pod, ``would preempt ns/a on node-3`` included.

A pod the scheduler already decided, waiting for its volumes (a PV reserved for one of
its claims through ``spec.claimRef``, or a claim to provision annotated with the chosen
node, not yet bound by the PV controller or the provisioner), is not judged again: a
decision on a cluster where its own reservations stand would explain nothing.
:class:`WaitingForVolumes` says what it waits for instead.

A member of a gang (the policy runs a gang plugin, Coscheduling) is decided as the
operator decides it: with the gang's plan (:class:`~..deciding.Decider`), every pending
member of its group planned together on the cluster as it is, so the answer is the
group's (``pod group "ns/g": 2 of 3 members would fit``, or that it waits for members),
and the table is the pod's own cycle within that plan.

The policy's HTTP extenders are asked as the operator would ask them (filter,
prioritize, preempt; never bind) through the ``extenders`` client the caller passes;
without one (``--skip-extenders``) they are left out, and the caller says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from kubernetes_asyncio import client

from ..deciding import Decider, Outcome
from ..engine.algorithm import Decision, Scheduler
from ..engine.cluster import ClusterState
from ..engine.compiler import CompiledPolicy
from ..engine.extenders import ExtenderClient
from ..engine.preemption import Preemption
from ..kinds import KINDS, PARSE_ERRORS, POD
from ..names import KUBE_SCHEDULER_NAME
from ..objects import Pod
from ..simulation import InputError
from ..state.admission import Admission, admit
from ..state.world import World
from ..volumenames import ANN_SELECTED_NODE, PVC
from .access import access_error
from .kubeapi import ApiError, KubeApi
from .listing import list_cluster


class WaitingForVolumes(Exception):
    """The pod was decided and waits for its volumes: the message says which, and how."""


def volumes_in_flight(pod: Pod, cluster: ClusterState) -> list[str]:
    """What each of the pod's claims still waits for, once the scheduler reserved it."""
    waiting = []
    for volume in pod.volumes:
        if volume.kind != PVC:
            continue
        key = f"{pod.namespace}/{volume.handle}"
        claim = cluster.claims.get(key)
        if claim is None or claim.volume_name:
            continue  # missing (the decision says so), or bound: nothing to wait for
        reserved = next(
            (
                pv.name
                for pv in cluster.persistent_volumes.values()
                if pv.claim == key and pv.claim_uid in ("", claim.uid)
            ),
            None,
        )
        selected = claim.annotations.get(ANN_SELECTED_NODE)
        if reserved is not None:
            waiting.append(
                f'claim "{volume.handle}": PV "{reserved}" is reserved for it (spec.claimRef), '
                "the PV controller has yet to bind them"
            )
        elif selected:
            waiting.append(
                f'claim "{volume.handle}": to be provisioned for node "{selected}" '
                f"({ANN_SELECTED_NODE}), the provisioner has yet to create its volume"
            )
    return waiting


async def explain(
    api_client: client.ApiClient,
    namespace: str,
    name: str,
    default_scheduler_name: str,
    *,
    extenders: ExtenderClient | None = None,
    allow_default_scheduler: bool = False,
) -> tuple[CompiledPolicy, Decision]:
    world = World(
        default_scheduler_name=default_scheduler_name,
        allow_default_scheduler=allow_default_scheduler,
    )
    target = None
    api = KubeApi(api_client)
    try:
        listed = await list_cluster(api)
    except ApiError as exc:
        raise access_error(
            exc,
            api,
            needs="explain reads the cluster as the scheduler does: your account needs "
            f"list on {', '.join(kind.plural for kind in KINDS)}",
        ) from None
    for obj in listed:
        meta = obj.get("metadata") or {}
        if obj.get("kind") == "Pod" and (meta.get("namespace"), meta.get("name")) == (
            namespace,
            name,
        ):
            target = obj
        else:
            world.observe(None, obj)
    if target is None:
        raise InputError(f'pod "{namespace}/{name}" not found')
    try:
        pod = world.resolve_priority(POD.parse(target))
    except PARSE_ERRORS as exc:
        raise InputError(f"the scheduler cannot read this pod: {exc}") from None
    admission = admit(pod)
    if admission is Admission.PLACED:
        raise InputError(f'pod "{namespace}/{name}" is already bound to node "{pod.node_name}"')
    if admission is not Admission.PENDING:
        raise InputError(f'pod "{namespace}/{name}" is not scheduled: {admission.value}')
    waiting = volumes_in_flight(pod, world.cache.cluster)
    if waiting:
        raise WaitingForVolumes(
            f'pod "{namespace}/{name}" was scheduled and is waiting for its volumes, not for '
            f"a node: {'; '.join(waiting)}. The scheduler binds the pod once every claim is "
            "bound, or decides it again after --volume-binding-timeout (600 s by default); "
            f"`kubectl describe pvc -n {namespace}` shows what the controllers say."
        )
    policy = world.book.policy_for(pod.scheduler_name)
    if policy is None and pod.scheduler_name == KUBE_SCHEDULER_NAME:
        raise InputError(
            f'pod "{namespace}/{name}" asks for schedulerName "{KUBE_SCHEDULER_NAME}", '
            "kube-scheduler's: the operator leaves its pods to kube-scheduler unless run "
            "with --allow-default-scheduler (explain answers as such an operator would "
            "when given --allow-default-scheduler too)"
        )
    if policy is None:
        raise InputError(
            f'no accepted SchedulingPolicy serves schedulerName "{pod.scheduler_name}"'
        )
    every_node = replace(policy, percentage_of_nodes_to_score=100)
    if policy.pipeline.gangs and policy.pipeline.gang_of(pod) is not None:
        return every_node, await _explain_gang_member(world, target, pod, extenders)
    scheduler = Scheduler(extenders=extenders)
    with world.cache.snapshot() as cluster:
        decision = await scheduler.schedule(pod, cluster, every_node)
        # Would evicting lower-priority pods help? Computed only, nothing is deleted.
        await scheduler.preempt(decision, cluster, every_node)
    if decision.node is None and decision.failed and policy.disable_preemption:
        decision.preemption = Preemption(
            None, reason=f'the policy "{policy.name}" disables it (spec.disablePreemption)'
        )
    return every_node, decision


async def _explain_gang_member(
    world: World, target: Mapping[str, Any], pod: Pod, extenders: ExtenderClient | None
) -> Decision:
    """The pod's decision within its gang's plan (the module docstring)."""
    world.observe(None, target)  # the pod is one of the members its group counts
    taken = world.queue.take(lambda queued: queued.uid == pod.uid)
    if not taken:
        raise InputError(f'pod "{pod.key}" is not waiting in the scheduling queue')
    decider = Decider(world, explain=True, extenders=extenders)
    attempts = await decider.decide(taken[0])
    for attempt in attempts:
        if attempt.queued.pod.uid != pod.uid or attempt.decision is None:
            continue
        decision = attempt.decision
        decision.gang = attempt.gang
        if attempt.outcome is Outcome.REJECTED and attempt.status is not None:
            status = attempt.status
            decision.node = None
            text = status.message or "rejected"
            decision.message = f"{status.plugin}: {text}" if status.plugin else text
        return decision
    raise InputError(f'pod "{pod.key}" could not be decided')
