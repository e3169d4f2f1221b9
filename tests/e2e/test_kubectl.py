"""The real ``kubectl`` against the emulator: discovery, tables, describe, apply with validation.

kubectl is the client a user reaches for first, and the strictest reader of an API
server's discovery and OpenAPI documents: these tests run the installed binary (they skip
when there is none) with a kubeconfig for the emulator, its own discovery cache
(``KUBECACHEDIR``) and a request timeout, and check what a user reads in its output. The
ones that only need an API server run against a real cluster too when ``KUBECONFIG`` is
set; the ones that apply the CRD, or start ``tests/e2e/serve.py``, need the emulator.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from e2e.emulator import EmulatorServer
from e2e.harness import KubeClient

KUBECTL = shutil.which("kubectl")
ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")


class Kubectl:
    """The kubectl binary with a kubeconfig, a discovery cache of the test's own
    (``KUBECACHEDIR``, never the user's) and deadlines."""

    def __init__(self, kubeconfig: Path, cache: Path) -> None:
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_SERVICE")}
        self.env |= {"KUBECONFIG": str(kubeconfig), "KUBECACHEDIR": str(cache)}

    def __call__(
        self, *args: str, stdin: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        assert KUBECTL is not None
        done = subprocess.run(
            [KUBECTL, "--request-timeout=20s", *args],
            env=self.env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
            cwd=ROOT,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} -> {done.returncode}:\n{done.stderr}")
        return done

    async def run(self, *args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        """The same from a test's loop (in a thread: the loop must not block meanwhile)."""
        return await asyncio.to_thread(self, *args, **kwargs)


@pytest.fixture
def kube(kubeconfig: Path, tmp_path: Path) -> Kubectl:
    return Kubectl(kubeconfig, tmp_path / "kube-cache")


def rows(output: str) -> list[list[str]]:
    """kubectl's table output, one list of cells per line (cells hold no blanks here)."""
    return [line.split() for line in output.splitlines() if line.strip()]


def node(name: str, ready: str = "True", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"node-role.kubernetes.io/worker": ""}},
        "spec": spec,
        "status": {
            "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": ready}],
            "nodeInfo": {"kubeletVersion": "v1.30.0"},
        },
    }


def pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "schedulerName": "policy-scheduler",
            "containers": [{"name": "c", "image": "busybox"}],
        },
    }


async def test_get_nodes_and_pods_in_every_namespace(
    emulator: KubeClient, namespace: str, kube: Kubectl
) -> None:
    await emulator.create(node("kc-n1"))
    await emulator.create(node("kc-n2", ready="False", unschedulable=True))
    await emulator.create(pod("bound"), namespace=namespace)
    await emulator.create(pod("waiting"), namespace=namespace)
    status, _ = await emulator.bind(namespace, "bound", "kc-n1")
    assert status == 201

    listed = rows((await kube.run("get", "nodes,pods", "-A")).stdout)
    # Server-side columns (a Table): the nodes' status and roles, the pods' namespace.
    by_name = {r[0]: r for r in listed}
    assert by_name["node/kc-n1"][:3] == ["node/kc-n1", "Ready", "worker"]
    assert by_name["node/kc-n2"][1] == "NotReady,SchedulingDisabled"
    pods = {r[1]: r for r in listed if r[0] == namespace}
    assert set(pods) == {"pod/bound", "pod/waiting"}
    assert pods["pod/waiting"][2:5] == ["0/1", "Pending", "0"]

    wide = rows((await kube.run("get", "pods", "-n", namespace, "-o", "wide")).stdout)
    header, *lines = wide
    assert header[:5] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"] and "NODE" in header
    nodes = {line[0]: line[header.index("NODE")] for line in lines}
    assert nodes == {"bound": "kc-n1", "waiting": "<none>"}

    # A field selector, as kubectl passes it to the server.
    selected = await kube.run(
        "get", "pods", "-n", namespace, "--field-selector", "spec.nodeName=kc-n1"
    )
    assert [r[0] for r in rows(selected.stdout)[1:]] == ["bound"]


async def test_describe_pod_shows_the_pod_and_only_its_events(
    emulator: KubeClient, namespace: str, kube: Kubectl
) -> None:
    created = await emulator.create(pod("web"), namespace=namespace)
    await emulator.create(pod("other"), namespace=namespace)
    for name, involved, message in (
        ("web.1", created, "0/3 nodes are available: 3 Insufficient cpu."),
        ("other.1", None, "not about web"),
    ):
        meta = involved["metadata"] if involved else {"name": "other", "uid": "x"}
        await emulator.create(
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": name},
                "involvedObject": {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "namespace": namespace,
                    "name": meta["name"],
                    "uid": meta["uid"],
                },
                "reason": "FailedScheduling",
                "message": message,
                "type": "Warning",
                "source": {"component": "policy-scheduler"},
                "count": 1,
            },
            namespace=namespace,
        )
    described = (await kube.run("describe", "pod", "web", "-n", namespace)).stdout
    assert rows(described)[0] == ["Name:", "web"]
    events = described[described.index("Events:") :]
    assert "Warning  FailedScheduling" in events and "3 Insufficient cpu." in events
    assert "not about web" not in events
    # `kubectl get events`: the server's columns for events.
    listed = (await kube.run("get", "events", "-n", namespace)).stdout.splitlines()
    assert listed[0].split() == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert sorted(line.split()[1:4] for line in listed[1:]) == [
        ["Warning", "FailedScheduling", "pod/other"],
        ["Warning", "FailedScheduling", "pod/web"],
    ]


async def test_apply_validates_the_policy_on_the_server_and_get_prints_its_columns(
    emulator: KubeClient, emulator_server: EmulatorServer, kube: Kubectl
) -> None:
    created = await kube.run("apply", "-f", "crds/")
    assert "schedulingpolicies.policyscheduler.io created" in created.stdout
    # kubectl's default validation (strict): it reads /openapi/v3, finds fieldValidation
    # on the kind's PATCH, and lets the server check the fields.
    applied = await kube.run("apply", "-f", "examples/policies/bin-packing.yaml")
    assert applied.stdout.strip() == "schedulingpolicy.policyscheduler.io/bin-packing created"
    again = await kube.run("apply", "-f", "examples/policies/bin-packing.yaml")
    assert again.stdout.strip() == "schedulingpolicy.policyscheduler.io/bin-packing unchanged"
    text = (ROOT / "examples/policies/bin-packing.yaml").read_text()
    changed = await kube.run("apply", "-f", "-", stdin=text.replace("weight: 2", "weight: 3"))
    assert changed.stdout.strip() == "schedulingpolicy.policyscheduler.io/bin-packing configured"

    listed = rows((await kube.run("get", "schedpol")).stdout)
    # The CRD's printer columns; MODE is the schema's default (the file does not say it).
    assert listed[0] == ["NAME", "SCHEDULER", "MODE", "ACCEPTED", "AGE"]
    assert listed[1][:3] == ["bin-packing", "bin-packing", "Active"]
    wide = rows((await kube.run("get", "schedpol", "-o", "wide")).stdout)
    assert wide[0][:7] == [
        "NAME",
        "SCHEDULER",
        "MODE",
        "ACCEPTED",
        "REASON",
        "PREDICATES",
        "PRIORITIES",
    ]

    # A misspelt field: refused by the server, named, nothing stored.
    typo = text.replace("  priorities:", "  prioritiez:").replace("bin-packing\n", "typo\n")
    refused = await kube.run("apply", "-f", "-", stdin=typo, check=False)
    assert refused.returncode == 1
    assert 'strict decoding error: unknown field "spec.prioritiez"' in refused.stderr
    assert await emulator.get("policyscheduler.io/v1alpha1", "SchedulingPolicy", "typo") is None
    bad_pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default}\n"
    bad_pod += "spec: {containers: [{name: c, image: i, imagePullPolcy: Always}]}\n"
    refused = await kube.run("apply", "-f", "-", stdin=bad_pod, check=False)
    assert 'unknown field "spec.containers[0].imagePullPolcy"' in refused.stderr


def test_the_serve_command_starts_an_emulator_kubectl_can_use(tmp_path: Path) -> None:
    """The README's walk-through: serve, get, apply, get, describe (``policy-scheduler run``
    against the emulator is tested in test_faults.py and test_chart_install.py)."""
    config = tmp_path / "emulator.kubeconfig"
    kubectl = Kubectl(config, tmp_path / "kube-cache")
    with served(config, "examples/cluster.yaml") as banner:
        assert banner[-1] == f"export KUBECONFIG={config}"

        listed = rows(kubectl("get", "nodes,pods", "-A").stdout)
        assert listed[3][:2] == ["node/node-a3", "Ready,SchedulingDisabled"]
        assert ["shop", "pod/web-7d9f-x2", "0/1", "Pending"] in [r[:4] for r in listed]
        applied = kubectl("apply", "-f", "examples/policies/bin-packing.yaml")
        assert applied.stdout.strip() == "schedulingpolicy.policyscheduler.io/bin-packing created"
        assert rows(kubectl("get", "schedpol").stdout)[1][:3] == [
            "bin-packing",
            "bin-packing",
            "Active",
        ]

        described = kubectl("describe", "pod", "-n", "shop", "web-7d9f-x2").stdout
        assert rows(described)[:2] == [["Name:", "web-7d9f-x2"], ["Namespace:", "shop"]]


@contextlib.contextmanager
def served(config: Path, load: str) -> Iterator[list[str]]:
    """``tests/e2e/serve.py --kubeconfig CONFIG --load FILE`` running, as the docs start it;
    yields its banner once it says where its kubeconfig is; stopped with SIGTERM after."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_SERVICE")}
    command = [sys.executable, "tests/e2e/serve.py", "--kubeconfig", str(config), "--load", load]
    server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        deadline = time.monotonic() + 30
        banner: list[str] = []
        while not any(line.startswith("export KUBECONFIG=") for line in banner):
            line = server.stdout.readline()
            assert line and time.monotonic() < deadline, f"no banner: {banner}"
            banner.append(line.strip())
        yield banner
    finally:
        server.send_signal(signal.SIGTERM)
        assert server.wait(15) == 0


def test_the_serve_command_refuses_a_missing_file(capsys: pytest.CaptureFixture[str]) -> None:
    from e2e import serve

    assert serve.main(["--load", "no/such.yaml"]) == 1
    assert capsys.readouterr().err == "error: --load no/such.yaml: no such file\n"


async def test_the_dra_walkthrough_serve_kubectl_and_the_operator(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/dra.md's walk-through: the emulator serving examples/dra.yaml, kubectl
    listing the DRA kinds, the operator placing the pods and writing their claims."""
    from kubernetes_asyncio.config import kube_config

    from e2e.operator_harness import OperatorThread

    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    config = tmp_path / "emulator.kubeconfig"
    # Kopf logs in from $KUBECONFIG, read once at import by kubernetes-asyncio.
    monkeypatch.setenv("KUBECONFIG", str(config))
    monkeypatch.setattr(kube_config, "KUBE_CONFIG_DEFAULT_LOCATION", str(config))
    kubectl = Kubectl(config, tmp_path / "kube-cache")
    with served(config, "examples/dra.yaml"):
        listed = rows((await kubectl.run("get", "deviceclasses,resourceslices", "-A")).stdout)
        names = [r[0] for r in listed]
        assert "deviceclass.resource.k8s.io/gpu.example.com" in names
        assert "resourceslice.resource.k8s.io/gpu-a-gpu.example.com" in names
        async with OperatorThread(config):
            deadline = time.monotonic() + 30
            while True:
                got = await kubectl.run("get", "pods", "-n", "ml", "-o", "json")
                placed = {
                    p["metadata"]["name"]: p["spec"].get("nodeName")
                    for p in json.loads(got.stdout)["items"]
                }
                if placed.get("infer") and placed.get("train-1") and placed.get("train-2"):
                    break
                assert time.monotonic() < deadline, placed
                await asyncio.sleep(0.2)
        assert placed["train-1"] == placed["train-2"] == "gpu-a"
        assert placed["infer"] == "gpu-b" and not placed.get("infer-2")
        claim = json.loads(
            (await kubectl.run("get", "resourceclaim", "-n", "ml", "big-gpu", "-o", "json")).stdout
        )
        (result,) = claim["status"]["allocation"]["devices"]["results"]
        assert (result["pool"], result["device"]) == ("gpu-b", "gpu-0")
        assert [r["name"] for r in claim["status"]["reservedFor"]] == ["infer"]
        described = (await kubectl.run("describe", "pod", "-n", "ml", "infer-2")).stdout
        assert "0/3 nodes are available: 3 cannot allocate all claims." in described
