"""topologySpreadConstraints as today's API server and kube-scheduler read them.

The optional fields (minDomains, nodeAffinityPolicy, nodeTaintsPolicy, matchLabelKeys)
are parsed with the API server's checks; a field the scheduler does not know is refused
on a pending pod, naming the field, and left alone on a placed one.
"""

from __future__ import annotations

from typing import Any

import pytest

from builders import pod
from policy_scheduler.objects import ObjectError, TopologySpreadConstraint, parse_pod

BASE = {
    "maxSkew": 1,
    "topologyKey": "zone",
    "whenUnsatisfiable": "DoNotSchedule",
    "labelSelector": {"matchLabels": {"app": "web"}},
}
LABELS = {"app": "web", "pod-template-hash": "7d9f"}


def parsed(**fields: Any) -> TopologySpreadConstraint:
    raw = pod("p", labels=LABELS, spread=[{**BASE, **fields}])
    (constraint,) = parse_pod(raw).spread_constraints
    return constraint


def test_absent_fields_take_kube_schedulers_defaults() -> None:
    constraint = parsed()
    assert constraint.min_domains == 1
    assert constraint.honor_node_affinity is True
    assert constraint.honor_node_taints is False


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        pytest.param({"minDomains": 3}, {"min_domains": 3}, id="minDomains"),
        pytest.param(
            {"nodeAffinityPolicy": "Ignore"}, {"honor_node_affinity": False}, id="affinity-ignore"
        ),
        pytest.param(
            {"nodeAffinityPolicy": "Honor"}, {"honor_node_affinity": True}, id="affinity-honor"
        ),
        pytest.param({"nodeTaintsPolicy": "Honor"}, {"honor_node_taints": True}, id="taints-honor"),
        pytest.param(
            {"nodeTaintsPolicy": "Ignore"}, {"honor_node_taints": False}, id="taints-ignore"
        ),
    ],
)
def test_optional_fields_are_read(fields: dict[str, Any], expected: dict[str, Any]) -> None:
    constraint = parsed(**fields)
    assert {key: getattr(constraint, key) for key in expected} == expected


@pytest.mark.parametrize(
    ("keys", "matches", "refuses"),
    [
        pytest.param(
            ["pod-template-hash"],
            {"app": "web", "pod-template-hash": "7d9f"},
            {"app": "web", "pod-template-hash": "old"},
            id="the-pods-own-value-joins-the-selector",
        ),
        pytest.param(
            ["not-on-the-pod"],
            {"app": "web", "not-on-the-pod": "anything"},
            {"app": "db"},
            id="a-key-the-pod-lacks-adds-nothing",
        ),
    ],
)
def test_match_label_keys_merge_into_the_selector(
    keys: list[str], matches: dict[str, str], refuses: dict[str, str]
) -> None:
    selector = parsed(matchLabelKeys=keys).selector
    assert selector.matches(matches)
    assert not selector.matches(refuses)


ERR = 'Pod "default/p": spec.topologySpreadConstraints[0].'


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        pytest.param(
            {"minDomains": 0}, ERR + "minDomains: must be greater than zero, got 0", id="zero"
        ),
        pytest.param(
            {"minDomains": "2"}, ERR + "minDomains: must be an integer, got '2'", id="not-int"
        ),
        pytest.param(
            {"minDomains": 2, "whenUnsatisfiable": "ScheduleAnyway"},
            ERR + "minDomains: can only be used with whenUnsatisfiable: DoNotSchedule",
            id="minDomains-with-schedule-anyway",
        ),
        pytest.param(
            {"nodeAffinityPolicy": "Always"},
            ERR + 'nodeAffinityPolicy: must be "Honor" or "Ignore", got \'Always\'',
            id="bad-affinity-policy",
        ),
        pytest.param(
            {"nodeTaintsPolicy": "honor"},
            ERR + 'nodeTaintsPolicy: must be "Honor" or "Ignore", got \'honor\'',
            id="policies-are-case-sensitive",
        ),
        # kube-apiserver v1.34 (MatchLabelKeysInPodTopologySpreadSelectorMerge): the keys
        # are merged at create, then a key found twice in the selector is refused, at the
        # constraint's path and the key's index.
        pytest.param(
            {"matchLabelKeys": ["app"]},
            ERR[:-1] + '[0]: Invalid value: "app": exists in both matchLabelKeys and labelSelector',
            id="key-also-in-the-selector",
        ),
        pytest.param(
            {"matchLabelKeys": ["not a key"]},
            ERR + 'matchLabelKeys[0]: Invalid value: "not a key": a label key must be',
            id="invalid-key",
        ),
        pytest.param(
            {"matchLabelKeys": ["pod-template-hash"], "labelSelector": None},
            ERR + "matchLabelKeys: Forbidden: must not be specified when labelSelector is not set",
            id="keys-without-selector",
        ),
        pytest.param(
            {"nodeInclusionPolicy": "Honor"},
            ERR + "nodeInclusionPolicy: unknown field: the scheduler cannot honour a "
            "constraint it does not understand, so it does not place the pod",
            id="unknown-field-on-a-pending-pod",
        ),
    ],
)
def test_bad_constraints_are_refused_naming_the_field(fields: dict[str, Any], message: str) -> None:
    constraint = {**BASE, **fields}
    if fields.get("labelSelector", "") is None:
        del constraint["labelSelector"]
    manifest = pod("p", labels=LABELS, spread=[constraint])
    del manifest["metadata"]["uid"]  # as the API server would get it at create
    with pytest.raises(ObjectError) as caught:
        parse_pod(manifest)
    assert str(caught.value).startswith(message)


def test_a_placed_pods_unknown_constraint_field_does_not_lose_the_pod() -> None:
    # Its constraints never decide anything; dropping it would lose its resources.
    raw = pod("p", node_name="n1", spread=[{**BASE, "futureField": True}])
    assert parse_pod(raw).node_name == "n1"


def test_a_key_the_pod_lacks_may_also_be_in_the_selector() -> None:
    """v1.34 checks the merged selector: a key the pod does not carry merges nothing, so
    the user's own requirement on it is no duplicate (v1.33's rule refused it)."""
    constraint = {**BASE, "matchLabelKeys": ["app"]}
    raw = pod("p", labels={"tier": "web"}, spread=[constraint])
    del raw["metadata"]["uid"]
    (parsed_constraint,) = parse_pod(raw).spread_constraints
    assert parsed_constraint.selector.matches({"app": "web"})


def test_a_pod_a_v134_api_server_stored_is_read() -> None:
    """A pod from a v1.34 cluster carries the merged requirement beside its key; it is
    read (earlier this was refused as a key in both), and the scheduler's own merge of
    the same requirement changes nothing."""
    merged = {
        **BASE,
        "labelSelector": {
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "pod-template-hash", "operator": "In", "values": ["7d9f"]}
            ],
        },
        "matchLabelKeys": ["pod-template-hash"],
    }
    raw = pod("p", labels=LABELS, spread=[merged])  # with a uid: from a cluster
    (constraint,) = parse_pod(raw).spread_constraints
    assert len(constraint.selector.requirements) == 2
    assert constraint.selector.matches(LABELS)
    assert not constraint.selector.matches({"app": "web", "pod-template-hash": "old"})
