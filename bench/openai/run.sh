#!/usr/bin/env bash
# Side-by-side: tally bench openai, AIPerf 0.13.0 and GuideLLM 0.8.1 against one
# `tally bench fake-server --mode exact` (TTFT and gap known), one run. See README.md.
#   bench/openai/run.sh            # everything; figures in target/bench-openai/run-*/report.md
# Environment: N (closed-loop requests, 3000), C (64), RATES ("500 1000 5000"), OPEN_S (2),
# TTFT_MS (1), GAP_MS (1), OUT_TOKENS (4), IN_TOKENS (64), TOOLS ("tally aiperf guidellm").
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE="$ROOT/bench/openai"
WORK="$ROOT/target/bench-openai"
N=${N:-3000} C=${C:-64} RATES=${RATES:-"500 1000 5000"} OPEN_S=${OPEN_S:-2}
TTFT_MS=${TTFT_MS:-1} GAP_MS=${GAP_MS:-1} OUT_TOKENS=${OUT_TOKENS:-4} IN_TOKENS=${IN_TOKENS:-64}
TOOLS=${TOOLS:-"tally aiperf guidellm"}
OUT="$WORK/run-$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$OUT"
say() { echo "== $*" | tee -a "$OUT/log.txt" >&2; }
# CPU time the hypervisor gave to others while this machine's vCPUs wanted it (/proc/stat "steal").
steal_ticks() { awk '/^cpu /{print $9}' /proc/stat; }

TALLY="$ROOT/target/release/tally"
if [ ! -x "$TALLY" ] || [ -n "$(find "$ROOT/crates" -newer "$TALLY" -name '*.rs' | head -1)" ]; then
  say "building tally (release)"
  (cd "$ROOT" && cargo build --release -p tally) || { say "tally does not build"; exit 1; }
fi

# Each peer in its own venv under target/; a failed install is reported and the peer skipped.
declare -A PY=([aiperf]="aiperf==0.13.0" [guidellm]="guidellm==0.8.1")
AVAILABLE="tally"
for tool in aiperf guidellm; do
  case " $TOOLS " in *" $tool "*) ;; *) continue ;; esac
  venv="$WORK/$tool-venv"
  if [ ! -x "$venv/bin/$tool" ]; then
    say "installing ${PY[$tool]} into $venv"
    if ! { python3 -m venv "$venv" && "$venv/bin/pip" install -q "${PY[$tool]}" tokenizers; } \
        > "$OUT/$tool-install.log" 2>&1; then
      say "$tool: CANNOT BE INSTALLED here, skipped: $(tail -3 "$OUT/$tool-install.log" | tr '\n' ' ')"
      echo "install failed: $(tail -3 "$OUT/$tool-install.log" | tr '\n' ' ')" > "$OUT/$tool-unavailable.txt"
      continue
    fi
  fi
  AVAILABLE="$AVAILABLE $tool"
done
PYTHON=python3
for tool in aiperf guidellm; do [ -x "$WORK/$tool-venv/bin/python" ] && PYTHON="$WORK/$tool-venv/bin/python"; done
# The peers count tokens with a local tokenizer; tally needs none (the server reports usage).
TOK="$OUT/tokenizer"
if [ "$AVAILABLE" != tally ]; then
  "$PYTHON" "$HERE/make_tokenizer.py" "$TOK" > /dev/null || { say "cannot build the tokenizer"; exit 1; }
fi

"$TALLY" bench fake-server --mode exact --ttft "const:$TTFT_MS" --gap "const:$GAP_MS" --threads 2 \
  --address-file "$OUT/url.txt" > /dev/null 2> "$OUT/server.log" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null' EXIT
for _ in $(seq 100); do [ -s "$OUT/url.txt" ] && break; sleep 0.1; done
URL=$(cat "$OUT/url.txt"); BASE=${URL%/v1}
say "server $URL (exact: TTFT $TTFT_MS ms, gap $GAP_MS ms), tools: $AVAILABLE, load $(cut -d' ' -f1-3 /proc/loadavg)"
git -C "$ROOT" rev-parse HEAD > "$OUT/commit.txt"

# client TOOL KIND NAME COUNT [RATE|CONCURRENCY]: one run, its time/CPU/RSS and the server's stats.
client() {
  local tool=$1 kind=$2 name=$3 count=$4 arg=${5:-}
  local dir="$OUT/$tool/$name"; mkdir -p "$dir"
  curl -s -X POST "$BASE/fake/reset" > /dev/null
  cut -d' ' -f1-3 /proc/loadavg > "$dir/load.txt"
  local cmd=()
  case $tool in
    tally)
      cmd=("$TALLY" bench openai --url "$URL" --model fake-model --requests "$count"
           --input-len "fixed:$IN_TOKENS" --output-len "fixed:$OUT_TOKENS" --ignore-eos --out "$dir/run.jsonl")
      if [ "$kind" = open ]; then cmd+=(--rate "$arg" --arrivals fixed --max-in-flight 4096)
      else cmd+=(--concurrency "$arg"); fi ;;
    aiperf)
      cmd=("$WORK/aiperf-venv/bin/aiperf" profile --model fake-model --url "$BASE" --endpoint-type chat
           --streaming --tokenizer "$TOK" --request-count "$count" --prompt-input-tokens-mean "$IN_TOKENS"
           --prompt-input-tokens-stddev 0 --prompt-output-tokens-mean "$OUT_TOKENS"
           --prompt-output-tokens-stddev 0 --extra-inputs ignore_eos:true
           --output-artifact-dir "$dir/artifacts" --ui-type none --random-seed 0)
      if [ "$kind" = open ]; then cmd+=(--request-rate "$arg" --arrival-pattern constant)
      else cmd+=(--concurrency "$arg"); fi ;;
    guidellm)
      # The model name is the tokenizer's directory: GuideLLM loads its tokenizer from it.
      local profile="kind=concurrent,streams=$arg"
      [ "$kind" = open ] && profile="kind=constant,rate=$arg"
      [ "$kind" = one ] && profile="kind=synchronous"
      cmd=(env HF_HUB_OFFLINE=1 "$WORK/guidellm-venv/bin/guidellm" run
           --backend "kind=openai_http,target=$BASE,model=$TOK" --profile "$profile"
           --constraint "kind=max_requests,count=$count"
           --data "kind=synthetic_text,prompt_tokens=$IN_TOKENS,output_tokens=$OUT_TOKENS"
           --output "kind=json,path=$dir/guidellm.json" --disable-console-interactive) ;;
  esac
  printf '%q ' "${cmd[@]}" > "$dir/command.txt"
  local steal0; steal0=$(steal_ticks)
  /usr/bin/time -f '%e %U %S %M' -o "$dir/time.txt" timeout 900 "${cmd[@]}" > "$dir/stdout.txt" 2> "$dir/stderr.txt"
  echo $? > "$dir/rc.txt"
  echo $(( ($(steal_ticks) - steal0) * 1000 / $(getconf CLK_TCK) )) > "$dir/steal_ms.txt"
  curl -s "$BASE/fake/stats" > "$dir/server.json"
  say "$tool $name: rc $(cat "$dir/rc.txt"), $(cat "$dir/time.txt" | tail -1) (wall s, user s, sys s, max RSS KiB)"
}

# How often the machine itself stops running a busy program, per CPU and on all CPUs at once.
say "machine stalls: $(python3 "$HERE/stalls.py" 10 | tee "$OUT/stalls.txt" | tail -1)"
for tool in $AVAILABLE; do
  # Start-up: --help five times, then a one-request run.
  for i in 1 2 3 4 5; do
    case $tool in
      tally) h=("$TALLY" bench openai --help) ;;
      aiperf) h=("$WORK/aiperf-venv/bin/aiperf" profile --help) ;;
      guidellm) h=("$WORK/guidellm-venv/bin/guidellm" run --help) ;;
    esac
    # Nanosecond stamps: /usr/bin/time's 10 ms resolution reads tally's start-up as 0.
    t0=$(date +%s%N); "${h[@]}" > /dev/null 2>&1; t1=$(date +%s%N)
    awk -v ns=$((t1 - t0)) 'BEGIN { printf "%.6f\n", ns / 1e9 }' >> "$OUT/$tool-help.txt"
  done
  client "$tool" one one 1 1
  client "$tool" closed "closed-c$C" "$N" "$C"
  for r in $RATES; do client "$tool" open "open-$r" $((r * OPEN_S)) "$r"; done
done
# Memory per in-flight request: tally at C = 1024 against C = 1.
case " $AVAILABLE " in *" tally "*) client tally closed closed-c1024 6000 1024 ;; esac

"$PYTHON" "$HERE/compare.py" "$OUT" > "$OUT/report.md"
cat "$OUT/report.md"
say "figures in $OUT"
