"""In-tree plugin arguments: decoded, defaulted and validated as kube-scheduler v1.30 does.

The tables are upstream's, ported case by case: validation_pluginargs_test.go (each case
keeps its name as the id and expects the same fields at fault) and TestPluginArgsDefaults
of pkg/scheduler/apis/config/v1/defaults_test.go. Where upstream names a field by a
shorter path than the file's (``scoringStrategy.shape``, a preferred term's
``matchFields`` without ``preference``), the file's path is expected.
"""

from __future__ import annotations

from typing import Any

import pytest

from policy_scheduler import names, pluginargs
from policy_scheduler.pluginargs import (
    ArgsError,
    DefaultPreemptionArgs,
    InterPodAffinityArgs,
    NodeAffinityArgs,
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    PodTopologySpreadArgs,
    ResourceSpec,
    ScoringStrategy,
    VolumeBindingArgs,
    plugin_args,
    to_json,
)


def refusals(name: str, raw: Any, **options: Any) -> list[str]:
    """The ``path: message`` lines kube-scheduler's refusal of these args gives (none: ok)."""
    try:
        plugin_args(name, raw, **options)
    except ArgsError as exc:
        return str(exc).splitlines()
    return []


def fields(name: str, raw: Any, **options: Any) -> list[str]:
    return [line.split(": ", 1)[0] for line in refusals(name, raw, **options)]


# -- DefaultPreemption -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        pytest.param(
            {"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 100},
            [],
            id="valid args (default)",
        ),
        pytest.param(
            {"minCandidateNodesPercentage": -1, "minCandidateNodesAbsolute": 100},
            ["minCandidateNodesPercentage"],
            id="negative minCandidateNodesPercentage",
        ),
        pytest.param(
            {"minCandidateNodesPercentage": 900, "minCandidateNodesAbsolute": 100},
            ["minCandidateNodesPercentage"],
            id="minCandidateNodesPercentage over 100",
        ),
        pytest.param(
            {"minCandidateNodesPercentage": 20, "minCandidateNodesAbsolute": -1},
            ["minCandidateNodesAbsolute"],
            id="negative minCandidateNodesAbsolute",
        ),
        pytest.param(
            {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
            ["minCandidateNodesPercentage", "minCandidateNodesAbsolute"],
            id="all zero",
        ),
        pytest.param(
            {"minCandidateNodesPercentage": -1, "minCandidateNodesAbsolute": -1},
            ["minCandidateNodesPercentage", "minCandidateNodesAbsolute"],
            id="both negative",
        ),
    ],
)
def test_default_preemption_args(raw: dict[str, Any], want: list[str]) -> None:
    assert fields("DefaultPreemption", raw) == want


def test_default_preemption_both_zero_names_the_pair() -> None:
    assert refusals(
        "DefaultPreemption", {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0}
    ) == [
        "minCandidateNodesPercentage: must not be 0 while minCandidateNodesAbsolute is 0 too",
        "minCandidateNodesAbsolute: must not be 0 while minCandidateNodesPercentage is 0 too",
    ]


# -- InterPodAffinity --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("weight", "want"),
    [
        pytest.param(10, [], id="valid args"),
        pytest.param(
            -1,
            ["hardPodAffinityWeight: must be in the range [0, 100], got -1"],
            id="hardPodAffinityWeight less than min",
        ),
        pytest.param(
            101,
            ["hardPodAffinityWeight: must be in the range [0, 100], got 101"],
            id="hardPodAffinityWeight more than max",
        ),
        pytest.param(0, [], id="zero is kept and valid"),
    ],
)
def test_inter_pod_affinity_args(weight: int, want: list[str]) -> None:
    assert refusals("InterPodAffinity", {"hardPodAffinityWeight": weight}) == want


# -- PodTopologySpread ---------------------------------------------------------------------


def constraint(
    key: str = "node", skew: int = 1, action: str = "DoNotSchedule", **more: Any
) -> dict[str, Any]:
    return {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": action, **more}


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        pytest.param(
            {
                "defaultConstraints": [
                    constraint("node", 1),
                    constraint("zone", 2, "ScheduleAnyway"),
                ],
                "defaultingType": "List",
            },
            [],
            id="valid config",
        ),
        pytest.param(
            {"defaultConstraints": [constraint(skew=-1)], "defaultingType": "List"},
            ["defaultConstraints[0].maxSkew"],
            id="maxSkew less than zero",
        ),
        pytest.param(
            {"defaultConstraints": [constraint(key="")], "defaultingType": "List"},
            ["defaultConstraints[0].topologyKey"],
            id="empty topology key",
        ),
        pytest.param(
            {"defaultConstraints": [constraint(action="")], "defaultingType": "List"},
            ["defaultConstraints[0].whenUnsatisfiable"],
            id="whenUnsatisfiable is empty",
        ),
        pytest.param(
            {"defaultConstraints": [constraint(action="unknown action")], "defaultingType": "List"},
            ["defaultConstraints[0].whenUnsatisfiable"],
            id="whenUnsatisfiable contains unsupported action",
        ),
        pytest.param(
            {
                "defaultConstraints": [constraint("node", 1), constraint("node", 2)],
                "defaultingType": "List",
            },
            ["defaultConstraints[1]"],
            id="duplicated constraints",
        ),
        pytest.param(
            {
                "defaultConstraints": [
                    constraint("key", labelSelector={"matchLabels": {"a": "b"}})
                ],
                "defaultingType": "List",
            },
            ["defaultConstraints[0].labelSelector"],
            id="label selector present",
        ),
        pytest.param({"defaultingType": "List"}, [], id="list default constraints, no constraints"),
        pytest.param({"defaultingType": "System"}, [], id="system default constraints"),
        pytest.param({"defaultingType": "unknown"}, ["defaultingType"], id="wrong constraints"),
        pytest.param(
            {"defaultConstraints": [constraint("key")], "defaultingType": "System"},
            ["defaultingType"],
            id="system default constraints, but has constraints",
        ),
        pytest.param(
            {"defaultConstraints": [constraint("planet", 2)]},
            ["defaultingType"],
            id="constraints without defaultingType are System-defaulted, then refused",
        ),
        pytest.param(
            {"defaultConstraints": [constraint("a/b/c")], "defaultingType": "List"},
            ["defaultConstraints[0].topologyKey"],
            id="topology key not a label name",
        ),
    ],
)
def test_pod_topology_spread_args(raw: dict[str, Any], want: list[str]) -> None:
    assert fields("PodTopologySpread", raw) == want


def test_pod_topology_spread_messages_say_what_to_write() -> None:
    assert refusals(
        "PodTopologySpread",
        {"defaultConstraints": [constraint("key"), constraint("key")], "defaultingType": "System"},
    ) == [
        "defaultingType: must be List when defaultConstraints are given (System uses the "
        'system default constraints), got "System"',
        "defaultConstraints[1]: repeats {key, DoNotSchedule} of defaultConstraints[0]",
    ]


def test_system_defaulting_gives_the_system_constraints() -> None:
    args = plugin_args("PodTopologySpread")
    assert isinstance(args, PodTopologySpreadArgs)
    assert [
        (c.topologyKey, c.maxSkew, c.whenUnsatisfiable)
        for c in args.effective_default_constraints()
    ] == [
        ("kubernetes.io/hostname", 3, "ScheduleAnyway"),
        ("topology.kubernetes.io/zone", 5, "ScheduleAnyway"),
    ]
    listed = plugin_args("PodTopologySpread", {"defaultingType": "List"})
    assert isinstance(listed, PodTopologySpreadArgs)
    assert listed.effective_default_constraints() == ()


# -- NodeResourcesBalancedAllocation --------------------------------------------------------


@pytest.mark.parametrize(
    ("resources", "want"),
    [
        pytest.param(
            [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}], [], id="valid config"
        ),
        pytest.param(
            [{"name": "cpu", "weight": 2}, {"name": "memory", "weight": 1}],
            ["resources[0].weight: must be 1, got 2"],
            id="invalid config",
        ),
        pytest.param(
            [{"name": "cpu", "weight": 1}, {"name": "cpu", "weight": 1}],
            ['resources[1].name: duplicate resource "cpu", already at resources[0]'],
            id="repeated resources",
        ),
        pytest.param([{"name": "cpu", "weight": 0}], [], id="weight 0 defaults to 1"),
    ],
)
def test_balanced_allocation_args(resources: list[dict[str, Any]], want: list[str]) -> None:
    assert refusals("NodeResourcesBalancedAllocation", {"resources": resources}) == want


# -- NodeAffinity ------------------------------------------------------------------------------


def added(
    required: list[dict[str, Any]] | None = None, preferred: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    affinity: dict[str, Any] = {}
    if required is not None:
        affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": required}
    if preferred is not None:
        affinity["preferredDuringSchedulingIgnoredDuringExecution"] = preferred
    return {"addedAffinity": affinity}


REQUIRED = "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
PREFERRED = "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution"


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        pytest.param({}, [], id="empty"),
        pytest.param(
            added(
                [
                    {
                        "matchExpressions": [
                            {"key": "label-1", "operator": "In", "values": ["label-1-val"]}
                        ]
                    }
                ],
                [
                    {
                        "weight": 1,
                        "preference": {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": ["node-1"]}
                            ]
                        },
                    }
                ],
            ),
            [],
            id="valid added affinity",
        ),
        pytest.param(
            added(
                [
                    {
                        "matchExpressions": [
                            {
                                "key": "invalid/label/key",
                                "operator": "In",
                                "values": ["label-1-val"],
                            }
                        ]
                    }
                ],
                [
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
                ],
            ),
            [
                f"{REQUIRED}[0].matchExpressions[0].key",
                f"{PREFERRED}[0].preference.matchFields[0].values",
            ],
            id="invalid added affinity",
        ),
        pytest.param(
            added([{"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["x", "2"]}]}]),
            [
                f"{REQUIRED}[0].matchExpressions[0].values",
                f"{REQUIRED}[0].matchExpressions[0].values[0]",
            ],
            id="Gt takes one integer",
        ),
        pytest.param(
            added([{"matchExpressions": [{"key": "a", "operator": "Equals", "values": ["x"]}]}]),
            [f"{REQUIRED}[0].matchExpressions[0].operator"],
            id="unknown operator",
        ),
        pytest.param(
            added([{"matchExpressions": [{"key": "a", "operator": "In"}]}]),
            [f"{REQUIRED}[0].matchExpressions[0].values"],
            id="In without values",
        ),
        pytest.param(
            added(
                preferred=[
                    {"weight": 0, "preference": {"matchFields": [{"key": "k", "operator": "Gt"}]}}
                ]
            ),
            [],
            id="a weight-0 preference is skipped, as upstream",
        ),
        pytest.param(added([{}]), [], id="an empty term is skipped"),
    ],
)
def test_node_affinity_args(raw: dict[str, Any], want: list[str]) -> None:
    assert fields("NodeAffinity", raw) == want


def test_node_affinity_compiles_the_added_terms() -> None:
    args = plugin_args(
        "NodeAffinity",
        added(
            [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}],
            [
                {
                    "weight": 5,
                    "preference": {
                        "matchFields": [
                            {"key": "metadata.name", "operator": "In", "values": ["n1"]}
                        ]
                    },
                }
            ],
        ),
    )
    assert isinstance(args, NodeAffinityArgs)
    required = args.required_terms()
    assert required is not None
    assert [t.matches({"zone": "a"}, "n2") for t in required] == [True]
    assert [t.matches({"zone": "b"}, "n2") for t in required] == [False]
    [(weight, term)] = args.preferred_terms()
    assert weight == 5
    assert term.matches({}, "n1") and not term.matches({}, "n2")
    assert NodeAffinityArgs().required_terms() is None


# -- VolumeBinding ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "gate", "want"),
    [
        pytest.param({"bindTimeoutSeconds": 0}, False, [], id="zero is a valid config"),
        pytest.param({"bindTimeoutSeconds": 10}, False, [], id="positive value is valid config"),
        pytest.param(
            {"bindTimeoutSeconds": -10},
            False,
            ["bindTimeoutSeconds"],
            id="negative value is invalid config",
        ),
        pytest.param(
            {"bindTimeoutSeconds": 10, "shape": None},
            False,
            [],
            id="[VolumeCapacityPriority=off] shape should be nil when the feature is off",
        ),
        pytest.param(
            {
                "bindTimeoutSeconds": 10,
                "shape": [{"utilization": 1, "score": 1}, {"utilization": 3, "score": 3}],
            },
            False,
            ["shape"],
            id="[VolumeCapacityPriority=off] error if the shape is not nil when the feature is off",
        ),
        pytest.param(
            {"bindTimeoutSeconds": 10, "shape": []},
            False,
            ["shape"],
            id="[VolumeCapacityPriority=off] an empty shape is set too",
        ),
        pytest.param(
            {"bindTimeoutSeconds": 10, "shape": []},
            True,
            ["shape"],
            id="[VolumeCapacityPriority=on] shape should not be empty",
        ),
        pytest.param(
            {
                "bindTimeoutSeconds": 10,
                "shape": [{"utilization": 3, "score": 3}, {"utilization": 1, "score": 1}],
            },
            True,
            ["shape[1].utilization"],
            id="[VolumeCapacityPriority=on] shape points must be sorted in increasing order",
        ),
        pytest.param(
            {
                "bindTimeoutSeconds": 10,
                "shape": [
                    {"utilization": -1, "score": 1},
                    {"utilization": 10, "score": -1},
                    {"utilization": 20, "score": 11},
                    {"utilization": 101, "score": 1},
                ],
            },
            True,
            ["shape[0].utilization", "shape[1].score", "shape[2].score", "shape[3].utilization"],
            id="[VolumeCapacityPriority=on] shape point: invalid utilization and score",
        ),
    ],
)
def test_volume_binding_args(raw: dict[str, Any], gate: bool, want: list[str]) -> None:
    assert fields("VolumeBinding", raw, volume_capacity_priority=gate) == want


def test_volume_binding_shape_refusal_names_the_gate() -> None:
    [line] = refusals("VolumeBinding", {"shape": [{"utilization": 0, "score": 0}]})
    assert line.startswith(
        "shape: must not be set: it needs the VolumeCapacityPriority feature gate"
    )


# -- NodeResourcesFit --------------------------------------------------------------------------

DEFAULT_STRATEGY = {
    "type": "LeastAllocated",
    "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
}


@pytest.mark.parametrize(
    ("raw", "expect"),
    [
        pytest.param(
            {"ignoredResources": ["longvalue" + "a" * 64], "scoringStrategy": DEFAULT_STRATEGY},
            "ignoredResources[0]: name part must be no more than 63 characters",
            id="IgnoredResources: too long value",
        ),
        pytest.param(
            {"ignoredResources": ["example.com/"], "scoringStrategy": DEFAULT_STRATEGY},
            "ignoredResources[0]: name part must be non-empty",
            id="IgnoredResources: name is empty",
        ),
        pytest.param(
            {"ignoredResources": ["example.com/aaa/bbb"], "scoringStrategy": DEFAULT_STRATEGY},
            "ignoredResources[0]: a qualified name must consist of alphanumeric characters",
            id="IgnoredResources: name has too many slash",
        ),
        pytest.param(
            {"ignoredResources": ["example.com"], "scoringStrategy": DEFAULT_STRATEGY},
            "",
            id="IgnoredResources: valid args",
        ),
        pytest.param(
            {"ignoredResourceGroups": ["example.com"], "scoringStrategy": DEFAULT_STRATEGY},
            "",
            id="IgnoredResourceGroups: valid args",
        ),
        pytest.param(
            {"ignoredResourceGroups": ["example.com/"], "scoringStrategy": DEFAULT_STRATEGY},
            "ignoredResourceGroups[0]: name part must be non-empty",
            id="IgnoredResourceGroups: illegal args",
        ),
        pytest.param(
            {"ignoredResourceGroups": ["a" * 64], "scoringStrategy": DEFAULT_STRATEGY},
            "ignoredResourceGroups[0]: name part must be no more than 63 characters",
            id="IgnoredResourceGroups: name is too long",
        ),
        pytest.param(
            {"ignoredResourceGroups": ["example.com/aa"], "scoringStrategy": DEFAULT_STRATEGY},
            "ignoredResourceGroups[0]: resource group name can't contain '/'",
            id="IgnoredResourceGroups: name cannot be contain slash",
        ),
        pytest.param({}, "", id="ScoringStrategy: defaulted when absent"),
        pytest.param(
            {"scoringStrategy": {"resources": [{"name": "cpu"}]}},
            "scoringStrategy.type: must be one of LeastAllocated, MostAllocated, "
            'RequestedToCapacityRatio, got ""',
            id="ScoringStrategy: a strategy without a type keeps none",
        ),
    ],
)
def test_fit_args(raw: dict[str, Any], expect: str) -> None:
    lines = refusals("NodeResourcesFit", raw)
    if expect:
        assert any(line.startswith(expect) for line in lines), lines
    else:
        assert lines == []


WEIGHT_CASES = [
    pytest.param(None, [], id="default config"),
    pytest.param(
        [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 10}],
        [],
        id="multi valid resources",
    ),
    pytest.param(
        [{"name": "cpu", "weight": -1}],
        ["scoringStrategy.resources[0].weight"],
        id="weight less than min",
    ),
    pytest.param(
        [{"name": "cpu", "weight": 101}],
        ["scoringStrategy.resources[0].weight"],
        id="weight greater than max",
    ),
    pytest.param(
        [{"name": "cpu", "weight": -1}, {"name": "memory", "weight": 101}],
        ["scoringStrategy.resources[0].weight", "scoringStrategy.resources[1].weight"],
        id="multi invalid resources",
    ),
    # Upstream's "weight less than min" case sets 0 on the internal type; written in a
    # file, 0 is the unset weight and defaults to 1.
    pytest.param([{"name": "cpu", "weight": 0}], [], id="weight 0 defaults to 1"),
]


@pytest.mark.parametrize(("resources", "want"), WEIGHT_CASES)
@pytest.mark.parametrize("strategy", ["LeastAllocated", "MostAllocated"])
def test_allocated_scoring_strategy(strategy: str, resources: Any, want: list[str]) -> None:
    raw: dict[str, Any] = {"type": strategy}
    if resources is not None:
        raw["resources"] = resources
    assert fields("NodeResourcesFit", {"scoringStrategy": raw}) == want


def test_resource_weight_message() -> None:
    raw = {
        "scoringStrategy": {
            "type": "MostAllocated",
            "resources": [{"name": "cpu"}, {"name": "memory", "weight": 101}],
        }
    }
    assert refusals("NodeResourcesFit", raw) == [
        "scoringStrategy.resources[1].weight: must be in the range [1, 100] "
        '(the weight of "memory"), got 101'
    ]


SHAPE = "scoringStrategy.requestedToCapacityRatio.shape"
DEFAULT_SHAPE = [{"utilization": 30, "score": 3}]


@pytest.mark.parametrize(
    ("resources", "shape", "want"),
    [
        pytest.param(None, None, [SHAPE], id="no shapes"),
        pytest.param(
            [{"name": "cpu", "weight": 101}],
            DEFAULT_SHAPE,
            ["scoringStrategy.resources[0].weight"],
            id="weight greater than max",
        ),
        pytest.param(
            [{"name": "cpu", "weight": -1}],
            DEFAULT_SHAPE,
            ["scoringStrategy.resources[0].weight"],
            id="weight less than min",
        ),
        pytest.param(None, DEFAULT_SHAPE, [], id="valid shapes"),
        pytest.param(
            None,
            [{"utilization": -1, "score": 3}],
            [f"{SHAPE}[0].utilization"],
            id="utilization less than min",
        ),
        pytest.param(
            None,
            [{"utilization": 101, "score": 3}],
            [f"{SHAPE}[0].utilization"],
            id="utilization greater than max",
        ),
        pytest.param(
            None,
            [{"utilization": 10, "score": 3}, {"utilization": 10, "score": 3}],
            [f"{SHAPE}[1].utilization"],
            id="duplicated utilization values",
        ),
        pytest.param(
            None,
            [
                {"utilization": 10, "score": 3},
                {"utilization": 20, "score": 3},
                {"utilization": 30, "score": 3},
            ],
            [],
            id="increasing utilization values",
        ),
        pytest.param(
            None,
            [
                {"utilization": 10, "score": 3},
                {"utilization": 20, "score": 3},
                {"utilization": 15, "score": 3},
            ],
            [f"{SHAPE}[2].utilization"],
            id="non-increasing utilization values",
        ),
        pytest.param(
            None,
            [{"utilization": 10, "score": -1}],
            [f"{SHAPE}[0].score"],
            id="score less than min",
        ),
        pytest.param(
            None,
            [{"utilization": 10, "score": 11}],
            [f"{SHAPE}[0].score"],
            id="score greater than max",
        ),
    ],
)
def test_requested_to_capacity_ratio_strategy(resources: Any, shape: Any, want: list[str]) -> None:
    strategy: dict[str, Any] = {
        "type": "RequestedToCapacityRatio",
        "requestedToCapacityRatio": {"shape": shape},
    }
    if resources is not None:
        strategy["resources"] = resources
    assert fields("NodeResourcesFit", {"scoringStrategy": strategy}) == want


def test_requested_to_capacity_ratio_without_its_parameters_is_refused() -> None:
    # kube-scheduler v1.30 would crash at start (NewFit dereferences it).
    assert refusals(
        "NodeResourcesFit", {"scoringStrategy": {"type": "RequestedToCapacityRatio"}}
    ) == [
        "scoringStrategy.requestedToCapacityRatio: is required when scoringStrategy.type is "
        "RequestedToCapacityRatio (its shape: [{utilization, score}])"
    ]


# -- defaults (TestPluginArgsDefaults) -------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "raw", "want"),
    [
        pytest.param(
            "DefaultPreemption",
            {},
            DefaultPreemptionArgs(minCandidateNodesPercentage=10, minCandidateNodesAbsolute=100),
            id="DefaultPreemptionArgs empty",
        ),
        pytest.param(
            "DefaultPreemption",
            {"minCandidateNodesPercentage": 50},
            DefaultPreemptionArgs(minCandidateNodesPercentage=50, minCandidateNodesAbsolute=100),
            id="DefaultPreemptionArgs with value",
        ),
        pytest.param(
            "InterPodAffinity",
            {},
            InterPodAffinityArgs(hardPodAffinityWeight=1),
            id="InterPodAffinityArgs empty",
        ),
        pytest.param(
            "InterPodAffinity",
            {"hardPodAffinityWeight": 0},
            InterPodAffinityArgs(hardPodAffinityWeight=0),
            id="InterPodAffinityArgs explicit 0",
        ),
        pytest.param(
            "InterPodAffinity",
            {"hardPodAffinityWeight": 5},
            InterPodAffinityArgs(hardPodAffinityWeight=5),
            id="InterPodAffinityArgs with value",
        ),
        pytest.param(
            "NodeResourcesBalancedAllocation",
            {},
            NodeResourcesBalancedAllocationArgs(
                resources=[
                    ResourceSpec(name="cpu", weight=1),
                    ResourceSpec(name="memory", weight=1),
                ]
            ),
            id="NodeResourcesBalancedAllocationArgs resources empty",
        ),
        pytest.param(
            "NodeResourcesBalancedAllocation",
            {"resources": [{"name": "scalar.io/scalar1", "weight": 1}]},
            NodeResourcesBalancedAllocationArgs(
                resources=[ResourceSpec(name="scalar.io/scalar1", weight=1)]
            ),
            id="NodeResourcesBalancedAllocationArgs with scalar resource",
        ),
        pytest.param(
            "NodeResourcesBalancedAllocation",
            {
                "resources": [
                    {"name": "cpu", "weight": 1},
                    {"name": "scalar.io/scalar1", "weight": 1},
                ]
            },
            NodeResourcesBalancedAllocationArgs(
                resources=[
                    ResourceSpec(name="cpu", weight=1),
                    ResourceSpec(name="scalar.io/scalar1", weight=1),
                ]
            ),
            id="NodeResourcesBalancedAllocationArgs with mixed resources",
        ),
        pytest.param(
            "NodeResourcesBalancedAllocation",
            {
                "resources": [
                    {"name": "cpu"},
                    {"name": "scalar.io/scalar0"},
                    {"name": "scalar.io/scalar1", "weight": 1},
                ]
            },
            NodeResourcesBalancedAllocationArgs(
                resources=[
                    ResourceSpec(name="cpu", weight=1),
                    ResourceSpec(name="scalar.io/scalar0", weight=1),
                    ResourceSpec(name="scalar.io/scalar1", weight=1),
                ]
            ),
            id="NodeResourcesBalancedAllocationArgs have resource no weight",
        ),
        pytest.param(
            "PodTopologySpread",
            {},
            PodTopologySpreadArgs(defaultingType="System"),
            id="PodTopologySpreadArgs resources empty",
        ),
        pytest.param(
            "NodeResourcesFit",
            {},
            NodeResourcesFitArgs(
                scoringStrategy=ScoringStrategy(
                    type="LeastAllocated",
                    resources=[
                        ResourceSpec(name="cpu", weight=1),
                        ResourceSpec(name="memory", weight=1),
                    ],
                )
            ),
            id="NodeResourcesFitArgs not set",
        ),
        pytest.param(
            "NodeResourcesFit",
            {"scoringStrategy": {"type": "MostAllocated"}},
            NodeResourcesFitArgs(
                scoringStrategy=ScoringStrategy(
                    type="MostAllocated",
                    resources=[
                        ResourceSpec(name="cpu", weight=1),
                        ResourceSpec(name="memory", weight=1),
                    ],
                )
            ),
            id="NodeResourcesFitArgs Resources empty",
        ),
        pytest.param(
            "VolumeBinding",
            {},
            VolumeBindingArgs(bindTimeoutSeconds=600),
            id="VolumeBindingArgs empty, VolumeCapacityPriority disabled",
        ),
        pytest.param("NodeAffinity", None, NodeAffinityArgs(), id="NodeAffinityArgs absent"),
    ],
)
def test_defaults(name: str, raw: Any, want: pluginargs.PluginArgs) -> None:
    assert plugin_args(name, raw) == want


def test_defaults_in_print_form() -> None:
    assert {
        name: to_json(args)
        for name in pluginargs.ARGS_MODELS
        if (args := pluginargs.default_args(name))
    } == {
        "NodeResourcesFit": {"scoringStrategy": DEFAULT_STRATEGY},
        "NodeResourcesBalancedAllocation": {"resources": DEFAULT_STRATEGY["resources"]},
        "PodTopologySpread": {"defaultingType": "System"},
        "InterPodAffinity": {
            "hardPodAffinityWeight": 1,
            "ignorePreferredTermsOfExistingPods": False,
        },
        "NodeAffinity": {},
        "DefaultPreemption": {"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 100},
        "VolumeBinding": {"bindTimeoutSeconds": 600},
        "DynamicResources": {"filterTimeout": "10s"},
    }


@pytest.mark.parametrize("name", list(pluginargs.ARGS_MODELS))
def test_printed_args_read_back_the_same(name: str) -> None:
    args = pluginargs.default_args(name)
    assert args is not None
    assert plugin_args(name, to_json(args)) == args


# -- decoding: strict, as kube-scheduler's codec ---------------------------------------------


@pytest.mark.parametrize(
    ("name", "raw", "want"),
    [
        pytest.param(
            "InterPodAffinity",
            {"hardPodAffinityWeight": "5"},
            ['hardPodAffinityWeight: must be an integer, got "5"'],
            id="string for int",
        ),
        pytest.param(
            "InterPodAffinity",
            {"hardPodAffinityWeight": 2**31},
            ["hardPodAffinityWeight: must fit in a 32-bit integer, got 2147483648"],
            id="beyond int32",
        ),
        pytest.param(
            "InterPodAffinity",
            {"ignorePreferredTermsOfExistingPods": "true"},
            ['ignorePreferredTermsOfExistingPods: must be true or false, got "true"'],
            id="string for bool",
        ),
        pytest.param(
            "VolumeBinding",
            {"bindTimeoutSecond": 5},
            ["bindTimeoutSecond: unknown field (did you mean bindTimeoutSeconds?)"],
            id="unknown field",
        ),
        pytest.param(
            "NodeResourcesFit",
            {"scoringStrategy": {"resources": [{"name": "cpu", "weigth": 2}]}},
            ["scoringStrategy.resources[0].weigth: unknown field (did you mean weight?)"],
            id="unknown nested field",
        ),
        pytest.param(
            "DefaultPreemption",
            {"kind": "InterPodAffinityArgs"},
            [
                "kind: must be DefaultPreemptionArgs (the args of DefaultPreemption), "
                'got "InterPodAffinityArgs"'
            ],
            id="args of another plugin",
        ),
        pytest.param(
            "DefaultPreemption",
            {"kind": "DefaultPreemptionArgs", "apiVersion": "kubescheduler.config.k8s.io/v1"},
            [],
            id="own kind and version",
        ),
        pytest.param(
            "DefaultPreemption", ["x"], ['must be an object, got ["x"]'], id="not an object"
        ),
        pytest.param("InterPodAffinity", {"hardPodAffinityWeight": None}, [], id="null is unset"),
    ],
)
def test_decoding(name: str, raw: Any, want: list[str]) -> None:
    assert refusals(name, raw) == want


def test_api_version_must_be_the_configurations() -> None:
    raw = {"apiVersion": "kubescheduler.config.k8s.io/v1beta3"}
    assert refusals("VolumeBinding", raw, api_version=pluginargs.V1) == [
        "apiVersion: must be kubescheduler.config.k8s.io/v1, "
        'got "kubescheduler.config.k8s.io/v1beta3"'
    ]
    assert refusals("VolumeBinding", raw, api_version=pluginargs.V1BETA3) == []


def test_a_plugin_without_args_takes_whatever_it_is_given() -> None:
    # kube-scheduler hands such args to the plugin undecoded; ImageLocality ignores them.
    assert plugin_args("ImageLocality", {"anything": 1}) is None


# -- the catalogue -------------------------------------------------------------------------------


def test_catalogue_has_every_in_tree_plugin_of_v1_30_and_v1_34_with_its_points() -> None:
    running = {name for name, plugin in pluginargs.CATALOGUE.items() if plugin.runs}
    assert running == set(names.IN_TREE_PLUGIN_POINTS) | set(names.V134_PLUGIN_POINTS)
    v1 = {n for n, p in pluginargs.CATALOGUE.items() if p.runs and pluginargs.V1 in p.versions}
    assert v1 == running - {"EBSLimits", "GCEPDLimits", "AzureDiskLimits", "CinderLimits"}
    assert pluginargs.CATALOGUE["VolumeBinding"].points == (
        "preFilter",
        "filter",
        "preScore",
        "score",
        "reserve",
        "preBind",
    )
    assert pluginargs.CATALOGUE["DefaultPreemption"].points == ("postFilter",)
    for plugin in pluginargs.CATALOGUE.values():
        assert list(plugin.points) == [p for p in names.EXTENSION_POINTS if p in plugin.points]


def test_catalogue_knows_what_each_version_removed() -> None:
    spread = pluginargs.CATALOGUE["SelectorSpread"]
    assert spread.versions == {pluginargs.V1BETA2, pluginargs.V1BETA3} and not spread.runs
    assert "NodeResourcesFit" in pluginargs.CATALOGUE["NodeResourcesLeastAllocated"].history
    assert pluginargs.CATALOGUE["NodeResourcesLeastAllocated"].versions == frozenset()
    dra = pluginargs.CATALOGUE["DynamicResources"]
    assert dra.inert_without == "DynamicResourceAllocation"
    assert dra.inert_in == {pluginargs.V1BETA2, pluginargs.V1BETA3}  # v1.34 (v1) runs it


def test_args_models_are_the_plugins_own() -> None:
    assert {name for name, plugin in pluginargs.CATALOGUE.items() if plugin.args} == {
        "NodeResourcesFit",
        "NodeResourcesBalancedAllocation",
        "PodTopologySpread",
        "InterPodAffinity",
        "NodeAffinity",
        "DefaultPreemption",
        "VolumeBinding",
        "DynamicResources",
    }


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ({"filterTimeout": "-1s"}, "filterTimeout: must not be negative, got -1s"),
        (
            {"filterTimeout": "10 seconds"},
            'filterTimeout: must be a duration such as 10s or 500ms, got "10 seconds"',
        ),
        ({"filterTimeout": 10}, "filterTimeout: must be a string, got 10"),
    ],
)
def test_dynamic_resources_args_of_v1_34(raw: dict[str, Any], problem: str) -> None:
    with pytest.raises(pluginargs.ArgsError) as caught:
        pluginargs.plugin_args("DynamicResources", raw)
    assert str(caught.value) == problem
    assert pluginargs.plugin_args("DynamicResources", {"filterTimeout": "0"}) is not None
    assert pluginargs.plugin_args("DynamicResources", {"filterTimeout": "1m30s"}) is not None
