"""One merge of plugin sets (engine/pluginsets.py) for a SchedulingPolicy and a configuration.

The same sets, written in a v1 KubeSchedulerConfiguration's profile or in a
SchedulingPolicy over the same defaults, run the same plugins in the same order at every
point (``status.plugins`` shows the policy's), in kube-scheduler v1.30's order: a
point's own entries naming a multiPoint plugin first, then the defaults and multiPoint's
plugins, then the point's other entries; ``disabled: [{name: "*"}]`` at a point leaves
only that point's own entries there, multiPoint's plugins included.
"""

from __future__ import annotations

from typing import Any

import pytest

from policy_scheduler.engine.compiler import compile_policy
from policy_scheduler.engine.pluginsets import PluginSet, Ref, expand_point, merge_plugin_set
from policy_scheduler.policy import PolicyError, parse_policy
from policy_scheduler.schedconfig import convert_configuration
from policy_scheduler.simulation import out_of_tree_plugins

#: v1.34's default Filter and Score plugins, in the order its default multiPoint runs them.
FILTERS = [
    "NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodePorts",
    "NodeResourcesFit", "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding",
    "VolumeZone", "PodTopologySpread", "InterPodAffinity", "DynamicResources",
]  # fmt: skip
SCORES = [
    ("TaintToleration", 3), ("NodeAffinity", 2), ("NodeResourcesFit", 1), ("VolumeBinding", 1),
    ("PodTopologySpread", 2), ("InterPodAffinity", 2), ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
]  # fmt: skip
#: The points whose defaults the two share (a policy's postFilter default is the legacy
#: preemption, a v1 profile's DefaultPreemption; SchedulingGates is a v1 default only).
SHARED = ("preFilter", "filter", "preScore", "score", "reserve", "permit", "preBind", "bind")


def through_a_policy(plugins: dict[str, Any]) -> dict[str, list[str]]:
    spec = {
        "schedulerName": "s",
        "predicates": [{"name": name} for name in FILTERS],
        "priorities": [{"name": name, "weight": weight} for name, weight in SCORES],
        "plugins": plugins,
    }
    policy = parse_policy(
        {
            "apiVersion": "policyscheduler.io/v1alpha1",
            "kind": "SchedulingPolicy",
            "metadata": {"name": "p"},
            "spec": spec,
        }
    )
    return listed(compile_policy(policy).pipeline.listing())


def through_a_configuration(plugins: dict[str, Any]) -> dict[str, list[str]]:
    doc = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "s", "plugins": plugins}],
    }
    # As `convert` and `simulate --config` read it: installed plugins may be named.
    conversion = convert_configuration(doc, extra_plugins=out_of_tree_plugins(doc))
    policy = parse_policy(conversion.objects[0])
    return listed(compile_policy(policy).pipeline.listing())


def listed(listing: dict[str, list[dict[str, Any]]]) -> dict[str, list[str]]:
    return {point: [entry["name"] for entry in listing.get(point, [])] for point in SHARED}


def multi(*plugins: str) -> dict[str, Any]:
    return {"enabled": [{"name": name} for name in plugins]}


@pytest.mark.parametrize(
    ("plugins", "point", "runs"),
    [
        pytest.param(
            {"multiPoint": multi("Sample")},
            "preBind",
            ["VolumeBinding", "DynamicResources", "Sample"],
            id="multiPoint after the defaults",
        ),
        pytest.param(
            {"multiPoint": multi("Sample"), "preBind": multi("ScriptA")},
            "preBind",
            ["VolumeBinding", "DynamicResources", "Sample", "ScriptA"],
            id="the point's other entries after multiPoint",
        ),
        pytest.param(
            {"multiPoint": multi("Sample", "ScriptA"), "preBind": multi("ScriptA")},
            "preBind",
            ["ScriptA", "VolumeBinding", "DynamicResources", "Sample"],
            id="the point's entry naming a multiPoint plugin first",
        ),
        pytest.param(
            {"multiPoint": multi("Sample"), "preBind": {"disabled": [{"name": "*"}]}},
            "preBind",
            [],
            id="star disables multiPoint's plugins at the point",
        ),
        pytest.param(
            {
                "multiPoint": multi("Sample"),
                "preBind": {"enabled": [{"name": "ScriptA"}], "disabled": [{"name": "*"}]},
            },
            "preBind",
            ["ScriptA"],
            id="star leaves the point's own entries",
        ),
        pytest.param(
            {"multiPoint": multi("ScriptA"), "preBind": {"disabled": [{"name": "VolumeBinding"}]}},
            "preBind",
            ["DynamicResources", "ScriptA"],
            id="a default disabled by name at the point",
        ),
        pytest.param(
            {"multiPoint": multi("ScriptA"), "reserve": {"disabled": [{"name": "ScriptA"}]}},
            "reserve",
            ["VolumeBinding", "DynamicResources"],
            id="a multiPoint plugin disabled by name at the point",
        ),
        pytest.param(
            {"multiPoint": multi("ScriptA"), "permit": multi("ScriptB")},
            "permit",
            ["ScriptA", "ScriptB"],
            id="a point without defaults",
        ),
    ],
)
def test_the_same_sets_run_the_same_plugins_either_way(
    plugins: dict[str, Any], point: str, runs: list[str]
) -> None:
    policy, configuration = through_a_policy(plugins), through_a_configuration(plugins)
    assert policy[point] == runs
    assert configuration[point] == runs
    assert policy == configuration  # every shared point, not only this one


def test_star_at_a_point_keeps_multipoint_plugins_at_their_other_points() -> None:
    plugins = {"multiPoint": multi("Sample"), "preBind": {"disabled": [{"name": "*"}]}}
    got = through_a_policy(plugins)
    assert got["preBind"] == []
    assert got["filter"][-1] == "Sample" and got["score"][-1] == "Sample"
    assert got == through_a_configuration(plugins)


def test_merge_replaces_a_default_in_place_and_appends_the_rest() -> None:
    default = PluginSet((Ref("A"), Ref("B", 1), Ref("C")))
    custom = PluginSet((Ref("X"), Ref("B", 5)), disabled=("C",))
    assert merge_plugin_set(default, custom) == PluginSet(
        (Ref("A"), Ref("B", 5), Ref("X")), disabled=("C",)
    )
    assert merge_plugin_set(default, PluginSet((Ref("X"),), ("*",))).enabled == (Ref("X"),)


@pytest.mark.parametrize(
    ("explicit", "offered", "disabled", "runs"),
    [
        pytest.param([], ["A", "B"], (), ["A", "B"], id="multiPoint alone"),
        pytest.param(["B"], ["A", "B"], (), ["B", "A"], id="an override first"),
        pytest.param(["X"], ["A", "B"], (), ["A", "B", "X"], id="others last"),
        pytest.param(["X", "B"], ["A", "B"], (), ["B", "A", "X"], id="both"),
        pytest.param(["X"], ["A", "B"], ("*",), ["X"], id="star"),
        pytest.param([], ["A", "B", "A"], ("B",), ["A"], id="disabled, once each"),
    ],
)
def test_expansion_at_one_point(
    explicit: list[str], offered: list[str], disabled: tuple[str, ...], runs: list[str]
) -> None:
    assert expand_point(explicit, offered, disabled) == runs


def test_a_plugin_twice_in_multipoint_is_refused_in_a_policy_as_in_a_configuration() -> None:
    plugins = {"multiPoint": multi("ScriptA", "ScriptA")}
    with pytest.raises(PolicyError) as caught:
        through_a_policy(plugins)
    assert str(caught.value) == (
        'SchedulingPolicy "p": spec.plugins.multiPoint.enabled[1].name: '
        "'ScriptA' is enabled twice in multiPoint"
    )
    with pytest.raises(PolicyError) as refused:
        through_a_configuration(plugins)
    assert "is enabled twice in multiPoint" in str(refused.value)
