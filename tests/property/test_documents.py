"""Reading input: any bytes or text decode to documents or raise InputError, one line.

And what was written by ``json.dumps`` / ``yaml.safe_dump`` reads back as it was, through
either YAML loader.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from policy_scheduler import documents
from policy_scheduler.documents import InputError, decode_text, load_documents
from property.strategies import examples, json_values, succeeds_or_raises


def no_nan(value: Any) -> bool:
    if isinstance(value, float):
        return not math.isnan(value)
    if isinstance(value, list):
        return all(no_nan(v) for v in value)
    if isinstance(value, dict):
        return all(no_nan(v) for v in value.values())
    return True


def one_line(call: Any) -> Any:
    try:
        return call()
    except InputError as exc:
        assert "\n" not in str(exc) and len(str(exc)) < 500, str(exc)
        return None


@settings(max_examples=examples(400))
@given(data=st.binary(max_size=300))
def test_any_bytes_decode_or_are_refused(data: bytes) -> None:
    text = one_line(lambda: decode_text(data, "f"))
    if text is not None:
        one_line(lambda: load_documents(text, "f"))


@settings(max_examples=examples(400))
@given(
    text=st.one_of(
        st.text(max_size=300),
        st.text(alphabet="{}[]:,-&*! \n\"'|>#?", max_size=200),
        json_values.map(json.dumps).map(lambda t: t[: len(t) // 2]),  # truncated JSON
    )
)
def test_any_text_loads_or_is_refused(text: str) -> None:
    one_line(lambda: load_documents(text, "f"))


@pytest.fixture(params=["libyaml", "pure-python"])
def loader(request: pytest.FixtureRequest) -> Any:
    if request.param == "libyaml":
        found = documents._c_loader()
        if found is None:
            pytest.skip("PyYAML was built without libyaml")
        return found
    return documents._PyLoader


@settings(max_examples=examples(200))
@given(value=json_values.filter(no_nan))
def test_shared_objects_come_back_shared(value: Any) -> None:
    # safe_dump writes an object met twice as an anchor and an alias.
    shared = [value, {"k": value}]
    text = yaml.safe_dump({"a": shared, "b": shared, "c": [shared, shared]})
    doc = load_documents(text, "f")[0]
    assert doc == {"a": shared, "b": shared, "c": [shared, shared]}
    assert doc["a"] is doc["b"] is doc["c"][0] is doc["c"][1]


@settings(max_examples=examples(300))
@given(value=json_values.filter(no_nan))
def test_what_was_written_reads_back(value: Any) -> None:
    # JSON is recognised by its first character, { or [: what kubectl writes.
    assert load_documents(json.dumps([value]), "f") == [[value]]
    assert load_documents(json.dumps({"v": value}, indent=4), "f") == [{"v": value}]
    assert load_documents(yaml.safe_dump(value, explicit_start=True), "f") == [value]


def test_what_was_written_reads_back_with_each_loader(
    loader: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(documents, "_Loader", loader)

    @settings(max_examples=examples(200))
    @given(value=json_values.filter(no_nan))
    def check(value: Any) -> None:
        # Explicitly started, as kubectl's YAML is: a first document written "[]" would
        # be JSON (see test_text_that_starts_with_a_brace_is_json_only).
        text = yaml.safe_dump_all([value, {"second": value}], explicit_start=True)
        assert load_documents(text, "f") == [value, {"second": value}]

    check()


#: YAML text that exercises anchors, aliases, merge keys, tags and odd keys.
yaml_texts = st.one_of(
    st.text(alphabet="ab: -[]{}&*\n", max_size=120),
    st.text(alphabet="ab1: -[]{}&*<=!,?|>'\"\n", max_size=80),
    st.lists(
        st.sampled_from(
            [
                "a: &a {x: 1, y: [1, 2]}",
                "b: &b {x: 2, z: 3}",
                "c: {<<: *a}",
                "d: {<<: [*a, *b], x: 9}",
                "e: {<<: *b, <<: *a}",
                "f: [*a, *a, *b]",
                "g: !!str 12",
                "h: !!set {p, q}",
                "i: !!omap [{k: 1}]",
                "j: !custom 1",
                "k: {=: eq}",
                "l: <<",
                "m: {<<: 1}",
                "n: &n [*n]",
                "o: {? [1] : 2}",
                "p: !!binary aGVsbG8=",
                "q: 2024-01-01T10:00:00Z",
                "r: {<<: [*a, 3]}",
                "s: !!seq x",
            ]
        ),
        max_size=6,
    ).map("\n".join),
)


@settings(max_examples=examples(300))
@given(text=yaml_texts)
def test_both_loaders_agree_with_pyyaml(text: str) -> None:
    # Where PyYAML's own safe loader (C or pure, as ours) reads a text, ours reads the
    # same documents; where it refuses, ours refuses too (limits aside, which such small
    # texts never reach, and recursive aliases, which PyYAML builds and ours refuses).
    pairs = [(documents._PyLoader, yaml.SafeLoader)]
    if documents._c_loader() is not None:
        pairs.append((documents._c_loader(), yaml.CSafeLoader))
    for ours, theirs in pairs:
        try:
            expected = list(yaml.load_all(text, Loader=theirs))
        except (yaml.YAMLError, ValueError, RecursionError):
            expected = None
        got = succeeds_or_raises(
            lambda ours=ours: documents._yaml_documents(text, "f", ours), InputError
        )
        if expected is None:
            assert got is None, (ours, text)
        elif got is not None:
            assert got == expected, (ours, text)
        else:
            # ...and keys given twice, which PyYAML lets the last win and ours refuses.
            with pytest.raises(InputError, match=r"recursive structure|already set in map"):
                documents._yaml_documents(text, "f", ours)
