"""Differential check of tally's reader against stormlog 0.4.3 (development aid, not a test).

Needs `pip install --no-deps stormlog==0.4.3`. Generates mutated records (seeded), decodes each
with the reference and with `cargo run --example reader_diff`, and prints every disagreement.
Expected disagreements are classified, not printed: integers beyond tally's model (tally refuses
with OutOfRange) and JSON syntax messages (only the category is compared).

    python3 crates/tally-artifact/examples/reader_diff.py [N_RANDOM] [SEED]
"""

import copy
import json
import random
import subprocess
import sys
import tempfile

from stormlog.infer.correlation_codec import CorrelationRecordDecoder
from stormlog.infer.correlation_events import LegacyInferenceRecord, activity_busy_intervals

C = {"run_id": "r", "session_id": "s", "producer_id": "p", "source": "src", "clock_domain": "cd",
     "clock_kind": "monotonic", "collection_mode": "active", "provenance": "observed",
     "source_version": "0.4.3", "engine": None, "host": "h", "pid": 7, "device_uuid": "GPU-A",
     "rank": 0, "world_size": 2}
R = lambda i: {"producer_id": "p", "id": i}
BASE = {"schema_version": 2, "context": C, "metadata": {"k": 1}}
T = {
 "infer.artifact": {"event_id": "a", "artifact_kind": "k", "created_at_ns": 5},
 "infer.request": {"event_id": "r1", "request_ref": R("R1"), "attempt_ref": R("a"), "backend_request_ref": None,
                   "start_ns": 1, "end_ns": 9, "status": "ok", "input_tokens": 3, "output_tokens": 4, "kv_bytes": None},
 "infer.iteration": {"event_id": "i1", "iteration_ref": R("I1"), "batch_ref": R("B"), "start_ns": 0, "end_ns": 10},
 "infer.stage": {"event_id": "s1", "stage_ref": R("S"), "name": "prefill", "request_ref": R("R1"), "iteration_ref": None,
                 "start_ns": 2, "end_ns": 3, "input_tokens": 1},
 "infer.membership": {"event_id": "m1", "request_ref": R("R1"), "iteration_ref": R("I1"), "role": "decode",
                      "attempt_ref": None, "output_tokens": 1},
 "infer.activity_ref": {"event_id": "k1", "activity_ref": R("K1"), "activity_kind": "gpu_kernel",
                        "attribution_status": "linked", "activity_domain": "gpu", "iteration_ref": R("I1"),
                        "correlation_scope": R("scope"), "trace_attachment_id": "t", "runtime_correlation_id": 1,
                        "cuda_correlation_id": 2, "stream_id": 7, "graph_id": None, "start_ns": 100, "end_ns": 200},
 "infer.capabilities": {"event_id": "c", "component": "x", "available": True, "supported": ["a", "b"],
                        "enabled": ["a"], "collected": ["a"]},
 "infer.clock_alignment": {"event_id": "al", "from_clock_domain": "a", "to_clock_domain": "b", "offset_ns": -5,
                           "uncertainty_ns": 2, "valid_from_ns": 10, "valid_to_ns": 20},
}
KEYS = sorted({k for t in T.values() for k in t} | set(BASE) | {"event_type", "context_id"})
VALUES = [None, True, False, 0, -1, 1, 7, 1.5, 1.0, -0.0, "", "x", "linked", "unresolved", "gpu", "monotonic",
          "infer.request", [], [1], ["a"], ["a", "a"], [[0, 1]], {}, {"producer_id": "p", "id": "i"},
          {"producer_id": "", "id": "i"}, {"id": "i"}, {"producer_id": "p", "id": "i", "z": 1},
          2 ** 70, -2 ** 70, 2 ** 64, 2 ** 63, 2 ** 63 - 1, 2, 3, 4, 4.0, {"intervals": None},
          {"intervals": [[0, 10], [20, 5]]}, {"intervals": []}, {"intervals": [[0, 200]]}, float("nan")]


def records():
    for t, body in T.items():
        rec = dict(BASE, event_type=t, **body)
        yield rec
        if t == "infer.activity_ref":
            yield dict(rec, schema_version=3, metadata={"intervals": [[0, 30], [50, 50]], "x": [1]})
            yield dict(rec, schema_version=3, metadata={"intervals": None})


def mutations(rec, rng):
    """Single mutations of one record."""
    for k in KEYS:
        for v in VALUES:
            yield dict(rec, **{k: v})
        if k in rec:
            yield {kk: vv for kk, vv in rec.items() if kk != k}
    for k in list(C) + ["local_rank", "backend", "zz"]:
        for v in VALUES:
            yield dict(rec, context=dict(C, **{k: v}))
        yield dict(rec, context={kk: vv for kk, vv in C.items() if kk != k})
    for v in VALUES:
        yield dict(rec, metadata={"intervals": v})


def compact(rec):
    out = {k: v for k, v in rec.items() if k != "context"}
    out.update(schema_version=4, context_id="c1")
    return out


DEF = json.dumps({"schema_version": 4, "event_type": "infer.context", "context_id": "c1", "context": C})


def cases(n_random, seed):
    rng = random.Random(seed)
    singles = []
    for rec in records():
        for m in mutations(rec, rng):
            singles.append(m)
            yield {"pre": [], "line": json.dumps(m)}
            yield {"pre": [DEF], "line": json.dumps(compact(m))}
    # Transport and definition variants.
    d = json.loads(DEF)
    for k in list(d) + ["extra"]:
        for v in VALUES:
            yield {"pre": [DEF], "line": json.dumps(dict(d, **{k: v}))}
            yield {"pre": [], "line": json.dumps(dict(d, **{k: v}))}
        yield {"pre": [], "line": json.dumps({kk: vv for kk, vv in d.items() if kk != k})}
    for v in VALUES:
        yield {"pre": [DEF], "line": json.dumps(dict(compact(dict(BASE, event_type="infer.iteration", **T["infer.iteration"])), context_id=v))}
        yield {"pre": [DEF], "line": json.dumps(dict(BASE, event_type="infer.iteration", context_id=v, **T["infer.iteration"]))}
    # Random combinations, keys shuffled.
    for _ in range(n_random):
        base = rng.choice(singles)
        other = rng.choice(singles)
        m = dict(base)
        for k in rng.sample(sorted(other), min(3, len(other))):
            m[k] = other[k]
        if rng.random() < 0.3:
            ctx = rng.choice(singles).get("context", C)
            m["context"] = dict(ctx) if isinstance(ctx, dict) else ctx
        items = list(m.items())
        rng.shuffle(items)
        m = dict(items)
        yield {"pre": [], "line": json.dumps(m)}
        yield {"pre": [DEF], "line": json.dumps(compact(m))}
        # Duplicate keys: a bad value first, the good one last, and the reverse.
        k = rng.choice(sorted(m))
        v = json.dumps(rng.choice(VALUES))
        text = json.dumps(m)
        yield {"pre": [], "line": "{" + json.dumps(k) + ": " + v + ", " + text[1:]}
        yield {"pre": [], "line": text[:-1] + ", " + json.dumps(k) + ": " + v + "}"}


def reference(case):
    dec = CorrelationRecordDecoder()
    for p in case["pre"]:
        dec.decode_event(json.loads(p))
    try:
        obj = json.loads(case["line"])
    except ValueError:
        return {"error": "JSON"}
    try:
        rec = dec.decode_event(obj)
    except (ValueError, TypeError) as e:
        return {"error": str(e)}
    except Exception as e:  # noqa: BLE001 - report crashes of the reference too
        return {"crash": f"{type(e).__name__}: {e}"}
    if rec is None:
        return {"ok": "definition"}
    if isinstance(rec, LegacyInferenceRecord):
        return {"ok": "legacy"}
    r = rec.to_record()
    out = {"event_type": r.pop("event_type"), "schema_version": r.pop("schema_version"),
           "event_id": r.pop("event_id"), "context": r.pop("context"),
           "metadata": json.dumps(r.pop("metadata"), sort_keys=True)}
    if out["event_type"] == "infer.activity_ref":
        meta = rec.metadata
        r["busy"] = [list(x) for x in activity_busy_intervals(rec)] if meta.get("intervals") is not None else None
    out.update(r)
    return {"ok": out}


def normalise_rust(res):
    ok = res.get("ok")
    if isinstance(ok, dict):
        ok["metadata"] = json.dumps(json.loads(ok.pop("metadata_text")), sort_keys=True)
        return {"ok": ok}
    if ok == "legacy":
        return {"ok": "legacy"}
    return res


def main():
    n_random = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    all_cases = list(cases(n_random, seed))
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        for c in all_cases:
            f.write(json.dumps(c) + "\n")
    out = subprocess.run(["cargo", "run", "-q", "--release", "-p", "tally-artifact", "--example", "reader_diff", f.name],
                         check=True, capture_output=True, text=True).stdout.splitlines()
    assert len(out) == len(all_cases), (len(out), len(all_cases))
    kinds = {"same": 0, "range": 0, "diff": 0}
    for case, rust in zip(all_cases, out):
        py = reference(case)
        rust = normalise_rust(json.loads(rust))
        if json.dumps(py, sort_keys=True) == json.dumps(rust, sort_keys=True):
            kinds["same"] += 1
        elif "range" in rust and ("ok" in py or "error" in py) and any(
                str(n) in case["line"] for n in (2 ** 63, 2 ** 64, 2 ** 70)):
            # tally refuses an integer beyond its model where the reference reads it (and may
            # then refuse the record for a later reason).
            kinds["range"] += 1
        else:
            kinds["diff"] += 1
            if kinds["diff"] <= 40:
                print("CASE", json.dumps(case))
                print("  py  ", json.dumps(py, sort_keys=True)[:400])
                print("  rust", json.dumps(rust, sort_keys=True)[:400])
    print(len(all_cases), "cases", kinds)


if __name__ == "__main__":
    main()
