"""The offline commands work where address space is scarce (``ulimit -v 500000``).

Each command runs in a subprocess whose address space is limited as ``ulimit -v`` does
(RLIMIT_AS): reading its input must reserve no more than the input needs. Reading with
``read(MAX_INPUT_BYTES + 1)`` reserved 1 GiB for a 2 KB file and failed with MemoryError
there, as it does on a small machine without memory overcommit.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from builders import node, pod

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
#: ``ulimit -v 500000``: kibibytes of address space.
LIMIT_KIB = 500_000


def limit_address_space() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT_KIB * 1024, LIMIT_KIB * 1024))


def policy_scheduler(*argv: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "policy_scheduler.cli", *argv],
        input=stdin,
        capture_output=True,
        preexec_fn=limit_address_space,
        timeout=120,
        check=False,
    )


def big_cluster_json() -> bytes:
    """A kubectl-style List of a few MB: more than one read chunk, and mapped from a file."""
    small = {"cpu": "100m", "memory": "128Mi"}
    items = [node(f"node-{i}", cpu="8", memory="32Gi") for i in range(300)]
    items += [pod(f"pod-{i}", node_name=f"node-{i % 300}", requests=small) for i in range(5000)]
    items += [
        pod(f"pending-{i}", schedulerName="policy-scheduler", requests={"cpu": "1"})
        for i in range(3)
    ]
    listing = {"apiVersion": "v1", "kind": "List", "items": items, "metadata": {}}
    return json.dumps(listing, indent=2).encode()


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["validate", str(EXAMPLES / "policies" / "gpu.yaml")], id="validate"),
        pytest.param(["convert", str(EXAMPLES / "legacy-policy.json")], id="convert"),
        pytest.param(
            ["simulate", "-f", str(EXAMPLES / "cluster.yaml"), "-o", "summary"], id="simulate"
        ),
    ],
)
def test_commands_work_in_500_mb_of_address_space(argv: list[str]) -> None:
    done = policy_scheduler(*argv)
    assert done.returncode == 0, done.stderr.decode()
    assert b"MemoryError" not in done.stderr
    assert done.stdout


def test_simulate_reads_a_big_dump_from_stdin_and_from_a_file(tmp_path: Path) -> None:
    data = big_cluster_json()
    assert len(data) > 2 * 1024**2  # several read chunks from stdin; a mapped file
    path = tmp_path / "cluster.json"
    path.write_bytes(data)
    from_stdin = policy_scheduler("simulate", "-f", "-", "-o", "summary", stdin=data)
    from_file = policy_scheduler("simulate", "-f", str(path), "-o", "summary")
    for done in (from_stdin, from_file):
        assert done.returncode == 0, done.stderr.decode()
        assert done.stdout.decode().count(" -> node-") == 3
    assert from_stdin.stdout == from_file.stdout


def test_stdin_is_read_whole_when_it_comes_in_pieces() -> None:
    # A pipe hands over what it has: the reader goes on to the end, whatever the pieces.
    policy = (EXAMPLES / "policies" / "gpu.yaml").read_bytes()
    done = policy_scheduler("validate", "-", stdin=policy)
    assert done.returncode == 0, done.stderr.decode()


def test_an_input_too_big_for_the_memory_is_one_line_of_error(tmp_path: Path) -> None:
    # 50 MB of profiles decode to more than 500 MB of objects: the command says so in
    # one line and exits 1, no MemoryError traceback.
    profile = {
        "plugins": {"score": {"enabled": [{"name": "PodTopologySpread", "weight": 5}]}},
        "pluginConfig": [
            {
                "name": "PodTopologySpread",
                "args": {"defaultingType": "List", "defaultConstraints": []},
            }
        ],
    }
    profiles = [{"schedulerName": f"s{i}", **profile} for i in range(250_000)]
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": profiles,
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    del profiles, config
    assert path.stat().st_size > 50 * 1024**2
    done = policy_scheduler("convert", str(path))
    assert done.returncode == 1
    assert done.stderr.decode().splitlines() == [
        "error: out of memory: the input needs more memory than this process may use "
        "(ulimit -v, or the container's limit)"
    ]
