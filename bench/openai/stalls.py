"""How long this machine stops running a busy program: one spinning process pinned to each CPU
reads the monotonic clock in a tight loop for SECONDS and records every gap over 0.3 ms (the
process was not running: another task, the kernel, or the hypervisor had its CPU), then prints,
per CPU, the gaps' count and total, and the time all CPUs were stopped at once (no spinner ran:
the kernel or the host had every CPU, a whole-machine stall that no client can schedule around),
with the longest.

    python3 bench/openai/stalls.py [SECONDS]      # default 20; needs every CPU idle

Used by docs/performance.md#openai-stalls to tell a client's own lateness from the machine's.
"""

import multiprocessing
import os
import sys
import time

GAP_NS = 300_000


def spin(cpu, seconds, out):
    os.sched_setaffinity(0, {cpu})
    now = time.monotonic_ns
    end = now() + int(seconds * 1e9)
    gaps = []
    prev = now()
    while prev < end:
        t = now()
        if t - prev > GAP_NS:
            gaps.append((prev, t))
        prev = t
    out.put((cpu, gaps))


def overlap(per_cpu):
    """Intervals during which every CPU was in a gap."""
    common = per_cpu[0]
    for gaps in per_cpu[1:]:
        merged = []
        for a0, a1 in common:
            for b0, b1 in gaps:
                lo, hi = max(a0, b0), min(a1, b1)
                if hi > lo:
                    merged.append((lo, hi))
        common = merged
    return common


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 20.0
    cpus = sorted(os.sched_getaffinity(0))
    out = multiprocessing.Queue()
    procs = [multiprocessing.Process(target=spin, args=(c, seconds, out)) for c in cpus]
    for p in procs:
        p.start()
    results = dict(out.get() for _ in procs)
    for p in procs:
        p.join()
    per_cpu = [results[c] for c in cpus]
    for cpu, gaps in zip(cpus, per_cpu):
        total = sum(b - a for a, b in gaps) / 1e6
        longest = max((b - a for a, b in gaps), default=0) / 1e6
        print(f"cpu {cpu}: {len(gaps)} gaps over 0.3 ms, {total:.1f} ms in all, longest {longest:.2f} ms")
    common = overlap(per_cpu)
    total = sum(b - a for a, b in common) / 1e6
    longest = max((b - a for a, b in common), default=0) / 1e6
    times = "once" if len(common) == 1 else f"{len(common)} times"
    print(f"all {len(cpus)} CPUs stopped at once: {times}, {total:.1f} ms in {seconds:g} s "
          f"({total / seconds:.1f} ms per second), longest {longest:.2f} ms")


if __name__ == "__main__":
    main()
