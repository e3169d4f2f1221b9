"""``simulate --config``: a KubeSchedulerConfiguration's profiles decide, as v1.30 would.

Each profile serves the pods of its schedulerName; the policies decided by v1.30's
cycle break ties at random (``--seed``), try a pod's nominated node first, stop at the
first feasible node when nothing scores, and end a fit error with PostFilter's message.
Legacy policies decide exactly as before (round-robin ties, the legacy message).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from builders import node, pod
from policy_scheduler.cli import main
from policy_scheduler.engine import plugins

V1 = "kubescheduler.config.k8s.io/v1"
DEFAULT = "default-scheduler"


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def write(tmp_path: Path, name: str, *objects: dict[str, Any]) -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(objects))
    return str(path)


def configuration(*profiles: dict[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = {"apiVersion": V1, "kind": "KubeSchedulerConfiguration"}
    if profiles:
        data["profiles"] = list(profiles)
    return data


def scores_only(*score: str) -> dict[str, Any]:
    """A profile of ``score`` plugins alone (no Filter plugin), default-scheduler."""
    return {
        "schedulerName": DEFAULT,
        "plugins": {
            "multiPoint": {
                "enabled": [{"name": "PrioritySort"}, {"name": "DefaultBinder"}],
                "disabled": [{"name": "*"}],
            },
            "score": {"enabled": [{"name": name} for name in score]},
        },
    }


def decisions(out: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = json.loads(out)["decisions"]
    return found


def placements(out: str) -> list[str | None]:
    return [d["node"] for d in decisions(out)]


def same_nodes(count: int) -> list[dict[str, Any]]:
    return [node(f"node-{i}") for i in range(count)]


# -- profiles by schedulerName ------------------------------------------------------------


def test_each_profile_decides_the_pods_of_its_scheduler_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = configuration(
        {"schedulerName": DEFAULT},
        {
            "schedulerName": "packer",
            "pluginConfig": [
                {
                    "name": "NodeResourcesFit",
                    "args": {"scoringStrategy": {"type": "MostAllocated"}},
                }
            ],
        },
    )
    objects = write(
        tmp_path,
        "cluster.yaml",
        node("busy", cpu="4"),
        node("idle", cpu="4"),
        pod("running", requests={"cpu": "3"}, node_name="busy"),
        pod("spread", requests={"cpu": "500m"}),
        pod("packed", requests={"cpu": "500m"}, schedulerName="packer"),
        pod("other", requests={"cpu": "500m"}, schedulerName="someone-else"),
    )
    code, out, err = run(
        [
            "simulate",
            "--config",
            write(tmp_path, "config.yaml", config),
            "-f",
            objects,
            "-o",
            "summary",
        ],
        capsys,
    )
    assert code == 0
    assert out == "default/spread -> idle\ndefault/packed -> busy\n"
    assert "note: skipping 1 pending pod(s) of schedulerName 'someone-else'" in err
    assert "policies 'default-scheduler', 'packer': 2/2 pods scheduled" in err


def test_the_json_names_the_profiles_and_scores_are_the_plugins_0_to_100(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    objects = write(tmp_path, "c.yaml", node("a"), pod("p", requests={"cpu": "1"}))
    config = write(tmp_path, "config.yaml", configuration())
    code, out, _ = run(["simulate", "--config", config, "-f", objects, "-o", "json"], capsys)
    assert code == 0
    report = json.loads(out)
    assert report["policy"] == DEFAULT
    (decision,) = report["decisions"]
    assert decision["node"] == "a"
    priorities = decision["scores"]["a"]["priorities"]
    assert set(priorities) == {
        "TaintToleration",
        "NodeAffinity",
        "NodeResourcesFit",
        "VolumeBinding",
        "PodTopologySpread",
        "InterPodAffinity",
        "NodeResourcesBalancedAllocation",
        "ImageLocality",
    }
    # 4 cpu, 8Gi: LeastAllocated (3/4 cpu free, ~97.5% memory free) -> 86.
    assert priorities["NodeResourcesFit"] == 86
    assert priorities["TaintToleration"] == 100


def test_a_profile_takes_the_place_of_an_input_policy_of_its_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = {
        "apiVersion": "policyscheduler.io/v1alpha1",
        "kind": "SchedulingPolicy",
        "metadata": {"name": DEFAULT},
        "spec": {"schedulerName": DEFAULT, "predicates": [], "priorities": []},
    }
    objects = write(tmp_path, "c.yaml", policy, node("a"), pod("p"))
    config = write(tmp_path, "config.yaml", configuration())
    code, out, err = run(["simulate", "--config", config, "-f", objects, "-o", "json"], capsys)
    assert code == 0
    assert f"ignoring policy '{DEFAULT}': the --config profile of that name takes its place" in err
    assert "NodeResourcesFit" in decisions(out)[0]["scores"]["a"]["priorities"]


def test_a_configuration_among_the_inputs_is_ignored_with_a_hint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    objects = write(tmp_path, "c.yaml", configuration(), node("a"), pod("p"))
    code, _, err = run(["simulate", "-f", objects, "-o", "summary"], capsys)
    assert code == 0
    assert "(to decide with its profiles: --config FILE)" in err


def test_policy_and_config_exclude_each_other(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write(tmp_path, "config.yaml", configuration())
    with pytest.raises(SystemExit) as exited:
        main(["simulate", "-f", config, "--config", config, "--policy", config])
    assert exited.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("content", "error"),
    [
        pytest.param(
            [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "a"}}],
            "expected one KubeSchedulerConfiguration, found Node",
            id="not a configuration",
        ),
        pytest.param(
            [configuration(), configuration()],
            "expected one KubeSchedulerConfiguration, found KubeSchedulerConfiguration, "
            "KubeSchedulerConfiguration",
            id="two configurations",
        ),
        pytest.param(
            [configuration({"plugins": {"score": {"enabled": [{"name": "NodePorts"}]}}})],
            "KubeSchedulerConfiguration: profiles[0].plugins.score.enabled[0].name: "
            '"NodePorts" does not implement score (it implements preFilter, filter)',
            id="refused as kube-scheduler refuses it",
        ),
    ],
)
def test_a_bad_config_is_one_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: list[Any], error: str
) -> None:
    config = write(tmp_path, "config.yaml", *content)
    objects = write(tmp_path, "c.yaml", node("a"))
    code, out, err = run(["simulate", "--config", config, "-f", objects], capsys)
    assert (code, out) == (1, "")
    assert err.startswith("error: ") and error in err
    assert len(err.splitlines()) == 1


# -- validate / convert compile the profiles --------------------------------------------------


@pytest.fixture
def without_volume_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    """As if policy-scheduler had no VolumeZone (an in-tree plugin of v1.30's defaults)."""
    monkeypatch.delitem(plugins.INTREE_CLASSES, "VolumeZone")
    monkeypatch.delitem(plugins.INTREE, "VolumeZone", raising=False)


MISSING = (
    "KubeSchedulerConfiguration: profiles[0] (\"default-scheduler\"): plugin 'VolumeZone' is "
    "an in-tree plugin of kube-scheduler v1.34 that policy-scheduler does not run; disable it "
    "in this profile"
)


@pytest.mark.usefixtures("without_volume_zone")
@pytest.mark.parametrize("command", ["validate", "convert", "simulate"])
def test_a_plugin_kube_scheduler_runs_and_we_do_not_is_refused_clearly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    config = write(tmp_path, "config.yaml", configuration())
    argv = {
        "validate": ["validate", config],
        "convert": ["convert", config],
        "simulate": ["simulate", "--config", config, "-f", write(tmp_path, "c.yaml", node("a"))],
    }[command]
    code, out, err = run(argv, capsys)
    assert (code, out) == (1, "")
    prefix = "" if command == "validate" else "error: "
    assert err == f"{prefix}{MISSING}\n"


@pytest.mark.usefixtures("without_volume_zone")
def test_disabling_the_missing_plugin_makes_the_profile_valid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = {"plugins": {"multiPoint": {"disabled": [{"name": "VolumeZone"}]}}}
    config = write(tmp_path, "config.yaml", configuration(profile))
    code, out, err = run(["validate", config], capsys)
    assert (code, out, err) == (0, f'KubeSchedulerConfiguration profile "{DEFAULT}" is valid\n', "")


def test_a_profile_the_plugin_constructor_refuses_names_the_profile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from policy_scheduler.engine.intree.imagelocality import ImageLocality

    def refuse(self: Any, args: Any, handle: Any) -> None:
        raise ValueError("no registry")

    monkeypatch.setattr(ImageLocality, "__init__", refuse)
    config = write(tmp_path, "config.yaml", configuration({"schedulerName": "mine"}))
    code, out, err = run(["validate", config], capsys)
    assert (code, out) == (1, "")
    assert err.startswith('KubeSchedulerConfiguration: profiles[0] ("mine"), converted: ')
    assert "plugin 'ImageLocality' failed to start: ValueError: no registry" in err


# -- ties: at random under v1.30's cycle, round-robin under the legacy one ---------------------


def tie_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str, legacy: bool = False
) -> list[str | None]:
    """Eight pods on eight nodes that TaintToleration alone scores alike (always a tie)."""
    objects = write(
        tmp_path, "c.yaml", *same_nodes(8), *[pod(f"p{i}", requests={"cpu": "1"}) for i in range(8)]
    )
    if legacy:
        policy = {
            "apiVersion": "policyscheduler.io/v1alpha1",
            "kind": "SchedulingPolicy",
            "metadata": {"name": "legacy"},
            "spec": {
                "schedulerName": DEFAULT,
                "predicates": [{"name": "PodFitsResources"}],
                "priorities": [{"name": "TaintTolerationPriority", "weight": 1}],
            },
        }
        chosen = ["--policy", write(tmp_path, "policy.yaml", policy)]
    else:
        chosen = [
            "--config",
            write(tmp_path, "config.yaml", configuration(scores_only("TaintToleration"))),
        ]
    code, out, _ = run(["simulate", "-f", objects, *chosen, "-o", "json", *extra], capsys)
    assert code == 0
    return placements(out)


def test_ties_are_broken_at_random_reproducibly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = tie_run(tmp_path, capsys)
    assert tie_run(tmp_path, capsys) == first
    assert tie_run(tmp_path, capsys, "--seed", "0") == first
    others = [tie_run(tmp_path, capsys, "--seed", str(seed)) for seed in (1, 2, 3)]
    assert any(other != first for other in others)
    # Not the rotation's order: kube-scheduler v1.30 picks among the best at random.
    everything = [first, *others]
    assert any(run_ != [f"node-{i}" for i in range(8)] for run_ in everything)


def test_legacy_ties_stay_round_robin_whatever_the_seed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = tie_run(tmp_path, capsys, legacy=True)
    assert plain == [f"node-{i}" for i in range(8)]
    assert tie_run(tmp_path, capsys, "--seed", "7", legacy=True) == plain


def test_every_best_node_is_equally_likely() -> None:
    import random

    from policy_scheduler.engine.algorithm import Scheduler

    scheduler = Scheduler(rng=random.Random(5))
    totals = [3, 9, 1, 9, 9, 2, 9]
    picks = Counter(scheduler._sample_best(totals) for _ in range(8000))
    assert set(picks) == {1, 3, 4, 6}
    assert all(1700 < n < 2300 for n in picks.values()), picks
    assert Scheduler(rng=random.Random(5))._sample_best([1, 5, 2]) == 1


# -- the nominated node first -------------------------------------------------------------------


def nominated_cluster(tmp_path: Path, nominated_to: str) -> str:
    """``late`` is nominated to ``full`` where it fits, but ``empty`` scores higher."""
    waiting = pod("late", requests={"cpu": "1"})
    waiting["status"] = {"nominatedNodeName": nominated_to}
    return write(
        tmp_path,
        "c.yaml",
        node("empty", cpu="4"),
        node("full", cpu="4"),
        pod("running", requests={"cpu": "2"}, node_name="full"),
        waiting,
    )


def test_a_pod_nominated_to_a_node_that_fits_goes_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    objects = nominated_cluster(tmp_path, "full")
    config = write(tmp_path, "config.yaml", configuration())
    code, out, _ = run(["simulate", "--config", config, "-f", objects, "-o", "json"], capsys)
    assert code == 0
    (decision,) = decisions(out)
    assert (decision["node"], decision["feasibleNodes"]) == ("full", ["full"])
    # The legacy default policy searches every node and takes the better one.
    code, out, _ = run(
        [
            "simulate",
            "-f",
            objects,
            "--policy",
            write(tmp_path, "p.yaml", legacy_default()),
            "-o",
            "json",
        ],
        capsys,
    )
    assert placements(out) == ["empty"]


def legacy_default() -> dict[str, Any]:
    return {
        "apiVersion": "policyscheduler.io/v1alpha1",
        "kind": "SchedulingPolicy",
        "metadata": {"name": "legacy"},
        "spec": {"schedulerName": DEFAULT},
    }


def test_a_nominated_node_that_no_longer_fits_is_searched_past(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    waiting = pod("late", requests={"cpu": "3"})
    waiting["status"] = {"nominatedNodeName": "full"}
    objects = write(
        tmp_path,
        "c.yaml",
        node("empty", cpu="4"),
        node("full", cpu="4"),
        pod("running", requests={"cpu": "2"}, node_name="full"),
        waiting,
    )
    config = write(tmp_path, "config.yaml", configuration())
    code, out, _ = run(["simulate", "--config", config, "-f", objects, "-o", "json"], capsys)
    (decision,) = decisions(out)
    assert (code, decision["node"]) == (0, "empty")
    assert decision["failedPredicates"] == {"full": ["Insufficient cpu"]}


# -- nothing to score: the first feasible node ------------------------------------------------


def test_without_scoring_the_first_feasible_node_is_taken_and_every_node_explained(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """v1.30 stops its search at the first feasible node when nothing scores: pods go
    round the rotation one node each; the explanation still gives every node's verdict."""
    profile = {
        "schedulerName": DEFAULT,
        "plugins": {"score": {"disabled": [{"name": "*"}]}, "multiPoint": {"disabled": []}},
    }
    nodes = [*same_nodes(4), node("node-4", unschedulable=True)]
    pods = [pod(f"p{i}", requests={"cpu": "1"}) for i in range(3)]
    objects = write(tmp_path, "c.yaml", *nodes, *pods)
    config = write(tmp_path, "config.yaml", configuration(profile))
    argv = ["simulate", "--config", config, "-f", objects]
    code, out, _ = run([*argv, "-o", "json"], capsys)
    assert code == 0
    found = decisions(out)
    assert [d["node"] for d in found] == ["node-0", "node-1", "node-2"]
    refused = {"node-4": ["node(s) were unschedulable"]}
    assert [d["failedPredicates"] for d in found] == [refused] * 3
    assert [sorted(d["feasibleNodes"]) for d in found] == [[f"node-{i}" for i in range(4)]] * 3
    # The same decisions without the explanation (the operator's, -o summary's).
    code, out, _ = run([*argv, "-o", "summary"], capsys)
    assert out == "default/p0 -> node-0\ndefault/p1 -> node-1\ndefault/p2 -> node-2\n"
    code, out, _ = run(argv, capsys)
    assert (code, out.count("node(s) were unschedulable")) == (0, 3)


# -- the fit error ends with PostFilter's message ------------------------------------------------


def test_the_fit_error_ends_with_the_preemption_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    objects = write(
        tmp_path,
        "c.yaml",
        node("a", cpu="2"),
        node("b", cpu="2"),
        pod("big", requests={"cpu": "3"}),
    )
    config = write(tmp_path, "config.yaml", configuration())
    code, out, _ = run(["simulate", "--config", config, "-f", objects, "-o", "summary"], capsys)
    assert code == 0
    assert out == (
        "default/big: 0/2 nodes are available: 2 Insufficient cpu. no new claims to deallocate, "
        "preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.\n"
    )
    # The legacy default policy's message is v1.17's.
    policy = write(tmp_path, "p.yaml", legacy_default())
    code, out, _ = run(["simulate", "--policy", policy, "-f", objects, "-o", "summary"], capsys)
    assert out == "default/big: 0/2 nodes are available: 2 Insufficient cpu.\n"


def test_preemption_is_evaluated_even_when_a_pre_filter_found_it_hopeless(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data", "namespace": "default"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    waiting = pod("db", volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}])
    objects = write(tmp_path, "c.yaml", node("a"), node("b"), claim, waiting)
    config = write(tmp_path, "config.yaml", configuration())
    code, out, _ = run(["simulate", "--config", config, "-f", objects, "-o", "summary"], capsys)
    assert code == 0
    assert out == (
        "default/db: 0/2 nodes are available: pod has unbound immediate "
        "PersistentVolumeClaims. no new claims to deallocate, preemption: 0/2 nodes are available: "
        "2 Preemption is not helpful for scheduling.\n"
    )


# -- the guide's replay recipe, run as written -----------------------------------------------

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "from-kube-scheduler.md"


def guide_jq_lines() -> list[str]:
    """The ``jq`` lines of the guide's "Compare the decisions" section."""
    text = GUIDE.read_text()
    section = text[text.index("## 5. Compare") : text.index("## 6. Run")]
    return [line for line in section.splitlines() if line.startswith("jq ")]


@pytest.mark.skipif(shutil.which("jq") is None, reason="jq is not installed")
def test_the_guides_replay_recipe_runs_as_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Pods kube-scheduler placed, made pending again by the guide's jq program, listed
    with the node kube-scheduler chose, then decided again by ``simulate --config``."""
    placed = [
        pod(f"web-{i}", requests={"cpu": "1"}, labels={"app": "web"}, node_name=f"n{i}")
        for i in range(2)
    ]
    for obj in placed:
        obj["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    other = pod("db", requests={"cpu": "1"}, labels={"app": "db"}, node_name="n1")
    dump = {"apiVersion": "v1", "kind": "List", "items": [node("n0"), node("n1"), *placed, other]}
    (tmp_path / "cluster.json").write_text(json.dumps(dump))
    (tmp_path / "scheduler-config.yaml").write_text(yaml.safe_dump(configuration()))
    make_pending, list_placed = guide_jq_lines()
    subprocess.run(make_pending, shell=True, cwd=tmp_path, check=True)
    listed = subprocess.run(
        list_placed, shell=True, cwd=tmp_path, check=True, capture_output=True, text=True
    ).stdout
    assert listed == "default/web-0 -> n0\ndefault/web-1 -> n1\n"
    replay = json.loads((tmp_path / "replay.json").read_text())
    assert [p["spec"].get("nodeName") for p in replay["items"][2:]] == [None, None, "n1"]
    code, out, _ = run(
        [
            "simulate",
            "--config",
            str(tmp_path / "scheduler-config.yaml"),
            "-f",
            str(tmp_path / "replay.json"),
            "-o",
            "summary",
        ],
        capsys,
    )
    assert code == 0
    assert [line.split(" -> ")[0] for line in out.splitlines()] == [
        "default/web-0",
        "default/web-1",
    ]


@pytest.mark.parametrize("name", ["coscheduling-v1beta3.yaml", "coscheduling-v1-multipoint.yaml"])
def test_scheduler_plugins_configurations_simulate_as_they_are(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    config = str(Path(__file__).parent / "scheduler-plugins" / name)
    scheduler = yaml.safe_load(Path(config).read_text())["profiles"][0]["schedulerName"]
    objects = write(tmp_path, "objects.yaml", *same_nodes(2), pod("p", schedulerName=scheduler))
    code, out, err = run(["simulate", "--config", config, "-f", objects, "-o", "json"], capsys)
    assert code == 0, err
    assert placements(out) == ["node-0"] or placements(out) == ["node-1"], out
