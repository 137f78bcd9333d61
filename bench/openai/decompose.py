"""Splits tally's figures of one run directory of bench/openai/run.sh (e.g.
target/bench-openai/run-*/tally/closed-c64) against the fake server's stamps: where a request's
time went between the client's intent and the server's truth. Usage: python decompose.py DIR...

Client stamps are wall-clock ns, the server's are ns after its start on the monotonic clock; both
come from one host, so their offset is constant, and it is taken as the smallest difference seen
(the fastest transit): the legs below are "more than the fastest", in ms."""

import json
import sys


def quantile(xs, p):
    xs = sorted(xs)
    return xs[int(p * (len(xs) - 1))]


for d in sys.argv[1:]:
    records = [json.loads(line) for line in open(f"{d}/run.jsonl")]
    records = [r for r in records if r.get("phase") == "measured" and r.get("first_token_ns")]
    served = {r["request_id"]: r for r in json.load(open(f"{d}/server.json"))["requests"]}
    legs = {
        "dispatch lag (intended to the send stamp)": [r["dispatch_lag_ms"] for r in records],
        "send to the server's arrival stamp": [served[r["x_request_id"]]["arrived_ns"] - r["sent_ns"] for r in records],
        "server: arrival to its read": [(served[r["x_request_id"]]["received_ns"] - served[r["x_request_id"]]["arrived_ns"]) / 1e6 for r in records],
        "server: arrival to the first token's write (its truth)": [(served[r["x_request_id"]]["first_token_sent_ns"] - served[r["x_request_id"]]["arrived_ns"]) / 1e6 for r in records],
        "the first token's write to the client's stamp": [r["first_token_ns"] - served[r["x_request_id"]]["first_token_sent_ns"] for r in records],
        "client TTFT": [(r["first_token_ns"] - r["intended_ns"]) / 1e6 for r in records],
    }
    print(d, f"({len(records)} requests)")
    for name, xs in legs.items():
        if name in ("send to the server's arrival stamp", "the first token's write to the client's stamp"):
            low = min(xs)
            xs = [(x - low) / 1e6 for x in xs]
        print(f"  {name}: p50 {quantile(xs, 0.5):.3f}  p90 {quantile(xs, 0.9):.3f}  p99 {quantile(xs, 0.99):.3f}")
