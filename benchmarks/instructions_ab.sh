#!/usr/bin/env bash
# Instruction counts of the engine's decisions, A/B: BASE (a git worktree of another
# commit) against this checkout. valgrind's callgrind counts instructions, not seconds:
# the same whatever else the machine is doing (its speed moves 2x between days here).
# The decisions' share is the run deciding PODS pods minus the same run deciding none
# (building the cluster is the rest); the collector is frozen and off in both, so that
# no collection lands in one run only.
#
#   git worktree add /tmp/base <commit>
#   benchmarks/instructions_ab.sh /tmp/base 5000 100 basic
set -euo pipefail
BASE=${1:?a worktree of the commit to compare with}
NODES=${2:-5000}
PODS=${3:-100}
WORKLOAD=${4:-basic}
HERE=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-$HERE/.venv/bin/python}
command -v valgrind >/dev/null || { echo "valgrind is needed (apt-get install valgrind)" >&2; exit 1; }
for side in "$BASE" "$HERE"; do
  for pods in 0 "$PODS"; do
    out=$(mktemp)
    (cd "$side" && PYTHONHASHSEED=0 PYTHONPATH=operator valgrind --tool=callgrind \
      --callgrind-out-file=/dev/null "$PY" "$HERE/benchmarks/instructions_run.py" \
      "$NODES" "$pods" "$WORKLOAD" >/dev/null 2>"$out")
    ir=$(grep -oE "Collected : [0-9]+" "$out" | grep -oE "[0-9]+")
    rm -f "$out"
    echo "$side nodes=$NODES pods=$pods workload=$WORKLOAD instructions=$ir"
  done
done
