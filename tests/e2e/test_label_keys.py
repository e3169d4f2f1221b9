"""matchLabelKeys end to end: the emulator merges a pod's keys into its anti-affinity term
at create, as kube-apiserver v1.34 does, and the operator reads the stored selector (it
merges nothing again): a new version's pod ignores the old version's pods."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from builders import node, pod
from e2e.harness import KubeClient, wait_until
from e2e.operator_harness import OperatorThread

SCHEDULER = "policy-scheduler"


def policy() -> dict[str, Any]:
    points = {
        "queueSort": ["PrioritySort"],
        "preFilter": ["InterPodAffinity"],
        "preScore": ["NodeResourcesFit"],
        "bind": ["DefaultBinder"],
    }
    return {
        "apiVersion": "policyscheduler.io/v1alpha1",
        "kind": "SchedulingPolicy",
        "metadata": {"name": "label-keys"},
        "spec": {
            "schedulerName": SCHEDULER,
            "predicates": [{"name": "InterPodAffinity"}],
            "priorities": [{"name": "NodeResourcesFit", "weight": 1}],
            "plugins": {
                point: {"enabled": [{"name": n} for n in names], "disabled": [{"name": "*"}]}
                for point, names in points.items()
            },
        },
    }


def web(name: str, version: str, *, on: str | None = None) -> dict[str, Any]:
    term = {
        "topologyKey": "kubernetes.io/hostname",
        "labelSelector": {"matchLabels": {"app": "web"}},
        "matchLabelKeys": ["version"],
    }
    obj = pod(
        name,
        labels={"app": "web", "version": version},
        node_name=on,
        affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}},
        schedulerName=SCHEDULER,
    )
    del obj["metadata"]["uid"]  # the API server assigns it
    del obj["metadata"]["namespace"]  # the URL decides
    return obj


async def test_the_stored_selector_decides(
    emulator: KubeClient, namespace: str, kubeconfig: Path
) -> None:
    await emulator.create(policy())
    await emulator.create(node("n1", cpu="8", labels={"kubernetes.io/hostname": "n1"}))
    await emulator.create(web("old", "v1", on="n1"), namespace)
    stored = await emulator.create(web("new", "v2"), namespace)
    [term] = stored["spec"]["affinity"]["podAntiAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    assert term["labelSelector"]["matchExpressions"] == [
        {"key": "version", "operator": "In", "values": ["v2"]}
    ]
    await emulator.create(web("twin", "v1"), namespace)
    async with OperatorThread(kubeconfig):

        async def decided() -> bool:
            new = await emulator.get("v1", "Pod", "new", namespace)
            events = await emulator.list("v1", "Event", namespace)
            refused = [
                e
                for e in events
                if e.get("involvedObject", {}).get("name") == "twin"
                and e.get("reason") == "FailedScheduling"
            ]
            return new is not None and new["spec"].get("nodeName") == "n1" and bool(refused)

        await wait_until(decided, timeout=30, message="v2 placed beside v1, a second v1 refused")
    twin = await emulator.get("v1", "Pod", "twin", namespace)
    assert twin is not None and not twin["spec"].get("nodeName")
