"""``helm install`` with default values, as far as this machine can go: render, apply, run.

The chart is rendered with its default values (helm-python-sdk, offline), its CRD and
every manifest are applied to the emulator, the CRD's schema becomes the emulator's
validation of SchedulingPolicies, and the operator runs with exactly the flags and
environment the Deployment gives its container. Then a policy is applied and pods are
scheduled through it, and a policy the CRD refuses is refused by the API with the field
named. (There is no kubelet to start the container image itself.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from builders import node, pod
from e2e.emulator import validator_from_crd
from e2e.harness import ApiError, KubeClient
from e2e.operator_harness import OperatorThread
from policy_scheduler.cli import build_parser, options_from_args

helm = pytest.importorskip("helm_python")

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "policy-scheduler"
RELEASE = "policy-scheduler"
RELEASE_NAMESPACE = "policy-scheduler"


def render_defaults() -> list[dict[str, Any]]:
    files = helm.Chart.load(str(CHART)).render(
        {}, name=RELEASE, namespace=RELEASE_NAMESPACE, is_install=True
    )
    docs: list[dict[str, Any]] = []
    for path, text in files.items():
        if not path.endswith("NOTES.txt"):
            docs += [doc for doc in yaml.safe_load_all(text) if doc]
    return docs


@pytest.fixture
def policy_validator() -> Any:
    return validator_from_crd(CHART / "crds" / "schedulingpolicies.policyscheduler.io.yaml")


async def test_default_chart_applied_to_the_emulator_schedules_pods(
    emulator: KubeClient, kubeconfig: Path, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    crd = yaml.safe_load(
        (CHART / "crds" / "schedulingpolicies.policyscheduler.io.yaml").read_text()
    )
    await emulator.create(crd)
    await emulator.create(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": RELEASE_NAMESPACE}}
    )
    manifests = render_defaults()
    for doc in manifests:
        namespaced = doc["kind"] not in ("ClusterRole", "ClusterRoleBinding", "SchedulingPolicy")
        await emulator.create(doc, RELEASE_NAMESPACE if namespaced else None)
    deployment = next(d for d in manifests if d["kind"] == "Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]

    # The container's environment, as the downward API would fill it.
    for env in container.get("env", []):
        field = (env.get("valueFrom") or {}).get("fieldRef", {}).get("fieldPath")
        if field == "metadata.namespace":
            monkeypatch.setenv(env["name"], RELEASE_NAMESPACE)
        elif field == "metadata.name":
            monkeypatch.setenv(env["name"], "policy-scheduler-0")
    args = build_parser().parse_args(["run", *container.get("args", [])])
    options = options_from_args(args)
    assert options.scheduler_name == "policy-scheduler"

    await emulator.create(node("packed", cpu="4", memory="8Gi"))
    await emulator.create(node("empty", cpu="4", memory="8Gi"))
    await emulator.create(
        pod("running", namespace=namespace, node_name="packed", requests={"cpu": "2"})
        | {"status": {"phase": "Running"}},
        namespace,
    )
    bin_packing = yaml.safe_load((ROOT / "examples" / "policies" / "bin-packing.yaml").read_text())
    await emulator.create(bin_packing)

    # Ports off: the test machine may run several operators at once.
    params = {k: v for k, v in vars(options).items() if k not in ("metrics_port", "health_port")}
    async with OperatorThread(kubeconfig, **params):
        policy = await emulator.wait_for(
            "policyscheduler.io/v1alpha1",
            "SchedulingPolicy",
            "bin-packing",
            None,
            lambda o: any(
                c.get("status") == "True" for c in (o or {}).get("status", {}).get("conditions", [])
            ),
            timeout=10,
        )
        assert policy is not None
        # The example serves its own name: the chart's stays the built-in default's.
        assert policy["status"]["servingSchedulerName"] == "bin-packing"

        fresh = pod("fresh", namespace=namespace, requests={"cpu": "1"})
        fresh["spec"]["schedulerName"] = "bin-packing"
        del fresh["metadata"]["uid"]
        await emulator.create(fresh, namespace)
        bound = await emulator.wait_for(
            "v1",
            "Pod",
            "fresh",
            namespace,
            lambda o: bool(o and o["spec"].get("nodeName")),
            timeout=10,
        )
        assert bound is not None and bound["spec"]["nodeName"] == "packed"  # bin packing

        # The CRD refuses what the engine refuses, naming the same field.
        broken = yaml.safe_load((ROOT / "examples" / "policies" / "bin-packing.yaml").read_text())
        broken["metadata"]["name"] = "broken"
        broken["spec"]["priorities"][0]["weight"] = 0
        with pytest.raises(ApiError) as refused:
            await emulator.create(broken)
        assert refused.value.status == 422
        assert "spec.priorities[0].weight" in str(refused.value.body)
