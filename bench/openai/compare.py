"""Reads a run directory of bench/openai/run.sh and prints the side-by-side report (markdown):
each client's TTFT, inter-token and E2E p50 against the fake server's own stamps, the highest
closed-loop rate, the p99 dispatch lag at fixed open-loop rates (measured at the server, the same
way for every client), CPU per 1,000 requests, peak memory and start-up time, with ratios to
tally. Usage: python compare.py RUN_DIR"""

import json
import pathlib
import statistics
import sys

out = pathlib.Path(sys.argv[1])
TOOLS = [t for t in ("tally", "aiperf", "guidellm") if (out / t).is_dir()]


def quantile(xs, p):
    xs = sorted(xs)
    if not xs:
        return None
    h = p * (len(xs) - 1)
    lo = int(h)
    return xs[lo] + (h - lo) * (xs[min(lo + 1, len(xs) - 1)] - xs[lo])


def server(run):
    """The server's truth for one run: ms values per request, and its rate."""
    path = run / "server.json"
    try:
        reqs = json.loads(path.read_text())["requests"]
    except (OSError, ValueError, KeyError):
        return None
    reqs = [r for r in reqs if r["first_token_sent_ns"] and not r["request_id"].endswith("preflight")]
    if not reqs:
        return None
    ms = lambda a, b: (a - b) / 1e6
    # The truth starts at the request's arrival (the kernel's receive stamp, docs/bench.md#kernel-stamps).
    arrived = lambda r: r.get("arrived_ns") or r["received_ns"]
    ttft = [ms(r["first_token_sent_ns"], arrived(r)) for r in reqs]
    e2e = [ms(r["last_token_sent_ns"], arrived(r)) for r in reqs]
    itl = [
        ms(r["last_token_sent_ns"], r["first_token_sent_ns"]) / (r["output_tokens"] - 1)
        for r in reqs
        if r["output_tokens"] > 1
    ]
    start = min(arrived(r) for r in reqs)
    end = max(r["last_token_sent_ns"] for r in reqs)
    received = sorted(arrived(r) for r in reqs)
    return {
        "n": len(reqs),
        "ttft": quantile(ttft, 0.5),
        "itl": quantile(itl, 0.5),
        "e2e": quantile(e2e, 0.5),
        "rps": len(reqs) / ((end - start) / 1e9) if end > start else None,
        "received": received,
    }


def dispatch_lag_p99(received, rate):
    """p99 of how late the k-th request reached the server behind a fixed schedule k/rate that
    starts at the earliest point consistent with it (ms)."""
    if not received:
        return None
    lag = [(t - received[0]) / 1e6 - k * 1e3 / rate for k, t in enumerate(received)]
    base = min(lag)
    return quantile([x - base for x in lag], 0.99)


def client_p50(tool, run):
    """The client's own TTFT, inter-token and E2E p50 (ms), and requests/s."""
    try:
        if tool == "tally":
            m = {}
            for line in (run / "stdout.txt").read_text().splitlines():
                if line.startswith("METRIC "):
                    k, v = line[7:].split("=", 1)
                    m[k] = float(v)
            return m.get("ttft_p50_ms"), m.get("tpot_p50_ms"), m.get("e2e_p50_ms"), m.get("requests_per_s")
        if tool == "aiperf":
            d = json.loads((run / "artifacts" / "profile_export_aiperf.json").read_text())
            g = lambda k: (d.get(k) or {}).get("p50")
            return g("time_to_first_token"), g("inter_token_latency"), g("request_latency"), d["request_throughput"]["avg"]
        if tool == "guidellm":
            b = json.loads((run / "guidellm.json").read_text())["benchmarks"][0]["metrics"]
            g = lambda k, s=1.0: b[k]["successful"]["median"] * s
            rps = b["request_totals"]["successful"] / json.loads((run / "guidellm.json").read_text())["benchmarks"][0]["duration"]
            return g("time_to_first_token_ms"), g("inter_token_latency_ms"), g("request_latency", 1e3), rps
    except (OSError, ValueError, KeyError, TypeError, IndexError, ZeroDivisionError):
        return None
    return None


def times(run):
    try:
        wall, user, sys_, rss = (run / "time.txt").read_text().split()[-4:]
        return float(wall), float(user) + float(sys_), int(rss)
    except (OSError, ValueError):
        return None


def fmt(x, digits=2):
    return "—" if x is None else f"{x:,.{digits}f}"


def ratio(x, ref):
    return "—" if x is None or not ref else f"{x / ref:,.1f}×"


runs = sorted(p.name for p in (out / "tally").iterdir()) if (out / "tally").is_dir() else []
commit = (out / "commit.txt").read_text().strip() if (out / "commit.txt").exists() else "?"
print(f"Run `{out.name}`, commit `{commit[:12]}`.\n")
for t in ("aiperf", "guidellm"):
    if (out / f"{t}-unavailable.txt").exists():
        print(f"- **{t} could not be run here**: {(out / f'{t}-unavailable.txt').read_text().strip()}")
for t in TOOLS:
    for run in sorted((out / t).iterdir()):
        rc = (run / "rc.txt").read_text().strip() if (run / "rc.txt").exists() else "?"
        if rc not in ("0", "4"):
            err = (run / "stderr.txt").read_text().strip().splitlines()[-1:] if (run / "stderr.txt").exists() else []
            print(f"- {t} {run.name}: exit {rc} {' '.join(err)[:200]}")
print()

closed = next((r for r in runs if r.startswith("closed-c") and r != "closed-c1024"), None)
print(f"### Accuracy at C = {closed[8:] if closed else '?'} (p50, ms; client − server truth)\n")
print("| client | load | TTFT | truth | Δ | inter-token | truth | Δ | E2E | truth | Δ | req/s (client) | req/s (server) |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
best = {}
for t in TOOLS:
    run = out / t / (closed or "")
    s, c = server(run), client_p50(t, run)
    load = (run / "load.txt").read_text().split()[0] if (run / "load.txt").exists() else "?"
    if not s or not c:
        print(f"| {t} | {load} | no result |" + " |" * 11)
        continue
    d = lambda a, b: None if a is None or b is None else a - b
    best[t] = s["rps"]
    print(
        f"| {t} | {load} | {fmt(c[0])} | {fmt(s['ttft'])} | {fmt(d(c[0], s['ttft']))} | {fmt(c[1])} | {fmt(s['itl'])} | "
        f"{fmt(d(c[1], s['itl']))} | {fmt(c[2])} | {fmt(s['e2e'])} | {fmt(d(c[2], s['e2e']))} | {fmt(c[3], 0)} | {fmt(s['rps'], 0)} |"
    )

print("\n### Load, cost and start-up (ratios: the peer's figure ÷ tally's, rates tally's ÷ the peer's)\n")
rates = sorted({int(r[5:]) for t in TOOLS for r in (p.name for p in (out / t).iterdir()) if r.startswith("open-")})
head = "| client | closed-loop req/s (server) | " + " | ".join(f"p99 dispatch lag at {r}/s (ms)" for r in rates)
print(head + " | CPU-s per 1,000 req | peak RSS (MiB) | `--help` (ms, median of 5) | one-request run (s) |")
print("|---" * (6 + len(rates)) + "|")
rows = {}
for t in TOOLS:
    lags = []
    for r in rates:
        s = server(out / t / f"open-{r}")
        lags.append(dispatch_lag_p99(s["received"], r) if s else None)
    tc, t1 = times(out / t / (closed or "")), times(out / t / "one")
    cpu = None
    if tc and t1 and closed:
        n = server(out / t / closed)
        cpu = (tc[1] - t1[1]) / max((n["n"] if n else 1) - 1, 1) * 1000
    helps = []
    try:
        helps = [float(x) for x in (out / f"{t}-help.txt").read_text().split()]
    except (OSError, ValueError):
        pass
    help_ms = statistics.median(helps) * 1000 if helps else None
    rows[t] = (best.get(t), lags, cpu, tc[2] / 1024 if tc else None, help_ms, t1[0] if t1 else None)
ref = rows.get("tally")
for t, (rps, lags, cpu, rss, help_ms, one) in rows.items():
    cells = [fmt(rps, 0) + ("" if t == "tally" or not ref else f" ({ratio(ref[0], rps)})")]
    for i, lag in enumerate(lags):
        cells.append(fmt(lag, 2) + ("" if t == "tally" or not ref else f" ({ratio(lag, ref[1][i])})"))
    for value, r in ((cpu, ref[2] if ref else None), (rss, ref[3] if ref else None), (help_ms, ref[4] if ref else None), (one, ref[5] if ref else None)):
        cells.append(fmt(value, 2) + ("" if t == "tally" or not ref else f" ({ratio(value, r)})"))
    print(f"| {t} | " + " | ".join(cells) + " |")

big, one = times(out / "tally" / "closed-c1024"), times(out / "tally" / "one")
if big and one:
    print(f"\ntally memory per in-flight request: (max RSS at C = 1024 − at one request) ÷ 1023 = "
          f"{(big[2] - one[2]) / 1023:.1f} KiB.")
steals = []
for t in TOOLS:
    for r in rates:
        f = out / t / f"open-{r}" / "steal_ms.txt"
        if f.exists():
            steals.append(f"{t} {r}/s {f.read_text().strip()} ms")
if steals:
    print("Steal time (the hypervisor running other work on this machine's vCPUs) during each "
          "open-loop run: " + ", ".join(steals) + ".")
stalls = out / "stalls.txt"
if stalls.exists() and stalls.read_text().strip():
    print("The machine before the runs (`stalls.py`, a spinning process on each CPU): "
          + stalls.read_text().strip().splitlines()[-1] + ".")
loads = sorted(float((p / "load.txt").read_text().split()[0]) for t in TOOLS for p in (out / t).iterdir() if (p / "load.txt").exists())
if loads:
    print(f"Load average (1 min) at the runs' starts: median {statistics.median(loads):.2f}, range {loads[0]:.2f}–{loads[-1]:.2f}.")
