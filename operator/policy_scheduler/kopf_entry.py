"""``kopf run -m policy_scheduler.kopf_entry``: the scheduler under Kopf's own CLI.

For people who run their operators with ``kopf run`` (its flags for namespaces,
liveness, peering, logging). The handlers are the same as ``policy-scheduler run``;
the runtime starts in a startup handler and stops in a cleanup handler. Options come
from environment variables, as flags belong to Kopf here:

``POLICY_SCHEDULER_NAME`` (default policy-scheduler), ``POLICY_SCHEDULER_LEADER_ELECT``
("true" to take a Lease), ``POLICY_SCHEDULER_METRICS_PORT`` (default 9090, 0 = off),
``POLICY_SCHEDULER_QPS`` / ``POLICY_SCHEDULER_BURST``, ``POLICY_SCHEDULER_REPORT_QPS`` /
``POLICY_SCHEDULER_REPORT_BURST`` / ``POLICY_SCHEDULER_REPORT_CONCURRENCY``,
``POLICY_SCHEDULER_LEASE_NAME``
(default policy-scheduler), ``POLICY_SCHEDULER_API_TIMEOUT`` (default 30 s),
``POLICY_SCHEDULER_RESYNC_PERIOD`` (default 300 s),
``POLICY_SCHEDULER_VOLUME_BINDING_TIMEOUT`` (seconds, default 600),
``POLICY_SCHEDULER_POD_INITIAL_BACKOFF_SECONDS`` / ``POLICY_SCHEDULER_POD_MAX_BACKOFF_SECONDS``
(default 1 and 10),
``POLICY_SCHEDULER_ALLOW_DEFAULT_SCHEDULER`` ("true" to let a policy serve
``default-scheduler``) and ``POD_NAMESPACE`` for the Lease. Health: use Kopf's
``--liveness=http://0.0.0.0:8081/healthz``; a probe handler makes it fail while a part
of the scheduler is broken (the same checks as ``run``'s /healthz).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

import kopf

from .handlers import registry
from .operating import Operator, load_client
from .options import Options, default_of
from .runtime.kubeapi import pool_size

_T = TypeVar("_T")


def _maybe(kind: Callable[[str], _T], value: str | None) -> _T | None:
    """A variable's value, or None when it is unset or empty (the option's own default)."""
    return kind(value) if value else None


def options_from_environment() -> Options:
    env = os.environ

    def get(name: str, option: str) -> str:
        return env.get(name, str(default_of(option)))

    return Options(
        scheduler_name=get("POLICY_SCHEDULER_NAME", "scheduler_name"),
        leader_elect=env.get("POLICY_SCHEDULER_LEADER_ELECT", "").lower() == "true",
        metrics_port=int(get("POLICY_SCHEDULER_METRICS_PORT", "metrics_port")),
        health_port=0,  # Kopf's --liveness serves it
        qps=float(get("POLICY_SCHEDULER_QPS", "qps")),
        burst=int(get("POLICY_SCHEDULER_BURST", "burst")),
        report_qps=_maybe(float, env.get("POLICY_SCHEDULER_REPORT_QPS")),
        report_burst=_maybe(int, env.get("POLICY_SCHEDULER_REPORT_BURST")),
        report_concurrency=int(get("POLICY_SCHEDULER_REPORT_CONCURRENCY", "report_concurrency")),
        lease_name=get("POLICY_SCHEDULER_LEASE_NAME", "lease_name"),
        api_timeout=float(get("POLICY_SCHEDULER_API_TIMEOUT", "api_timeout")),
        resync_period=float(get("POLICY_SCHEDULER_RESYNC_PERIOD", "resync_period")),
        volume_binding_timeout=float(
            get("POLICY_SCHEDULER_VOLUME_BINDING_TIMEOUT", "volume_binding_timeout")
        ),
        pod_initial_backoff=float(
            get("POLICY_SCHEDULER_POD_INITIAL_BACKOFF_SECONDS", "pod_initial_backoff")
        ),
        pod_max_backoff=float(get("POLICY_SCHEDULER_POD_MAX_BACKOFF_SECONDS", "pod_max_backoff")),
        allow_default_scheduler=(
            env.get("POLICY_SCHEDULER_ALLOW_DEFAULT_SCHEDULER", "").lower() == "true"
        ),
    )


@kopf.on.startup(registry=registry)
async def start_runtime(memo: kopf.Memo, **_: Any) -> None:
    options = options_from_environment()
    api_client = await load_client(pool_size(options.burst, options.report_concurrency))
    operator = Operator(options, api_client, freeze_after_listing=True)
    memo.update(operator.memo())
    await operator.start()


@kopf.on.probe(id="scheduler", registry=registry)
def scheduler_health(memo: kopf.Memo, **_: Any) -> str:
    """Kopf's ``--liveness`` endpoint fails while a part of the scheduler is broken."""
    operator: Operator | None = getattr(memo, "operator", None)
    problems = operator.health.problems() if operator is not None else ["not started"]
    if problems:
        raise kopf.PermanentError("; ".join(problems))
    return "ok"


@kopf.on.cleanup(registry=registry)
async def stop_runtime(memo: kopf.Memo, **_: Any) -> None:
    operator: Operator | None = getattr(memo, "operator", None)
    if operator is not None:
        await operator.stop()
        await operator.api_client.close()


kopf.set_default_registry(registry)
