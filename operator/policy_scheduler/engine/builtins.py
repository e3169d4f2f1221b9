"""The legacy scheduler's stages as plugins of the pipeline.

What a legacy policy is translated into, besides its predicates (Filter plugins) and
priorities (Score plugins), as kube-scheduler v1.18+ translated a Policy through its
legacy registry:

=====================  ==============================================================
plugin                 points and what it does
=====================  ==============================================================
PrioritySort           QueueSort: higher ``spec.priority`` first, then the older pod
LegacyPreemption       PostFilter: v1.13-v1.17 preemption (:mod:`.preemption`); absent
                       under ``disablePreemption``
CheckVolumeBinding     Reserve / Unreserve / PreBind, with the predicate of that name:
                       the PVs and claims the decision matched are assumed in the cache,
                       then written and waited for before the binding (the legacy
                       volume binder)
DefaultBinder          Bind: the ``pods/binding`` call
=====================  ==============================================================

Their work in the scheduler (the cache, the API) goes through the handle's
:class:`~.handles.Ports`; offline they do nothing more than the decision says.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from .. import names
from ..objects import Pod
from .functions import CycleState
from .handles import ports_of
from .interface import (
    BindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    QueuedPodInfo,
    QueueSortPlugin,
    ReservePlugin,
    Status,
)
from .pipeline import NodeStatuses
from .predicates.volumes import PodVolumes

#: CycleState key under which the scheduler leaves the decision's volumes on the chosen
#: node (FindPodVolumes' answer) for CheckVolumeBinding's Reserve and PreBind.
VOLUMES_KEY: Final = "policy-scheduler/volumes"
#: CycleState key of what preemption needs that a plugin's arguments cannot say: the
#: compiled policy, the extenders' hook, the evaluation's chunking.
PREEMPTION_KEY: Final = "policy-scheduler/preemption"


@dataclass(frozen=True, slots=True)
class PreemptionContext:
    """What the scheduler gives the built-in PostFilter plugins for this attempt: legacy
    preemption bound to the policy, extenders and chunking (``run``:
    :func:`~.preemption.preempt`; this module sits below it), the compiled policy and the
    extenders' hook (DefaultPreemption's dry runs filter with the policy)."""

    run: Callable[[Pod, Mapping[str, Sequence[str]]], Awaitable[Any]]
    policy: Any = None  # CompiledPolicy (the compiler imports this module)
    process: Any = None  # PreemptionHook | None


class PrioritySort(QueueSortPlugin):
    """Higher ``spec.priority`` first, then the one queued earlier (kube-scheduler's)."""

    name = names.PRIORITY_SORT

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        pa, pb = a.pod.priority, b.pod.priority
        return pa > pb or (pa == pb and a.timestamp < b.timestamp)


class LegacyPreemption(PostFilterPlugin):
    """Legacy preemption as the PostFilter: the answer is a :class:`~.preemption.Preemption`
    (the node and victims, or why none, and the nominations to clear)."""

    name = names.LEGACY_PREEMPTION
    #: It evaluates the cluster, yielding between node chunks: no deadline.
    timeout_seconds = float("inf")

    async def post_filter(  # type: ignore[override]  # a built-in's richer answer
        self, state: CycleState, pod: Pod, statuses: Mapping[str, Status]
    ) -> tuple[Any, Status | None]:
        context: PreemptionContext = state.read(PREEMPTION_KEY)
        failed: Mapping[str, Sequence[str]] = (
            statuses.failed
            if isinstance(statuses, NodeStatuses)
            else {name: status.reasons for name, status in statuses.items()}
        )
        found = await context.run(pod, failed)  # a preemption.Preemption
        if found.node is None:
            return found, Status.unschedulable(found.reason or "preemption found no node")
        return found, None


class CheckVolumeBinding(ReservePlugin, PreBindPlugin):
    """The legacy volume binder's Reserve and PreBind (the Filter is the predicate)."""

    name = names.CHECK_VOLUME_BINDING
    #: Binding volumes waits for the PV controller (``--volume-binding-timeout``): the
    #: port owns that deadline.
    timeout_seconds = float("inf")

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        volumes = _volumes(state)
        if volumes is not None and volumes.needs_binding:
            ports_of(self.handle).assume_volumes(pod, volumes)
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        volumes = _volumes(state)
        if volumes is not None and volumes.needs_binding:
            ports_of(self.handle).forget_volumes(pod)

    async def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        volumes = _volumes(state)
        if volumes is None or not volumes.needs_binding:
            return None
        return await ports_of(self.handle).bind_volumes(state, pod, volumes)


def _volumes(state: CycleState) -> PodVolumes | None:
    return state.read(VOLUMES_KEY) if VOLUMES_KEY in state else None


class DefaultBinder(BindPlugin):
    """The ``pods/binding`` call (kube-scheduler's DefaultBinder)."""

    name = names.DEFAULT_BINDER
    #: The API client's own deadline and retries apply (``--api-timeout``).
    timeout_seconds = float("inf")

    async def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        return await ports_of(self.handle).bind_pod(state, pod, node_name)


#: The built-in plugins by name (the in-tree v1.25-v1.30 ones are added by ``intree``).
BUILTIN_PLUGINS: dict[str, type[Any]] = {
    cls.name: cls for cls in (PrioritySort, LegacyPreemption, CheckVolumeBinding, DefaultBinder)
}
