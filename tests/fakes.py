"""A fake Kubernetes API for runtime tests: records every call, answers as configured.

:class:`FakeApi` implements the runtime's :class:`~policy_scheduler.runtime.kubeapi.Api`
protocol in memory. Each method appends a :class:`Call` to ``calls`` and answers with the
status configured for that method (``statuses["bind"] = 409``); a status may also be an
exception instance, which is raised instead, or a list, consumed one answer per call (the
last answer repeats). Tests assert on what was sent, the way a user would see it in
``kubectl get events`` or ``kubectl describe pod``. Writes of whole objects (PVs, PVCs)
answer, on success, with the object as stored: the body with a new resourceVersion.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import itertools
import json
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from policy_scheduler.engine.extenders import CompiledExtender, FilterReply, MetaVictims, Victims
from policy_scheduler.objects import Node, Pod


@dataclass(eq=False)
class Hang:
    """An answer that does not come: the call waits until ``release()``, or ``deadline``
    seconds of loop time (the API client's deadline), then answers ``then`` (0: no
    answer). ``waiting`` counts the calls held now, ``hits`` all it held."""

    deadline: float | None = None
    then: int = 0
    waiting: int = 0
    hits: int = 0
    #: Only the first request to each path is held (see FakeApiSession.hang).
    once: bool = False
    seen: set[str] = field(default_factory=set)
    _released: asyncio.Event = field(default_factory=asyncio.Event)

    def release(self) -> None:
        self._released.set()

    async def wait(self) -> int:
        self.waiting += 1
        self.hits += 1
        try:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.deadline):
                    await self._released.wait()
            return self.then
        finally:
            self.waiting -= 1


Answer = int | BaseException | Hang


@dataclass
class Call:
    method: str
    args: tuple[Any, ...]


@dataclass
class FakeApi:
    statuses: dict[str, Answer | list[Answer]] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)
    leases: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    #: What ``get_pod`` answers, by (namespace, name): (status, object). Absent: the pod
    #: exists, unbound (the binding did not happen).
    pods: dict[tuple[str, str], tuple[int, dict[str, Any] | None]] = field(default_factory=dict)
    #: What ``list_objects`` answers, by kind name; an int or exception fails the LIST.
    lists: dict[str, list[dict[str, Any]] | int | BaseException] = field(default_factory=dict)
    #: Objects per page of ``list_pages``.
    page_size: int = 500
    versions: itertools.count[int] = field(default_factory=lambda: itertools.count(100))
    #: ResourceClaims as the API holds them, by (namespace, name): what the
    #: DynamicResources PreBind reads and writes.
    resource_claims: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)

    _DEFAULTS: ClassVar[dict[str, int]] = {
        "bind": 201,
        "patch_pod_status": 200,
        "delete_pod": 200,
        "create_event": 201,
        "patch_event": 200,
        "patch_policy_status": 200,
        "patch_pod_group_status": 200,
        "create_lease": 201,
        "replace_lease": 200,
        "replace_persistent_volume": 200,
        "replace_claim": 200,
        "replace_resource_claim": 200,
        "replace_resource_claim_status": 200,
    }

    async def _answer(self, method: str, *args: Any) -> int:
        self.calls.append(Call(method, args))
        answer = self.statuses.get(method, self._DEFAULTS[method])
        if isinstance(answer, list):
            answer = answer.pop(0) if len(answer) > 1 else answer[0]
        if isinstance(answer, Hang):
            return await answer.wait()
        if isinstance(answer, BaseException):
            raise answer
        return answer

    # -- the Api protocol ----------------------------------------------------------------

    async def bind(self, namespace: str, name: str, uid: str, node: str) -> int:
        return await self._answer("bind", namespace, name, uid, node)

    async def get_pod(self, namespace: str, name: str) -> tuple[int, dict[str, Any] | None]:
        self.calls.append(Call("get_pod", (namespace, name)))
        return self.pods.get((namespace, name), (200, {"metadata": {}, "spec": {}}))

    async def patch_pod_status(self, namespace: str, name: str, patch: Mapping[str, Any]) -> int:
        return await self._answer("patch_pod_status", namespace, name, patch)

    async def delete_pod(self, namespace: str, name: str, uid: str) -> int:
        return await self._answer("delete_pod", namespace, name, uid)

    async def create_event(self, namespace: str, body: Mapping[str, Any]) -> int:
        return await self._answer("create_event", namespace, body)

    async def patch_event(self, namespace: str, name: str, patch: Mapping[str, Any]) -> int:
        return await self._answer("patch_event", namespace, name, patch)

    async def patch_policy_status(self, name: str, status: Mapping[str, Any]) -> int:
        return await self._answer("patch_policy_status", name, status)

    async def patch_pod_group_status(
        self, namespace: str, name: str, status: Mapping[str, Any]
    ) -> int:
        return await self._answer("patch_pod_group_status", namespace, name, status)

    async def get_lease(self, namespace: str, name: str) -> dict[str, Any] | None:
        self.calls.append(Call("get_lease", (namespace, name)))
        return self.leases.get((namespace, name))

    async def create_lease(self, namespace: str, body: Mapping[str, Any]) -> int:
        return await self._answer("create_lease", namespace, body)

    async def replace_lease(self, namespace: str, name: str, body: Mapping[str, Any]) -> int:
        return await self._answer("replace_lease", namespace, name, body)

    async def list_pages(self, kind: Any) -> AsyncIterator[list[dict[str, Any]]]:
        from policy_scheduler.runtime.kubeapi import ApiError

        self.calls.append(Call("list_objects", (kind.kind,)))
        answer = self.lists.get(kind.kind, [])
        if isinstance(answer, BaseException):
            raise answer
        if isinstance(answer, int):
            raise ApiError(f"listing {kind.plural}", answer)
        items = [dict(obj, kind=kind.kind, apiVersion=kind.api_version) for obj in answer]
        for first in range(0, len(items), self.page_size):
            yield items[first : first + self.page_size]

    async def list_objects(self, kind: Any) -> list[dict[str, Any]]:
        return [item async for page in self.list_pages(kind) for item in page]

    async def replace_persistent_volume(
        self, name: str, body: Mapping[str, Any]
    ) -> tuple[int, dict[str, Any] | None]:
        status = await self._answer("replace_persistent_volume", name, copy.deepcopy(dict(body)))
        return status, self._stored(body) if status < 300 else None

    async def replace_claim(
        self, namespace: str, name: str, body: Mapping[str, Any]
    ) -> tuple[int, dict[str, Any] | None]:
        status = await self._answer("replace_claim", namespace, name, copy.deepcopy(dict(body)))
        return status, self._stored(body) if status < 300 else None

    async def get_resource_claim(
        self, namespace: str, name: str
    ) -> tuple[int, dict[str, Any] | None]:
        self.calls.append(Call("get_resource_claim", (namespace, name)))
        found = self.resource_claims.get((namespace, name))
        return (200, copy.deepcopy(found)) if found is not None else (404, None)

    async def replace_resource_claim(
        self, namespace: str, name: str, body: Mapping[str, Any], *, status: bool
    ) -> tuple[int, dict[str, Any] | None]:
        method = "replace_resource_claim_status" if status else "replace_resource_claim"
        answer = await self._answer(method, namespace, name, copy.deepcopy(dict(body)))
        if answer >= 300:
            return answer, None
        stored = self._stored(body)
        self.resource_claims[(namespace, name)] = stored
        return answer, copy.deepcopy(stored)

    def _stored(self, body: Mapping[str, Any]) -> dict[str, Any]:
        stored = copy.deepcopy(dict(body))
        stored["metadata"]["resourceVersion"] = str(next(self.versions))
        return stored

    # -- what tests look at ----------------------------------------------------------------

    def of(self, method: str) -> list[tuple[Any, ...]]:
        return [c.args for c in self.calls if c.method == method]

    @property
    def bindings(self) -> list[tuple[str, str]]:
        """(namespace/name, node) of every binding sent."""
        return [(f"{ns}/{name}", node) for ns, name, _uid, node in self.of("bind")]

    @property
    def events(self) -> list[dict[str, Any]]:
        """Bodies of the events created."""
        return [dict(body) for _ns, body in self.of("create_event")]

    @property
    def event_patches(self) -> list[dict[str, Any]]:
        return [dict(patch) for _ns, _name, patch in self.of("patch_event")]

    @property
    def conditions(self) -> list[dict[str, Any]]:
        """The PodScheduled conditions written, in order."""
        return [
            condition
            for _ns, _name, patch in self.of("patch_pod_status")
            for condition in patch["status"].get("conditions", ())
        ]

    @property
    def nominations(self) -> list[tuple[str, str | None]]:
        """(namespace/name, node or None when cleared) of every nominatedNodeName written."""
        return [
            (f"{ns}/{name}", patch["status"]["nominatedNodeName"])
            for ns, name, patch in self.of("patch_pod_status")
            if "nominatedNodeName" in patch["status"]
        ]

    @property
    def deletions(self) -> list[str]:
        """namespace/name of every pod deleted, in order."""
        return [f"{ns}/{name}" for ns, name, _uid in self.of("delete_pod")]


@dataclass
class FakeClock:
    """Monotonic time that moves only when a test says so: ``clock.now += 5``."""

    now: float = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class FakeExtenders:
    """The engine's ExtenderClient in memory: scripted answers, every call recorded.

    ``answers[(call, urlPrefix)]`` answers one kind of call (``filter``, ``prioritize``,
    ``bind``, ``preempt``) of one extender: a function of what the client gets (pod, then
    nodes, node name or candidates) returning what the client would, or raising
    ``ExtenderError``. A call without an answer passes every node, scores nothing, binds,
    keeps every candidate. ``calls`` holds (call, urlPrefix, node names sent).
    """

    answers: dict[tuple[str, str], Callable[..., Any]] = field(default_factory=dict)
    calls: list[tuple[str, str, tuple[str, ...]]] = field(default_factory=list)

    def _answer(
        self, call: str, extender: CompiledExtender, names: Sequence[str], *args: Any
    ) -> Any:
        self.calls.append((call, extender.url_prefix, tuple(names)))
        answer = self.answers.get((call, extender.url_prefix))
        return None if answer is None else answer(*args)

    async def filter(
        self, extender: CompiledExtender, pod: Pod, nodes: Sequence[Node]
    ) -> FilterReply:
        names = [node.name for node in nodes]
        reply = self._answer("filter", extender, names, pod, nodes)
        return FilterReply(tuple(names)) if reply is None else reply  # type: ignore[no-any-return]

    async def prioritize(
        self, extender: CompiledExtender, pod: Pod, nodes: Sequence[Node]
    ) -> list[tuple[str, int]]:
        reply = self._answer("prioritize", extender, [n.name for n in nodes], pod, nodes)
        return [] if reply is None else reply  # type: ignore[no-any-return]

    async def bind(self, extender: CompiledExtender, pod: Pod, node: str) -> None:
        self._answer("bind", extender, [node], pod, node)

    async def preempt(
        self, extender: CompiledExtender, pod: Pod, candidates: Mapping[str, Victims]
    ) -> dict[str, MetaVictims]:
        reply = self._answer("preempt", extender, list(candidates), pod, candidates)
        if reply is None:
            return {
                node: MetaVictims(tuple(p.uid for p in v.pods), v.num_pdb_violations)
                for node, v in candidates.items()
            }
        return reply  # type: ignore[no-any-return]


# -- the API server as KubeApi's HTTP session sees it --------------------------------------


@dataclass
class FakeResponse:
    status: int
    body: bytes
    _release: Callable[[], None]
    _released: bool = False

    async def read(self) -> bytes:
        return self.body

    def release(self) -> None:
        if not self._released:
            self._released = True
            self._release()


@dataclass
class FakeApiSession:
    """kubernetes-asyncio's aiohttp session, faked for :class:`KubeApi`'s writes.

    Put in place of ``api_client.rest_client.pool_manager``. It answers as the API server
    does (a binding 201, an event 201, a patch 200, a deletion 200; anything else 404),
    with aiohttp's connection pool as it matters here: at most ``limit`` requests hold a
    connection at once, from sending until the response is released, and waiting for
    one counts against the request's ``connect`` timeout. ``hang(method, path)`` makes
    matching requests never answer (they end at the request's ``total`` timeout, as
    aiohttp's do). Time is the loop's: with looptime, a 30 s deadline costs nothing.
    """

    limit: int
    #: (method, path substring, the hang): requests that never answer
    hangs: list[tuple[str, str, Hang]] = field(default_factory=list)
    #: "namespace/name" -> node, of every binding answered 201
    bound: dict[str, str] = field(default_factory=dict)
    #: (method, path) of every request answered
    answered: list[tuple[str, str]] = field(default_factory=list)
    closed: bool = False
    _pool: asyncio.Semaphore | None = None
    _watchers: list[tuple[int, asyncio.Event]] = field(default_factory=list)

    def hang(self, method: str, path: str, *, once: bool = False) -> Hang:
        """Requests ``method`` to a path containing ``path`` never answer; ``once``: only
        the first request to each such path (a retry gets through)."""
        hang = Hang(once=once)
        self.hangs.append((method, path, hang))
        return hang

    def bindings(self, count: int) -> asyncio.Event:
        """Set once ``count`` pods are bound."""
        event = asyncio.Event()
        self._watchers.append((count, event))
        self._bound_changed()
        return event

    def _bound_changed(self) -> None:
        for count, event in self._watchers:
            if len(self.bound) >= count:
                event.set()

    async def request(self, method: str, url: str, **options: Any) -> FakeResponse:
        if self._pool is None:
            self._pool = asyncio.Semaphore(self.limit)
        pool = self._pool
        timeout = options.get("timeout")
        path = url.split("://", 1)[-1].partition("/")[2]
        path = "/" + path
        async with asyncio.timeout(getattr(timeout, "total", None)):
            async with asyncio.timeout(getattr(timeout, "connect", None)):
                await pool.acquire()
            try:
                for hung_method, part, hang in self.hangs:
                    if hung_method == method and part in path:
                        if hang.once:
                            if path in hang.seen:
                                continue
                            hang.seen.add(path)
                        await hang.wait()  # held until the deadline above
                status = self._serve(method, path, options.get("data") or b"")
            except BaseException:
                pool.release()
                raise
        return FakeResponse(status, b"{}", pool.release)

    def _serve(self, method: str, path: str, data: bytes) -> int:
        self.answered.append((method, path))
        if method == "POST" and path.endswith("/binding"):
            body = json.loads(data)
            meta = body["metadata"]
            self.bound[f"{meta['namespace']}/{meta['name']}"] = body["target"]["name"]
            self._bound_changed()
            return 201
        if method == "POST" and path.endswith("/events"):
            return 201
        if method in ("PATCH", "DELETE"):
            return 200
        if method == "GET" and "/pods/" in path:
            return 200  # the pod, as {}: not bound (a binding's verification reads it)
        return 404

    async def close(self) -> None:
        self.closed = True
