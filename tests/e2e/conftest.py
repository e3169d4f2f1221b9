"""Fixtures for end-to-end tests: the operator, over HTTP, against a Kubernetes API.

Two modes, chosen once per session:

* Emulator mode (default): each test gets a fresh ``ApiEmulator`` (tests/e2e/emulator.py,
  KMock-based) serving http://127.0.0.1:<free port> from its own thread. Traffic stays
  on loopback.
* Real-cluster mode: if ``KUBECONFIG`` is set when the session starts, no emulator is
  started; ``emulator`` is a client for that cluster (objects it creates are deleted at
  teardown, pods with grace period 0) and ``kubeconfig`` is that file. Tests that need
  the emulator itself (``emulator.bindings``, ``emulator_server``) skip. Beware: tests
  create Nodes and Namespaces; never point this at a cluster you care about.

Fixtures:

* ``emulator`` -> ``KubeClient`` (async, aiohttp in the test's loop): ``.url``,
  ``.is_emulated``, ``.server`` (the ``EmulatorServer`` or None), ``create(obj,
  namespace=None)``, ``get(api_version, kind, name, namespace=None)`` (None if 404),
  ``list(api_version, kind, namespace=None, label_selector=, field_selector=)``,
  ``patch(api_version, kind, name, patch, namespace=None, subresource=None,
  patch_type='merge'|'strategic'|'json')``, ``replace(obj, subresource=None)``,
  ``delete(...)``, ``bind(namespace, pod, node) -> (status, body)``,
  ``wait_for(api_version, kind, name, namespace, predicate, timeout=5)``,
  ``list_body(...)`` (the whole LIST answer, with its ``metadata.resourceVersion``),
  ``watch(api_version, kind, namespace=None, label_selector=, field_selector=,
  resource_version=)`` (an async iterator of events: the current objects first without
  a version, only later events from one), ``request(method, path, json=, params=,
  content_type=, headers=) -> (status, body)``,
  ``.bindings`` (list of ``BindingRecord(namespace, pod, node, status, time, uid)``,
  every binding attempt in order; skips the test on a real cluster).
* ``emulator_server`` -> ``EmulatorServer`` (skips on a real cluster): ``.url``,
  ``.emulator`` (the KMock handler: ``.objects``, ``.validators``, KMock DSL),
  ``.bindings``, ``.call(fn)`` to run ``fn(emulator)`` inside the emulator's loop (use it
  for anything beyond reading ``bindings``), ``.disconnect_watches()``,
  ``.hold_watches()``/``.release_watches()`` (reconnecting watches wait meanwhile, so that
  clients fall behind), ``.expired_watches`` (every watch answered "410 Expired"),
  ``.set_validator(fn, resource=...)``, ``.unexpected_errors`` (the emulator's own 500s;
  a test fails at teardown if there are any).
* ``watch_window`` -> how many events per resource a watch can resume over (10 000);
  parametrize it (``@pytest.mark.parametrize("watch_window", [3])``) to reach the
  "410 Expired" path with a few writes.
* ``policy_validator`` -> ``None``; override it (conftest or module) to validate
  SchedulingPolicies on every write with ``fn(obj) -> list[str]`` (422 when non-empty).
* ``kubeconfig`` -> ``Path`` of a kubeconfig for the emulator (or the session's one),
  with ``KUBECONFIG`` set and ``KUBERNETES_SERVICE_HOST``/``KUBERNETES_SERVICE_PORT``
  removed (kubernetes-asyncio's in-cluster login would win over KUBECONFIG), and
  kubernetes-asyncio's ``KUBE_CONFIG_DEFAULT_LOCATION`` patched (it reads $KUBECONFIG
  once, at import, so setting the variable alone is not seen by Kopf's login). Restores
  kubernetes-asyncio's global default ``Configuration`` at teardown (Kopf's default
  login overwrites it).
* ``api_client`` -> ``kubernetes_asyncio.client.ApiClient`` configured explicitly from
  ``kubeconfig`` (not from the global default).
* ``namespace`` -> the name of a fresh namespace ``e2e-xxxxxxxx``.
* ``kopf_runner`` -> ``run_kopf_in_thread`` after ``kubeconfig`` is in place.

Kopf: ``run_kopf_in_thread(registry, namespaces=(...) | clusterwide=True, settings=,
login='client'|'kubeconfig'|None, startup_timeout=10, shutdown_timeout=10)``
(tests/e2e/harness.py) runs ``kopf.operator(..., standalone=True)`` in a side thread,
usable as ``with`` or ``async with``. Login: a plain ``kopf.OperatorRegistry()`` has no
login handlers at all (only Kopf's global default registry has the fallback ones), so
the helper adds ``kopf.login_via_async_client`` (kubernetes-asyncio + kubeconfig; works
with the emulator and real clusters) to a registry that has none; ``login='kubeconfig'``
adds ``kopf.login_with_kubeconfig`` instead (no global state, no exec plugins).

All e2e tests run in real time (looptime is switched off for them even with --looptime:
the emulator and Kopf live in other threads and loops).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio import config as k8s_config
from kubernetes_asyncio.config import kube_config as k8s_kube_config

from e2e.emulator import DEFAULT_WATCH_WINDOW, EmulatorServer, Validator
from e2e.harness import KubeClient, run_kopf_in_thread, write_kubeconfig

# Captured when pytest imports this conftest (collection), before any test touches the env.
SESSION_KUBECONFIG: str | None = os.environ.get("KUBECONFIG") or None
E2E_DIR = Path(__file__).parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if E2E_DIR in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.looptime(False))


@pytest.fixture
def policy_validator() -> Validator | None:
    return None


@pytest.fixture
def watch_window() -> int:
    return DEFAULT_WATCH_WINDOW


@pytest.fixture
def _emulator_server(
    policy_validator: Validator | None, watch_window: int
) -> Iterator[EmulatorServer | None]:
    if SESSION_KUBECONFIG:
        yield None
        return
    with EmulatorServer(validator=policy_validator, watch_window=watch_window) as server:
        yield server
        errors = server.unexpected_errors
        if errors:  # the emulator's own bugs (500s), not the API errors it is meant to answer
            pytest.fail(f"The emulator failed internally: {errors!r}")


@pytest.fixture
def emulator_server(_emulator_server: EmulatorServer | None) -> EmulatorServer:
    if _emulator_server is None:
        pytest.skip("Needs the emulator; KUBECONFIG points to a real cluster.")
    return _emulator_server


@pytest.fixture
async def emulator(_emulator_server: EmulatorServer | None) -> AsyncIterator[KubeClient]:
    if _emulator_server is not None:
        kube = KubeClient.for_emulator(_emulator_server)
    else:
        kube = await KubeClient.from_kubeconfig(SESSION_KUBECONFIG)
    try:
        yield kube
    finally:
        await kube.cleanup()
        await kube.close()


@pytest.fixture
def kubeconfig(
    _emulator_server: EmulatorServer | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_PORT", raising=False)
    if _emulator_server is not None:
        path = write_kubeconfig(tmp_path / "kubeconfig", _emulator_server.url)
        monkeypatch.setenv("KUBECONFIG", str(path))
        # kubernetes-asyncio reads $KUBECONFIG once, at import: load_kube_config() without
        # arguments (as in Kopf's default login) would not see the variable set above.
        monkeypatch.setattr(k8s_kube_config, "KUBE_CONFIG_DEFAULT_LOCATION", str(path))
    else:
        assert SESSION_KUBECONFIG is not None
        path = Path(os.path.expanduser(SESSION_KUBECONFIG.split(os.pathsep)[0]))
    saved_default: Any = k8s_client.Configuration._default
    try:
        yield path
    finally:
        k8s_client.Configuration._default = saved_default


@pytest.fixture
async def api_client(
    kubeconfig: Path,
    _emulator_server: EmulatorServer | None,
) -> AsyncIterator[k8s_client.ApiClient]:
    configuration = k8s_client.Configuration()
    await k8s_config.load_kube_config(
        config_file=str(kubeconfig) if _emulator_server is not None else SESSION_KUBECONFIG,
        client_configuration=configuration,
    )
    async with k8s_client.ApiClient(configuration) as api:
        yield api


@pytest.fixture
async def namespace(emulator: KubeClient) -> str:
    name = f"e2e-{uuid.uuid4().hex[:8]}"
    await emulator.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name


@pytest.fixture
def kopf_runner(kubeconfig: Path) -> Any:
    return run_kopf_in_thread
