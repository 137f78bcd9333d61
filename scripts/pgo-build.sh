#!/usr/bin/env bash
# Build the release `tally` with profile-guided optimisation (PGO).
#
# Usage: scripts/pgo-build.sh [--out PATH] [--requests N]
#
# 1. installs rustup's `llvm-tools` component if `llvm-profdata` is missing (the one that matches
#    the toolchain's LLVM; a system llvm-profdata of another LLVM version cannot read the profiles);
# 2. builds an instrumented tally (`-Cprofile-generate`) in target/pgo/gen;
# 3. trains it on the workload tally is built for: traces from the project's own generator
#    (`tally trace synth --seed 2`; the benchmark uses seed 1, so the profile is not trained on
#    the files it is measured on), v2 and shuffled v4 with duplicates, plain and gzip, accounted
#    with `--json` and as the human report, and converted v2 -> v4;
# 4. merges the profiles and builds the optimised tally (`-Cprofile-use`) in target/pgo/use,
#    then copies it to PATH (default target/pgo/tally in the repository).
#
# The result prints exactly what `cargo build --release` prints (PGO moves code, it does not
# change it); `docs/performance.md` gives what it gains. Code the training does not run (the
# campaign commands, the importers) is optimised as in a plain release build: PGO's size
# optimisation of never-run code is turned off (`-pgso=false`).
#
# RUSTFLAGS from the environment are not used (the build sets CARGO_ENCODED_RUSTFLAGS).
# Takes about five minutes on 2 cores (two release builds and ~10 s of training).
# Exit status: 0 built, 2 usage, 3 llvm-profdata missing and not installable, 1 anything else.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT="$ROOT/target/pgo/tally"
REQUESTS=5000
while [ $# -gt 0 ]; do
    case "$1" in
        --out|--requests)
            [ $# -ge 2 ] || { echo "error: $1 needs a value (try --help)" >&2; exit 2; }
            if [ "$1" = --out ]; then OUT="$2"; else REQUESTS="$2"; fi
            shift 2 ;;
        -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
        *) echo "error: unknown argument '$1' (try --help)" >&2; exit 2 ;;
    esac
done
# A relative --out is relative to where the script was run from.
case "$OUT" in /*) ;; *) OUT="$PWD/$OUT" ;; esac
cd "$ROOT"

find_profdata() {
    find "$(rustc --print sysroot)/lib/rustlib" -name llvm-profdata -type f 2>/dev/null | head -n 1 || true
}
PROFDATA="$(find_profdata)"
if [ -z "$PROFDATA" ] && command -v rustup > /dev/null; then
    rustup component add llvm-tools >&2 || true
    PROFDATA="$(find_profdata)"
fi
[ -n "$PROFDATA" ] || {
    echo "error: llvm-profdata not found in the toolchain and rustup could not add it;" \
        "run 'rustup component add llvm-tools' where static.rust-lang.org can be reached" >&2
    exit 3
}

WORK="$ROOT/target/pgo"
PROFILES="$WORK/profiles"
TRAIN="$WORK/train"
rm -rf "$PROFILES" "$TRAIN"
mkdir -p "$PROFILES" "$TRAIN"

echo "pgo: building the instrumented tally" >&2
CARGO_ENCODED_RUSTFLAGS="-Cprofile-generate=$PROFILES" \
    cargo build --release --locked --quiet -p tally --target-dir "$WORK/gen"
GEN="$WORK/gen/release/tally"

echo "pgo: training on generated traces ($REQUESTS requests each)" >&2
"$GEN" trace synth --requests "$REQUESTS" --seed 2 --form v2 -o "$TRAIN/v2.jsonl"
"$GEN" trace synth --requests "$REQUESTS" --seed 2 --form v4 --duplicates 0.02 --shuffle \
    -o "$TRAIN/v4.jsonl"
gzip -c "$TRAIN/v2.jsonl" > "$TRAIN/v2.jsonl.gz"
for trace in "$TRAIN/v2.jsonl" "$TRAIN/v4.jsonl" "$TRAIN/v2.jsonl.gz"; do
    "$GEN" trace account --json "$trace" > /dev/null
    "$GEN" trace account "$trace" > /dev/null
done
"$GEN" trace convert --to v4 --output "$TRAIN/converted.jsonl" "$TRAIN/v2.jsonl"
"$GEN" trace account --json "$TRAIN/converted.jsonl" > /dev/null

echo "pgo: merging the profiles" >&2
"$PROFDATA" merge -o "$WORK/merged.profdata" "$PROFILES"
# Named by its content: cargo rebuilds when its flags change, not when a file they name does.
SUM="$(sha256sum "$WORK/merged.profdata" | cut -c1-16)"
rm -f "$WORK"/tally-*.profdata
mv "$WORK/merged.profdata" "$WORK/tally-$SUM.profdata"

echo "pgo: building the optimised tally" >&2
CARGO_ENCODED_RUSTFLAGS="$(printf '%s\x1f%s' "-Cprofile-use=$WORK/tally-$SUM.profdata" \
    "-Cllvm-args=-pgso=false")" \
    cargo build --release --locked --quiet -p tally --target-dir "$WORK/use"
mkdir -p "$(dirname "$OUT")"
cp "$WORK/use/release/tally" "$OUT"
echo "pgo: $OUT" >&2
