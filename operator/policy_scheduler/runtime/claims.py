"""DRA's writes: a pod's ResourceClaims allocated and reserved in PreBind, given back in
Unreserve (kube-scheduler v1.34's DynamicResources ``bindClaim`` and ``Unreserve``).

PreBind, per claim not yet reserved for the pod, in the claims' order:

1. read the claim as the API has it now; one being deleted fails the binding
   (``claim NS/NAME got deleted in the meantime``), as does one that someone else
   allocated since this scheduler chose its devices (``claim NS/NAME got allocated
   elsewhere in the meantime``);
2. for a claim this scheduler allocates: its finalizer
   (``resource.kubernetes.io/delete-protection``) in a normal update, so that the claim
   is not deleted while allocated;
3. ``status.allocation`` (when allocating) and the pod in ``status.reservedFor``, in one
   status update. A 409 (the claim changed meanwhile) starts over from 1, at most five
   times (client-go's ``retry.DefaultRetry``). A 5xx or no answer may hide a write that
   landed with its reply lost: the claim is read once more, and if it shows the pod
   reserved the write landed and PreBind goes on; else it fails (no second write). Without
   that read, Unreserve would give back devices the claim holds and the next pod would be
   allocated them too (kube-scheduler v1.34 has that window).

PostFilter (:func:`deallocate_claim`): an allocated claim that kept the pod off a node and
that no other pod reserves loses its allocation and reservation, in one status update.

A failure is PreBind's Error naming the claim: the binding cycle unreserves the pod
(the devices in flight are given back) and retries it. Unreserve takes the pod out of
``reservedFor`` of the claims PreBind reserved, in the background (the binding cycle does
not wait for it; a failure is logged and the next attempt finds the claim reserved
already).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Final

from ..devices import Allocation, ResourceClaim
from ..engine.interface import Status
from ..objects import Pod
from .kubeapi import Api

logger = logging.getLogger(__name__)

#: The finalizer an allocated claim carries (``resourceapi.Finalizer``).
FINALIZER: Final = "resource.kubernetes.io/delete-protection"
#: How often a claim changed meanwhile (409) is read and written again.
RETRIES: Final = 5


def _reference(pod: Pod) -> dict[str, str]:
    return {"resource": "pods", "name": pod.name, "uid": pod.uid}


async def reserve_claims(
    api: Api, pod: Pod, claims: Sequence[tuple[ResourceClaim, Allocation | None]]
) -> Status | None:
    """PreBind: each claim allocated (when ``allocation`` is given) and reserved for the
    pod; None when all are, else the Error naming the first claim that could not be."""
    for claim, allocation in claims:
        problem = await _reserve(api, pod, claim, allocation)
        if problem is not None:
            return Status.error(problem)
    return None


async def _reserve(
    api: Api, pod: Pod, claim: ResourceClaim, allocation: Allocation | None
) -> str | None:
    key = claim.key
    failed: str | None = None  # a status write answered 5xx or not at all: did it land?
    for _ in range(RETRIES):
        status, current = await api.get_resource_claim(claim.namespace, claim.name)
        if status == 404:
            return failed or f"claim {key} got deleted in the meantime"
        if status != 200 or current is None:
            return failed or f"reading claim {key}: HTTP {status or 'no answer'}"
        meta = current.setdefault("metadata", {})
        state = current.get("status") or {}
        reserved = list(state.get("reservedFor") or [])
        if any(ref.get("uid") == pod.uid for ref in reserved):
            return None  # reserved already (an earlier attempt's write landed)
        if failed is not None:
            return failed  # it did not land: PreBind fails, as upstream's, no second write
        if meta.get("deletionTimestamp"):
            return f"claim {key} got deleted in the meantime"
        if allocation is not None:
            if state.get("allocation"):
                return f"claim {key} got allocated elsewhere in the meantime"
            finalizers = list(meta.get("finalizers") or [])
            if FINALIZER not in finalizers:
                meta["finalizers"] = [*finalizers, FINALIZER]
                status, written = await api.replace_resource_claim(
                    claim.namespace, claim.name, current, status=False
                )
                if status == 409:
                    continue
                if status >= 300 or written is None:
                    return f"add finalizer to claim {key}: HTTP {status or 'no answer'}"
                current = written
            current["status"] = dict(current.get("status") or {})
            current["status"]["allocation"] = allocation.to_api()
        else:
            current["status"] = dict(state)
        current["status"]["reservedFor"] = [*reserved, _reference(pod)]
        status, _ = await api.replace_resource_claim(
            claim.namespace, claim.name, current, status=True
        )
        if status == 409:
            continue
        if status >= 300 or status == 0:
            what = "allocation and reservation" if allocation is not None else "reservation"
            problem = f"add {what} to claim {key}: HTTP {status or 'no answer'}"
            if status >= 500 or status == 0:
                # The write may have landed with its reply lost: read the claim again
                # rather than give its devices back while they are the claim's (the next
                # pod would get them too). Landed, PreBind goes on.
                failed = problem
                continue
            return problem
        return None
    return failed or f"claim {key} kept changing: gave up after {RETRIES} conflicts"


async def deallocate_claim(api: Api, pod: Pod, claim: ResourceClaim) -> Status | None:
    """PostFilter: the claim's ``status.allocation``, ``reservedFor`` and ``devices``
    cleared in one status update (v1.34's DynamicResources), if it is still allocated and
    reserved for no other pod than ``pod``; None when done or nothing to do, else the
    Error naming the claim (a 409 too: the claim changed since the attempt read it, as
    upstream's update of its cached copy fails)."""
    key = claim.key
    status, current = await api.get_resource_claim(claim.namespace, claim.name)
    if status == 404:
        return None  # gone: nothing holds its devices any more
    if status != 200 or current is None:
        return Status.error(f"reading claim {key}: HTTP {status or 'no answer'}")
    state = dict(current.get("status") or {})
    others = [r for r in state.get("reservedFor") or [] if r.get("uid") != pod.uid]
    if not state.get("allocation") or others:
        return None  # deallocated meanwhile, or another pod uses it now
    for field in ("allocation", "reservedFor", "devices"):
        state.pop(field, None)
    current["status"] = state
    status, _ = await api.replace_resource_claim(claim.namespace, claim.name, current, status=True)
    if not 200 <= status < 300:
        return Status.error(f"deallocate claim {key}: HTTP {status or 'no answer'}")
    return None


async def release_claims(api: Api, pod: Pod, claims: Sequence[ResourceClaim]) -> None:
    """Unreserve: the pod out of each claim's ``reservedFor`` (best effort, logged)."""
    for claim in claims:
        try:
            await _release(api, pod, claim)
        except Exception:  # a background write: never the binding cycle's crash
            logger.exception("could not release claim %s for %s", claim.key, pod.key)


async def _release(api: Api, pod: Pod, claim: ResourceClaim) -> None:
    for _ in range(RETRIES):
        status, current = await api.get_resource_claim(claim.namespace, claim.name)
        if status != 200 or current is None:
            return  # gone, or unreadable: nothing we can take back now
        state: dict[str, Any] = dict(current.get("status") or {})
        reserved = [r for r in state.get("reservedFor") or [] if r.get("uid") != pod.uid]
        if len(reserved) == len(state.get("reservedFor") or []):
            return  # not reserved for the pod
        state["reservedFor"] = reserved
        current["status"] = state
        status, _ = await api.replace_resource_claim(
            claim.namespace, claim.name, current, status=True
        )
        if status != 409:
            if status >= 300:
                logger.warning(
                    "could not release claim %s for %s: HTTP %s", claim.key, pod.key, status
                )
            return
