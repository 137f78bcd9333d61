#!/usr/bin/env bash
# A/B of two builds of the load generator (crates/tally-bench/examples/loadgen.rs), run
# alternately, each run against its own fresh fake server (the A binary's `loadgen server 2`, or SERVER's:
# exact timing, TTFT 1 ms, 4 tokens, no gap), judged by the server's own stamps:
#   closed: C = 64, N requests: client TTFT / E2E p50 − the server's, server requests/s;
#   open:   fixed RATE/s for OPEN_S s: p99 dispatch lag at the server.
# Usage: bench/openai/ab.sh A_BINARY B_BINARY [PAIRS]   (knobs: N=5000 RATE=5000 OPEN_S=2,
#        SERVER=BINARY whose `loadgen server 2` serves both builds; default A_BINARY)
# Prints one line per run, then the medians per binary. See bench/openai/README.md ("A/B").
set -euo pipefail
A=$1 B=$2 PAIRS=${3:-4}
N=${N:-5000} RATE=${RATE:-5000} OPEN_S=${OPEN_S:-2} SERVER_BIN=${SERVER:-$A}
HERE=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
trap 'kill ${SERVER:-} 2>/dev/null || true; rm -rf "$TMP"' EXIT
one() {  # one BINARY LABEL
  "$SERVER_BIN" server 2 > "$TMP/url" &
  SERVER=$!
  for _ in $(seq 100); do [ -s "$TMP/url" ] && break; sleep 0.05; done
  local url base; url=$(head -1 "$TMP/url"); base=${url%/v1}
  local load; load=$(cut -d' ' -f1 /proc/loadavg)
  curl -s -X POST "$base/fake/reset" > /dev/null
  "$1" closed "$url" 64 "$N" > "$TMP/closed.txt"
  curl -s "$base/fake/stats" > "$TMP/closed.json"
  curl -s -X POST "$base/fake/reset" > /dev/null
  "$1" open "$url" "$RATE" "$OPEN_S" > "$TMP/open.txt"
  curl -s "$base/fake/stats" > "$TMP/open.json"
  kill $SERVER; wait $SERVER 2>/dev/null || true
  python3 "$HERE/ab_judge.py" "$2" "$load" "$RATE" "$TMP/closed.txt" "$TMP/closed.json" \
    "$TMP/open.txt" "$TMP/open.json" | tee -a "$TMP/lines"
}
for _ in $(seq "$PAIRS"); do one "$A" A; one "$B" B; done
python3 "$HERE/ab_judge.py" --medians "$TMP/lines"
