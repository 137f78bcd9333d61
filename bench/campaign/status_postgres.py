#!/usr/bin/env python3
"""`tally status` at 10,000 candidates on both stores: the campaign benchmark's status store
(built by `crates/tally-engine/examples/status_fill.rs` in SQLite), copied into PostgreSQL with
`tally store copy`, then `tally status` and `tally status --json` timed on each, interleaved.

Needs the release binaries (bench/campaign/run.sh builds them; or
`cargo build --release -p tally && cargo build --release -p tally-engine --example status_fill`),
GNU time, psql, and a PostgreSQL database whose role may create databases: TALLY_TEST_PG_URL,
or a throwaway server started here with scripts/pg-test-server.sh (and stopped at the end).
Usage: bench/campaign/status_postgres.py [--runs N] [--candidates N]
The CPU column is tally's own (user + system); the PostgreSQL server's work is not in it.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from harness import (EXAMPLES, ROOT, STATUS_TOML, TALLY, loadavg, log, new_repo,  # noqa: E402
                     timed_precise)

SERVER = os.path.join(ROOT, "scripts", "pg-test-server.sh")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--candidates", type=int, default=10_000)
    args = parser.parse_args()

    started_server = False
    url = os.environ.get("TALLY_TEST_PG_URL")
    if not url:
        url = subprocess.run([SERVER, "start"], check=True, stdout=subprocess.PIPE,
                             text=True).stdout.strip()
        started_server = True
    scratch = tempfile.mkdtemp(prefix="tally-status-pg-")
    database = f"tally_status_bench_{os.getpid()}"
    try:
        repo = os.path.join(scratch, "status")
        new_repo(repo, STATUS_TOML, files=1)
        log(subprocess.run([os.path.join(EXAMPLES, "status_fill"), repo, str(args.candidates)],
                           check=True, stdout=subprocess.PIPE, text=True).stdout.strip())
        subprocess.run(["psql", url, "-qc", f"CREATE DATABASE {database}"], check=True)
        pg_url = url.rsplit("/", 1)[0] + "/" + database
        env = dict(os.environ, XDG_CACHE_HOME=os.path.join(scratch, "cache"))
        env.pop("TALLY_DATABASE_URL", None)
        copy = subprocess.run([TALLY, "store", "copy", "--from",
                               "sqlite:" + os.path.join(repo, ".tally", "tally.db"),
                               "--to", pg_url], env=env, check=True, stdout=subprocess.PIPE,
                              text=True)
        log(copy.stdout.strip())
        pg_env = dict(env, TALLY_DATABASE_URL=pg_url)
        cases = [("SQLite", "text", [TALLY, "status", "-C", repo], env),
                 ("SQLite", "json", [TALLY, "status", "--json", "-C", repo], env),
                 ("PostgreSQL", "text", [TALLY, "status", "-C", repo], pg_env),
                 ("PostgreSQL", "json", [TALLY, "status", "--json", "-C", repo], pg_env)]
        times = {(store, kind): ([], []) for store, kind, _, _ in cases}
        for _, _, argv, case_env in cases:
            timed_precise(argv, case_env)  # warm caches
        for _ in range(args.runs):
            for store, kind, argv, case_env in cases:
                wall, cpu, _ = timed_precise(argv, case_env)
                times[(store, kind)][0].append(wall)
                times[(store, kind)][1].append(cpu)
        print(f"`tally status` at {args.candidates:,} candidates, median of {args.runs} "
              f"interleaved runs (load average {loadavg()}):\n")
        print("| store | command | wall (min–max) | tally CPU |")
        print("|---|---|---|---|")
        for store, kind, _, _ in cases:
            walls, cpus = times[(store, kind)]
            command = "`tally status`" if kind == "text" else "`tally status --json`"
            print(f"| {store} | {command} | {statistics.median(walls) * 1000:.0f} ms "
                  f"({min(walls) * 1000:.0f}–{max(walls) * 1000:.0f}) | "
                  f"{statistics.median(cpus) * 1000:.0f} ms |")
        for kind in ("text", "json"):
            ratio = (statistics.median(times[("PostgreSQL", kind)][0])
                     / statistics.median(times[("SQLite", kind)][0]))
            print(f"\n{kind}: PostgreSQL / SQLite wall = {ratio:.2f} (goal < 2)", end="")
        print()
    finally:
        subprocess.run(["psql", url, "-qc", f"DROP DATABASE IF EXISTS {database}"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(scratch, ignore_errors=True)
        if started_server:
            subprocess.run([SERVER, "stop"], check=False)


if __name__ == "__main__":
    main()
