"""SchedulingPolicy parsing: defaults, the ordering rule, round trips and every refusal."""

from __future__ import annotations

import copy
from types import MappingProxyType
from typing import Any

import pytest

from policy_scheduler import names
from policy_scheduler.engine.compiler import compile_policy
from policy_scheduler.policy import (
    API_VERSION,
    KIND,
    PolicyError,
    PredicateEntry,
    SchedulingPolicySpec,
    default_policy,
    parse_policy,
    parse_spec,
    policy_to_object,
)


def policy_object(spec: Any, name: str = "gpu") -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": name}, "spec": spec}


FULL: dict[str, Any] = policy_object(
    {
        "schedulerName": "gpu-scheduler",
        "predicates": [
            {"name": "PodFitsResources", "order": 1},
            {
                "name": "ZoneLabelRequired",
                "argument": {
                    "labelsPresence": {"labels": ["topology.kubernetes.io/zone"], "presence": True}
                },
            },
            {"name": "RegionAffinity", "argument": {"serviceAffinity": {"labels": ["region"]}}},
            {
                "name": "CheckNodeLabelPresence",
                "order": 0,
                "argument": {"labelsPresence": {"labels": ["retiring"], "presence": False}},
            },
        ],
        "priorities": [
            {"name": "LeastRequestedPriority", "weight": 1},
            {
                "name": "PreferSSD",
                "weight": 2,
                "argument": {"labelPreference": {"label": "disk-ssd", "presence": True}},
            },
            {
                "name": "RackSpread",
                "weight": 3,
                "argument": {"serviceAntiAffinity": {"label": "rack"}},
            },
            {
                "name": "RequestedToCapacityRatioPriority",
                "weight": 4,
                "argument": {
                    "requestedToCapacityRatioArguments": {
                        "shape": [
                            {"utilization": 0, "score": 10},
                            {"utilization": 100, "score": 0},
                        ],
                        "resources": [{"name": "cpu", "weight": 2}, {"name": "example.com/gpu"}],
                    }
                },
            },
        ],
        "hardPodAffinitySymmetricWeight": 10,
        "alwaysCheckAllPredicates": True,
        "percentageOfNodesToScore": 50,
        "disablePreemption": True,
        "extenders": [
            {
                "urlPrefix": "http://gpu-extender.kube-system:8888/scheduler",
                "filterVerb": "filter",
                "prioritizeVerb": "prioritize",
                "weight": 1,
                "bindVerb": "",
                "enableHTTPS": True,
                "tlsConfig": {"insecure": False, "serverName": "ext", "caData": "Y2E="},
                "httpTimeout": "30s",
                "nodeCacheCapable": True,
                "managedResources": [{"name": "example.com/gpu", "ignoredByScheduler": True}],
                "ignorable": True,
            }
        ],
    }
)


def errors_of(obj: dict[str, Any]) -> list[str]:
    with pytest.raises(PolicyError) as info:
        parse_policy(obj)
    return info.value.errors


# -- accepted -----------------------------------------------------------------------


def test_full_example_round_trips() -> None:
    assert policy_to_object(parse_policy(FULL)) == FULL


def test_full_example_values() -> None:
    policy = parse_policy(FULL)
    assert policy.name == "gpu"
    spec = policy.spec
    assert spec.schedulerName == "gpu-scheduler"
    assert spec.predicates is not None and spec.predicates[1].argument is not None
    assert spec.predicates[1].argument.kind == "labelsPresence"
    assert spec.priorities is not None and spec.priorities[2].argument is not None
    assert spec.priorities[2].argument.kind == "serviceAntiAffinity"
    assert spec.extenders[0].http_timeout_seconds == 30.0
    rtc = spec.priorities[3].argument
    assert rtc is not None and rtc.requestedToCapacityRatioArguments is not None
    assert [r.weight for r in rtc.requestedToCapacityRatioArguments.resources or []] == [2, 1]


def test_empty_spec_means_every_default() -> None:
    spec = parse_policy(policy_object({})).spec
    assert spec == SchedulingPolicySpec()
    assert spec.schedulerName == names.DEFAULT_SCHEDULER_NAME
    assert spec.predicates is None and spec.priorities is None
    assert spec.hardPodAffinitySymmetricWeight == 1
    assert spec.alwaysCheckAllPredicates is False
    assert spec.percentageOfNodesToScore == 0
    assert spec.disablePreemption is False
    assert spec.mode == "Active" and spec.shadow is None
    assert spec.extenders == []


def test_a_shadow_policy_fills_its_sampling_defaults() -> None:
    spec = parse_policy(policy_object({"mode": "Shadow"})).spec
    assert spec.mode == "Shadow"
    compiled = compile_policy(parse_policy(policy_object({"mode": "Shadow"})))
    assert compiled.shadow is not None
    assert (compiled.shadow.percentageOfPods, compiled.shadow.maxDecisionsPerSecond) == (100, 20)
    # Ignored while Active: promoting is a change of mode alone.
    active = {"mode": "Active", "shadow": {"percentageOfPods": 5}}
    assert compile_policy(parse_policy(policy_object(active))).shadow is None


def test_missing_spec_is_an_empty_spec() -> None:
    obj = policy_object({})
    del obj["spec"]
    assert parse_policy(obj).spec == SchedulingPolicySpec()


def test_status_is_ignored() -> None:
    obj = copy.deepcopy(FULL)
    obj["status"] = {"observedGeneration": 3, "conditions": [{"type": "Accepted"}]}
    assert policy_to_object(parse_policy(obj)) == FULL


def test_default_policy_is_the_legacy_default_provider() -> None:
    policy = default_policy()
    assert policy.name == "default"
    assert policy.spec.predicates is None and policy.spec.priorities is None
    assert policy.ordered_predicates() is None
    assert policy_to_object(policy)["spec"] == {}


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param({"predicates": []}, id="no-predicates"),
        pytest.param({"priorities": []}, id="no-priorities"),
        pytest.param({"predicates": [], "priorities": []}, id="both-empty"),
        pytest.param({"schedulerName": "other"}, id="absent-lists-stay-absent"),
    ],
)
def test_absent_stays_absent_and_empty_stays_empty(spec: dict[str, Any]) -> None:
    obj = policy_object(spec)
    assert policy_to_object(parse_policy(obj)) == obj


@pytest.mark.parametrize(
    ("entry", "canonical"),
    [
        pytest.param(
            {"name": "CheckServiceAffinity"}, "CheckServiceAffinity", id="bare-service-affinity"
        ),
        pytest.param(
            {"name": "CheckNodeLabelPresence"}, "CheckNodeLabelPresence", id="bare-label-presence"
        ),
        pytest.param({"name": "PodFitsHost"}, "HostName", id="seed-pod-fits-host"),
        pytest.param({"name": "PodSelectorMatches"}, "MatchNodeSelector", id="seed-selector"),
        pytest.param(
            {"name": "InterPodAffinityMatches"}, "MatchInterPodAffinity", id="seed-affinity"
        ),
        pytest.param(
            {
                "name": "Zone-Required-2",
                "argument": {"labelsPresence": {"labels": ["zone"], "presence": True}},
            },
            "Zone-Required-2",
            id="custom-name-within-the-rule",
        ),
    ],
)
def test_accepted_predicate_names(entry: dict[str, Any], canonical: str) -> None:
    spec = parse_policy(policy_object({"predicates": [entry]})).spec
    assert spec.predicates is not None
    assert names.canonical_predicate(spec.predicates[0].name) == canonical


def test_seed_names_get_a_note_from_validate() -> None:
    from policy_scheduler.policy import seed_name_notes

    spec = parse_policy(
        policy_object(
            {
                "predicates": [{"name": "PodFitsHost"}, {"name": "NoDiskConflict"}],
                "priorities": [{"name": "BalanceResourceAllocation", "weight": 1}],
            }
        )
    ).spec
    assert [note.render() for note in seed_name_notes(spec)] == [
        "spec.predicates[0].name: PodFitsHost is the seeds' name of HostName, accepted as it "
        "(kube-scheduler registered only HostName)",
        "spec.priorities[0].name: BalanceResourceAllocation is the seeds' name of "
        "BalancedResourceAllocation, accepted as it (kube-scheduler registered only "
        "BalancedResourceAllocation)",
    ]


def test_kopf_like_mapping_bodies_are_accepted() -> None:
    body = MappingProxyType(
        {
            **FULL,
            "spec": MappingProxyType({"predicates": (MappingProxyType({"name": "HostName"}),)}),
        }
    )
    assert parse_policy(body).spec.predicates == [PredicateEntry(name="HostName")]


def test_parse_spec_takes_name_and_spec() -> None:
    assert parse_spec({"priorities": []}, name="x").spec.priorities == []
    with pytest.raises(
        PolicyError, match=r'^SchedulingPolicy "x": spec\.priorities: must be a list'
    ):
        parse_spec({"priorities": {}}, name="x")


def test_aliases_and_weight_bounds_accepted() -> None:
    spec = {
        "predicates": [{"name": "PodFitsPorts"}, {"name": "MaxCinderVolumeCount"}],
        "priorities": [{"name": "EqualPriority", "weight": names.MAX_WEIGHT - 1}],
    }
    assert parse_policy(policy_object(spec)).spec.priorities is not None


@pytest.mark.parametrize(
    ("fields", "https"),
    [
        pytest.param({}, False, id="neither"),
        pytest.param({"enableHTTPS": True}, True, id="enableHTTPS"),
        pytest.param({"enableHttps": True}, True, id="legacy-enableHttps"),
        pytest.param({"enableHttps": False}, False, id="legacy-enableHttps-false"),
        pytest.param({"enableHTTPS": True, "enableHttps": True}, True, id="both-agree"),
    ],
)
def test_extender_https_in_either_spelling(fields: dict[str, Any], https: bool) -> None:
    # DESIGN: enableHTTPS/enableHttps; the legacy Policy's JSON tag was enableHttps.
    spec = {"extenders": [{"urlPrefix": "http://x", "filterVerb": "filter", **fields}]}
    [extender] = compile_policy(parse_policy(policy_object(spec))).extenders
    assert extender.enable_https is https


@pytest.mark.parametrize(
    ("timeout", "seconds"),
    [
        pytest.param(None, 5.0, id="absent-is-5s"),
        pytest.param(0, 5.0, id="zero-is-5s"),
        pytest.param(30_000_000_000, 30.0, id="nanoseconds"),
        pytest.param("1m30s", 90.0, id="go-duration"),
        pytest.param("250ms", 0.25, id="milliseconds"),
    ],
)
def test_extender_timeout(timeout: Any, seconds: float) -> None:
    extender: dict[str, Any] = {"urlPrefix": "http://x"}
    if timeout is not None:
        extender["httpTimeout"] = timeout
    spec = parse_policy(policy_object({"extenders": [extender]})).spec
    assert spec.extenders[0].http_timeout_seconds == pytest.approx(seconds)


# -- the ordering rule --------------------------------------------------------------


@pytest.mark.parametrize(
    ("entries", "expected"),
    [
        pytest.param([], [], id="empty"),
        pytest.param(
            [{"name": "HostName"}, {"name": "NoDiskConflict"}],
            ["HostName", "NoDiskConflict"],
            id="unordered-keep-list-order",
        ),
        pytest.param(
            [{"name": "HostName", "order": 5}, {"name": "NoDiskConflict", "order": 2}],
            ["NoDiskConflict", "HostName"],
            id="ordered-ascending",
        ),
        pytest.param(
            [
                {"name": "HostName"},
                {"name": "NoDiskConflict", "order": 9},
                {"name": "PodFitsResources"},
                {"name": "MatchNodeSelector", "order": 0},
            ],
            ["MatchNodeSelector", "NoDiskConflict", "HostName", "PodFitsResources"],
            id="ordered-first-then-unordered-in-list-order",
        ),
    ],
)
def test_ordered_predicates(entries: list[dict[str, Any]], expected: list[str]) -> None:
    policy = parse_policy(policy_object({"predicates": entries}))
    ordered = policy.ordered_predicates()
    assert ordered is not None
    assert [entry.name for entry in ordered] == expected


# -- refused ------------------------------------------------------------------------

LP = {"labelsPresence": {"labels": ["a"], "presence": True}}
SA = {"serviceAffinity": {"labels": ["a"]}}


@pytest.mark.parametrize(
    ("spec", "path", "message"),
    [
        pytest.param(
            {"priorities": [{"name": "EqualPriority", "weight": 0}]},
            "spec.priorities[0].weight",
            "must be a positive integer, got 0",
            id="weight-zero",
        ),
        pytest.param(
            {"priorities": [{"name": "EqualPriority", "weight": -3}]},
            "spec.priorities[0].weight",
            "must be a positive integer, got -3",
            id="weight-negative",
        ),
        pytest.param(
            {"priorities": [{"name": "EqualPriority"}]},
            "spec.priorities[0].weight",
            "is required",
            id="weight-missing",
        ),
        pytest.param(
            {"priorities": [{"name": "EqualPriority", "weight": names.MAX_WEIGHT}]},
            "spec.priorities[0].weight",
            f"must be at most {names.MAX_WEIGHT - 1}",
            id="weight-overflow",
        ),
        pytest.param(
            {"priorities": [{"name": "EqualPriority", "weight": "2"}]},
            "spec.priorities[0].weight",
            'must be an integer, got "2"',
            id="weight-string",
        ),
        pytest.param(
            {"priorities": [{"name": "EqualPriority", "weight": 1.5}]},
            "spec.priorities[0].weight",
            "must be an integer, got 1.5",
            id="weight-float",
        ),
        pytest.param(
            {"hardPodAffinitySymmetricWeight": 101},
            "spec.hardPodAffinitySymmetricWeight",
            "must be at most 100, got 101",
            id="hard-affinity-weight-high",
        ),
        pytest.param(
            {"hardPodAffinitySymmetricWeight": -1},
            "spec.hardPodAffinitySymmetricWeight",
            "must be at least 0, got -1",
            id="hard-affinity-weight-low",
        ),
        pytest.param(
            {"percentageOfNodesToScore": 150},
            "spec.percentageOfNodesToScore",
            "must be at most 100, got 150",
            id="percentage-high",
        ),
        pytest.param(
            {"alwaysCheckAllPredicates": "yes"},
            "spec.alwaysCheckAllPredicates",
            'must be true or false, got "yes"',
            id="bool-string",
        ),
        pytest.param(
            {"disablePreemption": 1},
            "spec.disablePreemption",
            "must be true or false, got 1",
            id="disable-preemption-not-a-bool",
        ),
        pytest.param(
            {"schedulerName": "Not_A_Name"},
            "spec.schedulerName",
            "must be a lowercase RFC 1123 subdomain",
            id="scheduler-name",
        ),
        pytest.param(
            {"predicates": [{"name": "NoSuchPredicate"}]},
            "spec.predicates[0].name",
            'unknown predicate "NoSuchPredicate"',
            id="unknown-predicate-without-argument",
        ),
        pytest.param(
            {"predicates": [{"name": "PodFitsResource"}]},
            "spec.predicates[0].name",
            "did you mean PodFitsResources?",
            id="predicate-typo-suggestion",
        ),
        pytest.param(
            {"predicates": [{"name": ""}]},
            "spec.predicates[0].name",
            "must not be empty",
            id="predicate-name-empty",
        ),
        pytest.param(
            {"predicates": [{"order": 1}]},
            "spec.predicates[0].name",
            "is required",
            id="predicate-name-missing",
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
            "spec.predicates[0].name",
            "\"zone_required\" is not a valid custom name: letters, digits and '-', starting "
            "and ending with a letter or digit",
            id="custom-predicate-name-with-underscore",
        ),
        pytest.param(
            {"predicates": [{"name": "x", "argument": {"serviceAffinity": {"labels": ["zone"]}}}]},
            "spec.predicates[0].name",
            '"x" is not a valid custom name',
            id="custom-name-of-one-character",
        ),
        pytest.param(
            {
                "priorities": [
                    {
                        "name": "-prefer-ssd",
                        "weight": 1,
                        "argument": {"labelPreference": {"label": "ssd", "presence": True}},
                    }
                ]
            },
            "spec.priorities[0].name",
            '"-prefer-ssd" is not a valid custom name',
            id="custom-priority-name-starting-with-a-dash",
        ),
        pytest.param(
            {"priorities": [{"name": "CalculateAntiAffinityPriority", "weight": 1}]},
            "spec.priorities[0].argument",
            "CalculateAntiAffinityPriority is the seeds' name of the serviceAntiAffinity custom "
            "priority: it needs a serviceAntiAffinity argument",
            id="seed-priority-name-bare",
        ),
        pytest.param(
            {"predicates": [{"name": "CheckServiceAffinity", "argument": LP}]},
            "spec.predicates[0].argument",
            "CheckServiceAffinity takes a serviceAffinity argument, got labelsPresence",
            id="builtin-with-the-wrong-argument",
        ),
        pytest.param(
            {"predicates": [{"name": "PodFitsResources", "argument": LP}]},
            "spec.predicates[0].argument",
            "the built-in predicate PodFitsResources takes no argument",
            id="builtin-predicate-with-argument",
        ),
        pytest.param(
            {"predicates": [{"name": "Zone", "argument": {**LP, **SA}}]},
            "spec.predicates[0].argument",
            "must set exactly one of labelsPresence, serviceAffinity, "
            "got labelsPresence and serviceAffinity",
            id="two-predicate-arguments",
        ),
        pytest.param(
            {"predicates": [{"name": "Zone", "argument": {}}]},
            "spec.predicates[0].argument",
            "must set exactly one of labelsPresence, serviceAffinity, got none",
            id="empty-predicate-argument",
        ),
        pytest.param(
            {
                "predicates": [
                    {
                        "name": "Zone",
                        "argument": {"labelsPresence": {"labels": [], "presence": True}},
                    }
                ]
            },
            "spec.predicates[0].argument.labelsPresence.labels",
            "must not be empty",
            id="labels-presence-no-labels",
        ),
        pytest.param(
            {"predicates": [{"name": "Zone", "argument": {"labelsPresence": {"labels": ["a"]}}}]},
            "spec.predicates[0].argument.labelsPresence.presence",
            "is required",
            id="labels-presence-no-presence",
        ),
        pytest.param(
            {"predicates": [{"name": "HostName", "order": -1}]},
            "spec.predicates[0].order",
            "must be at least 0, got -1",
            id="order-negative",
        ),
        pytest.param(
            {
                "predicates": [
                    {"name": "HostName", "order": 3},
                    {"name": "NoDiskConflict", "order": 3},
                ]
            },
            "spec.predicates[1].order",
            "3 is also the order of spec.predicates[0]",
            id="order-clash",
        ),
        pytest.param(
            {"predicates": [{"name": "HostName"}, {"name": "HostName"}]},
            "spec.predicates[1].name",
            '"HostName" is already listed at spec.predicates[0]',
            id="duplicate-predicate",
        ),
        pytest.param(
            {"predicates": [{"name": "PodFitsHostPorts"}, {"name": "PodFitsPorts"}]},
            "spec.predicates[1].name",
            '"PodFitsPorts" (PodFitsHostPorts) is already listed at spec.predicates[0]',
            id="duplicate-predicate-through-alias",
        ),
        pytest.param(
            {
                "priorities": [
                    {"name": "EqualPriority", "weight": 1},
                    {"name": "EqualPriority", "weight": 2},
                ]
            },
            "spec.priorities[1].name",
            '"EqualPriority" is already listed at spec.priorities[0]',
            id="duplicate-priority",
        ),
        pytest.param(
            {"priorities": [{"name": "PreferSSD", "weight": 1}]},
            "spec.priorities[0].name",
            'unknown priority "PreferSSD"',
            id="unknown-priority-without-argument",
        ),
        pytest.param(
            {
                "priorities": [
                    {
                        "name": "EqualPriority",
                        "weight": 1,
                        "argument": {"labelPreference": {"label": "a", "presence": True}},
                    }
                ]
            },
            "spec.priorities[0].argument",
            "the built-in priority EqualPriority takes no argument",
            id="builtin-priority-with-argument",
        ),
        pytest.param(
            {
                "priorities": [
                    {
                        "name": "RequestedToCapacityRatioPriority",
                        "weight": 1,
                        "argument": {"serviceAntiAffinity": {"label": "rack"}},
                    }
                ]
            },
            "spec.priorities[0].argument",
            "takes a requestedToCapacityRatioArguments argument, got serviceAntiAffinity",
            id="rtc-with-the-wrong-argument",
        ),
        pytest.param(
            {
                "priorities": [
                    {
                        "name": "P",
                        "weight": 1,
                        "argument": {
                            "labelPreference": {"label": "a", "presence": True},
                            "serviceAntiAffinity": {"label": "rack"},
                        },
                    }
                ]
            },
            "spec.priorities[0].argument",
            "got labelPreference and serviceAntiAffinity",
            id="two-priority-arguments",
        ),
        pytest.param(
            {"priorities": [{"name": "P", "weight": 1, "argument": {}}]},
            "spec.priorities[0].argument",
            "got none",
            id="empty-priority-argument",
        ),
        pytest.param(
            {
                "priorities": [
                    {
                        "name": "P",
                        "weight": 1,
                        "argument": {"requestedToCapacityRatioArguments": {"shape": []}},
                    }
                ]
            },
            "spec.priorities[0].argument.requestedToCapacityRatioArguments.shape",
            "must not be empty",
            id="shape-empty",
        ),
        pytest.param(
            {
                "priorities": [
                    {
                        "name": "P",
                        "weight": 1,
                        "argument": {
                            "requestedToCapacityRatioArguments": {
                                "shape": [
                                    {"utilization": 50, "score": 1},
                                    {"utilization": 50, "score": 2},
                                ]
                            }
                        },
                    }
                ]
            },
            "spec.priorities[0].argument.requestedToCapacityRatioArguments.shape[1].utilization",
            "must be greater than the previous point's utilization (50), got 50",
            id="shape-not-increasing",
        ),
        pytest.param(
            {
                "priorities": [
                    {
                        "name": "P",
                        "weight": 1,
                        "argument": {
                            "requestedToCapacityRatioArguments": {
                                "shape": [{"utilization": 101, "score": 1}]
                            }
                        },
                    }
                ]
            },
            "spec.priorities[0].argument.requestedToCapacityRatioArguments.shape[0].utilization",
            "must be at most 100, got 101",
            id="shape-utilization-range",
        ),
        pytest.param(
            {
                "priorities": [
                    {
                        "name": "P",
                        "weight": 1,
                        "argument": {
                            "requestedToCapacityRatioArguments": {
                                "shape": [{"utilization": 1, "score": 11}]
                            }
                        },
                    }
                ]
            },
            "spec.priorities[0].argument.requestedToCapacityRatioArguments.shape[0].score",
            "must be at most 10, got 11",
            id="shape-score-range",
        ),
        pytest.param(
            {
                "priorities": [
                    {
                        "name": "P",
                        "weight": 1,
                        "argument": {
                            "requestedToCapacityRatioArguments": {
                                "shape": [{"utilization": 1, "score": 1}],
                                "resources": [{"name": "cpu", "weight": 0}],
                            }
                        },
                    }
                ]
            },
            "spec.priorities[0].argument.requestedToCapacityRatioArguments.resources[0].weight",
            "must be a positive integer, got 0",
            id="resource-weight",
        ),
        pytest.param(
            {
                "priorities": [
                    {
                        "name": "P",
                        "weight": 1,
                        "argument": {
                            "requestedToCapacityRatioArguments": {
                                "shape": [{"utilization": 1, "score": 1}],
                                "resources": [{"name": ""}],
                            }
                        },
                    }
                ]
            },
            "spec.priorities[0].argument.requestedToCapacityRatioArguments.resources[0].name",
            "must not be empty",
            id="resource-name",
        ),
        pytest.param(
            {"extenders": [{"urlPrefix": "http://a", "prioritizeVerb": "prioritize"}]},
            "spec.extenders[0].weight",
            "must be a positive integer when prioritizeVerb is set, got 0",
            id="extender-prioritize-without-weight",
        ),
        pytest.param(
            {
                "extenders": [
                    {"urlPrefix": "http://a", "bindVerb": "bind"},
                    {"urlPrefix": "http://b", "bindVerb": "bind"},
                ]
            },
            "spec.extenders",
            "only one extender can implement bind, found 2: "
            "spec.extenders[0] and spec.extenders[1]",
            id="two-binders",
        ),
        pytest.param(
            {"extenders": [{"filterVerb": "filter"}]},
            "spec.extenders[0].urlPrefix",
            "is required",
            id="extender-url-missing",
        ),
        pytest.param(
            {"extenders": [{"urlPrefix": "http://a", "enableHTTPS": False, "enableHttps": True}]},
            "spec.extenders[0].enableHttps",
            "contradicts enableHTTPS: false (two spellings of one setting), got true",
            id="extender-https-spellings-disagree",
        ),
        pytest.param(
            {"extenders": [{"urlPrefix": "http://a", "EnableHTTPS": True}]},
            "spec.extenders[0].EnableHTTPS",
            "unknown field (did you mean enableHTTPS?)",
            id="extender-https-other-case",
        ),
        pytest.param(
            {"extenders": [{"urlPrefix": "http://a", "httpTimeout": "thirty seconds"}]},
            "spec.extenders[0].httpTimeout",
            'must be a Go duration like "30s" or integer nanoseconds, got "thirty seconds"',
            id="extender-timeout-format",
        ),
        pytest.param(
            {"extenders": [{"urlPrefix": "http://a", "httpTimeout": -1}]},
            "spec.extenders[0].httpTimeout",
            "must not be negative, got -1",
            id="extender-timeout-negative",
        ),
        pytest.param(
            {"extenders": [{"urlPrefix": "http://a", "tlsConfig": {"certData": "not base64!"}}]},
            "spec.extenders[0].tlsConfig.certData",
            "must be base64-encoded PEM",
            id="extender-tls-data",
        ),
        pytest.param(
            {
                "extenders": [
                    {"urlPrefix": "https://a", "tlsConfig": {"insecure": True, "caFile": "/ca"}}
                ]
            },
            "spec.extenders[0].tlsConfig.insecure",
            "must not be true when caFile or caData is set",
            id="extender-tls-insecure-with-ca",
        ),
        pytest.param(
            {"extenders": [{"urlPrefix": "http://a", "managedResources": [{"name": "gpu"}]}]},
            "spec.extenders[0].managedResources[0].name",
            "must be an extended resource name with a domain prefix, like example.com/gpu, "
            'got "gpu"',
            id="managed-resource-no-domain",
        ),
        pytest.param(
            {
                "extenders": [
                    {"urlPrefix": "http://a", "managedResources": [{"name": "kubernetes.io/gpu"}]}
                ]
            },
            "spec.extenders[0].managedResources[0].name",
            "must not use the kubernetes.io domain",
            id="managed-resource-native",
        ),
        pytest.param(
            {
                "extenders": [
                    {
                        "urlPrefix": "http://a",
                        "managedResources": [{"name": "requests.example.com/gpu"}],
                    }
                ]
            },
            "spec.extenders[0].managedResources[0].name",
            'must not start with "requests."',
            id="managed-resource-requests-prefix",
        ),
        pytest.param(
            {
                "extenders": [
                    {"urlPrefix": "http://a", "managedResources": [{"name": "Example.com/gpu"}]}
                ]
            },
            "spec.extenders[0].managedResources[0].name",
            "must have a lowercase DNS subdomain as its prefix",
            id="managed-resource-bad-domain",
        ),
        pytest.param(
            {
                "extenders": [
                    {"urlPrefix": "http://a", "managedResources": [{"name": "example.com/gpu"}]},
                    {"urlPrefix": "http://b", "managedResources": [{"name": "example.com/gpu"}]},
                ]
            },
            "spec.extenders[1].managedResources[0].name",
            '"example.com/gpu" is already managed at spec.extenders[0].managedResources[0].name',
            id="managed-resource-duplicate",
        ),
        pytest.param(
            {"hardPodAffinitySymetricWeight": 3},
            "spec.hardPodAffinitySymetricWeight",
            "unknown field (did you mean hardPodAffinitySymmetricWeight?)",
            id="unknown-top-level-field",
        ),
        pytest.param(
            {"predicates": [{"name": "HostName", "weight": 1}]},
            "spec.predicates[0].weight",
            "unknown field",
            id="unknown-nested-field",
        ),
        pytest.param(
            {"predicates": {"name": "HostName"}},
            "spec.predicates",
            'must be a list, got {"name": "HostName"}',
            id="list-expected",
        ),
        pytest.param(
            {"predicates": ["HostName"]},
            "spec.predicates[0]",
            'must be an object, got "HostName"',
            id="object-expected",
        ),
        pytest.param(
            {"mode": "shadow"},
            "spec.mode",
            'must be Active or Shadow, got "shadow"',
            id="mode-is-case-sensitive",
        ),
        pytest.param(
            {"mode": "Canary"},
            "spec.mode",
            'must be Active or Shadow, got "Canary"',
            id="mode-unknown",
        ),
        pytest.param(
            {"mode": "Shadow", "shadow": {"percentageOfPods": 0}},
            "spec.shadow.percentageOfPods",
            "must be a positive integer, got 0",
            id="shadow-percentage-zero",
        ),
        pytest.param(
            {"mode": "Shadow", "shadow": {"percentageOfPods": 101}},
            "spec.shadow.percentageOfPods",
            "must be at most 100, got 101",
            id="shadow-percentage-over-100",
        ),
        pytest.param(
            {"mode": "Shadow", "shadow": {"maxDecisionsPerSecond": 0}},
            "spec.shadow.maxDecisionsPerSecond",
            "must be a positive integer, got 0",
            id="shadow-budget-zero",
        ),
        pytest.param(
            {"mode": "Shadow", "shadow": {"maxDecisionsPerSecond": 2.5}},
            "spec.shadow.maxDecisionsPerSecond",
            "must be an integer, got 2.5",
            id="shadow-budget-not-integer",
        ),
        pytest.param(
            {"mode": "Shadow", "shadow": {"sampleRate": 0.5}},
            "spec.shadow.sampleRate",
            "unknown field",
            id="shadow-unknown-field",
        ),
    ],
)
def test_refused(spec: dict[str, Any], path: str, message: str) -> None:
    where = f'SchedulingPolicy "gpu": {path}: '
    errors = errors_of(policy_object(spec))
    assert any(error.startswith(where) and message in error for error in errors), errors


def test_all_errors_are_collected() -> None:
    spec = {
        "predicates": [
            {"name": "HostName", "order": 1},
            {"name": "Nope"},
            {"name": "NoDiskConflict", "order": 1},
        ],
        "priorities": [{"name": "EqualPriority", "weight": 0}],
        "hardPodAffinitySymmetricWeight": 101,
        "extenders": [
            {"urlPrefix": "http://a", "bindVerb": "b", "prioritizeVerb": "p"},
            {"urlPrefix": "http://b", "bindVerb": "b"},
        ],
    }
    with pytest.raises(PolicyError) as info:
        parse_policy(policy_object(spec))
    paths = [error.split(": ")[1] for error in info.value.errors]
    assert paths == [
        "spec.predicates[1].name",
        "spec.predicates[2].order",
        "spec.priorities[0].weight",
        "spec.hardPodAffinitySymmetricWeight",
        "spec.extenders",
        "spec.extenders[0].weight",
    ]
    assert str(info.value) == "\n".join(info.value.errors)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        pytest.param(
            {"kind": "Policy"},
            'SchedulingPolicy "gpu": kind: must be SchedulingPolicy, got "Policy" '
            "(a legacy kube-scheduler Policy: convert it with `policy-scheduler convert`)",
            id="legacy-kind",
        ),
        pytest.param(
            {"kind": "ConfigMap"},
            'SchedulingPolicy "gpu": kind: must be SchedulingPolicy, got "ConfigMap"',
            id="other-kind",
        ),
        pytest.param(
            {"apiVersion": "policyscheduler.io/v1"},
            'SchedulingPolicy "gpu": apiVersion: must be policyscheduler.io/v1alpha1, '
            'got "policyscheduler.io/v1"',
            id="wrong-version",
        ),
        pytest.param(
            {"metadata": {}},
            "SchedulingPolicy: metadata.name: must be a non-empty string, got null",
            id="no-name",
        ),
        pytest.param(
            {"metadata": None},
            "SchedulingPolicy: metadata.name: is required",
            id="no-metadata",
        ),
        pytest.param(
            {"metadata": {"name": "GPU"}},
            'SchedulingPolicy "GPU": metadata.name: must be a lowercase RFC 1123 subdomain',
            id="bad-name",
        ),
        pytest.param(
            {"spec": []},
            'SchedulingPolicy "gpu": spec: must be an object, got []',
            id="spec-not-an-object",
        ),
    ],
)
def test_object_envelope_refused(change: dict[str, Any], expected: str) -> None:
    obj = {**policy_object({}), **change}
    errors = errors_of(obj)
    assert any(error.startswith(expected) for error in errors), errors


def test_models_are_frozen() -> None:
    policy = parse_policy(FULL)
    with pytest.raises(ValueError, match="frozen"):
        setattr(policy.spec, "schedulerName", "other")  # noqa: B010  (bypasses mypy on purpose)
