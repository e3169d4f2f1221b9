"""The SchedulingPolicy CRD: generated from the model, structural, and as strict as it.

The API server is stood in for by ``conftest.crd_errors`` (jsonschema for the
openAPIV3Schema, cel-python for the x-kubernetes-validations rules). Each refusal is
checked against ``policy.check_spec``: the CRD refuses what the operator refuses, naming
the same field (rules across entries can only name the list; those cases say so).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from chart.crdcheck import CHART, ROOT, Errors, cel_program, openapi_schema, schema_errors
from policy_scheduler import names
from policy_scheduler.crd import FILE_NAME, build_crd, render_yaml, spec_schema
from policy_scheduler.policy import (
    PolicyError,
    check_spec,
    format_path,
    parse_spec,
    spec_json_schema,
)
from policy_scheduler.state.shadows import WINDOW_SIZE

CRD_FILE = ROOT / "crds" / FILE_NAME
CHART_CRD_FILE = CHART / "crds" / FILE_NAME
EXAMPLES = sorted((ROOT / "examples" / "policies").glob("*.yaml"))
K8S_VERSION = "1.30.0"

CheckFn = Callable[[dict[str, Any]], Errors]


def policy_object(spec: dict[str, Any], name: str = "test") -> dict[str, Any]:
    return {
        "apiVersion": "policyscheduler.io/v1alpha1",
        "kind": "SchedulingPolicy",
        "metadata": {"name": name},
        "spec": spec,
    }


def model_paths(spec: dict[str, Any]) -> list[str]:
    checked, issues = check_spec(spec)
    assert checked is None, "the model accepts this spec"
    return [format_path(issue.path) for issue in issues]


# -- generated, and the same file everywhere ----------------------------------------


def test_crd_file_is_build_crd_output() -> None:
    text = CRD_FILE.read_text()
    assert text == render_yaml(), (
        f"{CRD_FILE} is stale: python -m policy_scheduler.crd > crds/{FILE_NAME}"
    )
    assert yaml.safe_load(text) == build_crd()


def test_chart_installs_the_same_crd_file() -> None:
    assert CHART_CRD_FILE.read_bytes() == CRD_FILE.read_bytes(), (
        f"copy crds/{FILE_NAME} to charts/policy-scheduler/crds/"
    )


def test_build_crd_is_pure_and_repeatable() -> None:
    first = build_crd()
    copy.deepcopy(first)["spec"]["group"] = "changed"
    assert build_crd() == first


def test_spec_schema_is_the_model_schema_plus_api_server_additions() -> None:
    """Every constraint of the model's schema is in the CRD unchanged; the CRD only adds."""

    def contains(model: Any, crd: Any, where: str) -> None:
        if isinstance(model, dict):
            assert isinstance(crd, dict), where
            for key, value in model.items():
                assert key in crd, f"{where}.{key} missing from the CRD"
                contains(value, crd[key], f"{where}.{key}")
        elif isinstance(model, list):
            assert isinstance(crd, list) and len(model) == len(crd), where
            for index, (a, b) in enumerate(zip(model, crd, strict=True)):
                contains(a, b, f"{where}[{index}]")
        else:
            assert model == crd, where

    contains(spec_json_schema(), spec_schema(), "spec")


# -- the CRD object -----------------------------------------------------------------


def test_crd_names_scope_and_status_subresource(crd: dict[str, Any]) -> None:
    spec = crd["spec"]
    assert crd["metadata"]["name"] == "schedulingpolicies.policyscheduler.io"
    assert spec["group"] == "policyscheduler.io"
    assert spec["scope"] == "Cluster"
    assert spec["names"]["kind"] == "SchedulingPolicy"
    assert spec["names"]["plural"] == "schedulingpolicies"
    assert spec["names"]["shortNames"] == ["schedpol"]
    (version,) = spec["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1alpha1", True, True)
    assert version["subresources"] == {"status": {}}


def test_printer_columns(crd: dict[str, Any]) -> None:
    columns = {
        column["name"]: column["jsonPath"]
        for column in crd["spec"]["versions"][0]["additionalPrinterColumns"]
    }
    assert columns == {
        "Scheduler": ".spec.schedulerName",
        "Mode": ".spec.mode",
        "Accepted": '.status.conditions[?(@.type=="Accepted")].status',
        "Reason": '.status.conditions[?(@.type=="Accepted")].reason',
        "Predicates": ".spec.predicates[*].name",
        "Priorities": ".spec.priorities[*].name",
        "Age": ".metadata.creationTimestamp",
    }


def test_crd_passes_kubernetes_validate_strict(crd: dict[str, Any]) -> None:
    kubernetes_validate.validate(crd, K8S_VERSION, strict=True)


def test_status_schema_is_explicit(crd: dict[str, Any]) -> None:
    status = openapi_schema(crd)["properties"]["status"]
    assert set(status["properties"]) == {
        "observedGeneration",
        "conditions",
        "podsScheduled",
        "podsUnschedulable",
        "lastDecisionTime",
        "servingSchedulerName",
        "shadow",
        "plugins",
    }
    shadow = status["properties"]["shadow"]["properties"]
    assert set(shadow) == {
        "compared",
        "sameNode",
        "differentNode",
        "onlyActivePlaced",
        "onlyShadowPlaced",
        "neitherPlaced",
        "recentDifferences",
    }
    assert set(shadow["recentDifferences"]["items"]["properties"]) == {
        "pod",
        "activeNode",
        "shadowNode",
        "activeTotal",
        "shadowTotal",
    }
    # The window the description promises is the one the operator keeps.
    assert f"last {WINDOW_SIZE} pods" in status["properties"]["shadow"]["description"]
    condition = status["properties"]["conditions"]["items"]["properties"]
    assert set(condition) == {
        "type",
        "status",
        "reason",
        "message",
        "lastTransitionTime",
        "observedGeneration",
    }
    # The one free-form field is a plugin's arguments, checked by the plugin's own schema
    # when the operator admits the policy.
    assert yaml.safe_dump(crd).count("x-kubernetes-preserve-unknown-fields") == 1
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    args = spec["properties"]["pluginConfig"]["items"]["properties"]["args"]
    assert args["x-kubernetes-preserve-unknown-fields"] is True


# -- structural schema rules --------------------------------------------------------


def walk(node: dict[str, Any], path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema node that describes a value (not anyOf branches), with its path."""
    yield path, node
    for name, sub in node.get("properties", {}).items():
        yield from walk(sub, f"{path}.{name}")
    if "items" in node:
        yield from walk(node["items"], f"{path}[]")


def test_schema_is_structural(crd: dict[str, Any]) -> None:
    schema = openapi_schema(crd)
    text = yaml.safe_dump(schema)
    assert "$ref" not in text and "$defs" not in text and "definitions" not in text
    for path, node in walk(schema, "<root>"):
        if node.get("x-kubernetes-int-or-string"):
            # The one anyOf form a structural schema allows beside int-or-string.
            assert node["anyOf"] == [{"type": "integer"}, {"type": "string"}], path
            assert "type" not in node, path
        else:
            assert node.get("type") in {"object", "array", "string", "integer", "boolean"}, path
            assert "anyOf" not in node and "oneOf" not in node, path
        assert "additionalProperties" not in node or "properties" not in node, path
        assert "nullable" not in node, path
        if node.get("type") == "array":
            assert "items" in node, path


def test_every_field_has_a_description(crd: dict[str, Any]) -> None:
    missing = [
        path
        for path, node in walk(openapi_schema(crd), "<root>")
        if not node.get("description", "").strip()
    ]
    assert missing == []


def test_defaults_are_the_models_and_valid(crd: dict[str, Any]) -> None:
    spec = openapi_schema(crd)["properties"]["spec"]
    defaults = {
        name: prop["default"] for name, prop in spec["properties"].items() if "default" in prop
    }
    assert defaults == {
        "schedulerName": names.DEFAULT_SCHEDULER_NAME,
        "hardPodAffinitySymmetricWeight": 1,
        "alwaysCheckAllPredicates": False,
        "percentageOfNodesToScore": 0,
        "disablePreemption": False,
        "mode": "Active",
    }
    assert "default" not in spec["properties"]["predicates"]  # absent means the default set
    assert "default" not in spec["properties"]["priorities"]
    for name, value in defaults.items():
        assert schema_errors(spec["properties"][name], value) == [], name
    # And the model agrees they are what an empty spec means.
    checked, _ = check_spec({})
    assert checked is not None
    assert {name: getattr(checked, name) for name in defaults} == defaults


@pytest.mark.parametrize(
    ("field", "bounds"),
    [
        pytest.param("priorities[].weight", {"minimum": 1}, id="weight-positive"),
        pytest.param(
            "hardPodAffinitySymmetricWeight", {"minimum": 0, "maximum": 100}, id="hard-weight"
        ),
        pytest.param("percentageOfNodesToScore", {"minimum": 0, "maximum": 100}, id="percentage"),
        pytest.param("predicates[].order", {"minimum": 0}, id="order"),
    ],
)
def test_bounds(crd: dict[str, Any], field: str, bounds: dict[str, int]) -> None:
    nodes = dict(walk(openapi_schema(crd)["properties"]["spec"], "spec"))
    node = nodes[f"spec.{field}"]
    assert {key: node[key] for key in bounds} == bounds


def test_every_cel_rule_compiles_and_iterated_lists_are_bounded(crd: dict[str, Any]) -> None:
    """The API server refuses rules whose estimated cost is unbounded: every list a rule
    sits on, or under, needs maxItems, and the names the rules compare need maxLength."""
    rules = 0
    for path, node in walk(openapi_schema(crd), "<root>"):
        for rule in node.get("x-kubernetes-validations", []):
            cel_program(rule["rule"])
            assert rule["message"], path
            rules += 1
            # every enclosing list is bounded
            prefix = ""
            for part in path.split("[]")[:-1] if "[]" in path else []:
                prefix += part
                assert "maxItems" in dict(walk(openapi_schema(crd), "<root>"))[prefix], prefix
                prefix += "[]"
            if node.get("type") == "array":
                assert "maxItems" in node, path
            if "name" in node.get("properties", {}) and "self.name" in rule["rule"]:
                assert "maxLength" in node["properties"]["name"], path
            if "a.name" in rule["rule"]:
                assert "maxLength" in node["items"]["properties"]["name"], path
    assert rules >= 10


# -- what the CRD accepts -----------------------------------------------------------


@pytest.mark.parametrize("example", EXAMPLES, ids=[example.stem for example in EXAMPLES])
def test_examples_are_accepted(crd_errors: CheckFn, example: Path) -> None:
    obj = yaml.safe_load(example.read_text())
    assert crd_errors(obj) == []
    checked, issues = check_spec(obj["spec"])
    assert issues == [] and checked is not None


FULL_SPEC: dict[str, Any] = {
    "schedulerName": "gpu-scheduler",
    "predicates": [
        {"name": "PodFitsPorts", "order": 2},
        {"name": "PodFitsResources", "order": 1},
        {"name": "GeneralPredicates"},
        {
            "name": "CheckNodeLabelPresence",
            "argument": {"labelsPresence": {"labels": ["zone"], "presence": True}},
        },
        {"name": "Zoned", "argument": {"serviceAffinity": {"labels": ["zone"]}}},
    ],
    "priorities": [
        {"name": "LeastRequestedPriority", "weight": 1},
        {
            "name": "RequestedToCapacityRatioPriority",
            "weight": 2,
            "argument": {
                "requestedToCapacityRatioArguments": {
                    "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}],
                    "resources": [{"name": "cpu", "weight": 2}],
                }
            },
        },
        {"name": "Racks", "weight": 1, "argument": {"serviceAntiAffinity": {"label": "rack"}}},
    ],
    "hardPodAffinitySymmetricWeight": 100,
    "alwaysCheckAllPredicates": True,
    "percentageOfNodesToScore": 50,
    "extenders": [
        {
            "urlPrefix": "http://gpu-extender:8888/scheduler",
            "filterVerb": "filter",
            "prioritizeVerb": "prioritize",
            "weight": 1,
            "bindVerb": "bind",
            "httpTimeout": "30s",
            "managedResources": [{"name": "example.com/gpu", "ignoredByScheduler": True}],
        },
        {"urlPrefix": "http://other:8888", "filterVerb": "filter", "httpTimeout": 5000000000},
    ],
}


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param({}, id="empty-spec-means-defaults"),
        pytest.param({"predicates": [], "priorities": []}, id="empty-lists"),
        pytest.param(FULL_SPEC, id="every-field"),
    ],
)
def test_valid_specs_are_accepted_by_both(crd_errors: CheckFn, spec: dict[str, Any]) -> None:
    assert crd_errors(policy_object(spec)) == []
    checked, issues = check_spec(spec)
    assert issues == [] and checked is not None


def test_status_written_by_the_operator_is_accepted(crd_errors: CheckFn) -> None:
    obj = policy_object({})
    obj["status"] = {
        "observedGeneration": 3,
        "conditions": [
            {
                "type": "Accepted",
                "status": "False",
                "reason": "Invalid",
                "message": "spec.priorities[0].weight: must be a positive integer, got 0",
                "lastTransitionTime": "2024-01-01T00:00:00Z",
                "observedGeneration": 3,
            }
        ],
        "podsScheduled": 10,
        "podsUnschedulable": 2,
        "lastDecisionTime": "2024-01-01T00:00:01Z",
        "servingSchedulerName": "",
    }
    assert crd_errors(obj) == []
    obj["status"]["conditions"][0]["status"] = "Maybe"
    assert [path for path, _ in crd_errors(obj)] == ["status.conditions[0].status"]


# -- what the CRD refuses, naming the field the engine names ---------------------------

LP = {"labelsPresence": {"labels": ["zone"], "presence": True}}
SA = {"serviceAffinity": {"labels": ["zone"]}}
PREF = {"labelPreference": {"label": "ssd", "presence": True}}


def shape(*points: tuple[int, int]) -> dict[str, Any]:
    return {
        "requestedToCapacityRatioArguments": {
            "shape": [{"utilization": u, "score": s} for u, s in points]
        }
    }


REFUSED = [
    # (spec, path the CRD names, path the model names)
    pytest.param(
        {"priorities": [{"name": "LeastRequestedPriority", "weight": 0}]},
        "spec.priorities[0].weight",
        "spec.priorities[0].weight",
        id="weight-0",
    ),
    pytest.param(
        {"priorities": [{"name": "LeastRequestedPriority", "weight": -3}]},
        "spec.priorities[0].weight",
        "spec.priorities[0].weight",
        id="weight-negative",
    ),
    pytest.param(
        {"priorities": [{"name": "LeastRequestedPriority"}]},
        "spec.priorities[0].weight",
        "spec.priorities[0].weight",
        id="weight-missing",
    ),
    pytest.param(
        {"hardPodAffinitySymmetricWeight": 101},
        "spec.hardPodAffinitySymmetricWeight",
        "spec.hardPodAffinitySymmetricWeight",
        id="hard-pod-affinity-weight-101",
    ),
    pytest.param(
        {"percentageOfNodesToScore": -1},
        "spec.percentageOfNodesToScore",
        "spec.percentageOfNodesToScore",
        id="percentage-negative",
    ),
    pytest.param(
        {"percentageOfNodesToScore": 101},
        "spec.percentageOfNodesToScore",
        "spec.percentageOfNodesToScore",
        id="percentage-101",
    ),
    pytest.param(
        {"predicates": [{"name": "Custom", "argument": {**LP, **SA}}]},
        "spec.predicates[0].argument",
        "spec.predicates[0].argument",
        id="two-arguments-in-a-predicate",
    ),
    pytest.param(
        {"priorities": [{"name": "Custom", "weight": 1, "argument": {**PREF, **shape((0, 0))}}]},
        "spec.priorities[0].argument",
        "spec.priorities[0].argument",
        id="two-arguments-in-a-priority",
    ),
    pytest.param(
        {"predicates": [{"name": "Custom", "argument": {}}]},
        "spec.predicates[0].argument",
        "spec.predicates[0].argument",
        id="empty-argument",
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
        "spec.predicates[0].name",
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
        "spec.priorities[0].name",
        "spec.priorities[0].name",
        id="custom-priority-name-breaks-the-name-rule",
    ),
    pytest.param(
        {"predicates": [{"name": "CheckServiceAffinity", "argument": LP}]},
        "spec.predicates[0].argument",
        "spec.predicates[0].argument",
        id="service-affinity-with-wrong-argument-kind",
    ),
    pytest.param(
        {"predicates": [{"name": "GeneralPredicates", "argument": LP}]},
        "spec.predicates[0].argument",
        "spec.predicates[0].argument",
        id="builtin-predicate-with-argument",
    ),
    pytest.param(
        {"priorities": [{"name": "LeastRequestedPriority", "weight": 1, "argument": PREF}]},
        "spec.priorities[0].argument",
        "spec.priorities[0].argument",
        id="builtin-priority-with-argument",
    ),
    pytest.param(
        {
            "priorities": [
                {"name": "RequestedToCapacityRatioPriority", "weight": 1, "argument": PREF}
            ]
        },
        "spec.priorities[0].argument",
        "spec.priorities[0].argument",
        id="requested-to-capacity-with-wrong-argument-kind",
    ),
    pytest.param(
        {"priorities": [{"name": "Ratio", "weight": 1, "argument": shape((50, 1), (50, 2))}]},
        "spec.priorities[0].argument.requestedToCapacityRatioArguments.shape",
        "spec.priorities[0].argument.requestedToCapacityRatioArguments.shape[1].utilization",
        id="shape-not-strictly-increasing",
    ),
    pytest.param(
        {"priorities": [{"name": "Ratio", "weight": 1, "argument": shape((0, 11))}]},
        "spec.priorities[0].argument.requestedToCapacityRatioArguments.shape[0].score",
        "spec.priorities[0].argument.requestedToCapacityRatioArguments.shape[0].score",
        id="shape-score-above-10",
    ),
    pytest.param(
        {"predicates": [{"name": "HostName"}, {"name": "HostName"}]},
        "spec.predicates",
        "spec.predicates[1].name",
        id="duplicate-predicate",
    ),
    pytest.param(
        {"predicates": [{"name": "PodFitsHostPorts"}, {"name": "PodFitsPorts"}]},
        "spec.predicates",
        "spec.predicates[1].name",
        id="duplicate-predicate-through-alias",
    ),
    pytest.param(
        {
            "predicates": [
                {"name": "HostName", "order": 1},
                {"name": "PodFitsResources", "order": 1},
            ]
        },
        "spec.predicates",
        "spec.predicates[1].order",
        id="order-clash",
    ),
    pytest.param(
        {"predicates": [{"name": "HostName", "order": -1}]},
        "spec.predicates[0].order",
        "spec.predicates[0].order",
        id="order-negative",
    ),
    pytest.param(
        {
            "priorities": [
                {"name": "EqualPriority", "weight": 1},
                {"name": "EqualPriority", "weight": 2},
            ]
        },
        "spec.priorities",
        "spec.priorities[1].name",
        id="duplicate-priority",
    ),
    pytest.param(
        {"predicates": [{"nam": "HostName"}]},
        "spec.predicates[0].nam",
        "spec.predicates[0].nam",
        id="unknown-field",
    ),
    pytest.param(
        {"schedulerName": "Policy_Scheduler"},
        "spec.schedulerName",
        "spec.schedulerName",
        id="scheduler-name-not-dns",
    ),
    pytest.param(
        {"alwaysCheckAllPredicates": "yes"},
        "spec.alwaysCheckAllPredicates",
        "spec.alwaysCheckAllPredicates",
        id="bool-as-string",
    ),
    pytest.param(
        {
            "extenders": [
                {"urlPrefix": "http://a", "bindVerb": "bind"},
                {"urlPrefix": "http://b", "bindVerb": "bind"},
            ]
        },
        "spec.extenders",
        "spec.extenders",
        id="two-binding-extenders",
    ),
    pytest.param(
        {"extenders": [{"urlPrefix": "http://a", "prioritizeVerb": "prioritize"}]},
        "spec.extenders[0].weight",
        "spec.extenders[0].weight",
        id="prioritizing-extender-without-weight",
    ),
]


@pytest.mark.parametrize(("spec", "crd_path", "model_path"), REFUSED)
def test_refused_by_crd_and_model_naming_the_field(
    crd_errors: CheckFn, spec: dict[str, Any], crd_path: str, model_path: str
) -> None:
    found = [path for path, _ in crd_errors(policy_object(spec))]
    assert crd_path in found, found
    assert model_path in model_paths(spec)
    # A rule across entries names the list; the model names the entry within it.
    assert model_path == crd_path or model_path.startswith(crd_path)


def test_refusal_messages_are_the_rules_words(crd_errors: CheckFn) -> None:
    spec = {"predicates": [{"name": "PodFitsResources", "argument": copy.deepcopy(LP)}]}
    assert crd_errors(policy_object(spec)) == [
        (
            "spec.predicates[0].argument",
            "a built-in predicate takes no argument; give a custom predicate a name of its own",
        )
    ]


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param({"predicates": [{"name": "ZoneLabelRequired"}]}, id="predicate"),
        pytest.param({"priorities": [{"name": "PreferSSD", "weight": 1}]}, id="priority"),
    ],
)
def test_a_bare_name_that_is_no_builtin_is_left_to_the_operator(
    crd_errors: CheckFn, spec: dict[str, Any]
) -> None:
    # It may name a plugin installed in the operator's image: the API server cannot know,
    # the operator refuses it (PluginNotFound) if no installed plugin has that name.
    assert crd_errors(policy_object(spec)) == []
    with pytest.raises(PolicyError) as refused:
        parse_spec(spec, name="test")
    assert refused.value.reason == "PluginNotFound"
    assert "nor is it a plugin's name" in str(refused.value)


def test_every_builtin_is_accepted_bare(crd_errors: CheckFn) -> None:
    # CheckNodeLabelPresence and CheckServiceAffinity too: bare, they filter nothing (v1.17+).
    for name in sorted(names.BUILTIN_PREDICATES):
        assert crd_errors(policy_object({"predicates": [{"name": name}]})) == [], name
    for name in sorted(names.BUILTIN_PRIORITIES):
        spec = {"priorities": [{"name": name, "weight": 1}]}
        assert crd_errors(policy_object(spec)) == [], name


def test_list_limits_are_a_crd_only_bound(crd: dict[str, Any], crd_errors: CheckFn) -> None:
    """Documented drift: the CRD caps list sizes for CEL cost; the model does not (yet)."""
    many = [{"name": f"Custom{i}", "argument": copy.deepcopy(LP)} for i in range(65)]
    assert [path for path, _ in crd_errors(policy_object({"predicates": many}))] == [
        "spec.predicates"
    ]
    # 64 passes the schema. Its rules are checked on short lists elsewhere: cel-python
    # takes half a minute over 64 entries (the name-uniqueness rule is quadratic).
    assert schema_errors(openapi_schema(crd), policy_object({"predicates": many[:64]})) == []
