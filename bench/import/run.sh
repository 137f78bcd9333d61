#!/usr/bin/env bash
# Benchmark `tally trace import kineto` + `tally trace account` against the Python reference
# (stormlog 0.4.3) on the largest real traces and on synthetic Kineto traces of ~50 MB, ~500 MB
# and ~2.5 GB written by `tally trace synth --kineto`.
#
# Usage: bench/import/run.sh [--sizes 50M,500M,2.5G] [--runs 3] [--reference-max 600M]
#                            [--skip-reference] [--keep]
#
# 1. creates bench/.venv with stormlog 0.4.3 if it is missing (pip install --no-deps);
# 2. builds tally in release mode;
# 3. hands over to harness.py, which generates the traces (seed 1, one host, one GPU), times every
#    command under /usr/bin/time -v (median of 3 up to 600 MB, one run above; the reference only
#    up to 600 MB, median of 3 up to 60 MB), checks that tally and the reference agree on busy
#    time, and prints the Markdown table (also in bench/out/import/results.md).
#
# Scratch files go to bench/out/import/ (git-ignored; the traces stay there for reruns, about
# 3 GB with the default sizes). Extra arguments are passed to harness.py.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
VENV="bench/.venv"
PY="$VENV/bin/python"

if [ ! -x "$PY" ]; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet --no-deps stormlog==0.4.3
fi
"$PY" -c 'import stormlog.infer.trace_import' \
    || { echo "error: $VENV lacks stormlog 0.4.3; delete it and rerun" >&2; exit 1; }

REAL="$ROOT/testdata/traces/real"
[ -x /usr/bin/time ] || { echo "error: GNU time (/usr/bin/time) is needed for peak RSS" >&2; exit 1; }

cargo build --release --quiet -p tally
mkdir -p bench/out/import
exec "$PY" bench/import/harness.py --tally "$ROOT/target/release/tally" --python "$PY" \
    --out bench/out/import --real "$REAL" "$@"
