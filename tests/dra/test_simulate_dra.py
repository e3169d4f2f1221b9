"""DynamicResources through ``simulate``: where a pod with ResourceClaims lands, which
devices its claims get (``-o json``'s ``claims``), why a node or a pod is refused, in
kube-scheduler v1.34's words."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from builders import GPU_DRIVER, device_class, gpu_slice
from policy_scheduler import cli

DRIVER = GPU_DRIVER
POLICY = {
    "apiVersion": "policyscheduler.io/v1alpha1",
    "kind": "SchedulingPolicy",
    "metadata": {"name": "dra"},
    "spec": {
        "schedulerName": "policy-scheduler",
        "plugins": {"multiPoint": {"enabled": [{"name": "DynamicResources"}]}},
    },
}


def node(name: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}},
    }


def claim(name: str, count: int = 1, *, device_class: str = DRIVER, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "ml", "uid": f"uid-{name}"},
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "gpu",
                        "exactly": {"deviceClassName": device_class, "count": count, **extra},
                    }
                ]
            }
        },
    }
    return body


def pod(name: str, second: int, *claims: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "ml",
            "uid": f"uid-{name}",
            "creationTimestamp": f"2024-01-01T00:00:{second:02d}Z",
        },
        "spec": {
            "schedulerName": "policy-scheduler",
            "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "100m"}}}],
            "resourceClaims": list(claims),
        },
    }


def uses(claim_name: str, entry: str = "gpu") -> dict[str, str]:
    return {"name": entry, "resourceClaimName": claim_name}


def simulate(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    objects: list[dict[str, Any]],
    policy: dict[str, Any] = POLICY,
) -> tuple[dict[str, dict[str, Any]], str]:
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump_all(objects))
    (tmp_path / "policy.yaml").write_text(yaml.safe_dump(policy))
    capsys.readouterr()
    code = cli.main(
        [
            "simulate",
            "-f",
            str(tmp_path / "cluster.yaml"),
            "--policy",
            str(tmp_path / "policy.yaml"),
            "-o",
            "json",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    return {d["pod"].split("/")[1]: d for d in json.loads(out)["decisions"]}, err


def test_a_pod_lands_where_its_claim_gets_devices_and_says_which(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    objects = [
        node("cpu-1"),
        node("gpu-1"),
        device_class(),
        gpu_slice("gpu-1", 2, model="a100"),
        claim("train"),
        pod("trainer", 0, uses("train")),
    ]
    decisions, _ = simulate(tmp_path, capsys, objects)
    trainer = decisions["trainer"]
    assert trainer["node"] == "gpu-1"
    assert trainer["failedPredicates"] == {"cpu-1": ["cannot allocate all claims"]}
    assert trainer["claims"] == {"train": {"gpu": [f"{DRIVER}/gpu-1/gpu-0"]}}


def test_no_device_is_given_twice(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Five pods, one GPU each, three GPUs in the cluster: three placed, each its own GPU.
    objects: list[dict[str, Any]] = [
        node("gpu-1"),
        node("gpu-2"),
        device_class(),
        gpu_slice("gpu-1", 2, model="a100"),
        gpu_slice("gpu-2", 1, model="a100"),
    ]
    for i in range(5):
        objects += [claim(f"c{i}"), pod(f"p{i}", i, uses(f"c{i}"))]
    decisions, _ = simulate(tmp_path, capsys, objects)
    given = [
        device
        for d in decisions.values()
        if d["node"]
        for device in d["claims"][f"c{d['pod'][-1]}"]["gpu"]
    ]
    assert len(given) == 3 and len(set(given)) == 3
    refused = [d for d in decisions.values() if d["node"] is None]
    assert [d["message"] for d in refused] == [
        "0/2 nodes are available: 2 cannot allocate all claims."
    ] * 2


def test_an_allocated_claim_keeps_its_pod_on_its_node_and_its_devices_taken(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shared = claim("shared")
    shared["status"] = {
        "allocation": {
            "devices": {
                "results": [
                    {"request": "gpu", "driver": DRIVER, "pool": "gpu-2", "device": "gpu-0"}
                ]
            },
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {
                        "matchFields": [
                            {"key": "metadata.name", "operator": "In", "values": ["gpu-2"]}
                        ]
                    }
                ]
            },
        }
    }
    objects = [
        node("gpu-1"),
        node("gpu-2"),
        device_class(),
        gpu_slice("gpu-1", 1, model="a100"),
        gpu_slice("gpu-2", 1, model="a100"),
        shared,
        claim("other"),
        pod("user", 0, uses("shared")),
        pod("other", 1, uses("other")),
    ]
    decisions, _ = simulate(tmp_path, capsys, objects)
    assert decisions["user"]["node"] == "gpu-2"
    assert decisions["user"]["failedPredicates"] == {
        "gpu-1": ["resourceclaim not available on the node"]
    }
    assert decisions["user"]["claims"] == {"shared": {"gpu": [f"{DRIVER}/gpu-2/gpu-0"]}}
    # gpu-2's only GPU is the shared claim's: "other" gets gpu-1's.
    assert decisions["other"]["node"] == "gpu-1"


def test_class_and_request_selectors_choose_the_devices(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    h100 = device_class("h100", 'device.attributes["gpu.example.com"].model == "h100"')
    objects = [
        node("a"),
        node("h"),
        device_class(),
        h100,
        gpu_slice("a", 2, model="a100"),
        gpu_slice("h", 1, model="h100"),
        claim("fast", device_class="h100"),
        pod("fast", 0, uses("fast")),
    ]
    decisions, _ = simulate(tmp_path, capsys, objects)
    assert decisions["fast"]["node"] == "h"


def test_a_selector_that_fails_is_the_pods_error_not_a_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = claim(
        "broken", selectors=[{"cel": {"expression": 'device.attributes["x.com"].nope == 1'}}]
    )
    objects = [
        node("gpu-1"),
        device_class(),
        gpu_slice("gpu-1", 1, model="a100"),
        broken,
        pod("broken", 0, uses("broken")),
        claim("fine"),
        pod("fine", 1, uses("fine")),
    ]
    decisions, _ = simulate(tmp_path, capsys, objects)
    assert decisions["broken"]["node"] is None
    assert (
        "claim ml/broken: selector #0 on device gpu.example.com/gpu-1/gpu-0: CEL runtime "
        "error" in decisions["broken"]["error"]
    )
    assert decisions["fine"]["node"] == "gpu-1"


@pytest.mark.parametrize(
    ("pod_claims", "extra", "note"),
    [
        pytest.param(
            [uses("missing")],
            [],
            'DynamicResources: resourceclaim.resource.k8s.io "missing" not found',
            id="claim-missing",
        ),
        pytest.param(
            [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
            [],
            'DynamicResources: pod "ml/waiter": ResourceClaim not created yet',
            id="template-claim-not-made-yet",
        ),
    ],
)
def test_a_pod_whose_claims_are_missing_waits_and_says_why(
    pod_claims: list[dict[str, str]],
    extra: list[dict[str, Any]],
    note: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    objects = [
        node("gpu-1"),
        device_class(),
        gpu_slice("gpu-1", 1, model="a100"),
        *extra,
        pod("waiter", 0, *pod_claims),
    ]
    decisions, err = simulate(tmp_path, capsys, objects)
    assert "waiter" not in decisions
    assert f"note: not scheduling pod ml/waiter: {note}" in err.splitlines()


def test_a_claim_made_from_a_template_for_the_pod_is_allocated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    made = claim("waiter-gpu-x7k2")
    made["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": "waiter",
            "uid": "uid-waiter",
            "controller": True,
        }
    ]
    waiter = pod("waiter", 0, {"name": "gpu", "resourceClaimTemplateName": "one-gpu"})
    waiter["status"] = {
        "resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "waiter-gpu-x7k2"}]
    }
    decisions, _ = simulate(
        tmp_path,
        capsys,
        [node("gpu-1"), device_class(), gpu_slice("gpu-1", 1, model="a100"), made, waiter],
    )
    assert decisions["waiter"]["claims"] == {"waiter-gpu-x7k2": {"gpu": [f"{DRIVER}/gpu-1/gpu-0"]}}


def test_a_request_for_an_unknown_class_is_refused_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    objects = [
        node("gpu-1"),
        device_class(),
        gpu_slice("gpu-1", 1, model="a100"),
        claim("tpu", device_class="tpu.example.com"),
        pod("p", 0, uses("tpu")),
    ]
    decisions, _ = simulate(tmp_path, capsys, objects)
    assert decisions["p"]["message"] == (
        "0/1 nodes are available: request gpu: device class tpu.example.com does not exist."
    )


def test_a_malformed_slice_is_one_line_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = gpu_slice("gpu-1", 1, model="a100")
    bad["spec"]["devices"][0]["attributes"]["model"] = {"string": "a", "int": 1}
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump_all([node("gpu-1"), bad]))
    capsys.readouterr()
    code = cli.main(["simulate", "-f", str(tmp_path / "cluster.yaml")])
    _, err = capsys.readouterr()
    assert code == 1
    assert (
        err.strip()
        .splitlines()[-1]
        .endswith(
            'ResourceSlice "gpu-1-gpus": spec.devices[0].attributes[model]: must set exactly one '
            "of int, bool, string, version"
        )
    )


@pytest.mark.parametrize(
    ("reserved", "placed"),
    [
        pytest.param(256, False, id="256-others-in-use"),
        pytest.param(255, True, id="255-others-room-for-one-more"),
    ],
)
def test_a_claim_reserved_for_256_other_pods_is_in_use(
    reserved: int, placed: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shared = claim("shared")
    shared["status"] = {
        "allocation": {
            "devices": {
                "results": [
                    {"request": "gpu", "driver": DRIVER, "pool": "gpu-1", "device": "gpu-0"}
                ]
            }
        },
        "reservedFor": [
            {"resource": "pods", "name": f"o{i}", "uid": f"o{i}"} for i in range(reserved)
        ],
    }
    objects = [
        node("gpu-1"),
        device_class(),
        gpu_slice("gpu-1", 1, model="a100"),
        shared,
        pod("p", 0, uses("shared")),
    ]
    decisions, _ = simulate(tmp_path, capsys, objects)
    if placed:
        assert decisions["p"]["node"] == "gpu-1"
    else:
        assert decisions["p"]["message"] == "0/1 nodes are available: resourceclaim in use."


# -- PostFilter and preemption, as v1.34's default profile runs them ---------------------

#: v1.34's order at PostFilter: DynamicResources, then DefaultPreemption.
V134_POLICY = {
    "apiVersion": "policyscheduler.io/v1alpha1",
    "kind": "SchedulingPolicy",
    "metadata": {"name": "v134"},
    "spec": {
        "schedulerName": "policy-scheduler",
        "predicates": [{"name": "NodeResourcesFit"}, {"name": "DynamicResources"}],
        "priorities": [{"name": "NodeResourcesFit", "weight": 1}],
        "plugins": {
            point: {"enabled": [{"name": n} for n in names], "disabled": [{"name": "*"}]}
            for point, names in {
                "preEnqueue": ["DynamicResources"],
                "queueSort": ["PrioritySort"],
                "preFilter": ["NodeResourcesFit", "DynamicResources"],
                "postFilter": ["DynamicResources", "DefaultPreemption"],
                "preScore": ["NodeResourcesFit"],
                "reserve": ["DynamicResources"],
                "preBind": ["DynamicResources"],
                "bind": ["DefaultBinder"],
            }.items()
        },
    },
}


def held_by(claim_name: str, pod_name: str, node_name: str) -> dict[str, Any]:
    """A claim allocated on ``node_name``'s gpu-0 and reserved for ``pod_name`` alone."""
    body = claim(claim_name)
    body["status"] = {
        "allocation": {
            "devices": {
                "results": [
                    {"request": "gpu", "driver": DRIVER, "pool": node_name, "device": "gpu-0"}
                ]
            }
        },
        "reservedFor": [{"resource": "pods", "name": pod_name, "uid": f"uid-{pod_name}"}],
    }
    return body


def running(name: str, node_name: str, priority: int, *claims: dict[str, str]) -> dict[str, Any]:
    body = pod(name, 0, *claims)
    body["spec"]["nodeName"] = node_name
    body["spec"]["priority"] = priority
    return body


def urgent(name: str, cpu: str, *claims: dict[str, str]) -> dict[str, Any]:
    body = pod(name, 1, *claims)
    body["spec"]["priority"] = 1000
    body["spec"]["containers"][0]["resources"]["requests"]["cpu"] = cpu
    return body


def simulate_v134(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], objects: list[dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump_all(objects))
    (tmp_path / "policy.yaml").write_text(yaml.safe_dump(V134_POLICY))
    capsys.readouterr()
    args = ["simulate", "-f", str(tmp_path / "cluster.yaml"), "--policy"]
    code = cli.main([*args, str(tmp_path / "policy.yaml"), "-o", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    first: dict[str, dict[str, Any]] = {}  # a preemptor's first attempt (then its placement)
    for decision in json.loads(out)["decisions"]:
        first.setdefault(decision["pod"].split("/")[1], decision)
    return first


def test_a_victims_devices_are_not_freed_by_preemption_as_in_v134(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The node's one GPU is held by a low-priority pod's claim. v1.34's DynamicResources
    has no RemovePod: preemption's what-if still sees the GPU taken, the node is
    refused UnschedulableAndUnresolvable, and nobody is preempted for a device. The
    same victim is preempted for CPU (its removal does free that)."""
    objects = [
        {**node("gpu-1"), "status": {"allocatable": {"cpu": "1", "memory": "8Gi", "pods": "9"}}},
        device_class(),
        gpu_slice("gpu-1", 1, model="a100"),
        held_by("held", "holder", "gpu-1"),
        claim("wanted"),
        running("holder", "gpu-1", 0, uses("held")),
        urgent("needs-a-gpu", "100m", uses("wanted")),
    ]
    decision = simulate_v134(tmp_path, capsys, objects)["needs-a-gpu"]
    assert decision["node"] is None
    assert decision["preemption"] is None
    assert decision["message"] == (
        "0/1 nodes are available: 1 cannot allocate all claims. still not schedulable, "
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )

    cpu_only = simulate_v134(tmp_path, capsys, [*objects[:-1], urgent("needs-cpu", "1")])
    assert cpu_only["needs-cpu"]["preemption"] == {"node": "gpu-1", "victims": ["ml/holder"]}


def test_every_failure_says_no_new_claims_to_deallocate_before_preemption(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A pod without claims, refused, with no victim to take: DynamicResources'
    PostFilter answer comes first, as in a v1.34 cluster's FailedScheduling events."""
    objects = [
        {**node("n1"), "status": {"allocatable": {"cpu": "1", "memory": "8Gi", "pods": "9"}}},
        running("peer", "n1", 1000),
        urgent("big", "1"),
    ]
    decision = simulate_v134(tmp_path, capsys, objects)["big"]
    assert decision["message"] == (
        "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, "
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )


def with_filter_timeout(written: str | None) -> dict[str, Any]:
    spec = dict(POLICY["spec"])
    if written is not None:
        spec["pluginConfig"] = [{"name": "DynamicResources", "args": {"filterTimeout": written}}]
    return {**POLICY, "spec": spec}


@pytest.mark.parametrize(
    ("written", "placed"),
    [
        pytest.param("1ns", False, id="past-the-timeout"),
        pytest.param("0s", True, id="zero-disables-it"),
        pytest.param(None, True, id="default-10s"),
    ],
)
def test_a_node_search_past_filter_timeout_refuses_the_node(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], written: str | None, placed: bool
) -> None:
    """Upstream's "timeout" and "timeout_disabled" rows (dynamicresources_test.go):
    a 1ns filterTimeout expires before the search's first check, on every node."""
    objects = [
        node("n1"),
        node("n2"),
        device_class(),
        gpu_slice("n1", 4, model="a100"),
        gpu_slice("n2", 4, model="a100"),
        claim("train", 2),
        pod("trainer", 1, uses("train")),
    ]
    decisions, _ = simulate(tmp_path, capsys, objects, with_filter_timeout(written))
    decision = decisions["trainer"]
    if placed:
        assert decision["node"] in ("n1", "n2")
    else:
        assert decision["node"] is None
        assert decision["message"] == (
            "0/2 nodes are available: 2 timed out trying to allocate devices."
        )


def allocated_on(
    body: dict[str, Any], node_name: str, device: str, *reserved: str
) -> dict[str, Any]:
    """The claim as the API shows it once allocated on ``node_name`` (and reserved)."""
    body["status"] = {
        "allocation": {
            "devices": {
                "results": [
                    {"request": "gpu", "driver": DRIVER, "pool": node_name, "device": device}
                ]
            },
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {
                        "matchFields": [
                            {"key": "metadata.name", "operator": "In", "values": [node_name]}
                        ]
                    }
                ]
            },
        },
        "reservedFor": [{"resource": "pods", "name": n, "uid": f"uid-{n}"} for n in reserved],
    }
    return body


@pytest.mark.parametrize(
    ("reserved", "expected", "then"),
    [
        pytest.param((), "deallocation of ResourceClaim completed", "n2", id="reserved-for-none"),
        pytest.param(
            ("trainer",), "deallocation of ResourceClaim completed", "n2", id="only-for-it"
        ),
        pytest.param(("other",), "still not schedulable", None, id="another-pod-uses-it"),
    ],
)
def test_a_claim_allocated_where_the_pod_no_longer_fits_is_deallocated_by_post_filter(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    reserved: tuple[str, ...],
    expected: str,
    then: str | None,
) -> None:
    """The claim holds a GPU of n1, where the pod does not fit any more (its cpu); n2
    has GPUs but the claim is not available there. v1.34's PostFilter clears the
    allocation when no other pod reserves the claim, and the next attempt allocates it
    afresh on n2."""
    full = node("n1")
    full["status"]["allocatable"]["cpu"] = "50m"
    objects = [
        full,
        node("n2"),
        device_class(),
        gpu_slice("n1", 1, model="a100"),
        gpu_slice("n2", 1, model="a100"),
        allocated_on(claim("train"), "n1", "gpu-0", *reserved),
        pod("trainer", 1, uses("train")),
    ]
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump_all(objects))
    (tmp_path / "policy.yaml").write_text(yaml.safe_dump(V134_POLICY))
    capsys.readouterr()
    args = ["simulate", "-f", str(tmp_path / "cluster.yaml"), "--policy"]
    assert cli.main([*args, str(tmp_path / "policy.yaml"), "-o", "json"]) == 0
    decisions = json.loads(capsys.readouterr().out)["decisions"]
    first, last = decisions[0], decisions[-1]
    assert first["node"] is None
    assert first["message"] == (
        "0/2 nodes are available: 1 Insufficient cpu, 1 resourceclaim not available on the "
        f"node. {expected}, preemption: 0/2 nodes are available: 1 No preemption victims "
        "found for incoming pod, 1 Preemption is not helpful for scheduling."
    )
    assert last["node"] == then
    if then is not None:
        assert last["claims"] == {"train": {"gpu": [f"{DRIVER}/n2/gpu-0"]}}


def test_a_shared_claim_allocated_in_flight_for_another_pod_is_not_deallocated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``first`` got the shared claim's GPU on n1 (this scheduler's allocation, not
    written yet); ``second`` shares the claim but n1 has no cpu left for it. The claim
    is another pod's in flight: PostFilter leaves it, ``still not schedulable``."""
    small = node("n1")
    small["status"]["allocatable"]["cpu"] = "150m"
    objects = [
        small,
        node("n2"),
        device_class(),
        gpu_slice("n1", 1, model="a100"),
        claim("shared"),
        pod("first", 1, uses("shared")),
        pod("second", 2, uses("shared")),
    ]
    decisions = simulate_v134(tmp_path, capsys, objects)
    assert decisions["first"]["node"] == "n1"
    assert decisions["second"]["node"] is None
    assert decisions["second"]["message"].startswith(
        "0/2 nodes are available: 1 Insufficient cpu, 1 resourceclaim not available on the "
        "node. still not schedulable, preemption:"
    )
