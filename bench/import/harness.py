#!/usr/bin/env python3
"""Times `tally trace import kineto` + `tally trace account` against the reference on the same files.

Called by run.sh (which builds tally and makes the venv); standard library only. For every input —
synthetic Kineto traces written by `tally trace synth --kineto` at the requested sizes, and the
largest real traces of testdata/traces/real — it runs, under `/usr/bin/time -v` (wall time and
peak RSS):

  tally trace import kineto TRACE -o A.jsonl --device-uuid UUID     (tally import)
  tally trace account A.jsonl                                       (tally account)
  reference.py import SEED TRACE R.jsonl UUID                       (reference import)
  reference.py account R.jsonl                                      (reference account)

Each cell is the wall time, the CPU time (user + system) and the peak RSS. `--runs` times (medians
quoted) for inputs up to `--median-max` bytes, once above; the reference
only up to `--reference-max` bytes (it holds the whole document in memory). Both tools are given
the same device UUID, so both measure the device; tally's `account --json` busy time is then
checked against the reference's (untimed). The 1-minute load average is sampled before every
timed command: the machine is shared, so the table quotes it. Prints a Markdown report (also
written to OUT/results.md).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

UUID = "GPU-5e7f0000-0000-4000-8000-00000000b0b0"
HERE = Path(__file__).resolve().parent
LOADS: list[float] = []


def parse_size(text: str) -> int:
    units = {"k": 10**3, "M": 10**6, "G": 10**9}
    text = text.strip()
    if text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def human(n: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.{0 if n / scale >= 100 else 1}f} {unit}"
    return f"{n:.0f} B"


def load() -> float:
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def timed(cmd: list[str]) -> dict:
    """Runs `cmd` under /usr/bin/time -v; wall seconds, peak RSS (MB), stdout, stderr."""
    LOADS.append(load())
    proc = subprocess.run(
        ["/usr/bin/time", "-v", *cmd], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        sys.exit(f"error: {' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", proc.stderr)
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)
    user = re.search(r"User time \(seconds\): (\S+)", proc.stderr)
    system = re.search(r"System time \(seconds\): (\S+)", proc.stderr)
    if not wall or not rss or not user or not system:
        sys.exit(f"error: cannot read /usr/bin/time's report for {cmd}")
    seconds = 0.0
    for part in wall.group(1).split(":"):
        seconds = seconds * 60 + float(part)
    return {
        "wall": seconds,
        "cpu": float(user.group(1)) + float(system.group(1)),
        "rss_mb": int(rss.group(1)) / 1024,
        "stdout": proc.stdout,
        "stderr": proc.stderr,
    }


def repeat(cmd: list[str], runs: int) -> dict:
    results = [timed(cmd) for _ in range(runs)]
    walls = [r["wall"] for r in results]
    return {
        "wall": statistics.median(walls),
        "walls": walls,
        "cpu": statistics.median(r["cpu"] for r in results),
        "rss_mb": max(r["rss_mb"] for r in results),
        "stdout": results[-1]["stdout"],
        "stderr": results[-1]["stderr"],
        "runs": runs,
    }


def generate(tally: str, out: Path, size: int, seed: int) -> tuple[Path, float]:
    path = out / f"synth-seed{seed}-{size}.pt.trace.json"
    if path.exists() and path.stat().st_size >= size:
        return path, float("nan")
    started = time.perf_counter()
    subprocess.run(
        [tally, "trace", "synth", "--kineto", "--hosts", "1", "--seed", str(seed),
         "--target-bytes", str(size), "-o", str(path)],
        check=True,
    )
    return path, time.perf_counter() - started


def tally_busy(tally: str, artifact: Path) -> int:
    proc = subprocess.run(
        [tally, "trace", "account", str(artifact), "--json"],
        capture_output=True, text=True, check=True,
    )
    return sum(d["busy_ns"] for d in json.loads(proc.stdout)["device_totals"])


def measure(args, name: str, trace: Path, out: Path, seed_artifact: Path) -> dict:
    size = trace.stat().st_size
    json_size = size
    if trace.suffix == ".gz":
        import gzip

        with gzip.open(trace, "rb") as f:
            json_size = sum(len(chunk) for chunk in iter(lambda: f.read(1 << 20), b""))
    runs = args.runs if json_size <= args.median_max else 1
    artifact = out / f"{name}.tally.jsonl"
    print(f"[{name}] {human(json_size)}: tally import ×{runs}", file=sys.stderr, flush=True)
    imp = repeat(
        [args.tally, "trace", "import", "kineto", str(trace), "-o", str(artifact),
         "--device-uuid", UUID],
        runs,
    )
    events = re.search(r"(\d+) GPU events", imp["stdout"] + imp["stderr"])
    print(f"[{name}] tally account ×{runs}", file=sys.stderr, flush=True)
    acc = repeat([args.tally, "trace", "account", str(artifact)], runs)
    row = {
        "name": name,
        "json_bytes": json_size,
        "file_bytes": size,
        "gpu_events": int(events.group(1)) if events else None,
        "artifact_bytes": artifact.stat().st_size,
        "tally_import": imp,
        "tally_account": acc,
    }
    if json_size <= args.reference_max and not args.skip_reference:
        ref_runs = args.runs if json_size <= args.reference_median_max else 1
        ref_artifact = out / f"{name}.reference.jsonl"
        script = str(HERE / "reference.py")
        print(f"[{name}] reference import ×{ref_runs}", file=sys.stderr, flush=True)
        rimp = repeat(
            [args.python, script, "import", str(seed_artifact), str(trace), str(ref_artifact), UUID],
            ref_runs,
        )
        print(f"[{name}] reference account ×{ref_runs}", file=sys.stderr, flush=True)
        racc = repeat([args.python, script, "account", str(ref_artifact)], ref_runs)
        row["reference_import"] = rimp
        row["reference_account"] = racc
        row["reference_busy"] = json.loads(racc["stdout"])["busy_ns"]
        row["tally_busy"] = tally_busy(args.tally, artifact)
        ref_artifact.unlink()
    if not args.keep:
        artifact.unlink()
    return row


def cell(result: dict | None) -> str:
    if result is None:
        return "—"
    return f"{result['wall']:.2f} s ({result['cpu']:.2f} s CPU) · {result['rss_mb']:.0f} MB"


def table(rows: list[dict]) -> str:
    lines = [
        "| input | JSON size | GPU events | tally import | tally account | reference import | reference account | import ratio | import + account ratio | busy ns: tally / reference |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ti, ta = r["tally_import"], r["tally_account"]
        ri, ra = r.get("reference_import"), r.get("reference_account")
        ratio = total = busy = "—"
        if ri is not None:
            ratio = f"{ri['wall'] / ti['wall']:.1f}× ({ri['cpu'] / ti['cpu']:.1f}× CPU)"
            total = (
                f"{(ri['wall'] + ra['wall']) / (ti['wall'] + ta['wall']):.1f}× "
                f"({(ri['cpu'] + ra['cpu']) / (ti['cpu'] + ta['cpu']):.1f}× CPU)"
            )
            tb, rb = r["tally_busy"], r["reference_busy"]
            busy = f"{tb} / {rb}" + (" (equal)" if tb == rb else "")
        runs = f" (median of {ti['runs']})" if ti["runs"] > 1 else " (1 run)"
        events = f"{r['gpu_events']:,}".replace(",", " ") if r["gpu_events"] else "?"
        lines.append(
            f"| {r['name']}{runs} | {human(r['json_bytes'])} | {events} | {cell(ti)} | {cell(ta)} "
            f"| {cell(ri)} | {cell(ra)} | {ratio} | {total} | {busy} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tally", required=True)
    parser.add_argument("--python", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--real", required=True, help="testdata/traces/real")
    parser.add_argument("--sizes", default="50M,500M,2.5G")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--median-max", default="600M")
    parser.add_argument("--reference-max", default="600M")
    parser.add_argument("--reference-median-max", default="60M")
    parser.add_argument("--skip-reference", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the artifacts")
    args = parser.parse_args()
    for key in ("median_max", "reference_max", "reference_median_max"):
        setattr(args, key, parse_size(getattr(args, key)))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    seed_source = out / "seed-source.jsonl"
    subprocess.run([args.tally, "trace", "synth", "--requests", "1", "-o", str(seed_source)], check=True)
    seed_artifact = out / "seed.jsonl"
    with open(seed_source) as src, open(seed_artifact, "w") as dst:
        dst.write(next(line for line in src if '"infer.artifact"' in line))

    rows = []
    generation = []
    for real in ("kineto_resnet50_legacy.pt.trace.json.gz", "hta_multistream_rank0.json.gz"):
        path = Path(args.real) / real
        if path.exists():
            rows.append(measure(args, real, path, out, seed_artifact))
    for size in [parse_size(s) for s in args.sizes.split(",") if s]:
        print(f"generating a {human(size)} synthetic trace", file=sys.stderr, flush=True)
        trace, seconds = generate(args.tally, out, size, args.seed)
        if seconds == seconds:  # not NaN: generated now
            generation.append((trace.stat().st_size, seconds))
        rows.append(measure(args, f"synthetic {human(size)}", trace, out, seed_artifact))

    loads = sorted(LOADS)
    report = [
        table(rows),
        "",
        f"Load average (1 min) before the timed commands: min {loads[0]:.1f}, "
        f"median {statistics.median(loads):.1f}, max {loads[-1]:.1f} on {os.cpu_count()} CPUs.",
    ]
    for size, seconds in generation:
        report.append(
            f"Generating {human(size)} took {seconds:.1f} s ({size / seconds / 1e6:.0f} MB/s)."
        )
    for r in rows:
        walls = ", ".join(f"{w:.2f}" for w in r["tally_import"]["walls"])
        report.append(f"{r['name']}: tally import runs {walls} s; artifact {human(r['artifact_bytes'])}.")
    text = "\n".join(report)
    (out / "results.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
