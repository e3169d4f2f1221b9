"""Absurd values get a clear error on the object and the field, at once, never a crash.

A quantity of 100 000 digits or with exponent 999999999, an int32 field set to 10**12,
a spec nested 3000 levels deep: each is refused with an ObjectError that names the
object and the field, quotes the value shortened, and costs no more than reading it.
"""

from __future__ import annotations

from typing import Any

import pytest

from builders import container, node, pod
from policy_scheduler.objects import ObjectError, parse_node, parse_pod
from policy_scheduler.quantities import QuantityError, int_value, milli_value, parse_quantity


def nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("1" * 100_000, r"is 100000 characters long \(at most 100\)", id="100k-digits"),
        pytest.param("1e999999999", "exponent out of range", id="huge-exponent"),
        pytest.param("1e-999999999", "exponent out of range", id="tiny-exponent"),
        pytest.param("0." + "0" * 200 + "1", "characters long", id="long-fraction"),
    ],
)
def test_absurd_quantity_strings_are_refused(text: str, message: str) -> None:
    with pytest.raises(QuantityError, match=message):
        parse_quantity(text)


@pytest.mark.parametrize(
    ("value", "convert", "message"),
    [
        pytest.param("1e30", int_value, "out of range", id="1e30-units"),
        pytest.param("9300000000000000000", int_value, "out of range", id="just-past-int64"),
        pytest.param("10P", milli_value, "out of range", id="10P-millicores"),
        pytest.param(10**40, int_value, "out of range", id="yaml-int"),
        pytest.param(1e300, milli_value, "out of range", id="yaml-float"),
        pytest.param("-1e30", int_value, "out of range", id="negative"),
    ],
)
def test_quantities_beyond_int64_are_refused(value: object, convert: Any, message: str) -> None:
    with pytest.raises(QuantityError, match=message):
        convert(value)


@pytest.mark.parametrize(
    ("value", "milli", "units"),
    [
        pytest.param("8Ei", None, 2**63, id="8Ei-units-too-big-by-one"),
        pytest.param("7Ei", None, 7 * 2**60, id="7Ei"),
        pytest.param("9223372036854775807", None, 2**63 - 1, id="int64-max"),
        pytest.param("9223372036854775m", 9223372036854775, 9223372036855, id="big-millicores"),
        pytest.param("1e-30", 1, 1, id="tiny-rounds-up"),
    ],
)
def test_the_edge_of_int64(value: str, milli: int | None, units: int) -> None:
    if milli is not None:
        assert milli_value(value) == milli
    if units > 2**63 - 1:
        with pytest.raises(QuantityError, match="out of range"):
            int_value(value)
    else:
        assert int_value(value) == units


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        pytest.param(
            pod("p", requests={"cpu": "9" * 100_000}),
            'Pod "default/p": spec.containers[0].resources.requests.cpu: not a quantity: '
            "'99999999999999999999999999999999'... is 100000 characters long (at most 100)",
            id="cpu-100k-digits",
        ),
        pytest.param(
            pod("p", requests={"memory": "1e999999999"}),
            'Pod "default/p": spec.containers[0].resources.requests.memory: not a quantity',
            id="memory-huge-exponent",
        ),
        pytest.param(
            pod("p", limits={"example.com/gpu": "1e40"}),
            'Pod "default/p": spec.containers[0].resources.limits.example.com/gpu: out of range',
            id="extended-resource-out-of-range",
        ),
        pytest.param(
            pod("p", priority=10**12),
            'Pod "default/p": spec.priority: must be a 32-bit integer '
            "(-2147483648..2147483647), got 1000000000000",
            id="priority-beyond-int32",
        ),
        pytest.param(
            pod("p", containers=[container(host_ports=[2**40])]),
            'Pod "default/p": spec.containers[0].ports[0].hostPort: must be a 32-bit integer',
            id="host-port-beyond-int32",
        ),
        pytest.param(
            pod(
                "p",
                spread=[
                    {
                        "maxSkew": 2**31,
                        "topologyKey": "zone",
                        "whenUnsatisfiable": "DoNotSchedule",
                    }
                ],
            ),
            'Pod "default/p": spec.topologySpreadConstraints[0].maxSkew: must be a 32-bit',
            id="max-skew-beyond-int32",
        ),
        pytest.param(
            pod(
                "p",
                tolerations=[{"key": "k", "operator": "Exists", "tolerationSeconds": 2**70}],
            ),
            'Pod "default/p": spec.tolerations[0].tolerationSeconds: must be a 64-bit integer',
            id="toleration-seconds-beyond-int64",
        ),
        pytest.param(
            pod("p", extraField=None, containers=[{"name": "c", "resources": nested(3000)}]),
            'Pod "default/p": spec.containers[0].resources: must be an object, got [[[[...]]]]',
            id="deep-value-quoted-shortly",
        ),
        pytest.param(
            pod("p", unknownField=nested(3000)),
            'Pod "default/p": spec: nested too deeply',
            id="deep-spec-cannot-be-digested",
        ),
        pytest.param(
            pod("p", labels={"a\nb": 1}),  # type: ignore[dict-item]
            "Pod \"default/p\": metadata.labels.'a\\nb': must be a string, got 1",
            id="label-key-with-newline-quoted",
        ),
    ],
)
def test_absurd_pod_fields_name_the_pod_and_the_field(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ObjectError) as caught:
        parse_pod(raw)
    text = str(caught.value)
    assert text.startswith(message), text
    assert "\n" not in text and len(text) < 300


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        pytest.param(
            node("n", cpu="1" * 100_000),
            'Node "n": status.allocatable.cpu: not a quantity',
            id="allocatable-100k-digits",
        ),
        pytest.param(
            node("n", images=[(["img:1"], 2**64)]),
            'Node "n": status.images[0].sizeBytes: must be a 64-bit integer',
            id="image-size-beyond-int64",
        ),
        pytest.param(
            node("n", images=[(["img:1", 7], 10)]),  # type: ignore[list-item]
            'Node "n": status.images[0].names[1]: must be a string, got 7',
            id="image-name-not-a-string",
        ),
    ],
)
def test_absurd_node_fields_name_the_node_and_the_field(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ObjectError) as caught:
        parse_node(raw)
    assert str(caught.value).startswith(message), str(caught.value)


def test_only_pods_to_decide_carry_a_fingerprint() -> None:
    # A bound pod is never decided nor queued again: digesting its spec was wasted work.
    pending = [parse_pod(pod(name, requests={"cpu": "1"})) for name in ("a", "b")]
    bound = parse_pod(pod("c", requests={"cpu": "1"}, node_name="n1"))
    assert pending[0].fingerprint and pending[0].fingerprint == pending[1].fingerprint
    other = parse_pod(pod("d", requests={"cpu": "2"}))
    assert other.fingerprint != pending[0].fingerprint
    assert bound.fingerprint == b""


def test_shared_parses_do_not_confuse_types() -> None:
    # Requests and tolerations are parsed once per distinct content; "300" and 300
    # (or True and 1) are different content, refused or accepted each on its own.
    good = {"key": "k", "operator": "Exists", "tolerationSeconds": 300}
    assert parse_pod(pod("a", tolerations=[good])).tolerations[0].toleration_seconds == 300
    for bad in ("300", True, 300.0):
        with pytest.raises(ObjectError, match="tolerationSeconds: must be an integer"):
            parse_pod(pod("b", tolerations=[{**good, "tolerationSeconds": bad}]))
    assert parse_pod(pod("c", requests={"cpu": "2"})).request.milli_cpu == 2000
    assert parse_pod(pod("d", requests={"cpu": 2})).request.milli_cpu == 2000
    with pytest.raises(ObjectError, match=r"requests\.cpu: not a quantity: True"):
        parse_pod(pod("e", requests={"cpu": True}))
