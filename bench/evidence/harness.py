#!/usr/bin/env python3
"""Benchmark tally against the Python reference (stormlog 0.4.3) on synthetic artifacts.

Standard library only; run.sh sets up the tools and calls it. Subcommands:

  harness.py bench --tally BIN --python PY [--plain-tally BIN] [--sizes 10k,100k,1m]
                   [--runs N] [--reference-runs N] [--out DIR]
      Generates each trace with ``tally trace synth`` (v2, and v4 with 2% duplicates and
      shuffled delivery), times ``tally trace account FILE --json`` (median of N runs) and the
      reference (reference.py, median of --reference-runs runs, default 1), each under
      ``/usr/bin/time -v`` for wall time, CPU time and peak RSS, optionally times the hidden
      ``tally trace parse-only FILE`` (read every record, resolve nothing) and ``tally trace
      parse-only --json-only FILE`` (parse every line as JSON, nothing more) when the binary
      has them, checks that both tools print the same
      JSON value, and prints a Markdown table with the machine and the load average (also
      written to DIR/results.md, raw figures to DIR/results.json). With --plain-tally, a second
      build (run.sh passes the plain ``cargo build --release`` one beside the PGO one) runs
      alternately with --tally, gets its own columns, and must print the same bytes.

  harness.py conformance --python PY [--dir DIR]
      Runs reference.py on every conformance case and checks it reproduces the expected JSON.

  harness.py compare A.json B.json
      Compares two JSON files as values; exit status 0 when equal.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REFERENCE = HERE / "reference.py"

# Requests per size: about 19.4 records per request, as in `docs/evidence.md#reference-performance` (52 631 → ~1 M).
SIZES = {"1k": 53, "10k": 526, "100k": 5263, "1m": 52631}


def load_average() -> float:
    """The one-minute load average (how busy the shared machine was)."""
    try:
        return float(Path("/proc/loadavg").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return float("nan")


def warm(path: Path) -> None:
    """Reads a file through the page cache, untimed, so that the timed run after it reads
    memory and not the disk (as hyperfine's --prepare would). This VM's kernel pages cold
    memory out on its own (DAMON), so a trace last read a minute ago may be partly gone."""
    with path.open("rb") as f:
        while f.read(1 << 23):
            pass


def timed(
    cmd: list[str], stdout: Path, stderr: Path, input_file: Path | None = None
) -> dict[str, Any]:
    """Runs cmd under GNU time, `input_file` read into the page cache first; returns wall
    seconds, CPU seconds (user + system), peak RSS (MiB), major page faults (reads that went to
    the disk), the exit status and the load average just before the run."""
    if input_file is not None:
        warm(input_file)
    time_log = stderr.with_suffix(".time")
    load = load_average()
    with stdout.open("wb") as out, stderr.open("wb") as err:
        proc = subprocess.run(
            ["/usr/bin/time", "-v", "-o", str(time_log), *cmd], stdout=out, stderr=err
        )
    wall = rss_kib = None
    cpu = 0.0
    major_faults = 0
    for line in time_log.read_text().splitlines():
        line = line.strip()
        if line.startswith("Elapsed (wall clock) time"):
            clock = line.rsplit(" ", 1)[1]
            seconds = 0.0
            for part in clock.split(":"):
                seconds = seconds * 60 + float(part)
            wall = seconds
        elif line.startswith(("User time (seconds)", "System time (seconds)")):
            cpu += float(line.rsplit(" ", 1)[1])
        elif line.startswith("Maximum resident set size"):
            rss_kib = int(line.rsplit(" ", 1)[1])
        elif line.startswith("Major (requiring I/O) page faults"):
            major_faults = int(line.rsplit(" ", 1)[1])
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "rss_mib": (rss_kib or 0) / 1024,
        "major_faults": major_faults,
        "status": proc.returncode,
        "load": load,
    }


def machine() -> str:
    """One line about the machine: CPU model, cores, memory."""
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
        mem_kib = int(Path("/proc/meminfo").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        mem_kib = 0
    return f"{model}, {os.cpu_count()} cores, {mem_kib / 2**20:.0f} GiB memory"


def first_difference(a: Any, b: Any, path: str = "$") -> str | None:
    if type(a) is not type(b):
        return f"{path}: {type(a).__name__} vs {type(b).__name__}"
    if isinstance(a, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                return f"{path}.{key}: present on one side only"
            diff = first_difference(a[key], b[key], f"{path}.{key}")
            if diff:
                return diff
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} vs {len(b)} items"
        for k, (x, y) in enumerate(zip(a, b)):
            diff = first_difference(x, y, f"{path}[{k}]")
            if diff:
                return diff
        return None
    return None if a == b else f"{path}: {a!r} vs {b!r}"


def load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        return {"unreadable": str(exc)}


def parse_only_modes(tally: str) -> list[list[str]]:
    """The hidden `tally trace parse-only` modes the binary has: reading every record (no
    resolution), and parsing every line as JSON only (`--json-only`)."""
    proc = subprocess.run(
        [tally, "trace", "parse-only", "--help"], capture_output=True, text=True
    )
    if proc.returncode != 0:
        return []
    return [[], ["--json-only"]] if "--json-only" in proc.stdout else [[]]


def spread(total: int, groups: int) -> list[int]:
    """``total`` runs in ``groups`` turns of near-equal size (the first ones larger)."""
    return [total // groups + (1 if k < total % groups else 0) for k in range(groups)]


def bench(args: argparse.Namespace) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    modes = parse_only_modes(args.tally)
    parse_only = bool(modes)
    rows = []
    for size in args.sizes.split(","):
        requests = SIZES[size]
        for form, extra in (("v2", []), ("v4", ["--duplicates", "0.02", "--shuffle"])):
            name = f"{size}-{form}" + ("-dup-shuffle" if extra else "")
            trace = out / f"evidence-{name}.jsonl"
            synth = [args.tally, "trace", "synth", "--requests", str(requests), "--seed", "1"]
            synth += ["--form", form, *extra, "-o", str(trace)]
            gen = timed(synth, out / f"{name}.synth.out", out / f"{name}.synth.err")
            if gen["status"] != 0:
                print(f"error: tally trace synth failed for {name}; see {out}", file=sys.stderr)
                return 1
            lines = sum(1 for _ in trace.open("rb"))
            size_mb = trace.stat().st_size / 1e6
            print(f"{name}: {lines} lines, {size_mb:.0f} MB, generated in "
                  f"{gen['wall_s']:.2f} s", file=sys.stderr)

            def run_tally(count: int) -> bool:
                # With a plain build to compare, the two builds alternate run by run.
                builds = [(args.tally, "tally", tally_runs)]
                if args.plain_tally:
                    builds.append((args.plain_tally, "plain", plain_runs))
                for _ in range(count):
                    for binary, label, runs in builds:
                        run = timed(
                            [binary, "trace", "account", str(trace), "--json"],
                            out / f"{name}.{label}.json",
                            out / f"{name}.{label}.err",
                            trace,
                        )
                        if run["status"] != 0:
                            print(f"error: {binary} failed on {name}; see {out}",
                                  file=sys.stderr)
                            return False
                        runs.append(run)
                return True

            def run_reference() -> None:
                nonlocal phases
                ref_runs.append(timed(
                    [args.python, str(REFERENCE), str(trace), "--compact"],
                    out / f"{name}.reference.json",
                    out / f"{name}.reference.err",
                    trace,
                ))
                for line in (out / f"{name}.reference.err").read_text().splitlines():
                    if line.startswith("reference-timing: "):
                        phases = json.loads(line.split(": ", 1)[1])

            # The two tools take turns: tally's runs are spread before, between and after the
            # reference's, so that both sample the same stretch of a machine whose speed drifts.
            tally_runs: list[dict[str, Any]] = []
            plain_runs: list[dict[str, Any]] = []
            ref_runs: list[dict[str, Any]] = []
            phases: dict[str, float] = {}
            ref_count = 0 if args.skip_reference else args.reference_runs
            for group, count in enumerate(spread(args.runs, ref_count + 1)):
                if group > 0:
                    run_reference()
                if not run_tally(count):
                    return 1
            parse_runs: list[list[dict[str, Any]]] = [[] for _ in modes]
            for _ in range(args.runs):
                for runs, mode in zip(parse_runs, modes):
                    runs.append(timed(
                        [args.tally, "trace", "parse-only", str(trace), *mode],
                        out / f"{name}.parse.out",
                        out / f"{name}.parse.err",
                        trace,
                    ))
            ref = ref_runs or None
            same = "not checked"
            if ref is not None:
                mine = load_json(out / f"{name}.tally.json")
                theirs = load_json(out / f"{name}.reference.json")
                diff = first_difference(mine, theirs)
                same = "yes" if diff is None else f"**NO** ({diff})"
            if plain_runs:
                # Both builds must print the same bytes: PGO moves code, it does not change it.
                if (out / f"{name}.plain.json").read_bytes() != \
                        (out / f"{name}.tally.json").read_bytes():
                    same = f"**NO** (the plain build printed other bytes than {args.tally})"
            rows.append({
                "name": name, "lines": lines, "size_mb": size_mb, "synth_s": gen["wall_s"],
                "tally": tally_runs, "plain": plain_runs, "parse": parse_runs, "ref": ref,
                "phases": phases, "same": same,
            })
            print(render(rows[-1:], args.runs, args.reference_runs, parse_only), file=sys.stderr)
    table = render(rows, args.runs, args.reference_runs, parse_only)
    loads = [run["load"] for row in rows for run in row["tally"] + (row["ref"] or [])]
    faults = max((run["major_faults"] for row in rows for run in row["tally"]), default=0)
    notes = (f"\n\nMachine: {machine()}. One-minute load average before the runs: "
             f"{min(loads):.1f} to {max(loads):.1f}. Times are medians; CPU is user + system. "
             f"Each timed run follows an untimed read of its trace (page cache warm); the most "
             f"major page faults in one tally run: {faults}.")
    print(table + notes)
    (out / "results.md").write_text(table + notes + "\n")
    (out / "results.json").write_text(json.dumps(rows, indent=1) + "\n")
    return 0 if all(r["same"] in ("yes", "not checked") for r in rows) else 1


def render(rows: list[dict[str, Any]], runs: int, ref_runs: int, parse_only: bool) -> str:
    def median(items: list[dict[str, Any]], key: str = "wall_s") -> float:
        return statistics.median(r[key] for r in items)

    plain = any(r.get("plain") for r in rows)
    header = ["trace", "lines", "file", f"tally wall (median of {runs})", "tally CPU",
              "tally peak RSS"]
    if plain:
        header += ["plain build wall / CPU"]
    if parse_only:
        header += ["read only, all cores (wall / CPU)", "JSON parse only, all cores (wall / CPU)"]
    header += [f"reference wall (median of {ref_runs}; load / resolve / account)",
               "reference CPU", "reference peak RSS", "speed-up (wall)", "speed-up (CPU)",
               "memory ratio"]
    if plain:
        header += ["plain build speed-up (wall)"]
    header += ["same JSON"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in rows:
        t = median(r["tally"])
        t_cpu = median(r["tally"], "cpu_s")
        t_rss = max(x["rss_mib"] for x in r["tally"])
        rate = r["lines"] / t / 1e6 if t else float("inf")
        cells = [r["name"], f"{r['lines']:,}", f"{r['size_mb']:.0f} MB",
                 f"{t:.3f} s ({rate:.2f} M lines/s)", f"{t_cpu:.2f} s", f"{t_rss:.0f} MiB"]
        if plain:
            p_runs = r.get("plain") or []
            cells.append(f"{median(p_runs):.3f} s / {median(p_runs, 'cpu_s'):.2f} s"
                         if p_runs else "n/a")
        if parse_only:
            for k in range(2):
                runs = r["parse"][k] if k < len(r["parse"]) else []
                cells.append(f"{median(runs):.3f} s / {median(runs, 'cpu_s'):.2f} s"
                             if runs else "n/a")
        ref = r["ref"]
        if ref is None:
            cells += ["skipped", "", "", "", "", ""] + ([""] if plain else [])
        else:
            p = r["phases"]
            split = (f" ({p.get('load_s', 0):.1f} / {p.get('resolve_s', 0):.1f} / "
                     f"{p.get('account_s', 0):.1f})") if p else ""
            r_wall, r_cpu = median(ref), median(ref, "cpu_s")
            r_rss = max(x["rss_mib"] for x in ref)
            cells += [f"{r_wall:.2f} s{split}", f"{r_cpu:.1f} s", f"{r_rss:.0f} MiB",
                      f"{r_wall / t:.0f}x" if t else "n/a",
                      f"{r_cpu / t_cpu:.0f}x" if t_cpu else "n/a",
                      f"{r_rss / t_rss:.1f}x" if t_rss else "n/a"]
            if plain:
                p_runs = r.get("plain") or []
                cells.append(f"{r_wall / median(p_runs):.0f}x" if p_runs else "n/a")
        cells.append(r["same"])
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def conformance(args: argparse.Namespace) -> int:
    cases = sorted(Path(args.dir).glob("*.jsonl"))
    if not cases:
        print(f"error: no conformance cases in {args.dir}", file=sys.stderr)
        return 1
    failures = 0
    for case in cases:
        expected = load_json(case.with_suffix(".expected.json"))
        proc = subprocess.run(
            [args.python, str(REFERENCE), str(case), "--compact"],
            capture_output=True, text=True,
        )
        try:
            actual = json.loads(proc.stdout)
        except ValueError:
            actual = {"unreadable": proc.stdout + proc.stderr}
        diff = first_difference(actual, expected)
        failures += diff is not None
        print(f"{'ok  ' if diff is None else 'FAIL'} {case.name}" + (f": {diff}" if diff else ""))
    print(f"{len(cases) - failures}/{len(cases)} conformance cases reproduced by the reference")
    return 1 if failures else 0


def compare(args: argparse.Namespace) -> int:
    diff = first_difference(load_json(Path(args.a)), load_json(Path(args.b)))
    print("equal" if diff is None else f"different: {diff}")
    return 0 if diff is None else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("bench")
    b.add_argument("--tally", required=True)
    b.add_argument("--plain-tally", default="",
                   help="a second tally build (the plain release build) timed beside --tally")
    b.add_argument("--python", required=True)
    b.add_argument("--sizes", default="10k,100k,1m")
    b.add_argument("--runs", type=int, default=5)
    b.add_argument("--reference-runs", type=int, default=1)
    b.add_argument("--out", default=str(HERE.parent / "out"))
    b.add_argument("--skip-reference", action="store_true")
    c = sub.add_parser("conformance")
    c.add_argument("--python", default=sys.executable)
    c.add_argument("--dir", default=os.environ.get("CONFORMANCE_DIR", ""))
    k = sub.add_parser("compare")
    k.add_argument("a")
    k.add_argument("b")
    args = parser.parse_args()
    return {"bench": bench, "conformance": conformance, "compare": compare}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
