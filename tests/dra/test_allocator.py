"""The structured allocator, node by node: which devices a claim gets, or why none.

Cases in the manner of upstream's allocator tests
(``k8s.io/dynamic-resource-allocation/structured``): pools and their generations, node
selection of slices, class and request selectors (CEL, with quantities and versions),
counts, All, firstAvailable, matchAttribute with backtracking, admin access, devices in
use, and the errors no node can fix.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from dra.test_simulate_dra import POLICY
from policy_scheduler import cli
from policy_scheduler.devices import (
    ObjectError,
    parse_device_class,
    parse_resource_claim,
    parse_resource_slice,
)
from policy_scheduler.engine.intree._allocator import (
    AllocationError,
    AllocationTimeout,
    Allocator,
)

DRIVER = "gpu.example.com"


def device(name: str, **attributes: Any) -> dict[str, Any]:
    attrs: dict[str, Any] = {}
    capacity: dict[str, Any] = {}
    for key, value in attributes.items():
        if key == "memory":
            capacity["memory"] = {"value": value}
        elif isinstance(value, bool):
            attrs[key] = {"bool": value}
        elif isinstance(value, int):
            attrs[key] = {"int": value}
        elif key == "driverVersion":
            attrs[key] = {"version": value}
        else:
            attrs[key] = {"string": value}
    return {"name": name, "attributes": attrs, "capacity": capacity}


def slice_(
    name: str,
    devices: list[dict[str, Any]],
    *,
    node: str | None = "n1",
    pool: str = "pool-1",
    generation: int = 1,
    count: int = 1,
    driver: str = DRIVER,
    **spec: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "driver": driver,
        "pool": {"name": pool, "generation": generation, "resourceSliceCount": count},
        "devices": devices,
        **spec,
    }
    if node is not None:
        body["nodeName"] = node
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": body,
    }


def klass(name: str = "gpu", *selectors: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {
            "selectors": [
                {"cel": {"expression": s}} for s in (selectors or (f'device.driver == "{DRIVER}"',))
            ]
        },
    }


def exactly(name: str = "req", device_class: str = "gpu", **more: Any) -> dict[str, Any]:
    selectors = more.pop("selectors", ())
    body = {"deviceClassName": device_class, **more}
    if selectors:
        body["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    return {"name": name, "exactly": body}


def claim(name: str, *requests: dict[str, Any], constraints: Any = None) -> dict[str, Any]:
    devices: dict[str, Any] = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = constraints
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"},
        "spec": {"devices": devices},
    }


def allocate(
    claims: list[dict[str, Any]],
    slices: list[dict[str, Any]],
    classes: list[dict[str, Any]] | None = None,
    *,
    in_use: set[tuple[str, str, str]] | None = None,
    node: str = "n1",
    labels: dict[str, str] | None = None,
) -> list[list[tuple[str, str]]] | None:
    parsed_classes = {c.name: c for c in map(parse_device_class, classes or [klass()])}
    allocator = Allocator(
        parsed_classes, [parse_resource_slice(s) for s in slices], in_use or set()
    )
    results = allocator.allocate(node, labels or {}, [parse_resource_claim(c) for c in claims])
    if results is None:
        return None
    return [[(r.request, r.device) for r in per_claim] for per_claim in results]


GPUS = [device("gpu-0", model="a100"), device("gpu-1", model="h100")]


ALLOCATION_CASES = [
    pytest.param(
        [claim("c", exactly())], [slice_("s", GPUS)], [[("req", "gpu-0")]], id="one-device"
    ),
    pytest.param([claim("c", exactly())], [], None, id="no-slices"),
    pytest.param(
        [claim("c", exactly(count=2))],
        [slice_("s", GPUS)],
        [[("req", "gpu-0"), ("req", "gpu-1")]],
        id="count-2",
    ),
    pytest.param([claim("c", exactly(count=3))], [slice_("s", GPUS)], None, id="count-3-of-2"),
    pytest.param(
        [claim("a", exactly()), claim("b", exactly())],
        [slice_("s", GPUS)],
        [[("req", "gpu-0")], [("req", "gpu-1")]],
        id="two-claims-two-devices",
    ),
    pytest.param(
        [claim("a", exactly(count=2)), claim("b", exactly())],
        [slice_("s", GPUS)],
        None,
        id="never-one-device-twice",
    ),
    pytest.param(
        [claim("c", exactly(selectors=['device.attributes["gpu.example.com"].model == "h100"']))],
        [slice_("s", GPUS)],
        [[("req", "gpu-1")]],
        id="request-selector",
    ),
    pytest.param(
        [claim("c", exactly(allocationMode="All"))],
        [slice_("s", GPUS)],
        [[("req", "gpu-0"), ("req", "gpu-1")]],
        id="all",
    ),
    pytest.param(
        [claim("c", exactly(allocationMode="All"))], [slice_("s", [])], None, id="all-needs-one"
    ),
    pytest.param(
        [claim("c", exactly())],
        [slice_("s", GPUS, node="n2")],
        None,
        id="slice-of-another-node",
    ),
    pytest.param(
        [claim("c", exactly())],
        [slice_("s", GPUS, node=None, allNodes=True)],
        [[("req", "gpu-0")]],
        id="all-nodes",
    ),
    pytest.param(
        [claim("c", exactly())],
        [
            slice_(
                "s",
                GPUS,
                node=None,
                nodeSelector={
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r2"]}]}
                    ]
                },
            )
        ],
        None,
        id="node-selector-not-matching",
    ),
    pytest.param(
        [claim("c", exactly())],
        [
            slice_("old", [device("old-0")], generation=1),
            slice_("new", [device("new-0")], generation=2),
        ],
        [[("req", "new-0")]],
        id="newest-generation-only",
    ),
    pytest.param(
        [claim("c", exactly())],
        [slice_("s", GPUS, count=2)],
        None,
        id="incomplete-pool-gives-nothing",
    ),
    pytest.param(
        [claim("c", exactly())],
        [slice_("s", [device("gpu-0")]), slice_("t", [device("gpu-0")])],
        None,
        id="invalid-pool-duplicate-device",
    ),
    pytest.param(
        [
            claim(
                "c",
                exactly(
                    selectors=[
                        'device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0'
                    ]
                ),
            )
        ],
        [slice_("s", [device("small", memory="16Gi"), device("big", memory="80Gi")])],
        [[("req", "big")]],
        id="capacity-quantity",
    ),
    pytest.param(
        [
            claim(
                "c",
                exactly(
                    selectors=[
                        'device.attributes["gpu.example.com"].driverVersion'
                        '.isGreaterThan(semver("1.10.0"))'
                    ]
                ),
            )
        ],
        [
            slice_(
                "s",
                [device("old", driverVersion="1.9.0"), device("new", driverVersion="1.10.1")],
            )
        ],
        [[("req", "new")]],
        id="version-semver",
    ),
    pytest.param(
        [
            claim(
                "c",
                {
                    "name": "req",
                    "firstAvailable": [
                        {
                            "name": "large",
                            "deviceClassName": "gpu",
                            "selectors": [
                                {
                                    "cel": {
                                        "expression": 'device.attributes["gpu.example.com"]'
                                        '.model == "b200"'
                                    }
                                }
                            ],
                        },
                        {"name": "small", "deviceClassName": "gpu", "count": 2},
                    ],
                },
            )
        ],
        [slice_("s", GPUS)],
        [[("req/small", "gpu-0"), ("req/small", "gpu-1")]],
        id="first-available-falls-back",
    ),
    pytest.param(
        # gpu-0 (numa 0) first, but the second device must share its numa node: the
        # search backtracks to gpu-1 and gpu-2 (numa 1).
        [
            claim(
                "c",
                exactly("a"),
                exactly("b"),
                constraints=[{"requests": ["a", "b"], "matchAttribute": "gpu.example.com/numa"}],
            )
        ],
        [slice_("s", [device("gpu-0", numa=0), device("gpu-1", numa=1), device("gpu-2", numa=1)])],
        [[("a", "gpu-1"), ("b", "gpu-2")]],
        id="match-attribute-backtracks",
    ),
    pytest.param(
        [
            claim(
                "c",
                exactly("a"),
                exactly("b"),
                constraints=[{"matchAttribute": "gpu.example.com/numa"}],
            )
        ],
        [slice_("s", [device("gpu-0", numa=0), device("gpu-1", numa=1)])],
        None,
        id="match-attribute-unsatisfiable",
    ),
    pytest.param(
        [claim("c", exactly(), constraints=[{"matchAttribute": "other.com/numa"}])],
        [slice_("s", [device("gpu-0", numa=0)])],
        None,
        id="match-attribute-of-another-domain-missing",
    ),
]


@pytest.mark.parametrize(("claims", "slices", "expected"), ALLOCATION_CASES)
def test_allocation(
    claims: list[dict[str, Any]],
    slices: list[dict[str, Any]],
    expected: list[list[tuple[str, str]]] | None,
) -> None:
    assert allocate(claims, slices) == expected


@pytest.mark.parametrize(("claims", "slices", "expected"), ALLOCATION_CASES)
def test_allocation_through_simulate(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    claims: list[dict[str, Any]],
    slices: list[dict[str, Any]],
    expected: list[list[tuple[str, str]]] | None,
) -> None:
    """The same table as a user runs it: node n1, the class, the slices, the claims and
    a pod naming them, through ``simulate -o json``: the pod lands on n1 with those
    devices (``claims``), or is refused with ``cannot allocate all claims``."""
    n1 = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1"},
        "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}},
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns", "uid": "uid-p"},
        "spec": {
            "schedulerName": "policy-scheduler",
            "containers": [{"name": "c", "image": "i"}],
            "resourceClaims": [
                {"name": f"e{i}", "resourceClaimName": c["metadata"]["name"]}
                for i, c in enumerate(claims)
            ],
        },
    }
    (tmp_path / "c.yaml").write_text(yaml.safe_dump_all([n1, klass(), *slices, *claims, pod]))
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(POLICY))
    capsys.readouterr()
    args = ["simulate", "-f", str(tmp_path / "c.yaml"), "--policy", str(tmp_path / "p.yaml")]
    assert cli.main([*args, "-o", "json"]) == 0
    (decision,) = json.loads(capsys.readouterr().out)["decisions"]
    if expected is None:
        assert decision["node"] is None
        assert decision["message"] == "0/1 nodes are available: 1 cannot allocate all claims."
        return
    assert decision["node"] == "n1"
    got = {
        name: [(req, path.rsplit("/", 1)[1]) for req, paths in per.items() for path in paths]
        for name, per in decision["claims"].items()
    }
    assert got == {c["metadata"]["name"]: e for c, e in zip(claims, expected, strict=True)}


def test_devices_in_use_are_not_given_again() -> None:
    in_use = {(DRIVER, "pool-1", "gpu-0")}
    assert allocate([claim("c", exactly())], [slice_("s", GPUS)], in_use=in_use) == [
        [("req", "gpu-1")]
    ]
    assert allocate([claim("c", exactly(count=2))], [slice_("s", GPUS)], in_use=in_use) is None


def test_all_fails_when_one_of_its_devices_is_in_use() -> None:
    in_use = {(DRIVER, "pool-1", "gpu-0")}
    found = allocate(
        [claim("c", exactly(allocationMode="All"))], [slice_("s", GPUS)], in_use=in_use
    )
    assert found is None


def test_admin_access_may_take_a_device_in_use_but_not_twice_in_one_claim() -> None:
    in_use = {(DRIVER, "pool-1", "gpu-0"), (DRIVER, "pool-1", "gpu-1")}
    admin = exactly(adminAccess=True)
    assert allocate([claim("c", admin)], [slice_("s", GPUS)], in_use=in_use) == [[("req", "gpu-0")]]
    assert (
        allocate(
            [claim("c", {**admin, "exactly": {**admin["exactly"], "count": 3}})],
            [slice_("s", GPUS)],
            in_use=in_use,
        )
        is None
    )


def test_class_selectors_apply_to_every_request_of_the_class() -> None:
    h100 = klass("h100", 'device.attributes["gpu.example.com"].model == "h100"')
    found = allocate([claim("c", exactly(device_class="h100"))], [slice_("s", GPUS)], [h100])
    assert found == [[("req", "gpu-1")]]


@pytest.mark.parametrize(
    ("claims", "slices", "classes", "message"),
    [
        pytest.param(
            [claim("c", exactly(device_class="tpu"))],
            [slice_("s", GPUS)],
            None,
            "request req: device class tpu does not exist",
            id="unknown-class",
        ),
        pytest.param(
            [claim("c", exactly(allocationMode="All"))],
            [slice_("s", GPUS, count=2)],
            None,
            "claim ns/c, request req: asks for all devices, but resource pool "
            "gpu.example.com/pool-1 is currently being updated",
            id="all-incomplete",
        ),
        pytest.param(
            [claim("c", exactly(selectors=["device.attributes["]))],
            [slice_("s", GPUS)],
            None,
            "claim ns/c: selector #0 on device gpu.example.com/pool-1/gpu-0: CEL compile error",
            id="selector-does-not-compile",
        ),
        pytest.param(
            [
                claim(
                    "c", exactly(selectors=['device.attributes["gpu.example.com"].missing == "x"'])
                )
            ],
            [slice_("s", GPUS)],
            None,
            "claim ns/c: selector #0 on device gpu.example.com/pool-1/gpu-0: CEL runtime error",
            id="selector-runtime-error",
        ),
        pytest.param(
            [claim("c", exactly(count=33))],
            [slice_("s", GPUS)],
            None,
            "claim ns/c: number of requested devices 33 exceeds the claim limit of 32",
            id="over-32-devices",
        ),
    ],
)
def test_errors_no_node_can_fix(
    claims: list[dict[str, Any]],
    slices: list[dict[str, Any]],
    classes: list[dict[str, Any]] | None,
    message: str,
) -> None:
    with pytest.raises(AllocationError) as caught:
        allocate(claims, slices, classes)
    assert str(caught.value).startswith(message)


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        pytest.param(
            claim("c", {"name": "req"}),
            'ResourceClaim "c": spec.devices.requests[0]: must set exactly one of '
            "exactly, firstAvailable",
            id="request-without-exactly",
        ),
        pytest.param(
            claim("c", exactly(), exactly()),
            "ResourceClaim \"c\": spec.devices.requests[1].name: duplicate request name 'req'",
            id="duplicate-request",
        ),
        pytest.param(
            claim("c", exactly(count=0)),
            'ResourceClaim "c": spec.devices.requests[0].exactly.count: must be '
            "greater than zero, got 0",
            id="count-zero",
        ),
        pytest.param(
            claim("c", exactly(), constraints=[{"matchAttribute": "numa"}]),
            'ResourceClaim "c": spec.devices.constraints[0].matchAttribute: must be a '
            "fully qualified attribute name (domain/id), got 'numa'",
            id="unqualified-match-attribute",
        ),
    ],
)
def test_malformed_claims_are_refused_naming_the_field(obj: dict[str, Any], message: str) -> None:
    with pytest.raises(ObjectError) as caught:
        parse_resource_claim(obj)
    assert str(caught.value) == message


def test_a_slice_must_say_which_nodes_it_serves() -> None:
    with pytest.raises(ObjectError) as caught:
        parse_resource_slice(slice_("s", GPUS, node=None))
    assert str(caught.value) == (
        'ResourceSlice "s": spec: must set exactly one of nodeName, nodeSelector, allNodes'
    )


def test_a_search_past_its_deadline_raises_and_one_within_it_answers() -> None:
    """The deadline is read at the search's first device step and every 16th after."""
    now = [0.0]

    def ticking() -> float:
        now[0] += 1.0  # one second per reading
        return now[0]

    allocator = Allocator(
        {"gpu": parse_device_class(klass())},
        [parse_resource_slice(slice_("s", [device(f"gpu-{i}") for i in range(8)]))],
        set(),
        clock=ticking,
    )
    claims = [parse_resource_claim(claim("c", exactly(count=4)))]
    with pytest.raises(AllocationTimeout):
        allocator.allocate("n1", {}, claims, timeout=0.5)
    assert allocator.allocate("n1", {}, claims, timeout=5.0) is not None
    assert allocator.allocate("n1", {}, claims, timeout=0) is not None  # 0: no limit
    assert allocator.allocate("n1", {}, claims) is not None
