"""What the v1.30 volume plugins share: claim look-ups in upstream's words, statuses.

kube-scheduler's volume plugins read PVCs, PVs and StorageClasses through informer
listers, whose "not found" errors have one shape (``persistentvolumeclaim "data" not
found``); generic ephemeral volumes name their claim ``<pod>-<volume>`` and must be
controlled by the pod. Those rules and texts live here once.

Statuses. Each plugin's check is written once, as the engine predicate the fast path
runs (reasons; an UnschedulableAndUnresolvable one wrapped in
:class:`~..functions.Unresolvable`), and the public ``filter()`` turns the reasons
into a :class:`~..interface.Status` (:func:`status_of`). Where upstream returns an
*Error* status (a bug or an inconsistent object, not "does not fit": the whole
scheduling attempt fails and nothing is preempted), the check raises
:class:`FilterError`: the predicate reports its text as an Unresolvable reason (no
eviction helps, and the pod's message says why), ``filter()`` as ``Status.error``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from ...objects import PersistentVolumeClaim, Pod, Volume
from ...volumenames import PVC
from ..functions import CycleState, Reasons, Unresolvable, is_unresolvable
from ..interface import NodeInfoView, Status
from ..nodeinfo import NodeInfo
from ..predicates.volumes import go_quote as go_quote  # shared with the legacy predicates

EPHEMERAL: Final = "ephemeral"


class FilterError(Exception):
    """What upstream returns as an Error status (see the module docstring)."""


def not_found(resource: str, name: str) -> str:
    """An informer lister's NotFound error (``apierrors.NewNotFound``)."""
    return f"{resource} {go_quote(name)} not found"


def claim_not_found(name: str) -> str:
    return not_found("persistentvolumeclaim", name)


def ephemeral_claim_name(pod: Pod, volume: Volume) -> str:
    """``ephemeral.VolumeClaimName``: the claim a generic ephemeral volume is given."""
    return f"{pod.name}-{volume.name}"


def not_owned(pvc: PersistentVolumeClaim, pod: Pod) -> str | None:
    """``ephemeral.VolumeIsForPod``: None when the pod controls the claim, else why not."""
    if pvc.namespace == pod.namespace and pvc.controller_uid == pod.uid:
        return None
    return (
        f"PVC {pvc.namespace}/{pvc.name} was not created for pod "
        f"{pod.namespace}/{pod.name} (pod is not owner)"
    )


def has_claims(pod: Pod) -> bool:
    """The pod has a PVC or a generic ephemeral volume."""
    for volume in pod.volumes:
        if volume.kind == PVC or volume.kind == EPHEMERAL:
            return True
    return False


def status_of(reasons: Reasons) -> Status | None:
    """A predicate's reasons as the Filter status upstream returns (None: Success)."""
    if not reasons:
        return None
    if any(is_unresolvable(reason) for reason in reasons):
        return Status.unresolvable(*(str(reason) for reason in reasons))
    return Status.unschedulable(*reasons)


def node_info(state: CycleState, node: NodeInfoView) -> NodeInfo:
    """The engine's NodeInfo behind a view the framework passed (it is that NodeInfo)."""
    if isinstance(node, NodeInfo):
        return node
    return state.cluster.nodes[node.name]


def run_filter(
    check: Callable[[Pod, NodeInfo, CycleState], Reasons],
    state: CycleState,
    pod: Pod,
    node: NodeInfoView,
) -> Status | None:
    """A plugin's public ``filter()``: its check on one node, as a Status."""
    try:
        return status_of(check(pod, node_info(state, node), state))
    except FilterError as exc:
        return Status.error(str(exc))


def unresolvable(text: str) -> tuple[str, ...]:
    return (Unresolvable(text),)
