"""``convert`` and ``validate`` of KubeSchedulerConfiguration files, as a person runs them.

One profile per in-tree plugin: the plugin alone (beside a queue sort and a binder), with
arguments kube-scheduler v1.30 accepts, then with arguments it refuses (upstream's
validation tables pick the cases). Accepted, ``validate`` says so and ``convert`` writes
the plugin at exactly the points it implements, with its defaulted args; refused, both
exit 1 and name the field in the file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from policy_scheduler import names, pluginargs
from policy_scheduler.cli import main
from policy_scheduler.policy import parse_policy

V1 = "kubescheduler.config.k8s.io/v1"
V1BETA3 = "kubescheduler.config.k8s.io/v1beta3"


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def write(tmp_path: Path, data: dict[str, Any], name: str = "config.yaml") -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return str(path)


def configuration(*profiles: dict[str, Any], version: str = V1, **fields: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"apiVersion": version, "kind": "KubeSchedulerConfiguration", **fields}
    if profiles:
        data["profiles"] = list(profiles)
    return data


def test_convert_writes_one_policy_per_profile_as_yaml_documents(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = configuration(
        {"schedulerName": "default-scheduler"},
        {
            "schedulerName": "bin-packing",
            "pluginConfig": [
                {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}
            ],
        },
    )
    code, out, err = run(["convert", write(tmp_path, data)], capsys)
    assert code == 0
    # Serving kube-scheduler's name draws the one warning (the operator needs a flag).
    assert err.startswith('warning: SchedulingPolicy "default-scheduler" serves schedulerName')
    assert err.count("\n") == 1
    documents = list(yaml.safe_load_all(out))
    assert [d["metadata"]["name"] for d in documents] == ["default-scheduler", "bin-packing"]
    policies = [parse_policy(d) for d in documents]
    assert [p.spec.schedulerName for p in policies] == ["default-scheduler", "bin-packing"]
    fit = next(e.args for e in policies[1].spec.pluginConfig if e.name == "NodeResourcesFit")
    assert fit["scoringStrategy"]["type"] == "MostAllocated"
    again = run(["convert", write(tmp_path, data, "again.yaml")], capsys)
    assert again[1] == out


def test_convert_json_is_a_list(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["convert", write(tmp_path, configuration()), "-o", "json"], capsys)
    assert code == 0
    listing = json.loads(out)
    assert (listing["apiVersion"], listing["kind"]) == ("v1", "List")
    assert [item["metadata"]["name"] for item in listing["items"]] == ["default-scheduler"]


def test_convert_reads_json_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(configuration()))
    yaml_out = run(["convert", write(tmp_path, configuration())], capsys)[1]
    code, out, _ = run(["convert", str(path)], capsys)
    assert code == 0 and out == yaml_out


def test_convert_refuses_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = configuration({"plugins": {"score": {"enabled": [{"name": "NodePorts", "weight": 2}]}}})
    code, out, err = run(["convert", write(tmp_path, data)], capsys)
    assert (code, out) == (1, "")
    assert err == (
        "error: KubeSchedulerConfiguration: profiles[0].plugins.score.enabled[0].name: "
        '"NodePorts" does not implement score (it implements preFilter, filter)\n'
    )


def test_convert_names_its_policies_after_the_profiles(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(["convert", write(tmp_path, configuration()), "--name", "x"], capsys)
    assert code == 1
    assert "--name and --scheduler-name apply to a legacy Policy" in err


def test_notes_go_to_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = configuration({"schedulerName": "mine"}, version="kubescheduler.config.k8s.io/v1beta3")
    code, out, err = run(["convert", write(tmp_path, data)], capsys)
    assert code == 0 and out.startswith("apiVersion: policyscheduler.io/v1alpha1")
    assert err == (
        "note: KubeSchedulerConfiguration: kubescheduler.config.k8s.io/v1beta3 is read as "
        "kube-scheduler v1.28 read it, the last release that served it\n"
    )


def test_validate_accepts_and_refuses(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = write(
        tmp_path, configuration({"schedulerName": "a"}, {"schedulerName": "b"}), "good.yaml"
    )
    code, out, err = run(["validate", good], capsys)
    assert (code, err) == (0, "")
    assert out == (
        'KubeSchedulerConfiguration profile "a" is valid\n'
        'KubeSchedulerConfiguration profile "b" is valid\n'
    )
    bad = write(tmp_path, configuration({"schedulerName": "a"}, {"schedulerName": "a"}), "bad.yaml")
    code, out, err = run(["validate", bad], capsys)
    assert (code, out) == (1, "")
    assert err == (
        'KubeSchedulerConfiguration: profiles[1].schedulerName: "a" is already the '
        "schedulerName of profiles[0]\n"
    )


# -- one profile per in-tree plugin ----------------------------------------------------------


#: The in-tree volume limits kube-scheduler v1.31 removed: a v1 file (v1.34) refuses
#: them, a v1beta3 one (v1.28) still runs them.
REMOVED_IN_V1_31 = ("EBSLimits", "GCEPDLimits", "AzureDiskLimits", "CinderLimits")


def alone(name: str, args: dict[str, Any] | None) -> dict[str, Any]:
    """A profile running only ``name`` (with a queue sort and a binder to be complete),
    in the newest version that has it."""
    enabled = [{"name": n} for n in dict.fromkeys(["PrioritySort", "DefaultBinder", name])]
    profile: dict[str, Any] = {
        "schedulerName": "only",
        "plugins": {"multiPoint": {"enabled": enabled, "disabled": [{"name": "*"}]}},
    }
    if args is not None:
        profile["pluginConfig"] = [{"name": name, "args": args}]
    return configuration(profile, version=V1BETA3 if name in REMOVED_IN_V1_31 else V1)


@pytest.mark.parametrize("name", REMOVED_IN_V1_31)
def test_a_v1_file_refuses_the_volume_limits_v1_31_removed(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = alone(name, None) | {"apiVersion": V1}
    code, out, err = run(["validate", write(tmp_path, data)], capsys)
    assert (code, out) == (1, "")
    assert err == (
        f"KubeSchedulerConfiguration: profiles[0].plugins.multiPoint.enabled[2].name: "
        f'"{name}" was invalid in {V1}: kube-scheduler v1.31 removed it with the in-tree '
        "volume plugins: NodeVolumeLimits counts those volumes through their CSI driver\n"
    )


#: Per plugin: args kube-scheduler accepts (None: the plugin takes none), and args it
#: refuses with the field at fault (None: nothing to refuse).
CASES: dict[str, tuple[dict[str, Any] | None, tuple[dict[str, Any], str] | None]] = {
    "SchedulingGates": (None, None),
    "PrioritySort": (None, None),
    "NodeUnschedulable": (None, None),
    "NodeName": (None, None),
    "TaintToleration": (None, None),
    "NodeAffinity": (
        {
            "addedAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
                    ]
                }
            }
        },
        (
            {
                "addedAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": 1,
                            "preference": {
                                "matchFields": [
                                    {
                                        "key": "metadata.name",
                                        "operator": "In",
                                        "values": ["node-1", "node-2"],
                                    }
                                ]
                            },
                        }
                    ]
                }
            },
            "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchFields[0].values",
        ),
    ),
    "NodePorts": (None, None),
    "NodeResourcesFit": (
        {
            "ignoredResourceGroups": ["example.com"],
            "scoringStrategy": {
                "type": "RequestedToCapacityRatio",
                "resources": [{"name": "cpu", "weight": 3}],
                "requestedToCapacityRatio": {
                    "shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]
                },
            },
        },
        (
            {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "requestedToCapacityRatio": {
                        "shape": [
                            {"utilization": 10, "score": 3},
                            {"utilization": 20, "score": 3},
                            {"utilization": 15, "score": 3},
                        ]
                    },
                }
            },
            "scoringStrategy.requestedToCapacityRatio.shape[2].utilization",
        ),
    ),
    "VolumeRestrictions": (None, None),
    "EBSLimits": (None, None),
    "GCEPDLimits": (None, None),
    "NodeVolumeLimits": (None, None),
    "AzureDiskLimits": (None, None),
    "CinderLimits": (None, None),
    "VolumeBinding": (
        {"bindTimeoutSeconds": 0},
        ({"bindTimeoutSeconds": 10, "shape": [{"utilization": 1, "score": 1}]}, "shape"),
    ),
    "VolumeZone": (None, None),
    "PodTopologySpread": (
        {
            "defaultingType": "List",
            "defaultConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": "topology.kubernetes.io/zone",
                    "whenUnsatisfiable": "DoNotSchedule",
                }
            ],
        },
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {
                        "maxSkew": 1,
                        "topologyKey": "key",
                        "whenUnsatisfiable": "DoNotSchedule",
                        "labelSelector": {"matchLabels": {"a": "b"}},
                    }
                ],
            },
            "defaultConstraints[0].labelSelector",
        ),
    ),
    "InterPodAffinity": (
        {"hardPodAffinityWeight": 0, "ignorePreferredTermsOfExistingPods": True},
        ({"hardPodAffinityWeight": 101}, "hardPodAffinityWeight"),
    ),
    "DefaultPreemption": (
        {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 5},
        (
            {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
            "minCandidateNodesPercentage",
        ),
    ),
    "NodeResourcesBalancedAllocation": (
        {"resources": [{"name": "cpu"}, {"name": "example.com/gpu", "weight": 1}]},
        ({"resources": [{"name": "cpu", "weight": 2}]}, "resources[0].weight"),
    ),
    "ImageLocality": (None, None),
    "DefaultBinder": (None, None),
}


def test_every_in_tree_plugin_has_a_case() -> None:
    assert set(CASES) == set(names.IN_TREE_PLUGIN_POINTS)


def stated_points(spec: dict[str, Any], name: str) -> set[str]:
    points = {p for p, s in spec["plugins"].items() if {"name": name} in s["enabled"]}
    if {"name": name} in spec["predicates"]:
        points.add("filter")
    if any(entry["name"] == name for entry in spec["priorities"]):
        points.add("score")
    return points


@pytest.mark.parametrize("name", list(CASES))
def test_a_profile_of_one_plugin_with_accepted_args(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args, _ = CASES[name]
    data = alone(name, args)
    path = write(tmp_path, data)
    note = (
        f"note: KubeSchedulerConfiguration: {data['apiVersion']} is read as kube-scheduler "
        "v1.28 read it, the last release that served it\n"
        if name in REMOVED_IN_V1_31
        else ""
    )
    assert run(["validate", path], capsys) == (
        0,
        'KubeSchedulerConfiguration profile "only" is valid\n',
        note,
    )
    code, out, err = run(["convert", path], capsys)
    assert (code, err) == (0, note)
    spec = yaml.safe_load(out)["spec"]
    assert stated_points(spec, name) == set(names.IN_TREE_PLUGIN_POINTS[name])
    config = {entry["name"]: entry["args"] for entry in spec["pluginConfig"]}
    if name in pluginargs.ARGS_MODELS:
        assert config == {name: WRITTEN_ARGS[name]}
    else:
        assert config == {}


#: The args ``convert`` writes for the accepted cases: as given, defaults filled in.
WRITTEN_ARGS: dict[str, dict[str, Any]] = {
    "NodeAffinity": CASES["NodeAffinity"][0] or {},
    "NodeResourcesFit": {
        "ignoredResourceGroups": ["example.com"],
        "scoringStrategy": {
            "type": "RequestedToCapacityRatio",
            "resources": [{"name": "cpu", "weight": 3}],
            "requestedToCapacityRatio": {
                "shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]
            },
        },
    },
    "VolumeBinding": {"bindTimeoutSeconds": 0},
    "PodTopologySpread": CASES["PodTopologySpread"][0] or {},
    "InterPodAffinity": {"hardPodAffinityWeight": 0, "ignorePreferredTermsOfExistingPods": True},
    "DefaultPreemption": {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 5},
    "NodeResourcesBalancedAllocation": {
        "resources": [{"name": "cpu", "weight": 1}, {"name": "example.com/gpu", "weight": 1}]
    },
}


@pytest.mark.parametrize("name", [name for name, (_, bad) in CASES.items() if bad is not None])
def test_a_profile_of_one_plugin_with_refused_args(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    refused = CASES[name][1]
    assert refused is not None
    args, field = refused
    path = write(tmp_path, alone(name, args))
    want = f"KubeSchedulerConfiguration: profiles[0].pluginConfig[0].args.{field}: "
    code, out, err = run(["validate", path], capsys)
    assert (code, out) == (1, "")
    assert err.startswith(want), err
    code, out, err = run(["convert", path], capsys)
    assert (code, out) == (1, "")
    assert err.startswith(f"error: {want}"), err


def test_weights_carry_to_priorities(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = alone("ImageLocality", None)
    data["profiles"][0]["plugins"]["multiPoint"]["enabled"][-1]["weight"] = 7
    code, out, _ = run(["convert", write(tmp_path, data)], capsys)
    assert code == 0
    assert yaml.safe_load(out)["spec"]["priorities"] == [{"name": "ImageLocality", "weight": 7}]


# -- scheduler-plugins' configurations (issue 29 item 6) ----------------------------------

SCHEDULER_PLUGINS = sorted((Path(__file__).parent / "scheduler-plugins").glob("*.yaml"))


@pytest.mark.parametrize("path", SCHEDULER_PLUGINS, ids=lambda p: p.stem)
def test_scheduler_plugins_configurations_validate_and_convert_as_they_are(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(["validate", str(path)], capsys)
    assert code == 0, err
    assert "is valid" in out
    assert "Coscheduling is not an in-tree plugin of kube-scheduler" in err
    code, out, err = run(["convert", str(path)], capsys)
    assert code == 0, err
    (policy,) = list(yaml.safe_load_all(out))
    plugins = policy["spec"]["plugins"]
    assert {"name": "Coscheduling"} in plugins["queueSort"]["enabled"]
    config = {entry["name"]: entry["args"] for entry in policy["spec"]["pluginConfig"]}
    assert config["Coscheduling"]["permitWaitingTimeSeconds"] == 10


def test_a_scheduler_plugins_args_model_validates_its_plugin_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = Path(__file__).parent / "scheduler-plugins" / "coscheduling-v1-multipoint.yaml"
    path = tmp_path / "bad.yaml"
    path.write_text(text.read_text().replace("Seconds: 10", "Seconds: -1"))
    code, _, err = run(["validate", str(path)], capsys)
    assert code == 1
    assert "pluginConfig[0].args.permitWaitingTimeSeconds" in err, err


def test_a_plugin_nobody_has_is_still_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = configuration(
        {"schedulerName": "x", "plugins": {"multiPoint": {"enabled": [{"name": "NoSuchPlugin"}]}}}
    )
    code, _, err = run(["validate", write(tmp_path, data)], capsys)
    assert code == 1
    assert 'unknown plugin "NoSuchPlugin"' in err, err


PROCESS_CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
parallelism: 32
podInitialBackoffSeconds: 2
podMaxBackoffSeconds: 20
profiles: [{schedulerName: policy-scheduler}]
"""


@pytest.mark.parametrize("command", ["validate", "convert"])
def test_the_whole_process_fields_of_a_configuration_each_draw_a_note(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(PROCESS_CONFIG)
    capsys.readouterr()
    assert main([command, str(path)]) == 0
    notes = [line for line in capsys.readouterr().err.splitlines() if line.startswith("note:")]
    prefix = "note: KubeSchedulerConfiguration: "
    assert notes == [
        f"{prefix}podInitialBackoffSeconds: not carried into the policies: the operator's "
        "backoff is set with `run --pod-initial-backoff-seconds` (chart value "
        "podInitialBackoffSeconds)",
        f"{prefix}podMaxBackoffSeconds: not carried into the policies: the operator's backoff "
        "is set with `run --pod-max-backoff-seconds` (chart value podMaxBackoffSeconds)",
        f"{prefix}parallelism: not carried into the policies: policy-scheduler evaluates nodes "
        "on one thread (its fast path replaces kube-scheduler's 16 goroutines); nothing to set",
    ]
