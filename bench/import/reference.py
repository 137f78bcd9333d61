#!/usr/bin/env python3
"""The reference's Kineto import and accounting (stormlog 0.4.3), as `stormlog infer import-trace`.

Usage:
    reference.py import SEED_ARTIFACT TRACE OUT_ARTIFACT [DEVICE_UUID]
    reference.py account ARTIFACT

`import` copies SEED_ARTIFACT (any artifact whose first record is an `infer.artifact` record: the
reference only appends to an existing artifact) to OUT_ARTIFACT and appends the trace's GPU
activity with `stormlog.infer.trace_import.import_traces_into_artifact(..., detail="kernel")`, the
library call behind `stormlog infer import-trace --detail kernel` (whose CLI module needs SciPy,
which this venv leaves out). `account` loads the artifact with
`correlation_codec.iter_inference_events`, resolves and accounts it, as `bench/evidence/reference.py`
does. DEVICE_UUID is given as device 0's UUID (`--device-uuid 0=UUID`): without one the reference
leaves Kineto devices unidentified and accounts none of their time. Both print one JSON line: what they did and the figures (GPU events, busy/summed ns).
"""

from __future__ import annotations

import json
import shutil
import sys


def do_import(seed: str, trace: str, out: str, uuid: str | None = None) -> dict:
    from stormlog.infer.trace_import import import_traces_into_artifact

    shutil.copyfile(seed, out)
    uuids = {0: uuid} if uuid else None
    capture = import_traces_into_artifact(out, [trace], detail="kernel", device_uuids=uuids)
    traces = (capture.summary or {}).get("traces", [])
    summary = traces[0] if traces else {}
    devices = summary.get("devices", {})
    return {
        "records": len(capture.events),
        "gpu_events": summary.get("gpu_events"),
        "linked_gpu_events": summary.get("linked_gpu_events"),
        "busy_ns": sum(d.get("busy_ns", 0) for d in devices.values()),
        "summed_ns": sum(d.get("summed_ns", 0) for d in devices.values()),
    }


def do_account(artifact: str) -> dict:
    from stormlog.infer.correlation_accounting import account_gpu_time, resolve_inference_events
    from stormlog.infer.correlation_codec import iter_inference_events

    records = [event for _, event in iter_inference_events(artifact)]
    graph = resolve_inference_events(records)
    accounting = account_gpu_time(graph)
    totals = list(accounting.device_totals.values())
    return {
        "records": len(records),
        "iterations": len(accounting.iterations),
        "busy_ns": sum(t.busy_ns for t in totals),
        "summed_ns": sum(t.summed_activity_ns for t in totals),
        "activities": sum(t.activity_count for t in totals),
        "unmeasured": len(accounting.unmeasured_gpu_activity_refs),
    }


def main() -> int:
    if len(sys.argv) in (5, 6) and sys.argv[1] == "import":
        result = do_import(*sys.argv[2:])
    elif len(sys.argv) == 3 and sys.argv[1] == "account":
        result = do_account(sys.argv[2])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
