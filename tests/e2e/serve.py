"""Serve the e2e tests' Kubernetes API emulator on a port, for kubectl and the operator.

    .venv/bin/python tests/e2e/serve.py --kubeconfig /tmp/emulator.kubeconfig \\
        --load examples/cluster.yaml

starts ``tests/e2e/emulator.py``'s ``ApiEmulator`` on http://127.0.0.1:PORT (a free port
unless ``--port``), creates the project's CRDs (``crds/*.yaml``; SchedulingPolicies are then
validated by the CRD's schema, as a real API server does), creates the objects of each
``--load`` file (YAML documents or ``kind: List``; their namespaces are created when
missing; pods with ``spec.nodeName`` stay bound, a ``status`` given is kept, owner
references follow their owners' new uids), writes a
kubeconfig for it (plain HTTP, no credentials: anyone on the machine can use it while it
runs), and serves until interrupted (Ctrl-C, SIGTERM). Everything lives in memory.

With ``KUBECONFIG`` set to that file, ``kubectl`` (get, describe, apply with its default
validation, delete, patch, ...) and ``policy-scheduler run`` work against it. Not there:
authentication, admission, a kubelet or controllers (nothing runs, nothing is garbage
collected), server-side apply, defaults from CRD schemas; see the emulator's module
docstring for the rest.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import aiohttp
import yaml

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "tests") not in sys.path:  # run as a script: make ``e2e`` importable
    sys.path.insert(0, str(ROOT / "tests"))

from e2e.emulator import (  # noqa: E402
    DEFAULT_WATCH_WINDOW,
    EmulatorServer,
    find_resource,
    validator_from_crd,
    write_kubeconfig,
)

CRDS = sorted((ROOT / "crds").glob("*.yaml"))


def documents(paths: Iterable[Path]) -> Iterator[dict[str, Any]]:
    """The objects of YAML files: each document, and each item of a ``kind: List``."""
    for path in paths:
        for doc in yaml.safe_load_all(path.read_text()):
            if not isinstance(doc, dict):
                continue
            if doc.get("kind", "").endswith("List") and isinstance(doc.get("items"), list):
                yield from (item for item in doc["items"] if isinstance(item, dict))
            else:
                yield doc


class LoadError(Exception):
    """An object the emulator refused (or one of a kind it does not serve)."""


async def load(url: str, objects: Iterable[dict[str, Any]]) -> int:
    """POST the objects (their namespaces first, then in file order); return how many."""
    objects = list(objects)
    try:
        specs = [find_resource(obj["apiVersion"], obj["kind"]) for obj in objects]
    except (KeyError, LookupError) as error:
        raise LoadError(f"not an object the emulator serves: {error}") from None
    namespaces = {
        (obj.get("metadata") or {}).get("namespace") or "default"
        for obj, spec in zip(objects, specs, strict=True)
        if spec.namespaced
    }
    timeout = aiohttp.ClientTimeout(total=30)
    async with aiohttp.ClientSession(url, timeout=timeout) as session:
        for name in sorted(namespaces):
            body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
            async with session.post("/api/v1/namespaces", json=body) as response:
                if response.status not in (201, 409):  # 409: it exists from the start
                    raise LoadError(f"namespace {name}: {await response.text()}")
        # The API server gives each object a uid of its own: objects that name an owner
        # by uid (a claim the resource claim controller made for a pod) are created
        # after the others, their ownerReferences pointing at the owners' new uids.
        uids: dict[str, str] = {}
        pairs = list(zip(objects, specs, strict=True))
        pairs.sort(key=lambda pair: bool((pair[0].get("metadata") or {}).get("ownerReferences")))
        for obj, spec in pairs:
            meta = obj.get("metadata") or {}
            if meta.get("ownerReferences"):
                owners = [
                    {**ref, "uid": uids.get(ref.get("uid", ""), ref.get("uid"))}
                    for ref in meta["ownerReferences"]
                ]
                obj = {**obj, "metadata": {**meta, "ownerReferences": owners}}
            namespace = meta.get("namespace") or "default"
            path = spec.path(namespace if spec.namespaced else None)
            async with session.post(path, json=obj) as response:
                if response.status >= 300:
                    message = (await response.json()).get("message")
                    raise LoadError(f"{obj['kind']} {meta.get('name')}: {message}")
                created = await response.json()
            if meta.get("uid"):
                uids[meta["uid"]] = created["metadata"]["uid"]
    return len(objects)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="serve.py",
        description="Serve the e2e tests' Kubernetes API emulator and write a kubeconfig for it.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument(
        "--kubeconfig",
        type=Path,
        default=Path("emulator.kubeconfig"),
        help="where to write the kubeconfig (overwritten)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (0: a free one)")
    parser.add_argument(
        "--load",
        type=Path,
        action="append",
        default=[],
        metavar="FILE",
        help="YAML file of objects to create at start (repeatable)",
    )
    parser.add_argument(
        "--no-crds", action="store_true", help="do not create the project's CRDs (crds/*.yaml)"
    )
    parser.add_argument(
        "--watch-window",
        type=int,
        default=DEFAULT_WATCH_WINDOW,
        help="events per resource a watch can resume over (older: 410 Expired)",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Serve until SIGINT/SIGTERM: 0 then; 1 at once on input it cannot load."""
    args = parse_args(argv)
    for path in args.load:
        if not path.is_file():
            print(f"error: --load {path}: no such file", file=sys.stderr)
            return 1
    stop = threading.Event()
    with EmulatorServer(host=args.host, port=args.port, watch_window=args.watch_window) as server:
        crds = [] if args.no_crds else CRDS
        for crd in crds:  # custom resources validated by their CRD's schema
            definition = yaml.safe_load(crd.read_text())
            spec = definition["spec"]
            storage = next(v["name"] for v in spec["versions"] if v.get("storage"))
            key = f"{spec['group']}/{storage}/{spec['names']['plural']}"
            server.set_validator(validator_from_crd(definition), key)
        try:
            asyncio.run(load(server.url, documents(crds)))
            count = asyncio.run(load(server.url, documents(args.load)))
        except (LoadError, yaml.YAMLError) as error:
            print(f"error: loading {', '.join(map(str, args.load))}: {error}", file=sys.stderr)
            return 1
        write_kubeconfig(args.kubeconfig, server.url)
        print(f"Kubernetes API emulator at {server.url} ({count} objects loaded)")
        print(f"export KUBECONFIG={args.kubeconfig.resolve()}")
        print("Ctrl-C stops it (everything is in memory).", flush=True)
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
        stop.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
