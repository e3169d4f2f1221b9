"""The e2e emulator in a process of its own, driven over stdin/stdout (for benchmarks).

A real API server is another process; an emulator thread inside the benchmark's own
process would share one GIL with the operator and slow both. Protocol, one line each:
the process prints ``URL <url>`` once ready; then reads commands and answers:
``bindings`` -> ``OK <successful> <attempts> <most successes of one pod>``; ``quit``.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "operator"), str(ROOT / "tests")]

from e2e.emulator import EmulatorServer  # noqa: E402


def main() -> int:
    with EmulatorServer() as server:
        print(f"URL {server.url}", flush=True)
        for line in sys.stdin:
            command = line.strip()
            if command == "bindings":
                log = server.bindings
                ok = Counter(f"{b.namespace}/{b.pod}" for b in log if b.ok)
                print(f"OK {sum(ok.values())} {len(log)} {max(ok.values(), default=0)}", flush=True)
            elif command == "quit":
                break
    return 0


if __name__ == "__main__":
    sys.exit(main())
