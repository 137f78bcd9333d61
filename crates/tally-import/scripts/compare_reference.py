"""Side-by-side of the reference importer (stormlog 0.4.3) and HTA on the real-trace corpus.

Run with the venv of docs/importers.md (`bench/.venv-import`):
    bench/.venv-import/bin/python crates/tally-import/scripts/compare_reference.py [TESTDATA_DIR]
Prints one Markdown table row per file. tally's own figures are the README's (the tests pin them).
"""
import os
import shutil
import sys
import tempfile
import time

TESTDATA = sys.argv[1] if len(sys.argv) > 1 else "testdata"
REAL = os.path.join(TESTDATA, "traces", "real")
EXACT = {  # README: busy, summed, count, per-file
    "hta_amd_mi250_rocm.json.gz": (149042, 149042, 16),
    "hta_multistream_rank0.json.gz": (438424000, 449763000, 7747),
    "hta_nccl_rank0.json.gz": (157500014, 165185838, 3774),
    "hta_ns_resolution_rank0.pt.trace.json.gz": (472454441, 472454441, 6095),
    "hta_sampled_2rank_rank0.json.gz": (547656000, 607844000, 1204),
    "hta_sampled_2rank_rank1.json.gz": (580050000, 667530000, 1154),
    "kineto_resnet50_legacy.pt.trace.json.gz": (603558000, 603558000, 9096),
    "pipit_cloverleaf_nsys.sqlite.gz": (303795463, 303795463, 1591),
    "pipit_saxpy_mpi_nsys.sqlite.gz": (373273080, 373273080, 20),
}


def reference(name):
    from stormlog.infer import trace_kineto, trace_nsys
    path = os.path.join(REAL, name)
    started = time.time()
    if name.endswith(".sqlite.gz"):
        tmp = tempfile.NamedTemporaryFile(suffix=".sqlite", delete=False)
        import gzip
        with gzip.open(path) as src:
            shutil.copyfileobj(src, tmp)
        tmp.close()
        trace = trace_nsys.load_nsys_sqlite(tmp.name)
        cap = trace_kineto.capture_trace(trace, tmp.name, run_id="r", session_id="s", detail="kernel")
        os.unlink(tmp.name)
    else:
        cap = trace_kineto.import_kineto_trace(path, run_id="r", session_id="s", detail="kernel")
    s = cap.summary
    devices = s["devices"]
    busy = sum(d["busy_ns"] for d in devices.values())
    summed = sum(d["summed_ns"] for d in devices.values())
    uuids = [d["device_uuid"] for d in devices.values()]
    return dict(busy=busy, summed=summed, events=s["gpu_events"], linked=s["linked_gpu_events"],
                uuids=uuids, seconds=time.time() - started)


def hta(name):
    if name.endswith(".sqlite.gz"):
        return None
    from hta.trace_analysis import TraceAnalysis
    directory = tempfile.mkdtemp()
    try:
        shutil.copy(os.path.join(REAL, name), os.path.join(directory, "rank-0.json.gz"))
        started = time.time()
        analysis = TraceAnalysis(trace_dir=directory)
        df = next(iter(analysis.t.traces.values()))
        gpu = df[df["stream"].ne(-1)]
        breakdown = analysis.get_temporal_breakdown(visualize=False)
        row = breakdown.iloc[0]
        busy_us = row["kernel_time(us)"] - row["idle_time(us)"]
        iterations = sorted(int(i) for i in gpu["iteration"].unique())
        return dict(busy=busy_us * 1000, events=len(gpu), iterations=iterations,
                    in_steps=int(gpu["iteration"].gt(0).sum()), seconds=time.time() - started)
    except Exception as exc:  # noqa: BLE001 - reported in the table
        return dict(error=f"{type(exc).__name__}: {exc}"[:80])
    finally:
        shutil.rmtree(directory)


def main():
    print("| file | exact busy ns (tally) | reference busy ns (error) | reference GPU events / linked | HTA busy ns (error) | HTA GPU events / iterations |")
    print("|---|---|---|---|---|---|")
    for name, (busy, summed, count) in EXACT.items():
        ref = reference(name)
        h = hta(name)
        ref_cell = f"{ref['busy']} ({ref['busy'] - busy:+d})"
        ref_events = f"{ref['events']} / {ref['linked']}"
        if h is None:
            h_cell, h_events = "n/a (no Nsight reader)", "n/a"
        elif "error" in h:
            h_cell, h_events = f"fails: {h['error']}", "-"
        else:
            h_cell = f"{h['busy']:.0f} ({h['busy'] - busy:+.0f})"
            h_events = f"{h['events']} / {h['iterations']}"
        print(f"| `{name}` | {busy} | {ref_cell} | {ref_events} | {h_cell} | {h_events} |", flush=True)


if __name__ == "__main__":
    main()
