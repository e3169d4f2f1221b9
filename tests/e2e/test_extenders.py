"""The real operator with HTTP extenders (aiohttp servers on 127.0.0.1) against the emulator.

What a user of a GPU or batch extender would check: the extender's filter and scores
decide, it binds the pods it manages, TLS with their own CA works, and an extender that
hangs or fails delays only the pods it is asked about, each failure named in the pod's
condition and event, while every other pod keeps being scheduled.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from builders import node
from e2e.emulator import EmulatorServer
from e2e.harness import KubeClient, wait_until
from e2e.operator_harness import OperatorThread
from e2e.test_operator import bound_node, events_for, our_pod, policy_obj
from extender_server import HANG, ExtenderServer, Raw, Received, keep, score, tls_files

GPU = "example.com/gpu"
GPU_NODE = {"cpu": "8", "memory": "16Gi", "pods": 110, GPU: 4}
SCHEDULER = "gpu-scheduler"


def gpu_pod(name: str) -> dict[str, Any]:
    return our_pod(name, limits={GPU: "1"}, requests={"cpu": "100m"}, scheduler_name=SCHEDULER)


def plain_pod(name: str) -> dict[str, Any]:
    return our_pod(name, requests={"cpu": "100m"}, scheduler_name=SCHEDULER)


def binder(api_url: str) -> Any:
    """An extender's bind: it posts the Binding to the API itself, as real ones do."""

    async def bind(received: Received) -> Any:
        args = received.args
        path = f"/api/v1/namespaces/{args['podnamespace']}/pods/{args['podname']}/binding"
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": args["podname"], "uid": args["poduid"]},
            "target": {"apiVersion": "v1", "kind": "Node", "name": args["node"]},
        }
        async with (
            aiohttp.ClientSession() as session,
            session.post(api_url + path, json=body) as response,
        ):
            if response.status >= 300:
                return {"error": f"HTTP {response.status}"}
        return {}

    return bind


async def test_extenders_filter_score_and_bind_over_tls(
    emulator: KubeClient,
    emulator_server: EmulatorServer,
    namespace: str,
    kubeconfig: Path,
    tmp_path: Path,
) -> None:
    tls = tls_files(tmp_path)
    gpu = ExtenderServer(
        {
            "filter": keep(lambda n: "GPU 0 is faulty" if n == "n1" else None),
            "bind": binder(emulator_server.url),
        },
        ssl_context=tls.server_context(),
    )
    ranker = ExtenderServer({"prioritize": score({"n2": 1, "n3": 9})})
    with gpu, ranker:
        for name in ("n1", "n2", "n3"):
            await emulator.create(node(name, allocatable=GPU_NODE))
        extenders = [
            {
                "urlPrefix": gpu.url,
                "filterVerb": "filter",
                "bindVerb": "bind",
                "tlsConfig": {
                    "caData": base64.b64encode(tls.ca.read_bytes()).decode(),
                    "serverName": "extender.test",
                },
                "managedResources": [{"name": GPU, "ignoredByScheduler": True}],
            },
            {
                "urlPrefix": ranker.url,
                "prioritizeVerb": "prioritize",
                "weight": 5,
                "nodeCacheCapable": True,
            },
        ]
        await emulator.create(
            policy_obj(
                "gpu", {"schedulerName": SCHEDULER, "priorities": [], "extenders": extenders}
            )
        )
        async with OperatorThread(kubeconfig) as operator:
            await emulator.create(gpu_pod("train"), namespace)
            assert await bound_node(emulator, namespace, "train") == "n3"
            await wait_until(
                lambda: _has_event(
                    emulator, namespace, "train", f"Successfully assigned {namespace}/train to n3"
                ),
                timeout=5,
            )
            assert operator.operator is not None
            metrics = operator.operator.metrics.render().decode()

    assert gpu.verbs() == ["filter", "bind"]
    assert ranker.verbs() == ["prioritize"]
    # Whole nodes to the filter, as the API serves them; names only to the cache-capable one.
    sent = gpu.received[0].nodes
    assert [n["metadata"]["name"] for n in sent] == ["n1", "n2", "n3"]
    assert sent[0]["status"]["allocatable"][GPU] == 4
    assert ranker.received[0].node_names == ["n2", "n3"]
    assert gpu.received[1].args["node"] == "n3"
    # The extender bound the pod itself: the binding the API saw came from it.
    assert [(b.pod, b.node) for b in emulator.bindings] == [("train", "n3")]
    for url, verb in ((gpu.url, "filter"), (ranker.url, "prioritize"), (gpu.url, "bind")):
        series = f'extender="{url}",result="success",verb="{verb}"'
        assert f"scheduler_extender_requests_total{{{series}}} 1.0" in metrics


async def _has_event(kube: KubeClient, namespace: str, pod: str, message: str) -> bool:
    return any(e["message"] == message for e in await events_for(kube, namespace, pod))


@pytest.mark.parametrize(
    ("reply", "detail"),
    [
        pytest.param(HANG, "no reply from {url}/filter within 1s", id="hung"),
        pytest.param(Raw(500, b"boom"), "HTTP 500 from {url}/filter: boom", id="500"),
        pytest.param({"error": "inventory unavailable"}, "inventory unavailable", id="error-field"),
        pytest.param(
            Raw(200, b"{not json"),
            "the reply is not JSON: Expecting property name enclosed in double quotes: "
            "line 1 column 2 (char 1) (from {url}/filter)",
            id="bad-json",
        ),
    ],
)
async def test_a_failing_extender_delays_only_its_pods(
    emulator: KubeClient, namespace: str, kubeconfig: Path, reply: Any, detail: str
) -> None:
    with ExtenderServer({"filter": lambda received: reply}) as broken:
        await emulator.create(node("n1", allocatable=GPU_NODE))
        extender = {
            "urlPrefix": broken.url,
            "filterVerb": "filter",
            "httpTimeout": 1_000_000_000,  # nanoseconds, as the legacy JSON wrote it
            "managedResources": [{"name": GPU, "ignoredByScheduler": True}],
        }
        await emulator.create(
            policy_obj("gpu", {"schedulerName": SCHEDULER, "extenders": [extender]})
        )
        await emulator.create(gpu_pod("train"), namespace)
        await emulator.create(plain_pod("web-0"), namespace)
        async with OperatorThread(kubeconfig):
            message = f'extender "{broken.url}" filter failed: ' + detail.format(url=broken.url)
            obj = await emulator.wait_for(
                "v1",
                "Pod",
                "train",
                namespace,
                lambda o: any(
                    c.get("message") == message
                    for c in (o or {}).get("status", {}).get("conditions", [])
                ),
                timeout=10,
            )
            assert obj is not None and not obj["spec"].get("nodeName")
            assert await bound_node(emulator, namespace, "web-0") == "n1"
            # The loop goes on: a pod created after the failure is scheduled too.
            await emulator.create(plain_pod("web-1"), namespace)
            assert await bound_node(emulator, namespace, "web-1") == "n1"
            events = await events_for(emulator, namespace, "train")
            assert {(e["reason"], e["message"]) for e in events} == {("FailedScheduling", message)}
    # Only the pod that needs the extender's resource was sent to it.
    assert {r.pod_name for r in broken.received} == {"train"}


async def test_an_ignorable_extender_that_fails_is_skipped(
    emulator: KubeClient, namespace: str, kubeconfig: Path
) -> None:
    # ignorable: true: the extender's failure does not hold the pod; the others decide.
    with ExtenderServer({"filter": lambda received: Raw(503, b"down for maintenance")}) as down:
        await emulator.create(node("n1", allocatable=GPU_NODE))
        extender = {
            "urlPrefix": down.url,
            "filterVerb": "filter",
            "ignorable": True,
            "managedResources": [{"name": GPU, "ignoredByScheduler": True}],
        }
        await emulator.create(
            policy_obj("gpu", {"schedulerName": SCHEDULER, "extenders": [extender]})
        )
        await emulator.create(gpu_pod("train"), namespace)
        async with OperatorThread(kubeconfig) as operator:
            assert await bound_node(emulator, namespace, "train") == "n1"
            assert operator.operator is not None
            metrics = operator.operator.metrics.render().decode()
    assert down.verbs() == ["filter"]
    series = f'extender="{down.url}",result="error",verb="filter"'
    assert f"scheduler_extender_requests_total{{{series}}} 1.0" in metrics
