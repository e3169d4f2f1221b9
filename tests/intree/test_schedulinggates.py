"""SchedulingGates: kube-scheduler v1.30's TestPreEnqueue table."""

from __future__ import annotations

from typing import Any

import pytest

from intree.cases import make_plugin, st_pod
from policy_scheduler.engine.cluster import ClusterState
from policy_scheduler.engine.interface import Code
from policy_scheduler.objects import parse_pod


def gated(*names: str) -> dict[str, Any]:
    return st_pod(schedulingGates=[{"name": name} for name in names])


@pytest.mark.parametrize(
    ("pod", "want"),
    [
        pytest.param(st_pod(), None, id="pod does not carry scheduling gates"),
        pytest.param(
            gated("foo", "bar"),
            "waiting for scheduling gates: [foo bar]",
            id="pod carries scheduling gates",
        ),
        pytest.param(gated("one"), "waiting for scheduling gates: [one]", id="one gate"),
    ],
)
def test_pre_enqueue(pod: dict[str, Any], want: str | None) -> None:
    plugin = make_plugin("SchedulingGates", None, ClusterState())
    status = plugin.pre_enqueue(parse_pod(pod))
    if want is None:
        assert status is None
    else:
        assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert status.message == want


def test_a_gate_without_a_name_is_refused_naming_the_field() -> None:
    from policy_scheduler.objects import ObjectError

    with pytest.raises(ObjectError, match=r"spec\.schedulingGates\[0\]"):
        parse_pod(st_pod(name="p", schedulingGates=["not-an-object"]))
