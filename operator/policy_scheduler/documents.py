"""Documents from files: JSON or YAML bytes in, plain Python objects out, safely and fast.

This is the one door through which the offline commands (``simulate``, ``validate``,
``convert``) read a file or stdin. How it reads:

1. **Bytes, bounded.** At most :data:`MAX_INPUT_BYTES` are read (a file's size is checked
   before it is read; stdin is read up to one byte more than the limit), and no read
   reserves more memory than the input needs: a file in one read of its size, stdin in
   chunks (``validate`` of a 2 KB policy works under ``ulimit -v 500000``). A regular file
   of :data:`MAP_BYTES` or more is mapped into memory and decoded from there, not copied
   first: the copy of a 140 MB dump cost 36 000 page faults (~0.15 s) for nothing.
2. **Text.** A byte-order mark chooses UTF-16 or UTF-32 (YAML allows them); otherwise the
   bytes must be UTF-8 (a leading BOM is dropped). A NUL byte, or mostly control bytes, in
   the first 8 KiB means binary data, refused as such rather than as bad text.
3. **JSON by content**, whatever the file is called: text whose first character is ``{``
   or ``[`` is JSON, and only JSON, decoded by the ``json`` module (C speed; ``kubectl
   get -o json`` output), several JSON values one after another included. That is how
   Kubernetes' own decoders (``YAMLOrJSONDecoder``) tell them apart: JSON indented with
   tabs (which YAML refuses) is read, a trailing comma (which YAML forgives) is an error,
   and so is a YAML flow mapping ``{a: 1}`` at the top, as kubectl says too. A key
   given twice in one object is refused (``key "name" already set in map``), as
   kube-scheduler's strict decoding refuses it.
4. **YAML** is parsed by libyaml's C parser when PyYAML was built with it, else by the
   pure-Python one, and built here straight from the parser's events into plain data,
   with PyYAML's *safe* constructors for the scalars (plain data only: no Python
   objects, ever), merge keys and shared objects for aliases, as ``yaml.safe_load``
   builds them, except that a key given twice in one mapping is refused, naming the key
   and its line (``line 7, column 3: key "leaderElect" already set in map``), as
   kube-scheduler's strict decoding (sigs.k8s.io/yaml) refuses it. Building from events
   skips PyYAML's composed node tree (a node and two
   marks per scalar: ``CSafeLoader`` peaks at ~40 times the size of the text, this at
   ~10). A document with explicit collection tags (``!!set``, ``!!omap``, a custom
   ``!tag``) goes PyYAML's way instead: nodes (composed here, with the same limits),
   then the safe constructor. Neither way recurses, and both enforce two limits PyYAML
   has not:

   * depth: collections nested more than :data:`MAX_DEPTH` levels are refused
     (libyaml's own composer overflows the C stack on 100 000 ``[`` and kills the
     process; PyYAML's Python one raises RecursionError at ~1000). libyaml 0.2.6 (in
     PyYAML 6.0.4's wheels) has a parser limit of its own, also 1000 levels (counting
     block indentation, one more than the collections), said in its own words: whichever
     refuses, the message is this module's, :data:`TOO_DEEP`;
   * aliases: an alias counts as a copy of what it names, for what reads the data later
     walks it that many times. Aliases may add at most :data:`MAX_ALIAS_NODES` nodes to a
     document; a "billion laughs" document is refused as soon as its aliases pass that,
     before any of it is built. An alias to a collection that contains it (a recursive
     structure) is refused too. Kubernetes objects written by ``kubectl`` never use
     anchors or aliases; hand-written files may, within the limit.

   YAML reads at ~2 MB/s (libyaml) against ~200 MB/s for JSON: for a big cluster,
   ``kubectl get -o json``.

Every failure is an :class:`InputError` with a one-line message naming the source,
and a line and column where the parser gives one (the limits and a refused character in
this module's words, whichever parser and version read the text): binary data, bad
encoding, too big, too deep, too many aliases, malformed JSON or YAML, a number Python
refuses to convert (an integer of more than 4300 digits), an impossible date. The
garbage collector is paused while a document is decoded: decoding allocates millions of
containers that all live on, and each collection pass would walk them again for nothing
(json.loads of a 140 MB dump: 2.0 s with it, 0.7 s without).
"""

from __future__ import annotations

import codecs
import contextlib
import gc
import json
import mmap
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from types import GeneratorType
from typing import IO, Any, Final

import yaml
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.events import (
    AliasEvent,
    DocumentEndEvent,
    DocumentStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
    StreamStartEvent,
)
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import Resolver
from yaml.scanner import Scanner

#: The largest input read, in bytes. A 5000-node cluster with 11 000 pods is ~150 MB of
#: ``kubectl get -o json``; decoded it takes about 3.5 times its size in memory.
MAX_INPUT_BYTES: Final = 1024**3
#: Deepest nesting of collections read (kubectl's objects nest fewer than 20 levels).
MAX_DEPTH: Final = 1000
#: Nodes that aliases may add to one YAML document, counting each alias as a copy.
MAX_ALIAS_NODES: Final = 100_000
#: How much of the start of the input the binary check looks at (as git and diff do).
BINARY_SNIFF: Final = 8192

STDIN: Final = "-"

_BOMS: Final = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
#: Bytes that text files hardly contain (all C0 controls but tab, newlines, form feed, ESC).
_CONTROL_BYTES: Final = bytes(sorted(set(range(0x20)) - {0x09, 0x0A, 0x0C, 0x0D, 0x1B}))
_SPACE: Final = re.compile(r"[ \t\r\n]*")


class InputError(ValueError):
    """Input that cannot be read as documents; the message names the source."""


class DocumentError(InputError):
    """Text that is not valid JSON or YAML, or over a limit: ``SOURCE: not valid LANG: ...``."""

    def __init__(self, source: str, language: str, detail: str) -> None:
        super().__init__(f"{source}: not valid {language}: {detail}")
        self.source = source
        self.language = language
        self.detail = detail


# -- bytes and text ----------------------------------------------------------------------


def read_bytes(source: str | Path) -> bytes:
    """The bytes of a file, or of stdin for ``-``, refusing more than MAX_INPUT_BYTES."""
    name = str(source)
    try:
        if name == STDIN:
            data = _read_at_most(sys.stdin.buffer, MAX_INPUT_BYTES, READ_CHUNK)
        else:
            with open(source, "rb") as handle:
                size = _size(handle)
                if size > MAX_INPUT_BYTES:
                    raise InputError(_too_big(name, size))
                data = _read_at_most(handle, MAX_INPUT_BYTES, size or READ_CHUNK)
    except OSError as exc:
        raise InputError(f"{name}: {exc.strerror or exc}") from None
    if len(data) > MAX_INPUT_BYTES:
        raise InputError(_too_big(name, len(data)))
    return data


#: What one read asks for when the size is not known (a pipe, stdin).
READ_CHUNK: Final = 1024**2


def _read_at_most(stream: IO[bytes], limit: int, expected: int) -> bytes:
    """At most ``limit + 1`` bytes of ``stream``, never asking for more than may come.

    ``read(n)`` allocates its n bytes before reading: ``read(MAX_INPUT_BYTES + 1)``
    reserved 1 GiB for a 2 KB policy and failed with MemoryError where address space is
    limited (``ulimit -v``, a small machine without overcommit). A regular file is read
    in one call of its size (plus one byte, to see it grow); anything else in chunks.
    """
    first = stream.read(min(expected, limit) + 1)
    if len(first) <= expected or not first:
        return first  # the end, or short of it: nothing more is waiting
    chunks = [first]
    total = len(first)
    while total <= limit:
        chunk = stream.read(min(READ_CHUNK, limit + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


#: From this size on, a regular file is decoded from a memory map of it.
MAP_BYTES: Final = 1024**2


def read_text(source: str | Path) -> str:
    """:func:`decode_text` of :func:`read_bytes`, a big file decoded from a memory map."""
    name = str(source)
    if name != STDIN:
        try:
            with open(source, "rb") as handle:
                size = _size(handle)
                if size > MAX_INPUT_BYTES:
                    raise InputError(_too_big(name, size))
                if size >= MAP_BYTES:
                    with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
                        return decode_text(mapped, name)
        except OSError as exc:
            raise InputError(f"{name}: {exc.strerror or exc}") from None
    return decode_text(read_bytes(source), name)


def _size(handle: IO[bytes]) -> int:
    try:
        return os.fstat(handle.fileno()).st_size
    except (OSError, ValueError):  # not a regular file: the read itself is bounded
        return 0


def _too_big(name: str, size: int) -> str:
    return (
        f"{name}: input too large ({_mib(size)} or more; at most {_mib(MAX_INPUT_BYTES)} are read)"
    )


def _mib(size: int) -> str:
    return f"{size / 1024**2:.0f} MiB"


def decode_text(data: bytes | mmap.mmap, source: str) -> str:
    """The text of ``data``: UTF-8 (or UTF-16/32 with a BOM); binary data refused."""
    start = data[:4]
    for bom, codec in _BOMS:
        if start.startswith(bom):
            try:
                return codecs.decode(data, codec)
            except UnicodeDecodeError as exc:
                raise InputError(f"{source}: not {codec.upper()} text: {exc.reason}") from None
    head = data[:BINARY_SNIFF]
    controls = len(head) - len(head.translate(None, _CONTROL_BYTES))
    if b"\0" in head or controls * 10 > len(head):
        raise InputError(f"{source}: binary data, not YAML or JSON text")
    try:
        return codecs.decode(data, "utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(
            f"{source}: not UTF-8 text: byte 0x{data[exc.start]:02x} at offset {exc.start} "
            f"(line {line})"
        ) from None


# -- documents ---------------------------------------------------------------------------


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """No garbage collection inside: for bulk work that builds long-lived acyclic data.

    What was made inside is handed to the oldest generation on the way out, unless the
    process froze objects of its own (``gc.freeze``): all of it is still in the youngest,
    and the first collection after the pause would walk all of it at once (a 5000-node
    cluster: ~4 million objects, a third of a second) to conclude the same.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if not gc.get_freeze_count():
                # freeze() empties the young generations (and their count), unfreeze()
                # puts everything in the oldest: no object is walked.
                gc.freeze()
                gc.unfreeze()
            gc.enable()


def load_documents(text: str, source: str) -> list[Any]:
    """Every document in ``text`` (JSON values or YAML documents), in order.

    Empty YAML documents are ``None``; what a document holds is not checked here.
    """
    start = _SPACE.match(text).end()  # type: ignore[union-attr]  # always matches
    with collector_paused():
        if text.startswith(("{", "["), start):
            try:
                return _json_documents(text, start)
            except json.JSONDecodeError as exc:
                raise DocumentError(
                    source, "JSON", f"line {exc.lineno}, column {exc.colno}: {exc.msg}"
                ) from None
            except _DuplicateKey as exc:
                raise DocumentError(source, "JSON", str(exc)) from None
            except (ValueError, RecursionError) as exc:
                raise DocumentError(source, "JSON", _number_or_depth(exc)) from None
        return _yaml_documents(text, source)


def read_file_documents(source: str | Path) -> list[Any]:
    """``load_documents`` of a file, or of stdin for ``-``."""
    name = str(source)
    return load_documents(read_text(source), name)


class _DuplicateKey(ValueError):
    """A JSON object names a key twice (the decoder's hook has no position to give)."""


def _strict_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # kube-scheduler's strict decoding refuses a duplicate key; so does this.
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(f"key {_quoted(key)} already set in map")
            seen.add(key)
    return obj


def _json_documents(text: str, start: int) -> list[Any]:
    decoder = json.JSONDecoder(object_pairs_hook=_strict_object)
    documents = []
    end = len(text)
    while start < end:
        document, start = decoder.raw_decode(text, start)
        documents.append(document)
        start = _SPACE.match(text, start).end()  # type: ignore[union-attr]
    return documents


def _number_or_depth(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        # The json module's own limit, the interpreter's recursion limit: about MAX_DEPTH.
        return f"nested too deeply (more than about {MAX_DEPTH} levels)"
    text = str(exc)
    if "integer string conversion" in text:
        # Python refuses to convert more than 4300 digits (CVE-2020-10735).
        return "an integer has more than 4300 digits"
    return text


# -- YAML --------------------------------------------------------------------------------


def _yaml_documents(text: str, source: str, loader_class: type[Any] | None = None) -> list[Any]:
    loader_class = loader_class or _Loader
    try:
        # Inside the try: the pure-Python reader checks the characters as it is built.
        loader = loader_class(text)
    except yaml.YAMLError as exc:
        raise DocumentError(source, "YAML", _yaml_error(exc, text)) from None
    try:
        try:
            return loader.build_documents()  # type: ignore[no-any-return]
        except _Unusual:
            pass
        # Explicit collection tags (!!set, !!omap, a custom !tag): PyYAML's way, nodes
        # first (with this module's limits), then the safe constructor.
        loader.dispose()
        loader = loader_class(text)
        documents = []
        while loader.check_data():
            documents.append(loader.get_data())
        return documents
    except yaml.YAMLError as exc:
        raise DocumentError(source, "YAML", _yaml_error(exc, text)) from None
    except (ValueError, OverflowError, RecursionError) as exc:
        # Raised by the safe constructor's conversions: an integer too long for int(),
        # a date that does not exist (2024-02-30), !!omap nested too deep.
        raise DocumentError(source, "YAML", _number_or_depth(exc)) from None
    finally:
        loader.dispose()


def _quoted(key: Any) -> str:
    return json.dumps(key) if isinstance(key, str) else repr(key)


def _yaml_error(exc: yaml.YAMLError, text: str) -> str:
    """One line, ``line L, column C: PROBLEM``, in this module's words where they matter.

    The limits and the characters refused are said the same whichever parser read the
    text and whatever its version: libyaml 0.2.6 (PyYAML 6.0.4's wheels) refuses nesting
    past its own limit of 1000 levels in its own words, before this module's composer
    sees the collection, and the two readers word a control character differently.
    Other syntax errors keep the parser's description after our location.
    """
    if isinstance(exc, yaml.reader.ReaderError):
        return _reader_problem(exc, text)
    if not isinstance(exc, yaml.MarkedYAMLError):
        return _one_line(str(exc))
    mark = exc.problem_mark or exc.context_mark
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    what = exc.problem or exc.context or "malformed"
    if _NESTING.search(what):
        return where + TOO_DEEP
    if exc.context and exc.problem:
        what = f"{exc.problem} ({exc.context})"
    return where + _one_line(what)


#: What libyaml says when its own nesting limit is hit ("exceeded maximum nesting depth").
_NESTING: Final = re.compile(r"\bnest", re.IGNORECASE)
#: The one message for collections nested too deeply, whichever limit refused them.
TOO_DEEP: Final = f"collections nested more than {MAX_DEPTH} levels deep"


def _reader_problem(exc: yaml.reader.ReaderError, text: str) -> str:
    # The reader gives an offset only: where that is, as the parsers say it.
    line = text.count("\n", 0, exc.position) + 1
    column = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
    character = exc.character
    code = character if isinstance(character, int) else ord(character)
    return f"line {line}, column {column}: control character #x{code:04x} is not allowed"


def _one_line(text: str) -> str:
    return " ".join(text.split())


class LimitError(yaml.MarkedYAMLError):
    """A YAML document over one of this module's limits (depth, aliases)."""


_OPEN: Final = object()  # a mapping frame waiting for a key
_MERGE: Final = object()  # the key "<<" (merge), pending its value
_MAP_TAGS: Final = frozenset({None, "!", "tag:yaml.org,2002:map"})
_SEQ_TAGS: Final = frozenset({None, "!", "tag:yaml.org,2002:seq"})
_MERGE_TAG: Final = "tag:yaml.org,2002:merge"
_VALUE_TAG: Final = "tag:yaml.org,2002:value"


#: anchor -> (what it names, its expanded size or None while being built, its line).
Anchors = dict[str, tuple[Any, int | None, int]]


class _Unusual(Exception):
    """A document the direct builder leaves to PyYAML's node path (explicit tags)."""


class _Composer:
    """Turns parser events into documents, iteratively, with the depth and alias limits.

    Two ways, one bookkeeping: :meth:`build_documents` builds plain data straight from
    the events; :meth:`compose_document` is PyYAML's Composer interface (nodes, for the
    safe constructor). Each counts a collection's expanded size (itself and everything
    under it, aliases expanded) and keeps it for anchored ones, so that an alias adds
    the size of what it names.
    """

    check_event: Any
    get_event: Any
    peek_event: Any
    resolve: Any
    yaml_constructors: dict[Any, Any]

    # -- direct: events to Python objects, no nodes -----------------------------------

    def build_documents(self) -> list[Any]:
        """Every document, built straight from the parser's events.

        What PyYAML's safe loader would build (plain data, merge keys, shared objects for
        aliases), with the limits, but without first composing the whole document into
        nodes: a node and its two marks per scalar made YAML cost ~40 times its size in
        memory and a second pass in time. Explicit collection tags raise _Unusual.
        """
        self.get_event()  # StreamStartEvent
        documents = []
        while not self.check_event(StreamEndEvent):
            documents.append(self._build_document())
        self.get_event()
        return documents

    def _build_document(self) -> Any:
        self.get_event()  # DocumentStartEvent
        constructors = self.yaml_constructors
        anchors: Anchors = {}
        added = 0
        # Frames: [container, anchor, size, pending key (maps), merges (maps), start mark]
        stack: list[list[Any]] = []
        value: Any = None
        while True:
            event: Any = self.get_event()
            kind = type(event)
            if kind is ScalarEvent:
                tag = event.tag
                if tag is None or tag == "!":
                    tag = self.resolve(ScalarNode, event.value, event.implicit)
                is_key = bool(stack) and stack[-1][3] is _OPEN and type(stack[-1][0]) is dict
                if is_key and tag == _MERGE_TAG:
                    value = _MERGE
                elif is_key and tag == _VALUE_TAG:
                    value = event.value
                else:
                    node = ScalarNode(
                        tag, event.value, event.start_mark, event.end_mark, style=event.style
                    )
                    construct = constructors.get(tag) or constructors[None]
                    value = construct(self, node)
                    if isinstance(value, GeneratorType):  # !!seq or !!map on a scalar
                        raise _Unusual
                size = 1
                if event.anchor is not None:
                    self._anchor_value(anchors, event, value, 1)
            elif kind is AliasEvent:
                value, size = self._alias(anchors, event, added)
                added += size
            elif kind is MappingStartEvent or kind is SequenceStartEvent:
                self._check_depth(len(stack), event)
                if event.tag not in (_MAP_TAGS if kind is MappingStartEvent else _SEQ_TAGS):
                    raise _Unusual
                container: Any = {} if kind is MappingStartEvent else []
                if event.anchor is not None:
                    self._anchor_value(anchors, event, container, None)
                stack.append([container, event.anchor, 1, _OPEN, None, event.start_mark])
                continue
            elif kind is MappingEndEvent or kind is SequenceEndEvent:
                value, anchor, size, _, merges, _ = stack.pop()
                if merges:
                    merged: dict[Any, Any] = {}
                    for source in merges:
                        merged.update(source)
                    merged.update(value)
                    value.clear()
                    value.update(merged)
                if anchor is not None:
                    anchors[anchor] = (value, size, anchors[anchor][2])
            else:  # pragma: no cover - the parser emits nothing else inside a document
                raise LimitError(None, None, f"unexpected {event}", event.start_mark)
            if not stack:
                break
            frame = stack[-1]
            frame[2] += size
            parent = frame[0]
            if type(parent) is list:
                parent.append(value)
            elif frame[3] is _OPEN:
                try:
                    hash(value)
                except TypeError:
                    raise ConstructorError(
                        "while constructing a mapping",
                        frame[5],
                        "found unhashable key",
                        event.start_mark,
                    ) from None
                if value in parent:
                    # kube-scheduler's strict decoding (sigs.k8s.io/yaml) refuses it so.
                    raise LimitError(
                        None, None, f"key {_quoted(value)} already set in map", event.start_mark
                    )
                frame[3] = value
            else:
                if frame[3] is _MERGE:
                    frame[4] = (frame[4] or []) + self._merge_sources(value, frame[5], event)
                else:
                    parent[frame[3]] = value
                frame[3] = _OPEN
        self.get_event()  # DocumentEndEvent
        return value

    @staticmethod
    def _anchor_value(
        anchors: Anchors,
        event: Any,
        value: Any,
        size: int | None,
    ) -> None:
        anchor = event.anchor
        line = event.start_mark.line + 1
        if anchor in anchors:
            first = anchors[anchor][2]
            raise LimitError(
                None, None, f"duplicate anchor &{anchor} (first at line {first})", event.start_mark
            )
        anchors[anchor] = (value, size, line)

    @staticmethod
    def _alias(anchors: Anchors, event: Any, added: int) -> tuple[Any, int]:
        found = anchors.get(event.anchor)
        if found is None:
            raise LimitError(
                None, None, f"found undefined alias {event.anchor!r}", event.start_mark
            )
        value, size, _ = found
        if size is None:
            raise LimitError(
                None,
                None,
                f"alias *{event.anchor} refers to a collection that contains it "
                "(a recursive structure)",
                event.start_mark,
            )
        if added + size > MAX_ALIAS_NODES:
            raise LimitError(
                None,
                None,
                f"aliases expand to more than {MAX_ALIAS_NODES} nodes (an alias "
                "bomb?); objects from kubectl use no aliases",
                event.start_mark,
            )
        return value, size

    @staticmethod
    def _check_depth(depth: int, event: Any) -> None:
        if depth >= MAX_DEPTH:
            raise LimitError(
                None,
                None,
                TOO_DEEP,
                event.start_mark,
            )

    @staticmethod
    def _merge_sources(value: Any, start: Any, event: Any) -> list[dict[Any, Any]]:
        """What "<<: value" merges, in the order PyYAML applies them (later wins)."""
        if type(value) is dict:
            return [value]
        if type(value) is list and all(type(item) is dict for item in value):
            return list(reversed(value))  # in a list, the first mapping wins
        raise ConstructorError(
            "while constructing a mapping",
            start,
            "expected a mapping or list of mappings for merging",
            event.start_mark,
        )

    # -- through nodes: PyYAML's Composer interface --------------------------------------

    def check_node(self) -> bool:
        if self.check_event(StreamStartEvent):
            self.get_event()
        return not self.check_event(StreamEndEvent)

    def get_node(self) -> Node | None:
        if not self.check_event(StreamEndEvent):
            return self.compose_document()
        return None

    def compose_document(self) -> Node:
        start: Any = self.get_event()
        assert isinstance(start, DocumentStartEvent)
        anchors: Anchors = {}
        added = 0  # nodes added by aliases
        stack: list[list[Any]] = []  # [node, anchor, expanded size, pending key]
        while True:
            event: Any = self.get_event()
            kind = type(event)  # exact classes: the parsers emit no subclasses
            if kind is AliasEvent:
                node, size = self._alias(anchors, event, added)
                added += size
            elif kind is ScalarEvent:
                tag = event.tag
                if tag is None or tag == "!":
                    tag = self.resolve(ScalarNode, event.value, event.implicit)
                node = ScalarNode(
                    tag, event.value, event.start_mark, event.end_mark, style=event.style
                )
                size = 1
                if event.anchor is not None:
                    self._anchor_value(anchors, event, node, 1)
            elif kind is SequenceStartEvent or kind is MappingStartEvent:
                self._check_depth(len(stack), event)
                node_class: Any = SequenceNode if kind is SequenceStartEvent else MappingNode
                tag = event.tag
                if tag is None or tag == "!":
                    tag = self.resolve(node_class, None, event.implicit)
                node = node_class(tag, [], event.start_mark, None, flow_style=event.flow_style)
                if event.anchor is not None:
                    self._anchor_value(anchors, event, node, None)
                stack.append([node, event.anchor, 1, _OPEN])
                continue
            elif kind is SequenceEndEvent or kind is MappingEndEvent:
                node, anchor, size, _ = stack.pop()
                node.end_mark = event.end_mark
                if anchor is not None:
                    anchors[anchor] = (node, size, anchors[anchor][2])
            else:  # pragma: no cover - the parser emits nothing else inside a document
                raise LimitError(None, None, f"unexpected {event}", event.start_mark)
            if not stack:
                break
            frame = stack[-1]
            frame[2] += size
            parent = frame[0]
            if isinstance(parent, SequenceNode):
                parent.value.append(node)
            elif frame[3] is _OPEN:
                frame[3] = node
            else:
                parent.value.append((frame[3], node))
                frame[3] = _OPEN
        end: Any = self.get_event()
        assert isinstance(end, DocumentEndEvent) and isinstance(node, Node)
        return node


class _StrictConstructor(SafeConstructor):
    """The safe constructor, refusing a key given twice as the direct builder does."""

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, MappingNode):
            seen: set[tuple[str, str]] = set()
            for key_node, _ in node.value:
                if not isinstance(key_node, ScalarNode) or key_node.tag == _MERGE_TAG:
                    continue
                key = (key_node.tag, key_node.value)
                if key in seen:
                    raise LimitError(
                        None,
                        None,
                        f"key {_quoted(key_node.value)} already set in map",
                        key_node.start_mark,
                    )
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


class _PyLoader(Reader, Scanner, Parser, _Composer, _StrictConstructor, Resolver):
    """PyYAML's pure-Python parser, this module's composer, the safe constructor."""

    def __init__(self, stream: str) -> None:
        Reader.__init__(self, stream)
        Scanner.__init__(self)
        Parser.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)


def _c_loader() -> type[Any] | None:
    """libyaml's C parser, this module's composer, the safe constructor; None without it.

    ``yaml.CSafeLoader`` is the same but for its composer, libyaml's, which is recursive
    C code: it overflows the C stack (a crash, not an error) on deep input and has no
    limit on aliases. Parsing, the costly part, stays in C.
    """
    if not getattr(yaml, "__with_libyaml__", False):
        return None
    from yaml._yaml import CParser

    class _CLoader(_Composer, CParser, _StrictConstructor, Resolver):
        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)

    return _CLoader


_Loader: type[Any] = _c_loader() or _PyLoader


__all__ = [
    "MAX_ALIAS_NODES",
    "MAX_DEPTH",
    "MAX_INPUT_BYTES",
    "DocumentError",
    "InputError",
    "collector_paused",
    "decode_text",
    "load_documents",
    "read_bytes",
    "read_file_documents",
    "read_text",
]
