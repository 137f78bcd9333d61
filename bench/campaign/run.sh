#!/usr/bin/env bash
# Campaign performance benchmark: builds the release binary and the three examples it times,
# then runs bench/campaign/harness.py, which prints a Markdown table (figure, median wall, CPU,
# target, verdict) and notes; the output is also written to bench/campaign/results.md.
#
# Usage: bench/campaign/run.sh [--rounds N] [--candidates-per-round N] [--runs N]
#                              [--status-candidates N] [--keep]
# Needs: cargo, git, python3, GNU time at /usr/bin/time. Scratch goes to a temporary directory
# (removed unless --keep); worktrees go under it too (XDG_CACHE_HOME), never under ~/.cache.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -x /usr/bin/time ] || { echo "error: GNU time is missing at /usr/bin/time (apt-get install time)" >&2; exit 1; }
cargo build --quiet --release -p tally
cargo build --quiet --release -p tally-engine --example status_fill
cargo build --quiet --release -p tally-runner --example overhead
cargo build --quiet --release -p tally-stats --example verdict_quality
python3 bench/campaign/harness.py "$@" | tee bench/campaign/results.md
