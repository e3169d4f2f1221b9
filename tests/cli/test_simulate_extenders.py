"""``simulate`` with a policy's extenders: real HTTP extenders on 127.0.0.1, through cli.main."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from builders import node, pod, policy
from extender_server import HANG, ExtenderServer, Raw, keep, score
from policy_scheduler.cli import main

GPU_NODE = {"cpu": "4", "memory": "8Gi", "pods": 110, "example.com/gpu": 2}


def simulate(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    objects: list[dict[str, Any]],
    extenders: list[dict[str, Any]],
    *args: str,
    priorities: list[Any] | None = None,
    output: str = "json",
) -> tuple[Any, str]:
    inputs = tmp_path / "cluster.yaml"
    inputs.write_text(yaml.safe_dump_all(objects))
    spec = policy(["PodFitsResources"], priorities or [], extenders=extenders)
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text(yaml.safe_dump(spec))
    code = main(["simulate", "-f", str(inputs), "--policy", str(policy_file), "-o", output, *args])
    out, err = capsys.readouterr()
    assert code == 0, err
    return (json.loads(out) if output == "json" else out), err


def refuse_n3_prefer_n2() -> dict[str, Any]:
    return {
        "filter": keep(lambda n: "no free GPU" if n == "n3" else None),
        "prioritize": score({"n1": 1, "n2": 4}),
    }


def filter_and_score(url: str) -> dict[str, Any]:
    return {"urlPrefix": url, "filterVerb": "filter", "prioritizeVerb": "prioritize", "weight": 2}


def test_filter_and_scores_decide_and_show(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with ExtenderServer(refuse_n3_prefer_n2()) as server:
        report, err = simulate(
            tmp_path,
            capsys,
            [node("n1"), node("n2"), node("n3"), pod("p")],
            [filter_and_score(server.url)],
            priorities=[("EqualPriority", 1)],
        )
    assert err == ""
    assert server.verbs() == ["filter", "prioritize"]
    assert server.received[1].node_names == ["n1", "n2"]
    [decision] = report["decisions"]
    assert decision["node"] == "n2"
    assert decision["feasibleNodes"] == ["n1", "n2"]
    assert decision["failedPredicates"] == {"n3": ["no free GPU"]}
    assert decision["scores"] == {
        "n1": {
            "total": 1 + 2 * 1,
            "priorities": {"EqualPriority": 1},
            "extenders": {server.url: 1},
        },
        "n2": {
            "total": 1 + 2 * 4,
            "priorities": {"EqualPriority": 1},
            "extenders": {server.url: 4},
        },
    }


def test_the_table_has_a_column_per_extender(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with ExtenderServer(refuse_n3_prefer_n2()) as server:
        out, _ = simulate(
            tmp_path,
            capsys,
            [node("n1"), node("n2"), node("n3"), pod("p")],
            [filter_and_score(server.url)],
            output="table",
        )
    column = f"EXT 127.0.0.1:{server.port}/scheduler(x2)"
    lines = str(out).splitlines()
    header = next(line for line in lines if "NODE" in line)
    assert header.split() == ["NODE", "RESULT", *column.split(), "TOTAL"]
    assert [
        line.split() for line in lines if line.startswith("  ") and ("n2" in line or "n3" in line)
    ] == [
        ["*", "n2", "fits", "4", "8"],
        ["n3", "no", "free", "GPU"],
    ]


def test_an_extender_failure_is_the_decision_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with ExtenderServer({"filter": lambda r: Raw(500, b"inventory down")}) as server:
        report, _ = simulate(
            tmp_path,
            capsys,
            [node("n1"), node("n2"), pod("p")],
            [{"urlPrefix": server.url, "filterVerb": "filter"}],
        )
    [decision] = report["decisions"]
    expected = (
        f'extender "{server.url}" filter failed: HTTP 500 from {server.url}/filter: inventory down'
    )
    assert (decision["node"], decision["message"], decision["error"]) == (None, expected, expected)


def test_skip_extenders_calls_nothing_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with ExtenderServer({"filter": keep(lambda n: "no")}) as server:
        report, err = simulate(
            tmp_path,
            capsys,
            [node("n1"), pod("p")],
            [{"urlPrefix": server.url, "filterVerb": "filter"}],
            "--skip-extenders",
        )
    assert server.received == []
    assert report["decisions"][0]["node"] == "n1"
    assert err == (
        "note: --skip-extenders: policy 'test' has 1 extender(s); they are not called, "
        "so their filters and scores are left out\n"
    )


def test_node_cache_capable_gets_names_and_answers_with_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with ExtenderServer({"filter": keep(lambda n: None if n == "n2" else "busy")}) as server:
        report, _ = simulate(
            tmp_path,
            capsys,
            [node("n1"), node("n2"), pod("p")],
            [{"urlPrefix": server.url, "filterVerb": "filter", "nodeCacheCapable": True}],
        )
    args = json.loads(server.received[0].body)
    assert "nodes" not in args and args["nodenames"] == ["n1", "n2"]
    assert report["decisions"][0]["node"] == "n2"


def test_managed_resources_choose_the_pods_and_the_extender_checks_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The scheduler ignores example.com/gpu (ignoredByScheduler): only the extender knows
    # that n1 has none left.
    routes = {"filter": keep(lambda n: "Insufficient example.com/gpu" if n == "n1" else None)}
    with ExtenderServer(routes) as server:
        report, _ = simulate(
            tmp_path,
            capsys,
            [
                node("n1", allocatable={"cpu": "4", "memory": "8Gi", "pods": 110}),
                node("n2", allocatable=GPU_NODE),
                pod("web", requests={"cpu": "100m"}),
                pod("train", requests={"cpu": "100m"}, limits={"example.com/gpu": "1"}),
            ],
            [
                {
                    "urlPrefix": server.url,
                    "filterVerb": "filter",
                    "managedResources": [{"name": "example.com/gpu", "ignoredByScheduler": True}],
                }
            ],
        )
    decisions = {d["pod"]: d for d in report["decisions"]}
    assert [r.pod_name for r in server.received] == ["train"]
    assert decisions["default/train"]["node"] == "n2"
    assert decisions["default/train"]["failedPredicates"] == {
        "n1": ["Insufficient example.com/gpu"]
    }
    assert decisions["default/web"]["feasibleNodes"] == ["n1", "n2"]


def test_an_ignorable_hung_extender_is_skipped_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with ExtenderServer({"filter": lambda r: HANG, "prioritize": lambda r: Raw(503)}) as server:
        report, err = simulate(
            tmp_path,
            capsys,
            [node("n1"), node("n2"), pod("p")],
            [
                {
                    "urlPrefix": server.url,
                    "filterVerb": "filter",
                    "prioritizeVerb": "prioritize",
                    "weight": 1,
                    "ignorable": True,
                    "httpTimeout": "200ms",
                }
            ],
        )
    assert report["decisions"][0]["node"] in ("n1", "n2")
    assert err.splitlines() == [
        f'warning: pod default/p: extender "{server.url}" filter failed: no reply from '
        f"{server.url}/filter within 0.2s (ignorable: skipped)",
        f'warning: pod default/p: extender "{server.url}" prioritize failed: HTTP 503 from '
        f"{server.url}/prioritize (prioritize errors are ignored)",
    ]


# -- preemption: the extender's say on victims ------------------------------------------------


def _full_cluster() -> list[dict[str, Any]]:
    """Two one-pod nodes, each full of a low-priority pod; a high-priority pod pending."""
    return [
        node("n1", cpu="1"),
        node("n2", cpu="1"),
        pod("low-1", node_name="n1", requests={"cpu": "800m"}, priority=1),
        pod("low-2", node_name="n2", requests={"cpu": "800m"}, priority=1),
        pod("vip", requests={"cpu": "800m"}, priority=100),
    ]


@pytest.mark.parametrize(
    ("kept", "expected"),
    [
        pytest.param(None, "n1", id="no-say: the first node"),
        pytest.param({"n2": "low-2"}, "n2", id="narrowed to n2"),
        pytest.param({}, None, id="veto: no node left"),
    ],
)
def test_a_preempt_verb_narrows_or_vetoes_the_victims(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    kept: dict[str, str] | None,
    expected: str | None,
) -> None:
    objects = _full_cluster()
    uids = {o["metadata"]["name"]: o["metadata"]["uid"] for o in objects if o["kind"] == "Pod"}

    def preempt(received: Any) -> Any:
        args = json.loads(received.body)
        assert list(args) == ["pod", "nodeNameToMetaVictims"]
        if kept is None:
            return {"nodeNameToMetaVictims": args["nodeNameToMetaVictims"]}
        return {
            "nodeNameToMetaVictims": {
                node_name: {"pods": [{"uid": uids[victim]}], "numPDBViolations": 0}
                for node_name, victim in kept.items()
            }
        }

    with ExtenderServer({"preempt": preempt}) as server:
        extender = {"urlPrefix": server.url, "preemptVerb": "preempt", "nodeCacheCapable": True}
        report, _ = simulate(tmp_path, capsys, objects, [extender])
    assert server.verbs() == ["preempt"]
    first = report["decisions"][0]
    assert first["pod"] == "default/vip" and first["node"] is None
    if expected is None:
        assert first["preemption"] is None
    else:
        victim = {"n1": "default/low-1", "n2": "default/low-2"}[expected]
        assert first["preemption"] == {"node": expected, "victims": [victim]}
