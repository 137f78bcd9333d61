#!/usr/bin/env sh
# evaluate.sh: the benchmark tally runs for every sample, in a clean checkout of the revision.
# Print `METRIC <name>=<number>` on stdout and exit 0 (docs/evaluate-protocol.md).
# Replace the stub below with your benchmark, e.g. `exec python3 bench.py`.
echo "evaluate.sh: this is the template's stub; replace it with your benchmark" >&2
exit 1
