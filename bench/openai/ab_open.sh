#!/usr/bin/env bash
# A/B of two `tally` binaries on the open loop of `tally bench openai`, run alternately against
# one `tally bench fake-server --mode exact --ttft const:1 --gap const:1 --threads 2` (SERVER's,
# default B's): fixed RATE/s for N requests, 64-word prompts, 4 tokens. Each run is judged by
# the server's stamps (p99 dispatch lag) and /usr/bin/time (the client's CPU).
# Usage: bench/openai/ab_open.sh A_TALLY B_TALLY [PAIRS]   (knobs: N=10000 RATE=5000 SERVER=)
# Prints one line per run (label, load, lag p99 ms, CPU-s per 1,000 requests, the hypervisor's
# steal time during the run in ms), then the medians and how many runs kept the p99 under 1 ms.
# See bench/openai/README.md ("A/B").
set -euo pipefail
A=$1 B=$2 PAIRS=${3:-8}
N=${N:-10000} RATE=${RATE:-5000} SERVER_BIN=${SERVER:-$B}
HERE=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
"$SERVER_BIN" bench fake-server --mode exact --ttft const:1 --gap const:1 --threads 2 \
  --address-file "$TMP/url" > /dev/null 2> "$TMP/server.log" &
SERVER_PID=$!
trap 'kill $SERVER_PID 2>/dev/null || true; rm -rf "$TMP"' EXIT
for _ in $(seq 100); do [ -s "$TMP/url" ] && break; sleep 0.05; done
URL=$(cat "$TMP/url"); BASE=${URL%/v1}
# CPU time the hypervisor gave to others while this machine's vCPUs wanted it (/proc/stat "steal").
steal_ticks() { awk '/^cpu /{print $9}' /proc/stat; }
one() {  # one BINARY LABEL
  curl -s -X POST "$BASE/fake/reset" > /dev/null
  local load; load=$(cut -d' ' -f1 /proc/loadavg)
  local steal0; steal0=$(steal_ticks)
  /usr/bin/time -f '%e %U %S' -o "$TMP/time" "$1" bench openai --url "$URL" --model fake-model \
    --requests "$N" --rate "$RATE" --arrivals fixed --max-in-flight 4096 --input-len fixed:64 \
    --output-len fixed:4 --ignore-eos > /dev/null 2>&1 || true  # exit 4 = late: judged below
  local steal_ms=$(( ($(steal_ticks) - steal0) * 1000 / $(getconf CLK_TCK) ))
  curl -s "$BASE/fake/stats" > "$TMP/stats.json"
  python3 "$HERE/ab_judge.py" --open "$2" "$load" "$RATE" "$TMP/stats.json" "$TMP/time" "$steal_ms" \
    | tee -a "$TMP/lines"
}
for _ in $(seq "$PAIRS"); do one "$A" A; one "$B" B; done
python3 "$HERE/ab_judge.py" --medians "$TMP/lines"
for label in A B; do
  awk -v l=$label '$1 == l { n++; if ($3 < 1) met++ } END { printf "%s: p99 under 1 ms in %d of %d runs\n", l, met, n }' "$TMP/lines"
done
