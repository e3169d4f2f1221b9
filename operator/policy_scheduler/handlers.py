"""Kopf handlers: watch events in, :meth:`SchedulerRuntime.handle` out. Nothing else.

Every kind the scheduler reads (:data:`..kinds.KINDS`) gets one ``@kopf.on.event``
handler that passes the event's type and object, with the kind it was registered for,
to the runtime, the same door the LIST at startup goes through. Event handlers write
nothing to the objects they watch, so no Kopf annotation and no finalizer ever lands on
a pod, and none on a SchedulingPolicy either (deleting a policy never waits for the
operator). Status of SchedulingPolicies is written by the runtime through the API, only
when it changes, so its own writes do not start a loop.

The handlers live in their own :data:`registry` (not Kopf's global one), so importing
this module never changes what another operator in the process handles.

Every handler is ``async``: Kopf runs synchronous handlers in a thread pool, and the
runtime's cache and queue belong to the event loop's thread (the scheduling loop reads
them between awaits, never under a lock).

The runtime is found in Kopf's ``memo`` (``memo.runtime``), set by whoever starts the
operator (``policy-scheduler run`` or the tests), so several operators can run in one
process without globals.
"""

from __future__ import annotations

import logging
from typing import Any

import kopf

from .engine.plugins import load_named, named_in
from .kinds import KINDS, SCHEDULING_POLICY, Kind
from .runtime.kubeapi import LIST_PAGE
from .runtime.scheduling import SchedulerRuntime
from .runtime.watching import survive_watch_errors

logger = logging.getLogger(__name__)

registry = kopf.OperatorRegistry()

# Seconds an object's Kopf worker waits for its next event before it exits.
WORKER_IDLE_TIMEOUT = 0.5


class NoDiffBase(kopf.DiffBaseStorage):
    """No diff-base: every handler here is an event handler, nothing detects changes.

    Kopf otherwise fetches and builds (deep-copies) an essence of every object on every
    event, for change handlers this operator does not have: the largest part of Kopf's
    cost per pod event. Nothing is read from or stored on the objects.
    """

    def build(self, *, body: Any, extra_fields: Any = None) -> Any:
        return None

    def fetch(self, *, body: Any) -> Any:
        return None

    def store(self, *, body: Any, patch: Any, essence: Any) -> None:
        return None


@kopf.on.startup(registry=registry)
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    # Kopf's own k8s events ("Handler succeeded") would only be noise next to ours.
    settings.posting.enabled = False
    # Nor in the log: Kopf logs "Handler 'pods_event' succeeded." at INFO for every event
    # of every object (two lines per scheduled pod, a sixth of the operator's CPU spent
    # formatting them). Its warnings and errors stay; --log-level debug shows it all.
    objects_logger = logging.getLogger("kopf.objects")
    if not objects_logger.isEnabledFor(logging.DEBUG):
        objects_logger.setLevel(logging.WARNING)
    settings.persistence.diffbase_storage = NoDiffBase()
    # Every request with a deadline; a watch connection is renewed every 5 minutes.
    settings.watching.server_timeout = 300
    settings.watching.client_timeout = 330
    settings.watching.connect_timeout = 10
    # A watch that failed starts over after this long (not Kopf's 0.1 s: a LIST the API
    # refuses, say a 403 after an RBAC change, must not be repeated ten times a second).
    settings.watching.reconnect_backoff = 1.0
    settings.networking.request_timeout = 60
    settings.networking.connect_timeout = 10
    # Kopf's initial LIST of a kind in pages, as our own lists are: unpaged, 10 000 pods
    # arrive as one response of some 100 MB, decoded at once.
    settings.watching.chunk_size = LIST_PAGE
    # Kopf keeps a worker task per object that had an event, holding that object's last
    # raw event until it has been idle this long (Kopf's default: 5 s). Right after a
    # (re-)list that is one worker per pod and node of the cluster: at 5000 nodes and
    # 10 000 bound pods the operator peaked at 246-248 MiB RSS with 5 s and unpaged
    # lists, 154 MiB with these two (docs/performance.md). A pod's next event within
    # 0.5 s (its binding, usually) still finds its worker.
    settings.queueing.idle_timeout = WORKER_IDLE_TIMEOUT
    # No watch on CustomResourceDefinitions and Namespaces for Kopf's own discovery: it
    # needs cluster-wide permissions the scheduler has no use for. The kinds are
    # discovered once at startup (the chart installs the CRD before the Deployment).
    settings.scanning.disabled = True
    # A watch ERROR event starts the stream over with a LIST instead of stopping the
    # operator, as client-go's reflector does.
    survive_watch_errors()


@kopf.on.login(registry=registry)
async def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
    """The same credentials as our own API client: in-cluster, else the kubeconfig.

    kubernetes-asyncio's loader handles exec and auth-provider plugins of kubeconfigs.
    """
    return await kopf.login_via_async_client(**kwargs)


@kopf.on.cleanup(registry=registry)
async def stop_scheduler(memo: Any, **_: Any) -> None:
    """Stop the scheduler while Kopf stops its watchers, not after.

    Kopf runs cleanup handlers once its watchers are gone, and then gives every task it
    did not create itself 5 seconds before cancelling it: stopping here, in order (the
    loop, then the bindings in flight, within ``--shutdown-timeout``), leaves it none.
    """
    operator = getattr(memo, "operator", None)
    if operator is not None:
        await operator.stop()


def _register(kind: Kind) -> None:
    async def event_handler(event: kopf.RawEvent, memo: Any, **_: Any) -> None:
        runtime: SchedulerRuntime = memo.runtime
        if kind is SCHEDULING_POLICY:
            # A plugin's import runs off the loop, within its deadline (engine/plugins.py).
            await load_named(named_in(event["object"]))
        runtime.handle(event["type"], event["object"], kind)

    event_handler.__name__ = f"{kind.plural}_event"
    resource = (
        (kind.group, kind.version, kind.plural) if kind.group else (kind.version, kind.plural)
    )
    kopf.on.event(*resource, id=f"{kind.plural}_event", registry=registry)(event_handler)


for _kind in KINDS:
    _register(_kind)
