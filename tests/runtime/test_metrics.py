"""The scheduler's metrics as Prometheus scrapes them: names, labels, values, and HTTP."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from builders import parsed_node, parsed_pod
from extender_server import ExtenderServer, Raw, score
from policy_scheduler.engine.extenders import CompiledExtender, ExtenderError
from policy_scheduler.extending import HttpExtenderClient
from policy_scheduler.runtime.metrics import Metrics


def samples(metrics: Metrics) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Parse the exposition back: (sample name, labels) -> value."""
    text = metrics.render().decode()
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(metrics: Metrics, name: str, **labels: str) -> float | None:
    return samples(metrics).get((name, frozenset(labels.items())))


def test_attempts_are_counted_and_timed_by_result_and_profile() -> None:
    m = Metrics()
    m.attempt("scheduled", "policy-scheduler", 0.003)
    m.attempt("scheduled", "policy-scheduler", 0.020)
    m.attempt("unschedulable", "policy-scheduler", 0.0005)
    m.attempt("error", "gpu", 1.0)

    text = m.render().decode()
    assert (
        'scheduler_schedule_attempts_total{profile="policy-scheduler",result="scheduled"} 2.0'
        in text
    )
    assert (
        value(
            m,
            "scheduler_schedule_attempts_total",
            result="unschedulable",
            profile="policy-scheduler",
        )
        == 1.0
    )
    assert value(m, "scheduler_schedule_attempts_total", result="error", profile="gpu") == 1.0
    name = "scheduler_scheduling_attempt_duration_seconds"
    labels = {"result": "scheduled", "profile": "policy-scheduler"}
    assert value(m, name + "_count", **labels) == 2.0
    assert value(m, name + "_sum", **labels) == pytest.approx(0.023)
    # Buckets: exponential from 1 ms; 3 ms lands in le=0.004, 20 ms in le=0.032.
    assert value(m, name + "_bucket", le="0.001", **labels) == 0.0
    assert value(m, name + "_bucket", le="0.004", **labels) == 1.0
    assert value(m, name + "_bucket", le="0.032", **labels) == 2.0
    assert value(m, name + "_bucket", le="16.384", **labels) == 2.0
    assert value(m, name + "_bucket", le="+Inf", **labels) == 2.0


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda m: m.attempt("failed", "p", 0.1), id="attempt-result"),
        pytest.param(lambda m: m.e2e("Scheduled", "p", 0.1), id="e2e-result"),
        pytest.param(lambda m: m.binding("bound", 0.1), id="binding-result"),
        pytest.param(lambda m: m.shadow("trial", "same_node"), id="shadow-result"),
    ],
)
def test_an_unknown_result_is_refused(call: Any) -> None:
    m = Metrics()
    with pytest.raises(ValueError, match=r"metrics: .*result must be one of"):
        call(m)


def test_e2e_binding_and_attempts_until_scheduled() -> None:
    m = Metrics()
    m.e2e("scheduled", "p", 2.5)
    m.binding("success", 0.010)
    m.binding("conflict", 0.002)
    m.attempts_until_scheduled(1)
    m.attempts_until_scheduled(3)

    assert (
        value(m, "scheduler_e2e_scheduling_duration_seconds_count", result="scheduled", profile="p")
        == 1.0
    )
    assert value(m, "scheduler_binding_duration_seconds_count", result="success") == 1.0
    assert value(m, "scheduler_binding_duration_seconds_sum", result="conflict") == 0.002
    assert value(m, "scheduler_pod_scheduling_attempts_bucket", le="1.0") == 1.0
    assert value(m, "scheduler_pod_scheduling_attempts_bucket", le="2.0") == 1.0
    assert value(m, "scheduler_pod_scheduling_attempts_bucket", le="4.0") == 2.0
    assert value(m, "scheduler_pod_scheduling_attempts_sum") == 4.0


def test_preemption_attempts_and_victims() -> None:
    m = Metrics()
    m.preemption_attempt()
    m.preemption_attempt()
    m.preemption_victims(3)

    assert value(m, "scheduler_preemption_attempts_total") == 2.0
    assert value(m, "scheduler_preemption_victims_bucket", le="2.0") == 0.0
    assert value(m, "scheduler_preemption_victims_bucket", le="4.0") == 1.0
    assert value(m, "scheduler_preemption_victims_sum") == 3.0


@pytest.mark.parametrize(
    ("result", "label"),
    [
        pytest.param("sameNode", "same_node", id="same-node"),
        pytest.param("differentNode", "different_node", id="different-node"),
        pytest.param("onlyActivePlaced", "only_active_placed", id="only-active"),
        pytest.param("onlyShadowPlaced", "only_shadow_placed", id="only-shadow"),
        pytest.param("neitherPlaced", "neither_placed", id="neither"),
        pytest.param("error", "error", id="error"),
        pytest.param("sampledOut", "sampled_out", id="sampled-out"),
        pytest.param("overBudget", "over_budget", id="over-budget"),
    ],
)
def test_shadow_decisions_are_counted_by_policy_and_result(result: str, label: str) -> None:
    m = Metrics()
    m.shadow("trial", result)
    m.shadow("trial", result)
    m.shadow("other", "sameNode")
    assert value(m, "scheduler_shadow_decisions_total", policy="trial", result=label) == 2.0


def test_pending_pods_per_queue_and_an_emptied_queue_goes_to_zero() -> None:
    m = Metrics()
    m.pending({"active": 3, "backoff": 2, "unschedulable": 7})
    m.pending({"active": 1, "unschedulable": 7})

    assert value(m, "scheduler_pending_pods", queue="active") == 1.0
    assert value(m, "scheduler_pending_pods", queue="backoff") == 0.0
    assert value(m, "scheduler_pending_pods", queue="unschedulable") == 7.0


def test_phase_histograms_and_per_plugin_counters_accumulate() -> None:
    m = Metrics()
    m.phases(0.004, 0.001)
    m.phases(0.002, 0.003)
    m.per_plugin(
        {"PodFitsResources": 0.25, "MatchNodeSelector": 0.5}, {"LeastRequestedPriority": 1.0}
    )
    m.per_plugin({"PodFitsResources": 0.5}, {})

    prefix = "scheduler_scheduling_algorithm_"
    assert value(m, prefix + "predicate_evaluation_seconds_count") == 2.0
    assert value(m, prefix + "predicate_evaluation_seconds_sum") == pytest.approx(0.006)
    assert value(m, prefix + "priority_evaluation_seconds_sum") == pytest.approx(0.004)
    assert (
        value(m, "scheduler_predicate_evaluation_seconds_total", predicate="PodFitsResources")
        == 0.75
    )
    assert (
        value(m, "scheduler_predicate_evaluation_seconds_total", predicate="MatchNodeSelector")
        == 0.5
    )
    assert (
        value(m, "scheduler_priority_evaluation_seconds_total", priority="LeastRequestedPriority")
        == 1.0
    )


def test_cache_sizes_and_leadership() -> None:
    m = Metrics()
    m.cache(nodes=5, pods=40, assumed=2)
    m.leader("sched-0_abc", True)
    m.leader("sched-0_abc", False)

    assert value(m, "scheduler_cache_size", type="nodes") == 5.0
    assert value(m, "scheduler_cache_size", type="pods") == 40.0
    assert value(m, "scheduler_cache_size", type="assumed_pods") == 2.0
    assert value(m, "scheduler_leader", identity="sched-0_abc") == 0.0


def test_instances_do_not_share_series() -> None:
    first, second = Metrics(), Metrics()
    first.attempt("scheduled", "p", 0.1)

    assert value(first, "scheduler_schedule_attempts_total", result="scheduled", profile="p") == 1
    assert (
        value(second, "scheduler_schedule_attempts_total", result="scheduled", profile="p") is None
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


async def test_metrics_are_served_over_http_and_the_server_stops() -> None:
    m = Metrics()
    m.attempt("scheduled", "policy-scheduler", 0.01)
    port = free_port()
    stop = await m.serve("127.0.0.1", port)
    try:
        async with aiohttp.ClientSession() as session:
            async with session.get(f"http://127.0.0.1:{port}/metrics") as response:
                assert response.status == 200
                assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
                body = await response.text()
            async with session.get(f"http://127.0.0.1:{port}/healthz") as response:
                assert response.status == 404  # Kopf's liveness endpoint serves health
    finally:
        await stop()

    assert (
        'scheduler_schedule_attempts_total{profile="policy-scheduler",result="scheduled"} 1.0'
        in body
    )
    with pytest.raises(OSError):
        await asyncio.open_connection("127.0.0.1", port)


async def test_a_busy_port_fails_at_serve() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(OSError):
            await Metrics().serve("127.0.0.1", port)


async def test_extender_calls_are_counted_and_timed_per_extender_verb_and_result() -> None:
    # The operator's extender client reports each call to Metrics.extender (operating.py).
    m = Metrics()
    routes = {"filter": lambda received: Raw(500, b"boom"), "prioritize": score({"n1": 3})}
    with ExtenderServer(routes) as server:
        ext = CompiledExtender(server.url, filter_verb="filter", prioritize_verb="prioritize")
        async with HttpExtenderClient(observe=m.extender) as client:
            with pytest.raises(ExtenderError):
                await client.filter(ext, parsed_pod("p"), [parsed_node("n1")])
            for _ in range(2):
                await client.prioritize(ext, parsed_pod("p"), [parsed_node("n1")])
    failed = {"extender": server.url, "verb": "filter", "result": "error"}
    scored = {"extender": server.url, "verb": "prioritize", "result": "success"}
    assert value(m, "scheduler_extender_requests_total", **failed) == 1.0
    assert value(m, "scheduler_extender_requests_total", **scored) == 2.0
    latency = "scheduler_extender_request_duration_seconds"
    assert value(m, latency + "_count", **failed) == 1.0
    assert value(m, latency + "_count", **scored) == 2.0
    assert value(m, latency + "_bucket", le="+Inf", **scored) == 2.0
    assert value(m, "scheduler_extender_requests_total", **{**failed, "result": "success"}) in (
        None,
        0.0,
    )
