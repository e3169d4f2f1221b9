"""Hostile or broken input files: one clean line on stderr, exit 1, bounded work.

What a person gets from ``simulate``, ``validate`` and ``convert`` for a YAML alias bomb,
binary data, text that is not UTF-8, nesting thousands of levels deep, a file over the
size limit, numbers Python will not convert, and what still works: JSON read by
content whatever the file's name, several JSON documents in a row, stdin for
``simulate -f -`` and ``convert -``, both YAML loaders (libyaml's parser, pure Python).
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from builders import node
from builders import pod as any_pod
from policy_scheduler import documents
from policy_scheduler.cli import main

ROOT = Path(__file__).resolve().parents[2]
LEGACY = ROOT / "examples" / "legacy-policy.json"


def pod(name: str, **kwargs: Any) -> dict[str, Any]:
    """A pod for the default policy's schedulerName (simulate decides those)."""
    kwargs.setdefault("schedulerName", "policy-scheduler")
    return any_pod(name, **kwargs)


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def write(tmp_path: Path, name: str, content: str | bytes) -> str:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return str(path)


def alias_bomb(levels: int = 9, width: int = 10) -> str:
    """The "billion laughs": each level lists the previous one ``width`` times."""
    lines = ['a0: &a0 "lol"']
    for level in range(1, levels + 1):
        refs = ", ".join([f"*a{level - 1}"] * width)
        lines.append(f"a{level}: &a{level} [{refs}]")
    return "\n".join(lines) + "\n"


def config_map(data: str) -> str:
    """A kind the simulator ignores, carrying ``data`` (indented under it)."""
    body = "".join(f"  {line}\n" for line in data.splitlines())
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bomb\ndata:\n{body}"


BAD_INPUTS = [
    pytest.param(
        config_map(alias_bomb()),
        "aliases expand to more than 100000 nodes (an alias bomb?); "
        "objects from kubectl use no aliases",
        id="billion-laughs",
    ),
    pytest.param(
        "a: &a [1, *a]\n",
        "alias *a refers to a collection that contains it (a recursive structure)",
        id="recursive-alias",
    ),
    pytest.param("a: &x 1\nb: &x 2\n", "duplicate anchor &x (first at line 1)", id="dup-anchor"),
    pytest.param("a: *nowhere\n", "found undefined alias 'nowhere'", id="undefined-alias"),
    pytest.param(
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10",
        "binary data, not YAML or JSON text",
        id="binary-png",
    ),
    pytest.param(
        b"\x1f\x8b\x08\x00" + bytes(range(1, 32)) * 4,
        "binary data, not YAML or JSON text",
        id="binary-gzip-no-nul",
    ),
    pytest.param(
        "kind: Node\nmetadata:\n  name: caf\xe9\n".encode("latin-1"),
        "not UTF-8 text: byte 0xe9 at offset 32 (line 3)",
        id="latin-1",
    ),
    pytest.param(
        "a: " + "{a: " * 5000 + "1" + "}" * 5000,
        "nested more than 1000 levels deep",
        id="deep-{a:-yaml",
    ),
    pytest.param(
        "a: " + "[a, " * 100_000 + "]" * 100_000,
        "nested more than 1000 levels deep",
        id="100k-deep-crashed-libyaml",
    ),
    pytest.param("- " * 5000 + "x\n", "nested more than 1000 levels deep", id="deep-compact"),
    pytest.param(
        "".join(" " * i + "a:\n" for i in range(3000)) + " " * 3000 + "x\n",
        "nested more than 1000 levels deep",
        id="deep-block-style",
    ),
    pytest.param("[" * 5000 + "]" * 5000, "nested too deeply", id="deep-[-json"),
    pytest.param('{"a": ' * 5000 + "1" + "}" * 5000, "nested too deeply", id="deep-{-json"),
    pytest.param(
        '{"kind": "Node", "n": ' + "7" * 5000 + "}",
        "not valid JSON: an integer has more than 4300 digits",
        id="json-5000-digits",
    ),
    pytest.param(
        "kind: Node\nn: " + "7" * 5000 + "\n",
        "not valid YAML: an integer has more than 4300 digits",
        id="yaml-5000-digits",
    ),
    pytest.param(
        "kind: Pod\nmetadata:\n  creationTimestamp: 2024-02-30\n",
        "not valid YAML: day is out of range for month",
        id="impossible-date",
    ),
    pytest.param(
        "kind: Node\nmetadata:\n  name: a\n bad: indentation\n",
        "not valid YAML: line 4, column 2: ",
        id="yaml-syntax",
    ),
    pytest.param(
        '{"kind": "Node"\n "metadata": {"name": "a"}}',
        "not valid JSON: line 2, column 2: Expecting ',' delimiter",
        id="json-syntax",
    ),
    pytest.param(
        "kind: Node\nname: \x01\n",
        "not valid YAML: line 2, column 7: control character #x0001 is not allowed",
        id="control",
    ),
    pytest.param(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "leaderElection:\n  leaderElect: true\n  resourceName: x\n  leaderElect: false\n",
        # kube-scheduler's strict decoding refuses a duplicate key, naming it and its line.
        'not valid YAML: line 6, column 3: key "leaderElect" already set in map',
        id="duplicate-key",
    ),
    pytest.param(
        '{"kind": "Node", "metadata": {"name": "a", "labels": {}, "name": "b"}}\n',
        'not valid JSON: key "name" already set in map',
        id="duplicate-json-key",
    ),
]


@pytest.mark.parametrize(("content", "message"), BAD_INPUTS)
@pytest.mark.parametrize("command", ["simulate", "validate"])
def test_bad_input_gets_one_line_naming_the_file(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    content: str | bytes,
    message: str,
    command: str,
) -> None:
    path = write(tmp_path, "input.yaml", content)
    argv = ["simulate", "-f", path] if command == "simulate" else ["validate", path]
    code, out, err = run(argv, capsys)
    assert code == 1
    assert out == ""
    assert err.startswith(f"error: {path}: "), err
    assert message in err, err
    assert err.count("\n") == 1 and len(err) < 400, err


@pytest.mark.parametrize(("content", "message"), BAD_INPUTS)
def test_a_file_decoded_from_a_memory_map_gets_the_same_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    content: str | bytes,
    message: str,
) -> None:
    # Big files (MAP_BYTES and more) are decoded from a memory map: here every file is.
    monkeypatch.setattr(documents, "MAP_BYTES", 1)
    path = write(tmp_path, "input.yaml", content)
    code, out, err = run(["simulate", "-f", path], capsys)
    assert (code, out) == (1, "")
    assert err.startswith(f"error: {path}: "), err
    assert message in err, err
    assert err.count("\n") == 1 and len(err) < 400, err


@pytest.mark.parametrize(("content", "message"), BAD_INPUTS)
def test_convert_refuses_the_same_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    path = write(tmp_path, "old-policy.yaml", content)
    code, _, err = run(["convert", path], capsys)
    assert code == 1
    assert err.startswith(f"error: {path}: ") and message in err, err
    assert err.count("\n") == 1


@pytest.fixture(params=["libyaml", "pure-python"])
def loader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Each YAML test once per loader: the pure one is what runs without libyaml."""
    if request.param == "libyaml":
        c_loader = documents._c_loader()
        if c_loader is None:
            pytest.skip("PyYAML was built without libyaml")
        monkeypatch.setattr(documents, "_Loader", c_loader)
    else:
        monkeypatch.setattr(documents, "_Loader", documents._PyLoader)
    yield request.param


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(alias_bomb(), "aliases expand to more than 100000 nodes", id="bomb"),
        pytest.param("- " * 5000 + "x", "nested more than 1000 levels deep", id="deep"),
        pytest.param("a: &a [*a]", "refers to a collection that contains it", id="recursive"),
    ],
)
def test_both_yaml_loaders_enforce_the_limits(loader: str, text: str, message: str) -> None:
    with pytest.raises(documents.InputError, match=message):
        documents.load_documents(text, "f")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # libyaml 0.2.6 (PyYAML 6.0.4) has a nesting limit of its own, worded its own way.
        pytest.param(
            "a: " + "{a: " * 1100 + "1" + "}" * 1100,
            "f: not valid YAML: line 1, column 4000: collections nested more than 1000 levels deep",
            id="flow",
        ),
        pytest.param(
            "a: " + "[" * 1100 + "]" * 1100,
            "f: not valid YAML: line 1, column 1003: collections nested more than 1000 levels deep",
            id="flow-sequence",
        ),
        pytest.param(
            "".join(" " * i + "a:\n" for i in range(1100)) + " " * 1100 + "x\n",
            "collections nested more than 1000 levels deep",
            id="block",
        ),
        # The pure-Python reader checks characters when it is built, libyaml's later.
        pytest.param(
            "kind: Node\nname: \x01\n",
            "f: not valid YAML: line 2, column 7: control character #x0001 is not allowed",
            id="control-character",
        ),
        pytest.param(
            "a: x\nb: \x7f\n",
            "f: not valid YAML: line 2, column 4: control character #x007f is not allowed",
            id="delete-character",
        ),
    ],
)
def test_both_yaml_loaders_say_it_in_the_same_words(loader: str, text: str, message: str) -> None:
    with pytest.raises(documents.InputError) as caught:
        documents.load_documents(text, "f")
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_both_yaml_loaders_read_what_pyyaml_reads(loader: str) -> None:
    text = (ROOT / "examples" / "cluster.yaml").read_text()
    text += (
        "---\n"
        "anchors: &base {cpu: 1, tags: [a, b]}\n"
        "merged: {<<: *base, memory: 2Gi}\n"
        "again: *base\n"
        "scalars: [1, 1.5, true, null, ~, 0x1f, 2024-01-01, '2024-01-01', !!str 3, !!binary aGk=]\n"
        "--- \n"
        "...\n"
    )
    assert documents.load_documents(text, "f") == list(yaml.safe_load_all(text))


@pytest.mark.parametrize(
    ("depth", "ok"),
    [pytest.param(1000, True, id="at-the-limit"), pytest.param(1001, False, id="one-past")],
)
def test_the_depth_limit_is_exact_for_yaml(loader: str, depth: int, ok: bool) -> None:
    # "a: " opens the first level: a YAML text starting with "{" would be JSON.
    text = "a: " + "{a: " * (depth - 1) + "1" + "}" * (depth - 1)
    if ok:
        assert documents.load_documents(text, "f")
    else:
        with pytest.raises(documents.InputError, match="nested more than 1000"):
            documents.load_documents(text, "f")


def test_aliases_within_the_limit_are_read(loader: str) -> None:
    # Hand-written files may share a block; 99 copies of 1000 nodes stay under the limit.
    block = "{" + ", ".join(f"k{i}: v" for i in range(500)) + "}"
    text = f"base: &b {block}\ncopies: [{', '.join(['*b'] * 99)}]\n"
    [doc] = documents.load_documents(text, "f")
    assert len(doc["copies"]) == 99 and doc["copies"][0] is doc["base"]


def test_input_over_the_size_limit_is_refused_before_reading(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(documents, "MAX_INPUT_BYTES", 1024 * 1024)
    path = write(tmp_path, "big.json", json.dumps({"kind": "List", "items": ["x" * 2 * 1024**2]}))
    code, _, err = run(["simulate", "-f", path], capsys)
    assert code == 1
    assert err == f"error: {path}: input too large (2 MiB or more; at most 1 MiB are read)\n"


def test_stdin_over_the_size_limit_is_refused(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(documents, "MAX_INPUT_BYTES", 1000)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"#" * 5000)))
    code, _, err = run(["simulate", "-f", "-"], capsys)
    assert code == 1 and err.startswith("error: -: input too large"), err


def kubectl_json(*items: dict[str, Any]) -> str:
    listing = {"apiVersion": "v1", "items": list(items), "kind": "List", "metadata": {}}
    return json.dumps(listing, indent=4)


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("cluster.json", id="json-name"),
        pytest.param("cluster.yaml", id="yaml-name"),
        pytest.param("cluster", id="no-extension"),
    ],
)
def test_json_is_recognised_by_its_content(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    path = write(tmp_path, name, kubectl_json(node("a"), pod("p")))
    code, out, _ = run(["simulate", "-f", path, "-o", "summary"], capsys)
    assert (code, out) == (0, "default/p -> a\n")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            '{"kind": "List", "items": [],}',
            "line 1, column 30: Expecting property name enclosed in double quotes",
            id="trailing-comma-yaml-would-forgive",
        ),
        pytest.param(
            "{kind: Node, metadata: {name: a}}",
            "line 1, column 2: Expecting property name enclosed in double quotes",
            id="yaml-flow-mapping-at-the-top",
        ),
    ],
)
def test_text_that_starts_with_a_brace_is_json_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    # As Kubernetes' YAMLOrJSONDecoder (and so kubectl) tells JSON from YAML.
    path = write(tmp_path, "c.yaml", text)
    code, _, err = run(["simulate", "-f", path], capsys)
    assert code == 1
    assert err == f"error: {path}: not valid JSON: {message}\n"


def test_json_indented_with_tabs_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # YAML refuses tabs for indentation; JSON files often use them.
    text = json.dumps({"kind": "List", "items": [node("a"), pod("p")]}, indent="\t")
    path = write(tmp_path, "c.json", text)
    code, out, _ = run(["simulate", "-f", path, "-o", "summary"], capsys)
    assert (code, out) == (0, "default/p -> a\n")


def test_json_documents_one_after_another(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # What `kubectl get -o json` of several names, or `-w`, writes: values in a row.
    text = "\n".join(json.dumps(obj, indent=2) for obj in (node("a"), pod("p"), pod("q")))
    path = write(tmp_path, "c.json", "\ufeff" + text)
    code, out, _ = run(["simulate", "-f", path, "-o", "summary"], capsys)
    assert (code, out) == (0, "default/p -> a\ndefault/q -> a\n")


@pytest.mark.parametrize(
    ("content", "encoding"),
    [
        pytest.param(kubectl_json(node("a"), pod("p")), "utf-8-sig", id="utf-8-bom"),
        pytest.param(yaml.safe_dump_all([node("a"), pod("p")]), "utf-16", id="utf-16-bom"),
        pytest.param(yaml.safe_dump_all([node("a"), pod("p")]), "utf-32", id="utf-32-bom"),
    ],
)
@pytest.mark.parametrize("mapped", [False, True], ids=["read", "memory-mapped"])
def test_byte_order_marks_choose_the_encoding(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    content: str,
    encoding: str,
    mapped: bool,
) -> None:
    monkeypatch.setattr(documents, "MAP_BYTES", 1 if mapped else documents.MAX_INPUT_BYTES)
    path = write(tmp_path, "c.yaml", content.encode(encoding))
    code, out, _ = run(["simulate", "-f", path, "-o", "summary"], capsys)
    assert (code, out) == (0, "default/p -> a\n")


def stdin_of(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))


def test_simulate_reads_stdin(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    stdin_of(monkeypatch, kubectl_json(node("a"), pod("p")).encode())
    code, out, _ = run(["simulate", "-f", "-", "-o", "summary"], capsys)
    assert (code, out) == (0, "default/p -> a\n")


def test_convert_reads_stdin(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, from_file, _ = run(["convert", str(LEGACY)], capsys)
    assert code == 0
    stdin_of(monkeypatch, LEGACY.read_bytes())
    code, from_stdin, _ = run(["convert", "-"], capsys)
    assert code == 0
    assert from_stdin == from_file
    assert yaml.safe_load(from_stdin)["kind"] == "SchedulingPolicy"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param("", "error: Policy: must be a JSON or YAML object, got NoneType", id="empty"),
        pytest.param(
            "predicates: []\n---\npredicates: []\n",
            "error: -: expected one legacy Policy, found 2 documents",
            id="two-documents",
        ),
        pytest.param("predicates: [\n", "error: -: not valid YAML: line 2, column 1:", id="broken"),
    ],
)
def test_convert_stdin_errors_name_stdin(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    content: str,
    message: str,
) -> None:
    stdin_of(monkeypatch, content.encode())
    code, _, err = run(["convert", "-"], capsys)
    assert code == 1 and err.startswith(message), err


@pytest.mark.parametrize(
    "text",
    ["x: 0\nk: 1\nk: 2\n", "s: !!set {x}\nk: 1\nk: 2\n"],
    ids=["plain", "explicit-tags"],
)
def test_both_yaml_loaders_refuse_a_key_given_twice(loader: str, text: str) -> None:
    # Both ways of building (straight from events, PyYAML's nodes for explicit tags).
    with pytest.raises(documents.InputError, match='line 3, column 1: key "k" already set'):
        documents._yaml_documents(text, "f")
