"""KubeSchedulerConfiguration -> SchedulingPolicy, with kube-scheduler's merge, expansion and
validation.

Ported from upstream: TestMergePlugins (v1/default_plugins_test.go), the expanded default
plugin sets of pkg/scheduler/apis/config/testing/defaults (v1.30's v1, v1.28's v1beta3,
v1.27's v1beta2), TestNewFrameworkMultiPointExpansion (framework/runtime), and
TestValidateKubeSchedulerConfigurationV1 (validation_test.go). Upstream's validation
config enables made-up CustomSort/CustomBind plugins; here they are installed
out-of-tree plugins (``extra_plugins``), and both profiles disable the default queue sort
(``"*"``) so that the configuration also builds a framework, which upstream's validation
test does not attempt.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from policy_scheduler.policy import PolicyError
from policy_scheduler.schedconfig import (
    Conversion,
    PluginSet,
    Ref,
    convert_configuration,
    expand_plugins,
    merge_plugin_set,
)

ROOT = Path(__file__).resolve().parents[2]
V1 = "kubescheduler.config.k8s.io/v1"
V1BETA3 = "kubescheduler.config.k8s.io/v1beta3"
V1BETA2 = "kubescheduler.config.k8s.io/v1beta2"
PREFIX = "KubeSchedulerConfiguration: "


def configuration(version: str = V1, **fields: Any) -> dict[str, Any]:
    return {"apiVersion": version, "kind": "KubeSchedulerConfiguration", **fields}


def profile(name: str = "default-scheduler", **fields: Any) -> dict[str, Any]:
    return {"schedulerName": name, **fields}


def convert(data: dict[str, Any], **options: Any) -> Conversion:
    return convert_configuration(data, **options)


def refused(data: dict[str, Any], **options: Any) -> list[str]:
    with pytest.raises(PolicyError) as caught:
        convert_configuration(data, **options)
    lines = caught.value.errors
    assert all(line.startswith(PREFIX) for line in lines), lines
    return [line[len(PREFIX) :] for line in lines]


def fields_at_fault(data: dict[str, Any], **options: Any) -> list[str]:
    return [line.split(": ", 1)[0] for line in refused(data, **options)]


def spec(data: dict[str, Any], index: int = 0, **options: Any) -> dict[str, Any]:
    result: dict[str, Any] = convert(data, **options).objects[index]["spec"]
    return result


def pipeline(spec: dict[str, Any]) -> dict[str, list[Any]]:
    """Each point's plugins as the policy states them (Score with weights)."""
    out: dict[str, list[Any]] = {
        point: [entry["name"] for entry in plugin_set["enabled"]]
        for point, plugin_set in spec["plugins"].items()
    }
    out["filter"] = [entry["name"] for entry in spec["predicates"]]
    out["score"] = [(entry["name"], entry["weight"]) for entry in spec["priorities"]]
    return out


# -- the default profiles, expanded (testing/defaults) -------------------------------------

#: v1.30's default profile (v1 up to v1.30), the base of the others.
EXPANDED_V1_30 = {
    "preEnqueue": ["SchedulingGates"],
    "queueSort": ["PrioritySort"],
    "preFilter": [
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "VolumeRestrictions",
        "EBSLimits",
        "GCEPDLimits",
        "NodeVolumeLimits",
        "AzureDiskLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
    ],
    "filter": [
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "VolumeRestrictions",
        "EBSLimits",
        "GCEPDLimits",
        "NodeVolumeLimits",
        "AzureDiskLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
    ],
    "postFilter": ["DefaultPreemption"],
    "preScore": [
        "TaintToleration",
        "NodeAffinity",
        "NodeResourcesFit",
        "VolumeBinding",
        "PodTopologySpread",
        "InterPodAffinity",
        "NodeResourcesBalancedAllocation",
    ],
    "score": [
        ("TaintToleration", 3),
        ("NodeAffinity", 2),
        ("NodeResourcesFit", 1),
        ("VolumeBinding", 1),
        ("PodTopologySpread", 2),
        ("InterPodAffinity", 2),
        ("NodeResourcesBalancedAllocation", 1),
        ("ImageLocality", 1),
    ],
    "reserve": ["VolumeBinding"],
    "permit": [],
    "preBind": ["VolumeBinding"],
    "bind": ["DefaultBinder"],
    "postBind": [],
}

_NON_CSI = ("EBSLimits", "GCEPDLimits", "AzureDiskLimits")

#: v1.34's (v1): the in-tree volume limits of CSI-migrated plugins gone (v1.31),
#: DynamicResources at each point it implements, before DefaultPreemption at postFilter.
EXPANDED_V1 = {
    **EXPANDED_V1_30,
    "preEnqueue": ["SchedulingGates", "DynamicResources"],
    "preFilter": [n for n in EXPANDED_V1_30["preFilter"] if n not in _NON_CSI]
    + ["DynamicResources"],
    "filter": [n for n in EXPANDED_V1_30["filter"] if n not in _NON_CSI] + ["DynamicResources"],
    "postFilter": ["DynamicResources", "DefaultPreemption"],
    "reserve": ["VolumeBinding", "DynamicResources"],
    "preBind": ["VolumeBinding", "DynamicResources"],
}

#: v1.28 (v1beta3): v1.30's, but VolumeBinding has no PreScore before v1.30.
EXPANDED_V1BETA3 = {
    **EXPANDED_V1_30,
    "preScore": [name for name in EXPANDED_V1_30["preScore"] if name != "VolumeBinding"],
}

EXPANDED_V1BETA2 = {
    **EXPANDED_V1_30,
    "preFilter": [
        "NodeResourcesFit",
        "NodePorts",
        "VolumeRestrictions",
        "PodTopologySpread",
        "InterPodAffinity",
        "VolumeBinding",
        "VolumeZone",
        "NodeAffinity",
    ],
    "preScore": [
        "InterPodAffinity",
        "PodTopologySpread",
        "TaintToleration",
        "NodeAffinity",
        "NodeResourcesFit",
        "NodeResourcesBalancedAllocation",
    ],
    "score": [
        ("NodeResourcesBalancedAllocation", 1),
        ("ImageLocality", 1),
        ("InterPodAffinity", 1),
        ("NodeResourcesFit", 1),
        ("NodeAffinity", 1),
        ("PodTopologySpread", 2),
        ("TaintToleration", 1),
    ],
}

DEFAULT_ARGS = {
    "DefaultPreemption": {"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 100},
    "InterPodAffinity": {"hardPodAffinityWeight": 1, "ignorePreferredTermsOfExistingPods": False},
    "NodeAffinity": {},
    "NodeResourcesBalancedAllocation": {
        "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
    },
    "NodeResourcesFit": {
        "scoringStrategy": {
            "type": "LeastAllocated",
            "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
        }
    },
    "PodTopologySpread": {"defaultingType": "System"},
    "VolumeBinding": {"bindTimeoutSeconds": 600},
}
#: v1.34's (v1): DynamicResources runs, with its args.
DEFAULT_ARGS_V1 = {**DEFAULT_ARGS, "DynamicResources": {"filterTimeout": "10s"}}


@pytest.mark.parametrize(
    ("version", "expanded"),
    [
        pytest.param(V1, EXPANDED_V1, id="v1 (v1.34)"),
        pytest.param(V1BETA3, EXPANDED_V1BETA3, id="v1beta3 (v1.28)"),
        pytest.param(V1BETA2, EXPANDED_V1BETA2, id="v1beta2 (v1.27)"),
    ],
)
def test_an_empty_configuration_is_the_versions_default_profile(
    version: str, expanded: dict[str, list[Any]]
) -> None:
    got = spec(configuration(version))
    assert got["schedulerName"] == "default-scheduler"
    assert pipeline(got) == expanded
    want = DEFAULT_ARGS_V1 if version == V1 else DEFAULT_ARGS
    assert {entry["name"]: entry["args"] for entry in got["pluginConfig"]} == want
    assert [entry["name"] for entry in got["pluginConfig"]] == sorted(want)
    assert got["percentageOfNodesToScore"] == 0
    assert all(s["disabled"] == [{"name": "*"}] for s in got["plugins"].values())


def test_the_v1_34_example_is_what_convert_writes_for_an_empty_v1_profile() -> None:
    # Its own name, not default-scheduler (the operator would refuse that name unless
    # told to serve it); everything else is the empty configuration's default profile.
    example = yaml.safe_load((ROOT / "examples/policies/kube-scheduler-v1.34.yaml").read_text())
    [default] = convert(configuration()).objects
    assert convert(configuration(profiles=[profile("policy-scheduler-v134")])).objects == (example,)
    assert example["spec"] | {"schedulerName": "default-scheduler"} == default["spec"]


def test_the_v1_30_example_is_v1_34s_without_what_v1_31_to_v1_34_changed() -> None:
    v130 = yaml.safe_load((ROOT / "examples/policies/kube-scheduler-v1.30.yaml").read_text())
    v134 = yaml.safe_load((ROOT / "examples/policies/kube-scheduler-v1.34.yaml").read_text())
    assert pipeline(v130["spec"]) == EXPANDED_V1_30
    assert pipeline(v134["spec"]) == EXPANDED_V1
    config = {entry["name"]: entry["args"] for entry in v130["spec"]["pluginConfig"]}
    assert config == DEFAULT_ARGS
    assert v130["metadata"]["name"] == v130["spec"]["schedulerName"] == "policy-scheduler-v130"


def test_no_example_a_user_applies_serves_default_scheduler() -> None:
    # README: `kubectl apply -f examples/policies/` never takes kube-scheduler's pods.
    for path in sorted((ROOT / "examples").rglob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if not isinstance(doc, dict) or doc.get("kind") != "SchedulingPolicy":
                continue
            spec = doc.get("spec") or {}
            assert spec.get("schedulerName") != "default-scheduler" or spec.get("mode") == (
                "Shadow"
            ), path


def test_output_is_stable() -> None:
    data = configuration(
        profiles=[profile("a"), profile("b", plugins={"score": {"disabled": [{"name": "*"}]}})]
    )
    first = convert(data).objects
    assert convert(copy.deepcopy(data)).objects == first
    assert [list(obj["spec"]) for obj in first] == [
        [
            "schedulerName",
            "predicates",
            "priorities",
            "percentageOfNodesToScore",
            "plugins",
            "pluginConfig",
        ],
    ] * 2
    assert [obj["metadata"]["name"] for obj in first] == ["a", "b"]


# -- mergePluginSet (TestMergePlugins) -----------------------------------------------------


def refs(*items: str | tuple[str, int]) -> tuple[Ref, ...]:
    return tuple(Ref(i) if isinstance(i, str) else Ref(i[0], i[1]) for i in items)


def pset(*enabled: str | tuple[str, int], disabled: tuple[str, ...] = ()) -> PluginSet:
    return PluginSet(refs(*enabled), disabled)


@pytest.mark.parametrize(
    ("default", "custom", "want"),
    [
        pytest.param(
            pset("DefaultPlugin1", "DefaultPlugin2"),
            pset("CustomPlugin"),
            pset("DefaultPlugin1", "DefaultPlugin2", "CustomPlugin"),
            id="AppendCustomPlugin",
        ),
        pytest.param(
            pset("DefaultPlugin1", "DefaultPlugin2"),
            pset("CustomPlugin", "DefaultPlugin2", disabled=("DefaultPlugin2",)),
            pset("DefaultPlugin1", "CustomPlugin", "DefaultPlugin2", disabled=("DefaultPlugin2",)),
            id="InsertAfterDefaultPlugins2",
        ),
        pytest.param(
            pset("DefaultPlugin1", "DefaultPlugin2"),
            pset("CustomPlugin", "DefaultPlugin1", "DefaultPlugin2", disabled=("*",)),
            pset("CustomPlugin", "DefaultPlugin1", "DefaultPlugin2", disabled=("*",)),
            id="InsertBeforeAllPlugins",
        ),
        pytest.param(
            pset("DefaultPlugin1", "DefaultPlugin2"),
            pset("DefaultPlugin2", "DefaultPlugin1", disabled=("*",)),
            pset("DefaultPlugin2", "DefaultPlugin1", disabled=("*",)),
            id="ReorderDefaultPlugins",
        ),
        pytest.param(
            pset("Plugin1", "Plugin2", "Plugin3"),
            pset(("Plugin1", 2), ("Plugin3", 3)),
            pset(("Plugin1", 2), "Plugin2", ("Plugin3", 3)),
            id="CustomPluginOverrideDefaultPlugin",
        ),
        pytest.param(
            pset("Plugin1", "Plugin2", "Plugin3"),
            pset(("Plugin2", 2), ("Plugin1", 1)),
            pset(("Plugin1", 1), ("Plugin2", 2), "Plugin3"),
            id="OrderPreserveAfterOverride",
        ),
        pytest.param(
            pset("Plugin1", "Plugin2", "Plugin3"),
            pset("Plugin1", ("Plugin2", 2), "Plugin3", ("Plugin2", 4)),
            pset("Plugin1", ("Plugin2", 4), "Plugin3", ("Plugin2", 2)),
            id="RepeatedCustomPlugin",
        ),
        pytest.param(
            pset("DefaultPlugin1", "DefaultPlugin2"),
            pset("CustomPlugin", "CustomPlugin2", disabled=("DefaultPlugin2",)),
            pset("DefaultPlugin1", "CustomPlugin", "CustomPlugin2", disabled=("DefaultPlugin2",)),
            id="Append disabled Multipoint plugins",
        ),
        pytest.param(
            pset("DefaultPlugin"),
            pset(("DefaultPlugin", 5)),
            pset(("DefaultPlugin", 5)),
            id="override default MultiPoint plugins with custom value",
        ),
        pytest.param(
            pset("DefaultPlugin", disabled=("DefaultPlugin2",)),
            pset("CustomPlugin"),
            pset("DefaultPlugin", "CustomPlugin", disabled=("DefaultPlugin2",)),
            id="disabled MultiPoint plugin in default set",
        ),
        pytest.param(
            pset("DefaultPlugin"),
            pset(disabled=("DefaultPlugin",)),
            pset(disabled=("DefaultPlugin",)),
            id="multipoint with only disabled gets merged",
        ),
    ],
)
def test_merge_plugin_set(default: PluginSet, custom: PluginSet, want: PluginSet) -> None:
    assert merge_plugin_set(default, custom) == want


# -- multiPoint expansion (TestNewFrameworkMultiPointExpansion) ----------------------------

ALL_POINTS = (
    "preEnqueue",
    "queueSort",
    "preFilter",
    "filter",
    "postFilter",
    "preScore",
    "score",
    "reserve",
    "permit",
    "preBind",
    "bind",
    "postBind",
)
FAKES = {
    "TestPlugin": tuple(p for p in ALL_POINTS if p != "preEnqueue"),
    "ScorePlugin1": ("preScore", "score"),
    "ScorePlugin2": ("score",),
    "ScoreWithNormalizePlugin1": ("score",),
    "QueueSortPlugin": ("queueSort",),
    "BindPlugin": ("bind",),
}
EVERY = {p: ["TestPlugin"] for p in FAKES["TestPlugin"]}


def expand(**sets: PluginSet) -> tuple[dict[str, list[Any]], list[str]]:
    framework = expand_plugins({p.replace("_", ""): s for p, s in sets.items()}, FAKES)
    lists: dict[str, list[Any]] = {p: names for p, names in framework.points.items() if names}
    if "score" in lists:
        lists["score"] = [(name, framework.weights[name]) for name in lists["score"]]
    return lists, [issue.message for issue in framework.issues]


@pytest.mark.parametrize(
    ("sets", "want"),
    [
        pytest.param(
            {"multiPoint": pset(("TestPlugin", 5))},
            {**EVERY, "score": [("TestPlugin", 5)]},
            id="plugin expansion",
        ),
        pytest.param(
            {
                "multiPoint": pset("TestPlugin"),
                "preScore": pset(disabled=("TestPlugin",)),
                "score": pset(disabled=("TestPlugin",)),
            },
            {p: n for p, n in EVERY.items() if p not in ("preScore", "score")},
            id="disable MultiPoint plugin at some extension points",
        ),
        pytest.param(
            {"multiPoint": pset("TestPlugin", "ScorePlugin1")},
            {
                **EVERY,
                "preScore": ["TestPlugin", "ScorePlugin1"],
                "score": [("TestPlugin", 1), ("ScorePlugin1", 1)],
            },
            id="Multiple MultiPoint plugins",
        ),
        pytest.param(
            {"multiPoint": pset("TestPlugin", "ScorePlugin1"), "preScore": pset(disabled=("*",))},
            {
                **{p: n for p, n in EVERY.items() if p != "preScore"},
                "score": [("TestPlugin", 1), ("ScorePlugin1", 1)],
            },
            id="disable MultiPoint extension",
        ),
        pytest.param(
            {
                "multiPoint": pset("ScoreWithNormalizePlugin1", "TestPlugin", "ScorePlugin1"),
                "score": pset("ScorePlugin1", "TestPlugin"),
            },
            {
                **EVERY,
                "preScore": ["TestPlugin", "ScorePlugin1"],
                "score": [("ScorePlugin1", 1), ("TestPlugin", 1), ("ScoreWithNormalizePlugin1", 1)],
            },
            id="Reorder MultiPoint plugins (specified extension takes precedence)",
        ),
        pytest.param(
            {
                "multiPoint": pset("TestPlugin", "ScorePlugin1"),
                "score": pset("ScoreWithNormalizePlugin1", "ScorePlugin1", "TestPlugin"),
            },
            {
                **EVERY,
                "preScore": ["TestPlugin", "ScorePlugin1"],
                "score": [("ScorePlugin1", 1), ("TestPlugin", 1), ("ScoreWithNormalizePlugin1", 1)],
            },
            id="Reorder MultiPoint plugins (specified extension only takes precedence when it "
            "exists in MultiPoint)",
        ),
        pytest.param(
            {
                "multiPoint": pset("TestPlugin", "ScorePlugin1"),
                "score": pset(("ScorePlugin1", 5), ("TestPlugin", 3)),
            },
            {
                **EVERY,
                "preScore": ["TestPlugin", "ScorePlugin1"],
                "score": [("ScorePlugin1", 5), ("TestPlugin", 3)],
            },
            id="Override MultiPoint plugins weights",
        ),
        pytest.param(
            {"multiPoint": pset("QueueSortPlugin", "BindPlugin", "ScorePlugin1", disabled=("*",))},
            {
                "queueSort": ["QueueSortPlugin"],
                "preScore": ["ScorePlugin1"],
                "score": [("ScorePlugin1", 1)],
                "bind": ["BindPlugin"],
            },
            id="disable and enable MultiPoint plugins with '*'",
        ),
        pytest.param(
            {
                "multiPoint": pset("TestPlugin", "ScorePlugin1"),
                "score": pset(("ScorePlugin1", 5), ("ScorePlugin2", 5), ("TestPlugin", 3)),
            },
            {
                **EVERY,
                "preScore": ["TestPlugin", "ScorePlugin1"],
                "score": [("ScorePlugin1", 5), ("TestPlugin", 3), ("ScorePlugin2", 5)],
            },
            id="Override MultiPoint plugins weights and avoid a plugin being loaded multiple times",
        ),
    ],
)
def test_multipoint_expansion(sets: dict[str, PluginSet], want: dict[str, list[Any]]) -> None:
    lists, issues = expand(**sets)
    assert issues == []
    assert lists == want


def test_multipoint_twice_is_already_registered() -> None:
    _, issues = expand(multiPoint=pset("TestPlugin", "TestPlugin"))
    assert issues == ['"TestPlugin" is enabled twice in multiPoint']


# -- validation (TestValidateKubeSchedulerConfigurationV1) ---------------------------------

CUSTOM = {"CustomSort": ("queueSort",), "CustomBind": ("bind",)}


def valid_config() -> dict[str, Any]:
    queue_sort = {"enabled": [{"name": "CustomSort"}], "disabled": [{"name": "*"}]}
    return configuration(
        parallelism=8,
        clientConnection={
            "acceptContentTypes": "application/json",
            "contentType": "application/json",
            "qps": 10,
            "burst": 10,
        },
        leaderElection={
            "resourceLock": "leases",
            "leaderElect": True,
            "leaseDuration": "30s",
            "renewDeadline": "15s",
            "retryPeriod": "5s",
            "resourceNamespace": "name",
            "resourceName": "name",
        },
        podInitialBackoffSeconds=1,
        podMaxBackoffSeconds=1,
        profiles=[
            {
                "schedulerName": "me",
                "percentageOfNodesToScore": 35,
                "plugins": {"queueSort": queue_sort, "score": {"disabled": [{"name": "*"}]}},
                "pluginConfig": [
                    {
                        "name": "DefaultPreemption",
                        "args": {
                            "minCandidateNodesPercentage": 10,
                            "minCandidateNodesAbsolute": 100,
                        },
                    }
                ],
            },
            {
                "schedulerName": "other",
                "percentageOfNodesToScore": 35,
                "plugins": {
                    "queueSort": copy.deepcopy(queue_sort),
                    "bind": {"enabled": [{"name": "CustomBind"}]},
                },
            },
        ],
        extenders=[
            {"urlPrefix": "http://extender:8888", "prioritizeVerb": "prioritize", "weight": 1}
        ],
    )


def changed(path: str, value: Any) -> dict[str, Any]:
    """The valid config with one field (``a.b[0].c``) set; ``value`` DELETE removes it."""
    data = valid_config()
    parts: list[str | int] = []
    for part in path.replace("]", "").split("."):
        name, _, index = part.partition("[")
        parts.append(name)
        if index:
            parts.append(int(index))
    node: Any = data
    for part in parts[:-1]:
        node = node[part]
    if value is DELETE:
        del node[parts[-1]]
    else:
        node[parts[-1]] = value
    return data


DELETE = object()


@pytest.mark.parametrize(
    ("path", "value", "want"),
    [
        pytest.param("parallelism", 0, ["parallelism"], id="bad-parallelism-invalid-value"),
        pytest.param(
            "leaderElection.resourceLock",
            "configmap",
            ["leaderElection.resourceLock"],
            id="bad-resource-lock-not-leases",
        ),
        pytest.param(
            "percentageOfNodesToScore",
            101,
            ["percentageOfNodesToScore"],
            id="bad-percentage-of-nodes-to-score",
        ),
        pytest.param(
            "percentageOfNodesToScore",
            -1,
            ["percentageOfNodesToScore"],
            id="negative-percentage-of-nodes-to-score",
        ),
        pytest.param(
            "profiles[1].schedulerName",
            DELETE,
            ["profiles[1].schedulerName"],
            id="scheduler-name-not-set",
        ),
        pytest.param(
            "profiles[0].schedulerName",
            "other",
            ["profiles[1].schedulerName"],
            id="repeated-scheduler-name",
        ),
        pytest.param(
            "profiles[1].percentageOfNodesToScore",
            101,
            ["profiles[1].percentageOfNodesToScore"],
            id="greater-than-100-profile-percentage-of-nodes-to-score",
        ),
        pytest.param(
            "profiles[1].percentageOfNodesToScore",
            -1,
            ["profiles[1].percentageOfNodesToScore"],
            id="negative-profile-percentage-of-nodes-to-score",
        ),
        pytest.param(
            "profiles[1].plugins.queueSort.enabled",
            [{"name": "AnotherSort"}],
            ["profiles[1].plugins.queueSort"],
            id="different-queue-sort",
        ),
        pytest.param(
            "profiles[0].plugins",
            DELETE,
            ["profiles[1].plugins.queueSort"],
            id="one-empty-queue-sort",
        ),
        pytest.param(
            "extenders[0].weight", -1, ["extenders[0].weight"], id="extender-negative-weight"
        ),
        pytest.param(
            "extenders[0].managedResources",
            [{"name": "example.com/foo"}, {"name": "example.com/foo"}],
            ["extenders[0].managedResources[1].name"],
            id="extender-duplicate-managed-resources",
        ),
        pytest.param(
            "extenders",
            [
                {"urlPrefix": "http://a", "prioritizeVerb": "p", "weight": 1, "bindVerb": "foo"},
                {"urlPrefix": "http://b", "prioritizeVerb": "p", "weight": 1, "bindVerb": "bar"},
            ],
            ["extenders"],
            id="extender-duplicate-bind",
        ),
        pytest.param(
            "profiles[0].pluginConfig[0].args.minCandidateNodesPercentage",
            200,
            ["profiles[0].pluginConfig[0].args.minCandidateNodesPercentage"],
            id="invalid-node-percentage",
        ),
        pytest.param(
            "profiles[0].pluginConfig[0].args",
            {"kind": "InterPodAffinityArgs"},
            ["profiles[0].pluginConfig[0].args.kind"],
            id="invalid-plugin-args",
        ),
        pytest.param(
            "profiles[0].pluginConfig",
            [{"name": "config"}, {"name": "config"}],
            ["profiles[0].pluginConfig[1].name"],
            id="duplicated-plugin-config",
        ),
        pytest.param(
            "profiles[0].plugins.score.enabled",
            [{"name": "PodTopologySpread", "weight": 2}],
            [],
            id="valid-plugins",
        ),
        pytest.param("parallelism", 8, [], id="good"),
    ],
)
def test_validation(path: str, value: Any, want: list[str]) -> None:
    data = changed(path, value)
    options = {"extra_plugins": {**CUSTOM, "AnotherSort": ("queueSort",)}}
    if want:
        assert fields_at_fault(data, **options) == want
    else:
        convert(data, **options)


def test_a_removed_plugin_in_a_profile_is_refused_naming_its_successor() -> None:
    data = configuration(
        profiles=[
            profile(
                plugins={
                    "score": {"enabled": [{"name": "NodeResourcesMostAllocated", "weight": 2}]}
                }
            )
        ]
    )
    assert refused(data) == [
        'profiles[0].plugins.score.enabled[0].name: "NodeResourcesMostAllocated" is not a plugin '
        "of kube-scheduler v1.25-v1.30: NodeResourcesFit's scoringStrategy {type: MostAllocated} "
        "replaced it in v1beta2 (v1.22)"
    ]


# -- what each rule does to the policy -----------------------------------------------------


def one(plugins: dict[str, Any] | None = None, version: str = V1, **more: Any) -> dict[str, Any]:
    fields: dict[str, Any] = dict(more)
    if plugins is not None:
        fields["plugins"] = plugins
    return configuration(version, profiles=[profile(**fields)])


def test_a_score_entry_replaces_its_multipoint_default_runs_first_and_takes_its_weight() -> None:
    got = pipeline(spec(one({"score": {"enabled": [{"name": "ImageLocality", "weight": 5}]}})))
    assert got["score"][0] == ("ImageLocality", 5)
    assert got["score"][1:] == [s for s in EXPANDED_V1["score"] if s[0] != "ImageLocality"]


def test_star_in_a_points_disabled_drops_its_multipoint_plugins() -> None:
    got = spec(one({"score": {"disabled": [{"name": "*"}]}}))
    assert got["priorities"] == []
    assert pipeline(got)["preScore"] == EXPANDED_V1["preScore"]


def test_disabling_a_default_by_name_at_one_point_keeps_it_elsewhere() -> None:
    got = pipeline(spec(one({"filter": {"disabled": [{"name": "NodePorts"}]}})))
    assert "NodePorts" not in got["filter"]
    assert "NodePorts" in got["preFilter"]


def test_disabling_a_default_in_multipoint_drops_it_everywhere() -> None:
    got = pipeline(spec(one({"multiPoint": {"disabled": [{"name": "NodeResourcesFit"}]}})))
    assert all(
        "NodeResourcesFit" not in [x if isinstance(x, str) else x[0] for x in v]
        for v in got.values()
    )
    assert "NodeResourcesFit" not in {
        e["name"]
        for e in spec(one({"multiPoint": {"disabled": [{"name": "NodeResourcesFit"}]}}))[
            "pluginConfig"
        ]
    }


def test_a_multipoint_entry_replaces_its_default_weight_and_all() -> None:
    # Re-listed without a weight, TaintToleration's default 3 is gone: unset is 1.
    got = pipeline(spec(one({"multiPoint": {"enabled": [{"name": "TaintToleration"}]}})))
    assert ("TaintToleration", 1) in got["score"]
    assert got["score"][0] == ("TaintToleration", 1)


def test_a_filter_entry_of_a_default_moves_it_first() -> None:
    got = pipeline(spec(one({"filter": {"enabled": [{"name": "InterPodAffinity"}]}})))
    assert got["filter"] == [
        "InterPodAffinity",
        *[n for n in EXPANDED_V1["filter"] if n != "InterPodAffinity"],
    ]


def test_an_explicit_order_of_every_filter() -> None:
    order = ["NodeResourcesFit", "NodeName", "TaintToleration"]
    data = one({"filter": {"enabled": [{"name": n} for n in order], "disabled": [{"name": "*"}]}})
    assert pipeline(spec(data))["filter"] == order


def test_weight_zero_or_unset_is_one() -> None:
    data = one({"multiPoint": {"enabled": [{"name": "PodTopologySpread", "weight": 0}]}})
    assert ("PodTopologySpread", 1) in pipeline(spec(data))["score"]


def test_cinder_limits_can_be_enabled_before_v1_31() -> None:
    enabled = {"multiPoint": {"enabled": [{"name": "CinderLimits"}]}}
    got = pipeline(spec(one(enabled, version=V1BETA3)))
    assert got["filter"][-1] == "CinderLimits" and got["preFilter"][-1] == "CinderLimits"


@pytest.mark.parametrize(
    ("plugins", "want"),
    [
        pytest.param(
            {"score": {"enabled": [{"name": "NodeName"}]}},
            [
                'profiles[0].plugins.score.enabled[0].name: "NodeName" does not implement score '
                "(it implements filter)"
            ],
            id="a plugin at a point it does not implement",
        ),
        pytest.param(
            {"filter": {"enabled": [{"name": "NodePort"}]}},
            [
                'profiles[0].plugins.filter.enabled[0].name: unknown plugin "NodePort": '
                "kube-scheduler v1.34 has no such in-tree plugin (did you mean NodePorts?)"
            ],
            id="unknown plugin",
        ),
        pytest.param(
            {"filter": {"enabled": [{"name": "NodePorts"}, {"name": "NodePorts"}]}},
            [
                'profiles[0].plugins.filter.enabled[1].name: "NodePorts" is enabled twice at '
                "filter, also at profiles[0].plugins.filter.enabled[0].name"
            ],
            id="twice at a point",
        ),
        pytest.param(
            {"multiPoint": {"enabled": [{"name": "ImageLocality"}, {"name": "ImageLocality"}]}},
            [
                'profiles[0].plugins.multiPoint.enabled[0].name: "ImageLocality" is enabled twice '
                "in multiPoint"
            ],
            id="twice in multiPoint",
        ),
        pytest.param(
            {"multiPoint": {"disabled": [{"name": "DefaultBinder"}]}},
            ["profiles[0].plugins.bind: at least one bind plugin must be enabled, got none"],
            id="no binder",
        ),
        pytest.param(
            {
                "queueSort": {"enabled": [{"name": "PrioritySort"}]},
                "multiPoint": {"enabled": [{"name": "PrioritySort"}]},
            },
            [],
            id="one queue sort, twice named",
        ),
        pytest.param(
            {"score": {"enabled": [{"name": "ImageLocality", "weight": -2}]}},
            [
                "profiles[0].plugins.score.enabled[0].weight: must not be negative, got -2 "
                "(kube-scheduler v1.30 accepts it and subtracts the score; policy-scheduler "
                "weights are positive)"
            ],
            id="negative weight",
        ),
        pytest.param(
            {"score": {"enabled": [{"name": "SelectorSpread", "weight": 1}]}},
            [
                'profiles[0].plugins.score.enabled[0].name: "SelectorSpread" was invalid in '
                "kubescheduler.config.k8s.io/v1: kubescheduler.config.k8s.io/v1 refuses it and "
                "kube-scheduler v1.29 removed it; PodTopologySpread's system default constraints "
                "spread the same pods"
            ],
            id="SelectorSpread in v1",
        ),
    ],
)
def test_plugin_refusals(plugins: dict[str, Any], want: list[str]) -> None:
    if want:
        assert refused(one(plugins)) == want
    else:
        convert(one(plugins))


def test_two_queue_sort_plugins_are_refused() -> None:
    data = one({"queueSort": {"enabled": [{"name": "CustomSort"}]}})
    assert refused(data, extra_plugins=CUSTOM) == [
        "profiles[0].plugins.queueSort: exactly one queueSort plugin must be enabled, got 2 "
        "(PrioritySort, CustomSort)"
    ]


@pytest.mark.parametrize("version", [V1BETA3, V1BETA2])
def test_selector_spread_is_a_beta_plugin_policy_scheduler_does_not_run(version: str) -> None:
    data = one({"score": {"enabled": [{"name": "SelectorSpread", "weight": 1}]}}, version)
    [line] = refused(data)
    assert line.startswith(
        'profiles[0].plugins.score.enabled[0].name: "SelectorSpread" is not supported by '
        "policy-scheduler"
    )


def test_dynamic_resources_is_left_out_of_a_beta_profile_with_a_note() -> None:
    # v1.28 registers it as a no-op without its alpha gate; v1.34 (v1) runs it.
    enabled = {"multiPoint": {"enabled": [{"name": "DynamicResources"}]}}
    result = convert(one(enabled, version=V1BETA3))
    assert "DynamicResources" not in str(result.objects)
    assert any("DynamicResources left out" in note for note in result.notes)
    assert "DynamicResources" in pipeline(spec(one(enabled)))["preBind"]


def test_v1beta2_ignores_multipoint_and_preenqueue_as_kube_scheduler_1_27_did() -> None:
    data = one(
        {
            "multiPoint": {"enabled": [{"name": "CinderLimits"}]},
            "preEnqueue": {"disabled": [{"name": "*"}]},
        },
        V1BETA2,
    )
    result = convert(data)
    assert pipeline(result.objects[0]["spec"]) == EXPANDED_V1BETA2
    assert [n for n in result.notes if "ignored" in n] == [
        f"{PREFIX}profiles[0].plugins.preEnqueue: ignored: kube-scheduler v1.27 does not merge "
        f"preEnqueue of a {V1BETA2} configuration into the profile",
        f"{PREFIX}profiles[0].plugins.multiPoint: ignored: kube-scheduler v1.27 does not merge "
        f"multiPoint of a {V1BETA2} configuration into the profile",
    ]


def test_v1beta3_merges_multipoint() -> None:
    data = one({"multiPoint": {"enabled": [{"name": "CinderLimits"}]}}, V1BETA3)
    assert pipeline(spec(data))["filter"][-1] == "CinderLimits"


# -- pluginConfig --------------------------------------------------------------------------


def test_args_are_defaulted_and_written_for_every_plugin_that_runs() -> None:
    data = one(
        pluginConfig=[
            {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}
        ]
    )
    config = {e["name"]: e["args"] for e in spec(data)["pluginConfig"]}
    assert config["NodeResourcesFit"] == {
        "scoringStrategy": {
            "type": "MostAllocated",
            "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
        }
    }
    assert set(config) == set(DEFAULT_ARGS_V1)


def test_args_errors_name_the_field_in_the_file() -> None:
    data = one(
        pluginConfig=[
            {"name": "InterPodAffinity"},
            {
                "name": "NodeResourcesFit",
                "args": {
                    "scoringStrategy": {
                        "type": "LeastAllocated",
                        "resources": [{"name": "cpu"}, {"name": "memory", "weight": 101}],
                    }
                },
            },
        ]
    )
    assert refused(data) == [
        "profiles[0].pluginConfig[1].args.scoringStrategy.resources[1].weight: must be in the "
        'range [1, 100] (the weight of "memory"), got 101'
    ]


def test_node_resources_fit_args_are_checked_only_when_it_runs_as_upstream() -> None:
    # v1.30 validates NodeResourcesFit's args in the plugin's constructor only (its
    # validation table keys it by "NodeResourcesFitArgs"): not enabled, not checked.
    bad = {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "Nope"}}}
    off = one({"multiPoint": {"disabled": [{"name": "NodeResourcesFit"}]}}, pluginConfig=[bad])
    result = convert(off)
    assert "NodeResourcesFit" not in {e["name"] for e in result.objects[0]["spec"]["pluginConfig"]}
    assert any("no extension point of this profile runs" in n for n in result.notes)
    assert fields_at_fault(one(pluginConfig=[bad])) == [
        "profiles[0].pluginConfig[0].args.scoringStrategy.type"
    ]
    # Decoding is strict for every entry all the same.
    typo = {"name": "NodeResourcesFit", "args": {"scoringStrategi": {}}}
    off_typo = one(
        {"multiPoint": {"disabled": [{"name": "NodeResourcesFit"}]}}, pluginConfig=[typo]
    )
    assert fields_at_fault(off_typo) == ["profiles[0].pluginConfig[0].args.scoringStrategi"]


def test_other_args_are_checked_even_when_their_plugin_does_not_run() -> None:
    data = one(
        {"multiPoint": {"disabled": [{"name": "InterPodAffinity"}]}},
        pluginConfig=[{"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": 101}}],
    )
    assert fields_at_fault(data) == ["profiles[0].pluginConfig[0].args.hardPodAffinityWeight"]


def test_args_of_a_version_must_say_that_version() -> None:
    args = {"apiVersion": V1BETA3, "kind": "VolumeBindingArgs"}
    assert fields_at_fault(one(pluginConfig=[{"name": "VolumeBinding", "args": args}])) == [
        "profiles[0].pluginConfig[0].args.apiVersion"
    ]
    convert(one(pluginConfig=[{"name": "VolumeBinding", "args": args}], version=V1BETA3))


def test_args_for_a_plugin_without_arguments_are_ignored_with_a_note() -> None:
    result = convert(one(pluginConfig=[{"name": "ImageLocality", "args": {"x": 1}}]))
    assert (
        f"{PREFIX}profiles[0].pluginConfig[0].args: ignored: ImageLocality takes no arguments"
        in result.notes
    )


def test_out_of_tree_plugins_carry_their_args_as_written() -> None:
    data = one(
        {"multiPoint": {"enabled": [{"name": "Coscheduling"}]}},
        pluginConfig=[{"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": 30}}],
    )
    points = {"Coscheduling": ("queueSort", "preFilter", "postFilter", "permit", "reserve")}
    with pytest.raises(PolicyError):  # two queue sorts: PrioritySort's default and its own
        convert(data, extra_plugins=points)
    data["profiles"][0]["plugins"]["queueSort"] = {
        "disabled": [{"name": "*"}],
        "enabled": [{"name": "Coscheduling"}],
    }
    got = spec(data, extra_plugins=points)
    assert {"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": 30}} in got["pluginConfig"]
    assert got["plugins"]["permit"]["enabled"] == [{"name": "Coscheduling"}]


# -- profiles, percentages, extenders, versions --------------------------------------------


def test_percentage_of_nodes_to_score_profile_wins_over_global() -> None:
    data = configuration(
        percentageOfNodesToScore=40,
        profiles=[profile("a"), profile("b", percentageOfNodesToScore=0)],
    )
    assert [o["spec"]["percentageOfNodesToScore"] for o in convert(data).objects] == [40, 0]


def test_a_profiles_percentage_is_v1_only() -> None:
    data = configuration(V1BETA3, profiles=[profile(percentageOfNodesToScore=20)])
    [line] = refused(data)
    assert line.startswith(
        "profiles[0].percentageOfNodesToScore: unknown field in kubescheduler.config.k8s.io/v1beta3"
    )


def test_extenders_are_carried_to_every_policy() -> None:
    extender = {
        "urlPrefix": "http://gpu:8888/scheduler",
        "filterVerb": "filter",
        "prioritizeVerb": "prioritize",
        "weight": 2,
        "httpTimeout": "30s",
        "managedResources": [{"name": "example.com/gpu", "ignoredByScheduler": True}],
    }
    result = convert(configuration(extenders=[extender], profiles=[profile("a"), profile("b")]))
    assert [o["spec"]["extenders"] for o in result.objects] == [[extender], [extender]]
    assert result.policies[0].spec.extenders[0].http_timeout_seconds == 30.0


@pytest.mark.parametrize(
    ("extender", "want"),
    [
        pytest.param(
            {"urlPrefix": "http://e", "httpTimeout": 30000000000},
            ["extenders[0].httpTimeout: must be a string, got 30000000000"],
            id="nanoseconds are the legacy Policy's",
        ),
        pytest.param(
            {"urlPrefix": "http://e", "httpTimeout": "30 seconds"},
            ['extenders[0].httpTimeout: must be a duration like "30s", got "30 seconds"'],
            id="not a duration",
        ),
        pytest.param(
            {"urlPrefix": "http://e", "enableHttps": True},
            ["extenders[0].enableHttps: unknown field (did you mean enableHTTPS?)"],
            id="the legacy spelling",
        ),
        pytest.param(
            {"prioritizeVerb": "p", "weight": 1},
            [
                "extenders[0].urlPrefix: is required (kube-scheduler would call an empty URL; "
                "policy-scheduler refuses it)"
            ],
            id="no urlPrefix",
        ),
        pytest.param(
            {"urlPrefix": "http://e", "managedResources": [{"name": "kubernetes.io/foo"}]},
            [
                "extenders[0].managedResources[0].name: must not use the kubernetes.io domain, "
                "which is "
                'reserved for native resources, got "kubernetes.io/foo"'
            ],
            id="not an extended resource",
        ),
    ],
)
def test_extender_refusals(extender: dict[str, Any], want: list[str]) -> None:
    assert refused(configuration(extenders=[extender])) == want


def test_scheduler_names_must_be_names_a_pod_can_give() -> None:
    [line] = refused(configuration(profiles=[profile("My_Scheduler")]))
    assert line.startswith("profiles[0].schedulerName: must be a lowercase RFC 1123 subdomain")


def test_several_profiles_need_names() -> None:
    assert fields_at_fault(configuration(profiles=[{}, {}])) == [
        "profiles[0].schedulerName",
        "profiles[1].schedulerName",
    ]


@pytest.mark.parametrize(
    ("data", "want"),
    [
        pytest.param(
            configuration("kubescheduler.config.k8s.io/v1beta1"), ["apiVersion"], id="v1beta1"
        ),
        pytest.param({"kind": "KubeSchedulerConfiguration"}, ["apiVersion"], id="no apiVersion"),
        pytest.param(configuration(profile=[]), ["profile"], id="unknown field"),
        pytest.param(
            configuration(profiles=[{"schedulerName": "a", "plugin": {}}]),
            ["profiles[0].plugin"],
            id="unknown profile field",
        ),
        pytest.param(
            configuration(V1BETA3, delayCacheUntilActive=True),
            ["delayCacheUntilActive"],
            id="a v1 field in v1beta3",
        ),
        pytest.param(
            configuration(V1, healthzBindAddress="0.0.0.0:0"),
            ["healthzBindAddress"],
            id="a v1beta2 field in v1",
        ),
        pytest.param(
            configuration(V1BETA2, healthzBindAddress="0.0.0.0:10251"),
            ["healthzBindAddress"],
            id="a port",
        ),
        pytest.param(
            configuration(podInitialBackoffSeconds=5, podMaxBackoffSeconds=2),
            ["podMaxBackoffSeconds"],
            id="backoffs",
        ),
        pytest.param(
            configuration(leaderElection={"leaseDuration": "5s", "renewDeadline": "10s"}),
            ["leaderElection.leaseDuration"],
            id="lease",
        ),
        pytest.param(
            configuration(clientConnection={"burst": -1}), ["clientConnection.burst"], id="burst"
        ),
        pytest.param(
            configuration(
                profiles=[
                    profile(
                        plugins={"score": {"enabled": [{"name": "ImageLocality", "weight": 2**31}]}}
                    )
                ]
            ),
            ["profiles[0].plugins.score.enabled[0].weight"],
            id="weight beyond int32",
        ),
    ],
)
def test_configuration_refusals(data: dict[str, Any], want: list[str]) -> None:
    assert fields_at_fault(data) == want


def test_v1beta2_with_its_bind_addresses_is_read() -> None:
    convert(
        configuration(V1BETA2, healthzBindAddress="0.0.0.0:0", metricsBindAddress="127.0.0.1:0")
    )


def test_beta_versions_are_noted_with_the_release_they_are_read_as() -> None:
    assert convert(configuration(V1BETA3)).notes == (
        f"{PREFIX}{V1BETA3} is read as kube-scheduler v1.28 read it, "
        "the last release that served it",
    )
    assert convert(configuration()).notes == ()


def test_queue_sort_sets_compare_as_kube_scheduler_compares_them() -> None:
    # An unset weight is 0 in kube-scheduler's internal set: these two are the same.
    first = profile("a", plugins={"queueSort": {"enabled": [{"name": "PrioritySort"}]}})
    second = profile(
        "b", plugins={"queueSort": {"enabled": [{"name": "PrioritySort", "weight": 0}]}}
    )
    convert(configuration(profiles=[first, second]))
    third = profile(
        "c",
        plugins={"queueSort": {"disabled": [{"name": "*"}], "enabled": [{"name": "PrioritySort"}]}},
    )
    assert fields_at_fault(configuration(profiles=[first, third])) == [
        "profiles[1].plugins.queueSort"
    ]


def test_two_profiles_as_upstreams_scheduler_defaults_test() -> None:
    # TestSchedulerDefaults "two profiles": args of an unknown plugin are kept aside (a
    # note here: nothing runs it); a binder replaces DefaultBinder in the other profile.
    data = configuration(
        profiles=[
            {"schedulerName": "default-scheduler", "pluginConfig": [{"name": "FooPlugin"}]},
            profile(
                "custom-scheduler",
                plugins={
                    "bind": {
                        "enabled": [{"name": "BarPlugin"}],
                        "disabled": [{"name": "DefaultBinder"}],
                    }
                },
            ),
        ]
    )
    result = convert(data, extra_plugins={"BarPlugin": ("bind",)})
    default, custom = (pipeline(obj["spec"]) for obj in result.objects)
    assert default == EXPANDED_V1
    assert custom == {**EXPANDED_V1, "bind": ["BarPlugin"]}
    assert (
        f"{PREFIX}profiles[0].pluginConfig[0]: ignored: no extension point of this profile "
        'runs "FooPlugin"' in result.notes
    )
    assert [
        {e["name"]: e["args"] for e in obj["spec"]["pluginConfig"]} for obj in result.objects
    ] == [DEFAULT_ARGS_V1, DEFAULT_ARGS_V1]


@pytest.mark.parametrize("version", [V1BETA3, V1BETA2])
def test_volume_binding_has_no_prescore_before_v1_30(version: str) -> None:
    plugins = {"preScore": {"enabled": [{"name": "VolumeBinding"}]}}
    assert refused(one(plugins, version=version)) == [
        'profiles[0].plugins.preScore.enabled[0].name: "VolumeBinding" does not implement '
        "preScore (it implements preFilter, filter, score, reserve, preBind)"
    ]
    convert(one(plugins))  # v1 (v1.30): it does


def test_a_dynamic_resources_filter_timeout_is_checked_and_carried() -> None:
    written = [{"name": "DynamicResources", "args": {"filterTimeout": "5s"}}]
    result = convert(one(pluginConfig=written))
    assert not [n for n in result.notes if "filterTimeout" in n]  # applied, nothing to note
    config = {e["name"]: e["args"] for e in result.objects[0]["spec"]["pluginConfig"]}
    assert config["DynamicResources"] == {"filterTimeout": "5s"}
    assert refused(
        one(pluginConfig=[{"name": "DynamicResources", "args": {"filterTimeout": "-1s"}}])
    ) == ["profiles[0].pluginConfig[0].args.filterTimeout: must not be negative, got -1s"]
