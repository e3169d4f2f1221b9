"""The legacy extender wire format: requests byte for byte, replies read as Go read them."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest

from builders import node, parsed_pod, pod
from policy_scheduler.documents import load_documents
from policy_scheduler.engine.extenders import (
    CompiledExtender,
    ExtenderError,
    FilterReply,
    MetaVictims,
    Victims,
)
from policy_scheduler.extending import (
    ReplyError,
    binding_args,
    extender_args,
    preemption_args,
    read_binding_reply,
    read_filter_reply,
    read_preemption_reply,
    read_prioritize_reply,
)
from policy_scheduler.objects import bodies_deferred, parse_node, parse_pod

URL = "http://ext:8888/scheduler"
PLAIN = CompiledExtender(URL, filter_verb="filter")
CACHING = CompiledExtender(URL, filter_verb="filter", node_cache_capable=True)


def keys_in_order(body: bytes) -> list[str]:
    return list(json.loads(body, object_pairs_hook=lambda pairs: [k for k, _ in pairs]))


def with_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    obj["metadata"]["managedFields"] = [{"manager": "kubelet", "operation": "Update"}]
    return obj


# -- requests ------------------------------------------------------------------------


def test_filter_args_carry_whole_nodes_in_a_node_list() -> None:
    raw_pod, raw_nodes = pod("p"), [node("n1"), with_managed_fields(node("n2"))]
    body = extender_args(
        parse_pod(raw_pod), [parse_node(n) for n in raw_nodes], node_cache_capable=False
    )
    # v1.13-v1.17's ExtenderArgs tags: pod, nodes; nodenames omitted (omitempty).
    assert keys_in_order(body) == ["pod", "nodes"]
    args = json.loads(body)
    del raw_nodes[1]["metadata"]["managedFields"]
    assert args["pod"] == raw_pod
    assert args["nodes"] == {"metadata": {}, "items": raw_nodes}


@pytest.mark.parametrize(
    "parse_inside",
    [
        pytest.param(lambda: contextlib.nullcontext(), id="encoded-when-parsed"),
        pytest.param(bodies_deferred, id="encoded-when-first-sent"),
    ],
)
def test_simulate_s_deferred_bodies_send_the_same_bytes(parse_inside: Any) -> None:
    raw_pod, raw_nodes = pod("p"), [with_managed_fields(node("n1"))]
    with parse_inside():
        parsed = parse_pod(raw_pod), [parse_node(n) for n in raw_nodes]
    body = extender_args(*parsed, node_cache_capable=False)
    del raw_nodes[0]["metadata"]["managedFields"]
    assert json.loads(body) == {"pod": raw_pod, "nodes": {"metadata": {}, "items": raw_nodes}}
    # Read again: the same bytes, encoded once.
    assert extender_args(*parsed, node_cache_capable=False) == body


def test_node_cache_capable_args_carry_names_only() -> None:
    body = extender_args(
        parsed_pod("p"), [parse_node(node("n1")), parse_node(node("n2"))], node_cache_capable=True
    )
    assert keys_in_order(body) == ["pod", "nodenames"]
    assert json.loads(body)["nodenames"] == ["n1", "n2"]


def test_the_pod_is_sent_without_managed_fields() -> None:
    raw = with_managed_fields(pod("p", requests={"example.com/gpu": "1"}))
    args = json.loads(extender_args(parse_pod(raw), [], node_cache_capable=True))
    del raw["metadata"]["managedFields"]
    assert args["pod"] == raw


@pytest.mark.parametrize(
    ("written", "sent"),
    [
        pytest.param("2024-01-01T10:00:00Z", "2024-01-01T10:00:00Z", id="utc"),
        pytest.param("2024-01-01 10:00:00", "2024-01-01T10:00:00Z", id="no-zone-is-utc"),
        pytest.param("2024-01-01T12:00:00+02:00", "2024-01-01T10:00:00Z", id="offset"),
        pytest.param("2024-01-01T10:00:00.5Z", "2024-01-01T10:00:00.500000Z", id="fraction"),
        pytest.param("2024-01-01", "2024-01-01T00:00:00Z", id="date"),
    ],
)
def test_unquoted_yaml_timestamps_are_sent_as_the_api_writes_them(written: str, sent: str) -> None:
    # YAML reads an unquoted timestamp as a date; the extender gets the API's string.
    [raw_node] = load_documents(
        f"kind: Node\nmetadata:\n  name: n1\n  creationTimestamp: {written}\n", "f"
    )
    [raw_pod] = load_documents(
        f"kind: Pod\nmetadata:\n  name: p\n  creationTimestamp: {written}\n", "f"
    )
    body = json.loads(
        extender_args(parse_pod(raw_pod), [parse_node(raw_node)], node_cache_capable=False)
    )
    assert body["pod"]["metadata"]["creationTimestamp"] == sent
    assert body["nodes"]["items"][0]["metadata"]["creationTimestamp"] == sent


def test_binding_args_are_the_go_field_names() -> None:
    p = parsed_pod("web-1", namespace="shop")
    assert binding_args(p, "n1") == (
        b'{"PodName":"web-1","PodNamespace":"shop","PodUID":"' + p.uid.encode() + b'","Node":"n1"}'
    )


def test_preemption_args_send_victims_whole_or_by_uid() -> None:
    preemptor = parsed_pod("big")
    victim = parse_pod(pod("small", node_name="n1", labels={"app": "x"}, priority=-5))
    candidates = {"n1": Victims((victim,), 1)}

    whole = preemption_args(preemptor, candidates, node_cache_capable=False)
    # ExtenderPreemptionArgs' tags: pod, nodeToVictims (nodeNameToMetaVictims omitted).
    assert keys_in_order(whole) == ["pod", "nodeToVictims"]
    args = json.loads(whole)
    identity = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "small",
            "namespace": "default",
            "uid": victim.uid,
            "labels": {"app": "x"},
        },
        "spec": {"schedulerName": "default-scheduler", "priority": -5, "nodeName": "n1"},
    }
    assert args["nodeToVictims"] == {"n1": {"pods": [identity], "numPDBViolations": 1}}

    by_uid = preemption_args(preemptor, candidates, node_cache_capable=True)
    assert keys_in_order(by_uid) == ["pod", "nodeNameToMetaVictims"]
    assert json.loads(by_uid)["nodeNameToMetaVictims"] == {
        "n1": {"pods": [{"uid": victim.uid}], "numPDBViolations": 1}
    }
    # No candidate left: both maps are omitted, as omitempty left them out.
    assert keys_in_order(preemption_args(preemptor, {}, node_cache_capable=True)) == ["pod"]


# -- filter replies ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("extender", "reply", "expected"),
    [
        pytest.param(CACHING, {"NodeNames": ["a"]}, FilterReply(("a",)), id="NodeNames"),
        pytest.param(
            CACHING,
            {"nodenames": ["a"], "failedNodes": {"b": "no GPU"}, "error": ""},
            FilterReply(("a",), {"b": "no GPU"}),
            id="versioned-tags",
        ),
        pytest.param(CACHING, {"NODENAMES": ["a"]}, FilterReply(("a",)), id="any-case"),
        pytest.param(
            CACHING, {"nodenames": ["a"], "NodeNames": ["b"]}, FilterReply(("b",)), id="last-wins"
        ),
        pytest.param(
            PLAIN,
            {"nodes": {"metadata": {}, "items": [{"metadata": {"name": "a"}}]}},
            FilterReply(("a",)),
            id="node-list",
        ),
        pytest.param(
            PLAIN,
            {"Nodes": {"Items": [{"Metadata": {"Name": "a"}}]}, "FailedNodes": {"B": "x"}},
            FilterReply(("a",), {"B": "x"}),
            id="node-list-any-case-node-names-exact",
        ),
        pytest.param(
            CACHING,
            {"nodenames": None, "nodes": {"items": [{"metadata": {"name": "a"}}]}},
            FilterReply(("a",)),
            id="cache-capable-answering-with-nodes",
        ),
        pytest.param(CACHING, {"nodenames": []}, FilterReply(()), id="none-pass"),
        pytest.param(PLAIN, {}, FilterReply(()), id="empty-object-passes-none"),
        pytest.param(PLAIN, None, FilterReply(()), id="null-passes-none"),
        pytest.param(
            PLAIN,
            {"nodenames": ["a"]},
            FilterReply(
                (),
                {},
                'extender "http://ext:8888/scheduler" returned NodeNames but is not '
                "nodeCacheCapable: they were ignored (no node passed), as kube-scheduler "
                "ignored them; set nodeCacheCapable: true or return Nodes",
            ),
            id="names-from-an-extender-that-is-not-cache-capable",
        ),
    ],
)
def test_filter_replies(extender: CompiledExtender, reply: Any, expected: FilterReply) -> None:
    assert read_filter_reply(extender, json.dumps(reply).encode()) == expected


def test_trailing_bytes_after_the_reply_are_ignored() -> None:
    assert read_filter_reply(CACHING, b' {"nodenames": ["a"]}\n{garbage') == FilterReply(("a",))


@pytest.mark.parametrize(
    ("body", "message"),
    [
        pytest.param(b"", "the reply is empty", id="empty"),
        pytest.param(b"<html>", "the reply is not JSON: Expecting value", id="not-json"),
        pytest.param(b"[1]", "the reply: expected an object, got an array", id="array"),
        pytest.param(
            b'{"nodenames": "a"}', "nodenames: expected an array, got a string", id="names-string"
        ),
        pytest.param(
            b'{"failedNodes": {"a": 1}}',
            "failedNodes['a']: expected a string, got a number",
            id="reason-number",
        ),
        pytest.param(b'{"error": 5}', "error: expected a string, got a number", id="error-number"),
        pytest.param(
            b'{"nodes": {"items": [{"metadata": {"name": 7}}]}}',
            "nodes.items[0].metadata.name: expected a string, got a number",
            id="node-name-number",
        ),
    ],
)
def test_unreadable_filter_replies(body: bytes, message: str) -> None:
    with pytest.raises(ReplyError) as info:
        read_filter_reply(CACHING, body)
    assert str(info.value).startswith(message)


@pytest.mark.parametrize("key", ["error", "Error", "ERROR"])
def test_an_error_in_the_filter_reply_fails_the_call(key: str) -> None:
    body = json.dumps({key: "GPU inventory unavailable", "nodenames": ["a"]}).encode()
    with pytest.raises(ExtenderError) as info:
        read_filter_reply(CACHING, body)
    assert str(info.value) == (
        'extender "http://ext:8888/scheduler" filter failed: GPU inventory unavailable'
    )


# -- other replies -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        pytest.param([{"host": "a", "score": 3}], [("a", 3)], id="tags"),
        pytest.param([{"Host": "a", "Score": 3}], [("a", 3)], id="go-names"),
        pytest.param([{"host": "a"}], [("a", 0)], id="no-score-is-zero"),
        pytest.param(
            [{"host": "a", "score": -4}, {"host": "a", "score": 12}],
            [("a", -4), ("a", 12)],
            id="as-listed",
        ),
        pytest.param(None, [], id="null"),
    ],
)
def test_prioritize_replies(reply: Any, expected: list[tuple[str, int]]) -> None:
    assert read_prioritize_reply(json.dumps(reply).encode()) == expected


@pytest.mark.parametrize(
    ("body", "message"),
    [
        pytest.param(
            b'[{"host": "a", "score": 2.5}]',
            "[0].score: expected an integer, got a number 2.5",
            id="fraction",
        ),
        pytest.param(
            b'[{"host": "a", "score": 5.0}]',
            "[0].score: expected an integer, got a number 5.0",
            id="float",
        ),
        pytest.param(
            b'[{"host": "a", "score": true}]',
            "[0].score: expected an integer, got a boolean true",
            id="boolean",
        ),
        pytest.param(
            b'{"host": "a", "score": 1}', "the reply: expected an array, got an object", id="object"
        ),
    ],
)
def test_unreadable_prioritize_replies(body: bytes, message: str) -> None:
    with pytest.raises(ReplyError) as info:
        read_prioritize_reply(body)
    assert str(info.value) == message


@pytest.mark.parametrize("body", [b"{}", b"null", b'{"Error": ""}', b'{"error": null}'])
def test_binding_replies_that_mean_bound(body: bytes) -> None:
    read_binding_reply(PLAIN, body)


def test_a_binding_reply_with_an_error_fails() -> None:
    with pytest.raises(ExtenderError) as info:
        read_binding_reply(PLAIN, b'{"Error": "pods \\"p\\" is forbidden"}')
    assert (
        str(info.value) == 'extender "http://ext:8888/scheduler" bind failed: pods "p" is forbidden'
    )


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        pytest.param(
            {"NodeNameToMetaVictims": {"n1": {"Pods": [{"UID": "u1"}], "NumPDBViolations": 1}}},
            {"n1": MetaVictims(("u1",), 1)},
            id="go-names",
        ),
        pytest.param(
            {"nodeNameToMetaVictims": {"n1": {"pods": [{"uid": "u1"}, {"uid": "u2"}]}}},
            {"n1": MetaVictims(("u1", "u2"), 0)},
            id="tags",
        ),
        pytest.param({}, {}, id="none-kept"),
        pytest.param(
            {"nodeNameToMetaVictims": {"n1": None}}, {"n1": MetaVictims(())}, id="null-victims"
        ),
    ],
)
def test_preemption_replies(reply: Any, expected: dict[str, MetaVictims]) -> None:
    assert read_preemption_reply(json.dumps(reply).encode()) == expected
