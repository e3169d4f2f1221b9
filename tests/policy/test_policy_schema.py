"""The spec's JSON schema: usable as a CRD openAPIV3Schema, and agreeing with the model."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from policy_scheduler import names
from policy_scheduler.policy import PolicyError, parse_spec, spec_json_schema

VALID_SPEC: dict[str, Any] = {
    "schedulerName": "policy-scheduler",
    "predicates": [
        {"name": "PodFitsResources", "order": 1},
        {
            "name": "ZoneLabelRequired",
            "argument": {"labelsPresence": {"labels": ["zone"], "presence": True}},
        },
    ],
    "priorities": [
        {"name": "LeastRequestedPriority", "weight": 1},
        {
            "name": "PreferSSD",
            "weight": 2,
            "argument": {"labelPreference": {"label": "ssd", "presence": True}},
        },
    ],
    "hardPodAffinitySymmetricWeight": 1,
    "alwaysCheckAllPredicates": False,
    "percentageOfNodesToScore": 0,
    "extenders": [
        {
            "urlPrefix": "http://gpu-extender:8888/scheduler",
            "filterVerb": "filter",
            "prioritizeVerb": "prioritize",
            "weight": 1,
            "httpTimeout": "30s",
            "managedResources": [{"name": "example.com/gpu", "ignoredByScheduler": True}],
        }
    ],
}


def walk(node: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    yield path, node
    if isinstance(node, dict):
        for key, value in node.items():
            yield from walk(value, f"{path}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from walk(value, f"{path}/{index}")


def schema_nodes() -> Iterator[tuple[str, dict[str, Any]]]:
    for path, node in walk(spec_json_schema()):
        if isinstance(node, dict) and path.split("/")[-1:] != ["properties"]:
            yield path, node


@pytest.mark.parametrize(
    "key", ["$ref", "$defs", "title", "default", "additionalProperties", "oneOf", "allOf"]
)
def test_no_keys_a_crd_schema_cannot_or_should_not_carry(key: str) -> None:
    offenders = [path for path, node in schema_nodes() if key in node]
    assert offenders == []


def test_the_only_any_of_is_the_int_or_string_pattern() -> None:
    for path, node in schema_nodes():
        if "anyOf" in node:
            assert node["anyOf"] == [{"type": "integer"}, {"type": "string"}], path
            assert node["x-kubernetes-int-or-string"] is True, path


def test_no_null_types() -> None:
    assert [path for path, node in schema_nodes() if node.get("type") == "null"] == []


def test_objects_have_type_and_properties() -> None:
    schema = spec_json_schema()
    assert schema["type"] == "object"
    for path, node in schema_nodes():
        if "properties" in node:
            assert node.get("type") == "object", path
        if node.get("type") == "object" and not node.get("x-kubernetes-preserve-unknown-fields"):
            assert node.get("properties"), path


def test_every_property_has_a_description() -> None:
    missing = [
        f"{path}/{name}"
        for path, node in schema_nodes()
        for name, prop in node.get("properties", {}).items()
        if not prop.get("description")
    ]
    assert missing == []


def test_every_typed_node_but_int_or_string_has_a_type() -> None:
    for path, node in schema_nodes():
        if path.rsplit("/", 1)[-1] in ("required",) or "description" not in node:
            continue
        assert "type" in node or node.get("x-kubernetes-int-or-string") is True, path


def prop(*path: str) -> dict[str, Any]:
    node: dict[str, Any] = spec_json_schema()
    for part in path:
        node = node["items"] if part == "[]" else node["properties"][part]
    return node


@pytest.mark.parametrize(
    ("path", "bounds"),
    [
        pytest.param(
            ("priorities", "[]", "weight"), (1, names.MAX_WEIGHT - 1), id="priority-weight"
        ),
        pytest.param(("hardPodAffinitySymmetricWeight",), (0, 100), id="hard-affinity-weight"),
        pytest.param(("percentageOfNodesToScore",), (0, 100), id="percentage"),
        pytest.param(
            (
                "priorities",
                "[]",
                "argument",
                "requestedToCapacityRatioArguments",
                "shape",
                "[]",
                "score",
            ),
            (0, 10),
            id="shape-score",
        ),
        pytest.param(
            (
                "priorities",
                "[]",
                "argument",
                "requestedToCapacityRatioArguments",
                "shape",
                "[]",
                "utilization",
            ),
            (0, 100),
            id="shape-utilization",
        ),
    ],
)
def test_bounds(path: tuple[str, ...], bounds: tuple[int, int]) -> None:
    node = prop(*path)
    assert node["type"] == "integer"
    assert (node["minimum"], node["maximum"]) == bounds


def test_order_has_a_lower_bound_only() -> None:
    assert prop("predicates", "[]", "order")["minimum"] == 0
    assert "maximum" not in prop("predicates", "[]", "order")


def test_required_fields() -> None:
    assert prop("priorities", "[]")["required"] == ["name", "weight"]
    assert prop("predicates", "[]")["required"] == ["name"]
    assert prop("extenders", "[]")["required"] == ["urlPrefix"]


def test_arguments_set_exactly_one_kind() -> None:
    for path in (("predicates", "[]", "argument"), ("priorities", "[]", "argument")):
        node = prop(*path)
        assert (node["minProperties"], node["maxProperties"]) == (1, 1)


def test_http_timeout_is_int_or_string() -> None:
    node = prop("extenders", "[]", "httpTimeout")
    assert node["x-kubernetes-int-or-string"] is True
    assert node["anyOf"] == [{"type": "integer"}, {"type": "string"}]
    assert "type" not in node


def test_fields_use_the_api_names() -> None:
    assert set(spec_json_schema()["properties"]) == {
        "schedulerName",
        "predicates",
        "priorities",
        "hardPodAffinitySymmetricWeight",
        "alwaysCheckAllPredicates",
        "percentageOfNodesToScore",
        "disablePreemption",
        "mode",
        "shadow",
        "extenders",
        "plugins",
        "pluginConfig",
    }
    assert set(prop("plugins")["properties"]) == {*names.EXTENSION_POINTS, names.MULTI_POINT}
    assert prop("pluginConfig", "[]", "args")["x-kubernetes-preserve-unknown-fields"] is True
    assert prop("mode")["enum"] == ["Active", "Shadow"]
    assert set(prop("shadow")["properties"]) == {"percentageOfPods", "maxDecisionsPerSecond"}
    assert "enableHTTPS" in prop("extenders", "[]")["properties"]


# -- the schema and the model agree -------------------------------------------------

jsonschema = pytest.importorskip("jsonschema")


def test_valid_spec_passes_both() -> None:
    jsonschema.validate(VALID_SPEC, spec_json_schema())
    parse_spec(VALID_SPEC, name="x")


def with_change(path: tuple[str | int, ...], value: Any) -> dict[str, Any]:
    import copy

    spec = copy.deepcopy(VALID_SPEC)
    node: Any = spec
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return spec


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param(with_change(("priorities", 0, "weight"), 0), id="weight-zero"),
        pytest.param(with_change(("priorities", 0, "weight"), "1"), id="weight-string"),
        pytest.param(with_change(("hardPodAffinitySymmetricWeight",), 101), id="hard-weight-high"),
        pytest.param(with_change(("percentageOfNodesToScore",), -1), id="percentage-negative"),
        pytest.param(with_change(("predicates", 0, "order"), -1), id="order-negative"),
        pytest.param(with_change(("predicates", 1, "argument"), {}), id="argument-empty"),
        pytest.param(
            with_change(("predicates", 1, "argument", "serviceAffinity"), {"labels": ["region"]}),
            id="two-arguments",
        ),
        pytest.param(with_change(("predicates", 0, "name"), ""), id="name-empty"),
        pytest.param(with_change(("schedulerName",), "Bad_Name"), id="scheduler-name"),
        pytest.param(with_change(("extenders", 0, "httpTimeout"), True), id="timeout-bool"),
        pytest.param(with_change(("alwaysCheckAllPredicates",), "true"), id="bool-string"),
        pytest.param(
            with_change(("priorities", 1, "argument", "labelPreference"), {"label": "ssd"}),
            id="presence-missing",
        ),
    ],
)
def test_schema_refuses_what_the_model_refuses(spec: dict[str, Any]) -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(spec, spec_json_schema())
    with pytest.raises(PolicyError):
        parse_spec(spec, name="x")
