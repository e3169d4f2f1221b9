"""Helpers for end-to-end tests: a plain-HTTP Kubernetes client and Kopf in a side thread.

* ``KubeClient``: create/get/list/patch/replace/delete/bind/wait_for over aiohttp, against
  the emulator (``KubeClient.for_emulator``) or a real cluster (``KubeClient.from_kubeconfig``).
* ``run_kopf_in_thread(registry, ...)``: a context manager (sync ``with`` or ``async with``)
  running ``kopf.operator(...)`` with its own event loop in a side thread.
* ``write_kubeconfig(path, url)``: a minimal kubeconfig for the emulator (plain http, no auth).

The fixtures in ``tests/e2e/conftest.py`` wire these together; import the helpers from
tests as ``from e2e.harness import run_kopf_in_thread`` (``tests`` is on pythonpath).
"""

from __future__ import annotations

import asyncio
import contextlib
import json as jsonlib
import ssl
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Iterable, Mapping
from typing import Any

import aiohttp
import kopf
import pytest
from kopf._core.intents.causes import Activity  # not re-exported by kopf

from e2e.emulator import (
    BindingRecord,
    EmulatorServer,
    ResourceSpec,
    find_resource,
    write_kubeconfig,
)

__all__ = ["ApiError", "KopfThread", "KubeClient", "run_kopf_in_thread", "write_kubeconfig"]

PATCH_TYPES = {
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "json": "application/json-patch+json",
}


class ApiError(Exception):
    def __init__(self, status: int, body: Any, method: str, path: str) -> None:
        message = body.get("message") if isinstance(body, Mapping) else body
        super().__init__(f"{method} {path} -> {status}: {message}")
        self.status = status
        self.body = body


class KubeClient:
    """A minimal Kubernetes client over aiohttp, bound to the event loop that uses it.

    Resources are addressed by ``(api_version, kind_or_plural)`` as in ``RESOURCES``
    (``('v1', 'Pod')``, ``('v1', 'pods')``, ``('policyscheduler.io/v1alpha1',
    'SchedulingPolicy')``). Methods raise ``ApiError`` on non-2xx answers, except where
    documented (``get``/``delete`` return None on 404; ``bind``/``request`` return the
    status and body as they are).
    """

    def __init__(
        self,
        url: str,
        *,
        server: EmulatorServer | None = None,
        ssl_context: ssl.SSLContext | None = None,
        headers: Mapping[str, str] | None = None,
        track: bool = False,
    ) -> None:
        self.url = url.rstrip("/")
        self.server = server  # the emulator's runner, None against a real cluster
        self._ssl = ssl_context
        self._headers = dict(headers or {})
        self._session: aiohttp.ClientSession | None = None
        self._track = track  # remember created objects to delete them in cleanup()
        self._created: list[tuple[ResourceSpec, str | None, str]] = []

    @classmethod
    def for_emulator(cls, server: EmulatorServer) -> KubeClient:
        return cls(server.url, server=server)

    @classmethod
    async def from_kubeconfig(cls, path: str | None = None) -> KubeClient:
        """For a real cluster, via kubernetes-asyncio's kubeconfig loader (certs, tokens, exec)."""
        from kubernetes_asyncio import client, config

        cfg = client.Configuration()
        await config.load_kube_config(config_file=path, client_configuration=cfg)
        context: ssl.SSLContext | None = None
        if cfg.host.startswith("https"):
            context = ssl.create_default_context(cafile=cfg.ssl_ca_cert)
            if not cfg.verify_ssl:
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
            if cfg.cert_file:
                context.load_cert_chain(cfg.cert_file, cfg.key_file)
        headers = {}
        token = await cfg.get_api_key_with_prefix(
            "BearerToken"
        ) or await cfg.get_api_key_with_prefix("authorization")
        if token:
            headers["Authorization"] = token if " " in token else f"Bearer {token}"
        return cls(cfg.host, ssl_context=context, headers=headers, track=True)

    @property
    def is_emulated(self) -> bool:
        return self.server is not None

    @property
    def bindings(self) -> list[BindingRecord]:
        """Every pods/binding request the emulator served; skips the test on a real cluster."""
        if self.server is None:
            pytest.skip("The binding log exists only in the emulator.")
        return self.server.bindings

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def __aenter__(self) -> KubeClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- raw -----------------------------------------------------------------------------

    async def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, str] | None = None,
        content_type: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float = 10.0,
    ) -> tuple[int, Any]:
        if self._session is None:
            self._session = aiohttp.ClientSession(headers=self._headers)
        headers = dict(headers or {}) | ({"Content-Type": content_type} if content_type else {})
        async with self._session.request(
            method,
            self.url + path,
            json=json,
            params=params,
            headers=headers,
            ssl=self._ssl if self._ssl is not None else True,
            timeout=aiohttp.ClientTimeout(total=timeout),
        ) as response:
            text = await response.text()
            try:
                body: Any = jsonlib.loads(text) if text else None
            except ValueError:
                body = text
            return response.status, body

    async def _checked(self, method: str, path: str, **kwargs: Any) -> Any:
        status, body = await self.request(method, path, **kwargs)
        if status >= 300:
            raise ApiError(status, body, method, path)
        return body

    # -- objects -------------------------------------------------------------------------

    async def create(self, obj: Mapping[str, Any], namespace: str | None = None) -> dict[str, Any]:
        """POST the object; the namespace comes from the argument or ``metadata.namespace``."""
        spec = find_resource(obj["apiVersion"], obj["kind"])
        namespace = namespace or (obj.get("metadata") or {}).get("namespace")
        if spec.namespaced and not namespace:
            raise ValueError(f"{spec.kind} is namespaced: pass namespace=")
        body = await self._checked("POST", spec.path(namespace), json=obj)
        if self._track:
            self._created.append(
                (spec, namespace if spec.namespaced else None, body["metadata"]["name"])
            )
        return body

    async def get(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> dict[str, Any] | None:
        spec = find_resource(api_version, kind)
        status, body = await self.request("GET", spec.path(namespace, name))
        if status == 404:
            return None
        if status >= 300:
            raise ApiError(status, body, "GET", spec.path(namespace, name))
        return body

    async def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> list[dict[str, Any]]:
        body = await self.list_body(
            api_version,
            kind,
            namespace,
            label_selector=label_selector,
            field_selector=field_selector,
        )
        return list(body.get("items") or [])

    async def list_body(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> dict[str, Any]:
        """The whole LIST answer (``metadata.resourceVersion``, ``items``)."""
        spec = find_resource(api_version, kind)
        params = {
            k: v
            for k, v in {"labelSelector": label_selector, "fieldSelector": field_selector}.items()
            if v
        }
        body: dict[str, Any] = await self._checked("GET", spec.path(namespace), params=params)
        return body

    async def patch(
        self,
        api_version: str,
        kind: str,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        subresource: str | None = None,
        patch_type: str = "merge",
    ) -> dict[str, Any]:
        """PATCH; ``patch_type`` is 'merge' (RFC 7386), 'strategic', or 'json' (a list)."""
        spec = find_resource(api_version, kind)
        return await self._checked(
            "PATCH",
            spec.path(namespace, name, subresource),
            json=patch,
            content_type=PATCH_TYPES[patch_type],
        )

    async def replace(
        self, obj: Mapping[str, Any], *, subresource: str | None = None
    ) -> dict[str, Any]:
        spec = find_resource(obj["apiVersion"], obj["kind"])
        meta = obj["metadata"]
        return await self._checked(
            "PUT", spec.path(meta.get("namespace"), meta["name"], subresource), json=obj
        )

    async def delete(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None = None,
        *,
        grace_period: int | None = None,
    ) -> dict[str, Any] | None:
        spec = find_resource(api_version, kind)
        params = {"gracePeriodSeconds": str(grace_period)} if grace_period is not None else None
        status, body = await self.request("DELETE", spec.path(namespace, name), params=params)
        if status == 404:
            return None
        if status >= 300:
            raise ApiError(status, body, "DELETE", spec.path(namespace, name))
        return body

    async def bind(self, namespace: str, pod: str, node: str) -> tuple[int, Any]:
        """POST a v1 Binding to ``pods/NAME/binding``; returns (status, body), never raises."""
        spec = find_resource("v1", "Pod")
        return await self.request(
            "POST",
            spec.path(namespace, pod, "binding"),
            json={
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": pod, "namespace": namespace},
                "target": {"apiVersion": "v1", "kind": "Node", "name": node},
            },
        )

    async def watch(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resource_version: str | None = None,
        timeout: float = 30.0,
    ) -> AsyncIterator[dict[str, Any]]:
        """Stream watch events ``{'type', 'object'}``; ends when the server ends the stream.

        ``async for event in kube.watch('v1', 'Pod', ns): ...`` -- break out to disconnect.
        Without ``resource_version`` (or with "0") the server first sends every matching
        object as ADDED; with a LIST's or an event's version, only what changed since (or
        one ERROR event, 410 Expired, when that version is too old).
        """
        spec = find_resource(api_version, kind)
        params = {"watch": "true", "allowWatchBookmarks": "true"}
        params |= {"labelSelector": label_selector} if label_selector else {}
        params |= {"fieldSelector": field_selector} if field_selector else {}
        params |= {"resourceVersion": resource_version} if resource_version is not None else {}
        if self._session is None:
            self._session = aiohttp.ClientSession(headers=self._headers)
        async with self._session.get(
            self.url + spec.path(namespace),
            params=params,
            ssl=self._ssl if self._ssl is not None else True,
            timeout=aiohttp.ClientTimeout(total=timeout),
        ) as response:
            if response.status >= 300:
                text = await response.text()
                try:
                    body: Any = jsonlib.loads(text)
                except ValueError:
                    body = text
                raise ApiError(response.status, body, "GET", spec.path(namespace))
            async for line in response.content:
                if line.strip():
                    yield jsonlib.loads(line)

    async def wait_for(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None = None,
        predicate: Callable[[dict[str, Any] | None], bool] = lambda obj: obj is not None,
        *,
        timeout: float = 5.0,
        interval: float = 0.05,
    ) -> dict[str, Any] | None:
        """Poll GET until ``predicate(obj_or_None)`` holds; TimeoutError with the last state."""
        deadline = time.monotonic() + timeout
        while True:
            obj = await self.get(api_version, kind, name, namespace)
            if predicate(obj):
                return obj
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"{kind} {namespace}/{name} did not match in {timeout}s; last: {obj!r}"
                )
            await asyncio.sleep(interval)

    async def cleanup(self) -> None:
        """Delete what this client created (real-cluster mode only), newest first; best effort."""
        while self._created:
            spec, namespace, name = self._created.pop()
            with contextlib.suppress(Exception):
                await self.delete(spec.api_version, spec.kind, name, namespace, grace_period=0)


async def wait_until(
    condition: Callable[[], bool | Awaitable[bool]],
    *,
    timeout: float = 5.0,
    interval: float = 0.02,
    message: str = "condition",
) -> None:
    """Poll a sync or async condition until true, or raise TimeoutError."""
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if isinstance(result, Awaitable):
            result = await result
        if result:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"Timed out after {timeout}s waiting for {message}.")
        await asyncio.sleep(interval)


class KopfThread:
    """``kopf.operator(...)`` running in a side thread with its own event loop.

    Not a task in the test's loop: Kopf, on exit, cancels every task of its loop, incl.
    the test's own ones. Use as ``with`` (blocks the calling thread while starting and
    stopping -- fine because the emulator runs in its own thread) or ``async with``
    (waits in a worker thread, keeping the test's loop responsive).

    Entering starts the thread and waits for Kopf's ``ready_flag`` (set after login,
    discovery and the startup handlers -- NOT after the watch-streams got their first
    objects); a failure before that (e.g. login) is raised here. Exiting sets the
    ``stop_flag``, waits for the thread, and re-raises an error Kopf died with.

    Login: a plain ``kopf.OperatorRegistry()`` has NO login handlers (only Kopf's global
    default registry, a ``SmartOperatorRegistry``, gets the fallback ones), and Kopf then
    fails with "Ran out of valid credentials". So, if the registry has no login handler,
    one is added to it (``login=``): ``'client'`` (default) = ``kopf.login_via_async_client``:
    kubernetes-asyncio's ``load_incluster_config()`` (which wins whenever
    KUBERNETES_SERVICE_HOST/PORT are set -- the ``kubeconfig`` fixture clears them), then
    ``load_kube_config()`` from ``kube_config.KUBE_CONFIG_DEFAULT_LOCATION`` (read from
    $KUBECONFIG at import! -- the ``kubeconfig`` fixture patches it too). It works with the
    emulator and with real clusters (exec/auth plugins), but it overwrites
    kubernetes-asyncio's process-wide default ``Configuration`` (the ``kubeconfig`` fixture
    restores it). ``'kubeconfig'`` = ``kopf.login_with_kubeconfig``: reads $KUBECONFIG at
    call time, no global state, but no exec/auth plugins. ``None``: add nothing.
    """

    def __init__(
        self,
        registry: kopf.OperatorRegistry,
        *,
        clusterwide: bool | None = None,
        namespaces: Collection[str] = (),
        settings: kopf.OperatorSettings | None = None,
        memo: object | None = None,
        standalone: bool = True,
        login: str | None = "client",
        startup_timeout: float = 10.0,
        shutdown_timeout: float = 10.0,
        **kwargs: Any,
    ) -> None:
        if login is not None and not registry._activities.get_handlers(
            activity=Activity.AUTHENTICATION
        ):
            login_fn = {
                "client": kopf.login_via_async_client,
                "kubeconfig": kopf.login_with_kubeconfig,
            }[login]
            kopf.on.login(registry=registry, id=f"e2e-login-{login}")(login_fn)
        if settings is None:
            settings = kopf.OperatorSettings()
            settings.watching.reconnect_backoff = 0.05
        self.registry = registry
        self.settings = settings
        self._kwargs = dict(
            kwargs,
            registry=registry,
            settings=settings,
            memo=memo,
            standalone=standalone,
            clusterwide=(not namespaces) if clusterwide is None else clusterwide,
            namespaces=namespaces,
        )
        self.startup_timeout = startup_timeout
        self.shutdown_timeout = shutdown_timeout
        self.ready_flag = threading.Event()
        self.stop_flag = threading.Event()
        self.error: BaseException | None = None
        self._thread: threading.Thread | None = None

    def _run(self) -> None:
        try:
            asyncio.run(
                kopf.operator(ready_flag=self.ready_flag, stop_flag=self.stop_flag, **self._kwargs)
            )
        except BaseException as e:
            self.error = e

    def __enter__(self) -> KopfThread:
        self._thread = threading.Thread(target=self._run, name="kopf-operator", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + self.startup_timeout
        while not self.ready_flag.wait(0.02):
            if not self._thread.is_alive():
                raise RuntimeError("Kopf exited before getting ready") from self.error
            if time.monotonic() > deadline:
                self.stop_flag.set()
                self._thread.join(self.shutdown_timeout)
                raise TimeoutError(f"Kopf was not ready in {self.startup_timeout}s") from self.error
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        self.stop_flag.set()
        if self._thread is not None:
            self._thread.join(self.shutdown_timeout)
            if self._thread.is_alive():
                raise TimeoutError(f"Kopf did not stop in {self.shutdown_timeout}s")
        if self.error is not None and exc_type is None:
            raise RuntimeError("Kopf failed") from self.error

    async def __aenter__(self) -> KopfThread:
        return await asyncio.to_thread(self.__enter__)

    async def __aexit__(self, exc_type: object, exc: object, tb: object) -> None:
        await asyncio.to_thread(self.__exit__, exc_type, exc, tb)

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()


def run_kopf_in_thread(
    registry: kopf.OperatorRegistry,
    *,
    clusterwide: bool | None = None,
    namespaces: Iterable[str] = (),
    **kwargs: Any,
) -> KopfThread:
    """``with run_kopf_in_thread(registry, namespaces=['ns']) as kopf_thread: ...``.

    ``clusterwide`` defaults to True when no namespaces are given. Other kwargs go to
    ``kopf.operator()`` (``settings=``, ``memo=``, ``standalone=``, ...) or ``KopfThread``
    (``login=``, ``startup_timeout=``, ``shutdown_timeout=``); see ``KopfThread``.
    """
    return KopfThread(registry, clusterwide=clusterwide, namespaces=tuple(namespaces), **kwargs)
