"""Node health, cordons, host name, host ports, GeneralPredicates and node pressure.

Tables follow upstream's tests (TestPodFitsHost, TestPodFitsHostPorts,
TestRunGeneralPredicates, the pressure and condition predicate tests) with their names.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pytest

from builders import cluster, container, cycle, node, pod
from policy_scheduler.engine.functions import Predicate
from policy_scheduler.engine.predicates import general as g
from policy_scheduler.objects import parse_pod


def run(
    fn: Predicate,
    pod_obj: Mapping[str, Any],
    node_obj: Mapping[str, Any] | None = None,
    placed: Iterable[Mapping[str, Any]] = (),
) -> tuple[str, ...]:
    node_obj = node_obj or node("n")
    state = cluster([node_obj], placed)
    parsed = parse_pod(pod_obj)
    info = state.nodes[node_obj["metadata"]["name"]]
    return tuple(fn(parsed, info, cycle(parsed, state)))


# -- CheckNodeCondition ---------------------------------------------------------------

CONDITIONS = [
    pytest.param({"Ready": "True"}, False, (), id="ready node"),
    pytest.param({"Ready": "False"}, False, (g.ERR_NODE_NOT_READY,), id="not ready"),
    pytest.param({"Ready": "Unknown"}, False, (g.ERR_NODE_NOT_READY,), id="ready unknown"),
    pytest.param({}, False, (), id="no Ready condition at all is not rejected"),
    pytest.param({"MemoryPressure": "True"}, False, (), id="other conditions are not looked at"),
    pytest.param(
        {"Ready": "True", "OutOfDisk": "True"}, False, (g.ERR_NODE_OUT_OF_DISK,), id="out of disk"
    ),
    pytest.param(
        {"Ready": "True", "OutOfDisk": "Unknown"},
        False,
        (g.ERR_NODE_OUT_OF_DISK,),
        id="out of disk unknown",
    ),
    pytest.param({"Ready": "True", "OutOfDisk": "False"}, False, (), id="enough disk"),
    pytest.param(
        {"Ready": "True", "NetworkUnavailable": "True"},
        False,
        (g.ERR_NODE_NETWORK_UNAVAILABLE,),
        id="network unavailable",
    ),
    pytest.param(
        {"Ready": "True", "NetworkUnavailable": "Unknown"},
        False,
        (g.ERR_NODE_NETWORK_UNAVAILABLE,),
        id="network unknown",
    ),
    pytest.param({"Ready": "True", "NetworkUnavailable": "False"}, False, (), id="network up"),
    pytest.param(
        {"NetworkUnavailable": "True", "OutOfDisk": "True", "Ready": "False"},
        False,
        (g.ERR_NODE_NETWORK_UNAVAILABLE, g.ERR_NODE_OUT_OF_DISK, g.ERR_NODE_NOT_READY),
        id="reasons in the order the node reports its conditions",
    ),
    pytest.param({"Ready": "True"}, True, (g.ERR_NODE_UNSCHEDULABLE,), id="cordoned node"),
    pytest.param(
        {"Ready": "False"},
        True,
        (g.ERR_NODE_NOT_READY, g.ERR_NODE_UNSCHEDULABLE),
        id="not ready and cordoned: conditions first",
    ),
]


@pytest.mark.parametrize(("conditions", "unschedulable", "reasons"), CONDITIONS)
def test_check_node_condition(
    conditions: dict[str, str], unschedulable: bool, reasons: tuple[str, ...]
) -> None:
    node_obj = node("n", conditions=conditions, unschedulable=unschedulable)
    assert run(g.check_node_condition, pod("p"), node_obj) == reasons


def test_check_node_condition_ignores_tolerations_of_the_cordon() -> None:
    # v1.13-v1.16: only CheckNodeUnschedulable honours the unschedulable toleration.
    tolerant = pod(
        "p", tolerations=[{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}]
    )
    assert run(g.check_node_condition, tolerant, node("n", unschedulable=True)) == (
        g.ERR_NODE_UNSCHEDULABLE,
    )


# -- CheckNodeUnschedulable -----------------------------------------------------------

UNSCHEDULABLE_KEY = "node.kubernetes.io/unschedulable"

CORDON = [
    pytest.param(False, None, True, id="schedulable node"),
    pytest.param(True, None, False, id="cordoned node, no toleration"),
    pytest.param(
        True,
        [{"key": UNSCHEDULABLE_KEY, "operator": "Exists", "effect": "NoSchedule"}],
        True,
        id="toleration of the unschedulable taint",
    ),
    pytest.param(
        True, [{"key": UNSCHEDULABLE_KEY, "operator": "Exists"}], True, id="effect-less toleration"
    ),
    pytest.param(True, [{"operator": "Exists"}], True, id="tolerate-everything toleration"),
    pytest.param(
        True,
        [{"key": UNSCHEDULABLE_KEY, "operator": "Exists", "effect": "NoExecute"}],
        False,
        id="toleration with another effect",
    ),
    pytest.param(
        True,
        [{"key": UNSCHEDULABLE_KEY, "operator": "Equal", "value": "true"}],
        False,
        id="Equal toleration with a value (the taint has none)",
    ),
    pytest.param(
        True, [{"key": "other", "operator": "Exists"}], False, id="toleration of another key"
    ),
]


@pytest.mark.parametrize(("unschedulable", "tolerations", "fits"), CORDON)
def test_check_node_unschedulable(
    unschedulable: bool, tolerations: list[dict[str, Any]] | None, fits: bool
) -> None:
    reasons = run(
        g.check_node_unschedulable,
        pod("p", tolerations=tolerations),
        node("n", unschedulable=unschedulable),
    )
    assert reasons == (() if fits else (g.ERR_NODE_UNSCHEDULABLE,))


# -- HostName -------------------------------------------------------------------------

HOSTS = [
    pytest.param(None, "foo", True, id="no host specified"),
    pytest.param("foo", "foo", True, id="host matches"),
    pytest.param("bar", "foo", False, id="host doesn't match"),
]


@pytest.mark.parametrize(("wanted", "node_name", "fits"), HOSTS)
def test_host_name(wanted: str | None, node_name: str, fits: bool) -> None:
    reasons = run(g.host_name, pod("p", node_name=wanted), node(node_name))
    assert reasons == (() if fits else (g.ERR_POD_NOT_MATCH_HOST_NAME,))


# -- PodFitsHostPorts -----------------------------------------------------------------


def port_pod(*infos: str, name: str = "p", node_name: str | None = None) -> dict[str, Any]:
    """upstream's newPod: ports as "PROTOCOL/hostIP/port"."""
    ports = []
    for info in infos:
        protocol, ip, port = info.split("/")
        ports.append((int(port), protocol, ip))
    return pod(name, containers=[container(host_ports=ports)], node_name=node_name)


PORTS = [
    pytest.param(pod("p"), [], True, id="nothing running"),
    pytest.param(port_pod("UDP/127.0.0.1/8080"), ["UDP/127.0.0.1/9090"], True, id="other port"),
    pytest.param(port_pod("UDP/127.0.0.1/8080"), ["UDP/127.0.0.1/8080"], False, id="same udp port"),
    pytest.param(port_pod("TCP/127.0.0.1/8080"), ["TCP/127.0.0.1/8080"], False, id="same tcp port"),
    pytest.param(
        port_pod("TCP/127.0.0.1/8080"), ["TCP/127.0.0.2/8080"], True, id="different host ip"
    ),
    pytest.param(
        port_pod("UDP/127.0.0.1/8080"), ["TCP/127.0.0.1/8080"], True, id="different protocol"
    ),
    pytest.param(
        port_pod("UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"),
        ["UDP/127.0.0.1/8080"],
        False,
        id="second udp port conflict",
    ),
    pytest.param(
        port_pod("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"),
        ["TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"],
        False,
        id="first tcp port conflict",
    ),
    pytest.param(
        port_pod("TCP/0.0.0.0/8001"),
        ["TCP/127.0.0.1/8001"],
        False,
        id="first tcp port conflict due to 0.0.0.0 hostIP",
    ),
    pytest.param(
        port_pod("TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"),
        ["TCP/127.0.0.1/8001"],
        False,
        id="TCP hostPort conflict due to 0.0.0.0 hostIP",
    ),
    pytest.param(
        port_pod("TCP/127.0.0.1/8001"),
        ["TCP/0.0.0.0/8001"],
        False,
        id="second tcp port conflict to 0.0.0.0 hostIP",
    ),
    pytest.param(
        port_pod("UDP/127.0.0.1/8001"),
        ["TCP/0.0.0.0/8001"],
        True,
        id="second different protocol",
    ),
    pytest.param(
        port_pod("UDP/127.0.0.1/8001"),
        ["TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001"],
        False,
        id="UDP hostPort conflict due to 0.0.0.0 hostIP",
    ),
    pytest.param(
        port_pod("TCP//8001"), ["TCP/127.0.0.1/8001"], False, id="empty hostIP means 0.0.0.0"
    ),
]


@pytest.mark.parametrize(("pod_obj", "used", "fits"), PORTS)
def test_pod_fits_host_ports(pod_obj: dict[str, Any], used: list[str], fits: bool) -> None:
    placed = [port_pod(*used, name="existing", node_name="n")] if used else []
    reasons = run(g.pod_fits_host_ports, pod_obj, node("n"), placed)
    assert reasons == (() if fits else (g.ERR_POD_NOT_FITS_HOST_PORTS,))


def test_container_port_without_host_port_never_conflicts() -> None:
    wanted = pod("p", containers=[{"name": "c", "image": "x", "ports": [{"containerPort": 80}]}])
    placed = [pod("q", containers=[container(host_ports=[80])], node_name="n")]
    assert run(g.pod_fits_host_ports, wanted, node("n"), placed) == ()


def test_ports_freed_when_the_pod_leaves() -> None:
    placed = port_pod("TCP/0.0.0.0/80", name="existing", node_name="n")
    state = cluster([node("n")], [placed])
    state.remove_pod(placed["metadata"]["uid"])
    parsed = parse_pod(port_pod("TCP/0.0.0.0/80"))
    assert g.pod_fits_host_ports(parsed, state.nodes["n"], cycle(parsed, state)) == ()


# -- GeneralPredicates ------------------------------------------------------------------


def resources_node(name: str = "machine1", **labels: str) -> dict[str, Any]:
    return node(name, allocatable={"cpu": "10m", "memory": "20", "pods": "32"}, labels=labels)


def res_pod(cpu: int, mem: int, name: str = "p", node_name: str | None = None) -> dict[str, Any]:
    return pod(name, requests={"cpu": f"{cpu}m", "memory": str(mem)}, node_name=node_name)


GENERAL = [
    pytest.param(
        pod("p"),
        [res_pod(9, 19, "existing", "machine1")],
        (),
        id="no resources/port/host requested always fits",
    ),
    pytest.param(
        res_pod(8, 10),
        [res_pod(5, 19, "existing", "machine1")],
        ("Insufficient cpu", "Insufficient memory"),
        id="not enough cpu and memory resource",
    ),
    pytest.param(
        pod("p", node_name="machine2"), [], (g.ERR_POD_NOT_MATCH_HOST_NAME,), id="host not match"
    ),
    pytest.param(
        port_pod("TCP//123"),
        [port_pod("TCP//123", name="existing", node_name="machine1")],
        (g.ERR_POD_NOT_FITS_HOST_PORTS,),
        id="hostport conflict",
    ),
    pytest.param(
        pod(
            "p",
            requests={"cpu": "11m"},
            node_name="machine2",
            host_ports=[123],
            node_selector={"disk": "ssd"},
        ),
        [port_pod("TCP//123", name="existing", node_name="machine1")],
        (
            "Insufficient cpu",
            g.ERR_POD_NOT_MATCH_HOST_NAME,
            g.ERR_POD_NOT_FITS_HOST_PORTS,
            g.ERR_NODE_SELECTOR_NOT_MATCH,
        ),
        id="every part fails: resources, host, ports, selector in upstream order",
    ),
    pytest.param(
        pod("p", node_selector={"disk": "ssd"}),
        [],
        (g.ERR_NODE_SELECTOR_NOT_MATCH,),
        id="selector not matched",
    ),
]


@pytest.mark.parametrize(("pod_obj", "placed", "reasons"), GENERAL)
def test_general_predicates(
    pod_obj: dict[str, Any], placed: list[dict[str, Any]], reasons: tuple[str, ...]
) -> None:
    assert run(g.general_predicates, pod_obj, resources_node(), placed) == reasons


# -- node pressure --------------------------------------------------------------------

BEST_EFFORT = pod("p")
BURSTABLE = pod("p", requests={"cpu": "100m"})
LIMITS_ONLY = pod("p", limits={"memory": "1Gi"})
ZERO_REQUESTS = pod("p", requests={"cpu": "0", "memory": "0"})
EXTENDED_ONLY = pod("p", requests={"example.com/gpu": "1"})
INIT_REQUESTS = pod("p", init_containers=[container({"memory": "1Mi"})])

MEMORY = [
    pytest.param(BEST_EFFORT, "True", False, id="best-effort pod on a node under memory pressure"),
    pytest.param(BEST_EFFORT, "False", True, id="best-effort pod, no memory pressure"),
    pytest.param(BEST_EFFORT, "Unknown", True, id="best-effort pod, pressure unknown"),
    pytest.param(BEST_EFFORT, None, True, id="best-effort pod, no pressure condition"),
    pytest.param(BURSTABLE, "True", True, id="non best-effort pod under memory pressure"),
    pytest.param(LIMITS_ONLY, "True", True, id="limits alone make a pod not best-effort"),
    pytest.param(ZERO_REQUESTS, "True", False, id="zero requests are still best-effort"),
    pytest.param(EXTENDED_ONLY, "True", False, id="extended resources do not count for QoS"),
    pytest.param(INIT_REQUESTS, "True", True, id="init container requests count for QoS"),
]


def conditions(kind: str, status: str | None) -> dict[str, str]:
    out = {"Ready": "True"}
    if status is not None:
        out[kind] = status
    return out


@pytest.mark.parametrize(("pod_obj", "status", "fits"), MEMORY)
def test_check_node_memory_pressure(
    pod_obj: dict[str, Any], status: str | None, fits: bool
) -> None:
    node_obj = node("n", conditions=conditions("MemoryPressure", status))
    reasons = run(g.check_node_memory_pressure, pod_obj, node_obj)
    assert reasons == (() if fits else (g.ERR_NODE_UNDER_MEMORY_PRESSURE,))


PRESSURE = [
    pytest.param(
        g.check_node_disk_pressure, "DiskPressure", g.ERR_NODE_UNDER_DISK_PRESSURE, id="disk"
    ),
    pytest.param(g.check_node_pid_pressure, "PIDPressure", g.ERR_NODE_UNDER_PID_PRESSURE, id="pid"),
]


@pytest.mark.parametrize(("fn", "kind", "reason"), PRESSURE)
@pytest.mark.parametrize("pod_obj", [BEST_EFFORT, BURSTABLE], ids=["best-effort", "burstable"])
def test_disk_and_pid_pressure_reject_every_pod(
    fn: Predicate, kind: str, reason: str, pod_obj: dict[str, Any]
) -> None:
    assert run(fn, pod_obj, node("n", conditions=conditions(kind, "True"))) == (reason,)
    assert run(fn, pod_obj, node("n", conditions=conditions(kind, "False"))) == ()
    assert run(fn, pod_obj, node("n", conditions=conditions(kind, "Unknown"))) == ()
    assert run(fn, pod_obj, node("n", conditions=conditions(kind, None))) == ()


def test_registered_under_legacy_names() -> None:
    from policy_scheduler import names
    from policy_scheduler.engine.functions import REGISTRY

    expected = {
        names.CHECK_NODE_CONDITION: g.check_node_condition,
        names.CHECK_NODE_UNSCHEDULABLE: g.check_node_unschedulable,
        names.HOST_NAME: g.host_name,
        names.POD_FITS_HOST_PORTS: g.pod_fits_host_ports,
        names.MATCH_NODE_SELECTOR: g.match_node_selector,
        names.POD_FITS_RESOURCES: g.pod_fits_resources,
        names.GENERAL_PREDICATES: g.general_predicates,
        names.CHECK_NODE_MEMORY_PRESSURE: g.check_node_memory_pressure,
        names.CHECK_NODE_DISK_PRESSURE: g.check_node_disk_pressure,
        names.CHECK_NODE_PID_PRESSURE: g.check_node_pid_pressure,
    }
    for name, fn in expected.items():
        assert REGISTRY.predicates[name] is fn
    # The alias is the compiler's business, not a second registration.
    assert "PodFitsPorts" not in REGISTRY.predicates
