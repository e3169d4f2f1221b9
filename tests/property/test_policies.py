"""The policy model and the legacy conversion: any input is accepted or refused cleanly.

Refused means a PolicyError whose lines name the policy and the field, one line per
problem; accepted means the policy compiles (or is refused by the compiler, still with a
PolicyError), survives a round trip through its API object, and a converted legacy
Policy is an accepted SchedulingPolicy.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from policy_scheduler.engine.compiler import compile_policy
from policy_scheduler.legacy import convert_legacy, load_legacy
from policy_scheduler.policy import PolicyError, parse_policy, policy_to_object
from property.strategies import (
    example_file,
    examples,
    json_values,
    mutated_or_arbitrary,
    succeeds_or_raises,
)

POLICIES = [
    example_file(f"examples/policies/{name}.yaml")
    for name in ("bin-packing", "default", "gpu", "zone-spread")
]
RICH_POLICY = {
    **POLICIES[2],
    "spec": {
        **POLICIES[2]["spec"],
        "hardPodAffinitySymmetricWeight": 5,
        "percentageOfNodesToScore": 50,
        "priorities": [
            *POLICIES[2]["spec"]["priorities"],
            {
                "name": "Shape",
                "weight": 2,
                "argument": {
                    "requestedToCapacityRatioArguments": {
                        "shape": [
                            {"utilization": 0, "score": 10},
                            {"utilization": 100, "score": 0},
                        ],
                        "resources": [{"name": "cpu", "weight": 1}],
                    }
                },
            },
        ],
        "extenders": [
            {
                "urlPrefix": "http://extender:8888/scheduler",
                "filterVerb": "filter",
                "prioritizeVerb": "prioritize",
                "weight": 1,
                "httpTimeout": 5000000000,
                "tlsConfig": {"insecure": True},
                "managedResources": [{"name": "example.com/gpu", "ignoredByScheduler": True}],
            }
        ],
    },
}
LEGACY = example_file("examples/legacy-policy.json")


def check_refusal(exc: PolicyError) -> None:
    assert exc.errors, "a PolicyError with no message"
    for line in exc.errors:
        assert line and "\n" not in line and len(line) < 600, line


def accepted_or_refused(raw: Any) -> None:
    try:
        policy = parse_policy(raw)
    except PolicyError as exc:
        check_refusal(exc)
        return
    assert parse_policy(policy_to_object(policy)) == policy
    succeeds_or_raises(lambda: compile_policy(policy), PolicyError)


@pytest.mark.parametrize("base", [*POLICIES, RICH_POLICY], ids=[*range(4), "rich"])
def test_the_bases_are_accepted(base: dict[str, Any]) -> None:
    compile_policy(parse_policy(base))


@settings(max_examples=examples(400))
@given(raw=st.one_of(*(mutated_or_arbitrary(p) for p in (*POLICIES, RICH_POLICY))))
def test_a_scheduling_policy_is_accepted_or_refused_field_by_field(raw: Any) -> None:
    accepted_or_refused(raw)


@settings(max_examples=examples(300))
@given(spec=json_values)
def test_any_spec_is_accepted_or_refused(spec: Any) -> None:
    accepted_or_refused({**POLICIES[0], "spec": spec})


@settings(max_examples=examples(400))
@given(raw=mutated_or_arbitrary(LEGACY))
def test_a_legacy_policy_converts_or_is_refused(raw: Any) -> None:
    try:
        result = convert_legacy(raw)
    except PolicyError as exc:
        check_refusal(exc)
        return
    for warning in result.warnings:
        assert "\n" not in warning
    # What convert prints is a SchedulingPolicy that is accepted as it is.
    again = parse_policy(policy_to_object(result.policy))
    assert again == result.policy
    succeeds_or_raises(lambda: compile_policy(result.policy), PolicyError)


@settings(max_examples=examples(200))
@given(
    raw=mutated_or_arbitrary(LEGACY),
    dump=st.sampled_from([json.dumps, yaml.safe_dump, lambda value: json.dumps(value, indent=1)]),
)
def test_a_legacy_file_loads_or_is_refused(raw: Any, dump: Any) -> None:
    try:
        text = dump(raw)
    except (ValueError, yaml.YAMLError):  # NaN in JSON, ...: not a file anyone has
        return
    try:
        data = load_legacy(text)
    except PolicyError as exc:
        check_refusal(exc)
        return
    assert isinstance(data, dict)


@settings(max_examples=examples(200))
@given(text=st.text(max_size=200))
def test_any_text_loads_as_a_legacy_policy_or_is_refused(text: str) -> None:
    succeeds_or_raises(lambda: load_legacy(text), PolicyError)
