#!/bin/sh
# Per-sample overhead of the Slurm executor against the local one (docs/performance.md#slurm):
# the same campaign — a no-op evaluate command (`sh -c 'echo METRIC score=1'`), one metric,
# `repeats = SAMPLES` — is initialised twice in fresh repositories, once with the local executor
# and once with `[executor] kind = "slurm"`, and `tally init` measures the baseline's SAMPLES
# samples one after another. A sample's wall time is the time from its start to the next one's
# start, as tally recorded them (`tally candidate show 0 --json`, `started_at`): the checkout,
# the process or the batch job (submitted held, released, scheduled, run, polled, its files
# read), the removal and the store write. Prints both medians side by side, their difference and
# ratio, and the load average; checks that every sample succeeded and that every Slurm sample was
# a job that recorded what it held.
# Usage: bench/slurm/run.sh [TALLY_BINARY] [SAMPLES]   (default target/debug/tally, 20)
# Needs git, python3 and a Slurm cluster that answers `sinfo` (scripts/slurm-test-cluster.sh start).
set -eu
tally=${1:-target/debug/tally}
samples=${2:-20}
tally=$(cd "$(dirname "$tally")" && pwd)/$(basename "$tally")
[ -x "$tally" ] || { echo "error: no tally binary at $tally (cargo build -p tally)" >&2; exit 1; }
sinfo -h -o %T 2>/dev/null | grep -Eq '^(idle|mixed|allocated)' || {
    echo "error: no Slurm node answers sinfo; start one with scripts/slurm-test-cluster.sh start" >&2
    exit 1
}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
export XDG_CACHE_HOME="$scratch/cache"
unset TALLY_DATABASE_URL

# campaign KIND: initialises the campaign with executor KIND; prints "median total" in seconds.
campaign() {
    repo="$scratch/$1"
    mkdir -p "$repo" && cd "$repo"
    git init -q -b main && git config user.name bench && git config user.email bench@x.invalid
    cat > tally.toml <<TOML
name = "overhead-$1"
evaluate = ["sh", "-c", "echo METRIC score=1"]
evaluate_timeout = 120
[[metrics]]
name = "score"
direction = "higher"
role = "primary"
repeats = $samples
TOML
    if [ "$1" = slurm ]; then
        printf '[executor]\nkind = "slurm"\ntime_limit = "5:00"\ncpus = 1\n' >> tally.toml
    fi
    git add -A && git commit -qm base
    t0=$(date +%s.%N)
    "$tally" init >/dev/null 2>"$scratch/$1.stderr" || { cat "$scratch/$1.stderr" >&2; exit 1; }
    t1=$(date +%s.%N)
    "$tally" candidate show 0 --json | python3 -c '
import json, statistics, sys
kind, samples, wall = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
ms = json.load(sys.stdin)["measurements"]
bad = [m for m in ms if m["error"] is not None]
if len(ms) != samples or bad:
    sys.exit(f"{kind}: {len(ms)} samples, {len(bad)} failed: {bad[:1]}")
if kind == "slurm" and any("held_seconds" not in m for m in ms):
    sys.exit("slurm: a sample has no held_seconds: it did not run as a job")
starts = sorted(m["started_at"] for m in ms)
gaps = [b - a for a, b in zip(starts, starts[1:])]
print(f"{statistics.median(gaps):.3f} {wall / samples:.3f}")
' "$1" "$samples" "$(echo "$t1 - $t0" | bc)"
    cd "$scratch"
}

echo "tally: $tally ($("$tally" --version 2>/dev/null || echo unknown version)); $samples samples each"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
set -- $(campaign local)
local_median=$1 local_init=$2
set -- $(campaign slurm)
slurm_median=$1 slurm_init=$2
echo "load average after:  $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| executor | median per-sample wall | tally init wall / samples |"
echo "|---|---|---|"
echo "| local | $local_median s | $local_init s |"
echo "| slurm | $slurm_median s | $slurm_init s |"
echo
python3 -c 'import sys; l, s = map(float, sys.argv[1:]); print(f"Slurm − local: {s - l:.3f} s per sample; Slurm / local: {s / l:.1f}×")' \
    "$local_median" "$slurm_median"
