"""The operator's options and their defaults, written once.

``policy-scheduler run`` builds its flags from :class:`Options` (each flag's default is
the field's), ``kopf run -m policy_scheduler.kopf_entry`` reads the same fields from
environment variables, and the tests build an ``Options`` directly. No Kopf and no API
client here: the offline commands import this module without paying for either.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from .names import DEFAULT_SCHEDULER_NAME


def _pod_namespace() -> str:
    return os.environ.get("POD_NAMESPACE", "default")


def default_identity() -> str:
    """A unique Lease holder identity: the hostname (the pod's name) plus a random suffix,
    as kube-scheduler's."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


def _identity() -> str:
    # Unique per process (two replicas must never share one): the pod's name when the
    # Deployment passes it, else a default identity.
    return os.environ.get("POD_NAME") or default_identity()


@dataclass
class Options:
    """What ``policy-scheduler run`` is told; the defaults are the documented ones."""

    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    namespaces: Sequence[str] = ()  # empty: all
    log_level: str = "info"
    log_format: str = "text"
    metrics_port: int = 9090
    health_port: int = 8081
    #: Address the metrics and health servers listen on.
    host: str = "0.0.0.0"
    leader_elect: bool = False
    lease_name: str = "policy-scheduler"
    lease_namespace: str = field(default_factory=_pod_namespace)
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    #: The critical lane (bindings, evictions, nominations): requests per second, burst.
    qps: float = 200.0
    burst: int = 400
    #: The report lane (events, pod conditions): requests per second and burst (None:
    #: as qps and burst, a budget of the same size, as kube-scheduler gives its event
    #: client), and requests in flight at once (runtime/kubeapi.py).
    report_qps: float | None = None
    report_burst: int | None = None
    report_concurrency: int = 8
    bind_workers: int = 64
    #: Deadline of every API call, in seconds (watches have their own, longer ones).
    api_timeout: float = 30.0
    #: Seconds between LISTs that reconcile the cache with the API (0: only after a
    #: watch had to start over).
    resync_period: float = 300.0
    #: Seconds a shutdown may take before what is left is abandoned (below the chart's
    #: terminationGracePeriodSeconds).
    shutdown_timeout: float = 20.0
    #: Seconds a pod waits for the PV controller to bind the volumes the scheduler chose
    #: (kube-scheduler's bindTimeoutSeconds) before it is retried.
    volume_binding_timeout: float = 600.0
    #: The backoff of a pod whose attempt failed: its first, then doubling up to the most
    #: (kube-scheduler's podInitialBackoffSeconds / podMaxBackoffSeconds), in seconds.
    pod_initial_backoff: float = 1.0
    pod_max_backoff: float = 10.0
    #: Whether a SchedulingPolicy may serve ``default-scheduler``, kube-scheduler's own
    #: name (without: Accepted=False, DefaultSchedulerNotAllowed).
    allow_default_scheduler: bool = False
    identity: str = field(default_factory=_identity)


def default_of(name: str) -> Any:
    """The default of one option, for flags and environment variables to share."""
    for f in fields(Options):
        if f.name == name:
            return f.default
    raise KeyError(name)
