"""NodeResourcesFit and NodeResourcesBalancedAllocation: kube-scheduler v1.30's tables.

Ported from pkg/scheduler/framework/plugins/noderesources: fit_test.go (TestEnoughRequests,
TestNotEnoughRequests, TestStorageRequests, TestRestartableInitContainers, TestFitScore),
least_allocated_test.go, most_allocated_test.go, requested_to_capacity_ratio_test.go
(the strategy, TestBrokenLinearFunction, the single/multiple extended resource bin
packing) and balanced_allocation_test.go (its non-DRA cases; later versions skip a
best-effort pod in PreScore, v1.30 scores it). Quantities are upstream's: "4000" cpu is
4000 cores. Then cases of our own for what v1.30 counts differently from the legacy
predicates and priorities: init containers and sidecars on placed pods, the defaults of
the non-zero requests, an overcommitted node taking a pod that does not ask for the
overcommitted resource.
"""

from __future__ import annotations

from typing import Any

import pytest

from builders import cluster
from intree.cases import (
    FilterCase,
    ScoreCase,
    check_filter,
    check_score,
    resources,
    st_node,
    st_pod,
    unschedulable,
)
from policy_scheduler.engine.functions import CycleState, PolicySettings
from policy_scheduler.engine.intree.noderesources import (
    ERR_TOO_MANY_PODS,
    FitFilter,
    NodeResourcesFit,
    ResourceScorer,
    balanced_score,
)
from policy_scheduler.engine.priorities.resources import ShapePoint, broken_linear
from policy_scheduler.objects import parse_pod

FIT = "NodeResourcesFit"
BALANCED = "NodeResourcesBalancedAllocation"

EXT_A = "example.com/aaa"
EXT_B = "example.com/bbb"
K8S_A = "kubernetes.io/something"
K8S_B = "subdomain.kubernetes.io/something"
HUGE_A = "hugepages-2Mi"


def cpu_mem(milli_cpu: int, memory: int, **scalar: int) -> dict[str, str]:
    names = {"A": EXT_A, "B": EXT_B, "K8S_A": K8S_A, "K8S_B": K8S_B, "HUGE": HUGE_A}
    return resources(milli_cpu, memory, scalar={names[k]: v for k, v in scalar.items()})


def allocatable(
    milli_cpu: int, memory: int, pods: int, ext_a: int, storage: int, huge: int
) -> dict[str, str]:
    """makeAllocatableResources."""
    return {
        "cpu": f"{milli_cpu}m",
        "memory": str(memory),
        "pods": str(pods),
        EXT_A: str(ext_a),
        "ephemeral-storage": str(storage),
        HUGE_A: str(huge),
    }


ENOUGH = allocatable(10, 20, 32, 5, 20, 5)
ONE_POD = allocatable(10, 20, 1, 0, 0, 0)


def fit_filter(
    case_id: str,
    pod: dict[str, Any],
    used: dict[str, str] | None,
    *reasons: str,
    args: dict[str, Any] | None = None,
    node: dict[str, str] = ENOUGH,
    placed: list[dict[str, Any]] | None = None,
) -> Any:
    """A TestEnoughRequests-style case: one node ``node`` and one placed pod using ``used``
    (None: no pod), or the ``placed`` pods."""
    if placed is None:
        placed = [st_pod(used, node="node")] if used is not None else []
    return pytest.param(
        FilterCase(
            FIT,
            pod,
            [st_node("node", node)],
            {"node": unschedulable(*reasons)} if reasons else {},
            placed=placed,
            args=args,
        ),
        id=case_id,
    )


def init_pod(requests: list[dict[str, str]], *init: dict[str, str], **kw: Any) -> dict[str, Any]:
    return st_pod(*requests, init=list(init), **kw)


CPU, MEMORY, EPHEMERAL = "Insufficient cpu", "Insufficient memory", "Insufficient ephemeral-storage"


def short(name: str) -> str:
    return f"Insufficient {name}"


ENOUGH_REQUESTS = [
    fit_filter("no resources requested always fits", st_pod(), cpu_mem(10, 20)),
    fit_filter("too many resources fails", st_pod(cpu_mem(1, 1)), cpu_mem(10, 20), CPU, MEMORY),
    fit_filter(
        "too many resources fails due to init container cpu",
        init_pod([cpu_mem(1, 1)], cpu_mem(3, 1)),
        cpu_mem(8, 19),
        CPU,
    ),
    fit_filter(
        "too many resources fails due to highest init container cpu",
        init_pod([cpu_mem(1, 1)], cpu_mem(3, 1), cpu_mem(2, 1)),
        cpu_mem(8, 19),
        CPU,
    ),
    fit_filter(
        "too many resources fails due to init container memory",
        init_pod([cpu_mem(1, 1)], cpu_mem(1, 3)),
        cpu_mem(9, 19),
        MEMORY,
    ),
    fit_filter(
        "too many resources fails due to highest init container memory",
        init_pod([cpu_mem(1, 1)], cpu_mem(1, 3), cpu_mem(1, 2)),
        cpu_mem(9, 19),
        MEMORY,
    ),
    fit_filter(
        "init container fits because it's the max, not sum, of containers and init containers",
        init_pod([cpu_mem(1, 1)], cpu_mem(1, 1)),
        cpu_mem(9, 19),
    ),
    fit_filter(
        "multiple init containers fit because it's the max, not sum, of containers and init "
        "containers",
        init_pod([cpu_mem(1, 1)], cpu_mem(1, 1), cpu_mem(1, 1)),
        cpu_mem(9, 19),
    ),
    fit_filter("both resources fit", st_pod(cpu_mem(1, 1)), cpu_mem(5, 5)),
    fit_filter("one resource memory fits", st_pod(cpu_mem(2, 1)), cpu_mem(9, 5), CPU),
    fit_filter("one resource cpu fits", st_pod(cpu_mem(1, 2)), cpu_mem(5, 19), MEMORY),
    fit_filter("equal edge case", st_pod(cpu_mem(5, 1)), cpu_mem(5, 19)),
    fit_filter(
        "equal edge case for init container",
        init_pod([cpu_mem(4, 1)], cpu_mem(5, 1)),
        cpu_mem(5, 19),
    ),
    fit_filter("extended resource fits", st_pod(cpu_mem(0, 0, A=1)), cpu_mem(0, 0)),
    fit_filter(
        "extended resource fits for init container",
        init_pod([], cpu_mem(0, 0, A=1)),
        cpu_mem(0, 0),
    ),
    fit_filter(
        "extended resource capacity enforced",
        st_pod(cpu_mem(1, 1, A=10)),
        cpu_mem(0, 0, A=0),
        short(EXT_A),
    ),
    fit_filter(
        "extended resource capacity enforced for init container",
        init_pod([], cpu_mem(1, 1, A=10)),
        cpu_mem(0, 0, A=0),
        short(EXT_A),
    ),
    fit_filter(
        "extended resource allocatable enforced",
        st_pod(cpu_mem(1, 1, A=1)),
        cpu_mem(0, 0, A=5),
        short(EXT_A),
    ),
    fit_filter(
        "extended resource allocatable enforced for init container",
        init_pod([], cpu_mem(1, 1, A=1)),
        cpu_mem(0, 0, A=5),
        short(EXT_A),
    ),
    fit_filter(
        "extended resource allocatable enforced for multiple containers",
        st_pod(cpu_mem(1, 1, A=3), cpu_mem(1, 1, A=3)),
        cpu_mem(0, 0, A=2),
        short(EXT_A),
    ),
    fit_filter(
        "extended resource allocatable admits multiple init containers",
        init_pod([], cpu_mem(1, 1, A=3), cpu_mem(1, 1, A=3)),
        cpu_mem(0, 0, A=2),
    ),
    fit_filter(
        "extended resource allocatable enforced for multiple init containers",
        init_pod([], cpu_mem(1, 1, A=6), cpu_mem(1, 1, A=3)),
        cpu_mem(0, 0, A=2),
        short(EXT_A),
    ),
    fit_filter(
        "extended resource allocatable enforced for unknown resource",
        st_pod(cpu_mem(1, 1, B=1)),
        cpu_mem(0, 0),
        short(EXT_B),
    ),
    fit_filter(
        "extended resource allocatable enforced for unknown resource for init container",
        init_pod([], cpu_mem(1, 1, B=1)),
        cpu_mem(0, 0),
        short(EXT_B),
    ),
    fit_filter(
        "kubernetes.io resource capacity enforced",
        st_pod(cpu_mem(1, 1, K8S_A=10)),
        cpu_mem(0, 0),
        short(K8S_A),
    ),
    fit_filter(
        "kubernetes.io resource capacity enforced for init container",
        init_pod([], cpu_mem(1, 1, K8S_B=10)),
        cpu_mem(0, 0),
        short(K8S_B),
    ),
    fit_filter(
        "hugepages resource capacity enforced",
        st_pod(cpu_mem(1, 1, HUGE=10)),
        cpu_mem(0, 0, HUGE=0),
        short(HUGE_A),
    ),
    fit_filter(
        "hugepages resource capacity enforced for init container",
        init_pod([], cpu_mem(1, 1, HUGE=10)),
        cpu_mem(0, 0, HUGE=0),
        short(HUGE_A),
    ),
    fit_filter(
        "hugepages resource allocatable enforced for multiple containers",
        st_pod(cpu_mem(1, 1, HUGE=3), cpu_mem(1, 1, HUGE=3)),
        cpu_mem(0, 0, HUGE=2),
        short(HUGE_A),
    ),
    fit_filter(
        "skip checking ignored extended resource",
        st_pod(cpu_mem(1, 1, B=1)),
        cpu_mem(0, 0),
        args={"ignoredResources": [EXT_B]},
    ),
    fit_filter(
        "resources + pod overhead fits",
        st_pod(cpu_mem(1, 1), overhead={"cpu": "3m", "memory": "13"}),
        cpu_mem(5, 5),
    ),
    fit_filter(
        "requests + overhead does not fit for memory",
        st_pod(cpu_mem(1, 1), overhead={"cpu": "1m", "memory": "15"}),
        cpu_mem(5, 5),
        MEMORY,
    ),
    fit_filter(
        "skip checking ignored extended resource via resource groups",
        st_pod(cpu_mem(1, 1, B=1, K8S_A=1)),
        cpu_mem(0, 0),
        short(K8S_A),
        args={"ignoredResourceGroups": ["example.com"]},
    ),
    fit_filter(
        "skip checking extended resource request with quantity zero via resource groups",
        st_pod(cpu_mem(1, 1, A=0)),
        cpu_mem(0, 0, A=6),
    ),
    fit_filter(
        "skip checking resource request with quantity zero",
        st_pod(cpu_mem(0, 0, A=1)),
        cpu_mem(20, 30, A=1),
    ),
]

NOT_ENOUGH_REQUESTS = [
    fit_filter(
        "even without specified resources, predicate fails when there's no space for "
        "additional pod",
        st_pod(),
        cpu_mem(10, 20),
        ERR_TOO_MANY_PODS,
        node=ONE_POD,
    ),
    fit_filter(
        "even if both resources fit, predicate fails when there's no space for additional pod",
        st_pod(cpu_mem(1, 1)),
        cpu_mem(5, 5),
        ERR_TOO_MANY_PODS,
        node=ONE_POD,
    ),
    fit_filter(
        "even for equal edge case, predicate fails when there's no space for additional pod",
        st_pod(cpu_mem(5, 1)),
        cpu_mem(5, 19),
        ERR_TOO_MANY_PODS,
        node=ONE_POD,
    ),
    fit_filter(
        "even for equal edge case, predicate fails when there's no space for additional pod "
        "due to init container",
        init_pod([cpu_mem(5, 1)], cpu_mem(5, 1)),
        cpu_mem(5, 19),
        ERR_TOO_MANY_PODS,
        node=ONE_POD,
    ),
]

STORAGE_REQUESTS = [
    fit_filter("empty storage requested, and pod fits", st_pod(cpu_mem(1, 1)), cpu_mem(2, 10)),
    fit_filter(
        "storage ephemeral local storage request exceeds allocatable",
        st_pod(resources(ephemeral=25)),
        cpu_mem(2, 2),
        EPHEMERAL,
    ),
    fit_filter(
        "ephemeral local storage is sufficient",
        st_pod(resources(ephemeral=5)),
        resources(2, 2, ephemeral=10),
    ),
    fit_filter("pod fits", st_pod(resources(ephemeral=10)), cpu_mem(2, 2)),
]


def sidecar(requests: dict[str, str] | None = None) -> dict[str, Any]:
    c: dict[str, Any] = {"name": "sidecar", "image": "proxy", "restartPolicy": "Always"}
    if requests is not None:
        c["resources"] = {"requests": requests}
    return c


def with_init(pod: dict[str, Any], *containers: dict[str, Any]) -> dict[str, Any]:
    pod["spec"]["initContainers"] = list(containers)
    return pod


OUR_FILTER_CASES = [
    # TestRestartableInitContainers: SidecarContainers is on in v1.30.
    fit_filter(
        "allow pod with restartable init containers if sidecar containers is enabled",
        with_init(st_pod({}), sidecar()),
        None,
        node=allocatable(0, 0, 1, 0, 0, 0),
    ),
    fit_filter(
        "a sidecar's request adds to the containers'",
        with_init(st_pod(cpu_mem(5, 1)), sidecar(cpu_mem(5, 1))),
        cpu_mem(1, 1),
        CPU,
    ),
    fit_filter(
        "an init container runs beside the sidecars started before it",
        with_init(
            st_pod(cpu_mem(1, 1)),
            sidecar(cpu_mem(4, 1)),
            {"name": "setup", "image": "img", "resources": {"requests": cpu_mem(6, 1)}},
        ),
        cpu_mem(1, 1),
        CPU,
    ),
    # The placed pod's container asks 1m, its init container 8m: v1.30 counts 8m on the
    # node (the legacy sums count 1m), and 10m - 8m < 3m.
    fit_filter(
        "a placed pod's init container counts on its node",
        st_pod(cpu_mem(3, 1)),
        None,
        CPU,
        placed=[init_pod([cpu_mem(1, 1)], cpu_mem(8, 1), node="node")],
    ),
    fit_filter(
        "an overcommitted node takes a pod that does not request the overcommitted resource",
        st_pod(cpu_mem(0, 1)),
        cpu_mem(30, 1),
    ),
    fit_filter(
        "a pod requesting the overcommitted resource is refused",
        st_pod(cpu_mem(1, 1)),
        cpu_mem(30, 1),
        CPU,
    ),
    fit_filter(
        "an ignored resource group leaves kubernetes.io resources checked",
        st_pod(cpu_mem(1, 1, B=1, HUGE=9)),
        cpu_mem(0, 0),
        short(HUGE_A),
        args={"ignoredResourceGroups": ["example.com"], "ignoredResources": [HUGE_A]},
    ),
    fit_filter(
        "a full node reports every shortfall after the pod count",
        st_pod(cpu_mem(11, 21, A=6), resources(ephemeral=21)),
        cpu_mem(0, 0),
        ERR_TOO_MANY_PODS,
        CPU,
        MEMORY,
        EPHEMERAL,
        short(EXT_A),
        node=allocatable(10, 20, 1, 5, 20, 5),
    ),
]


def level(
    pod: dict[str, Any],
    requests: dict[str, str] | None = None,
    limits: dict[str, str] | None = None,
) -> dict[str, Any]:
    """``newPodLevelResourcesPod``: the pod with ``spec.resources``."""
    res: dict[str, Any] = {}
    if requests is not None:
        res["requests"] = requests
    if limits is not None:
        res["limits"] = limits
    pod["spec"]["resources"] = res
    return pod


def level_cm(milli_cpu: int, memory: int, huge: int | None = None) -> dict[str, str]:
    """Pod-level amounts: cpu in millicores, memory (and hugepages) in bytes."""
    amounts = {"cpu": f"{milli_cpu}m", "memory": str(memory)}
    if huge is not None:
        amounts[HUGE_A] = str(huge)
    return amounts


# v1.34's TestEnoughRequests rows with podLevelResourcesEnabled (on by default in v1.34),
# then ours: pod-level limits defaulting the requests (the API server's defaulting, which
# simulate's inputs have not been through), overhead, sidecars, a resource only the
# containers request.
POD_LEVEL_REQUESTS = [
    fit_filter(
        "both pod-level and container-level resources fit",
        level(st_pod(cpu_mem(1, 1)), level_cm(1, 2)),
        cpu_mem(5, 5),
    ),
    fit_filter(
        "pod-level cpu resource not fit",
        level(st_pod(cpu_mem(1, 1)), level_cm(7, 2)),
        cpu_mem(5, 5),
        CPU,
    ),
    fit_filter(
        "pod-level memory resource not fit",
        level(st_pod(cpu_mem(1, 1)), level_cm(3, 2)),
        cpu_mem(5, 19),
        MEMORY,
    ),
    fit_filter(
        "pod-level hugepages resource fit",
        level(st_pod(), level_cm(3, 2, huge=5)),
        None,
    ),
    fit_filter(
        "both pod-level and container-level hugepages resource fit",
        level(st_pod(cpu_mem(1, 1, HUGE=3)), level_cm(3, 2, huge=5)),
        None,
    ),
    fit_filter(
        "pod-level hugepages resource not fit",
        level(st_pod(), level_cm(3, 2, huge=10)),
        None,
        short(HUGE_A),
    ),
    fit_filter(
        "one pod-level cpu resource fits and all init and non-init containers resources fit",
        level(init_pod([cpu_mem(1, 1)], cpu_mem(1, 1)), level_cm(3, 2)),
        cpu_mem(5, 19),
        MEMORY,
    ),
    fit_filter(
        "pod-level limits without requests: the requests default to the limits",
        level(st_pod({}), limits=level_cm(6, 2)),
        cpu_mem(5, 5),
        CPU,
    ),
    fit_filter(
        "pod-level limits without requests: cpu the containers request defaults to theirs",
        level(st_pod(cpu_mem(1, 1)), limits=level_cm(6, 2)),
        cpu_mem(5, 5),
    ),
    fit_filter(
        "pod-level requests plus overhead",
        level(st_pod(cpu_mem(1, 1), overhead={"cpu": "2m", "memory": "1"}), level_cm(4, 2)),
        cpu_mem(5, 5),
        CPU,
    ),
    fit_filter(
        "pod-level cpu replaces the containers' and the sidecars' cpu",
        level(with_init(st_pod(cpu_mem(1, 1)), sidecar(cpu_mem(3, 1))), {"cpu": "5m"}),
        cpu_mem(5, 5),
    ),
    fit_filter(
        "memory only the containers and sidecars request counts as without pod level",
        level(with_init(st_pod(cpu_mem(1, 1)), sidecar(cpu_mem(1, 15))), {"cpu": "5m"}),
        cpu_mem(5, 5),
        MEMORY,
    ),
    fit_filter(
        "a placed pod counts its pod-level requests on its node",
        st_pod(cpu_mem(3, 1)),
        None,
        CPU,
        placed=[level(st_pod(cpu_mem(1, 1), node="node"), {"cpu": "8m"})],
    ),
]


@pytest.mark.parametrize(
    "case",
    ENOUGH_REQUESTS
    + NOT_ENOUGH_REQUESTS
    + STORAGE_REQUESTS
    + OUR_FILTER_CASES
    + POD_LEVEL_REQUESTS,
)
def test_fit_filter(case: FilterCase) -> None:
    check_filter(case)


def test_fit_filter_reasons_of_scalars_are_sorted_by_name() -> None:
    pod = parse_pod(st_pod(cpu_mem(0, 0, B=1, A=9, K8S_A=1)))
    state = cluster([st_node("n", ENOUGH)])
    reasons = FitFilter()(pod, state.nodes["n"], CycleState(pod, state, PolicySettings()))
    assert reasons == (short(EXT_A), short(EXT_B), short(K8S_A))


# -- scores ---------------------------------------------------------------------------------

DEFAULT_RESOURCES = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
EXT = "abc.com/xyz"
EXTENDED_RESOURCE_SET = [*DEFAULT_RESOURCES, {"name": EXT, "weight": 1}]


def strategy(kind: str, resources_: Any = None, shape: Any = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"type": kind}
    if resources_ is not None:
        spec["resources"] = resources_
    if shape is not None:
        spec["requestedToCapacityRatio"] = {"shape": shape}
    return {"scoringStrategy": spec}


def req(cpu: str, memory: str, **extra: str) -> dict[str, str]:
    return {"cpu": cpu, "memory": memory, **extra}


def cap(name: str, cpu: str, memory: str, **extra: str) -> dict[str, Any]:
    return st_node(name, {"cpu": cpu, "memory": memory, **extra})


def score(
    case_id: str,
    plugin: str,
    args: dict[str, Any] | None,
    pod: dict[str, Any],
    nodes: list[dict[str, Any]],
    scores: list[int],
    placed: list[dict[str, Any]] | None = None,
) -> Any:
    names = [n["metadata"]["name"] for n in nodes]
    return pytest.param(
        ScoreCase(plugin, pod, nodes, dict(zip(names, scores, strict=True)), placed or [], args),
        id=case_id,
    )


N1_4000 = cap("node1", "4000", "10000")
N2_4000 = cap("node2", "4000", "10000")
N2_6000 = cap("node2", "6000", "10000")
BIG_POD = st_pod(req("1000", "2000"), req("2000", "3000"))


def least(
    case_id: str, pod: Any, nodes: Any, scores: Any, placed: Any = None, res: Any = None
) -> Any:
    args = strategy("LeastAllocated", res if res is not None else DEFAULT_RESOURCES)
    return score(case_id, FIT, args, pod, nodes, scores, placed)


def most(
    case_id: str, pod: Any, nodes: Any, scores: Any, placed: Any = None, res: Any = None
) -> Any:
    args = strategy("MostAllocated", res if res is not None else DEFAULT_RESOURCES)
    return score(case_id, FIT, args, pod, nodes, scores, placed)


PLACED_3000 = [
    st_pod(req("3000", "0"), node="node1"),
    st_pod(req("3000", "0"), node="node1"),
    st_pod(req("3000", "0"), node="node2"),
    st_pod(req("3000", "5000"), node="node2"),
]
PLACED_ONE_EACH = [
    st_pod(req("3000", "0"), node="node1"),
    st_pod(req("3000", "5000"), node="node2"),
]

LEAST_ALLOCATED = [
    least("nothing scheduled, nothing requested", st_pod(), [N1_4000, N2_4000], [100, 100]),
    least(
        "nothing scheduled, resources requested, differently sized nodes",
        BIG_POD,
        [N1_4000, N2_6000],
        [37, 50],
    ),
    least(
        "no resources requested, pods scheduled",
        st_pod(),
        [N1_4000, N2_4000],
        [100, 100],
        [st_pod(node="node1"), st_pod(node="node1"), st_pod(node="node2"), st_pod(node="node2")],
    ),
    least(
        "no resources requested, pods scheduled with resources",
        st_pod(),
        [cap("node1", "10000", "20000"), cap("node2", "10000", "20000")],
        [70, 57],
        PLACED_3000,
    ),
    least(
        "resources requested, pods scheduled with resources",
        BIG_POD,
        [cap("node1", "10000", "20000"), cap("node2", "10000", "20000")],
        [57, 45],
        PLACED_ONE_EACH,
    ),
    least(
        "resources requested, pods scheduled with resources, differently sized nodes",
        BIG_POD,
        [cap("node1", "10000", "20000"), cap("node2", "10000", "50000")],
        [57, 60],
        PLACED_ONE_EACH,
    ),
    least(
        "requested resources exceed node capacity",
        st_pod(req("3000", "0")),
        [N1_4000, N2_4000],
        [50, 25],
        PLACED_ONE_EACH,
    ),
    least(
        "zero node resources, pods scheduled with resources",
        st_pod(),
        [st_node("node1"), st_node("node2")],
        [0, 0],
        PLACED_ONE_EACH,
    ),
    least(
        "nothing scheduled, resources requested with different weight on CPU and memory, "
        "differently sized nodes",
        BIG_POD,
        [N1_4000, N2_6000],
        [41, 50],
        res=[{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}],
    ),
    least(
        "bypass extended resource if the pod does not request",
        BIG_POD,
        [cap("node1", "6000", "10000"), cap("node2", "6000", "10000", **{EXT: "4"})],
        [50, 50],
        res=EXTENDED_RESOURCE_SET,
    ),
    least(
        "honor extended resource if the pod requests",
        st_pod(req("3000", "5000", **{EXT: "2"})),
        [cap("node1", "6000", "10000", **{EXT: "4"}), cap("node2", "6000", "10000", **{EXT: "10"})],
        [50, 60],
        res=EXTENDED_RESOURCE_SET,
    ),
    least(
        "if the node doesn't have a resource",
        st_pod(req("3000", "4000")),
        [cap("node1", "6000", "10000"), cap("node2", "6000", "10000", **{EXT: "4"})],
        [55, 55],
        res=[{"name": EXT, "weight": 2}, *DEFAULT_RESOURCES],
    ),
]

MOST_ALLOCATED = [
    most("nothing scheduled, nothing requested", st_pod(), [N1_4000, N2_4000], [0, 0]),
    most(
        "nothing scheduled, resources requested, differently sized nodes",
        BIG_POD,
        [N1_4000, N2_6000],
        [62, 50],
    ),
    most(
        "no resources requested, pods scheduled with resources",
        st_pod(),
        [cap("node1", "10000", "20000"), cap("node2", "10000", "20000")],
        [30, 42],
        PLACED_3000,
    ),
    most(
        "resources requested, pods scheduled with resources",
        BIG_POD,
        [cap("node1", "10000", "20000"), cap("node2", "10000", "20000")],
        [42, 55],
        PLACED_ONE_EACH,
    ),
    most(
        "resources requested equal node capacity",
        st_pod(req("2000", "4000"), req("3000", "5000")),
        [cap("node1", "5000", "10000"), cap("node2", "10000", "9000")],
        [95, 75],
    ),
    most(
        "nothing scheduled, resources requested, differently sized nodes, weighted",
        BIG_POD,
        [N1_4000, N2_6000],
        [58, 50],
        res=[{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}],
    ),
    most(
        "no resources requested, pods scheduled, nonzero request for resource",
        st_pod({}),
        [cap("node1", "250m", "1000Mi"), cap("node2", "250m", "1000Mi")],
        [80, 30],
        [st_pod({}, node="node1"), st_pod({}, node="node1")],
    ),
    most(
        "bypass extended resource if the pod does not request",
        BIG_POD,
        [cap("node1", "6000", "10000"), cap("node2", "6000", "10000", **{EXT: "4"})],
        [50, 50],
        res=EXTENDED_RESOURCE_SET,
    ),
    most(
        "honor extended resource if the pod request",
        st_pod(req("3000", "5000", **{EXT: "2"})),
        [cap("node1", "6000", "10000", **{EXT: "4"}), cap("node2", "6000", "10000", **{EXT: "10"})],
        [50, 40],
        res=EXTENDED_RESOURCE_SET,
    ),
    most(
        "if the node doesn't have a resource",
        st_pod(req("3000", "4000")),
        [cap("node1", "6000", "10000"), cap("node2", "6000", "10000", **{EXT: "4"})],
        [45, 45],
        res=[{"name": EXT, "weight": 2}, *DEFAULT_RESOURCES],
    ),
]

DOWN = [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]
UP = [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
UP_TO_ONE = [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 1}]


def ratio(
    case_id: str,
    pod: Any,
    nodes: Any,
    scores: Any,
    placed: Any = None,
    res: Any = None,
    shape: Any = None,
) -> Any:
    args = strategy(
        "RequestedToCapacityRatio",
        res if res is not None else DEFAULT_RESOURCES,
        shape if shape is not None else DOWN,
    )
    return score(case_id, FIT, args, pod, nodes, scores, placed)


def bin_node(name: str, extended: dict[str, int]) -> dict[str, Any]:
    """makeNode(name, 4000, 10000*1024*1024, extended)."""
    return st_node(
        name,
        {"cpu": "4000m", "memory": str(10000 * 1024 * 1024), "pods": "100", **extended},
    )


FOO, BAR = "intel.com/foo", "intel.com/bar"
SINGLE = [{"name": FOO, "weight": 1}]
MULTIPLE = [{"name": FOO, "weight": 3}, {"name": BAR, "weight": 5}]
FOO_8, FOO_4 = bin_node("node1", {FOO: 8}), bin_node("node2", {FOO: 4})
FOO8_BAR4 = bin_node("node1", {FOO: 8, BAR: 4})
FOO4_BAR8 = bin_node("node2", {FOO: 4, BAR: 8})

REQUESTED_TO_CAPACITY_RATIO = [
    ratio(
        "nothing scheduled, nothing requested (default - least requested nodes have priority)",
        st_pod(),
        [N1_4000, N2_4000],
        [100, 100],
        [st_pod(node="node1"), st_pod(node="node1")],
    ),
    ratio(
        "nothing scheduled, resources requested, differently sized nodes (default - least "
        "requested nodes have priority)",
        BIG_POD,
        [N1_4000, N2_6000],
        [38, 50],
        [st_pod(node="node1"), st_pod(node="node1")],
    ),
    ratio(
        "no resources requested, pods scheduled with resources (default - least requested "
        "nodes have priority)",
        st_pod(),
        [N1_4000, N2_6000],
        [38, 50],
        [st_pod(req("3000", "5000"), node="node1"), st_pod(req("3000", "5000"), node="node2")],
    ),
    # TestFitScore's RequestedToCapacityRatio cases.
    ratio(
        "ScoringStrategy RequestedToCapacityRatio case1",
        st_pod(req("3000", "5000")),
        [N1_4000, N2_6000],
        [10, 32],
        [st_pod(req("2000", "4000"), node="node1"), st_pod(req("1000", "2000"), node="node2")],
    ),
    ratio(
        "ScoringStrategy RequestedToCapacityRatio case2",
        st_pod(req("3000", "5000")),
        [N1_4000, N2_6000],
        [95, 68],
        [st_pod(req("2000", "4000"), node="node1"), st_pod(req("1000", "2000"), node="node2")],
        shape=UP,
    ),
    # TestResourceBinPackingSingleExtended.
    ratio(
        "single extended: nothing scheduled, nothing requested",
        st_pod(),
        [FOO_8, FOO_4],
        [0, 0],
        res=SINGLE,
        shape=UP_TO_ONE,
    ),
    ratio(
        "single extended: resources requested, pods scheduled with less resources",
        st_pod({FOO: "2"}),
        [FOO_8, FOO_4],
        [2, 5],
        res=SINGLE,
        shape=UP_TO_ONE,
    ),
    ratio(
        "single extended: resources requested, pods scheduled with resources, on node with "
        "existing pod running",
        st_pod({FOO: "2"}),
        [FOO_8, FOO_4],
        [2, 10],
        [st_pod({FOO: "2"}, node="node2")],
        res=SINGLE,
        shape=UP_TO_ONE,
    ),
    ratio(
        "single extended: resources requested, pods scheduled with more resources",
        st_pod({FOO: "4"}),
        [FOO_8, FOO_4],
        [5, 10],
        res=SINGLE,
        shape=UP_TO_ONE,
    ),
    # TestResourceBinPackingMultipleExtended.
    ratio(
        "multiple extended: nothing scheduled, nothing requested",
        st_pod(),
        [FOO8_BAR4, FOO4_BAR8],
        [0, 0],
        res=MULTIPLE,
        shape=UP_TO_ONE,
    ),
    ratio(
        "multiple extended: resources requested, pods scheduled with less resources",
        st_pod({FOO: "2", BAR: "2"}),
        [FOO8_BAR4, FOO4_BAR8],
        [4, 3],
        res=MULTIPLE,
        shape=UP_TO_ONE,
    ),
    ratio(
        "multiple extended: resources requested, pods scheduled with resources, on node with "
        "existing pod running",
        st_pod({FOO: "2", BAR: "2"}),
        [FOO8_BAR4, FOO4_BAR8],
        [4, 7],
        [st_pod({FOO: "4", BAR: "2"}, node="node2")],
        res=MULTIPLE,
        shape=UP_TO_ONE,
    ),
    ratio(
        "multiple extended: resources requested, pods scheduled with more resources",
        st_pod({FOO: "4", BAR: "2"}),
        [FOO8_BAR4, FOO4_BAR8],
        [5, 5],
        res=MULTIPLE,
        shape=UP_TO_ONE,
    ),
]

FIT_SCORE = [
    score(
        "ScoringStrategy MostAllocated",
        FIT,
        strategy("MostAllocated", DEFAULT_RESOURCES),
        st_pod(req("1000", "2000")),
        [N1_4000, N2_6000],
        [67, 36],
        [st_pod(req("2000", "4000"), node="node1"), st_pod(req("1000", "2000"), node="node2")],
    ),
    score(
        "ScoringStrategy LeastAllocated",
        FIT,
        strategy("LeastAllocated", DEFAULT_RESOURCES),
        st_pod(req("1000", "2000")),
        [N1_4000, N2_6000],
        [32, 63],
        [st_pod(req("2000", "4000"), node="node1"), st_pod(req("1000", "2000"), node="node2")],
    ),
    score(
        "default arguments are LeastAllocated over cpu and memory",
        FIT,
        None,
        st_pod(req("1000", "2000")),
        [N1_4000, N2_6000],
        [32, 63],
        [st_pod(req("2000", "4000"), node="node1"), st_pod(req("1000", "2000"), node="node2")],
    ),
]


def bal_node(name: str, milli_cpu: int, memory: int, gpu: int = 0) -> dict[str, Any]:
    extended = {"nvidia.com/gpu": str(gpu)} if gpu else {}
    return st_node(name, {"cpu": f"{milli_cpu}m", "memory": str(memory), "pods": "100", **extended})


def cpu_only(node: str | None = None) -> dict[str, Any]:
    return st_pod(req("1000m", "0"), req("2000m", "0"), node=node)


def cpu_and_memory(node: str | None = None) -> dict[str, Any]:
    return st_pod(req("1000m", "2000"), req("2000m", "3000"), node=node)


def cpu_memory_gpu(node: str | None = None) -> dict[str, Any]:
    return st_pod(req("1000m", "2000"), req("2000m", "3000", **{"nvidia.com/gpu": "3"}), node=node)


BAL_DEFAULT = {"resources": DEFAULT_RESOURCES}
BAL_GPU = {"resources": [*DEFAULT_RESOURCES, {"name": "nvidia.com/gpu", "weight": 1}]}
BAL_PLACED = [cpu_only("node1"), cpu_and_memory("node2")]

BALANCED_ALLOCATION = [
    # v1.33+ (kubernetes#129138): PreScore skips a pod requesting none of the resources;
    # v1.30 scored it 100 on both nodes.
    pytest.param(
        ScoreCase(
            BALANCED,
            st_pod(),
            [bal_node("node1", 4000, 10000), bal_node("node2", 4000, 10000)],
            {"node1": 0, "node2": 0},
            [],
            BAL_DEFAULT,
            skip=True,
        ),
        id="nothing scheduled, nothing requested (a best-effort pod is skipped)",
    ),
    pytest.param(
        ScoreCase(
            BALANCED,
            st_pod(),
            [bal_node("node1", 10000, 20000), bal_node("node2", 10000, 20000)],
            {"node1": 0, "node2": 0},
            BAL_PLACED,
            BAL_DEFAULT,
            skip=True,
        ),
        id="a best-effort pod is skipped whatever the nodes hold",
    ),
    score(
        "nothing scheduled, resources requested, differently sized nodes",
        BALANCED,
        BAL_DEFAULT,
        cpu_and_memory(),
        [bal_node("node1", 4000, 10000), bal_node("node2", 6000, 10000)],
        [87, 100],
    ),
    score(
        "resources requested, pods scheduled with resources",
        BALANCED,
        BAL_DEFAULT,
        cpu_and_memory(),
        [bal_node("node1", 10000, 20000), bal_node("node2", 10000, 20000)],
        [82, 95],
        BAL_PLACED,
    ),
    score(
        "resources requested, pods scheduled with resources, differently sized nodes",
        BALANCED,
        BAL_DEFAULT,
        cpu_and_memory(),
        [bal_node("node1", 10000, 20000), bal_node("node2", 10000, 50000)],
        [82, 80],
        BAL_PLACED,
    ),
    score(
        "requested resources at node capacity",
        BALANCED,
        BAL_DEFAULT,
        cpu_only(),
        [bal_node("node1", 6000, 10000), bal_node("node2", 6000, 10000)],
        [50, 75],
        BAL_PLACED,
    ),
    score(
        "include scalar resource on a node for balanced resource allocation",
        BALANCED,
        BAL_GPU,
        st_pod({"memory": "0", "nvidia.com/gpu": "1"}),
        [bal_node("node1", 3500, 40000, 8), bal_node("node2", 3500, 40000, 8)],
        [70, 65],
        [cpu_and_memory("node2"), cpu_memory_gpu("node1")],
    ),
    score(
        "node without the scalar resource should skip the scalar resource",
        BALANCED,
        BAL_GPU,
        cpu_and_memory(),
        [bal_node("node1", 3500, 40000, 8), bal_node("node2", 3500, 40000)],
        [63, 63],
    ),
    score(
        "default arguments balance cpu and memory",
        BALANCED,
        None,
        cpu_and_memory(),
        [bal_node("node1", 4000, 10000), bal_node("node2", 6000, 10000)],
        [87, 100],
    ),
]


def init_container(requests: dict[str, str] | None) -> dict[str, Any]:
    c: dict[str, Any] = {"name": "setup", "image": "img"}
    if requests is not None:
        c["resources"] = {"requests": requests}
    return c


OUR_SCORE_CASES = [
    # A placed pod's init container without requests counts 100m / 200Mi on its node's
    # non-zero sums (the legacy sums count 10m / 10Mi): node1 cpu 100m + 100m of 1000m,
    # memory 200Mi + 10Mi of 1000Mi -> (80 + 79) // 2 = 79; node2 20m + 100m, 20Mi + 10Mi
    # -> (88 + 97) // 2 = 92.
    score(
        "a placed pod's init container counts its non-zero defaults",
        FIT,
        None,
        st_pod(req("100m", "10Mi")),
        [cap("node1", "1000m", "1000Mi"), cap("node2", "1000m", "1000Mi")],
        [79, 92],
        [
            with_init(st_pod(req("10m", "10Mi"), node="node1"), init_container(None)),
            st_pod(req("20m", "20Mi"), node="node2"),
        ],
    ),
    # The incoming pod's own init container: max(10m, 100m default) of cpu,
    # max(10Mi, 200Mi) of memory: (90 + 80) // 2 = 85.
    score(
        "the pod's init container counts its non-zero defaults",
        FIT,
        None,
        with_init(st_pod(req("10m", "10Mi")), init_container(None)),
        [cap("node1", "1000m", "1000Mi")],
        [85],
    ),
    # A sidecar of 500m runs beside the 100m container: 600m of 1000m; memory 200Mi
    # default for the sidecar + 100Mi: 300Mi of 1000Mi -> (40 + 70) // 2 = 55.
    score(
        "a sidecar adds its non-zero request to the pod's",
        FIT,
        None,
        with_init(st_pod(req("100m", "100Mi")), sidecar({"cpu": "500m"})),
        [cap("node1", "1000m", "1000Mi")],
        [55],
    ),
    # BalancedAllocation reads plain requests: a placed best-effort pod adds nothing
    # (non-zero it would add 100m / 200Mi): cpu 500m/1000m, memory 0 -> 75.
    score(
        "balanced allocation counts plain requests",
        BALANCED,
        None,
        st_pod(req("500m", "0")),
        [cap("node1", "1000m", "1000Mi")],
        [75],
        [st_pod({}, node="node1")],
    ),
    # Three resources: fractions 0.5, 0.25, 0.75 -> std sqrt(1/24) -> int(79.58...) = 79.
    score(
        "balanced allocation over three resources",
        BALANCED,
        {"resources": [*DEFAULT_RESOURCES, {"name": "ephemeral-storage", "weight": 1}]},
        st_pod(req("500m", "250", **{"ephemeral-storage": "750"})),
        [st_node("node1", {"cpu": "1", "memory": "1000", "ephemeral-storage": "1000"})],
        [79],
    ),
]


# The scores of pods with spec.resources (v1.34): the pod's own request is the pod-level
# amount for what the pod level names, the containers' (100m / 200Mi for a container that
# names neither) for the rest; a placed pod adds to its node's non-zero sums its pod-level
# amount, or 100m / 200Mi per container for what nobody names.
POD_LEVEL_SCORES = [
    # cpu 3000 (cores, as the rows above count) of 4000 / 6000, memory 2000 of 10000:
    # (25 + 80) // 2, (50 + 80) // 2.
    least(
        "the pod-level cpu request is the pod's",
        level(st_pod(req("1000", "2000")), {"cpu": "3000"}),
        [N1_4000, N2_6000],
        [52, 65],
    ),
    # cpu 100m (the container's default) of 4000m / 6000m, memory 5000 of 10000:
    # (97 + 50) // 2, (98 + 50) // 2.
    least(
        "memory at pod level, cpu defaulted per container",
        level(st_pod({}), {"memory": "5000"}),
        [cap("node1", "4000m", "10000"), cap("node2", "6000m", "10000")],
        [73, 74],
    ),
    # node1 holds a pod of 3 cpus at pod level, its container asking nothing: 3000m and
    # 200Mi on node1's non-zero sums, with the pending pod's 100m / 200Mi:
    # cpu 900 / 4000 -> 22, memory (10Gi - 400Mi) / 10Gi -> 96: 59; node2 (97 + 98) // 2.
    least(
        "a placed pod adds its pod-level request to its node's non-zero sums",
        st_pod({}),
        [cap("node1", "4000m", "10Gi"), cap("node2", "4000m", "10Gi")],
        [59, 97],
        [level(st_pod({}, node="node1"), {"cpu": "3"})],
    ),
    # node1's pod names memory at pod level (200Mi); one container asks 1000m of cpu, the
    # other nothing: cpu is requested, so no 100m default for that container
    # (getNonMissingContainerRequests): 1000m + 100m of 4000m -> 72, 400Mi of 10Gi -> 96.
    least(
        "a placed pod's cpu some container names counts without per-container defaults",
        st_pod({}),
        [cap("node1", "4000m", "10Gi"), cap("node2", "4000m", "10Gi")],
        [84, 97],
        [level(st_pod({"cpu": "1000m"}, {}, node="node1"), {"memory": "200Mi"})],
    ),
    # Balanced: cpu 3000/4000 = 0.75, memory 2000/10000 = 0.2 -> 1 - |0.55| / 2 -> 72.
    score(
        "balanced allocation reads the pod-level request",
        BALANCED,
        None,
        level(st_pod(req("1000", "2000")), {"cpu": "3000"}),
        [N1_4000],
        [72],
    ),
]


@pytest.mark.parametrize(
    "case",
    LEAST_ALLOCATED
    + MOST_ALLOCATED
    + REQUESTED_TO_CAPACITY_RATIO
    + FIT_SCORE
    + BALANCED_ALLOCATION
    + OUR_SCORE_CASES
    + POD_LEVEL_SCORES,
)
def test_scores(case: ScoreCase) -> None:
    check_score(case)


@pytest.mark.parametrize(
    ("points", "assertions"),
    [
        pytest.param(
            [(10, 1), (90, 9)],
            [
                *[(-10, 1), (0, 1), (9, 1), (10, 1), (15, 1), (19, 1), (20, 2), (89, 8)],
                *[(90, 9), (99, 9), (100, 9), (110, 9)],
            ],
            id="rising",
        ),
        pytest.param(
            [(0, 2), (40, 10), (100, 0)],
            [(-10, 2), (0, 2), (20, 6), (30, 8), (40, 10), (70, 5), (100, 0), (110, 0)],
            id="up then down",
        ),
        pytest.param(
            [(0, 2), (40, 2), (100, 2)],
            [(-10, 2), (0, 2), (20, 2), (30, 2), (40, 2), (70, 2), (100, 2), (110, 2)],
            id="flat",
        ),
    ],
)
def test_broken_linear_function(
    points: list[tuple[int, int]], assertions: list[tuple[int, int]]
) -> None:
    shape = [ShapePoint(u, s) for u, s in points]
    assert [broken_linear(shape, p) for p, _ in assertions] == [e for _, e in assertions]


def test_shape_scores_are_scaled_onto_0_to_100() -> None:
    scorer = ResourceScorer(
        "RequestedToCapacityRatio", [("cpu", 1)], [ShapePoint(0, 0), ShapePoint(100, 10)]
    )
    assert scorer.shape == (ShapePoint(0, 0), ShapePoint(100, 100))


@pytest.mark.parametrize(
    ("requested", "allocatable", "want"),
    [
        pytest.param([3000, 5000], [4000, 10000], 87, id="two fractions"),
        pytest.param([7000, 5000], [4000, 10000], 75, id="a fraction over 1 counts as 1"),
        pytest.param([5, 0], [10, 0], 100, id="a resource without allocatable is left out"),
        pytest.param([0, 0], [0, 0], 100, id="nothing to balance"),
    ],
)
def test_balanced_score(requested: list[int], allocatable: list[int], want: int) -> None:
    assert balanced_score(requested, allocatable) == want


def test_unknown_strategy_is_refused() -> None:
    with pytest.raises(ValueError, match="scoring strategy Fastest is not supported"):
        NodeResourcesFit(strategy("Fastest"), None)


@pytest.mark.parametrize(
    ("kind", "resources_", "use_requested"),
    [
        pytest.param("LeastAllocated", [("cpu", 1), ("memory", 1)], False, id="least"),
        pytest.param("LeastAllocated", [("memory", 3), ("cpu", 7)], False, id="least weighted"),
        pytest.param("MostAllocated", [("cpu", 2), ("memory", 5)], False, id="most weighted"),
        pytest.param(
            "NodeResourcesBalancedAllocation", [("cpu", 1), ("memory", 1)], True, id="balanced"
        ),
        pytest.param(
            "NodeResourcesBalancedAllocation", [("memory", 1), ("cpu", 1)], True, id="reversed"
        ),
    ],
)
def test_cpu_and_memory_are_scored_inline_as_in_general(
    kind: str, resources_: list[tuple[str, int]], use_requested: bool
) -> None:
    """The inline path for cpu and memory gives the general path's score on every node of
    a random cluster (init containers, sidecars, zero and overcommitted capacities)."""
    from intree.test_fast_paths import build_cluster, build_world

    nodes, placed, pending = build_world(7, 40, 30)
    nodes.append(st_node("no-cpu", {"memory": "1Gi", "pods": "10"}))
    nodes.append(st_node("no-memory", {"cpu": "1", "pods": "10"}))
    nodes.append(st_node("nothing"))
    state = build_cluster(nodes, placed)
    state.add_pod(parse_pod(st_pod(req("3", "3Gi"), node="node-0")))  # overcommitted
    scorer = ResourceScorer(kind, resources_, use_requested=use_requested)
    assert scorer._pair is not None
    for raw in pending:
        requests = scorer.pod_requests(parse_pod(raw))
        for info in state.nodes.values():
            assert scorer._pair_score(requests, info) == scorer.node_score(requests, info)


@pytest.mark.parametrize(
    ("kind", "resources_", "use_requested"),
    [
        pytest.param("LeastAllocated", [("cpu", 1), ("memory", 1)], False, id="least"),
        pytest.param("LeastAllocated", [("memory", 3), ("cpu", 7)], False, id="least weighted"),
        pytest.param("MostAllocated", [("cpu", 2), ("memory", 5)], False, id="most weighted"),
        pytest.param(
            "NodeResourcesBalancedAllocation", [("cpu", 1), ("memory", 1)], True, id="balanced"
        ),
    ],
)
def test_the_batch_form_scores_as_the_general_path(
    kind: str, resources_: list[tuple[str, int]], use_requested: bool
) -> None:
    """The batch over a random cluster (init containers, sidecars, zero and overcommitted
    capacities) gives each node the general path's score, computed or from the memo."""
    from intree.test_fast_paths import build_cluster, build_world

    nodes, placed, pending = build_world(11, 40, 30)
    nodes.append(st_node("no-cpu", {"memory": "1Gi", "pods": "10"}))
    nodes.append(st_node("no-memory", {"cpu": "1", "pods": "10"}))
    nodes.append(st_node("nothing"))
    state = build_cluster(nodes, placed)
    state.add_pod(parse_pod(st_pod(req("3", "3Gi"), node="node-0")))  # overcommitted
    scorer = ResourceScorer(kind, resources_, use_requested=use_requested)
    infos = list(state.nodes.values())
    for raw in pending:
        pod = parse_pod(raw)
        requests = scorer.pod_requests(pod)
        want = [scorer.node_score(requests, info) for info in infos]
        for _ in range(2):  # computed, then read from the nodes' memos
            cycle = CycleState(pod, state, PolicySettings())
            assert scorer.batch(pod, infos, cycle) == want


def test_a_new_plugin_never_reads_the_node_scores_an_old_one_kept() -> None:
    """Policies come and go: a scorer made after another is gone (perhaps where it lived
    in memory, with other arguments) keeps its node scores under a key of its own."""
    keys = set()
    for i in range(200):
        scorer = ResourceScorer("LeastAllocated", [("cpu", 1 + i % 2), ("memory", 1)])
        keys.add(scorer._key)
        del scorer
    assert len(keys) == 200


@pytest.mark.parametrize(
    ("extender_ignored", "args", "want"),
    [
        pytest.param(frozenset(), {"ignoredResources": [EXT_B]}, (short(EXT_A),), id="args"),
        pytest.param(
            frozenset({EXT_A}),
            {"ignoredResources": [EXT_B]},
            (short(EXT_B),),
            id="extenders' ignoredByScheduler resources replace the args'",
        ),
        pytest.param(
            frozenset({EXT_A}),
            {"ignoredResourceGroups": ["example.com"]},
            (),
            id="the groups stay",
        ),
    ],
)
def test_extenders_ignored_resources(
    extender_ignored: frozenset[str], args: dict[str, Any], want: tuple[str, ...]
) -> None:
    from intree.cases import make_plugin

    state = cluster([st_node("n", ENOUGH)])
    pod = parse_pod(st_pod(cpu_mem(0, 0, A=9, B=1)))
    plugin = make_plugin(FIT, args, state)
    cycle = CycleState(pod, state, PolicySettings(ignored_resources=extender_ignored))
    assert tuple(plugin.predicate()(pod, state.nodes["n"], cycle)) == want
