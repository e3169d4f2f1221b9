"""Talking to HTTP scheduler extenders: the legacy wire format, and a client over aiohttp.

The engine decides *when* an extender is asked and what its answer means
(``engine/extenders.py``); this module is how it is asked. It has two halves: pure
functions that write requests and read replies (tested byte for byte), and
:class:`HttpExtenderClient`, the engine's :class:`~.engine.extenders.ExtenderClient`
over HTTP.

**Requests** are what kube-scheduler v1.13-v1.17 put on the wire: a POST of JSON to
``urlPrefix/verb`` (:func:`call_url`: trailing slashes of the prefix dropped, then one
slash and the verb as written, so a verb ``/`` posts to ``urlPrefix//`` as upstream's
``send`` did), ``Content-Type: application/json``, with the JSON tags of its legacy
types (``pkg/scheduler/api/v1/types.go``); ``omitempty`` fields left out when unset:

* filter and prioritize, ``ExtenderArgs``: ``{"pod": <the pod>, "nodes": {"metadata":
  {}, "items": [<node>, ...]}}``, or for a ``nodeCacheCapable`` extender ``{"pod": ...,
  "nodenames": ["n1", ...]}``. Pods and nodes are the API objects as the watch
  delivered them (``metadata.managedFields`` left out; see ``objects/common.py``);
* bind, ``ExtenderBindingArgs`` (a type without tags, so Go's field names):
  ``{"PodName", "PodNamespace", "PodUID", "Node"}``;
* preempt, ``ExtenderPreemptionArgs``: ``{"pod", "nodeToVictims": {node: {"pods":
  [<pod>...], "numPDBViolations": n}}}``, or for a ``nodeCacheCapable`` extender victims
  by uid in ``"nodeNameToMetaVictims": {node: {"pods": [{"uid": ...}], ...}}``. A victim
  is a placed pod, whose API object the cache does not keep: it is sent as its identity
  (metadata name, namespace, uid, labels; spec nodeName, schedulerName, priority).

**Replies** are read as Go's ``encoding/json`` read them into those types: the first
JSON value of the body (trailing bytes ignored), object keys matched
case-insensitively at every level, the last of two matching keys winning; ``null`` is
the zero value; a value of the wrong type is an error. So ``nodenames`` /
``NodeNames``, ``failedNodes``, ``error``, ``[{"host", "score"}]``, ``{"Error"}`` and
``nodeNameToMetaVictims`` all read. A filter reply's passing nodes are its
``NodeNames`` when the extender is nodeCacheCapable and sent some, else the names of
its ``Nodes.items``, else none (so a reply of only ``NodeNames`` from an extender that
is not nodeCacheCapable passes no node, as upstream; the decision notes it).

**Errors** (:class:`~.engine.extenders.ExtenderError`, naming the urlPrefix): no reply
within ``httpTimeout`` (the whole exchange, like Go's ``http.Client.Timeout``); a
connection or TLS failure; a status other than 200 (with the start of the body); a
redirect (3xx: not followed, unlike Go's client, so that a pod's object never goes
where the policy did not say); a reply longer than ``MAX_REPLY_BYTES`` (10 MiB, read
in pieces and abandoned at the limit, so that its memory is bounded whatever the
extender sends); a body that does not read; a non-empty ``error``.

**Addresses**: a ``urlPrefix`` that is not http(s) with a host, or is a link-local or
cloud metadata address, is refused by the policy's validation
(``policy.url_prefix_problem``) and again here before any call; a *name* resolving to
such an address is refused by the connector's resolver (:class:`_MetadataGuard`).
``allowMetadataAddresses: true`` on the extender lifts both.

**Connections**: one ``aiohttp.ClientSession`` (one connection pool, keep-alive) per
extender transport (urlPrefix, TLS settings, timeout), opened on first use;
:meth:`HttpExtenderClient.aclose` closes them. A policy edit that changes a transport
opens a new pool; the old one keeps no socket once its idle connections time out
(aiohttp's keep-alive, 15 s), and goes at ``aclose``. Proxy variables of the environment are
not used. TLS follows client-go's ``TLSConfigFor`` as kube-scheduler's ``makeTransport``
used it: ``enableHTTPS`` without a CA skips verifying the server (upstream did so);
``caFile``/``caData`` replace the system roots; ``insecure`` with a CA is refused;
``certFile``/``keyFile`` or ``certData``/``keyData`` (PEM, base64 in the policy as Go's
``[]byte`` JSON, data winning over files) give the client certificate; ``serverName``
is the name sent (SNI) and verified. TLS applies to ``https://`` prefixes; the scheme of
``urlPrefix`` decides, as upstream.

aiohttp is the HTTP library because it is already in the process (Kopf runs on it,
kubernetes-asyncio too, and the metrics server): no new dependency, one event loop.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import socket
import ssl
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, TypeVar

import aiohttp
import aiohttp.abc

from .engine.extenders import (
    BIND,
    FILTER,
    PREEMPT,
    PRIORITIZE,
    CompiledExtender,
    ExtenderError,
    ExtenderTLS,
    FilterReply,
    MetaVictims,
    Victims,
)
from .objects import Node, Pod
from .policy import ALLOW_METADATA_FIELD, metadata_address, url_prefix_problem

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: (urlPrefix, action, result "success" | "error", seconds) after every call.
Observer = Callable[[str, str, str, float], None]

CONTENT_TYPE: Final = "application/json"
#: How much of an error reply's body an error message quotes (and reads).
BODY_EXCERPT: Final = 200
#: The largest reply read (10 MiB, after decompression): a filter reply listing 5000
#: whole nodes is about this size; beyond it the call fails as an extender error.
MAX_REPLY_BYTES: Final = 10 * 1024 * 1024
#: The piece of a reply read at a time (aiohttp's own buffer size).
READ_CHUNK: Final = 64 * 1024


class ReplyTooLarge(ValueError):
    """A reply longer than :data:`MAX_REPLY_BYTES` (it was not read further)."""


class ReplyError(ValueError):
    """A reply that does not decode into the type upstream decoded it into."""


# -- requests ------------------------------------------------------------------------


def call_url(url_prefix: str, verb: str) -> str:
    """Where a call is POSTed: upstream's ``TrimRight(urlPrefix, "/") + "/" + verb``."""
    return url_prefix.rstrip("/") + "/" + verb


def _dump(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def _identity(pod: Pod) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid}
    if pod.labels:
        meta["labels"] = dict(pod.labels)
    spec: dict[str, Any] = {"schedulerName": pod.scheduler_name, "priority": pod.priority}
    if pod.node_name:
        spec["nodeName"] = pod.node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def pod_body(pod: Pod) -> bytes:
    """The pod's API object as JSON; its identity when the object was not kept."""
    return pod.body or _dump(_identity(pod))


def node_body(node: Node) -> bytes:
    """The node's API object as JSON; its identity when the object was not kept."""
    if node.body:
        return node.body
    meta: dict[str, Any] = {"name": node.name, "uid": node.uid, "labels": dict(node.labels)}
    return _dump({"apiVersion": "v1", "kind": "Node", "metadata": meta})


def _object(*pairs: tuple[str, bytes]) -> bytes:
    return b"{" + b",".join(_dump(key) + b":" + value for key, value in pairs) + b"}"


def extender_args(pod: Pod, nodes: Sequence[Node], *, node_cache_capable: bool) -> bytes:
    """The body of a filter or prioritize call: legacy ExtenderArgs, as v1.13-v1.17 tagged
    it (``pod``, then ``nodes`` as a NodeList or, for a nodeCacheCapable extender,
    ``nodenames``; the other one omitted, as ``omitempty`` omitted it)."""
    pod_json = pod_body(pod)
    if node_cache_capable:
        return _object(("pod", pod_json), ("nodenames", _dump([node.name for node in nodes])))
    node_list = b'{"metadata":{},"items":[' + b",".join(node_body(n) for n in nodes) + b"]}"
    return _object(("pod", pod_json), ("nodes", node_list))


def binding_args(pod: Pod, node: str) -> bytes:
    """The body of a bind call (ExtenderBindingArgs: no tags, Go's field names)."""
    return _dump(
        {"PodName": pod.name, "PodNamespace": pod.namespace, "PodUID": pod.uid, "Node": node}
    )


def preemption_args(
    pod: Pod, candidates: Mapping[str, Victims], *, node_cache_capable: bool
) -> bytes:
    """The body of a preempt call: legacy ExtenderPreemptionArgs (``pod``, then
    ``nodeToVictims`` with whole pods or, for a nodeCacheCapable extender,
    ``nodeNameToMetaVictims`` with uids; omitted when empty, as ``omitempty`` did)."""
    pairs = [("pod", pod_body(pod))]
    if not candidates:
        return _object(*pairs)
    if node_cache_capable:
        meta = {
            node: {
                "pods": [{"uid": victim.uid} for victim in victims.pods],
                "numPDBViolations": victims.num_pdb_violations,
            }
            for node, victims in candidates.items()
        }
        return _object(*pairs, ("nodeNameToMetaVictims", _dump(meta)))
    whole = _object(
        *(
            (
                node,
                _object(
                    ("pods", b"[" + b",".join(pod_body(v) for v in victims.pods) + b"]"),
                    ("numPDBViolations", _dump(victims.num_pdb_violations)),
                ),
            )
            for node, victims in candidates.items()
        )
    )
    return _object(*pairs, ("nodeToVictims", whole))


# -- replies -------------------------------------------------------------------------


def decode(data: bytes) -> Any:
    """The first JSON value of a body, as json.Decoder.Decode read it."""
    try:
        text = data.decode()
    except UnicodeDecodeError as exc:
        raise ReplyError(f"the reply is not UTF-8: {exc}") from None
    stripped = text.lstrip(" \t\r\n")
    if not stripped:
        raise ReplyError("the reply is empty")
    try:
        value, _ = json.JSONDecoder().raw_decode(stripped)
    except json.JSONDecodeError as exc:
        raise ReplyError(f"the reply is not JSON: {exc}") from None
    return value


def _fields(value: Any, what: str) -> dict[str, Any]:
    """An object's keys folded to lower case, the last of equal keys winning (Go)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ReplyError(f"{what}: expected an object, got {_kind(value)}")
    return {key.casefold(): item for key, item in value.items()}


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object" if isinstance(value, dict) else "null"


def _string(value: Any, what: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ReplyError(f"{what}: expected a string, got {_kind(value)}")
    return value


def _integer(value: Any, what: str) -> int:
    if value is None:
        return 0
    # Go's decoder refuses 5.0 or 1e2 for an integer field; json reads those as floats.
    if isinstance(value, bool) or not isinstance(value, int):
        raise ReplyError(f"{what}: expected an integer, got {_kind(value)} {json.dumps(value)}")
    return value


def _list(value: Any, what: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ReplyError(f"{what}: expected an array, got {_kind(value)}")
    return value


def read_filter_reply(extender: CompiledExtender, data: bytes) -> FilterReply:
    """An ExtenderFilterResult; raises ExtenderError for an ``error`` it carries."""
    fields = _fields(decode(data), "the reply")
    error = _string(fields.get("error"), "error")
    raw_failed = fields.get("failednodes")
    if raw_failed is not None and not isinstance(raw_failed, dict):
        raise ReplyError(f"failedNodes: expected an object, got {_kind(raw_failed)}")
    # A map: its keys are node names, taken as written (only struct fields fold).
    failed = {
        name: _string(reason, f"failedNodes[{name!r}]")
        for name, reason in (raw_failed or {}).items()
    }
    names_value = fields.get("nodenames")
    names = (
        None
        if names_value is None
        else [_string(n, f"nodenames[{i}]") for i, n in enumerate(_list(names_value, "nodenames"))]
    )
    nodes_value = fields.get("nodes")
    items: list[str] | None = None
    if nodes_value is not None:
        node_list = _fields(nodes_value, "nodes")
        items = []
        for i, item in enumerate(_list(node_list.get("items"), "nodes.items")):
            meta = _fields(_fields(item, f"nodes.items[{i}]").get("metadata"), "metadata")
            items.append(_string(meta.get("name"), f"nodes.items[{i}].metadata.name"))
    if error:
        raise ExtenderError(extender.url_prefix, FILTER, error)
    note = ""
    if extender.node_cache_capable and names is not None:
        passed = names
    elif items is not None:
        passed = items
    else:
        passed = []
        if names is not None:
            note = (
                f'extender "{extender.url_prefix}" returned NodeNames but is not '
                "nodeCacheCapable: they were ignored (no node passed), as kube-scheduler "
                "ignored them; set nodeCacheCapable: true or return Nodes"
            )
    return FilterReply(tuple(passed), failed, note)


def read_prioritize_reply(data: bytes) -> list[tuple[str, int]]:
    """A HostPriorityList: (host, score) pairs as listed."""
    out: list[tuple[str, int]] = []
    for i, item in enumerate(_list(decode(data), "the reply")):
        fields = _fields(item, f"[{i}]")
        out.append(
            (
                _string(fields.get("host"), f"[{i}].host"),
                _integer(fields.get("score"), f"[{i}].score"),
            )
        )
    return out


def read_binding_reply(extender: CompiledExtender, data: bytes) -> None:
    """An ExtenderBindingResult; raises ExtenderError for an ``error`` it carries."""
    error = _string(_fields(decode(data), "the reply").get("error"), "error")
    if error:
        raise ExtenderError(extender.url_prefix, BIND, error)


def read_preemption_reply(data: bytes) -> dict[str, MetaVictims]:
    """An ExtenderPreemptionResult: node -> victims by uid."""
    fields = _fields(decode(data), "the reply")
    victims_map = fields.get("nodenametometavictims")
    if victims_map is None:
        return {}
    if not isinstance(victims_map, dict):
        raise ReplyError(f"nodeNameToMetaVictims: expected an object, got {_kind(victims_map)}")
    out: dict[str, MetaVictims] = {}
    for node, meta in victims_map.items():
        where = f"nodeNameToMetaVictims[{node!r}]"
        meta_fields = _fields(meta, where)
        uids = tuple(
            _string(_fields(p, f"{where}.pods[{i}]").get("uid"), f"{where}.pods[{i}].uid")
            for i, p in enumerate(_list(meta_fields.get("pods"), f"{where}.pods"))
        )
        count = _integer(meta_fields.get("numpdbviolations"), f"{where}.numPDBViolations")
        out[node] = MetaVictims(uids, count)
    return out


# -- TLS -----------------------------------------------------------------------------


def _pem(data: str) -> bytes:
    return base64.b64decode(data)


def tls_context(extender: CompiledExtender) -> ssl.SSLContext | None:
    """The TLS settings kube-scheduler's makeTransport gave this extender.

    None: nothing configured, https:// prefixes verify against the system roots.
    Raises ValueError for a combination client-go refused, OSError/ssl.SSLError for
    files or PEM data that do not load.
    """
    tls = extender.tls or ExtenderTLS()
    insecure = tls.insecure or (extender.enable_https and not tls.has_ca)
    has_cert = bool(tls.cert_file or tls.cert_data or tls.key_file or tls.key_data)
    if not (tls.has_ca or has_cert or insecure or tls.server_name):
        return None
    if insecure and tls.has_ca:
        raise ValueError(
            "specifying a root certificates file with the insecure flag is not allowed"
        )
    if tls.ca_data:
        context = ssl.create_default_context(cadata=_pem(tls.ca_data).decode())
    elif tls.ca_file:
        context = ssl.create_default_context(cafile=tls.ca_file)
    else:
        context = ssl.create_default_context()
    if insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if has_cert:
        _load_client_certificate(context, tls)
    return context


def _load_client_certificate(context: ssl.SSLContext, tls: ExtenderTLS) -> None:
    if not tls.cert_data and not tls.key_data:
        context.load_cert_chain(tls.cert_file, tls.key_file or None)
        return
    # ssl loads certificates from files only: inline PEM goes through a private
    # temporary directory, removed once loaded.
    with tempfile.TemporaryDirectory(prefix="extender-tls-") as folder:
        cert_path = tls.cert_file
        key_path = tls.key_file
        if tls.cert_data:
            cert_path = os.path.join(folder, "cert.pem")
            with open(cert_path, "wb") as handle:
                handle.write(_pem(tls.cert_data))
        if tls.key_data:
            key_path = os.path.join(folder, "key.pem")
            with open(os.open(key_path, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as handle:
                handle.write(_pem(tls.key_data))
        context.load_cert_chain(cert_path, key_path or None)


# -- reading replies -------------------------------------------------------------------


async def read_capped(response: aiohttp.ClientResponse, limit: int) -> bytes:
    """The body, at most ``limit`` bytes of it: raises :class:`ReplyTooLarge` as soon as
    it is longer (a ``Content-Length`` over the limit is refused before reading), so
    that a huge or endless reply costs ``limit`` bytes of memory, not its size."""
    declared = response.content_length
    if declared is not None and declared > limit:
        raise ReplyTooLarge(f"the reply is {declared} bytes, more than the {_size(limit)} read")
    body = bytearray()
    async for chunk in response.content.iter_chunked(READ_CHUNK):
        if len(body) + len(chunk) > limit:
            raise ReplyTooLarge(f"the reply is longer than the {_size(limit)} read")
        body += chunk
    return bytes(body)


def _size(limit: int) -> str:
    return f"{limit // (1024 * 1024)} MiB" if limit % (1024 * 1024) == 0 else f"{limit} bytes"


class MetadataAddressRefused(OSError):
    """A name resolved to a link-local or cloud metadata address (:class:`_MetadataGuard`)."""


class _MetadataGuard(aiohttp.abc.AbstractResolver):
    """The connector's resolver, refusing names that resolve to a link-local or cloud
    metadata address (``policy.METADATA_NETWORKS``): the policy's check of ``urlPrefix``
    sees only its text, this sees where a name really leads."""

    def __init__(self) -> None:
        self._resolver = aiohttp.ThreadedResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[aiohttp.abc.ResolveResult]:
        found = await self._resolver.resolve(host, port, family)
        for result in found:
            if metadata_address(result["host"]):
                raise MetadataAddressRefused(
                    f"{host} resolves to {result['host']}, a link-local or cloud metadata "
                    f"address, refused unless the extender sets {ALLOW_METADATA_FIELD}: true"
                )
        return found

    async def close(self) -> None:
        await self._resolver.close()


# -- the client ----------------------------------------------------------------------

_Transport = tuple[str, bool, ExtenderTLS | None, float]


class HttpExtenderClient:
    """The engine's ExtenderClient over HTTP (module docstring): one connection pool per
    extender, the policy's timeout and TLS, metrics through ``observe``."""

    def __init__(self, *, observe: Observer | None = None) -> None:
        self._sessions: dict[_Transport, tuple[aiohttp.ClientSession, str | None]] = {}
        self._observe = observe

    async def __aenter__(self) -> HttpExtenderClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        sessions, self._sessions = self._sessions, {}
        for session, _ in sessions.values():
            await session.close()

    async def filter(
        self, extender: CompiledExtender, pod: Pod, nodes: Sequence[Node]
    ) -> FilterReply:
        body = extender_args(pod, nodes, node_cache_capable=extender.node_cache_capable)
        return await self._call(
            extender, FILTER, extender.filter_verb, body,
            lambda data: read_filter_reply(extender, data),
        )  # fmt: skip

    async def prioritize(
        self, extender: CompiledExtender, pod: Pod, nodes: Sequence[Node]
    ) -> list[tuple[str, int]]:
        body = extender_args(pod, nodes, node_cache_capable=extender.node_cache_capable)
        return await self._call(
            extender, PRIORITIZE, extender.prioritize_verb, body, read_prioritize_reply
        )

    async def bind(self, extender: CompiledExtender, pod: Pod, node: str) -> None:
        await self._call(
            extender, BIND, extender.bind_verb, binding_args(pod, node),
            lambda data: read_binding_reply(extender, data),
        )  # fmt: skip

    async def preempt(
        self, extender: CompiledExtender, pod: Pod, candidates: Mapping[str, Victims]
    ) -> dict[str, MetaVictims]:
        body = preemption_args(pod, candidates, node_cache_capable=extender.node_cache_capable)
        return await self._call(
            extender, PREEMPT, extender.preempt_verb, body, read_preemption_reply
        )

    def _session(self, extender: CompiledExtender) -> tuple[aiohttp.ClientSession, str | None]:
        key: _Transport = (
            extender.url_prefix,
            extender.enable_https,
            extender.tls,
            extender.timeout,
        )
        known = self._sessions.get(key)
        if known is not None and not known[0].closed:
            return known
        context = tls_context(extender)
        connector = aiohttp.TCPConnector(
            ssl=context if context is not None else True,
            resolver=None if extender.allow_metadata_addresses else _MetadataGuard(),
        )
        session = aiohttp.ClientSession(
            connector=connector,
            timeout=aiohttp.ClientTimeout(total=extender.timeout),
            trust_env=False,
        )
        server_name = extender.tls.server_name if extender.tls is not None else ""
        known = self._sessions[key] = (session, server_name or None)
        return known

    async def _call(
        self,
        extender: CompiledExtender,
        action: str,
        verb: str,
        body: bytes,
        read: Callable[[bytes], T],
    ) -> T:
        url = call_url(extender.url_prefix, verb)
        started = time.perf_counter()
        result = "error"
        try:
            value = await self._exchange(extender, action, url, body, read)
            result = "success"
            return value
        finally:
            if self._observe is not None:
                self._observe(extender.url_prefix, action, result, time.perf_counter() - started)

    async def _exchange(
        self,
        extender: CompiledExtender,
        action: str,
        url: str,
        body: bytes,
        read: Callable[[bytes], T],
    ) -> T:
        def fail(detail: str) -> ExtenderError:
            return ExtenderError(extender.url_prefix, action, detail)

        # The policy was checked; a CompiledExtender built otherwise is checked here.
        problem = url_prefix_problem(
            extender.url_prefix, allow_metadata=extender.allow_metadata_addresses
        )
        if problem is not None:
            raise fail(f"urlPrefix {problem}")
        try:
            session, server_name = self._session(extender)
        except (ValueError, OSError, ssl.SSLError) as exc:
            raise fail(f"its TLS settings do not load: {exc}") from None
        location = ""
        try:
            # Redirects are not followed: the pod's whole object would go where the
            # policy never said, and its answer would decide the pod.
            async with session.post(
                url,
                data=body,
                headers={"Content-Type": CONTENT_TYPE},
                server_hostname=server_name,
                allow_redirects=False,
            ) as response:
                status = response.status
                location = response.headers.get("Location", "")
                if status != 200:
                    data = await response.content.read(BODY_EXCERPT)  # enough to quote
                else:
                    try:
                        data = await read_capped(response, MAX_REPLY_BYTES)
                    except ReplyTooLarge as exc:
                        response.close()  # the rest is never read: the connection goes
                        raise fail(f"{exc} (from {url})") from None
        except TimeoutError:
            raise fail(f"no reply from {url} within {extender.timeout:g}s") from None
        except aiohttp.ClientConnectorError as exc:
            if isinstance(exc.os_error, MetadataAddressRefused):
                raise fail(f"{url}: {exc.os_error}") from None
            raise fail(f"{url}: {exc}") from None
        except aiohttp.ClientError as exc:
            raise fail(f"{url}: {exc or type(exc).__name__}") from None
        if 300 <= status < 400:
            where = f" to {location}" if location else ""
            raise fail(f"HTTP {status} from {url}: a redirect{where}, not followed")
        if status != 200:
            excerpt = data[:BODY_EXCERPT].decode(errors="replace").strip()
            raise fail(f"HTTP {status} from {url}" + (f": {excerpt}" if excerpt else ""))
        try:
            return read(data)
        except ReplyError as exc:
            raise fail(f"{exc} (from {url})") from None
