#!/usr/bin/env bash
# Verdict quality and bootstrap cost: runs crates/tally-stats/examples/verdict_quality.rs in
# release and writes its Markdown tables to bench/verdicts/results.md (and stdout): the fixed and
# the sequential design on clean and rough machines, 20,000 candidates per cell (about 14 min on
# two busy cores; --only rough|clean runs one group). See docs/verdicts.md.
# Usage: bench/verdicts/run.sh [--trials N] [--only clean|rough] [--no-timing]
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo run --quiet --release -p tally-stats --example verdict_quality -- "$@" \
  | tee bench/verdicts/results.md
