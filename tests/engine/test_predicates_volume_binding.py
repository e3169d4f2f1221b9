"""CheckVolumeBinding: upstream's FindPodVolumes tables, through the predicate.

Ported from TestFindPodVolumesWithoutProvisioning / TestFindPodVolumesWithProvisioning of
``pkg/controller/volume/scheduling/scheduler_binder_test.go`` (v1.17), plus the
FindMatchingVolume rules the scheduler path relies on (capacity, access modes, selector,
volume mode, phase, claimRef, class, node affinity). Nodes are labelled
``nodeKey: node1`` / ``nodeKey: node2``; PVs pin themselves to one of them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from builders import (
    claim_volume,
    cluster,
    cycle,
    decide,
    node,
    pod,
    policy,
    pv,
    pvc,
    storage_class,
)
from policy_scheduler import names
from policy_scheduler.engine.predicates.volumes import check_volume_binding
from policy_scheduler.objects import parse_pod

NODE_CONFLICT = "node(s) had volume node affinity conflict"
BIND = "node(s) didn't find available persistent volumes to bind"
IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"

WAIT = "waitClass"
IMMEDIATE_CLASS = "immediateClass"
PROVISIONED = "provisionedClass"
NO_PROVISIONER = "noProvisionerClass"
EMPTY_PROVISIONER = "emptyProvisionerClass"
TOPO_MISMATCH = "topoMismatchClass"
TOPO_MATCH = "topoMatchClass"
RWO = "ReadWriteOnce"
ROX = "ReadOnlyMany"

BOUND = {"pv.kubernetes.io/bind-completed": "yes"}


CLASSES = [
    storage_class(WAIT, mode="WaitForFirstConsumer"),
    storage_class(IMMEDIATE_CLASS, mode="Immediate"),
    storage_class(PROVISIONED, "test-provisioner", mode="WaitForFirstConsumer"),
    storage_class(NO_PROVISIONER, "kubernetes.io/no-provisioner", mode="WaitForFirstConsumer"),
    storage_class(EMPTY_PROVISIONER, "", mode="WaitForFirstConsumer"),
    storage_class(
        TOPO_MISMATCH,
        "test-provisioner",
        mode="WaitForFirstConsumer",
        topologies=[{"zone": ["us-west1-a"]}, {"zone": ["us-west1-c"], "nodeKey": ["node1"]}],
    ),
    storage_class(
        TOPO_MATCH,
        "test-provisioner",
        mode="WaitForFirstConsumer",
        topologies=[{"zone": ["us-west1-a"]}, {"nodeKey": ["node1", "node3"]}],
    ),
]


def on(node_name: str) -> dict[str, list[str]]:
    return {"nodeKey": [node_name]}


# PVs and PVCs of upstream's tables (sizes as there).
PV_NODE1A = pv("pv-node1a", affinity=on("node1"), capacity="5G", storage_class=WAIT)
PV_NODE1B = pv("pv-node1b", affinity=on("node1"), capacity="10G", storage_class=WAIT)
PV_NODE2 = pv("pv-node2", affinity=on("node2"), capacity="1G", storage_class=WAIT)
PV_BOUND = pv(
    "pv-bound",
    affinity=on("node1"),
    capacity="1G",
    storage_class=WAIT,
    claim=("default", "bound-pvc"),
    phase="Bound",
)
PV_BOUND_IMMEDIATE = pv(
    "pv-bound-immediate",
    affinity=on("node1"),
    capacity="1G",
    storage_class=IMMEDIATE_CLASS,
    claim=("default", "immediate-bound-pvc"),
    phase="Bound",
)
PV_BOUND_IMMEDIATE_NODE2 = pv(
    "pv-bound-immediate",
    affinity=on("node2"),
    capacity="1G",
    storage_class=IMMEDIATE_CLASS,
    claim=("default", "immediate-bound-pvc"),
    phase="Bound",
)

UNBOUND = pvc("unbound-pvc", request="1G", storage_class=WAIT)
UNBOUND2 = pvc("unbound-pvc2", request="5G", storage_class=WAIT)
PREBOUND = pvc("prebound-pvc", request="1G", storage_class=WAIT, volume_name="pv-node1a")
BOUND_PVC = pvc(
    "bound-pvc", request="1G", storage_class=WAIT, volume_name="pv-bound", annotations=BOUND
)
BOUND_PVC_GONE = pvc(
    "bound-pvc-gone", request="1G", storage_class=WAIT, volume_name="pv-gone", annotations=BOUND
)
IMMEDIATE_UNBOUND = pvc("immediate-unbound-pvc", request="1G", storage_class=IMMEDIATE_CLASS)
IMMEDIATE_BOUND = pvc(
    "immediate-bound-pvc",
    request="1G",
    storage_class=IMMEDIATE_CLASS,
    volume_name="pv-bound-immediate",
    annotations=BOUND,
)
NO_CLASS_UNBOUND = pvc("no-class-pvc", request="1G")
MISSING_CLASS_UNBOUND = pvc("missing-class-pvc", request="1G", storage_class="nope")
PROVISIONED_PVC = pvc("provisioned-pvc", request="1Gi", storage_class=PROVISIONED)
SELECTED_NODE1 = pvc(
    "selected-node1-pvc",
    request="1Gi",
    storage_class=PROVISIONED,
    annotations={"volume.kubernetes.io/selected-node": "node1"},
)
SELECTED_NODE2 = pvc(
    "selected-node2-pvc",
    request="1Gi",
    storage_class=PROVISIONED,
    annotations={"volume.kubernetes.io/selected-node": "node2"},
)
NO_PROVISIONER_PVC = pvc("no-provisioner-pvc", request="1Gi", storage_class=NO_PROVISIONER)
EMPTY_PROVISIONER_PVC = pvc("empty-provisioner-pvc", request="1Gi", storage_class=EMPTY_PROVISIONER)
TOPO_MISMATCH_PVC = pvc("topo-mismatch-pvc", request="1Gi", storage_class=TOPO_MISMATCH)
TOPO_MATCH_PVC = pvc("topo-match-pvc", request="1Gi", storage_class=TOPO_MATCH)


def name_of(obj: Mapping[str, Any]) -> str:
    return str(obj["metadata"]["name"])


def run_binding(
    claims: Sequence[Mapping[str, Any]],
    pvs: Sequence[Mapping[str, Any]],
    node_name: str = "node1",
    *,
    extra_claims: Sequence[str] = (),
    inline: bool = False,
) -> tuple[str, ...]:
    nodes = [
        node("node1", labels={"nodeKey": "node1", "zone": "us-west1-b"}),
        node("node2", labels={"nodeKey": "node2"}),
    ]
    state = cluster(nodes, [], [*CLASSES, *pvs, *claims])
    volumes = [claim_volume(name_of(c)) for c in claims]
    volumes += [claim_volume(n) for n in extra_claims]
    if inline:
        volumes.append({"name": "scratch", "emptyDir": {}})
    the_pod = parse_pod(pod("p", volumes=volumes))
    return tuple(check_volume_binding(the_pod, state.nodes[node_name], cycle(the_pod, state)))


@pytest.mark.parametrize(
    ("claims", "pvs", "node_name", "expected"),
    [
        # TestFindPodVolumesWithoutProvisioning
        pytest.param([], [], "node1", (), id="no-volumes"),
        pytest.param([BOUND_PVC], [PV_BOUND], "node1", (), id="bound-pvc"),
        pytest.param([BOUND_PVC], [PV_BOUND], "node2", (NODE_CONFLICT,), id="bound-pvc,wrong-node"),
        pytest.param(
            [BOUND_PVC_GONE],
            [],
            "node1",
            ('could not find v1.PersistentVolume "pv-gone"',),
            id="bound-pvc,pv-not-exists",
        ),
        pytest.param([PREBOUND], [PV_NODE1A], "node1", (IMMEDIATE,), id="prebound-pvc"),
        pytest.param(
            [UNBOUND], [PV_NODE2, PV_NODE1A, PV_NODE1B], "node1", (), id="unbound-pvc,pv-same-node"
        ),
        pytest.param(
            [UNBOUND], [PV_NODE2, PV_NODE1A, PV_NODE1B], "node2", (), id="unbound-pvc,pv-on-node2"
        ),
        pytest.param(
            [UNBOUND], [PV_NODE1A, PV_NODE1B], "node2", (BIND,), id="unbound-pvc,pv-different-node"
        ),
        pytest.param(
            [UNBOUND, UNBOUND2], [PV_NODE1A, PV_NODE1B], "node1", (), id="two-unbound-pvcs"
        ),
        pytest.param(
            [UNBOUND2, UNBOUND],
            [PV_NODE1A, PV_NODE1B],
            "node1",
            (),
            id="two-unbound-pvcs,order-by-size",
        ),
        pytest.param(
            [UNBOUND, UNBOUND2], [PV_NODE1A], "node1", (BIND,), id="two-unbound-pvcs,partial-match"
        ),
        pytest.param(
            [UNBOUND, BOUND_PVC], [PV_NODE1A, PV_BOUND], "node1", (), id="one-bound,one-unbound"
        ),
        pytest.param(
            [UNBOUND, BOUND_PVC],
            [PV_BOUND, PV_NODE2],
            "node1",
            (BIND,),
            id="one-bound,one-unbound,no-match",
        ),
        pytest.param(
            [UNBOUND, BOUND_PVC],
            [PV_BOUND, PV_NODE1A],
            "node2",
            (NODE_CONFLICT, BIND),
            id="one-bound-wrong-node,one-unbound-no-match",
        ),
        pytest.param(
            [UNBOUND, PREBOUND],
            [PV_NODE1A, PV_NODE1B],
            "node1",
            (IMMEDIATE,),
            id="one-prebound,one-unbound",
        ),
        pytest.param(
            [IMMEDIATE_BOUND], [PV_BOUND_IMMEDIATE], "node1", (), id="immediate-bound-pvc"
        ),
        pytest.param(
            [IMMEDIATE_BOUND],
            [PV_BOUND_IMMEDIATE_NODE2],
            "node1",
            (NODE_CONFLICT,),
            id="immediate-bound-pvc-wrong-node",
        ),
        pytest.param(
            [IMMEDIATE_UNBOUND], [PV_NODE1A], "node1", (IMMEDIATE,), id="immediate-unbound-pvc"
        ),
        pytest.param(
            [IMMEDIATE_UNBOUND, BOUND_PVC],
            [PV_BOUND],
            "node1",
            (IMMEDIATE,),
            id="immediate-unbound-pvc,delayed-mode-bound",
        ),
        pytest.param(
            [IMMEDIATE_UNBOUND, UNBOUND],
            [PV_NODE1A],
            "node1",
            (IMMEDIATE,),
            id="immediate-unbound-pvc,delayed-mode-unbound",
        ),
        pytest.param(
            [NO_CLASS_UNBOUND],
            [],
            "node1",
            (IMMEDIATE,),
            id="unbound-pvc-without-class-is-immediate",
        ),
        pytest.param(
            [MISSING_CLASS_UNBOUND],
            [],
            "node1",
            (IMMEDIATE,),
            id="unbound-pvc-of-unknown-class-is-immediate",
        ),
        # TestFindPodVolumesWithProvisioning
        pytest.param([PROVISIONED_PVC], [], "node1", (), id="one-provisioned"),
        pytest.param(
            [UNBOUND, PROVISIONED_PVC],
            [PV_NODE1A],
            "node1",
            (),
            id="two-unbound-pvcs,one-matched,one-provisioned",
        ),
        pytest.param(
            [BOUND_PVC, PROVISIONED_PVC], [PV_BOUND], "node1", (), id="one-bound,one-provisioned"
        ),
        pytest.param(
            [UNBOUND, SELECTED_NODE1], [PV_NODE1A], "node1", (), id="one-binding,one-selected-node"
        ),
        pytest.param(
            [UNBOUND, SELECTED_NODE2],
            [PV_NODE1A],
            "node1",
            (BIND,),
            id="selected-node-is-another-node",
        ),
        pytest.param([SELECTED_NODE2], [], "node2", (), id="selected-node-is-this-node"),
        pytest.param(
            [IMMEDIATE_UNBOUND], [], "node1", (IMMEDIATE,), id="provisioning,immediate-unbound-pvc"
        ),
        pytest.param(
            [IMMEDIATE_BOUND, PROVISIONED_PVC],
            [PV_BOUND_IMMEDIATE],
            "node1",
            (),
            id="one-immediate-bound,one-provisioned",
        ),
        pytest.param([NO_PROVISIONER_PVC], [], "node1", (BIND,), id="invalid-provisioner"),
        pytest.param([EMPTY_PROVISIONER_PVC], [], "node1", (BIND,), id="empty-provisioner"),
        pytest.param([TOPO_MISMATCH_PVC], [], "node1", (BIND,), id="volume-topology-unsatisfied"),
        pytest.param([TOPO_MATCH_PVC], [], "node1", (), id="volume-topology-satisfied"),
        pytest.param([TOPO_MATCH_PVC], [], "node2", (BIND,), id="volume-topology-other-node"),
    ],
)
def test_find_pod_volumes(
    claims: list[dict[str, Any]],
    pvs: list[dict[str, Any]],
    node_name: str,
    expected: tuple[str, ...],
) -> None:
    assert run_binding(claims, pvs, node_name) == expected


def test_pod_without_claims_fits() -> None:
    assert run_binding([], [], inline=True) == ()


def test_missing_claim_is_an_error() -> None:
    assert run_binding([], [], extra_claims=["missing"]) == (
        'error getting PVC "default/missing": '
        'could not find v1.PersistentVolumeClaim "default/missing"',
    )


def free(name: str, **kwargs: Any) -> dict[str, Any]:
    """An available PV of the wait class on node1, 5G unless told."""
    kwargs.setdefault("affinity", on("node1"))
    kwargs.setdefault("capacity", "5G")
    kwargs.setdefault("storage_class", WAIT)
    return pv(name, **kwargs)


def claim(**kwargs: Any) -> dict[str, Any]:
    kwargs.setdefault("request", "1G")
    kwargs.setdefault("storage_class", WAIT)
    return pvc("c", **kwargs)


@pytest.mark.parametrize(
    ("the_claim", "the_pv", "fits"),
    [
        pytest.param(claim(), free("v"), True, id="match"),
        pytest.param(claim(request="6G"), free("v"), False, id="too small"),
        pytest.param(claim(request="5G"), free("v"), True, id="exactly the size"),
        pytest.param(
            claim(access_modes=[RWO]),
            free("v", access_modes=[RWO, ROX]),
            True,
            id="access modes subset",
        ),
        pytest.param(
            claim(access_modes=[RWO, ROX]),
            free("v", access_modes=[RWO]),
            False,
            id="access mode missing",
        ),
        pytest.param(
            claim(selector={"matchLabels": {"tier": "db"}}),
            free("v", labels={"tier": "db"}),
            True,
            id="selector matched",
        ),
        pytest.param(
            claim(selector={"matchLabels": {"tier": "db"}}),
            free("v", labels={"tier": "web"}),
            False,
            id="selector not matched",
        ),
        pytest.param(claim(), free("v", volume_mode="Block"), False, id="volume mode differs"),
        pytest.param(
            claim(volume_mode="Block"), free("v", volume_mode="Block"), True, id="block volume mode"
        ),
        pytest.param(claim(), free("v", phase="Released"), False, id="pv not available"),
        pytest.param(
            claim(), free("v", claim=("default", "other")), False, id="pv claimed by another claim"
        ),
        pytest.param(claim(), free("v", storage_class="other"), False, id="other class"),
        pytest.param(claim(), free("v", affinity=on("node2")), False, id="pv on another node"),
        pytest.param(claim(), free("v", affinity=None), True, id="pv without node affinity"),
        pytest.param(
            claim(),
            free("v", claim=("default", "c"), phase="Pending"),
            True,
            id="pv pre-bound to the claim",
        ),
        pytest.param(
            claim(),
            free("v", claim=("default", "c"), affinity=on("node2")),
            False,
            id="pv pre-bound to the claim on another node",
        ),
        pytest.param(
            claim(request="6G"),
            free("v", claim=("default", "c")),
            False,
            id="pv pre-bound to the claim too small",
        ),
    ],
)
def test_matching_volume_rules(
    the_claim: dict[str, Any], the_pv: dict[str, Any], fits: bool
) -> None:
    assert run_binding([the_claim], [the_pv]) == (() if fits else (BIND,))


def test_pre_bound_pv_on_another_node_hides_other_matches() -> None:
    pvs = [free("good"), free("prebound", claim=("default", "c"), affinity=on("node2"))]
    assert run_binding([claim()], pvs) == (BIND,)


def test_pv_claim_ref_uid_must_match_when_set() -> None:
    the_pv = free("v", claim=("default", "c"), phase="Bound")
    the_pv["spec"]["claimRef"]["uid"] = "someone-else"
    assert run_binding([claim()], [the_pv]) == (BIND,)
    the_pv["spec"]["claimRef"]["uid"] = "uid-c"
    assert run_binding([claim()], [the_pv]) == ()


def test_pv_class_annotation_wins_over_spec() -> None:
    the_pv = free("v")
    the_pv["metadata"]["annotations"] = {"volume.beta.kubernetes.io/storage-class": "other"}
    assert run_binding([claim()], [the_pv]) == (BIND,)


def test_claim_class_annotation_wins_over_spec() -> None:
    annotated = claim(
        storage_class=IMMEDIATE_CLASS,
        annotations={"volume.beta.kubernetes.io/storage-class": WAIT},
    )
    assert run_binding([annotated], [free("v")]) == ()


def test_pv_match_fields_never_match() -> None:
    the_pv = free("v", affinity=None)
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node1"]}]}
    the_pv["spec"]["nodeAffinity"] = {"required": {"nodeSelectorTerms": [term]}}
    assert run_binding([claim()], [the_pv]) == (BIND,)


def test_deleting_pv_is_skipped() -> None:
    the_pv = free("v")
    the_pv["metadata"]["deletionTimestamp"] = "2020-01-01T00:00:00Z"
    assert run_binding([claim()], [the_pv]) == (BIND,)


def test_one_pv_cannot_serve_two_claims() -> None:
    claims = [pvc(n, request="1G", storage_class=WAIT) for n in ("a", "b")]
    assert run_binding(claims, [free("only")]) == (BIND,)
    assert run_binding(claims, [free("one"), free("two")]) == ()


# -- end to end ----------------------------------------------------------------------------

DEFAULT_PREDICATES = policy(list(names.DEFAULT_PREDICATE_ORDER), [])


def two_nodes(*objects: Mapping[str, Any]) -> Any:
    return cluster(
        [node("node1", labels={"nodeKey": "node1"}), node("node2", labels={"nodeKey": "node2"})],
        [],
        [*CLASSES, *objects],
    )


def test_wait_for_first_consumer_claim_goes_where_a_local_pv_is() -> None:
    state = two_nodes(free("local-1"), claim())
    for _ in range(3):
        decision = decide(pod("db", volumes=[claim_volume("c")]), state, DEFAULT_PREDICATES)
        assert decision.node == "node1"
        assert decision.failed == {"node2": [BIND]}


def test_bound_claim_goes_where_its_pv_is() -> None:
    state = two_nodes(PV_BOUND, BOUND_PVC)
    decision = decide(pod("db", volumes=[claim_volume("bound-pvc")]), state, DEFAULT_PREDICATES)
    assert decision.node == "node1"
    assert decision.failed == {"node2": [NODE_CONFLICT]}


def test_unbound_immediate_claim_fails_on_every_node() -> None:
    state = two_nodes(IMMEDIATE_UNBOUND)
    incoming = pod("db", volumes=[claim_volume("immediate-unbound-pvc")])
    decision = decide(incoming, state, DEFAULT_PREDICATES)
    assert decision.node is None
    assert decision.message == f"0/2 nodes are available: 2 {IMMEDIATE}."


# -- FindPodVolumes' result on the decision ---------------------------------------------------


def plan_of(decision: Any) -> dict[str, str]:
    """Claim name -> "pv NAME", "provision" or "bound NAME", as the decision carries it."""
    volumes = decision.volumes
    assert volumes is not None and volumes.node == decision.node
    out = {pvc.name: f"bound {pv.name}" for pvc, pv in volumes.bound}
    out |= {pvc.name: f"pv {pv.name}" for pvc, pv in volumes.matched}
    out |= {pvc.name: "provision" for pvc in volumes.provisioned}
    return out


def binding_pod(*claims: str) -> dict[str, Any]:
    return pod("db", volumes=[claim_volume(c) for c in claims])


@pytest.mark.parametrize(
    ("objects", "claims", "expected"),
    [
        pytest.param(
            [free("big", capacity="10G"), free("small", capacity="2G"), claim()],
            ["c"],
            {"c": "pv small"},
            id="smallest-fit",
        ),
        pytest.param(
            [free("exact", capacity="1G"), free("bigger", capacity="2G"), claim()],
            ["c"],
            {"c": "pv exact"},
            id="exact-size-is-smallest",
        ),
        pytest.param(
            [free("tiny", capacity="500M"), free("ok", capacity="3G"), claim()],
            ["c"],
            {"c": "pv ok"},
            id="too-small-is-skipped",
        ),
        pytest.param(
            [
                free("rwo", capacity="1G", access_modes=[RWO]),
                free("rox", capacity="3G", access_modes=[RWO, ROX]),
                claim(access_modes=[RWO, ROX]),
            ],
            ["c"],
            {"c": "pv rox"},
            id="access-modes-decide",
        ),
        pytest.param(
            [
                free("other-class", capacity="1G", storage_class="other"),
                free("right-class", capacity="3G"),
                claim(),
            ],
            ["c"],
            {"c": "pv right-class"},
            id="class-decides",
        ),
        pytest.param(
            [
                free("on-node2", capacity="1G", affinity=on("node2")),
                free("on-node1", capacity="3G"),
                claim(),
            ],
            ["c"],
            {"c": "pv on-node1"},
            id="node-affinity-decides",
        ),
        pytest.param(
            [
                free("five", capacity="5G"),
                free("one", capacity="1G"),
                pvc("big", request="4G", storage_class=WAIT),
                pvc("small", request="1G", storage_class=WAIT),
            ],
            ["big", "small"],
            {"small": "pv one", "big": "pv five"},
            id="claims-smallest-first-one-pv-each",
        ),
        pytest.param(
            [PROVISIONED_PVC],
            ["provisioned-pvc"],
            {"provisioned-pvc": "provision"},
            id="provisioned",
        ),
        pytest.param(
            [free("local", capacity="5G"), claim(), PROVISIONED_PVC, PV_BOUND, BOUND_PVC],
            ["c", "provisioned-pvc", "bound-pvc"],
            {"c": "pv local", "provisioned-pvc": "provision", "bound-pvc": "bound pv-bound"},
            id="matched-provisioned-and-bound",
        ),
    ],
)
def test_the_decision_says_how_each_claim_binds_on_the_chosen_node(
    objects: list[dict[str, Any]], claims: list[str], expected: dict[str, str]
) -> None:
    decision = decide(binding_pod(*claims), two_nodes(*objects), DEFAULT_PREDICATES)
    assert decision.node == "node1"
    assert plan_of(decision) == expected


def test_bound_claims_need_no_binding() -> None:
    decision = decide(binding_pod("bound-pvc"), two_nodes(PV_BOUND, BOUND_PVC), DEFAULT_PREDICATES)
    assert decision.volumes is not None and not decision.volumes.needs_binding


@pytest.mark.parametrize(
    ("the_pod", "the_policy"),
    [
        pytest.param(pod("web"), DEFAULT_PREDICATES, id="pod-without-volumes"),
        pytest.param(
            pod("web", volumes=[{"name": "scratch", "emptyDir": {}}]),
            DEFAULT_PREDICATES,
            id="pod-without-claims",
        ),
        pytest.param(
            binding_pod("c"),
            policy(["PodFitsResources"], []),
            id="policy-without-CheckVolumeBinding",
        ),
    ],
)
def test_no_volume_plan_without_claims_or_without_the_predicate(
    the_pod: dict[str, Any], the_policy: dict[str, Any]
) -> None:
    decision = decide(the_pod, two_nodes(free("local"), claim()), the_policy)
    assert decision.node is not None
    assert decision.volumes is None


def test_the_lone_feasible_node_carries_the_plan_when_not_explaining() -> None:
    from policy_scheduler.engine.algorithm import Scheduler

    state = two_nodes(free("local"), claim())
    decision = decide(binding_pod("c"), state, DEFAULT_PREDICATES, Scheduler(explain=False))
    assert plan_of(decision) == {"c": "pv local"}
