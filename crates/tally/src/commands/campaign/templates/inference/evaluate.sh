#!/usr/bin/env sh
# evaluate.sh: the benchmark tally runs for every sample, in a clean checkout of the revision.
#
# The protocol (docs/evaluate-protocol.md):
# - print one line per metric on stdout: `METRIC <name>=<number>`, e.g. `METRIC tokens_per_s=1834.2`
#   (the word METRIC, one space, the name, `=`, a number; a later line overrides an earlier one);
# - exit 0 on success; any other exit, a timeout or a signal fails the sample;
# - environment: TALLY_CANDIDATE (id), TALLY_SIDE (candidate|bar), TALLY_SAMPLE (index), and
#   TALLY_UNITS_FILE, TALLY_EVIDENCE_FILE (see docs/evaluate-protocol.md);
# - use `exec` for the last command so an outside signal reaches tally as such.
#
# As written it starts nothing: it drives the OpenAI-compatible server already listening at
# $TALLY_BENCH_URL (its base URL, e.g. http://127.0.0.1:8000/v1) with `tally bench openai`, which
# prints tokens_per_s, p50_ms, p95_ms and the other figures of docs/bench.md, and exits 4 when the
# run cannot be trusted (too many errors, or a client that could not keep its schedule).
#
# To measure each revision on its own build, start your server here, per sample, and stop it
# afterwards (then drop the `exec` below), for example:
#   vllm serve "$TALLY_BENCH_MODEL" --port 8000 >server.log 2>&1 &
#   server=$!; trap 'kill "$server"' EXIT
#   until curl -sf http://127.0.0.1:8000/health >/dev/null; do sleep 1; done
#   TALLY_BENCH_URL=http://127.0.0.1:8000/v1
# To try the template without a GPU, `tally bench fake-server --mode batched` serves a simulated
# continuous-batching engine and prints its URL.
: "${TALLY_BENCH_URL:?set TALLY_BENCH_URL to the server's OpenAI base URL, e.g. http://127.0.0.1:8000/v1}"
: "${TALLY_BENCH_MODEL:?set TALLY_BENCH_MODEL to the model name the server serves}"

# 16 users in a closed loop, 5 s of warm-up, a 30 s window; 512-token prompts, 128 output tokens.
exec tally bench openai --url "$TALLY_BENCH_URL" --model "$TALLY_BENCH_MODEL" \
  --concurrency 16 --warmup 5s --duration 30s \
  --input-len fixed:512 --output-len fixed:128 --ignore-eos --seed 0
