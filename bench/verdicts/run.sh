#!/usr/bin/env bash
# Verdict quality and bootstrap cost: runs crates/tally-stats/examples/verdict_quality.rs in
# release and writes its Markdown tables to bench/verdicts/results.md (and stdout).
# Usage: bench/verdicts/run.sh [--trials N] [--no-timing]
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo run --quiet --release -p tally-stats --example verdict_quality -- "$@" \
  | tee bench/verdicts/results.md
