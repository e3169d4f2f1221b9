"""Binding a pod's volumes before the pod: the legacy volume binder's BindPodVolumes.

A decision for a pod with unbound WaitForFirstConsumer claims carries how they bind on
the chosen node (:class:`~..engine.predicates.volumes.PodVolumes`), and the scheduler
cache has assumed it. Before the pod's own binding, :class:`VolumeBinder` makes it
true in the API, in kube-scheduler's order (v1.13-v1.17 ``bindAPIUpdate`` then
``checkBindings``):

1. **Write** — each PV matched to a claim gets the claim in ``spec.claimRef`` (kind,
   namespace, name, uid, apiVersion, resourceVersion: a full object reference) and the
   annotation ``pv.kubernetes.io/bound-by-controller: "yes"`` unless the PV was already
   pre-bound to that claim by a user; then each claim to provision gets the annotation
   ``volume.kubernetes.io/selected-node: NODE`` (kube-scheduler v1.11+ wrote only that
   key; the alpha ``volume.alpha.kubernetes.io/selected-node`` of v1.10 is read by
   provisioners, never written by schedulers of our era). Both are PUTs of the object
   as the decision saw it, carrying that ``resourceVersion``: if anyone changed it
   since, the API answers 409 Conflict and the binding fails, nothing is overwritten.
   The answers are fed back through the runtime's door, so the cache shows what the
   API now holds (an assumption the API answered for is never "given back").
2. **Wait** — until the PV controller reports every claim bound: ``spec.volumeName``
   set, the ``pv.kubernetes.io/bind-completed`` annotation, and ``status.phase: Bound``
   (kube-scheduler's ``isPVCFullyBound`` looked at the first two; the phase, which the
   PV controller writes right after, is what ``kubectl get pvc`` shows, so a pod is
   never bound before its claim reads Bound). Each check reads the objects as the
   latest watch events report them (never our assumptions) and is run again when an
   event for one of the pod's PVs or claims arrives, not by polling. A check fails the
   binding, as upstream's did, when the PV controller undid our work: a PV's claimRef
   reset, a claim's selected-node removed or pointing elsewhere, a PV whose node
   affinity excludes the node; also when the pod was deleted or the node is gone. No
   answer within ``timeout`` seconds (``--volume-binding-timeout``, kube-scheduler's
   ``bindTimeoutSeconds``, 600 by default) fails it too.

A failure raises :class:`VolumeBindingError`; the runtime then undoes what it assumed,
reports ``VolumeBindingFailed`` and retries the pod with backoff. What was already
written stays written, as upstream (there is no rollback in the API): the PV
controller finishes binding those claims and the next attempt finds them bound.

:meth:`VolumeBinder.stop` ends every wait at once (the scheduler is stopping or lost
its leadership; the next leader decides the pod again).
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from ..engine.predicates.volumes import PodVolumes
from ..kinds import PARSE_ERRORS, PERSISTENT_VOLUME, PERSISTENT_VOLUME_CLAIM, Kind
from ..objects import Pod, newer_version, parse_persistent_volume
from ..selectors import terms_match
from ..state.cache import SchedulerCache
from ..volumenames import ANN_BIND_COMPLETED, ANN_SELECTED_NODE
from .kubeapi import Api

logger = logging.getLogger(__name__)

ANN_BOUND_BY_CONTROLLER: Final = "pv.kubernetes.io/bound-by-controller"
DEFAULT_TIMEOUT: Final = 600.0


class VolumeBindingError(Exception):
    """The volumes could not be bound; the message is for people (event, condition).

    ``quiet``: nobody needs telling (the pod was deleted, the scheduler is stopping).
    """

    def __init__(self, message: str, *, quiet: bool = False) -> None:
        super().__init__(message)
        self.quiet = quiet


@dataclass(slots=True)
class _Waiter:
    """One pod waiting for the PV controller: what wakes it, and why it must stop."""

    uid: str
    keys: frozenset[tuple[Kind, str]]
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    stopped: str | None = None


#: What a write left in the API: (kind, key) -> the resourceVersion it answered with.
Written = dict[tuple[Kind, str], str]


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _version(obj: Mapping[str, Any]) -> str:
    return str(_meta(obj).get("resourceVersion") or "")


def _annotations(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    found = _meta(obj).get("annotations")
    return found if isinstance(found, Mapping) else {}


def claim_fully_bound(claim: Mapping[str, Any]) -> bool:
    """The PV controller is done with the claim (see the module docstring)."""
    status = claim.get("status")
    phase = status.get("phase") if isinstance(status, Mapping) else None
    return (
        bool(_spec(claim).get("volumeName"))
        and ANN_BIND_COMPLETED in _annotations(claim)
        and phase == "Bound"
    )


def bind_to_claim(pv: Mapping[str, Any], claim: Mapping[str, Any]) -> dict[str, Any] | None:
    """GetBindVolumeToClaim on API objects: the PV to PUT, or None when it already is
    bound to the claim exactly (nothing to write)."""
    meta = _meta(claim)
    namespace, name, uid = meta.get("namespace"), meta.get("name"), meta.get("uid", "")
    ref = _spec(pv).get("claimRef")
    ref = ref if isinstance(ref, Mapping) else None
    # A claimRef naming the claim (and its uid, when it has one) was set by a user
    # (pre-bound): the PV controller must not take it for its own.
    pre_bound = (
        ref is not None
        and ref.get("namespace") == namespace
        and ref.get("name") == name
        and ref.get("uid", "") in ("", uid)
    )
    body = copy.deepcopy(dict(pv))
    dirty = False
    if ref is None or (ref.get("namespace"), ref.get("name"), ref.get("uid", "")) != (
        namespace,
        name,
        uid,
    ):
        body.setdefault("spec", {})["claimRef"] = {
            "kind": "PersistentVolumeClaim",
            "namespace": namespace,
            "name": name,
            "uid": uid,
            "apiVersion": "v1",
            "resourceVersion": _version(claim),
        }
        dirty = True
    annotations = body.setdefault("metadata", {}).setdefault("annotations", {})
    if not pre_bound and ANN_BOUND_BY_CONTROLLER not in annotations:
        annotations[ANN_BOUND_BY_CONTROLLER] = "yes"
        dirty = True
    return body if dirty else None


def select_node(claim: Mapping[str, Any], node: str) -> dict[str, Any] | None:
    """The claim to PUT with its selected-node annotation, or None when it has it."""
    if _annotations(claim).get(ANN_SELECTED_NODE) == node:
        return None
    body = copy.deepcopy(dict(claim))
    body.setdefault("metadata", {}).setdefault("annotations", {})[ANN_SELECTED_NODE] = node
    return body


class VolumeBinder:
    """Writes a decision's volume bindings, then waits for the PV controller to finish.

    ``observe`` is fed every PV and PVC event (the runtime's ``handle``): it keeps the
    latest API objects, which the writes start from and the checks read, and wakes the
    pods waiting on them. ``feed`` hands the objects our writes return back to the
    runtime's door, so the cache sees them at once.
    """

    def __init__(
        self,
        api: Api,
        cache: SchedulerCache,
        *,
        feed: Callable[[Mapping[str, Any], Kind], object],
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self.api = api
        self.cache = cache
        self.feed = feed
        self.timeout = timeout
        #: The latest API objects by (kind, key): PVs by name, claims by "ns/name".
        self._objects: dict[tuple[Kind, str], Mapping[str, Any]] = {}
        self._waiters: dict[str, _Waiter] = {}
        self._stopped: str | None = None

    # -- the watch side ------------------------------------------------------------------

    def observe(self, event_type: str | None, raw: Mapping[str, Any], kind: Kind) -> None:
        """A PV or PVC from a watch event or a LIST (or the answer to our own write)."""
        if event_type == "DELETED":
            self.deleted(kind, kind.identity(raw))
            return
        key = (kind, kind.identity(raw))
        known = self._objects.get(key)
        if known is not None and not newer_version(_version(raw), _version(known)):
            return  # a replay, or older than what we hold
        self._objects[key] = raw
        self._wake(key)

    def deleted(self, kind: Kind, name: str) -> None:
        """A PV or PVC is gone (a DELETED event, or missing from a fresh LIST)."""
        key = (kind, name)
        self._objects.pop(key, None)
        self._wake(key)

    def _wake(self, key: tuple[Kind, str]) -> None:
        for waiter in self._waiters.values():
            if key in waiter.keys:
                waiter.wake.set()

    def pod_deleted(self, uid: str) -> None:
        """A waiting pod is gone: its wait ends at its next check."""
        waiter = self._waiters.get(uid)
        if waiter is not None:
            waiter.wake.set()

    def stop(self, reason: str = "the scheduler is stopping") -> None:
        """End every wait now, and any that starts before :meth:`start`."""
        self._stopped = reason
        for waiter in self._waiters.values():
            waiter.stopped = reason
            waiter.wake.set()

    def start(self) -> None:
        self._stopped = None

    @property
    def waiting(self) -> int:
        """Pods waiting for the PV controller."""
        return len(self._waiters)

    # -- BindPodVolumes: write, then wait ----------------------------------------------------

    async def write(self, volumes: PodVolumes) -> Written:
        """bindAPIUpdate: the PVs' claimRefs, then the claims' selected-node."""
        written: Written = {}
        for pvc, pv in volumes.matched:
            current = self._current(PERSISTENT_VOLUME, pv.name, pv.resource_version)
            claim = self._current(PERSISTENT_VOLUME_CLAIM, pvc.key, pvc.resource_version)
            body = bind_to_claim(current, claim)
            written[PERSISTENT_VOLUME, pv.name] = (
                _version(current) if body is None else await self._put(PERSISTENT_VOLUME, body)
            )
        for pvc in volumes.provisioned:
            current = self._current(PERSISTENT_VOLUME_CLAIM, pvc.key, pvc.resource_version)
            body = select_node(current, volumes.node)
            written[PERSISTENT_VOLUME_CLAIM, pvc.key] = (
                _version(current)
                if body is None
                else await self._put(PERSISTENT_VOLUME_CLAIM, body)
            )
        return written

    def _current(self, kind: Kind, key: str, seen: str) -> Mapping[str, Any]:
        """The API object a write starts from: the version the decision saw."""
        raw = self._objects.get((kind, key))
        if raw is None:
            raise VolumeBindingError(f"{kind.kind} {_q(key)} not found")
        if _version(raw) != seen:
            # Changed since the decision: writing it with the old resourceVersion would
            # only earn the 409 the API answers to stale writes.
            raise VolumeBindingError(_conflict(kind, key))
        return raw

    async def _put(self, kind: Kind, body: dict[str, Any]) -> str:
        key = kind.identity(body)
        try:
            if kind is PERSISTENT_VOLUME:
                status, answer = await self.api.replace_persistent_volume(key, body)
            else:
                namespace, name = key.split("/", 1)
                status, answer = await self.api.replace_claim(namespace, name, body)
        except Exception as exc:  # network trouble: the pod is retried with backoff
            raise VolumeBindingError(f"updating {kind.kind} {_q(key)} failed: {exc}") from exc
        if status == 409:
            raise VolumeBindingError(_conflict(kind, key))
        if status == 404:
            raise VolumeBindingError(f"{kind.kind} {_q(key)} not found")
        if not 200 <= status < 300 or answer is None:
            raise VolumeBindingError(f"updating {kind.kind} {_q(key)} failed: HTTP {status}")
        logger.info("%s %s written for binding, version %s", kind.kind, key, _version(answer))
        self.feed(answer, kind)
        return _version(answer)

    async def wait(
        self, pod: Pod, volumes: PodVolumes, written: Written, *, timeout: float | None = None
    ) -> None:
        """Until :meth:`check` says bound; VolumeBindingError on failure or timeout
        (``timeout`` seconds: the policy's VolumeBinding ``bindTimeoutSeconds``; None:
        ``--volume-binding-timeout``)."""
        seconds = self.timeout if timeout is None else timeout
        keys = set(written)
        keys |= {(PERSISTENT_VOLUME_CLAIM, pvc.key) for pvc, _ in volumes.matched}
        waiter = _Waiter(pod.uid, frozenset(keys), stopped=self._stopped)
        self._waiters[pod.uid] = waiter
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        try:
            while True:
                if waiter.stopped is not None:
                    raise VolumeBindingError(waiter.stopped, quiet=True)
                waiter.wake.clear()
                pending = self.check(pod, volumes, written)
                if pending is None:
                    return
                # A provisioned claim names its PV once bound: wake for that PV too.
                waiter.keys = waiter.keys | self._claimed_pvs(volumes)
                remaining = deadline - loop.time()
                if remaining <= 0:
                    raise VolumeBindingError(f"timed out after {seconds:g}s waiting for {pending}")
                try:
                    await asyncio.wait_for(waiter.wake.wait(), remaining)
                except TimeoutError:
                    continue  # one last check, then the timeout
        finally:
            if self._waiters.get(pod.uid) is waiter:
                del self._waiters[pod.uid]

    def _claimed_pvs(self, volumes: PodVolumes) -> frozenset[tuple[Kind, str]]:
        names = set()
        for pvc in volumes.provisioned:
            claim = self._objects.get((PERSISTENT_VOLUME_CLAIM, pvc.key))
            volume_name = _spec(claim).get("volumeName") if claim is not None else None
            if volume_name:
                names.add((PERSISTENT_VOLUME, str(volume_name)))
        return frozenset(names)

    def check(self, pod: Pod, volumes: PodVolumes, written: Written) -> str | None:
        """checkBindings: None when every claim is bound; else what is still awaited.
        Raises VolumeBindingError when the binding must be retried."""
        if self.cache.was_deleted(pod.uid):
            raise VolumeBindingError(f"pod {_q(pod.key)} does not exist any more", quiet=True)
        info = self.cache.cluster.nodes.get(volumes.node)
        if info is None:
            raise VolumeBindingError(f"failed to get node {_q(volumes.node)}")
        labels = info.node.labels
        for pvc, pv in volumes.matched:
            api_pv = self._api(PERSISTENT_VOLUME, pv.name, "failed to check binding")
            claim = self._api(PERSISTENT_VOLUME_CLAIM, pvc.key, "failed to check binding")
            if newer_version(written[PERSISTENT_VOLUME, pv.name], _version(api_pv)):
                return f"PersistentVolume {_q(pv.name)} to show our write"
            self._check_affinity(api_pv, volumes.node, labels)
            ref = _spec(api_pv).get("claimRef")
            if not isinstance(ref, Mapping) or not ref.get("uid"):
                raise VolumeBindingError(f"ClaimRef got reset for pv {_q(pv.name)}")
            if not claim_fully_bound(claim):
                return f"PersistentVolumeClaim {_q(pvc.key)} to be bound"
        for pvc in volumes.provisioned:
            claim = self._api(PERSISTENT_VOLUME_CLAIM, pvc.key, "failed to check provisioning pvc")
            if newer_version(written[PERSISTENT_VOLUME_CLAIM, pvc.key], _version(claim)):
                return f"PersistentVolumeClaim {_q(pvc.key)} to show our write"
            annotations = _annotations(claim)
            if not annotations:
                raise VolumeBindingError(f"selectedNode annotation reset for PVC {_q(pvc.name)}")
            selected = annotations.get(ANN_SELECTED_NODE, "")
            if selected != volumes.node:
                raise VolumeBindingError(
                    f"selectedNode annotation value {_q(str(selected))} not set to scheduled "
                    f"node {_q(volumes.node)}"
                )
            volume_name = _spec(claim).get("volumeName")
            if volume_name:
                provisioned = self._objects.get((PERSISTENT_VOLUME, str(volume_name)))
                if provisioned is None:
                    # Not seen yet (the watch is behind), or deleted: the claim will
                    # be unbound then. Either way, the next event tells.
                    return f"PersistentVolume {_q(str(volume_name))} to show up"
                self._check_affinity(provisioned, volumes.node, labels)
            if not claim_fully_bound(claim):
                return f"PersistentVolumeClaim {_q(pvc.key)} to be bound"
        return None

    def _api(self, kind: Kind, key: str, context: str) -> Mapping[str, Any]:
        raw = self._objects.get((kind, key))
        if raw is None:
            raise VolumeBindingError(f"{context}: {kind.kind} {_q(key)} not found")
        return raw

    @staticmethod
    def _check_affinity(raw: Mapping[str, Any], node: str, labels: Mapping[str, str]) -> None:
        """volumeutil.CheckNodeAffinity of a PV the API reports, against the node."""
        try:
            pv = parse_persistent_volume(raw)
        except PARSE_ERRORS as exc:
            raise VolumeBindingError(str(exc)) from exc
        if pv.node_affinity is not None and not terms_match(pv.node_affinity, labels, ""):
            raise VolumeBindingError(
                f"pv {_q(pv.name)} node affinity doesn't match node {_q(node)}"
            )


def _q(text: str) -> str:
    return f'"{text}"'


def _conflict(kind: Kind, key: str) -> str:
    return f"{kind.kind} {_q(key)} was modified meanwhile (409 Conflict)"
