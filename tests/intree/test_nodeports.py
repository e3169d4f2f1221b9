"""NodePorts: kube-scheduler v1.30's TestNodePorts table (PreFilter Skip, Filter).

Ported from pkg/scheduler/framework/plugins/nodeports/node_ports_test.go. Later versions
also count a sidecar init container's host ports; v1.30 counts the containers' only
(the last case).
"""

from __future__ import annotations

from typing import Any

import pytest

from intree.cases import FilterCase, check_filter, st_node, st_pod, unschedulable
from policy_scheduler.engine.interface import Status

ERR = "node(s) didn't have free ports for the requested pod ports"


def ports(*specs: str) -> list[dict[str, Any]]:
    """ "PROTOCOL/hostIP/hostPort" each, as upstream's newPod."""
    out = []
    for spec in specs:
        protocol, ip, port = spec.split("/")
        out.append(
            {"containerPort": int(port), "hostPort": int(port), "protocol": protocol, "hostIP": ip}
        )
    return out


def port_pod(*specs: str, node: str | None = None) -> dict[str, Any]:
    pod = st_pod({}, node=node)
    pod["spec"]["containers"][0]["ports"] = ports(*specs)
    return pod


def case(
    case_id: str, pod: dict[str, Any], used: tuple[str, ...], conflict: bool, *, skip: bool = False
) -> Any:
    placed = [port_pod(*used, node="m1")] if used else []
    return pytest.param(
        FilterCase(
            "NodePorts",
            pod,
            [st_node("m1")],
            {"m1": unschedulable(ERR)} if conflict else {},
            placed=placed,
            pre_filter=Status.skip() if skip else None,
        ),
        id=case_id,
    )


def sidecar_port_pod() -> dict[str, Any]:
    pod = st_pod()
    pod["spec"]["initContainers"] = [
        {
            "name": "proxy",
            "image": "proxy",
            "restartPolicy": "Always",
            "ports": ports("TCP/0.0.0.0/8001"),
        }
    ]
    return pod


CASES = [
    case("skip filter", st_pod(), (), False, skip=True),
    case("other port", port_pod("UDP/127.0.0.1/8080"), ("UDP/127.0.0.1/9090",), False),
    case("same udp port", port_pod("UDP/127.0.0.1/8080"), ("UDP/127.0.0.1/8080",), True),
    case("same tcp port", port_pod("TCP/127.0.0.1/8080"), ("TCP/127.0.0.1/8080",), True),
    case("different host ip", port_pod("TCP/127.0.0.1/8080"), ("TCP/127.0.0.2/8080",), False),
    case("different protocol", port_pod("UDP/127.0.0.1/8080"), ("TCP/127.0.0.1/8080",), False),
    case(
        "second udp port conflict",
        port_pod("UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"),
        ("UDP/127.0.0.1/8080",),
        True,
    ),
    case(
        "first tcp port conflict",
        port_pod("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"),
        ("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"),
        True,
    ),
    case(
        "first tcp port conflict due to 0.0.0.0 hostIP",
        port_pod("TCP/0.0.0.0/8001"),
        ("TCP/127.0.0.1/8001",),
        True,
    ),
    case(
        "TCP hostPort conflict due to 0.0.0.0 hostIP",
        port_pod("TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"),
        ("TCP/127.0.0.1/8001",),
        True,
    ),
    case(
        "second tcp port conflict to 0.0.0.0 hostIP",
        port_pod("TCP/127.0.0.1/8001"),
        ("TCP/0.0.0.0/8001",),
        True,
    ),
    case("second different protocol", port_pod("UDP/127.0.0.1/8001"), ("TCP/0.0.0.0/8001",), False),
    case(
        "UDP hostPort conflict due to 0.0.0.0 hostIP",
        port_pod("UDP/127.0.0.1/8001"),
        ("TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001"),
        True,
    ),
    case(
        "v1.30 counts no init container's host port",
        sidecar_port_pod(),
        ("TCP/0.0.0.0/8001",),
        False,
        skip=True,
    ),
]


@pytest.mark.parametrize("case", CASES)
def test_node_ports(case: FilterCase) -> None:
    check_filter(case)
