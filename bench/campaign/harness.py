#!/usr/bin/env python3
"""Campaign benchmark harness: times the real release binaries for the three figures of the
performance contract and prints a Markdown report (see bench/campaign/README.md).

1. engine overhead per sample: `tally run --until-idle` on a temporary repository whose evaluate
   command does nothing (`sh -c "echo METRIC score=1"`), wall / samples, minus the evaluate
   command's own time measured separately; plus the runner's `examples/overhead` figure;
2. `tally status` and `tally status --json` on a campaign of 10,000 candidates and 100,000
   measurements (store built by `crates/tally-engine/examples/status_fill.rs`);
3. the bootstrap for 1,000 units x 10,000 resamples (`crates/tally-stats/examples/verdict_quality`).

Wall and CPU (user + system, children included) come from GNU time; every figure is a median.
Run through bench/campaign/run.sh, which builds what this needs first.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RELEASE = os.path.join(ROOT, "target", "release")
TALLY = os.path.join(RELEASE, "tally")
EXAMPLES = os.path.join(RELEASE, "examples")
GNU_TIME = "/usr/bin/time"

OVERHEAD_TOML = """name = "overhead"
evaluate = ["sh", "-c", "echo METRIC score=1"]
evaluate_timeout = 60

[[metrics]]
name = "score"
direction = "higher"
role = "primary"
repeats = 5
"""

# The inference template's shape with the metric names status_fill writes, and every status
# section and a fact source active, so status does all the work it does in real use.
STATUS_TOML = """name = "inference"
evaluate = ["./evaluate.sh"]
evaluate_timeout = 900

[[metrics]]
name = "tok_s"
direction = "higher"
role = "primary"
repeats = 5

[[metrics]]
name = "p50_ms"
direction = "lower"
role = "guardrail"
margin = 2.0

[[metrics]]
name = "p95_ms"
direction = "lower"
role = "watch"

[plugins.verdict_rule]
provider = "min_speedup"
min_speedup = 0.05

[plugins.stop_rule]
provider = "limits"
hold_at = { gpu_usd = 1000000 }
plateau = 100000

[[plugins.fact_source]]
provider = "gpu_hours"
gpus = 1
usd_per_gpu_hour = 2.5
"""


def log(message):
    print(message, file=sys.stderr, flush=True)


def git(repo, *args):
    subprocess.run(
        ["git", "-C", repo, "-c", "user.name=bench", "-c", "user.email=bench@example.invalid",
         *args],
        check=True, stdout=subprocess.DEVNULL)


def new_repo(path, toml, files=50):
    """A git repository with `files` small files and tally.toml, committed."""
    os.makedirs(path)
    git(path, "init", "-q", "-b", "main")
    for i in range(files):
        d = os.path.join(path, "src", f"m{i % 5}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"f{i}.py"), "w") as f:
            f.write("x = 1\n" * 50)
    with open(os.path.join(path, "tally.toml"), "w") as f:
        f.write(toml)
    git(path, "add", "-A")
    git(path, "commit", "-qm", "baseline")


def timed(argv, env=None, stdout=subprocess.DEVNULL):
    """Runs argv under GNU time: (wall s, CPU s = user + system incl. children, stdout)."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as t:
        out = subprocess.run([GNU_TIME, "-o", t.name, "-f", "%e %U %S", *argv], env=env,
                             stdout=stdout, stderr=subprocess.PIPE, text=True)
        if out.returncode != 0:
            raise SystemExit(f"{argv}: exit {out.returncode}\n{out.stderr}")
        wall, user, system = (float(x) for x in t.read().split()[-3:])
    return wall, user + system, out.stdout


def timed_precise(argv, env=None, capture=False):
    """Like `timed`, with the wall time from a monotonic clock (GNU time rounds to 10 ms)."""
    start = time.perf_counter()
    wall, cpu, stdout = timed(argv, env, subprocess.PIPE if capture else subprocess.DEVNULL)
    return time.perf_counter() - start, cpu, stdout


def measurement_count(repo, env):
    out = subprocess.run([TALLY, "status", "--json", "-C", repo], env=env, check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    return sum(len(c["measurements"]) for c in json.loads(out)["candidates"])


def loadavg():
    return "%.2f %.2f %.2f" % os.getloadavg()


def engine_overhead(scratch, rounds, per_round):
    """Rounds of `per_round` candidates; per round: wall / samples and CPU / samples."""
    repo = os.path.join(scratch, "overhead")
    new_repo(repo, OVERHEAD_TOML)
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(scratch, "cache"))
    subprocess.run([TALLY, "init", "-C", repo], env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    walls, cpus, samples_seen = [], [], 0
    counter = 0
    for _ in range(rounds):
        revisions = []
        for _ in range(per_round):
            counter += 1
            with open(os.path.join(repo, "src", "m0", "f0.py"), "w") as f:
                f.write(f"candidate = {counter}\n" * 50)
            git(repo, "commit", "-qam", f"candidate {counter}")
            revisions.append(subprocess.run(
                ["git", "-C", repo, "rev-parse", "HEAD"], check=True, stdout=subprocess.PIPE,
                text=True).stdout.strip())
        subprocess.run([TALLY, "candidate", "add", "-C", repo, *revisions], env=env,
                       check=True, stdout=subprocess.DEVNULL)
        before = measurement_count(repo, env)
        wall, cpu, _ = timed_precise([TALLY, "run", "--until-idle", "-C", repo], env)
        samples = measurement_count(repo, env) - before
        if samples <= 0:
            raise SystemExit("tally run --until-idle measured nothing")
        samples_seen += samples
        walls.append(wall / samples)
        cpus.append(cpu / samples)
    # The evaluate command's own cost: the same argv spawned from a shell loop.
    n = 200
    loop = f'for i in $(seq {n}); do sh -c "echo METRIC score=1" >/dev/null; done'
    evaluate_walls, evaluate_cpus = [], []
    for _ in range(5):
        wall, cpu, _ = timed_precise(["sh", "-c", loop])
        evaluate_walls.append(wall / n)
        evaluate_cpus.append(cpu / n)
    return {
        "per_sample_wall": statistics.median(walls),
        "per_sample_cpu": statistics.median(cpus),
        "evaluate_wall": statistics.median(evaluate_walls),
        "evaluate_cpu": statistics.median(evaluate_cpus),
        "samples": samples_seen,
        "rounds": rounds,
    }


def runner_overhead():
    out = subprocess.run([os.path.join(EXAMPLES, "overhead"), "30"], check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    median = float(re.search(r"attempt total: median ([0-9.]+) ms", out).group(1))
    cpu = float(re.search(r"CPU time per attempt[^:]*: ([0-9.]+) ms", out).group(1))
    return {"median_ms": median, "cpu_ms": cpu, "text": out.strip()}


def status_times(scratch, runs, candidates):
    repo = os.path.join(scratch, "status")
    new_repo(repo, STATUS_TOML, files=1)
    fill = subprocess.run([os.path.join(EXAMPLES, "status_fill"), repo, str(candidates)],
                          check=True, stdout=subprocess.PIPE, text=True).stdout.strip()
    log(fill)
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(scratch, "cache"))
    # Check once that the JSON holds what was filled.
    _, _, text = timed_precise([TALLY, "status", "--json", "-C", repo], env, capture=True)
    data = json.loads(text)
    total = sum(len(c["measurements"]) for c in data["candidates"])
    if len(data["candidates"]) != candidates or total != candidates * 10:
        raise SystemExit(f"status --json: {len(data['candidates'])} candidates and {total} "
                         f"measurements, expected {candidates} and {candidates * 10}")
    result = {"fill": fill, "json_bytes": len(text.encode())}
    for name, argv in [("text", [TALLY, "status", "-C", repo]),
                       ("json", [TALLY, "status", "--json", "-C", repo])]:
        timed_precise(argv, env)  # warm the page cache
        walls, cpus = [], []
        for _ in range(runs):
            wall, cpu, _ = timed_precise(argv, env)
            walls.append(wall)
            cpus.append(cpu)
        result[name] = {"wall": statistics.median(walls), "cpu": statistics.median(cpus),
                        "min": min(walls), "max": max(walls)}
    return result


def bootstrap_times():
    out = subprocess.run([os.path.join(EXAMPLES, "verdict_quality"), "--trials", "200"],
                         check=True, stdout=subprocess.PIPE, text=True).stdout
    serial = float(re.search(r"\| serial \(one thread\) \| ([0-9.]+) ms", out).group(1))
    parallel = float(re.search(r"\| parallel \(rayon pool\) \| ([0-9.]+) ms", out).group(1))
    return {"serial_ms": serial, "parallel_ms": parallel}


def verdict(wall_ms, cpu_ms, target_ms):
    """`met` on wall time; on a loaded machine, `met on CPU` when only the wait for a core
    (or the disk) takes the wall time over the target."""
    if wall_ms < target_ms:
        return "met"
    if cpu_ms is not None and cpu_ms < target_ms:
        return "met on CPU (wall over: load)"
    return "**missed**"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5,
                        help="tally run rounds for the overhead (median over rounds)")
    parser.add_argument("--candidates-per-round", type=int, default=4)
    parser.add_argument("--runs", type=int, default=9, help="timed runs of each status command")
    parser.add_argument("--status-candidates", type=int, default=10_000)
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory")
    args = parser.parse_args()

    scratch = tempfile.mkdtemp(prefix="tally-campaign-bench-")
    loads = [loadavg()]
    try:
        log("engine overhead ...")
        engine = engine_overhead(scratch, args.rounds, args.candidates_per_round)
        loads.append(loadavg())
        log("runner overhead example ...")
        runner = runner_overhead()
        loads.append(loadavg())
        log("status (filling the store first) ...")
        status = status_times(scratch, args.runs, args.status_candidates)
        loads.append(loadavg())
        log("bootstrap ...")
        boot = bootstrap_times()
        loads.append(loadavg())
    finally:
        if args.keep:
            log(f"scratch kept in {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)

    ms = lambda s: s * 1e3  # noqa: E731
    own = engine["per_sample_wall"] - engine["evaluate_wall"]
    own_cpu = engine["per_sample_cpu"] - engine["evaluate_cpu"]
    rows = [
        ("engine overhead per sample (`tally run`, minus the evaluate command)",
         own, own_cpu, 50),
        ("runner attempt (`tally-runner` `examples/overhead`)",
         runner["median_ms"] / 1e3, runner["cpu_ms"] / 1e3, 50),
        (f"`tally status`, {args.status_candidates:,} candidates",
         status["text"]["wall"], status["text"]["cpu"], 200),
        (f"`tally status --json`, {args.status_candidates:,} candidates",
         status["json"]["wall"], status["json"]["cpu"], 200),
        ("bootstrap, 1,000 units x 10,000 resamples (serial)",
         boot["serial_ms"] / 1e3, None, 50),
        ("bootstrap, 1,000 units x 10,000 resamples (rayon)",
         boot["parallel_ms"] / 1e3, None, 50),
    ]
    print(f"machine: {os.cpu_count()} CPUs; load average (1, 5, 15 min) at start and after each "
          f"part: {' | '.join(loads)}\n")
    print("| figure | median wall | CPU | target | verdict |")
    print("|---|---|---|---|---|")
    for name, wall, cpu, target in rows:
        cpu_text = "—" if cpu is None else f"{ms(cpu):.1f} ms"
        print(f"| {name} | {ms(wall):.1f} ms | {cpu_text} | < {target} ms | "
              f"{verdict(ms(wall), None if cpu is None else ms(cpu), target)} |")
    print()
    print(f"- `tally run --until-idle`: {engine['samples']} samples over {engine['rounds']} rounds "
          f"of {args.candidates_per_round} candidates (repeats = 5, so 10 samples each); per "
          f"sample {ms(engine['per_sample_wall']):.1f} ms wall, "
          f"{ms(engine['per_sample_cpu']):.1f} ms CPU (tally + git + sh), of which the evaluate "
          f"command itself {ms(engine['evaluate_wall']):.1f} ms wall, "
          f"{ms(engine['evaluate_cpu']):.1f} ms CPU (`sh -c \"echo METRIC score=1\"` spawned "
          f"200 times from a shell loop, median of 5).")
    print(f"- runner example: {runner['text'].replace(chr(10), '; ')}")
    print(f"- status store: {status['fill']}; `--json` prints {status['json_bytes']:,} bytes; "
          f"{args.runs} timed runs each after one warm-up, wall min–max "
          f"{ms(status['text']['min']):.0f}–{ms(status['text']['max']):.0f} ms (text), "
          f"{ms(status['json']['min']):.0f}–{ms(status['json']['max']):.0f} ms (JSON).")
    print("- bootstrap: median of 21 runs (`verdict_quality`'s timing table); CPU not separated.")


if __name__ == "__main__":
    main()
