"""NodeUnschedulable: kube-scheduler v1.30's TestNodeUnschedulable table, and ours."""

from __future__ import annotations

import pytest

from intree.cases import FilterCase, check_filter, st_node, st_pod, unresolvable

ERR = "node(s) were unschedulable"
TOLERATES_CORDON = [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]

CASES = [
    pytest.param(
        FilterCase(
            "NodeUnschedulable",
            st_pod(),
            [st_node("n", unschedulable=True)],
            {"n": unresolvable(ERR)},
        ),
        id="Does not schedule pod to unschedulable node (node.Spec.Unschedulable==true)",
    ),
    pytest.param(
        FilterCase("NodeUnschedulable", st_pod(), [st_node("n")]),
        id="Schedule pod to normal node",
    ),
    pytest.param(
        FilterCase(
            "NodeUnschedulable",
            st_pod(tolerations=TOLERATES_CORDON),
            [st_node("n", unschedulable=True)],
        ),
        id="Schedule pod with toleration to unschedulable node (node.Spec.Unschedulable==true)",
    ),
    # Ours: a wildcard toleration tolerates the cordon too; a NoExecute one does not.
    pytest.param(
        FilterCase(
            "NodeUnschedulable",
            st_pod(tolerations=[{"operator": "Exists"}]),
            [st_node("n", unschedulable=True)],
        ),
        id="a wildcard toleration tolerates the cordon",
    ),
    pytest.param(
        FilterCase(
            "NodeUnschedulable",
            st_pod(
                tolerations=[
                    {
                        "key": "node.kubernetes.io/unschedulable",
                        "operator": "Exists",
                        "effect": "NoExecute",
                    }
                ]
            ),
            [
                st_node("n", unschedulable=True),
                st_node("m", taints=[{"key": "x", "effect": "NoSchedule"}]),
            ],
            {"n": unresolvable(ERR)},
        ),
        id="a toleration of another effect does not; taints are not its business",
    ),
]


@pytest.mark.parametrize("case", CASES)
def test_node_unschedulable(case: FilterCase) -> None:
    check_filter(case)
