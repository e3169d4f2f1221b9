"""The offline commands as a person runs them: output contract, errors, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from builders import node, pod, policy
from policy_scheduler import names
from policy_scheduler.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "cluster.yaml"


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def ours(name: str, **kwargs: Any) -> dict[str, Any]:
    """A pending pod for the default policy's schedulerName."""
    return pod(name, schedulerName="policy-scheduler", **kwargs)


def write(tmp_path: Path, name: str, *docs: Any) -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(list(docs)))
    return str(path)


def test_simulate_json_matches_the_contract_key_for_key(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["simulate", "-f", str(EXAMPLE), "-o", "json"], capsys)
    assert code == 0
    report = json.loads(out)
    assert list(report) == ["policy", "decisions"]
    assert report["policy"] == "default"
    for decision in report["decisions"]:
        keys = ["pod", "node", "feasibleNodes", "failedPredicates", "scores", "message"]
        # A pod that fits nowhere also says what single change would make it fit; a
        # placed pod with claims, how they bind on its node; every decision says whom
        # it would preempt (null: nobody).
        if decision["node"] is None:
            keys.append("hints")
        elif decision["pod"].startswith("shop/db-"):
            keys.append("volumes")
        assert list(decision) == [*keys, "preemption"]
        assert decision["preemption"] is None
        for score in decision["scores"].values():
            assert list(score) == ["total", "priorities"]
            assert all(0 <= s <= 10 for s in score["priorities"].values())
        if decision["node"] is None:
            assert decision["message"].startswith("0/8 nodes are available: ")
        else:
            assert decision["message"] == "" and decision["node"] in decision["feasibleNodes"]
    placed = {d["pod"]: d["node"] for d in report["decisions"]}
    assert placed["ml/gpu-train"] == "node-b2"  # the only GPU node, tainted and tolerated
    assert placed["research/giant-simulation"] is None
    assert placed["shop/cache-1"] != "node-a2"  # anti-affinity with cache-0


def test_simulate_table_names_the_choice_and_the_refusals(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(["simulate", "-f", str(EXAMPLE)], capsys)
    assert code == 0
    assert "ml/gpu-train -> node-b2" in out
    assert "research/giant-simulation: not scheduled: 0/8 nodes are available:" in out
    # node-b3 is not ready: the default policy sees the lifecycle controller's taint.
    assert "node-b3  node(s) had taints that the pod didn't tolerate" in out
    assert "skipping pod batch/gated-job: has schedulingGates" in err


def test_decisions_in_one_file_see_each_other(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # One node with room for one of the two pods: the second must not get it too.
    path = write(
        tmp_path,
        "c.yaml",
        node("only", cpu="1", memory="1Gi"),
        ours("a", requests={"cpu": "600m"}),
        ours("b", requests={"cpu": "600m"}),
    )
    _, out, _ = run(["simulate", "-f", path, "-o", "json"], capsys)
    decisions = json.loads(out)["decisions"]
    assert [d["node"] for d in decisions] == ["only", None]
    assert decisions[1]["failedPredicates"] == {"only": ["Insufficient cpu"]}
    assert decisions[1]["message"] == "0/1 nodes are available: 1 Insufficient cpu."


def test_queue_order_is_priority_then_age(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old, young, vip = ours("old"), ours("young"), ours("vip", priority=100)
    old["metadata"]["creationTimestamp"] = "2024-01-01T00:00:00Z"
    young["metadata"]["creationTimestamp"] = "2024-06-01T00:00:00Z"
    vip["metadata"]["creationTimestamp"] = "2024-09-01T00:00:00Z"
    path = write(tmp_path, "c.yaml", node("n"), young, old, vip)
    _, out, _ = run(["simulate", "-f", path, "-o", "json"], capsys)
    assert [d["pod"] for d in json.loads(out)["decisions"]] == [
        "default/vip",
        "default/old",
        "default/young",
    ]


def test_unquoted_yaml_timestamps_are_read_as_kubectl_reads_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Hand-written YAML leaves timestamps unquoted; YAML would make them dates, kubectl
    # keeps the text. The older pod goes first, and nothing fails to be read.
    text = yaml.safe_dump_all([node("n"), ours("young"), ours("old")])
    text = text.replace("name: young\n", "name: young\n  creationTimestamp: 2024-06-01T00:00:00Z\n")
    text = text.replace("name: old\n", "name: old\n  creationTimestamp: 2024-01-01T00:00:00Z\n")
    # "\n  name: n": the node's own name, not its hostname label (a key given twice is refused).
    text = text.replace("\n  name: n\n", "\n  name: n\n  creationTimestamp: 2023-01-01T00:00:00Z\n")
    path = tmp_path / "c.yaml"
    path.write_text(text)
    code, out, err = run(["simulate", "-f", str(path), "-o", "json"], capsys)
    assert code == 0, err
    assert err == ""
    decisions = json.loads(out)["decisions"]
    assert [(d["pod"], d["node"]) for d in decisions] == [
        ("default/old", "n"),
        ("default/young", "n"),
    ]


def test_simulate_reads_a_kind_list_and_a_policy_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    listing = {"apiVersion": "v1", "kind": "List", "items": [node("a"), node("b"), pod("p")]}
    path = write(tmp_path, "list.yaml", listing)
    pol = write(tmp_path, "p.yaml", policy(["PodFitsResources"], [("EqualPriority", 3)]))
    code, out, _ = run(["simulate", "-f", path, "--policy", pol, "-o", "json"], capsys)
    assert code == 0
    [decision] = json.loads(out)["decisions"]
    assert decision["scores"]["a"] == {"total": 3, "priorities": {"EqualPriority": 1}}


def test_simulate_skip_extenders_says_so_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "c.yaml", node("n"), pod("p"))
    legacy = str(ROOT / "examples" / "legacy-policy.json")
    code, out, err = run(["simulate", "-f", path, "--policy", legacy, "--skip-extenders"], capsys)
    assert code == 0
    assert "default/p: not scheduled" in out  # the policy wants a zone label
    assert err == (
        "note: --skip-extenders: policy 'default' has 1 extender(s); they are not called, "
        "so their filters and scores are left out\n"
    )


NAMELESS_NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {}, "status": {}}


@pytest.mark.parametrize(
    ("docs", "message"),
    [
        # A malformed pod is skipped with a note (tests/cli/test_unreadable_pods.py).
        pytest.param([NAMELESS_NODE], "Node: metadata.name: is required", id="malformed node"),
        pytest.param(
            [node("n", cpu="four")],
            "Node \"n\": status.allocatable.cpu: not a quantity: 'four'",
            id="bad node quantity",
        ),
    ],
)
def test_bad_input_exits_1_naming_the_field_without_traceback(
    tmp_path: Path, docs: list[Any], message: str
) -> None:
    path = write(tmp_path, "bad.yaml", *docs)
    result = subprocess.run(
        [sys.executable, "-m", "policy_scheduler.cli", "simulate", "-f", path],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1
    assert message in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("legacy", "field"),
    [
        pytest.param(
            {"priorities": [{"name": "LeastRequestedPriority", "weight": 0}]},
            "priorities[0].weight",
            id="zero weight",
        ),
        pytest.param(
            {"predicates": [{"name": "NoSuchPredicate"}]},
            "predicates[0].name",
            id="unknown name without argument",
        ),
        pytest.param(
            {"hardPodAffinitySymmetricWeight": 101},
            "hardPodAffinitySymmetricWeight",
            id="symmetric weight out of range",
        ),
        pytest.param(
            {
                "extenders": [
                    {"urlPrefix": "http://a", "bindVerb": "bind"},
                    {"urlPrefix": "http://b", "bindVerb": "bind"},
                ]
            },
            "extenders",
            id="two binders",
        ),
    ],
)
@pytest.mark.parametrize("command", ["convert", "validate"])
def test_legacy_policies_the_old_scheduler_refused_are_refused(
    tmp_path: Path, legacy: dict[str, Any], field: str, command: str
) -> None:
    path = tmp_path / "legacy.json"
    path.write_text(json.dumps({"kind": "Policy", "apiVersion": "v1", **legacy}))
    result = subprocess.run(
        [sys.executable, "-m", "policy_scheduler.cli", command, str(path)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1
    assert field in result.stderr
    assert "Traceback" not in result.stderr


def test_convert_prints_an_accepted_policy_with_the_legacy_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(
        ["convert", str(ROOT / "examples" / "legacy-policy.json"), "--name", "migrated"], capsys
    )
    assert code == 0
    converted = yaml.safe_load(out)
    assert converted["metadata"]["name"] == "migrated"
    orders = {p["name"]: p["order"] for p in converted["spec"]["predicates"]}
    # Legacy fixed order: HostName, PodFitsHostPorts, MatchNodeSelector, PodFitsResources,
    # NoDiskConflict, then the labelsPresence predicate in CheckNodeLabelPresence's slot.
    assert sorted(orders, key=orders.__getitem__) == [
        "HostName",
        "PodFitsHostPorts",
        "MatchNodeSelector",
        "PodFitsResources",
        "NoDiskConflict",
        "ZoneRequired",
    ]
    path = tmp_path / "converted.yaml"
    path.write_text(out)
    assert run(["validate", str(path)], capsys)[0] == 0


def test_validate_reports_every_problem(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = policy(
        [{"name": "Custom"}],
        [("LeastRequestedPriority", -1)],
        hardPodAffinitySymmetricWeight=200,
    )
    code, _, err = run(["validate", write(tmp_path, "p.yaml", bad)], capsys)
    assert code == 1
    for field in (
        "spec.predicates[0]",
        "spec.priorities[0].weight",
        "spec.hardPodAffinitySymmetricWeight",
    ):
        assert field in err


@pytest.mark.parametrize(
    ("doc", "note"),
    [
        pytest.param(
            policy([{"name": "PodFitsHost"}], []),
            'note: SchedulingPolicy "test": spec.predicates[0].name: PodFitsHost is the seeds\' '
            "name of HostName, accepted as it",
            id="seed-name-in-a-schedulingpolicy",
        ),
        pytest.param(
            {"kind": "Policy", "apiVersion": "v1", "predicates": [{"name": "CheckNodeCondition"}]},
            "note: Policy: predicates[0].name: kube-scheduler v1.12+ with default feature gates "
            "refused CheckNodeCondition",
            id="gate-off-predicate-in-a-legacy-policy",
        ),
    ],
)
def test_validate_notes_what_it_accepts_with_a_difference(
    doc: dict[str, Any], note: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(["validate", write(tmp_path, "p.yaml", doc)], capsys)
    assert code == 0
    assert "is valid" in out
    assert note in err


SAFE_PREDICATES = [
    "CheckNodeUnschedulable",
    "GeneralPredicates",
    "PodToleratesNodeTaints",
    "CheckVolumeBinding",
    "NoVolumeZoneConflict",
    "EvenPodsSpread",
    "MatchInterPodAffinity",
]


@pytest.mark.parametrize(
    ("predicates", "warnings"),
    [
        pytest.param(SAFE_PREDICATES, [], id="every-safeguard"),
        pytest.param(None, [], id="absent-the-default-set"),
        pytest.param(
            [p for p in SAFE_PREDICATES if p != "MatchInterPodAffinity"],
            [
                'warning: SchedulingPolicy "test": spec.predicates: leaves out '
                "MatchInterPodAffinity: required pod affinity and anti-affinity are ignored"
            ],
            id="no-pod-affinity",
        ),
        pytest.param(
            ["CheckNodeUnschedulable", "GeneralPredicates", "PodToleratesNodeTaints"],
            [
                "leaves out MatchInterPodAffinity: ",
                "leaves out EvenPodsSpread: topologySpreadConstraints with whenUnsatisfiable: "
                "DoNotSchedule are ignored",
                "leaves out CheckVolumeBinding: PersistentVolumeClaims are not matched",
                "leaves out NoVolumeZoneConflict: ",
            ],
            id="the-old-bin-packing-example",
        ),
        pytest.param(
            # GeneralPredicates' parts, listed one by one, protect as much.
            ["PodFitsResources", "PodFitsHostPorts", "PodSelectorMatches"]
            + [p for p in SAFE_PREDICATES if p != "GeneralPredicates"],
            [],
            id="general-predicates-in-parts",
        ),
        pytest.param(
            [p for p in SAFE_PREDICATES if p != "GeneralPredicates"] + ["PodFitsResources"],
            [
                "leaves out PodFitsHostPorts (part of GeneralPredicates): two pods may get the "
                "same hostPort on one node",
                "leaves out MatchNodeSelector (part of GeneralPredicates): nodeSelector and "
                "required node affinity are ignored",
            ],
            id="resources-only",
        ),
        pytest.param(
            [],
            ["leaves out PodFitsResources (part of GeneralPredicates): requests are not checked"],
            id="no-filtering-at-all",
        ),
    ],
)
def test_validate_warns_of_a_left_out_safeguard_and_accepts_the_policy(
    predicates: list[str] | None,
    warnings: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(["validate", write(tmp_path, "p.yaml", policy(predicates))], capsys)
    assert code == 0
    assert out == 'SchedulingPolicy "test" is valid\n'
    for warning in warnings:
        assert warning in err
    if not warnings:
        assert "warning" not in err


@pytest.mark.parametrize(
    ("text", "code", "stream_text"),
    [
        pytest.param(
            '{\n\t"kind": "Policy",\n\t"predicates": [{"name": "HostName"}]\n}\n',
            0,
            'Policy "default" is valid',
            id="tab-indented-json-yaml-would-refuse",
        ),
        pytest.param(
            '{"kind": "Policy", "predicates": [{"name": "HostName"},]}\n',
            1,
            "p.json: not valid JSON",
            id="trailing-comma-yaml-would-forgive",
        ),
    ],
)
def test_json_files_are_read_as_json(
    text: str, code: int, stream_text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "p.json"
    path.write_text(text)
    got, out, err = run(["validate", str(path)], capsys)
    assert got == code
    assert stream_text in out + err


@pytest.mark.parametrize("tty", [True, False])
def test_progress_only_on_a_terminal(
    tty: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pods = [ours(f"p{i}") for i in range(40)]
    path = write(tmp_path, "c.yaml", node("n"), *pods)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: tty)
    _, _, err = run(["simulate", "-f", path, "-o", "json"], capsys)
    assert ("scheduling: 40/40 pods" in err) is tty


@pytest.mark.parametrize(
    ("example", "predicates", "priorities"),
    [
        pytest.param(
            "default.yaml",
            names.DEFAULT_PREDICATE_ORDER,
            names.DEFAULT_PRIORITY_WEIGHTS,
            id="default-is-the-v1.22-provider",
        ),
        pytest.param(
            "legacy-v1.13.yaml",
            # ...with EvenPodsSpread, which v1.13 lacked: today's pods keep their
            # topologySpreadConstraints (the examples keep every safeguard).
            tuple(
                p
                for p in names.LEGACY_PREDICATE_ORDER
                if p in names.LEGACY_V1_13_PREDICATES | {names.EVEN_PODS_SPREAD}
            ),
            names.LEGACY_V1_13_PRIORITY_WEIGHTS,
            id="legacy-v1.13-is-the-gate-off-provider-with-spread",
        ),
    ],
)
def test_the_spelled_out_provider_examples(
    example: str, predicates: tuple[str, ...], priorities: tuple[tuple[str, int], ...]
) -> None:
    from policy_scheduler.engine.compiler import compile_policy
    from policy_scheduler.simulation import load_policy_file

    compiled = compile_policy(load_policy_file(ROOT / "examples" / "policies" / example))
    assert tuple(p.name for p in compiled.predicates) == predicates
    assert tuple((p.name, p.weight) for p in compiled.priorities) == priorities


def test_the_default_policy_is_the_default_example() -> None:
    from policy_scheduler.engine.compiler import compile_policy
    from policy_scheduler.policy import default_policy

    builtin = compile_policy(default_policy())
    assert tuple(p.name for p in builtin.predicates) == names.DEFAULT_PREDICATE_ORDER
    assert tuple((p.name, p.weight) for p in builtin.priorities) == names.DEFAULT_PRIORITY_WEIGHTS


# -- which policy decides which pod ----------------------------------------------------------


def _policy_object(name: str, scheduler_name: str, priorities: list[Any]) -> dict[str, Any]:
    body = policy(None, priorities, schedulerName=scheduler_name)
    body["metadata"] = {"name": name}
    return body


def test_each_pod_is_decided_by_the_policy_serving_its_scheduler_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(
        tmp_path,
        "c.yaml",
        node("a"),
        node("b"),
        _policy_object("equal", "gpu-scheduler", [("EqualPriority", 3)]),
        ours("web"),
        pod("trainer", schedulerName="gpu-scheduler"),
        pod("plain"),  # default-scheduler: nobody here serves it
    )
    code, out, err = run(["simulate", "-f", path, "-o", "json"], capsys)
    assert code == 0
    report = json.loads(out)
    assert report["policy"] == "default, equal"
    by_pod = {d["pod"]: d for d in report["decisions"]}
    assert sorted(by_pod) == ["default/trainer", "default/web"]
    assert by_pod["default/trainer"]["scores"]["a"]["priorities"] == {"EqualPriority": 1}
    assert "LeastRequestedPriority" in by_pod["default/web"]["scores"]["a"]["priorities"]
    assert (
        "note: skipping 1 pending pod(s) of schedulerName 'default-scheduler': "
        "no policy serves it" in err
    )


def test_a_policy_file_decides_every_pending_pod(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "c.yaml", node("a"), pod("plain"), pod("t", schedulerName="x"))
    pol = write(tmp_path, "p.yaml", policy(None, [("EqualPriority", 1)]))
    code, out, err = run(["simulate", "-f", path, "--policy", pol, "-o", "json"], capsys)
    assert code == 0
    assert [d["pod"] for d in json.loads(out)["decisions"]] == ["default/plain", "default/t"]
    assert "skipping" not in err


def test_two_input_policies_for_one_name_use_the_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(
        tmp_path,
        "c.yaml",
        node("a"),
        _policy_object("first", "policy-scheduler", [("EqualPriority", 1)]),
        _policy_object("second", "policy-scheduler", [("LeastRequestedPriority", 1)]),
        ours("web"),
    )
    code, out, err = run(["simulate", "-f", path, "-o", "json"], capsys)
    assert code == 0
    assert json.loads(out)["policy"] == "first"
    assert "warning: policy 'second' is not used: " in err
    assert 'already served by SchedulingPolicy "first"' in err


def test_the_default_policy_can_serve_another_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "c.yaml", node("a"), pod("plain"))
    code, out, _ = run(
        ["simulate", "-f", path, "--scheduler-name", "default-scheduler", "-o", "json"], capsys
    )
    assert code == 0
    assert [d["node"] for d in json.loads(out)["decisions"]] == ["a"]


@pytest.mark.parametrize(
    ("argv", "seconds"),
    [
        pytest.param([], 600.0, id="default-is-kube-schedulers-bindTimeoutSeconds"),
        pytest.param(["--volume-binding-timeout", "30"], 30.0, id="set"),
        pytest.param(["--volume-binding-timeout", "2.5"], 2.5, id="fractional"),
    ],
)
def test_run_takes_the_volume_binding_timeout(argv: list[str], seconds: float) -> None:
    from policy_scheduler.cli import build_parser, options_from_args

    args = build_parser().parse_args(["run", *argv])
    assert options_from_args(args).volume_binding_timeout == seconds


@pytest.mark.parametrize("value", ["0", "-5", "soon"])
def test_run_refuses_a_volume_binding_timeout_that_is_not_positive(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["run", "--volume-binding-timeout", value])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "argument --volume-binding-timeout:" in err
    assert repr(value) in err


@pytest.mark.parametrize(
    ("flag", "value", "says"),
    [
        pytest.param("--resync-period", "-1", "must be at least 0 seconds", id="resync-negative"),
        pytest.param("--resync-period", "often", "not a number of seconds", id="resync-word"),
        pytest.param("--api-timeout", "0", "must be more than 0 seconds", id="api-timeout-zero"),
        pytest.param("--shutdown-timeout", "-3", "must be more than 0 seconds", id="shutdown"),
        pytest.param("--metrics-port", "70000", "at most 65535", id="port-too-high"),
        pytest.param("--health-port", "-1", "must be at least 0", id="port-negative"),
        pytest.param("--qps", "-10", "must be at least 0", id="qps-negative"),
        pytest.param("--burst", "0", "must be at least 1", id="burst-zero"),
        pytest.param("--bind-workers", "0", "must be at least 1", id="no-bind-workers"),
        pytest.param("--bind-workers", "2.5", "not a number", id="fractional-workers"),
    ],
)
def test_run_refuses_numbers_out_of_range_naming_the_flag(
    flag: str, value: str, says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["run", flag, value])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {flag}:" in err
    assert says in err
    assert repr(value) in err


def test_run_accepts_a_zero_resync_period_and_zero_ports() -> None:
    from policy_scheduler.cli import build_parser, options_from_args

    args = build_parser().parse_args(
        ["run", "--resync-period", "0", "--metrics-port", "0", "--health-port", "0"]
    )
    options = options_from_args(args)
    assert (options.resync_period, options.metrics_port, options.health_port) == (0.0, 0, 0)


KUBE_SCHEDULER_WARNING = (
    'warning: SchedulingPolicy "{name}" serves schedulerName "default-scheduler", '
    "kube-scheduler's: the operator serves it only when run with --allow-default-scheduler "
    "(chart value allowDefaultScheduler: true); else it is Accepted=False "
    "(DefaultSchedulerNotAllowed)\n"
)


def test_convert_warns_when_a_profile_serves_default_scheduler(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "default-scheduler"}, {"schedulerName": "mine"}],
    }
    code, out, err = run(["convert", write(tmp_path, "c.yaml", config)], capsys)
    assert code == 0
    assert err == KUBE_SCHEDULER_WARNING.format(name="default-scheduler")
    assert [d["spec"]["schedulerName"] for d in yaml.safe_load_all(out)] == [
        "default-scheduler",
        "mine",
    ]


@pytest.mark.parametrize(
    ("scheduler_name", "warned"), [("default-scheduler", True), ("policy-scheduler", False)]
)
def test_convert_of_a_legacy_policy_warns_for_default_scheduler(
    scheduler_name: str, warned: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    legacy = str(ROOT / "examples" / "legacy-policy.json")
    code, _, err = run(["convert", legacy, "--scheduler-name", scheduler_name], capsys)
    assert code == 0
    assert (KUBE_SCHEDULER_WARNING.format(name="default") in err) is warned
    assert ("default-scheduler" in err) is warned


def test_run_refuses_to_serve_default_scheduler_unless_allowed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = run(["run", "--scheduler-name", "default-scheduler"], capsys)
    assert code == 1
    assert err == (
        'error: --scheduler-name "default-scheduler" is kube-scheduler\'s own name: add '
        "--allow-default-scheduler (chart value allowDefaultScheduler: true) to serve it\n"
    )


def test_allow_default_scheduler_from_the_flag_and_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from policy_scheduler.cli import build_parser, options_from_args

    parser = build_parser()
    assert options_from_args(parser.parse_args(["run"])).allow_default_scheduler is False
    allowed = parser.parse_args(["run", "--allow-default-scheduler"])
    assert options_from_args(allowed).allow_default_scheduler is True
    # kopf_entry in a process of its own: importing it registers its startup handler on
    # the shared Kopf registry, which every later operator of this process would run.
    probe = (
        "from policy_scheduler.kopf_entry import options_from_environment as o; "
        "print(o().allow_default_scheduler)"
    )
    for value, expected in (("", "False"), ("true", "True")):
        monkeypatch.setenv("POLICY_SCHEDULER_ALLOW_DEFAULT_SCHEDULER", value)
        done = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60
        )
        assert done.stdout.strip() == expected, done.stderr
