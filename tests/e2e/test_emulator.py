"""The e2e harness itself: the emulator behaves like an API server, Kopf runs against it."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import kmock
import kopf
import pytest
from kubernetes_asyncio import client as k8s_client

from e2e.emulator import EmulatorServer, find_resource, validator_from_crd
from e2e.harness import ApiError, KubeClient, run_kopf_in_thread, wait_until

CRD_PATH = Path(__file__).parents[2] / "crds" / "schedulingpolicies.policyscheduler.io.yaml"


def node_body(name: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {
            "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod_body(
    name: str | None = None, *, scheduler: str = "policy-scheduler", **extra: Any
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name} if name else {"generateName": "pod-"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            "schedulerName": scheduler,
            "containers": [{"name": "c", "image": "busybox"}],
            **extra,
        },
    }


def policy_body(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "policyscheduler.io/v1alpha1",
        "kind": "SchedulingPolicy",
        "metadata": {"name": name},
        "spec": {"schedulerName": "policy-scheduler", **spec},
    }


def pod_events_registry() -> tuple[kopf.OperatorRegistry, list[dict[str, Any]]]:
    registry = kopf.OperatorRegistry()
    seen: list[dict[str, Any]] = []

    @kopf.on.event("pods", registry=registry)
    def remember(type: str | None, body: kopf.Body, **_: Any) -> None:
        seen.append(
            {
                "type": type,
                "name": body.metadata.name,
                "nodeName": body.spec.get("nodeName"),
                "resourceVersion": body.metadata.get("resourceVersion"),
            }
        )

    return registry, seen


async def test_discovery_declares_our_resources(emulator: KubeClient) -> None:
    status, core = await emulator.request("GET", "/api/v1")
    assert status == 200
    names = {r["name"]: r for r in core["resources"]}
    assert {
        "namespaces",
        "pods",
        "pods/binding",
        "pods/status",
        "nodes",
        "events",
        "persistentvolumes",
        "persistentvolumeclaims",
        "services",
        "replicationcontrollers",
    } <= set(names)
    assert names["pods"]["namespaced"] is True and names["nodes"]["namespaced"] is False
    # What kubectl's discovery reads (KMock said "/v1" here: kubectl found no core kind).
    assert core["groupVersion"] == "v1"
    assert (names["pods/binding"]["kind"], names["pods/binding"]["verbs"]) == (
        "Binding",
        ["create"],
    )
    assert (names["pods/status"]["kind"], names["pods/status"]["verbs"]) == (
        "Pod",
        ["get", "patch", "update"],
    )
    status, api = await emulator.request("GET", "/api")
    assert (status, api["kind"], api["versions"]) == (200, "APIVersions", ["v1"])

    status, apis = await emulator.request("GET", "/apis")
    groups = {g["name"]: g for g in apis["groups"]}
    assert {
        "apps",
        "storage.k8s.io",
        "coordination.k8s.io",
        "events.k8s.io",
        "apiextensions.k8s.io",
        "policyscheduler.io",
    } <= set(groups)
    assert groups["policyscheduler.io"]["preferredVersion"]["version"] == "v1alpha1"

    status, ours = await emulator.request("GET", "/apis/policyscheduler.io/v1alpha1")
    resources = {r["name"]: r for r in ours["resources"]}
    assert set(resources) == {"schedulingpolicies", "schedulingpolicies/status"}
    policy = resources["schedulingpolicies"]
    assert policy["kind"] == "SchedulingPolicy" and policy["namespaced"] is False
    assert policy["shortNames"] == ["schedpol"] and {"watch", "list", "patch"} <= set(
        policy["verbs"]
    )

    status, group = await emulator.request("GET", "/apis/policyscheduler.io")
    assert (group["kind"], group["preferredVersion"]) == (
        "APIGroup",
        {"groupVersion": "policyscheduler.io/v1alpha1", "version": "v1alpha1"},
    )
    for path in ("/apis/example.com/v1/things", "/apis/example.com", "/apis/apps/v2", "/api/v2"):
        status, body = await emulator.request("GET", path)
        assert (status, body["reason"]) == (404, "NotFound"), path


async def test_version_tables_and_openapi_are_what_kubectl_reads(
    emulator: KubeClient, emulator_server: EmulatorServer, namespace: str
) -> None:
    status, version = await emulator.request("GET", "/version")
    assert (version["major"], version["minor"], version["gitVersion"]) == ("1", "30", "v1.30.0")

    await emulator.create(pod_body("web"), namespace=namespace)
    table_accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
    for include, row_object in (
        (None, "PartialObjectMetadata"),
        ("Object", "Pod"),
        ("None", None),
    ):
        params = {"includeObject": include} if include else {}
        status, table = await emulator.request(
            "GET",
            f"/api/v1/namespaces/{namespace}/pods",
            params=params,
            headers={"Accept": table_accept},
        )
        assert (table["kind"], table["apiVersion"]) == ("Table", "meta.k8s.io/v1")
        assert [c["name"] for c in table["columnDefinitions"]][:5] == [
            "Name",
            "Ready",
            "Status",
            "Restarts",
            "Age",
        ]
        [row] = table["rows"]
        assert row["cells"][:4] == ["web", "0/1", "Pending", "0"]
        assert (row.get("object") or {}).get("kind") == row_object
    # Without the Table media type: a plain list.
    status, plain = await emulator.request("GET", f"/api/v1/namespaces/{namespace}/pods")
    assert plain["kind"] == "PodList"

    # OpenAPI v3: a root naming each group version, whose document has the kind's PATCH
    # taking fieldValidation (what makes kubectl leave validation to the server).
    status, root = await emulator.request("GET", "/openapi/v3")
    assert status == 200 and {"api/v1", "apis/policyscheduler.io/v1alpha1"} <= set(root["paths"])
    url = root["paths"]["api/v1"]["serverRelativeURL"]
    assert url.startswith("/openapi/v3/api/v1?hash=")
    status, document = await emulator.request("GET", url)
    patch = document["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"]
    assert patch["x-kubernetes-group-version-kind"] == {"group": "", "version": "v1", "kind": "Pod"}
    assert "fieldValidation" in [p["name"] for p in patch["parameters"]]
    assert "io.k8s.api.core.v1.Pod" in document["components"]["schemas"]
    status, _ = await emulator.request("GET", "/openapi/v3/apis/example.com/v1")
    assert status == 404


async def test_create_fills_metadata_like_a_server(emulator: KubeClient, namespace: str) -> None:
    pod = await emulator.create(pod_body(), namespace=namespace)
    meta = pod["metadata"]
    assert meta["name"].startswith("pod-") and len(meta["name"]) == len("pod-") + 5
    assert meta["namespace"] == namespace and meta["uid"] and meta["creationTimestamp"]
    assert pod["status"]["phase"] == "Pending" and pod["spec"]["priority"] == 0

    node = await emulator.create(node_body("node-1"))
    assert "namespace" not in node["metadata"]
    assert int(node["metadata"]["resourceVersion"]) > int(meta["resourceVersion"])

    other = await emulator.create(pod_body("plain", scheduler=""), namespace=namespace)
    assert other["spec"]["schedulerName"] == "default-scheduler"

    with pytest.raises(ApiError) as err:
        await emulator.create(node_body("node-1"))
    assert err.value.status == 409 and err.value.body["reason"] == "AlreadyExists"
    if emulator.is_emulated:  # a real cluster may have admission rules of its own
        with pytest.raises(ApiError) as err:
            await emulator.create(pod_body("x"), namespace="no-such-namespace")
        assert err.value.status == 404

    got = await emulator.get("v1", "Pod", meta["name"], namespace)
    assert got is not None and got["metadata"]["uid"] == meta["uid"]
    assert await emulator.get("v1", "Pod", "absent", namespace) is None


async def test_kopf_sees_pods_and_binding_is_exclusive(
    emulator: KubeClient,
    namespace: str,
    kubeconfig: Any,
    api_client: k8s_client.ApiClient,
) -> None:
    await emulator.create(node_body("node-1"))
    await emulator.create(node_body("node-2"))
    await emulator.create(pod_body("web-1"), namespace=namespace)
    registry, seen = pod_events_registry()

    async with run_kopf_in_thread(registry, clusterwide=True):
        await wait_until(
            lambda: any(e["name"] == "web-1" for e in seen), message="Kopf to see the pod"
        )

        core = k8s_client.CoreV1Api(api_client)
        binding = k8s_client.V1Binding(
            metadata=k8s_client.V1ObjectMeta(name="web-1"),
            target=k8s_client.V1ObjectReference(kind="Node", name="node-1"),
        )
        first = await core.create_namespaced_pod_binding(
            "web-1", namespace, binding, _preload_content=False
        )
        assert first.status == 201
        assert (await first.json())["status"] == "Success"

        binding.target.name = "node-2"
        second = await core.create_namespaced_pod_binding(
            "web-1", namespace, binding, _preload_content=False
        )
        assert second.status == 409
        conflict = await second.json()
        assert (
            conflict["kind"] == "Status"
            and conflict["reason"] == "Conflict"
            and conflict["code"] == 409
        )
        assert 'already assigned to node "node-1"' in conflict["message"]

        await wait_until(
            lambda: any(e["name"] == "web-1" and e["nodeName"] == "node-1" for e in seen),
            message="Kopf to see spec.nodeName",
        )

    pod = await emulator.get("v1", "Pod", "web-1", namespace)
    assert pod is not None and pod["spec"]["nodeName"] == "node-1"
    scheduled = [c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert scheduled and scheduled[0]["status"] == "True"
    assert not any(k.startswith("kopf.") for k in pod["metadata"].get("annotations", {}))
    assert not pod["metadata"].get("finalizers")

    bindings = emulator.bindings  # skips on a real cluster
    assert [(b.pod, b.node, b.status) for b in bindings] == [
        ("web-1", "node-1", 201),
        ("web-1", "node-2", 409),
    ]
    assert len([b for b in bindings if b.ok]) == 1

    status, body = await emulator.bind(namespace, "missing", "node-1")
    assert status == 404 and body["kind"] == "Status"


async def test_status_patches_land_in_the_stored_object(
    emulator: KubeClient, namespace: str, api_client: k8s_client.ApiClient
) -> None:
    await emulator.create(pod_body("p"), namespace=namespace)
    unschedulable = {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": "0/0 nodes are available.",
    }

    # JSON merge patch (as Kopf sends) to the status subresource.
    patched = await emulator.patch(
        "v1",
        "Pod",
        "p",
        {"status": {"conditions": [unschedulable]}},
        namespace,
        subresource="status",
    )
    assert patched["status"]["conditions"] == [unschedulable]
    assert patched["status"]["phase"] == "Pending"

    # Strategic merge patch (as kubernetes-asyncio sends for dicts): conditions merge by type.
    core = k8s_client.CoreV1Api(api_client)
    ready = {"type": "Ready", "status": "False"}
    await core.patch_namespaced_pod_status("p", namespace, {"status": {"conditions": [ready]}})
    pod = await emulator.get("v1", "Pod", "p", namespace)
    assert pod is not None
    assert {c["type"]: c["status"] for c in pod["status"]["conditions"]} == {
        "PodScheduled": "False",
        "Ready": "False",
    }

    # The main endpoint ignores status; the status endpoint ignores the rest.
    rv = pod["metadata"]["resourceVersion"]
    same = await emulator.patch("v1", "Pod", "p", {"status": {"phase": "Running"}}, namespace)
    assert (
        same["status"]["phase"] == "Pending" and same["metadata"]["resourceVersion"] == rv
    )  # a no-op
    other = await emulator.patch(
        "v1",
        "Pod",
        "p",
        {"metadata": {"labels": {"a": "b"}}, "status": {"phase": "Failed"}},
        namespace,
        subresource="status",
    )
    assert other["status"]["phase"] == "Failed" and "labels" not in other["metadata"]


DISRUPTION = {
    "type": "DisruptionTarget",
    "status": "True",
    "reason": "PreemptionByScheduler",
    "message": "policy-scheduler: preempting to accommodate a higher priority pod",
}


@pytest.mark.parametrize(
    ("patch_type", "body"),
    [
        pytest.param(
            "strategic",
            {"metadata": {"uid": "UID"}, "status": {"conditions": [DISRUPTION]}},
            id="strategic",
        ),
        pytest.param(
            "merge",
            {"status": {"conditions": [{"type": "Ready", "status": "True"}, DISRUPTION]}},
            id="merge",
        ),
        pytest.param(
            "json",
            [{"op": "add", "path": "/status/conditions/-", "value": DISRUPTION}],
            id="json",
        ),
    ],
)
async def test_a_status_patch_adds_a_condition_beside_the_others(
    emulator: KubeClient, namespace: str, patch_type: str, body: Any
) -> None:
    created = await emulator.create(pod_body("victim"), namespace=namespace)
    await emulator.patch(
        "v1",
        "Pod",
        "victim",
        {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
        namespace,
        subresource="status",
    )
    if patch_type == "strategic":
        body = {**body, "metadata": {"uid": created["metadata"]["uid"]}}
    await emulator.patch(
        "v1", "Pod", "victim", body, namespace, subresource="status", patch_type=patch_type
    )
    stored = await emulator.get("v1", "Pod", "victim", namespace)
    assert stored is not None
    assert stored["status"]["conditions"] == [{"type": "Ready", "status": "True"}, DISRUPTION]
    assert stored["status"]["phase"] == "Pending"


async def test_a_status_patch_for_another_uid_is_refused(
    emulator: KubeClient, namespace: str
) -> None:
    # client-go's PatchPodStatus sends the uid as a precondition: a pod of the same name
    # created since is not patched.
    await emulator.create(pod_body("victim"), namespace=namespace)
    with pytest.raises(ApiError) as err:
        await emulator.patch(
            "v1",
            "Pod",
            "victim",
            {"metadata": {"uid": "an-older-pod"}, "status": {"conditions": [DISRUPTION]}},
            namespace,
            subresource="status",
            patch_type="strategic",
        )
    assert err.value.status == 422 and "metadata.uid" in err.value.body["message"]
    stored = await emulator.get("v1", "Pod", "victim", namespace)
    assert stored is not None and not stored["status"].get("conditions")


async def test_a_pods_label_keys_are_merged_at_create_as_v134_does(
    emulator: KubeClient, namespace: str
) -> None:
    term = {
        "topologyKey": "kubernetes.io/hostname",
        "labelSelector": {"matchLabels": {"app": "web"}},
        "matchLabelKeys": ["pod-template-hash"],
        "mismatchLabelKeys": ["tenant"],
    }
    spread = {
        "maxSkew": 1,
        "topologyKey": "zone",
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}},
        "matchLabelKeys": ["pod-template-hash"],
    }
    body = pod_body(
        "web-1",
        affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}},
        topologySpreadConstraints=[spread],
    )
    body["metadata"]["labels"] = {"app": "web", "pod-template-hash": "7d9f", "tenant": "a"}
    stored = await emulator.create(body, namespace=namespace)
    [merged] = stored["spec"]["affinity"]["podAntiAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    assert merged["labelSelector"]["matchExpressions"] == [
        {"key": "pod-template-hash", "operator": "In", "values": ["7d9f"]},
        {"key": "tenant", "operator": "NotIn", "values": ["a"]},
    ]
    assert stored["spec"]["topologySpreadConstraints"][0]["labelSelector"]["matchExpressions"] == [
        {"key": "pod-template-hash", "operator": "In", "values": ["7d9f"]}
    ]

    term["matchLabelKeys"] = ["app"]
    body["metadata"]["name"] = "web-2"
    with pytest.raises(ApiError) as err:
        await emulator.create(body, namespace=namespace)
    assert err.value.status == 422
    assert err.value.body["message"] == (
        'Pod "web-2" is invalid: spec.affinity.podAntiAffinity.'
        'requiredDuringSchedulingIgnoredDuringExecution[0][0]: Invalid value: "app": '
        "exists in both matchLabelKeys and labelSelector"
    )


async def test_validator_refuses_invalid_policies(
    emulator: KubeClient, emulator_server: EmulatorServer
) -> None:
    checked: list[dict[str, Any]] = []

    def validate(obj: dict[str, Any]) -> list[str]:
        checked.append(obj)
        weights = [p.get("weight", 1) for p in obj.get("spec", {}).get("priorities", [])]
        return [
            f"spec.priorities[{i}].weight: must be positive"
            for i, w in enumerate(weights)
            if w <= 0
        ]

    emulator_server.set_validator(validate)
    with pytest.raises(ApiError) as err:
        await emulator.create(
            policy_body("bad", priorities=[{"name": "EqualPriority", "weight": 0}])
        )
    assert err.value.status == 422 and err.value.body["reason"] == "Invalid"
    assert "spec.priorities[0].weight: must be positive" in err.value.body["message"]
    assert await emulator.get("policyscheduler.io/v1alpha1", "SchedulingPolicy", "bad") is None

    good = await emulator.create(
        policy_body("good", priorities=[{"name": "EqualPriority", "weight": 1}])
    )
    assert good["metadata"]["generation"] == 1 and "namespace" not in good["metadata"]

    # The validator sees the object after the patch, not the patch body.
    with pytest.raises(ApiError) as err:
        await emulator.patch(
            "policyscheduler.io/v1alpha1",
            "SchedulingPolicy",
            "good",
            {"spec": {"priorities": [{"name": "EqualPriority", "weight": -1}]}},
        )
    assert err.value.status == 422
    assert (
        checked[-1]["metadata"]["name"] == "good"
        and checked[-1]["spec"]["schedulerName"] == "policy-scheduler"
    )

    updated = await emulator.patch(
        "policyscheduler.io/v1alpha1",
        "SchedulingPolicy",
        "good",
        {"spec": {"alwaysCheckAllPredicates": True}},
    )
    assert updated["metadata"]["generation"] == 2
    status = await emulator.patch(
        "policyscheduler.io/v1alpha1",
        "SchedulingPolicy",
        "good",
        {"status": {"observedGeneration": 2}},
        subresource="status",
    )
    assert status["status"] == {"observedGeneration": 2} and status["metadata"]["generation"] == 2


async def test_kubeconfig_fixture_clears_in_cluster_env(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    path = request.getfixturevalue("kubeconfig")
    assert (
        "KUBERNETES_SERVICE_HOST" not in os.environ and "KUBERNETES_SERVICE_PORT" not in os.environ
    )
    assert path.exists()
    emulated = request.getfixturevalue("_emulator_server")
    if emulated is not None:
        assert os.environ["KUBECONFIG"] == str(path) and emulated.url in path.read_text()


async def test_kopf_lists_then_resumes_its_watch_and_hears_what_changed_while_away(
    emulator: KubeClient, emulator_server: EmulatorServer, namespace: str, kubeconfig: Any
) -> None:
    await emulator.create(pod_body("p"), namespace=namespace)
    registry, seen = pod_events_registry()

    @kopf.on.login(registry=registry)
    def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
        return kopf.login_with_kubeconfig(**kwargs)

    def heard() -> list[tuple[str | None, str]]:
        return [(e["type"], e["name"]) for e in seen]

    async with run_kopf_in_thread(registry, namespaces=[namespace]):
        await wait_until(lambda: heard() == [(None, "p")], message="Kopf's first LIST")
        # Its watch goes away and cannot come back while the pods change.
        await asyncio.to_thread(emulator_server.hold_watches)
        await asyncio.to_thread(emulator_server.disconnect_watches)
        await emulator.patch("v1", "Pod", "p", {"metadata": {"labels": {"x": "y"}}}, namespace)
        await emulator.create(pod_body("q"), namespace=namespace)
        await emulator.delete("v1", "Pod", "p", namespace)
        await asyncio.to_thread(emulator_server.release_watches)
        await wait_until(
            lambda: {("DELETED", "p"), ("ADDED", "q")} <= set(heard()), message="the changes"
        )
    # Resumed from the last version it saw: each change once, no replay of what it knew
    # (in order per object; Kopf handles different objects in parallel).
    assert [t for t, name in heard() if name == "p"] == [None, "MODIFIED", "DELETED"]
    assert [t for t, name in heard() if name == "q"] == ["ADDED"]
    assert emulator_server.expired_watches == []


async def test_watch_selectors_and_transitions(emulator: KubeClient, namespace: str) -> None:
    await emulator.create(pod_body("a"), namespace=namespace)
    events: list[tuple[str, str]] = []
    await emulator.patch("v1", "Pod", "a", {"metadata": {"labels": {"app": "web"}}}, namespace)

    async def watch() -> None:
        stream = emulator.watch(
            "v1",
            "Pod",
            namespace,
            field_selector="spec.nodeName=",
            label_selector="app in (web),!skip",
        )
        async for event in stream:
            events.append((event["type"], event["object"]["metadata"]["name"]))

    task = asyncio.create_task(watch())
    try:
        await wait_until(lambda: ("ADDED", "a") in events, message="the replay")
        await emulator.create(pod_body("b"), namespace=namespace)  # no label: not matching
        status, _ = await emulator.bind(namespace, "a", "node-1")  # stops matching spec.nodeName=
        assert status == 201
        await wait_until(lambda: ("DELETED", "a") in events, message="the transition out")
        assert ("ADDED", "b") not in events
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    listed = await emulator.list("v1", "Pod", namespace, field_selector="spec.nodeName=")
    assert [p["metadata"]["name"] for p in listed] == ["b"]
    listed = await emulator.list("v1", "Pod", namespace, label_selector="app=web")
    assert [p["metadata"]["name"] for p in listed] == ["a"]


async def test_optimistic_concurrency_and_finalizers(emulator: KubeClient, namespace: str) -> None:
    lease = await emulator.create(
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "policy-scheduler"},
            "spec": {"holderIdentity": "a"},
        },
        namespace=namespace,
    )
    lease["spec"]["holderIdentity"] = "b"
    replaced = await emulator.replace(lease)
    assert replaced["spec"]["holderIdentity"] == "b"
    lease["spec"]["holderIdentity"] = "c"  # still the old resourceVersion
    with pytest.raises(ApiError) as err:
        await emulator.replace(lease)
    assert err.value.status == 409 and err.value.body["reason"] == "Conflict"

    await emulator.create(
        pod_body(
            "f",
        )
        | {"metadata": {"name": "f", "finalizers": ["x/y"]}},
        namespace=namespace,
    )
    deleted = await emulator.delete("v1", "Pod", "f", namespace)
    assert deleted is not None and deleted["metadata"]["deletionTimestamp"]
    assert await emulator.get("v1", "Pod", "f", namespace) is not None
    await emulator.patch("v1", "Pod", "f", {"metadata": {"finalizers": None}}, namespace)
    assert await emulator.get("v1", "Pod", "f", namespace) is None


async def test_intercepted_binding_does_not_bind(
    emulator: KubeClient, emulator_server: EmulatorServer, namespace: str
) -> None:
    await emulator.create(pod_body("p"), namespace=namespace)
    reaction: list[Any] = []

    def intercept(em: Any) -> None:
        reaction.append(
            em["post", kmock.subresource("binding")][:1] << 500 << {"kind": "Status", "code": 500}
        )

    emulator_server.call(intercept)

    status, _ = await emulator.bind(namespace, "p", "node-1")
    assert status == 500
    pod = await emulator.get("v1", "Pod", "p", namespace)
    assert pod is not None and not pod["spec"].get("nodeName")
    status, _ = await emulator.bind(namespace, "p", "node-1")  # the reaction is used up ([:1])
    assert status == 201
    assert [b.status for b in emulator.bindings] == [201]  # intercepted requests are not recorded


def test_emulator_server_runs_standalone() -> None:
    with EmulatorServer() as server:
        assert server.url.startswith("http://127.0.0.1:")
        names = server.call(lambda em: sorted(key[2] for key in em.objects))
        assert names == ["default", "kube-node-lease", "kube-public", "kube-system"]
        thread = server._thread
        assert thread is not None and thread.is_alive()
    assert not thread.is_alive()


async def test_validator_from_the_crd_schema(
    emulator: KubeClient, emulator_server: EmulatorServer
) -> None:
    if not CRD_PATH.exists():
        pytest.skip(f"No CRD at {CRD_PATH}")
    validate = validator_from_crd(CRD_PATH)
    assert validate(policy_body("ok", priorities=[{"name": "EqualPriority", "weight": 1}])) == []
    errors = validate(policy_body("bad", priorities=[{"name": "EqualPriority", "weight": 0}]))
    assert errors and errors[0].startswith("spec.priorities[0].weight:")

    emulator_server.set_validator(validate)
    with pytest.raises(ApiError) as err:
        await emulator.create(
            policy_body("bad", priorities=[{"name": "EqualPriority", "weight": 0}])
        )
    assert err.value.status == 422 and "spec.priorities[0].weight" in err.value.body["message"]
    await emulator.create(policy_body("ok", priorities=[{"name": "EqualPriority", "weight": 1}]))


async def test_injected_faults_apply_to_the_requests_they_name(
    emulator: KubeClient, emulator_server: EmulatorServer, namespace: str
) -> None:
    # The fault suite relies on this: a fault naming a method and a path fails exactly
    # those requests (here from any client), and only as many times as it says.
    from e2e.emulator import Fault

    fault = Fault("status", "POST", "/pods", status=503, times=1, agents=("",))
    emulator_server.call(lambda em: em.faults.append(fault))
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "i"}]},
    }
    path = f"/api/v1/namespaces/{namespace}/pods"
    status, _ = await emulator.request("POST", path, json=body)
    assert status == 503 and fault.hits == 1
    status, _ = await emulator.request("POST", path, json=body)
    assert status == 201


# -- watches from a resourceVersion ----------------------------------------------------------


async def watch_events(
    kube: KubeClient, kind: str, namespace: str | None, count: int, **kwargs: Any
) -> list[dict[str, Any]]:
    """The first ``count`` events of a watch (fewer if the server ends the stream)."""
    events: list[dict[str, Any]] = []
    async with asyncio.timeout(10):
        async for event in kube.watch("v1", kind, namespace, **kwargs):
            if event["type"] != "BOOKMARK":
                events.append(event)
            if len(events) >= count:
                break
    return events


def names(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["type"], e["object"]["metadata"]["name"]) for e in events]


def version(obj: dict[str, Any]) -> int:
    return int(obj["metadata"]["resourceVersion"])


async def test_a_watch_from_a_lists_version_gets_only_later_events_deletions_included(
    emulator: KubeClient, namespace: str
) -> None:
    a = await emulator.create(pod_body("a"), namespace=namespace)
    b = await emulator.create(pod_body("b"), namespace=namespace)
    listed = await emulator.list_body("v1", "Pod", namespace)
    assert [p["metadata"]["name"] for p in listed["items"]] == ["a", "b"]
    since = listed["metadata"]["resourceVersion"]
    assert int(since) >= max(version(a), version(b))  # the collection's version, not an item's

    await emulator.patch("v1", "Pod", "a", {"metadata": {"labels": {"x": "y"}}}, namespace)
    await emulator.delete("v1", "Pod", "b", namespace)
    await emulator.create(pod_body("c"), namespace=namespace)
    events = await watch_events(emulator, "Pod", namespace, 3, resource_version=since)
    assert names(events) == [("MODIFIED", "a"), ("DELETED", "b"), ("ADDED", "c")]

    # Resuming from the last event's version: nothing again, only what happens next.
    last = str(version(events[-1]["object"]))
    watch = asyncio.create_task(watch_events(emulator, "Pod", namespace, 1, resource_version=last))
    await emulator.create(pod_body("d"), namespace=namespace)
    assert names(await watch) == [("ADDED", "d")]


@pytest.mark.parametrize("start", [pytest.param(None, id="absent"), pytest.param("0", id="zero")])
async def test_a_watch_without_a_version_sends_the_state_first(
    emulator: KubeClient, namespace: str, start: str | None
) -> None:
    await emulator.create(pod_body("a"), namespace=namespace)
    b = await emulator.create(pod_body("b"), namespace=namespace)
    await emulator.delete("v1", "Pod", "b", namespace)
    await emulator.patch("v1", "Pod", "a", {"metadata": {"labels": {"x": "y"}}}, namespace)
    events = await watch_events(emulator, "Pod", namespace, 1, resource_version=start)
    # The state as it is now: "a" with its label, "b" neither added nor deleted.
    assert names(events) == [("ADDED", "a")]
    assert events[0]["object"]["metadata"]["labels"] == {"x": "y"}
    assert version(events[0]["object"]) > version(b)


@pytest.mark.parametrize("watch_window", [3])
async def test_a_watch_from_a_version_older_than_the_window_is_410_expired(
    emulator: KubeClient, emulator_server: EmulatorServer, namespace: str, watch_window: int
) -> None:
    before = (await emulator.list_body("v1", "Pod", namespace))["metadata"]["resourceVersion"]
    pods = [await emulator.create(pod_body(f"p{i}"), namespace=namespace) for i in range(5)]
    floor = version(pods[2]) - 1  # the last three pod events are kept

    # As kube-apiserver's watch cache: HTTP 200, one ERROR event, the end of the stream.
    events = await watch_events(emulator, "Pod", namespace, 10, resource_version=before)
    assert events == [
        {
            "type": "ERROR",
            "object": {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "message": f"too old resource version: {before} ({floor})",
                "reason": "Expired",
                "code": 410,
            },
        }
    ]
    assert [(w.resource, w.requested, w.floor) for w in emulator_server.expired_watches] == [
        ("v1/pods", int(before), floor)
    ]
    # From the oldest version kept, the kept events.
    events = await watch_events(emulator, "Pod", namespace, 3, resource_version=str(floor))
    assert names(events) == [("ADDED", "p2"), ("ADDED", "p3"), ("ADDED", "p4")]
    # The window is per resource (a watch cache each): nodes lost nothing.
    watch = asyncio.create_task(watch_events(emulator, "Node", None, 1, resource_version=before))
    await emulator.create(node_body("n1"))
    assert names(await watch) == [("ADDED", "n1")]


async def test_a_watch_from_an_impossible_version_is_refused(
    emulator: KubeClient, emulator_server: EmulatorServer, namespace: str
) -> None:
    # Newer than any version handed out: an ERROR event once the stream started.
    [event] = await watch_events(emulator, "Pod", namespace, 10, resource_version="999999")
    assert event["type"] == "ERROR"
    status = event["object"]
    assert (status["code"], status["reason"]) == (504, "Timeout")
    assert status["message"].startswith("Timeout: Too large resource version: 999999, current: ")
    # Not a version at all: refused before streaming.
    with pytest.raises(ApiError) as error:
        await watch_events(emulator, "Pod", namespace, 10, resource_version="abc")
    assert (error.value.status, error.value.body["reason"]) == (400, "BadRequest")
    assert error.value.body["message"].startswith('resourceVersion: Invalid value: "abc"')


def requesting(name: str, cpu: str) -> dict[str, Any]:
    container = {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}
    return pod_body(name, containers=[container])


@pytest.mark.parametrize("watch_window", [4])
async def test_the_operator_lists_again_after_a_410_and_binds_every_pod_once(
    emulator: KubeClient,
    emulator_server: EmulatorServer,
    namespace: str,
    kubeconfig: Path,
    watch_window: int,
) -> None:
    from e2e.operator_harness import OperatorThread

    await emulator.create(node_body("only"))  # 4 CPUs
    await emulator.create(requesting("hog", "3"), namespace=namespace)
    later = ["after", "s0", "s1", "s2"]

    async def placed() -> dict[str, str | None]:
        pods = await emulator.list("v1", "Pod", namespace)
        return {p["metadata"]["name"]: p["spec"].get("nodeName") for p in pods}

    async with OperatorThread(kubeconfig, api_timeout=1.0, shutdown_timeout=5.0):
        await wait_until(
            lambda: placed_is(placed, {"hog": "only"}), timeout=15, message="the hog bound"
        )
        # The operator's watches go away; meanwhile more pod events than the window
        # keeps: the hog is deleted, and "after" fits only in the room it leaves.
        await asyncio.to_thread(emulator_server.hold_watches)
        await asyncio.to_thread(emulator_server.disconnect_watches)
        await emulator.delete("v1", "Pod", "hog", namespace)
        await emulator.create(requesting("after", "3"), namespace=namespace)
        for name in later[1:]:
            await emulator.create(requesting(name, "300m"), namespace=namespace)
        await asyncio.to_thread(emulator_server.release_watches)
        await wait_until(
            lambda: placed_is(placed, dict.fromkeys(later, "only")),
            timeout=20,
            message="every later pod bound",
        )
    # It did resume from a version the window no longer had, and started over with a LIST.
    assert "v1/pods" in {w.resource for w in emulator_server.expired_watches}
    # Each pod bound once, and never a binding the API refused (no stale decision).
    assert sorted((b.pod, b.node, b.status) for b in emulator_server.bindings) == sorted(
        [("hog", "only", 201)] + [(name, "only", 201) for name in later]
    )


async def placed_is(
    placed: Callable[[], Awaitable[dict[str, str | None]]], expected: dict[str, str]
) -> bool:
    return await placed() == expected


# -- field selectors ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        pytest.param("spec.nodeName=n1", ["on-n1"], id="equals"),
        pytest.param("spec.nodeName==n1", ["on-n1"], id="double-equals"),
        pytest.param("spec.nodeName!=n1", ["on-n2", "pending"], id="not-equals"),
        pytest.param("spec.nodeName=", ["pending"], id="unset"),
        pytest.param("spec.host=n2", ["on-n2"], id="old-name-of-nodeName"),
        pytest.param("metadata.name=pending", ["pending"], id="name"),
        pytest.param("metadata.namespace=NS", ["on-n1", "on-n2", "pending"], id="namespace"),
        pytest.param("metadata.namespace=elsewhere", [], id="other-namespace"),
        pytest.param("status.phase=Running", ["on-n1"], id="phase"),
        pytest.param("status.phase!=Running,spec.nodeName!=", ["on-n2"], id="comma-joined"),
        pytest.param(
            "spec.schedulerName=policy-scheduler", ["on-n1", "on-n2", "pending"], id="sched"
        ),
        pytest.param("spec.hostNetwork=false", ["on-n1", "on-n2", "pending"], id="absent-bool"),
    ],
)
async def test_field_selectors_on_pods_list_and_watch(
    emulator: KubeClient, namespace: str, selector: str, expected: list[str]
) -> None:
    for name in ("on-n1", "on-n2", "pending"):
        await emulator.create(pod_body(name), namespace=namespace)
    for name, node in (("on-n1", "n1"), ("on-n2", "n2")):
        status, _ = await emulator.bind(namespace, name, node)
        assert status == 201
    await emulator.patch(
        "v1", "Pod", "on-n1", {"status": {"phase": "Running"}}, namespace, subresource="status"
    )
    selector = selector.replace("NS", namespace)
    listed = await emulator.list("v1", "Pod", namespace, field_selector=selector)
    assert [p["metadata"]["name"] for p in listed] == expected
    # Everywhere: the same, with the other namespaces' pods filtered out by the selector.
    everywhere = await emulator.list(
        "v1", "Pod", field_selector=f"{selector},metadata.namespace={namespace}"
    )
    assert [p["metadata"]["name"] for p in everywhere] == expected
    if expected:  # (a watch that should send nothing cannot tell it without waiting)
        watched = await watch_events(
            emulator, "Pod", namespace, len(expected), field_selector=selector
        )
        assert sorted(e["object"]["metadata"]["name"] for e in watched) == expected


@pytest.mark.parametrize(
    ("kind", "selector", "message"),
    [
        pytest.param("Pod", "spec.foo=x", "field label not supported: spec.foo", id="pod-field"),
        pytest.param(
            "Node",
            "metadata.namespace=x",
            "field label not supported: metadata.namespace",
            id="node-has-no-namespace",
        ),
        pytest.param(
            "PersistentVolumeClaim",
            "spec.volumeName=pv",
            '"spec.volumeName" is not a known field selector: only "metadata.name", '
            '"metadata.namespace"',
            id="kind-without-own-fields",
        ),
        pytest.param(
            "Pod",
            "spec.nodeName",
            "invalid selector: 'spec.nodeName'; can't understand 'spec.nodeName'",
            id="no-operator",
        ),
        pytest.param(
            "Pod",
            "spec.nodeName=a=b",
            "invalid field selector: unescaped character in value: 61",
            id="unescaped",
        ),
    ],
)
async def test_a_field_a_kind_does_not_index_is_a_400(
    emulator: KubeClient, kind: str, selector: str, message: str
) -> None:
    spec = find_resource("v1", kind)
    path = spec.path("default" if spec.namespaced else None)
    status, body = await emulator.request("GET", path, params={"fieldSelector": selector})
    assert (status, body["reason"], body["message"]) == (400, "BadRequest", message)
    with pytest.raises(ApiError) as error:
        await watch_events(
            emulator, kind, "default" if spec.namespaced else None, 1, field_selector=selector
        )
    assert (error.value.status, error.value.body["message"]) == (400, message)


async def test_field_selectors_on_custom_resources_and_events(
    emulator: KubeClient, emulator_server: EmulatorServer, namespace: str
) -> None:
    await emulator.create(policy_body("a"))
    await emulator.create(policy_body("b"))
    policies = ("policyscheduler.io/v1alpha1", "SchedulingPolicy")
    assert [
        p["metadata"]["name"]
        for p in await emulator.list(*policies, field_selector="metadata.name!=a")
    ] == ["b"]
    with pytest.raises(ApiError) as error:
        await emulator.list(*policies, field_selector="spec.schedulerName=x")
    assert error.value.body["message"] == "field label not supported: spec.schedulerName"
    with pytest.raises(ApiError) as error:  # cluster-scoped: no namespace field either
        await emulator.list(*policies, field_selector="metadata.namespace=")
    assert error.value.status == 400

    # What `kubectl describe pod` asks for: the pod's events.
    pod = await emulator.create(pod_body("p"), namespace=namespace)
    for name, involved in (
        ("p.1", pod),
        ("q.1", {**pod, "metadata": {**pod["metadata"], "name": "q", "uid": "other"}}),
    ):
        meta = involved["metadata"]
        await emulator.create(
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": name},
                "involvedObject": {
                    "kind": "Pod",
                    "namespace": namespace,
                    "name": meta["name"],
                    "uid": meta["uid"],
                },
                "reason": "FailedScheduling",
                "type": "Warning",
                "source": {"component": "policy-scheduler"},
            },
            namespace=namespace,
        )
    selector = (
        f"involvedObject.name=p,involvedObject.namespace={namespace},"
        f"involvedObject.kind=Pod,involvedObject.uid={pod['metadata']['uid']}"
    )
    events = await emulator.list("v1", "Event", namespace, field_selector=selector)
    assert [e["metadata"]["name"] for e in events] == ["p.1"]
    events = await emulator.list(
        "v1", "Event", namespace, field_selector="source=policy-scheduler,type=Warning"
    )
    assert [e["metadata"]["name"] for e in events] == ["p.1", "q.1"]


async def test_field_validation_strict_refuses_warn_drops_and_names_unknown_fields(
    emulator: KubeClient, emulator_server: EmulatorServer, namespace: str
) -> None:
    typo = pod_body("typo")
    typo["spec"]["containers"][0]["imagePullPolcy"] = "Always"
    path = f"/api/v1/namespaces/{namespace}/pods"
    status, body = await emulator.request(
        "POST", path, json=typo, params={"fieldValidation": "Strict"}
    )
    assert (status, body["reason"]) == (400, "BadRequest")
    assert body["message"] == (
        'Pod in version "v1" cannot be handled as a Pod: strict decoding error: '
        'unknown field "spec.containers[0].imagePullPolcy"'
    )
    assert await emulator.get("v1", "Pod", "typo", namespace) is None

    async with (
        aiohttp.ClientSession() as session,
        session.post(
            emulator.url + path, json=typo, params={"fieldValidation": "Warn"}
        ) as response,
    ):
        assert response.status == 201
        assert response.headers["Warning"] == (
            '299 - "unknown field \\"spec.containers[0].imagePullPolcy\\""'
        )
        stored = await response.json()
    assert stored["spec"]["containers"] == [{"name": "c", "image": "busybox"}]

    # A patch is checked as sent: a null removes a field (not one it sets).
    status, body = await emulator.request(
        "PATCH",
        f"{path}/typo",
        json={"spec": {"containers": [{"name": "c", "imagePullPolcy": None, "tty": True}]}},
        params={"fieldValidation": "Strict"},
        content_type="application/strategic-merge-patch+json",
    )
    assert status == 200, body
    status, body = await emulator.request(
        "PATCH",
        f"{path}/typo",
        json={"metadata": {"labelz": {"a": "b"}}},
        params={"fieldValidation": "Strict"},
        content_type="application/merge-patch+json",
    )
    assert (status, body["reason"]) == (422, "Invalid")
    assert body["message"].endswith('strict decoding error: unknown field "metadata.labelz"')
    # Without the parameter, what is sent is stored (a real server would drop it, warning).
    status, _ = await emulator.request("POST", path, json=typo | {"metadata": {"name": "kept"}})
    kept = await emulator.get("v1", "Pod", "kept", namespace)
    assert status == 201 and kept is not None
    assert kept["spec"]["containers"][0]["imagePullPolcy"] == "Always"
