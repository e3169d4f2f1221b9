"""``status.plugins``: what runs at each extension point, as the operator writes it.

The runtime is driven directly (a fake API records the status patches); the status it
writes must also be what the CRD's status schema accepts, since the API server would
drop a field it does not declare.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from chart.crdcheck import openapi_schema, schema_errors
from fakes import FakeApi, FakeClock
from plugins.offline import policy_doc
from policy_scheduler.crd import build_crd
from policy_scheduler.runtime.reporting import Reporter
from policy_scheduler.runtime.scheduling import SchedulerRuntime

SAMPLE_SPEC: dict[str, Any] = {
    "predicates": [{"name": "PodFitsResources"}, {"name": "Sample", "order": 1}],
    "priorities": [{"name": "LeastRequestedPriority", "weight": 1}],
    "plugins": {
        "multiPoint": {"enabled": [{"name": "Sample", "weight": 3}, {"name": "TestGate"}]},
        "permit": {"enabled": [{"name": "TestGate"}]},
    },
    "pluginConfig": [{"name": "Sample", "args": {"requiredNodeLabel": "rack"}}],
}
#: The pipeline the spec above makes (Sample's Filter named in predicates keeps its order;
#: its Score comes from multiPoint, after the priorities).
SAMPLE_PIPELINE = {
    "queueSort": [{"name": "PrioritySort"}],
    "preFilter": [{"name": "Sample"}],
    "filter": [{"name": "Sample"}, {"name": "PodFitsResources"}],
    "postFilter": [{"name": "LegacyPreemption"}],
    "score": [{"name": "LeastRequestedPriority", "weight": 1}, {"name": "Sample", "weight": 3}],
    "reserve": [{"name": "TestGate"}],
    "permit": [{"name": "TestGate"}],
    "preBind": [{"name": "Sample"}],
    "bind": [{"name": "DefaultBinder"}],
}


def make_runtime() -> tuple[FakeApi, SchedulerRuntime]:
    api, clock = FakeApi(), FakeClock()
    reporter = Reporter(
        api, instance="replica-0", clock=clock, wall=lambda: datetime(2024, 5, 1, tzinfo=UTC)
    )
    return api, SchedulerRuntime(api, reporter=reporter, clock=clock)


def policy_object(name: str, spec: dict[str, Any], generation: int = 1) -> dict[str, Any]:
    obj = policy_doc(spec, name)
    obj["metadata"].update(
        uid=f"uid-{name}", generation=generation, creationTimestamp="2024-01-01T00:00:00Z"
    )
    return obj


async def written(api: FakeApi, runtime: SchedulerRuntime, obj: dict[str, Any]) -> dict[str, Any]:
    """The status the runtime writes for ``obj`` (the latest patch of that policy)."""
    runtime.handle(None, obj)
    await runtime.drain()
    patches = [
        status for name, status in api.of("patch_policy_status") if name == obj["metadata"]["name"]
    ]
    assert patches, "no status written"
    status: dict[str, Any] = patches[-1]
    return status


def status_schema() -> dict[str, Any]:
    schema: dict[str, Any] = openapi_schema(build_crd())["properties"]["status"]
    return schema


async def test_the_status_lists_each_points_plugins_in_order_with_score_weights() -> None:
    api, runtime = make_runtime()
    status = await written(api, runtime, policy_object("sample", SAMPLE_SPEC))
    assert status["plugins"] == SAMPLE_PIPELINE
    no_nulls = {k: v for k, v in status.items() if v is not None}
    assert schema_errors(status_schema(), no_nulls) == []


async def test_a_refused_update_keeps_the_pipeline_in_service_and_the_unaccepted_none() -> None:
    api, runtime = make_runtime()
    await written(api, runtime, policy_object("sample", SAMPLE_SPEC))
    bad = {**SAMPLE_SPEC, "pluginConfig": [{"name": "Sample", "args": {"favoriteNumber": -1}}]}
    status = await written(api, runtime, policy_object("sample", bad, generation=2))
    assert status["conditions"][0]["status"] == "False"
    assert status["conditions"][0]["reason"] == "InvalidArgs"
    assert status["plugins"] == SAMPLE_PIPELINE

    never = await written(api, runtime, policy_object("never", {**bad, "schedulerName": "other"}))
    assert never["conditions"][0]["reason"] == "InvalidArgs"
    assert never["plugins"] is None  # removed by the merge patch: nothing runs


async def test_a_shadow_lists_only_the_points_it_runs() -> None:
    api, runtime = make_runtime()
    status = await written(api, runtime, policy_object("trial", {**SAMPLE_SPEC, "mode": "Shadow"}))
    assert status["conditions"][0]["reason"] == "Shadow"
    assert status["plugins"] == {
        point: SAMPLE_PIPELINE[point] for point in ("preFilter", "filter", "score")
    }


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param({"score": [{"weight": 1}]}, id="entry-without-name"),
        pytest.param({"reserv": [{"name": "X"}]}, id="unknown-point"),
    ],
)
def test_the_schema_refuses_what_the_operator_never_writes(bad: dict[str, Any]) -> None:
    # The schema is explicit: it is not a bag that takes anything (so it documents).
    assert schema_errors(status_schema(), {"plugins": bad}) != []
