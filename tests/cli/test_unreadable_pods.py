"""One pod ``simulate`` cannot read (an API server would have refused it) is skipped
with a one-line note naming the pod and the field, and the rest are decided, as the
operator reports such a pod and goes on. Before, one such pod in a dump made ``simulate``
exit 1 for every pod."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from builders import node, pod
from policy_scheduler.cli import main

SCHEDULER = "policy-scheduler"


def pending(name: str, **kwargs: Any) -> dict[str, Any]:
    return pod(name, schedulerName=SCHEDULER, **kwargs)


#: minDomains only with DoNotSchedule: the API server's validation refuses it.
MIN_DOMAINS = pending(
    "spread",
    labels={"app": "a"},
    topologySpreadConstraints=[
        {
            "maxSkew": 1,
            "topologyKey": "zone",
            "whenUnsatisfiable": "ScheduleAnyway",
            "minDomains": 2,
            "labelSelector": {"matchLabels": {"app": "a"}},
        }
    ],
)


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        pytest.param(
            MIN_DOMAINS,
            'Pod "default/spread": spec.topologySpreadConstraints[0].minDomains: can only be '
            "used with whenUnsatisfiable: DoNotSchedule",
            id="minDomains-with-ScheduleAnyway",
        ),
        pytest.param(
            pending("greedy", requests={"cpu": "lots"}),
            'Pod "default/greedy": spec.containers[0].resources.requests.cpu: not a '
            "quantity: 'lots'",
            id="bad-quantity",
        ),
    ],
)
def test_an_unreadable_pod_is_skipped_with_a_note_and_the_rest_decided(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: dict[str, Any], field: str
) -> None:
    path = tmp_path / "dump.yaml"
    path.write_text(yaml.safe_dump_all([node("n1"), pending("before"), bad, pending("after")]))
    assert main(["simulate", "-f", str(path), "-o", "summary"]) == 0
    out, err = capsys.readouterr()
    assert err.splitlines() == [
        f"note: skipping a pod that cannot be read: {path}: {field}",
        "policy 'default': 2/2 pods scheduled",
    ]
    assert [line.split()[0] for line in out.splitlines()] == ["default/before", "default/after"]
