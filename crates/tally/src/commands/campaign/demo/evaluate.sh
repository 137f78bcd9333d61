#!/bin/sh
# The demo's benchmark: starts the engine of engine.conf (`tally bench fake-server --mode
# batched`, a real HTTP server on loopback), measures it with `tally bench openai` (8 users asking
# for 128 tokens each, a 0.8 s window after 0.2 s of warm-up), and stops it. The METRIC lines
# are tally bench's.
set -e
. ./engine.conf
TALLY=@TALLY@
url=$(mktemp)
"$TALLY" bench fake-server --mode batched --step-base "$step_base" --step-per-seq "$step_per_seq" \
  --prefill-per-token "$prefill_per_token" --max-batch "$max_batch" --address-file "$url" >/dev/null &
server=$!
trap 'kill "$server" 2>/dev/null; rm -f "$url"' EXIT
while [ ! -s "$url" ]; do
  kill -0 "$server" 2>/dev/null || { echo "evaluate.sh: the engine did not start" >&2; exit 1; }
  sleep 0.02
done
"$TALLY" bench openai --url "$(cat "$url")" --model fake-model --concurrency 8 \
  --warmup 200ms --duration 800ms --input-len fixed:64 --output-len fixed:128 --ignore-eos
