#!/usr/bin/env sh
# evaluate.sh: the benchmark tally runs for every sample, in a clean checkout of the revision.
#
# The protocol (docs/evaluate-protocol.md):
# - print one line per metric on stdout: `METRIC <name>=<number>`, e.g. `METRIC tokens_per_s=1834.2`
#   (the word METRIC, one space, the name, `=`, a number; a later line overrides an earlier one);
# - exit 0 on success; any other exit, a timeout or a signal fails the sample;
# - environment: TALLY_CANDIDATE (id), TALLY_SIDE (candidate|bar), TALLY_SAMPLE (index), and
#   TALLY_UNITS_FILE, where you may write per-unit results
#   {"tokens_per_s": {"prompt-1": 120.5, ...}} that sum to the METRIC value;
# - to record the GPU busy time behind each sample, write an evidence artifact at
#   TALLY_EVIDENCE_FILE, e.g. from a PyTorch profiler trace:
#   `tally trace import kineto -o "$TALLY_EVIDENCE_FILE" trace/*.pt.trace.json.gz`;
# - use `exec` for the last command so an outside signal reaches tally as such.
#
# Replace the lines below with your benchmark: start the server on this checkout, send the
# workload, and print throughput and latency percentiles, for example:
#   exec python3 bench/serve_and_measure.py --prompts data/prompts.jsonl
echo "evaluate.sh: this is the template's stub; replace it with your benchmark" >&2
exit 1
