"""PodFitsResources: upstream's TestPodFitsResources tables, plus the edges around them.

The node of the main table is upstream's: allocatable 10m cpu, 20 bytes of memory, 32
pods, 5 ``example.com/aaa``, 20 bytes of ephemeral storage and 5 ``hugepages-2Mi``. A
node's usage comes from one placed pod, as upstream's ``NewNodeInfo(newResourcePod(...))``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from builders import cluster, container, cycle, node, pod
from policy_scheduler.engine.predicates.general import pod_fits_resources
from policy_scheduler.objects import parse_pod

EXT_A = "example.com/aaa"
EXT_B = "example.com/bbb"
K8S_A = "kubernetes.io/something"
K8S_B = "subdomain.kubernetes.io/something"
HUGE_A = "hugepages-2Mi"


def res(cpu: int = 0, mem: int = 0, **extra: Any) -> dict[str, Any]:
    """Requests as upstream's Resource.ResourceList(): cpu and memory always mentioned."""
    out: dict[str, Any] = {"cpu": f"{cpu}m", "memory": str(mem)}
    out.update(extra)
    return out


def scalar(name: str, amount: int, cpu: int = 0, mem: int = 0) -> dict[str, Any]:
    return {**res(cpu, mem), name: str(amount)}


def resource_pod(
    *containers: Mapping[str, Any],
    init: Sequence[Mapping[str, Any]] = (),
    overhead: Mapping[str, Any] | None = None,
    node_name: str | None = None,
    name: str = "p",
) -> dict[str, Any]:
    return pod(
        name,
        containers=[container(dict(c)) for c in containers],
        init_containers=[container(dict(c)) for c in init] or None,
        overhead=overhead,
        node_name=node_name,
    )


def upstream_node(**overrides: Any) -> dict[str, Any]:
    alloc = {
        "cpu": "10m",
        "memory": "20",
        "pods": "32",
        EXT_A: "5",
        "ephemeral-storage": "20",
        HUGE_A: "5",
    }
    alloc.update(overrides)
    return node("n", allocatable=alloc)


def fit(
    pod_obj: dict[str, Any],
    used: Sequence[Mapping[str, Any]] | None,
    node_obj: dict[str, Any] | None = None,
    **settings: Any,
) -> tuple[str, ...]:
    """Reasons for ``pod_obj`` on a node whose usage is one pod with ``used`` containers."""
    placed = []
    if used is not None:
        placed.append(resource_pod(*used, node_name="n", name="existing"))
    state = cluster([node_obj or upstream_node()], placed)
    parsed = parse_pod(pod_obj)
    return tuple(pod_fits_resources(parsed, state.nodes["n"], cycle(parsed, state, **settings)))


EMPTY_POD = pod("p", containers=[container()])

ENOUGH_PODS = [
    pytest.param(EMPTY_POD, [res(10, 20)], (), id="no resources requested always fits"),
    pytest.param(
        resource_pod(res(1, 1)),
        [res(10, 20)],
        ("Insufficient cpu", "Insufficient memory"),
        id="too many resources fails",
    ),
    pytest.param(
        resource_pod(res(1, 1), init=[res(3, 1)]),
        [res(8, 19)],
        ("Insufficient cpu",),
        id="too many resources fails due to init container cpu",
    ),
    pytest.param(
        resource_pod(res(1, 1), init=[res(3, 1), res(2, 1)]),
        [res(8, 19)],
        ("Insufficient cpu",),
        id="too many resources fails due to highest init container cpu",
    ),
    pytest.param(
        resource_pod(res(1, 1), init=[res(1, 3)]),
        [res(9, 19)],
        ("Insufficient memory",),
        id="too many resources fails due to init container memory",
    ),
    pytest.param(
        resource_pod(res(1, 1), init=[res(1, 3), res(1, 2)]),
        [res(9, 19)],
        ("Insufficient memory",),
        id="too many resources fails due to highest init container memory",
    ),
    pytest.param(
        resource_pod(res(1, 1), init=[res(1, 1)]),
        [res(9, 19)],
        (),
        id="init container fits because it's the max, not sum",
    ),
    pytest.param(
        resource_pod(res(1, 1), init=[res(1, 1), res(1, 1)]),
        [res(9, 19)],
        (),
        id="multiple init containers fit because it's the max, not sum",
    ),
    pytest.param(resource_pod(res(1, 1)), [res(5, 5)], (), id="both resources fit"),
    pytest.param(
        resource_pod(res(2, 1)), [res(9, 5)], ("Insufficient cpu",), id="one resource memory fits"
    ),
    pytest.param(
        resource_pod(res(1, 2)), [res(5, 19)], ("Insufficient memory",), id="one resource cpu fits"
    ),
    pytest.param(resource_pod(res(5, 1)), [res(5, 19)], (), id="equal edge case"),
    pytest.param(
        resource_pod(res(4, 1), init=[res(5, 1)]),
        [res(5, 19)],
        (),
        id="equal edge case for init container",
    ),
    pytest.param(resource_pod(scalar(EXT_A, 1)), [res()], (), id="extended resource fits"),
    pytest.param(
        resource_pod(res(), init=[scalar(EXT_A, 1)]),
        [res()],
        (),
        id="extended resource fits for init container",
    ),
    pytest.param(
        resource_pod(scalar(EXT_A, 10, 1, 1)),
        [scalar(EXT_A, 0)],
        (f"Insufficient {EXT_A}",),
        id="extended resource capacity enforced",
    ),
    pytest.param(
        resource_pod(res(), init=[scalar(EXT_A, 10, 1, 1)]),
        [scalar(EXT_A, 0)],
        (f"Insufficient {EXT_A}",),
        id="extended resource capacity enforced for init container",
    ),
    pytest.param(
        resource_pod(scalar(EXT_A, 1, 1, 1)),
        [scalar(EXT_A, 5)],
        (f"Insufficient {EXT_A}",),
        id="extended resource allocatable enforced",
    ),
    pytest.param(
        resource_pod(res(), init=[scalar(EXT_A, 1, 1, 1)]),
        [scalar(EXT_A, 5)],
        (f"Insufficient {EXT_A}",),
        id="extended resource allocatable enforced for init container",
    ),
    pytest.param(
        resource_pod(scalar(EXT_A, 3, 1, 1), scalar(EXT_A, 3, 1, 1)),
        [scalar(EXT_A, 2)],
        (f"Insufficient {EXT_A}",),
        id="extended resource allocatable enforced for multiple containers",
    ),
    pytest.param(
        resource_pod(res(), init=[scalar(EXT_A, 3, 1, 1), scalar(EXT_A, 3, 1, 1)]),
        [scalar(EXT_A, 2)],
        (),
        id="extended resource allocatable admits multiple init containers",
    ),
    pytest.param(
        resource_pod(res(), init=[scalar(EXT_A, 6, 1, 1), scalar(EXT_A, 3, 1, 1)]),
        [scalar(EXT_A, 2)],
        (f"Insufficient {EXT_A}",),
        id="extended resource allocatable enforced for multiple init containers",
    ),
    pytest.param(
        resource_pod(scalar(EXT_B, 1, 1, 1)),
        [res()],
        (f"Insufficient {EXT_B}",),
        id="extended resource allocatable enforced for unknown resource",
    ),
    pytest.param(
        resource_pod(res(), init=[scalar(EXT_B, 1, 1, 1)]),
        [res()],
        (f"Insufficient {EXT_B}",),
        id="extended resource allocatable enforced for unknown resource for init container",
    ),
    pytest.param(
        resource_pod(scalar(K8S_A, 10, 1, 1)),
        [res()],
        (f"Insufficient {K8S_A}",),
        id="kubernetes.io resource capacity enforced",
    ),
    pytest.param(
        resource_pod(res(), init=[scalar(K8S_B, 10, 1, 1)]),
        [res()],
        (f"Insufficient {K8S_B}",),
        id="kubernetes.io resource capacity enforced for init container",
    ),
    pytest.param(
        resource_pod(scalar(HUGE_A, 10, 1, 1)),
        [scalar(HUGE_A, 0)],
        (f"Insufficient {HUGE_A}",),
        id="hugepages resource capacity enforced",
    ),
    pytest.param(
        resource_pod(res(), init=[scalar(HUGE_A, 10, 1, 1)]),
        [scalar(HUGE_A, 0)],
        (f"Insufficient {HUGE_A}",),
        id="hugepages resource capacity enforced for init container",
    ),
    pytest.param(
        resource_pod(scalar(HUGE_A, 3, 1, 1), scalar(HUGE_A, 3, 1, 1)),
        [scalar(HUGE_A, 2)],
        (f"Insufficient {HUGE_A}",),
        id="hugepages resource allocatable enforced for multiple containers",
    ),
    pytest.param(
        resource_pod(res(1, 1), overhead={"cpu": "3m", "memory": "13"}),
        [res(5, 5)],
        (),
        id="resources + pod overhead fits",
    ),
    pytest.param(
        resource_pod(res(1, 1), overhead={"cpu": "1m", "memory": "15"}),
        [res(5, 5)],
        ("Insufficient memory",),
        id="requests + overhead does not fit for memory",
    ),
]


@pytest.mark.parametrize(("pod_obj", "used", "reasons"), ENOUGH_PODS)
def test_enough_pods(pod_obj: dict[str, Any], used: list[Any], reasons: tuple[str, ...]) -> None:
    assert fit(pod_obj, used) == reasons


def test_ignored_extended_resource_is_skipped() -> None:
    wanted = resource_pod(scalar(EXT_B, 1, 1, 1))
    assert fit(wanted, [res()], ignored_resources=frozenset({EXT_B})) == ()


def test_only_extended_resources_can_be_ignored() -> None:
    # Upstream skips an ignored name only if it is an extended resource.
    wanted = resource_pod(scalar(K8S_A, 10, 1, 1))
    reasons = fit(wanted, [res()], ignored_resources=frozenset({K8S_A}))
    assert reasons == (f"Insufficient {K8S_A}",)


def one_pod_node() -> dict[str, Any]:
    return node("n", allocatable={"cpu": "10m", "memory": "20", "pods": "1"})


NOT_ENOUGH_PODS = [
    pytest.param(
        EMPTY_POD,
        [res(10, 20)],
        id="even without specified resources predicate fails when there's no space for "
        "additional pod",
    ),
    pytest.param(
        resource_pod(res(1, 1)),
        [res(5, 5)],
        id="even if both resources fit predicate fails when there's no space for additional pod",
    ),
    pytest.param(
        resource_pod(res(5, 1)),
        [res(5, 19)],
        id="even for equal edge case predicate fails when there's no space for additional pod",
    ),
    pytest.param(
        resource_pod(res(5, 1), init=[res(5, 1)]),
        [res(5, 19)],
        id="even for equal edge case predicate fails when there's no space for additional pod "
        "due to init container",
    ),
]


@pytest.mark.parametrize(("pod_obj", "used"), NOT_ENOUGH_PODS)
def test_not_enough_pods(pod_obj: dict[str, Any], used: list[Any]) -> None:
    assert fit(pod_obj, used, one_pod_node()) == ("Insufficient pods",)


STORAGE = [
    pytest.param(
        resource_pod(res(1, 1)),
        [res(10, 10)],
        ("Insufficient cpu",),
        id="due to container scratch disk",
    ),
    pytest.param(resource_pod(res(1, 1)), [res(2, 10)], (), id="pod fit"),
    pytest.param(
        resource_pod({"ephemeral-storage": "25"}),
        [res(2, 2)],
        ("Insufficient ephemeral-storage",),
        id="storage ephemeral local storage request exceeds allocatable",
    ),
    pytest.param(resource_pod({"ephemeral-storage": "10"}), [res(2, 2)], (), id="pod fits"),
]


@pytest.mark.parametrize(("pod_obj", "used", "reasons"), STORAGE)
def test_ephemeral_storage(
    pod_obj: dict[str, Any], used: list[Any], reasons: tuple[str, ...]
) -> None:
    assert fit(pod_obj, used) == reasons


EDGES = [
    pytest.param(
        resource_pod(scalar(EXT_B, 1, 100, 100), {"ephemeral-storage": "30", HUGE_A: "9"}),
        None,
        one_pod_node(),
        (
            "Insufficient cpu",
            "Insufficient memory",
            "Insufficient ephemeral-storage",
            f"Insufficient {EXT_B}",
            f"Insufficient {HUGE_A}",
        ),
        id="order: cpu, memory, ephemeral-storage, then scalars by name",
    ),
    pytest.param(
        resource_pod(res(100, 100)),
        [res()],
        one_pod_node(),
        ("Insufficient pods", "Insufficient cpu", "Insufficient memory"),
        id="pods first, then the other resources",
    ),
    pytest.param(
        resource_pod(scalar(EXT_B, 2), scalar(EXT_A, 9)),
        None,
        None,
        (f"Insufficient {EXT_A}", f"Insufficient {EXT_B}"),
        id="scalar reasons sorted by name, once each",
    ),
    pytest.param(
        resource_pod(scalar(EXT_A, 3), scalar(EXT_A, 3)),
        None,
        None,
        (f"Insufficient {EXT_A}",),
        id="a resource two containers want is one reason",
    ),
    pytest.param(
        EMPTY_POD,
        None,
        node("n", allocatable={}),
        ("Insufficient pods",),
        id="zero-capacity node: an empty pod still needs a pod slot",
    ),
    pytest.param(
        resource_pod(res(1, 0)),
        None,
        node("n", allocatable={}),
        ("Insufficient pods", "Insufficient cpu"),
        id="zero-capacity node: every requested resource is insufficient",
    ),
    pytest.param(
        resource_pod({"cpu": "0", "memory": "0"}),
        [res(10, 20)],
        None,
        (),
        id="explicit zero requests fit a full node",
    ),
    pytest.param(
        pod("p", containers=[container()]),
        [res(10, 20)],
        None,
        (),
        id="absent requests fit a full node",
    ),
    pytest.param(
        resource_pod({"cpu": "1m"}),
        [res(9, 20)],
        None,
        (),
        id="absent memory request is not the 200Mi priority default",
    ),
    pytest.param(
        resource_pod(res(1, 1), init=[{"ephemeral-storage": "21"}]),
        None,
        None,
        ("Insufficient ephemeral-storage",),
        id="init container ephemeral storage counts",
    ),
    pytest.param(
        resource_pod(res(1, 1), overhead={"cpu": "10m"}),
        None,
        None,
        ("Insufficient cpu",),
        id="overhead alone can exceed allocatable",
    ),
]


@pytest.mark.parametrize(("pod_obj", "used", "node_obj", "reasons"), EDGES)
def test_edges(
    pod_obj: dict[str, Any],
    used: list[Any] | None,
    node_obj: dict[str, Any] | None,
    reasons: tuple[str, ...],
) -> None:
    assert fit(pod_obj, used, node_obj) == reasons


def test_existing_pods_count_containers_and_overhead_not_init_containers() -> None:
    # What a placed pod uses is its containers plus overhead: its init containers are done.
    existing = resource_pod(res(2, 2), init=[res(9, 9)], overhead={"cpu": "1m"}, node_name="n")
    state = cluster([upstream_node()], [existing])
    fits = parse_pod(resource_pod(res(7, 18)))
    too_big = parse_pod(resource_pod(res(8, 18)))
    info = state.nodes["n"]
    assert pod_fits_resources(fits, info, cycle(fits, state)) == ()
    assert pod_fits_resources(too_big, info, cycle(too_big, state)) == ("Insufficient cpu",)


def test_zero_scalar_request_still_checks_overcommitted_node() -> None:
    # Upstream stops early only when the request map is empty: a scalar mentioned with
    # amount 0 goes on to compare cpu, which an overcommitted node then fails.
    over = [res(12, 5)]
    assert fit(EMPTY_POD, over) == ()
    assert fit(resource_pod({EXT_A: "0"}), over) == ("Insufficient cpu",)
