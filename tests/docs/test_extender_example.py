"""The example extender of docs/extenders.md runs as documented and speaks the wire format.

It is started the way the page says (``python examples/extender/extender.py``, here on a
free port) and sent what the scheduler sends; ``simulate`` against it is run by
test_documented_commands.py with the page's own command and output.
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from builders import node, parsed_pod
from policy_scheduler.extending import extender_args
from policy_scheduler.objects import parse_node

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def extender_url() -> Iterator[str]:
    process = subprocess.Popen(
        [sys.executable, "examples/extender/extender.py", "--port", "0"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("extender listening on "), line
        yield line.split()[-1]
    finally:
        process.terminate()
        process.wait(10)


def post(url: str, body: bytes) -> Any:
    request = urllib.request.Request(
        url, data=body, headers={"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def test_the_example_extender_runs_as_documented(extender_url: str) -> None:
    nodes = [
        parse_node(node("ok", labels={"example.com/gpu-free": "3"})),
        parse_node(node("sick", labels={"example.com/gpu-health": "unhealthy"})),
        parse_node(node("full", labels={"example.com/gpu-free": "50"})),
    ]
    body = extender_args(parsed_pod("train"), nodes, node_cache_capable=False)
    kept = post(f"{extender_url}/filter", body)
    assert [item["metadata"]["name"] for item in kept["nodes"]["items"]] == ["ok", "full"]
    assert kept["failedNodes"] == {"sick": "GPU reported unhealthy"}
    assert post(f"{extender_url}/prioritize", body) == [
        {"host": "ok", "score": 3},
        {"host": "sick", "score": 0},
        {"host": "full", "score": 10},
    ]
