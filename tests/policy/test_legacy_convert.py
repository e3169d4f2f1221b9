"""Legacy kube-scheduler Policy -> SchedulingPolicy: what behaves the same, what is refused."""

from __future__ import annotations

import json
from typing import Any

import pytest

from policy_scheduler import names
from policy_scheduler.legacy import ConversionResult, convert_legacy, load_legacy
from policy_scheduler.policy import PolicyError, parse_policy, policy_to_object

# The kube-scheduler docs' policy with an extender, plus the custom predicates and
# priorities of upstream's compatibility test, in a deliberately shuffled order.
CLASSIC = """
{
  "kind": "Policy",
  "apiVersion": "v1",
  "predicates": [
    {"name": "MatchInterPodAffinity"},
    {"name": "TestLabelsPresence",
     "argument": {"labelsPresence": {"labels": ["foo"], "presence": true}}},
    {"name": "PodFitsHostPorts"},
    {"name": "PodFitsResources"},
    {"name": "TestServiceAffinity", "argument": {"serviceAffinity": {"labels": ["region"]}}},
    {"name": "NoDiskConflict"},
    {"name": "NoVolumeZoneConflict"},
    {"name": "MatchNodeSelector"},
    {"name": "HostName"}
  ],
  "priorities": [
    {"name": "LeastRequestedPriority", "weight": 1},
    {"name": "BalancedResourceAllocation", "weight": 1},
    {"name": "ServiceSpreadingPriority", "weight": 1},
    {"name": "EqualPriority", "weight": 1},
    {"name": "RackSpread", "weight": 3, "argument": {"serviceAntiAffinity": {"label": "rack"}}},
    {"name": "TestLabelPreference", "weight": 4,
     "argument": {"labelPreference": {"label": "bar", "presence": true}}}
  ],
  "extenders": [
    {
      "urlPrefix": "http://127.0.0.1:12346/scheduler",
      "filterVerb": "filter",
      "bindVerb": "bind",
      "prioritizeVerb": "prioritize",
      "weight": 5,
      "enableHttps": false,
      "nodeCacheCapable": false,
      "httpTimeout": 30000000000,
      "managedResources": [{"name": "example.com/foo", "ignoredByScheduler": true}],
      "ignorable": true
    },
    {
      "urlPrefix": "https://127.0.0.1:12347/scheduler",
      "filterVerb": "filter",
      "enableHttps": true,
      "tlsConfig": {"insecure": true},
      "managedResources": [{"name": "example.com/bar"}]
    }
  ],
  "hardPodAffinitySymmetricWeight": 10,
  "alwaysCheckAllPredicates": false
}
"""

YAML_WITHOUT_KIND = """
predicates:
  - name: PodFitsResources
  - name: PodToleratesNodeTaints
  - name: GeneralPredicates
priorities:
  - name: MostRequestedPriority
    weight: 2
  - name: RequestedToCapacityRatioPriority
    weight: 3
    argument:
      requestedToCapacityRatioArguments:
        shape:
          - {utilization: 0, score: 0}
          - {utilization: 100, score: 10}
        resources:
          - {name: cpu, weight: 2}
          - {name: memory}
hardPodAffinitySymmetricWeight: 5
alwaysCheckAllPredicates: true
"""


def convert(data: dict[str, Any], **kwargs: Any) -> ConversionResult:
    return convert_legacy(data, **kwargs)


def mandatory_note(*missing: str) -> str:
    """The note on the predicates kube-scheduler always ran (CheckNodeUnschedulable, ...)."""
    return (
        f"Policy: predicates: kube-scheduler v1.12+ always ran {' and '.join(missing)}, listed "
        "or not; the converted policy runs what the file lists (add them to keep that behaviour)"
    )


BOTH_MANDATORY = mandatory_note("CheckNodeUnschedulable", "PodToleratesNodeTaints")


def legacy_errors(data: Any) -> list[str]:
    with pytest.raises(PolicyError) as info:
        convert_legacy(data)
    return info.value.errors


# -- accepted -----------------------------------------------------------------------


def test_classic_policy() -> None:
    result = convert(load_legacy(CLASSIC), name="classic", scheduler_name="legacy-scheduler")
    assert result.warnings == (BOTH_MANDATORY,)
    obj = policy_to_object(result.policy)
    assert obj["metadata"] == {"name": "classic"}
    spec = obj["spec"]
    assert spec["schedulerName"] == "legacy-scheduler"
    assert spec["hardPodAffinitySymmetricWeight"] == 10
    assert spec["alwaysCheckAllPredicates"] is False
    assert spec["priorities"] == json.loads(CLASSIC)["priorities"]
    assert spec["extenders"][0] == {
        "urlPrefix": "http://127.0.0.1:12346/scheduler",
        "filterVerb": "filter",
        "bindVerb": "bind",
        "prioritizeVerb": "prioritize",
        "weight": 5,
        "enableHTTPS": False,
        "nodeCacheCapable": False,
        "httpTimeout": 30000000000,
        "managedResources": [{"name": "example.com/foo", "ignoredByScheduler": True}],
        "ignorable": True,
    }
    assert spec["extenders"][1]["enableHTTPS"] is True
    assert spec["extenders"][1]["tlsConfig"] == {"insecure": True}
    # The converted object is a valid SchedulingPolicy that reads back the same.
    assert policy_to_object(parse_policy(obj)) == obj


def test_orders_reproduce_the_legacy_fixed_order() -> None:
    policy = convert(load_legacy(CLASSIC)).policy
    ordered = policy.ordered_predicates()
    assert ordered is not None
    assert [entry.name for entry in ordered] == [
        "HostName",
        "PodFitsHostPorts",
        "MatchNodeSelector",
        "PodFitsResources",
        "NoDiskConflict",
        "TestLabelsPresence",  # where CheckNodeLabelPresence ran
        "TestServiceAffinity",  # where CheckServiceAffinity ran
        "NoVolumeZoneConflict",
        "MatchInterPodAffinity",
    ]
    # Converted entries stay in the file's order; only `order` carries the legacy order.
    assert policy.spec.predicates is not None
    assert [p.name for p in policy.spec.predicates][:2] == [
        "MatchInterPodAffinity",
        "TestLabelsPresence",
    ]
    orders = {p.name: p.order for p in policy.spec.predicates}
    assert orders["HostName"] == 10 * names.legacy_rank("HostName")
    assert orders["TestLabelsPresence"] == 10 * names.legacy_rank("x", "labelsPresence")


def test_every_builtin_predicate_gets_its_legacy_rank() -> None:
    builtin = list(names.LEGACY_PREDICATE_ORDER)
    data = {"predicates": [{"name": name} for name in reversed(builtin)]}
    ordered = convert(data).policy.ordered_predicates()
    assert ordered is not None
    assert [entry.name for entry in ordered] == builtin


def test_predicates_sharing_a_slot_get_consecutive_orders_in_file_order() -> None:
    data = {
        "predicates": [
            {
                "name": "Zone",
                "argument": {"labelsPresence": {"labels": ["zone"], "presence": True}},
            },
            {"name": "HostName"},
            {"name": "NotRetiring", "argument": {"labelsPresence": {"labels": ["retiring"]}}},
            {"name": "CheckNodeLabelPresence", "argument": {"labelsPresence": {"labels": ["a"]}}},
        ]
    }
    policy = convert(data).policy
    assert policy.spec.predicates is not None
    rank = names.legacy_rank(names.CHECK_NODE_LABEL_PRESENCE)
    assert [p.order for p in policy.spec.predicates] == [
        rank * 10,
        names.legacy_rank("HostName") * 10,
        rank * 10 + 1,
        rank * 10 + 2,
    ]
    # presence left out meant false to Go.
    argument = policy.spec.predicates[2].argument
    assert argument is not None and argument.labelsPresence is not None
    assert argument.labelsPresence.presence is False


def test_a_crowded_slot_widens_the_stride() -> None:
    data = {
        "predicates": [{"name": "HostName"}]
        + [
            {"name": f"L{i}", "argument": {"labelsPresence": {"labels": [f"l{i}"]}}}
            for i in range(12)
        ]
    }
    policy = convert(data).policy
    ordered = policy.ordered_predicates()
    assert ordered is not None
    assert [p.name for p in ordered] == ["HostName"] + [f"L{i}" for i in range(12)]
    assert policy.spec.predicates is not None
    assert policy.spec.predicates[0].order == names.legacy_rank("HostName") * 100


@pytest.mark.parametrize(
    ("predicates", "expected"),
    [
        pytest.param(
            [{"name": "NoDiskConflict", "order": 2}, {"name": "HostName", "order": 1}],
            [("HostName", 1), ("NoDiskConflict", 2)],
            id="every-entry-ordered-keeps-the-files-values",
        ),
        pytest.param(
            [
                {"name": "MatchInterPodAffinity"},
                {"name": "NoDiskConflict", "order": 5},
                {"name": "HostName"},
            ],
            # After the highest written value (5), in the fixed order: HostName (rank 3)
            # before MatchInterPodAffinity (rank 23), each at 10 + rank * 10.
            [
                ("NoDiskConflict", 5),
                ("HostName", 10 + 10 * names.legacy_rank("HostName")),
                ("MatchInterPodAffinity", 10 + 10 * names.legacy_rank("MatchInterPodAffinity")),
            ],
            id="unordered-entries-follow-in-the-fixed-order",
        ),
        pytest.param(
            [{"name": "HostName", "order": 0}, {"name": "NoDiskConflict"}],
            [("HostName", 0), ("NoDiskConflict", 10 + 10 * names.legacy_rank("NoDiskConflict"))],
            id="order-zero-is-a-written-value",
        ),
    ],
)
def test_written_order_values_are_kept(
    predicates: list[dict[str, Any]], expected: list[tuple[str, int]]
) -> None:
    ordered = convert({"predicates": predicates}).policy.ordered_predicates()
    assert ordered is not None
    assert [(entry.name, entry.order) for entry in ordered] == expected


def test_yaml_without_kind() -> None:
    data = load_legacy(YAML_WITHOUT_KIND)
    result = convert(data)
    assert result.warnings == (mandatory_note("CheckNodeUnschedulable"),)
    spec = policy_to_object(result.policy)["spec"]
    assert [p["name"] for p in spec["predicates"]] == [
        "PodFitsResources",
        "PodToleratesNodeTaints",
        "GeneralPredicates",
    ]
    assert spec["priorities"][1]["argument"]["requestedToCapacityRatioArguments"]["resources"] == [
        {"name": "cpu", "weight": 2},
        {"name": "memory"},
    ]
    assert spec["hardPodAffinitySymmetricWeight"] == 5
    assert spec["alwaysCheckAllPredicates"] is True
    ordered = result.policy.ordered_predicates()
    assert ordered is not None
    assert [p.name for p in ordered] == [
        "GeneralPredicates",
        "PodFitsResources",
        "PodToleratesNodeTaints",
    ]


@pytest.mark.parametrize(
    ("data", "predicates", "priorities"),
    [
        pytest.param({}, None, None, id="both-absent"),
        pytest.param({"predicates": [], "priorities": []}, [], [], id="both-empty"),
        pytest.param({"predicates": None, "priorities": []}, None, [], id="null-is-absent"),
        pytest.param(
            {"priorities": [{"name": "EqualPriority", "weight": 1}]},
            None,
            [{"name": "EqualPriority", "weight": 1}],
            id="predicates-absent-priorities-given",
        ),
    ],
)
def test_absent_stays_absent_empty_stays_empty(
    data: dict[str, Any], predicates: Any, priorities: Any
) -> None:
    spec = policy_to_object(convert(data).policy)["spec"]
    assert spec.get("predicates") == predicates
    assert spec.get("priorities") == priorities
    assert ("predicates" in spec) == (predicates is not None)
    assert ("priorities" in spec) == (priorities is not None)


def test_keys_match_case_insensitively_as_in_go() -> None:
    data = {
        "Kind": "Policy",
        "APIVersion": "v1",
        "Predicates": [{"Name": "HostName"}],
        "PRIORITIES": [{"NAME": "EqualPriority", "Weight": 2}],
        "Extenders": [{"URLPrefix": "http://x", "EnableHTTPS": True, "FilterVerb": "f"}],
        "HardPodAffinitySymmetricWeight": 7,
    }
    result = convert(data)
    assert result.warnings == (BOTH_MANDATORY,)
    spec = policy_to_object(result.policy)["spec"]
    assert spec["predicates"] == [{"name": "HostName", "order": 10 * names.legacy_rank("HostName")}]
    assert spec["priorities"] == [{"name": "EqualPriority", "weight": 2}]
    assert spec["extenders"] == [{"urlPrefix": "http://x", "enableHTTPS": True, "filterVerb": "f"}]
    assert spec["hardPodAffinitySymmetricWeight"] == 7


@pytest.mark.parametrize(
    ("data", "warning"),
    [
        pytest.param(
            {"predicates": [{"name": "HostName", "order": 2}]},
            "Policy: predicates[0].order: order values are kept: kube-scheduler itself ignored "
            "them and ran its fixed order",
            id="order-in-a-legacy-file",
        ),
        pytest.param(
            {"predicates": [{"name": "GeneralPredicates"}]},
            BOTH_MANDATORY,
            id="mandatory-predicates-not-listed",
        ),
        pytest.param(
            {"predicates": []},
            BOTH_MANDATORY,
            id="mandatory-predicates-even-for-an-empty-list",
        ),
        pytest.param(
            {"predicates": [{"name": "PodFitsHost"}]},
            'Policy: predicates[0].name: "PodFitsHost" is the seeds\' name of HostName '
            "(kube-scheduler registered only HostName); written as HostName",
            id="seed-name-pod-fits-host",
        ),
        pytest.param(
            {"predicates": [{"name": "PodSelectorMatches"}]},
            'Policy: predicates[0].name: "PodSelectorMatches" is the seeds\' name of '
            "MatchNodeSelector",
            id="seed-name-pod-selector-matches",
        ),
        pytest.param(
            {"priorities": [{"name": "BalanceResourceAllocation", "weight": 1}]},
            'Policy: priorities[0].name: "BalanceResourceAllocation" is the seeds\' name of '
            "BalancedResourceAllocation",
            id="seed-name-balance-resource-allocation",
        ),
        pytest.param(
            {"predicates": [{"name": "CheckNodeMemoryPressure"}]},
            "Policy: predicates[0].name: kube-scheduler v1.12+ with default feature gates "
            "refused CheckNodeMemoryPressure (TaintNodesByCondition took it out of its "
            "registry); it runs here as v1.13 ran it with that gate off",
            id="gate-off-predicate",
        ),
        pytest.param(
            {"predicates": [{"name": "CheckServiceAffinity"}]},
            "Policy: predicates[0].name: CheckServiceAffinity without an argument filters "
            "nothing, as in kube-scheduler v1.17+ (v1.13-v1.16 refused it bare)",
            id="bare-check-service-affinity",
        ),
        pytest.param(
            {"schedulerName": "x"},
            "Policy: schedulerName: unknown field, ignored as kube-scheduler ignored it",
            id="unknown-top-level-key",
        ),
        pytest.param(
            {"extenders": [{"urlPrefix": "http://x", "tlsConfig": {"verify": True}}]},
            "Policy: extenders[0].tlsConfig.verify: unknown field",
            id="unknown-nested-key",
        ),
        pytest.param(
            {
                "predicates": [
                    {"name": "HostName"},
                    {"name": "NoDiskConflict"},
                    {"name": "HostName"},
                ]
            },
            'Policy: predicates[0]: "HostName" is listed again at predicates[2]; kube-scheduler '
            "kept the later entry of a name, and so does convert",
            id="duplicate-predicate",
        ),
        pytest.param(
            {"predicates": [{"name": "PodFitsHostPorts"}, {"name": "PodFitsPorts"}]},
            'Policy: predicates[0]: "PodFitsHostPorts" is listed again at predicates[1] '
            '(as "PodFitsPorts")',
            id="duplicate-predicate-alias",
        ),
        pytest.param(
            {
                "priorities": [
                    {"name": "EqualPriority", "weight": 1},
                    {"name": "EqualPriority", "weight": 5},
                ]
            },
            'Policy: priorities[0]: "EqualPriority" is listed again at priorities[1]',
            id="duplicate-priority",
        ),
        pytest.param(
            {"hardPodAffinitySymmetricWeight": 0},
            "Policy: hardPodAffinitySymmetricWeight: 0 meant the default (1) to kube-scheduler",
            id="hard-affinity-weight-zero",
        ),
        pytest.param(
            {"extenders": [{"urlPrefix": "http://x", "urlprefix": "http://y"}]},
            "Policy: extenders[0].urlPrefix: given twice (as urlPrefix and urlprefix)",
            id="key-given-twice",
        ),
    ],
)
def test_warnings(data: dict[str, Any], warning: str) -> None:
    warnings = convert(data).warnings
    assert any(w.startswith(warning) for w in warnings), warnings


def test_duplicates_collapse_to_the_last_entry() -> None:
    data = {
        "predicates": [
            {"name": "PodFitsHostPorts"},
            {"name": "HostName"},
            {"name": "PodFitsPorts"},
        ],
        "priorities": [
            {"name": "EqualPriority", "weight": 1},
            {"name": "LeastRequestedPriority", "weight": 1},
            {"name": "EqualPriority", "weight": 5},
        ],
    }
    spec = convert(data).policy.spec
    assert spec.predicates is not None and spec.priorities is not None
    assert [p.name for p in spec.predicates] == ["HostName", "PodFitsPorts"]
    assert [(p.name, p.weight) for p in spec.priorities] == [
        ("LeastRequestedPriority", 1),
        ("EqualPriority", 5),
    ]


def test_zero_meaning_default_is_left_unset() -> None:
    data = {
        "hardPodAffinitySymmetricWeight": 0,
        "priorities": [
            {
                "name": "Ratio",
                "weight": 1,
                "argument": {
                    "requestedToCapacityRatioArguments": {
                        "shape": [{"utilization": 0, "score": 0}],
                        "resources": [{"name": "cpu", "weight": 0}],
                    }
                },
            }
        ],
    }
    result = convert(data)
    spec = policy_to_object(result.policy)["spec"]
    assert "hardPodAffinitySymmetricWeight" not in spec
    assert result.policy.spec.hardPodAffinitySymmetricWeight == 1
    rtc = spec["priorities"][0]["argument"]["requestedToCapacityRatioArguments"]
    assert rtc["resources"] == [{"name": "cpu"}]
    assert any(
        "priorities[0].argument.requestedToCapacityRatioArguments.resources[0].weight: 0 meant 1"
        in w
        for w in result.warnings
    )


# -- refused ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param(
            {
                "priorities": [
                    {"name": "EqualPriority", "weight": 1},
                    {"name": "LeastRequestedPriority", "weight": 0},
                ]
            },
            "Policy: priorities[1].weight: must be a positive integer, got 0",
            id="weight-zero",
        ),
        pytest.param(
            {"priorities": [{"name": "EqualPriority", "weight": -1}]},
            "Policy: priorities[0].weight: must be a positive integer, got -1",
            id="weight-negative",
        ),
        pytest.param(
            {"priorities": [{"name": "EqualPriority"}]},
            "Policy: priorities[0].weight: is required",
            id="weight-missing",
        ),
        pytest.param(
            {"priorities": [{"name": "EqualPriority", "weight": names.MAX_WEIGHT}]},
            f"Policy: priorities[0].weight: must be at most {names.MAX_WEIGHT - 1}",
            id="weight-overflow",
        ),
        pytest.param(
            {"hardPodAffinitySymmetricWeight": 101},
            "Policy: hardPodAffinitySymmetricWeight: must be at most 100, got 101",
            id="hard-affinity-weight-high",
        ),
        pytest.param(
            {"hardPodAffinitySymmetricWeight": -1},
            "Policy: hardPodAffinitySymmetricWeight: must be at least 0, got -1",
            id="hard-affinity-weight-negative",
        ),
        pytest.param(
            {"extenders": [{"urlPrefix": "http://x", "filterVerb": "f", "httpTimeout": "30s"}]},
            "Policy: extenders[0].httpTimeout: must be integer nanoseconds in a legacy Policy "
            '(Go\'s time.Duration), got "30s"',
            id="duration-string-in-a-legacy-extender",
        ),
        pytest.param(
            {"predicates": [{"name": "HostName"}, {"name": "PodFitsNodeSelector"}]},
            'Policy: predicates[1].name: unknown predicate "PodFitsNodeSelector"',
            id="unknown-predicate",
        ),
        pytest.param(
            {"predicates": [{"name": "CheckNodeUnschedulablePredicate"}]},
            'Policy: predicates[0].name: unknown predicate "CheckNodeUnschedulablePredicate"',
            id="a-function-name-that-is-not-the-seeds",
        ),
        pytest.param(
            {"predicates": [{"name": "MaxPDVolumeCountPredicate"}]},
            'Policy: predicates[0].name: unknown predicate "MaxPDVolumeCountPredicate" (the '
            "seeds' name of the function behind MaxEBSVolumeCount, MaxGCEPDVolumeCount and "
            "MaxAzureDiskVolumeCount: name those you want)",
            id="ambiguous-seed-name",
        ),
        pytest.param(
            {"priorities": [{"name": "CalculateNodeLabelPriority", "weight": 1}]},
            "Policy: priorities[0].argument: CalculateNodeLabelPriority is the seeds' name of "
            "the labelPreference custom priority: it needs a labelPreference argument",
            id="seed-priority-name-without-its-argument",
        ),
        pytest.param(
            {
                "predicates": [
                    {
                        "name": "zone_required",
                        "argument": {"labelsPresence": {"labels": ["zone"], "presence": True}},
                    }
                ]
            },
            'Policy: predicates[0].name: "zone_required" is not a valid custom name',
            id="custom-predicate-name-breaks-the-name-rule",
        ),
        pytest.param(
            {
                "priorities": [
                    {
                        "name": "prefer.ssd",
                        "weight": 1,
                        "argument": {"labelPreference": {"label": "ssd", "presence": True}},
                    }
                ]
            },
            'Policy: priorities[0].name: "prefer.ssd" is not a valid custom name',
            id="custom-priority-name-breaks-the-name-rule",
        ),
        pytest.param(
            {
                "predicates": [
                    {"name": "HostName", "order": 1},
                    {"name": "NoDiskConflict", "order": 1},
                ]
            },
            "Policy: predicates[1].order: 1 is also the order of predicates[0]",
            id="order-values-clash",
        ),
        pytest.param(
            {"priorities": [{"name": "RackSpread", "weight": 1}]},
            'Policy: priorities[0].name: unknown priority "RackSpread"',
            id="unknown-priority",
        ),
        pytest.param(
            {
                "predicates": [
                    {
                        "name": "X",
                        "argument": {
                            "labelsPresence": {"labels": ["a"]},
                            "serviceAffinity": {"labels": ["b"]},
                        },
                    }
                ]
            },
            "Policy: predicates[0].argument: must set exactly one of labelsPresence, "
            "serviceAffinity, got labelsPresence and serviceAffinity",
            id="two-predicate-arguments",
        ),
        pytest.param(
            {
                "priorities": [
                    {
                        "name": "X",
                        "weight": 1,
                        "argument": {
                            "labelPreference": {"label": "a"},
                            "serviceAntiAffinity": {"label": "b"},
                        },
                    }
                ]
            },
            "Policy: priorities[0].argument: must set exactly one of",
            id="two-priority-arguments",
        ),
        pytest.param(
            {
                "extenders": [
                    {"urlPrefix": "http://a", "bindVerb": "bind"},
                    {"urlPrefix": "http://b"},
                    {"urlPrefix": "http://c", "bindVerb": "bind"},
                ]
            },
            "Policy: extenders: only one extender can implement bind, found 2: extenders[0] and "
            "extenders[2]",
            id="two-binders",
        ),
        pytest.param(
            {"extenders": [{"urlPrefix": "http://a", "prioritizeVerb": "prioritize", "weight": 0}]},
            "Policy: extenders[0].weight: must be a positive integer when prioritizeVerb is set, "
            "got 0",
            id="prioritize-without-weight",
        ),
        pytest.param(
            {"extenders": [{"urlPrefix": "http://a", "managedResources": [{"name": "foo"}]}]},
            "Policy: extenders[0].managedResources[0].name: must be an extended resource name",
            id="managed-resource-name",
        ),
        pytest.param(
            {
                "extenders": [
                    {"urlPrefix": "http://a", "managedResources": [{"name": "example.com/foo"}]},
                    {"urlPrefix": "http://b", "managedResources": [{"name": "example.com/foo"}]},
                ]
            },
            'Policy: extenders[1].managedResources[0].name: "example.com/foo" is already managed '
            "at extenders[0].managedResources[0].name",
            id="managed-resource-duplicate",
        ),
        pytest.param(
            {"extenders": [{"urlPrefix": "http://a", "enableHttps": "yes"}]},
            'Policy: extenders[0].enableHttps: must be true or false, got "yes"',
            id="legacy-spelling-in-error-path",
        ),
        pytest.param(
            {
                "priorities": [
                    {
                        "name": "R",
                        "weight": 1,
                        "argument": {
                            "requestedToCapacityRatioArguments": {
                                "shape": [
                                    {"utilization": 50, "score": 5},
                                    {"utilization": 20, "score": 2},
                                ]
                            }
                        },
                    }
                ]
            },
            "Policy: priorities[0].argument.requestedToCapacityRatioArguments.shape[1]"
            ".utilization: must be greater than the previous point's utilization (50), got 20",
            id="shape-not-increasing",
        ),
        pytest.param(
            {"predicates": {"name": "HostName"}},
            'Policy: predicates: must be a list, got {"name": "HostName"}',
            id="predicates-not-a-list",
        ),
        pytest.param(
            ["not", "an", "object"],
            "Policy: must be an object, got list",
            id="not-an-object",
        ),
        pytest.param(
            {"kind": "SchedulingPolicy"},
            'Policy: kind: must be Policy (or absent), got "SchedulingPolicy" '
            "(already a SchedulingPolicy: nothing to convert)",
            id="wrong-kind",
        ),
        pytest.param(
            {"kind": "Policy", "apiVersion": "kubescheduler.config.k8s.io/v1alpha1"},
            "Policy: apiVersion: must be v1 or kubescheduler.config.k8s.io/v1 (or absent), "
            'got "kubescheduler.config.k8s.io/v1alpha1"',
            id="wrong-api-version",
        ),
    ],
)
def test_refused(data: Any, expected: str) -> None:
    errors = legacy_errors(data)
    assert any(error.startswith(expected) for error in errors), errors


def test_error_paths_are_file_indexes_after_collapsing_duplicates() -> None:
    data = {
        "priorities": [
            {"name": "EqualPriority", "weight": 1},
            {"name": "EqualPriority", "weight": 2},
            {"name": "LeastRequestedPriority", "weight": 0},
        ]
    }
    assert legacy_errors(data) == [
        "Policy: priorities[2].weight: must be a positive integer, got 0"
    ]


def test_every_refusal_is_reported() -> None:
    data = {
        "predicates": [{"name": "Nope"}],
        "priorities": [{"name": "EqualPriority", "weight": 0}],
        "hardPodAffinitySymmetricWeight": 200,
        "extenders": [
            {"urlPrefix": "http://a", "bindVerb": "b"},
            {"urlPrefix": "http://b", "bindVerb": "b"},
        ],
    }
    assert [error.split(": ")[1] for error in legacy_errors(data)] == [
        "predicates[0].name",
        "priorities[0].weight",
        "hardPodAffinitySymmetricWeight",
        "extenders",
    ]


def test_the_converted_name_must_be_an_object_name() -> None:
    with pytest.raises(PolicyError, match=r"name of the converted policy: must be a lowercase"):
        convert_legacy({}, name="Not Valid")


def test_a_bad_scheduler_name_is_refused() -> None:
    with pytest.raises(PolicyError, match=r"^Policy: schedulerName: must be a lowercase RFC 1123"):
        convert_legacy({}, scheduler_name="Bad_Name")


# -- load_legacy --------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        pytest.param('{"kind": "Policy", "apiVersion": "v1", "predicates": []}', id="json"),
        pytest.param("kind: Policy\napiVersion: v1\npredicates: []\n", id="yaml"),
        pytest.param("predicates: []\n", id="yaml-without-kind"),
        pytest.param('\ufeff{"predicates": []}', id="json-with-bom"),
        pytest.param(
            '{"kind": "Policy", "apiVersion": "kubescheduler.config.k8s.io/v1", "predicates": []}',
            id="group-versioned-v1.19-v1.22",
        ),
        pytest.param('{\n\t"predicates": [\n\t]\n}', id="tab-indented-json"),
    ],
)
def test_load_legacy_accepts(text: str) -> None:
    assert load_legacy(text)["predicates"] == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "kind: SchedulingPolicy\napiVersion: policyscheduler.io/v1alpha1\n",
            'Policy: kind: must be Policy (or absent), got "SchedulingPolicy"',
            id="schedulingpolicy",
        ),
        pytest.param(
            "kind: Policy\napiVersion: v2\n",
            "Policy: apiVersion: must be v1 or kubescheduler.config.k8s.io/v1 (or absent), "
            'got "v2"',
            id="wrong-api-version",
        ),
        pytest.param("- a\n- b\n", "Policy: must be a JSON or YAML object, got list", id="list"),
        pytest.param("", "Policy: must be a JSON or YAML object, got NoneType", id="empty"),
        pytest.param("predicates: [\n", "Policy: not valid JSON or YAML", id="broken"),
        pytest.param(
            '{"predicates": [{"name": "HostName"},]}',
            "Policy: not valid JSON or YAML: line 1, column 38: Expecting value",
            id="json-with-a-trailing-comma-yaml-would-forgive",
        ),
    ],
)
def test_load_legacy_refuses(text: str, expected: str) -> None:
    with pytest.raises(PolicyError) as info:
        load_legacy(text)
    assert info.value.errors[0].startswith(expected), info.value.errors


# -- an extender's urlPrefix that is no usable URL ----------------------------------------------

#: upstream's compatibility fixtures (pkg/scheduler/apis/config/... "urlPrefix": "/prefix")
#: and READMEs' placeholders: the legacy scheduler kept them and failed at the first call.
UNUSABLE_URLS = [
    pytest.param("/prefix", id="upstream-fixture"),
    pytest.param("<your-extender-url>", id="placeholder"),
]


def _with_extender(url: str) -> dict[str, Any]:
    return {
        "kind": "Policy",
        "apiVersion": "v1",
        "extenders": [{"urlPrefix": url, "filterVerb": "filter", "weight": 1}],
    }


@pytest.mark.parametrize("url", UNUSABLE_URLS)
def test_convert_keeps_an_unusable_url_prefix_and_warns(url: str) -> None:
    result = convert_legacy(_with_extender(url), keep_url_prefixes=True)
    assert policy_to_object(result.policy)["spec"]["extenders"][0]["urlPrefix"] == url
    assert result.warnings == (
        f"Policy: extenders[0].urlPrefix: must be an http:// or https:// URL with a host, got "
        f'"{url}"; kept as written: `validate` and the operator refuse the policy until it is '
        "the extender's URL",
    )


@pytest.mark.parametrize("url", UNUSABLE_URLS)
def test_what_would_call_an_unusable_url_prefix_refuses_it(url: str) -> None:
    # validate and simulate read the legacy file strictly...
    with pytest.raises(PolicyError) as caught:
        convert_legacy(_with_extender(url))
    assert str(caught.value).startswith(
        "Policy: extenders[0].urlPrefix: must be an http:// or https:// URL with a host"
    )
    # ...and the operator refuses the converted SchedulingPolicy, naming the field.
    converted = policy_to_object(convert_legacy(_with_extender(url), keep_url_prefixes=True).policy)
    with pytest.raises(PolicyError) as caught:
        parse_policy(converted)
    assert str(caught.value).startswith(
        'SchedulingPolicy "default": spec.extenders[0].urlPrefix: must be an http:// or '
        "https:// URL with a host"
    )


def test_convert_cli_writes_the_policy_and_the_warning(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from policy_scheduler.cli import main

    path = tmp_path / "policy.json"
    path.write_text(json.dumps(_with_extender("/prefix")))
    assert main(["convert", str(path), "-o", "json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["spec"]["extenders"][0]["urlPrefix"] == "/prefix"
    assert "warning: Policy: extenders[0].urlPrefix: must be an http:// or https:// URL" in err
    assert main(["validate", str(path)]) == 1
    assert "Policy: extenders[0].urlPrefix: must be" in capsys.readouterr().err
