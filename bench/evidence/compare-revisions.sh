#!/usr/bin/env bash
# Compares `tally trace account --json` of two revisions on the same generated traces, run for run
# in turn: the same JSON from both, then median wall and CPU time and peak RSS of each, and the
# ratios (new / old). For checking that a change costs nothing on the benchmarked path when the
# full benchmark (run.sh, with the reference) is more than the question needs.
#
#   bench/evidence/compare-revisions.sh OLD_REV [NEW_REV] [--runs N] [--sizes 1m,100k]
#
# NEW_REV defaults to the working tree. Both are plain `cargo build --release` builds (one shared
# target directory, so dependencies build once). Traces and binaries go to bench/out/compare/.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
[ $# -ge 1 ] || { echo "usage: $0 OLD_REV [NEW_REV] [--runs N] [--sizes 1m,100k]" >&2; exit 2; }
OLD_REV="$1"; shift
NEW_REV=""
RUNS=7
SIZES="1m"
while [ $# -gt 0 ]; do
    case "$1" in
        --runs) RUNS="$2"; shift 2 ;;
        --sizes) SIZES="$2"; shift 2 ;;
        -*) echo "unknown flag $1" >&2; exit 2 ;;
        *) NEW_REV="$1"; shift ;;
    esac
done
[ -x /usr/bin/time ] || { echo "error: GNU time (/usr/bin/time) is needed" >&2; exit 1; }
OUT="$ROOT/bench/out/compare"
mkdir -p "$OUT"

build() { # REV NAME: a release binary of REV (or of the working tree when REV is empty)
    local rev="$1" name="$2" dir="$ROOT"
    if [ -n "$rev" ]; then
        dir="$OUT/tree-$name"
        rm -rf "$dir"; git worktree prune
        git worktree add --quiet --detach "$dir" "$rev"
    fi
    (cd "$dir" && CARGO_TARGET_DIR="$ROOT/target" cargo build --release --quiet -p tally)
    cp "$ROOT/target/release/tally" "$OUT/tally-$name"
    if [ -n "$rev" ]; then git worktree remove --force "$dir"; fi
}
build "$OLD_REV" old
build "$NEW_REV" new

requests() { case "$1" in 10k) echo 526 ;; 100k) echo 5263 ;; 1m) echo 52631 ;; *) echo "bad size $1" >&2; exit 2 ;; esac; }
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
for size in ${SIZES//,/ }; do
    for form in v2 v4; do
        trace="$OUT/$size-$form.jsonl"
        extra=(); [ "$form" = v4 ] && extra=(--duplicates 0.02 --shuffle)
        [ -f "$trace" ] || "$OUT/tally-new" trace synth --requests "$(requests "$size")" --seed 1 \
            --form "$form" "${extra[@]}" -o "$trace"
        if cmp -s <("$OUT/tally-old" trace account --json "$trace") <("$OUT/tally-new" trace account --json "$trace"); then
            same=yes
        else
            same=NO
        fi
        times="$OUT/times-$size-$form.txt"; : > "$times"
        for _ in $(seq "$RUNS"); do
            for b in old new; do
                cat "$trace" > /dev/null
                /usr/bin/time -f "$b %e %U %S %M" "$OUT/tally-$b" trace account --json "$trace" \
                    > /dev/null 2>> "$times"
            done
        done
        for b in old new; do
            wall=$(grep "^$b " "$times" | awk '{print $2}' | median)
            cpu=$(grep "^$b " "$times" | awk '{print $3 + $4}' | median)
            rss=$(grep "^$b " "$times" | awk '{print $5}' | median)
            eval "${b}_wall=$wall ${b}_cpu=$cpu ${b}_rss=$rss"
        done
        # shellcheck disable=SC2154 # set by the eval above
        awk -v t="$size-$form" -v s="$same" -v ow="$old_wall" -v nw="$new_wall" -v oc="$old_cpu" \
            -v nc="$new_cpu" -v orss="$old_rss" -v nrss="$new_rss" -v r="$RUNS" 'BEGIN {
            printf "%s: same JSON %s; medians of %d: wall %.2f -> %.2f s (%.2fx), CPU %.2f -> %.2f s (%.2fx), peak RSS %d -> %d MiB (%.2fx)\n",
                t, s, r, ow, nw, nw / ow, oc, nc, nc / oc, orss / 1024, nrss / 1024, nrss / orss }'
    done
done
