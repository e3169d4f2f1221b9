"""DefaultBinder: kube-scheduler v1.30's TestDefaultBinder, over a fake plugin API.

The binding sent is upstream's v1.Binding (the pod's name, namespace and uid; target the
node) to the pods/binding subresource; an API refusal is an Error carrying its message.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from intree.cases import make_plugin, st_pod
from policy_scheduler.engine.cluster import ClusterState
from policy_scheduler.engine.functions import CycleState, PolicySettings
from policy_scheduler.engine.interface import Code
from policy_scheduler.objects import parse_pod

NODE = "foohost.kubernetes.mydomain.com"


@dataclass
class FakePluginApi:
    status: int = 201
    body: Any = None
    calls: list[tuple[str, str, Any, float | None]] = field(default_factory=list)

    async def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float | None = None,
    ) -> tuple[int, Any]:
        self.calls.append((method, path, body, timeout))
        return self.status, self.body


def pod() -> dict[str, Any]:
    obj = st_pod(name="foo", namespace="ns")
    obj["metadata"]["uid"] = "foo"
    return obj


async def bind(api: FakePluginApi | None) -> Any:
    state = ClusterState()
    plugin = make_plugin("DefaultBinder", None, state, api)
    p = parse_pod(pod())
    return await plugin.bind(CycleState(p, state, PolicySettings()), p, NODE)


async def test_binding_is_posted_to_the_pods_binding_subresource() -> None:
    api = FakePluginApi()
    assert await bind(api) is None
    assert api.calls == [
        (
            "POST",
            "/api/v1/namespaces/ns/pods/foo/binding",
            {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": "foo", "namespace": "ns", "uid": "foo"},
                "target": {"kind": "Node", "name": NODE},
            },
            30.0,
        )
    ]


@pytest.mark.parametrize(
    ("status", "body", "message"),
    [
        pytest.param(
            409,
            {"kind": "Status", "message": 'pod foo is already assigned to node "other"'},
            'pod foo is already assigned to node "other"',
            id="binding error carries the API's message",
        ),
        pytest.param(500, None, "binding was refused: HTTP 500", id="no message: the status"),
        pytest.param(0, None, f"binding ns/foo to {NODE}: no answer within 30s", id="no answer"),
    ],
)
async def test_binding_errors(status: int, body: Any, message: str) -> None:
    result = await bind(FakePluginApi(status, body))
    assert result.code is Code.ERROR
    assert result.message == message


async def test_offline_there_is_nothing_to_bind_with() -> None:
    result = await bind(None)
    assert result.code is Code.ERROR
    assert result.message == "no Kubernetes API to bind the pod with"
