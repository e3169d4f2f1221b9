"""The operator's only door to the Kubernetes API besides Kopf's watches.

Each method is one API call, declares the RBAC permission it needs (``@needs``, from
:mod:`.permissions`), and returns plain data: an HTTP status, or a dict. Failures the
caller must react to (409 Conflict on a binding, 404 on a deleted pod) come back as
status codes, never as exceptions, so "someone else bound it" is handled as an answer.

:class:`Api` is the Protocol the runtime codes against; :class:`KubeApi` implements it
with kubernetes-asyncio; tests pass a fake.

kubernetes-asyncio cannot deserialize the Binding response ("Invalid value for
target"), so bindings are made with ``_preload_content=False`` and the status read from
the raw response; with that flag 4xx/5xx answers do not raise.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from ..kinds import KINDS
from ..names import CRD_GROUP, CRD_PLURAL, CRD_VERSION
from .permissions import declared, needs, rules

logger = logging.getLogger(__name__)


class Api(Protocol):
    """The calls the runtime makes; :class:`KubeApi` makes them, tests fake them."""

    async def bind(self, namespace: str, name: str, uid: str, node: str) -> int: ...

    async def patch_pod_status(
        self, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> int: ...

    async def create_event(self, namespace: str, body: Mapping[str, Any]) -> int: ...

    async def patch_event(self, namespace: str, name: str, patch: Mapping[str, Any]) -> int: ...

    async def patch_policy_status(self, name: str, status: Mapping[str, Any]) -> int: ...

    async def get_lease(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    async def create_lease(self, namespace: str, body: Mapping[str, Any]) -> int: ...

    async def replace_lease(self, namespace: str, name: str, body: Mapping[str, Any]) -> int: ...

    async def replace_persistent_volume(
        self, name: str, body: Mapping[str, Any]
    ) -> tuple[int, dict[str, Any] | None]: ...

    async def replace_claim(
        self, namespace: str, name: str, body: Mapping[str, Any]
    ) -> tuple[int, dict[str, Any] | None]: ...


def _status_of(exc: ApiException) -> int:
    return int(exc.status or 0)


async def _raw_status(call: Awaitable[Any]) -> int:
    """The HTTP status of a call made with ``_preload_content=False``.

    Writes whose answer we do not read (events, status patches) skip kubernetes-asyncio's
    deserialization into models, which costs more than the request itself; with that
    flag, error statuses come back as responses instead of exceptions.
    """
    try:
        response = await call
    except ApiException as exc:
        return _status_of(exc)
    try:
        return int(response.status)
    finally:
        response.release()


async def _raw_object(call: Awaitable[Any]) -> tuple[int, dict[str, Any] | None]:
    """The HTTP status of a write made with ``_preload_content=False``, and the object
    the server answered with on success (read as JSON, not as a generated model)."""
    try:
        response = await call
    except ApiException as exc:
        return _status_of(exc), None
    try:
        status = int(response.status)
        if status >= 300:
            return status, None
        data: dict[str, Any] = json.loads(await response.read())
        return status, data
    finally:
        response.release()


class RateLimiter:
    """A token bucket: ``qps`` calls per second on average, bursts of ``burst``.

    client-go's default (QPS 50, burst 100 in kube-scheduler) caps binding throughput
    at ~50 pods/s; ours is an option, and 0 disables the limit.
    """

    def __init__(self, qps: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.qps = qps
        self.burst = max(1, burst)
        self.clock = clock
        self._tokens = float(self.burst)
        self._stamp = clock()
        self._lock = asyncio.Lock()

    async def acquire(self) -> None:
        if self.qps <= 0:
            return
        async with self._lock:
            while True:
                now = self.clock()
                self._tokens = min(self.burst, self._tokens + (now - self._stamp) * self.qps)
                self._stamp = now
                if self._tokens >= 1:
                    self._tokens -= 1
                    return
                await asyncio.sleep((1 - self._tokens) / self.qps)


class KubeApi:
    """kubernetes-asyncio behind the :class:`Api` protocol."""

    def __init__(self, api_client: client.ApiClient, limiter: RateLimiter | None = None) -> None:
        self.limiter = limiter or RateLimiter(0, 1)
        # Typed as Any: we pass raw dicts and _preload_content/_content_type, which the
        # generated signatures do not describe.
        self.core: Any = client.CoreV1Api(api_client)
        self.custom: Any = client.CustomObjectsApi(api_client)
        self.coordination: Any = client.CoordinationV1Api(api_client)

    @needs("", "pods/binding", "create")
    async def bind(self, namespace: str, name: str, uid: str, node: str) -> int:
        await self.limiter.acquire()
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace, "uid": uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        api, ns = self.core, namespace
        response = await api.create_namespaced_pod_binding(name, ns, body, _preload_content=False)
        status = int(response.status)
        if status >= 300:
            text = await response.text()
            logger.debug("binding %s/%s to %s: HTTP %s %s", namespace, name, node, status, text)
        response.release()
        return status

    @needs("", "pods/status", "patch")
    async def patch_pod_status(self, namespace: str, name: str, patch: Mapping[str, Any]) -> int:
        await self.limiter.acquire()
        return await _raw_status(
            self.core.patch_namespaced_pod_status(
                name,
                namespace,
                dict(patch),
                # Strategic merge: conditions merge by type, the others stay.
                _content_type="application/strategic-merge-patch+json",
                _preload_content=False,
            )
        )

    @needs("", "events", "create")
    async def create_event(self, namespace: str, body: Mapping[str, Any]) -> int:
        await self.limiter.acquire()
        return await _raw_status(
            self.core.create_namespaced_event(namespace, dict(body), _preload_content=False)
        )

    @needs("", "events", "patch")
    async def patch_event(self, namespace: str, name: str, patch: Mapping[str, Any]) -> int:
        await self.limiter.acquire()
        return await _raw_status(
            self.core.patch_namespaced_event(
                name,
                namespace,
                dict(patch),
                _content_type="application/merge-patch+json",
                _preload_content=False,
            )
        )

    @needs(CRD_GROUP, f"{CRD_PLURAL}/status", "get", "patch")
    async def patch_policy_status(self, name: str, status: Mapping[str, Any]) -> int:
        await self.limiter.acquire()
        try:
            await self.custom.patch_cluster_custom_object_status(
                CRD_GROUP,
                CRD_VERSION,
                CRD_PLURAL,
                name,
                {"status": dict(status)},
                _content_type="application/merge-patch+json",
            )
        except ApiException as exc:
            return _status_of(exc)
        return 200

    @needs("coordination.k8s.io", "leases", "get")
    async def get_lease(self, namespace: str, name: str) -> dict[str, Any] | None:
        await self.limiter.acquire()
        try:
            response = await self.coordination.read_namespaced_lease(
                name, namespace, _preload_content=False
            )
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        if response.status == 404:
            return None
        data: dict[str, Any] = json.loads(await response.read())
        return data

    @needs("coordination.k8s.io", "leases", "create")
    async def create_lease(self, namespace: str, body: Mapping[str, Any]) -> int:
        await self.limiter.acquire()
        try:
            await self.coordination.create_namespaced_lease(namespace, dict(body))
        except ApiException as exc:
            return _status_of(exc)
        return 201

    @needs("coordination.k8s.io", "leases", "update")
    async def replace_lease(self, namespace: str, name: str, body: Mapping[str, Any]) -> int:
        await self.limiter.acquire()
        try:
            await self.coordination.replace_namespaced_lease(name, namespace, dict(body))
        except ApiException as exc:
            return _status_of(exc)
        return 200

    @needs("", "persistentvolumes", "update")
    async def replace_persistent_volume(
        self, name: str, body: Mapping[str, Any]
    ) -> tuple[int, dict[str, Any] | None]:
        """PUT a PV (the volume binder's claimRef); a stale resourceVersion answers 409."""
        await self.limiter.acquire()
        return await _raw_object(
            self.core.replace_persistent_volume(name, dict(body), _preload_content=False)
        )

    @needs("", "persistentvolumeclaims", "update")
    async def replace_claim(
        self, namespace: str, name: str, body: Mapping[str, Any]
    ) -> tuple[int, dict[str, Any] | None]:
        """PUT a PVC (the volume binder's selected-node); a stale resourceVersion: 409."""
        await self.limiter.acquire()
        return await _raw_object(
            self.core.replace_namespaced_persistent_volume_claim(
                name, namespace, dict(body), _preload_content=False
            )
        )


def required_rules() -> list[dict[str, list[str]]]:
    """The ClusterRole the operator needs: every call above plus list/watch of each kind
    it reads (:data:`..kinds.KINDS`). The chart's ClusterRole is tested to be exactly this."""
    watched = {(kind.group, kind.plural, verb) for kind in KINDS for verb in ("list", "watch")}
    return rules(declared() | watched)
