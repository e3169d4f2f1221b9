#!/usr/bin/env python3
"""A minimal HTTP scheduler extender, standard library only (see docs/extenders.md).

    python examples/extender/extender.py [--host 127.0.0.1] [--port 8888] [--verbose]

It speaks kube-scheduler's legacy extender protocol, which policy-scheduler keeps:

* ``POST /scheduler/filter`` gets ``{"pod": ..., "nodes": {"items": [...]}}`` and answers
  ``{"nodes": {"items": [the nodes that pass]}, "failedNodes": {node: reason}}``: it
  refuses the nodes labelled ``example.com/gpu-health=unhealthy``;
* ``POST /scheduler/prioritize`` gets the same and answers ``[{"host": node, "score": n}]``:
  the node's ``example.com/gpu-free`` label, 0 to 10.

Object keys inside the pod and nodes are read case-insensitively, as a Go extender
reads them. An error would be answered as ``{"error": "..."}`` (filter) or an HTTP
status other than 200; the scheduler names this extender in the pod's events then.
"""

from __future__ import annotations

import argparse
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

HEALTH_LABEL = "example.com/gpu-health"
FREE_LABEL = "example.com/gpu-free"


def fields(obj: Any) -> dict[str, Any]:
    """An object's keys in lower case: ``Nodes`` and ``nodes`` are the same field."""
    return {key.lower(): value for key, value in (obj or {}).items()}


def candidate_nodes(args: dict[str, Any]) -> list[dict[str, Any]]:
    return list(fields(args.get("nodes")).get("items") or [])


def name_and_labels(item: dict[str, Any]) -> tuple[str, dict[str, str]]:
    meta = fields(item.get("metadata"))
    return meta["name"], meta.get("labels") or {}


def filter_nodes(args: dict[str, Any]) -> dict[str, Any]:
    passed, failed = [], {}
    for item in candidate_nodes(args):
        name, labels = name_and_labels(item)
        if labels.get(HEALTH_LABEL) == "unhealthy":
            failed[name] = "GPU reported unhealthy"
        else:
            passed.append(item)
    return {"nodes": {"metadata": {}, "items": passed}, "failedNodes": failed, "error": ""}


def prioritize(args: dict[str, Any]) -> list[dict[str, Any]]:
    scores = []
    for item in candidate_nodes(args):
        name, labels = name_and_labels(item)
        try:
            free = int(labels.get(FREE_LABEL, "0"))
        except ValueError:
            free = 0
        scores.append({"host": name, "score": max(0, min(10, free))})
    return scores


VERBS = {"filter": filter_nodes, "prioritize": prioritize}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the scheduler reuses its connection
    verbose = False

    def do_POST(self) -> None:
        prefix, _, verb = self.path.rstrip("/").rpartition("/")
        answer = VERBS.get(verb)
        if prefix != "/scheduler" or answer is None:
            self.send_error(404, f"no verb {self.path}")
            return
        length = int(self.headers.get("Content-Length") or 0)
        try:
            args = fields(json.loads(self.rfile.read(length)))
        except ValueError as exc:
            self.send_error(400, f"not JSON: {exc}")
            return
        body = json.dumps(answer(args)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        if self.verbose:
            super().log_message(format, *args)


def serve(
    host: str = "127.0.0.1", port: int = 8888, *, verbose: bool = False
) -> ThreadingHTTPServer:
    """The extender's server, listening (port 0: any free port); ``serve_forever()`` it."""
    handler = type("ExampleHandler", (Handler,), {"verbose": verbose})
    return ThreadingHTTPServer((host, port), handler)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8888)
    parser.add_argument("--verbose", action="store_true", help="log every request")
    options = parser.parse_args(argv)
    server = serve(options.host, options.port, verbose=options.verbose)
    print(f"extender listening on http://{options.host}:{server.server_port}/scheduler")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
