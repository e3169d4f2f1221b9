"""The operator's only door to the Kubernetes API besides Kopf's watches.

Each method is one API call, declares the RBAC permission it needs (``@needs``, from
:mod:`.permissions`), and returns plain data: an HTTP status, or a dict. Failures the
caller must react to (409 Conflict on a binding, 404 on a deleted pod) come back as
status codes, never as exceptions, so "someone else bound it" is handled as an answer.

**Two lanes** (:class:`Lane`): every call goes through a budget of its own, so that a
flood of one kind of write never delays another. The pod-critical lane carries what
places pods (bindings, preemption's evictions and nominations, the volume binder's
writes, the reads that verify them, LISTs, leases); it has ``--qps``/``--burst``, and
``--burst`` connections (100 at least). The report lane carries what people read (events, pod
conditions), with ``--report-qps``/``--report-burst`` and at most
``--report-concurrency`` requests in flight. The connection pool holds both
(:func:`pool_size`), so reports that hang hold at most their own connections, never
one a binding needs. :attr:`KubeApi.reports` is the same client on the report lane:
the :class:`~.reporting.Reporter` is given that one, the runtime the other.

Every request has a deadline (``timeout``, 30 s by default, ``--api-timeout``): a
connection that never answers becomes status 0 after it, never a hung task. Requests
that are safe to repeat (reads, patches, deletes, and any request the server refused
with 429 before doing anything) are retried a few times on 0, 429 and 5xx, with
jittered exponential backoff (after a 429, at least the ``Retry-After`` the server asked
for, as client-go waits, up to ``MAX_RETRY_AFTER``); a binding or an event creation is
not repeated blindly (a 5xx may come after the write happened): the caller decides.
Lists are paginated (``limit``/``continue``), each page a request with its own deadline.

:class:`Api` is the Protocol the runtime codes against; :class:`KubeApi` implements it
with kubernetes-asyncio; tests pass a fake.

kubernetes-asyncio cannot deserialize the Binding response ("Invalid value for
target"), so every call is made with ``_preload_content=False`` and the status read
from the raw response; with that flag 4xx/5xx answers do not raise.

The writes made for every scheduled pod (the binding, its event, a pod's condition, a
preemption's deletion) skip the generated client's per-call machinery (argument
checks, sanitising the body, choosing headers, serialising again): their bodies are
JSON bytes built once, sent through the client's own aiohttp session with the same
URL, headers, credentials (refreshed as the client refreshes them), proxy and TLS
settings (:meth:`KubeApi._json`). That machinery cost as much CPU as the HTTP request.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import logging
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, Protocol
from urllib.parse import quote

import aiohttp
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from ..kinds import KINDS, Kind
from ..names import CRD_GROUP, CRD_PLURAL, CRD_VERSION
from .permissions import declared, needs, rules

logger = logging.getLogger(__name__)

#: Answers after which a repeatable request is tried again.
RETRYABLE: frozenset[int] = frozenset({0, 429, 500, 502, 503, 504})
DEFAULT_TIMEOUT = 30.0
DEFAULT_RETRIES = 3
#: The longest ``Retry-After`` a 429 is waited for (a larger one is cut to this).
MAX_RETRY_AFTER = 60.0
LIST_PAGE = 500

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
#: kubernetes-asyncio's choice for dict patches: conditions merge by type.
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"


class Api(Protocol):
    """The calls the runtime makes; :class:`KubeApi` makes them, tests fake them."""

    async def bind(self, namespace: str, name: str, uid: str, node: str) -> int: ...

    async def get_pod(self, namespace: str, name: str) -> tuple[int, dict[str, Any] | None]: ...

    async def patch_pod_status(
        self, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> int: ...

    async def delete_pod(self, namespace: str, name: str, uid: str) -> int: ...

    async def create_event(self, namespace: str, body: Mapping[str, Any]) -> int: ...

    async def patch_event(self, namespace: str, name: str, patch: Mapping[str, Any]) -> int: ...

    async def patch_policy_status(self, name: str, status: Mapping[str, Any]) -> int: ...

    async def patch_pod_group_status(
        self, namespace: str, name: str, status: Mapping[str, Any]
    ) -> int: ...

    async def get_lease(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    async def create_lease(self, namespace: str, body: Mapping[str, Any]) -> int: ...

    async def replace_lease(self, namespace: str, name: str, body: Mapping[str, Any]) -> int: ...

    def list_pages(self, kind: Kind) -> AsyncIterator[list[dict[str, Any]]]: ...

    async def list_objects(self, kind: Kind) -> list[dict[str, Any]]: ...

    async def replace_persistent_volume(
        self, name: str, body: Mapping[str, Any]
    ) -> tuple[int, dict[str, Any] | None]: ...

    async def replace_claim(
        self, namespace: str, name: str, body: Mapping[str, Any]
    ) -> tuple[int, dict[str, Any] | None]: ...

    async def get_resource_claim(
        self, namespace: str, name: str
    ) -> tuple[int, dict[str, Any] | None]: ...

    async def replace_resource_claim(
        self, namespace: str, name: str, body: Mapping[str, Any], *, status: bool
    ) -> tuple[int, dict[str, Any] | None]: ...


class ApiError(Exception):
    """A request that kept failing (status 0 or an error status) where data was needed.

    ``reason`` is the API server's own message (a Status object's ``message``), if any.
    """

    def __init__(self, what: str, status: int, reason: str = "") -> None:
        super().__init__(f"{what}: {'no answer' if status == 0 else f'HTTP {status}'}")
        self.what = what
        self.status = status
        self.reason = reason


def status_message(body: bytes) -> str:
    """The ``message`` of a Kubernetes Status answer, or "" when it is none."""
    try:
        data = json.loads(body)
    except ValueError:
        return ""
    message = data.get("message") if isinstance(data, dict) else None
    return message if isinstance(message, str) else ""


class RateLimiter:
    """A token bucket: ``qps`` calls per second on average, bursts of ``burst``.

    client-go's default (QPS 50, burst 100 in kube-scheduler) caps binding throughput
    at ~50 pods/s; ours is an option, and 0 disables the limit. Time is the event
    loop's (the waits are the loop's sleeps) unless a ``clock`` is given.

    Kept as the time the next call would be due if calls came evenly (the generic cell
    rate algorithm, equivalent to the bucket): a call may go ``burst - 1`` intervals
    before that time. No fractional tokens accumulate, so a clock that moves in coarse
    steps (uvloop's milliseconds, a test's fake time) never leaves a caller waiting for
    a sliver of a token; waiters go one at a time, in order.
    """

    def __init__(self, qps: float, burst: int, clock: Callable[[], float] | None = None) -> None:
        self.qps = qps
        self.burst = max(1, burst)
        self.clock = clock
        self._due = float("-inf")
        self._lock = asyncio.Lock()

    def _now(self) -> float:
        return self.clock() if self.clock is not None else asyncio.get_running_loop().time()

    async def acquire(self) -> None:
        if self.qps <= 0:
            return
        interval = 1.0 / self.qps
        async with self._lock:
            now = self._now()
            due = max(self._due, now)
            wait = due - (self.burst - 1) * interval - now
            if wait > 0:
                await asyncio.sleep(wait)
            self._due = due + interval


class Lane:
    """A budget of API calls: at most ``concurrency`` in flight, ``qps``/``burst`` rate.

    A call takes its slot first, then its token (a token is never spent on a call that
    would wait for a slot), and holds the slot until its answer is read.
    """

    def __init__(
        self,
        name: str,
        qps: float = 0.0,
        burst: int = 1,
        concurrency: int | None = None,
        *,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.name = name
        self.limiter = RateLimiter(qps, burst, clock)
        #: None: no bound of its own (tests, the offline commands).
        self.concurrency = concurrency
        self._slots = asyncio.Semaphore(concurrency) if concurrency else None
        #: Requests of this lane in flight now.
        self.in_flight = 0

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        slots: contextlib.AbstractAsyncContextManager[Any] = (
            self._slots if self._slots is not None else contextlib.nullcontext()
        )
        async with slots:
            await self.limiter.acquire()
            self.in_flight += 1
            try:
                yield
            finally:
                self.in_flight -= 1


#: The lanes' names (:class:`Lane`).
CRITICAL = "critical"
REPORTS = "reports"


#: Connections the critical lane has at least (kubernetes-asyncio's default pool size,
#: what the operator had before ``--burst`` was larger).
MIN_CONNECTIONS = 100


def critical_connections(burst: int) -> int:
    """The critical lane's connections (its concurrency): ``burst``, 100 at least."""
    return max(MIN_CONNECTIONS, burst)


def pool_size(burst: int, report_concurrency: int) -> int:
    """Connections the API client needs: the critical lane's (:func:`critical_connections`)
    plus the report lane's ``report_concurrency``, so that neither takes the other's."""
    return critical_connections(burst) + report_concurrency


_Call = Callable[[], Any]


def retry_after(headers: Mapping[str, str] | None) -> float:
    """Seconds a 429's ``Retry-After`` asks to wait (0 when absent or not seconds)."""
    value = (headers or {}).get("Retry-After", "")
    try:
        seconds = float(value)
    except ValueError:
        return 0.0
    return min(max(seconds, 0.0), MAX_RETRY_AFTER) if seconds == seconds else 0.0


def backoff(attempt: int, *, base: float = 0.2, cap: float = 5.0) -> float:
    """Seconds before retry ``attempt`` (1, 2, ...): exponential, jittered to 50..150%."""
    return float(min(cap, base * 2 ** (attempt - 1)) * (0.5 + random.random()))


class KubeApi:
    """kubernetes-asyncio behind the :class:`Api` protocol, with deadlines and retries."""

    def __init__(
        self,
        api_client: client.ApiClient,
        lane: Lane | None = None,
        *,
        reports: Lane | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        retries: int = DEFAULT_RETRIES,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        #: The lane this client's calls go through (the critical one, unless this is
        #: :attr:`reports`).
        self.lane = lane or Lane(CRITICAL)
        self._reports_lane = reports
        self.timeout = timeout
        self.retries = retries
        self._sleep = sleep
        self.api_client = api_client
        # Typed as Any: we pass raw dicts and _preload_content/_content_type, which the
        # generated signatures do not describe.
        self.core: Any = client.CoreV1Api(api_client)
        self.custom: Any = client.CustomObjectsApi(api_client)
        self.coordination: Any = client.CoordinationV1Api(api_client)

    @property
    def reports(self) -> KubeApi:
        """The same client on the report lane (itself when it has none of its own).

        Its writes are retried once at most: a report worker held by retries of a write
        nobody waits for is one fewer for the next, and the reporter writes a pod's
        condition again at its next attempt anyway.
        """
        if self._reports_lane is None or self._reports_lane is self.lane:
            return self
        view = copy.copy(self)
        view.lane = self._reports_lane
        view.retries = min(self.retries, 1)
        return view

    @property
    def _deadline(self) -> aiohttp.ClientTimeout:
        return aiohttp.ClientTimeout(total=self.timeout, connect=min(self.timeout, 10.0))

    def _json(
        self,
        method: str,
        path: str,
        body: Mapping[str, Any] | None,
        content_type: str = JSON,
        timeout: aiohttp.ClientTimeout | None = None,
    ) -> _Call:
        """The request the generated client would send, sent by its own session directly.

        ``path`` is already quoted. The body is serialised once, here; each call of the
        result (a retry too) sends it again with fresh credentials.
        """
        api_client = self.api_client
        rest = api_client.rest_client
        url = f"{api_client.configuration.host}{path}"
        options: dict[str, Any] = {"timeout": timeout or self._deadline}
        if body is not None:
            options["data"] = json.dumps(body, separators=(",", ":")).encode()
        if rest.proxy:
            options["proxy"] = rest.proxy
        if rest.proxy_headers:
            options["proxy_headers"] = rest.proxy_headers
        if getattr(rest, "server_hostname", None):
            options["server_hostname"] = rest.server_hostname

        async def call() -> Any:
            headers = {**api_client.default_headers, "Accept": JSON, "Content-Type": content_type}
            if api_client.cookie:
                headers["Cookie"] = api_client.cookie
            await api_client.update_params_for_auth(headers, [], ["BearerToken"])
            return await rest.pool_manager.request(method, url, headers=headers, **options)

        return call

    async def _send(self, call: _Call, what: str, *, read: bool) -> tuple[int, bytes, float]:
        """One request within the deadline: (status, body, the 429's Retry-After
        seconds); status 0 when none came."""
        wait = 0.0
        try:
            async with self.lane.slot():
                # The client's own timeout covers the connection and the body; this one
                # also covers anything the client does around them.
                async with asyncio.timeout(self.timeout + 1.0):
                    response = await call()
                    try:
                        status = int(response.status)
                        body = await response.read() if read or status >= 300 else b""
                        if status == 429:
                            wait = retry_after(response.headers)
                    finally:
                        response.release()
        except ApiException as exc:
            status = int(exc.status or 0)
            return status, b"", retry_after(exc.headers) if status == 429 else 0.0
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            logger.debug("%s: no answer: %r", what, exc)
            return 0, b"", 0.0
        if status >= 300:
            logger.debug("%s: HTTP %s %s", what, status, body[:500])
        return status, body, wait

    async def _request(
        self, call: _Call, what: str, *, repeatable: bool, read: bool = False
    ) -> tuple[int, bytes]:
        """:meth:`_send`, retried when ``repeatable`` (or refused with 429)."""
        attempt = 0
        while True:
            status, body, wait = await self._send(call, what, read=read)
            retry = status in RETRYABLE if repeatable else status == 429
            if not retry or attempt >= self.retries:
                return status, body
            attempt += 1
            await self._sleep(max(backoff(attempt), wait))

    # -- plugins -------------------------------------------------------------------------

    async def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        content_type: str = JSON,
        timeout: float | None = None,
    ) -> tuple[int, Any]:
        """A plugin's call (the plugins' ``Handle.api``): one JSON request to ``path``,
        within ``timeout`` (at most ``--api-timeout``), on the pod-critical lane (a
        plugin calls out in the binding cycle, PreBind and Bind); a GET is retried as
        reads are. The status (0: no answer) and the decoded body (None if none, or not
        JSON). What it may reach is what the operator's RBAC grants (the chart's
        ``rbac.extraRules``)."""
        if not path.startswith("/"):
            return 400, {"message": f"the path must start with '/', got {path!r}"}
        seconds = self.timeout if timeout is None else min(max(timeout, 0.001), self.timeout)
        deadline = aiohttp.ClientTimeout(total=seconds)
        call = self._json(method.upper(), path, body, content_type, deadline)
        status, raw = await self._request(
            call,
            f"{method.upper()} {path} (a plugin's)",
            repeatable=method.upper() == "GET",
            read=True,
        )
        try:
            return status, json.loads(raw) if raw else None
        except ValueError:
            return status, None

    # -- pods ----------------------------------------------------------------------------

    @needs("", "pods/binding", "create")
    async def bind(self, namespace: str, name: str, uid: str, node: str) -> int:
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace, "uid": uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        call = self._json("POST", f"{_pod_path(namespace, name)}/binding", body)
        status, _ = await self._request(call, f"binding {namespace}/{name}", repeatable=False)
        return status

    @needs("", "pods", "get")
    async def get_pod(self, namespace: str, name: str) -> tuple[int, dict[str, Any] | None]:
        """The pod as the API has it now (after an ambiguous binding reply)."""

        def call() -> Any:
            return self.core.read_namespaced_pod(
                name, namespace, _preload_content=False, _request_timeout=self._deadline
            )

        status, body = await self._request(
            call, f"reading pod {namespace}/{name}", repeatable=True, read=True
        )
        return status, (json.loads(body) if status == 200 else None)

    @needs("", "pods/status", "patch")
    async def patch_pod_status(self, namespace: str, name: str, patch: Mapping[str, Any]) -> int:
        # Strategic merge: conditions merge by type, the others stay.
        path = f"{_pod_path(namespace, name)}/status"
        call = self._json("PATCH", path, patch, STRATEGIC_MERGE_PATCH)
        status, _ = await self._request(
            call, f"patching the status of pod {namespace}/{name}", repeatable=True
        )
        return status

    # -- events --------------------------------------------------------------------------

    @needs("", "pods", "delete")
    async def delete_pod(self, namespace: str, name: str, uid: str) -> int:
        """Delete a preemption victim, only if it is still the pod we chose (uid).

        The default grace period applies, as kube-scheduler's ``deletePod``: the victim
        terminates, and the preemptor waits for it on its nominated node.
        """
        body = {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": uid}}
        call = self._json("DELETE", _pod_path(namespace, name), body)
        # Repeatable: a second delete of the same uid answers 404 (or 409 for another uid).
        status, _ = await self._request(call, f"deleting pod {namespace}/{name}", repeatable=True)
        return status

    @needs("", "events", "create")
    async def create_event(self, namespace: str, body: Mapping[str, Any]) -> int:
        call = self._json("POST", f"/api/v1/namespaces/{quote(namespace, safe='')}/events", body)
        status, _ = await self._request(call, "creating an event", repeatable=False)
        return status

    @needs("", "events", "patch")
    async def patch_event(self, namespace: str, name: str, patch: Mapping[str, Any]) -> int:
        path = f"/api/v1/namespaces/{quote(namespace, safe='')}/events/{quote(name, safe='')}"
        call = self._json("PATCH", path, patch, MERGE_PATCH)
        status, _ = await self._request(call, f"patching event {name}", repeatable=True)
        return status

    # -- SchedulingPolicy status -----------------------------------------------------------

    @needs(CRD_GROUP, f"{CRD_PLURAL}/status", "get", "patch")
    async def patch_policy_status(self, name: str, status: Mapping[str, Any]) -> int:
        def call() -> Any:
            return self.custom.patch_cluster_custom_object_status(
                CRD_GROUP,
                CRD_VERSION,
                CRD_PLURAL,
                name,
                {"status": dict(status)},
                _content_type="application/merge-patch+json",
                _preload_content=False,
                _request_timeout=self._deadline,
            )

        code, _ = await self._request(
            call, f"patching the status of policy {name}", repeatable=True
        )
        return code

    # -- PodGroup status (scheduler-plugins' gangs) ------------------------------------------

    @needs("scheduling.x-k8s.io", "podgroups/status", "patch")
    async def patch_pod_group_status(
        self, namespace: str, name: str, status: Mapping[str, Any]
    ) -> int:
        """A merge patch of a PodGroup's status (a null removes a key)."""
        path = (
            f"/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{quote(namespace, safe='')}"
            f"/podgroups/{quote(name, safe='')}/status"
        )
        call = self._json("PATCH", path, {"status": dict(status)}, MERGE_PATCH)
        code, _ = await self._request(
            call, f"patching the status of PodGroup {namespace}/{name}", repeatable=True
        )
        return code

    # -- leases ----------------------------------------------------------------------------

    @needs("coordination.k8s.io", "leases", "get")
    async def get_lease(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The Lease, or None when there is none; raises :class:`ApiError` otherwise."""

        def call() -> Any:
            return self.coordination.read_namespaced_lease(
                name, namespace, _preload_content=False, _request_timeout=self._deadline
            )

        what = f"reading lease {namespace}/{name}"
        status, body = await self._request(call, what, repeatable=True, read=True)
        if status == 404:
            return None
        if status != 200:
            raise ApiError(what, status)
        data: dict[str, Any] = json.loads(body)
        return data

    @needs("coordination.k8s.io", "leases", "create")
    async def create_lease(self, namespace: str, body: Mapping[str, Any]) -> int:
        def call() -> Any:
            return self.coordination.create_namespaced_lease(
                namespace, dict(body), _preload_content=False, _request_timeout=self._deadline
            )

        status, _ = await self._request(call, "creating a lease", repeatable=False)
        return status

    @needs("coordination.k8s.io", "leases", "update")
    async def replace_lease(self, namespace: str, name: str, body: Mapping[str, Any]) -> int:
        def call() -> Any:
            return self.coordination.replace_namespaced_lease(
                name, namespace, dict(body), _preload_content=False, _request_timeout=self._deadline
            )

        status, _ = await self._request(call, f"replacing lease {name}", repeatable=False)
        return status

    # -- lists (the permissions: list/watch of every kind, see required_rules) -------------

    async def list_pages(self, kind: Kind) -> AsyncIterator[list[dict[str, Any]]]:
        """Every object of one kind, a page (``LIST_PAGE`` objects) at a time; nothing when
        the kind is not served (404).

        Raises :class:`ApiError` when a page keeps failing. Items of a LIST carry no
        ``kind``/``apiVersion``; they are filled in, so that the objects look exactly
        like watch events. A caller that files each page before asking for the next
        holds one page of decoded JSON at a time, not the whole cluster's.
        """
        if kind.group:
            path = f"/apis/{kind.group}/{kind.version}/{kind.plural}"
        else:
            path = f"/api/{kind.version}/{kind.plural}"
        token = ""
        while True:
            query: list[tuple[str, Any]] = [("limit", LIST_PAGE)]
            if token:
                query.append(("continue", token))

            def call(query: list[tuple[str, Any]] = query) -> Any:
                return self.api_client.call_api(
                    path,
                    "GET",
                    query_params=query,
                    header_params={"Accept": "application/json"},
                    auth_settings=["BearerToken"],
                    _preload_content=False,
                    _return_http_data_only=True,
                    _request_timeout=self._deadline,
                )

            what = f"listing {kind.plural}"
            status, body = await self._request(call, what, repeatable=True, read=True)
            if status == 404:
                return  # the kind is not served (e.g. the CRD is not installed yet)
            if status != 200:
                raise ApiError(what, status, status_message(body))
            data = json.loads(body)
            del body
            items: list[dict[str, Any]] = data.get("items") or []
            for item in items:
                item.setdefault("apiVersion", kind.api_version)
                item.setdefault("kind", kind.kind)
            token = (data.get("metadata") or {}).get("continue") or ""
            del data
            yield items
            if not token:
                return

    async def list_objects(self, kind: Kind) -> list[dict[str, Any]]:
        """Every object of one kind (:meth:`list_pages`, all pages at once)."""
        return [item async for page in self.list_pages(kind) for item in page]

    @needs("", "persistentvolumes", "update")
    async def replace_persistent_volume(
        self, name: str, body: Mapping[str, Any]
    ) -> tuple[int, dict[str, Any] | None]:
        """PUT a PV (the volume binder's claimRef); a stale resourceVersion answers 409.

        Not repeated on no answer: a PUT that landed would then answer 409 and look like
        someone else's write.
        """

        def call() -> Any:
            return self.core.replace_persistent_volume(
                name, dict(body), _preload_content=False, _request_timeout=self._deadline
            )

        return self._written(
            await self._request(call, f"updating PV {name}", repeatable=False, read=True)
        )

    @needs("", "persistentvolumeclaims", "update")
    async def replace_claim(
        self, namespace: str, name: str, body: Mapping[str, Any]
    ) -> tuple[int, dict[str, Any] | None]:
        """PUT a PVC (the volume binder's selected-node); a stale resourceVersion: 409."""

        def call() -> Any:
            return self.core.replace_namespaced_persistent_volume_claim(
                name, namespace, dict(body), _preload_content=False, _request_timeout=self._deadline
            )

        what = f"updating PVC {namespace}/{name}"
        return self._written(await self._request(call, what, repeatable=False, read=True))

    # -- DRA: the DynamicResources plugin's PreBind and Unreserve -------------------------

    @needs("resource.k8s.io", "resourceclaims", "get")
    async def get_resource_claim(
        self, namespace: str, name: str
    ) -> tuple[int, dict[str, Any] | None]:
        """A ResourceClaim as the API has it now."""
        call = self._json("GET", _claim_path(namespace, name), None)
        status, body = await self._request(
            call, f"reading ResourceClaim {namespace}/{name}", repeatable=True, read=True
        )
        return status, (json.loads(body) if status == 200 and body else None)

    @needs("resource.k8s.io", "resourceclaims", "update")
    @needs("resource.k8s.io", "resourceclaims/status", "update")
    async def replace_resource_claim(
        self, namespace: str, name: str, body: Mapping[str, Any], *, status: bool
    ) -> tuple[int, dict[str, Any] | None]:
        """PUT a ResourceClaim (its finalizer) or, ``status``, its status (the allocation,
        ``reservedFor``); a stale resourceVersion answers 409."""
        path = _claim_path(namespace, name) + ("/status" if status else "")
        call = self._json("PUT", path, body)
        what = f"updating {'the status of ' if status else ''}ResourceClaim {namespace}/{name}"
        return self._written(await self._request(call, what, repeatable=False, read=True))

    @staticmethod
    def _written(answer: tuple[int, bytes]) -> tuple[int, dict[str, Any] | None]:
        status, body = answer
        if status >= 300 or not body:
            return status, None
        data: dict[str, Any] = json.loads(body)
        return status, data


def _claim_path(namespace: str, name: str) -> str:
    return (
        f"/apis/resource.k8s.io/v1/namespaces/{quote(namespace, safe='')}"
        f"/resourceclaims/{quote(name, safe='')}"
    )


def _pod_path(namespace: str, name: str) -> str:
    return f"/api/v1/namespaces/{quote(namespace, safe='')}/pods/{quote(name, safe='')}"


def required_rules() -> list[dict[str, list[str]]]:
    """The ClusterRole the operator needs: every call above plus list/watch of each kind
    it reads (:data:`..kinds.KINDS`). The chart's ClusterRole is tested to be exactly this."""
    watched = {(kind.group, kind.plural, verb) for kind in KINDS for verb in ("list", "watch")}
    return rules(declared() | watched)
