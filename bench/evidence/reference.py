#!/usr/bin/env python3
"""Account inference artifacts with the Python reference (stormlog 0.4.3).

Usage: reference.py FILE... [--compact]

Loads every FILE with ``stormlog.infer.correlation_codec.iter_inference_events`` (each file with
its own decoder, so v4 context ids stay local to their file, as ``tally trace account`` does),
resolves the records of all files together with ``resolve_inference_events``, accounts them with
``account_gpu_time`` and prints the JSON object that ``tally trace account --json`` prints
(docs/cli.md), or ``{"error": message}`` when the reference refuses the input
(exit status 1). Errors raised while reading a file carry the reference's ``line N: `` prefix.

Per-phase wall times (load, resolve, account, total) and the record count go to standard error as
one JSON line prefixed ``reference-timing: `` so a harness can pick them up.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from stormlog.infer.correlation_accounting import (
    account_gpu_time,
    resolve_inference_events,
)
from stormlog.infer.correlation_codec import iter_inference_events


def ref_json(ref: Any) -> dict[str, str]:
    return {"producer_id": ref.producer_id, "id": ref.id}


def clock_json(clock: Any) -> dict[str, str]:
    return {
        "device_uuid": clock.device_uuid,
        "clock_domain": clock.clock_domain,
        "clock_kind": clock.clock_kind,
    }


def clock_key(clock: Any) -> tuple[str, str, str]:
    return (clock.device_uuid, clock.clock_domain, clock.clock_kind)


def gpu_list(groups: dict[Any, Any]) -> list[dict[str, Any]]:
    return [
        {
            "device_clock": clock_json(clock),
            "summed_activity_ns": time_.summed_activity_ns,
            "busy_ns": time_.busy_ns,
            "activity_count": time_.activity_count,
        }
        for clock, time_ in sorted(groups.items(), key=lambda item: clock_key(item[0]))
    ]


def account(paths: list[str]) -> tuple[dict[str, Any], dict[str, float]]:
    timings: dict[str, float] = {}
    start = time.perf_counter()
    records: list[Any] = []
    for path in paths:
        records.extend(event for _, event in iter_inference_events(path))
    loaded = time.perf_counter()
    graph = resolve_inference_events(records)
    resolved = time.perf_counter()
    accounting = account_gpu_time(graph)
    accounted = time.perf_counter()
    timings.update(
        records=len(records),
        load_s=loaded - start,
        resolve_s=resolved - loaded,
        account_s=accounted - resolved,
        total_s=accounted - start,
    )
    result = {
        "run_id": graph.run_id,
        "counts": {
            "requests": len(graph.requests),
            "iterations": len(graph.iterations),
            "stages": len(graph.stages),
            "memberships": len(graph.memberships),
            "activities": len(graph.activities),
            "alignments": len(graph.alignments),
        },
        "unresolved": [
            {"event_id": item.event_id, "kind": item.kind, "ref": ref_json(item.ref)}
            for item in graph.unresolved
        ],
        "iterations": [
            {
                "iteration_ref": ref_json(ref),
                "elapsed_ns": timing.elapsed_ns,
                "gpu": gpu_list(timing.gpu),
            }
            for ref, timing in sorted(
                accounting.iterations.items(),
                key=lambda item: (item[0].producer_id, item[0].id),
            )
        ],
        "device_totals": gpu_list(accounting.device_totals),
        "unattributed_activity_refs": [
            ref_json(ref) for ref in accounting.unattributed_activity_refs
        ],
        "unmeasured_gpu_activity_refs": [
            ref_json(ref) for ref in accounting.unmeasured_gpu_activity_refs
        ],
    }
    return result, timings


def main(argv: list[str]) -> int:
    compact = "--compact" in argv
    paths = [arg for arg in argv if arg != "--compact"]
    if not paths:
        print("usage: reference.py FILE... [--compact]", file=sys.stderr)
        return 2
    try:
        result, timings = account(paths)
    except (ValueError, TypeError, UnicodeDecodeError) as exc:
        json.dump({"error": str(exc)}, sys.stdout)
        sys.stdout.write("\n")
        return 1
    if compact:
        json.dump(result, sys.stdout, separators=(",", ":"))
    else:
        json.dump(result, sys.stdout, indent=1)
    sys.stdout.write("\n")
    print("reference-timing: " + json.dumps(timings), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
