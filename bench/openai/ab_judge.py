"""Judges one A/B run of bench/openai/ab.sh by the fake server's stamps, or (--medians FILE)
prints the medians of the lines it (or --open) wrote. One run's line: label, load, client TTFT
p50 − the server's (ms), client E2E p50 − the server's (ms), server requests/s (closed loop),
p99 dispatch lag at the server (open loop, ms), client CPU-s per 1,000 requests (closed loop),
client TTFT p50 − the server's counted from its read instead of the request's arrival (ms).
The server's truth starts at the request's arrival (`arrived_ns`, the kernel's receive stamp).

--open LABEL LOAD RATE SERVER_JSON TIME_FILE STEAL_MS judges one open-loop run of
bench/openai/ab_open.sh: label, load, p99 dispatch lag at the server (ms), the client's CPU-s per
1,000 requests (from `/usr/bin/time -f '%e %U %S'`), the hypervisor's steal time during the run
(ms, all vCPUs)."""

import json
import re
import statistics
import sys



def quantile(xs, p):
    """numpy-linear quantile (as compare.py)."""
    xs = sorted(xs)
    h = p * (len(xs) - 1)
    lo = int(h)
    return xs[lo] + (h - lo) * (xs[min(lo + 1, len(xs) - 1)] - xs[lo])


def dispatch_lag_p99(received, rate):
    """p99 of the k-th arrival's lateness behind k/rate aligned at its earliest point (as compare.py)."""
    lag = [(t - received[0]) / 1e6 - k * 1e3 / rate for k, t in enumerate(received)]
    base = min(lag)
    return quantile([x - base for x in lag], 0.99)


def measured(path):
    reqs = json.load(open(path))["requests"]
    return [r for r in reqs if r["first_token_sent_ns"] and "-warmup-" not in r["request_id"]
            and not r["request_id"].endswith("preflight")]


def arrived(r):
    """The request's arrival at the server's host (the kernel's receive stamp; servers from
    before arrived_ns was recorded: their read)."""
    return r.get("arrived_ns") or r["received_ns"]


def client(path):
    text = open(path).read()
    num = lambda pat: float(re.search(pat, text).group(1))
    return num(r"ttft p50 ([\d.]+)"), num(r"e2e p50 ([\d.]+)"), num(r"CPU ([\d.]+) s per")


if sys.argv[1] == "--open":
    label, load, rate, server_json, time_file, steal_ms = sys.argv[2:]
    reqs = measured(server_json)
    lag = dispatch_lag_p99(sorted(arrived(r) for r in reqs), float(rate))
    _wall, user, system = (float(x) for x in open(time_file).read().split()[-3:])
    print(f"{label} {load} {lag:.3f} {(user + system) / len(reqs) * 1e3:.3f} {steal_ms}")
    sys.exit(0)

if sys.argv[1] == "--medians":
    rows = {}
    for line in open(sys.argv[2]):
        f = line.split()
        rows.setdefault(f[0], []).append([float(x) for x in f[1:]])
    if len(next(iter(rows.values()))[0]) == 4:
        print("medians: label load lag-p99-ms cpu-s/1000 steal-ms")
    else:
        print("medians: label load ttft-excess-ms e2e-excess-ms server-req/s lag-p99-ms cpu-s/1000 ttft-excess-vs-read-ms")
    for label, vals in rows.items():
        print(label, *(f"{statistics.median(col):.3f}" for col in zip(*vals)), f"({len(vals)} runs)")
    sys.exit(0)

label, load, rate, closed_txt, closed_json, open_txt, open_json = sys.argv[1:]
reqs = measured(closed_json)
ms = lambda a, b: (a - b) / 1e6
s_ttft = quantile([ms(r["first_token_sent_ns"], arrived(r)) for r in reqs], 0.5)
s_e2e = quantile([ms(r["last_token_sent_ns"], arrived(r)) for r in reqs], 0.5)
r_ttft = quantile([ms(r["first_token_sent_ns"], r["received_ns"]) for r in reqs], 0.5)
span = max(r["last_token_sent_ns"] for r in reqs) - min(arrived(r) for r in reqs)
rps = len(reqs) / (span / 1e9)
c_ttft, c_e2e, cpu = client(closed_txt)
lag = dispatch_lag_p99(sorted(arrived(r) for r in measured(open_json)), float(rate))
print(f"{label} {load} {c_ttft - s_ttft:.3f} {c_e2e - s_e2e:.3f} {rps:.0f} {lag:.3f} {cpu:.3f} {c_ttft - r_ttft:.3f}")
