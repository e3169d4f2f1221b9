"""Every request the operator makes, Kopf's included, is one the chart's RBAC allows.

The chart grants exactly ``runtime.kubeapi.required_rules()`` (tests/chart); this test
checks the other side: that nothing the running operator sends needs more. The real
operator (leader election on) runs against the emulator, schedules a pod and accepts
a policy, and stops; then each request it sent (by its User-Agent: the API client's
and Kopf's) is turned into what the API server's authorizer would check (verb, API
group, resource/subresource, or a non-resource URL) and must be allowed by
``required_rules()`` or by the ``system:discovery`` ClusterRole, which every Kubernetes
cluster binds to all authenticated users (the kube-apiserver's RBAC bootstrap policy:
GET on /api, /api/*, /apis, /apis/*, /version, health and OpenAPI paths). Kopf needs
that one for its resource scan at startup; with ``settings.scanning.disabled`` it
watches no CustomResourceDefinitions and no Namespaces, which is checked too.

Paths the run does not take (preemption, volume binding) are not exercised here: their
calls are declared next to the code (``@needs``) and listed by ``required_rules()``.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from builders import node, pod
from e2e.emulator import EmulatorServer
from e2e.harness import KubeClient
from e2e.operator_harness import OperatorThread
from policy_scheduler.runtime.kubeapi import required_rules

SCHEDULER = "policy-scheduler"
#: The operator's own User-Agents: kubernetes-asyncio's client and Kopf's.
AGENTS = ("OpenAPI-Generator", "kopf")
#: The system:discovery ClusterRole (bound to system:authenticated): GET only.
DISCOVERY_URLS = (
    "/livez",
    "/readyz",
    "/healthz",
    "/version",
    "/version/",
    "/openapi",
    "/openapi/*",
    "/api",
    "/api/*",
    "/apis",
    "/apis/*",
)


@dataclass(frozen=True)
class Access:
    """What the authorizer checks for one request."""

    verb: str
    group: str | None = None  # None: a non-resource URL
    resource: str = ""  # "pods", "pods/binding"
    url: str = ""  # for a non-resource URL
    agent: str = ""

    def __str__(self) -> str:
        if self.group is None:
            return f"{self.verb} {self.url} ({self.agent})"
        return f"{self.verb} {self.group or 'core'}/{self.resource} ({self.agent})"


def access(method: str, path: str, params: dict[str, str], agent: str) -> Access:
    """A request as RBAC sees it (the API server's RequestInfo, for the paths used)."""
    verb = method.lower()
    parts = [part for part in path.split("/") if part]
    if parts[:1] == ["api"] and len(parts) > 2:
        group, rest = "", parts[2:]
    elif parts[:1] == ["apis"] and len(parts) > 3:
        group, rest = parts[1], parts[3:]
    else:
        return Access(verb, url=path, agent=agent)
    if rest[0] == "namespaces" and len(rest) > 2:
        rest = rest[2:]  # a namespaced resource, not the Namespace itself
    resource = "/".join(rest[0:1] + rest[2:3])
    named = len(rest) > 1
    verb = {
        "get": "get" if named else "list",
        "post": "create",
        "put": "update",
        "patch": "patch",
        "delete": "delete" if named else "deletecollection",
    }[verb]
    if verb == "list" and params.get("watch", "").lower() in ("true", "1"):
        verb = "watch"
    return Access(verb, group, resource, agent=agent)


def allowed(request: Access, rules: list[dict[str, list[str]]]) -> bool:
    if request.group is None:
        return request.verb == "get" and any(
            fnmatch.fnmatchcase(request.url, pattern) for pattern in DISCOVERY_URLS
        )
    return any(
        request.group in rule["apiGroups"]
        and request.resource in rule["resources"]
        and request.verb in rule["verbs"]
        for rule in rules
    )


def operator_requests(server: EmulatorServer) -> list[Access]:
    def read(emulator: Any) -> list[tuple[str, str, dict[str, str], str]]:
        return [
            (
                str(request.method.value),
                request.url.path,
                dict(request.params),
                request.headers.get("User-Agent", ""),
            )
            for request in list(emulator)
        ]

    return [
        access(method, path, params, agent)
        for method, path, params, agent in server.call(read)
        if any(name in agent for name in AGENTS)
    ]


async def test_everything_the_operator_sends_is_allowed_by_the_charts_rules(
    emulator: KubeClient, emulator_server: EmulatorServer, namespace: str, kubeconfig: Path
) -> None:
    await emulator.create(node("n1", cpu="4", memory="8Gi"))
    await emulator.create(
        {
            "apiVersion": "policyscheduler.io/v1alpha1",
            "kind": "SchedulingPolicy",
            "metadata": {"name": "spread"},
            "spec": {
                "schedulerName": SCHEDULER,
                "priorities": [{"name": "LeastRequestedPriority", "weight": 1}],
            },
        }
    )
    web = pod("web", schedulerName=SCHEDULER, requests={"cpu": "1"})
    del web["metadata"]["uid"], web["metadata"]["namespace"]
    await emulator.create(web, namespace)

    async with OperatorThread(
        kubeconfig, leader_elect=True, lease_name="rbac-audit", lease_namespace=namespace
    ):
        bound = await emulator.wait_for(
            "v1", "Pod", "web", namespace, lambda o: bool(o and o["spec"].get("nodeName"))
        )
        assert bound is not None
        accepted = await emulator.wait_for(
            "policyscheduler.io/v1alpha1",
            "SchedulingPolicy",
            "spread",
            None,
            lambda o: any(
                c.get("type") == "Accepted" and c.get("status") == "True"
                for c in (o or {}).get("status", {}).get("conditions", [])
            ),
        )
        assert accepted is not None

    requests = operator_requests(emulator_server)
    rules = required_rules()
    assert [str(r) for r in requests if not allowed(r, rules)] == []

    # The audit saw what it claims to cover: Kopf's startup scan (discovery only, no
    # CRD watch; Namespaces are read as a kind of ours, for namespaceSelector, never
    # written), the watches, the binding, the Lease, the policy status.
    seen = {(r.verb, r.group, r.resource or r.url) for r in requests}
    kopf_urls = {r.url for r in requests if "kopf" in r.agent and r.group is None}
    assert {"/api", "/apis"} <= kopf_urls
    assert not [r for r in requests if r.resource == "customresourcedefinitions"]
    assert {r.verb for r in requests if r.resource == "namespaces"} <= {"list", "watch"}
    assert {
        ("watch", "", "pods"),
        ("watch", "", "nodes"),
        ("watch", "policyscheduler.io", "schedulingpolicies"),
        ("list", "", "pods"),  # the leader's LIST before its first decision
        ("create", "", "pods/binding"),
        ("create", "", "events"),
        ("create", "coordination.k8s.io", "leases"),
        ("update", "coordination.k8s.io", "leases"),
        ("patch", "policyscheduler.io", "schedulingpolicies/status"),
    } <= seen
