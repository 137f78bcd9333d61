#!/usr/bin/env bash
# Benchmark `tally trace account` against the Python reference (stormlog 0.4.3).
#
# Usage: bench/evidence/run.sh [--plain] [--sizes 10k,100k,1m] [--runs N] [--reference-runs N]
#                              [--skip-reference]
#
# 1. creates bench/.venv with stormlog 0.4.3 if it is missing (pip install --no-deps), unless
#    TALLY_REFERENCE_PYTHON names a Python that already has it;
# 2. checks that reference.py reproduces every conformance case (fast; a sanity check of the
#    harness itself);
# 3. builds tally twice: the release build with profile-guided optimisation
#    (scripts/pgo-build.sh, about five minutes) and the plain `cargo build --release`; both are
#    timed, run for run in turn, and must print the same bytes. With --plain, only the plain
#    build is built and timed;
# 4. hands over to harness.py, which generates the traces with `tally trace synth` (seed 1; v2,
#    and v4 with 2% duplicates and shuffled delivery), times both tools under /usr/bin/time -v,
#    checks they print the same JSON and prints the Markdown table (also in bench/out/results.md).
#
# Scratch files go to bench/out/ (git-ignored). Extra arguments are passed to `harness.py bench`.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
VENV="bench/.venv"
PY="${TALLY_REFERENCE_PYTHON:-$VENV/bin/python}"

if [ ! -x "$PY" ]; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet --no-deps stormlog==0.4.3
fi
"$PY" -c 'import stormlog.infer.correlation_accounting' \
    || { echo "error: $PY lacks stormlog 0.4.3; delete $VENV and rerun" >&2; exit 1; }

"$PY" bench/evidence/harness.py conformance --python "$PY" --dir "$ROOT/testdata/conformance/evidence"

PLAIN_ONLY=0
REST=()
for arg in "$@"; do
    if [ "$arg" = "--plain" ]; then PLAIN_ONLY=1; else REST+=("$arg"); fi
done
cargo build --release --quiet -p tally
PLAIN="$ROOT/target/release/tally"
if [ "$PLAIN_ONLY" = 1 ]; then
    TALLY="$PLAIN"
    BUILDS=()
else
    bash scripts/pgo-build.sh --out target/pgo/tally
    TALLY="$ROOT/target/pgo/tally"
    BUILDS=(--plain-tally "$PLAIN")
fi
[ -x /usr/bin/time ] || { echo "error: GNU time (/usr/bin/time) is needed for peak RSS" >&2; exit 1; }

mkdir -p bench/out
exec "$PY" bench/evidence/harness.py bench --tally "$TALLY" "${BUILDS[@]}" --python "$PY" \
    --out bench/out "${REST[@]}"
