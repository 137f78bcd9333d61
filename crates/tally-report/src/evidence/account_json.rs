//! The `tally trace account --json` object, exactly the shape of `evidence-cli.md`: keys in the
//! contract's order, lists in the reference's order (iterations by `(producer_id, id)`, GPU groups
//! by `(device_uuid, clock_domain, clock_kind)`).

use std::io::Write;

use rayon::prelude::*;
use serde::Serialize;
use tally_evidence::{
    CorrelationGraph, EntityRef, IterationTiming, RunAccounting, UnresolvedReference,
};

use super::json::{GpuTimeJson, RefJson};

#[derive(Serialize)]
struct CountsJson {
    requests: usize,
    iterations: usize,
    stages: usize,
    memberships: usize,
    activities: usize,
    alignments: usize,
}

#[derive(Serialize)]
struct UnresolvedJson<'a> {
    event_id: &'a str,
    kind: &'a str,
    #[serde(rename = "ref")]
    reference: RefJson<'a>,
}

#[derive(Serialize)]
struct IterationJson<'a> {
    iteration_ref: RefJson<'a>,
    elapsed_ns: Option<i64>,
    gpu: Vec<GpuTimeJson<'a>>,
}

impl CountsJson {
    fn of(graph: &CorrelationGraph) -> Self {
        let counts = graph.counts();
        Self {
            requests: counts.requests,
            iterations: counts.iterations,
            stages: counts.stages,
            memberships: counts.memberships,
            activities: counts.activities,
            alignments: counts.alignments,
        }
    }
}

impl<'a> From<&'a UnresolvedReference> for UnresolvedJson<'a> {
    fn from(u: &'a UnresolvedReference) -> Self {
        Self {
            event_id: &u.event_id,
            kind: u.kind.as_str(),
            reference: (&u.reference).into(),
        }
    }
}

fn device_totals_json(accounting: &RunAccounting) -> Vec<GpuTimeJson<'_>> {
    accounting
        .device_totals
        .iter()
        .map(|(k, t)| GpuTimeJson::new(k, t))
        .collect()
}

/// Writes the contract object on one line to `out`, streamed: the object of a million-record
/// trace is tens of megabytes and is never held whole in memory. The long lists (iterations and
/// reference lists) are rendered on both cores, a bounded window of chunks at a time, and
/// written in order; the bytes are exactly those of the object serialized in one piece (the
/// test below builds that object and compares).
pub fn write(
    graph: &CorrelationGraph,
    accounting: &RunAccounting,
    out: &mut impl Write,
) -> std::io::Result<()> {
    let iterations: Vec<_> = accounting.iterations.iter().collect();
    out.write_all(b"{\"run_id\":")?;
    serde_json::to_writer(&mut *out, &accounting.run_id.as_deref())?;
    out.write_all(b",\"counts\":")?;
    serde_json::to_writer(&mut *out, &CountsJson::of(graph))?;
    out.write_all(b",\"unresolved\":")?;
    write_list(out, graph.unresolved(), UnresolvedJson::from)?;
    out.write_all(b",\"iterations\":")?;
    write_list(out, &iterations, |&(iteration_ref, timing)| {
        iteration_json(iteration_ref, timing)
    })?;
    out.write_all(b",\"device_totals\":")?;
    serde_json::to_writer(&mut *out, &device_totals_json(accounting))?;
    out.write_all(b",\"unattributed_activity_refs\":")?;
    write_list(out, &accounting.unattributed_activity_refs, RefJson::from)?;
    out.write_all(b",\"unmeasured_gpu_activity_refs\":")?;
    write_list(out, &accounting.unmeasured_gpu_activity_refs, RefJson::from)?;
    out.write_all(b"}")
}

fn iteration_json<'a>(
    iteration_ref: &'a EntityRef,
    timing: &'a IterationTiming,
) -> IterationJson<'a> {
    IterationJson {
        iteration_ref: iteration_ref.into(),
        elapsed_ns: timing.elapsed_ns,
        gpu: timing
            .gpu
            .iter()
            .map(|(k, t)| GpuTimeJson::new(k, t))
            .collect(),
    }
}

/// Elements of a list rendered by one task (tiny in tests, so that small graphs span windows).
const CHUNK: usize = if cfg!(test) { 3 } else { 1024 };

/// Chunks rendered before they are written: enough for both cores, few enough to keep the
/// buffers at about two megabytes (they are on top of the run's peak memory).
const WINDOW: usize = if cfg!(test) { 2 } else { 4 };

/// `items` as a JSON array (compact, as `serde_json` writes one), each element as `json` makes
/// it: rendered in parallel, a window of chunks at a time, written in order.
fn write_list<'a, T: Sync + 'a, J: Serialize>(
    out: &mut impl Write,
    items: &'a [T],
    json: impl Fn(&'a T) -> J + Sync,
) -> std::io::Result<()> {
    out.write_all(b"[")?;
    for (w, window) in items.chunks(CHUNK * WINDOW).enumerate() {
        let rendered: Vec<Vec<u8>> = window
            .par_chunks(CHUNK)
            .map(|chunk| {
                let mut buf = Vec::with_capacity(chunk.len() * 128);
                for (i, item) in chunk.iter().enumerate() {
                    if i > 0 {
                        buf.push(b',');
                    }
                    serde_json::to_writer(&mut buf, &json(item))?;
                }
                Ok(buf)
            })
            .collect::<serde_json::Result<_>>()?;
        for (c, buf) in rendered.iter().enumerate() {
            if w > 0 || c > 0 {
                out.write_all(b",")?;
            }
            out.write_all(buf)?;
        }
    }
    out.write_all(b"]")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The contract object, key by key in the contract's order: what [`write`] streams.
    #[derive(Serialize)]
    struct AccountJson<'a> {
        run_id: Option<&'a str>,
        counts: CountsJson,
        unresolved: Vec<UnresolvedJson<'a>>,
        iterations: Vec<IterationJson<'a>>,
        device_totals: Vec<GpuTimeJson<'a>>,
        unattributed_activity_refs: Vec<RefJson<'a>>,
        unmeasured_gpu_activity_refs: Vec<RefJson<'a>>,
    }

    /// The whole object in one piece, as `serde_json` writes it: what [`write`] must match.
    fn one_piece(graph: &CorrelationGraph, accounting: &RunAccounting) -> Vec<u8> {
        let value = AccountJson {
            run_id: accounting.run_id.as_deref(),
            counts: CountsJson::of(graph),
            unresolved: graph.unresolved().iter().map(Into::into).collect(),
            iterations: accounting
                .iterations
                .iter()
                .map(|(r, t)| iteration_json(r, t))
                .collect(),
            device_totals: device_totals_json(accounting),
            unattributed_activity_refs: accounting
                .unattributed_activity_refs
                .iter()
                .map(Into::into)
                .collect(),
            unmeasured_gpu_activity_refs: accounting
                .unmeasured_gpu_activity_refs
                .iter()
                .map(Into::into)
                .collect(),
        };
        serde_json::to_vec(&value).unwrap()
    }

    fn streamed(graph: &CorrelationGraph, accounting: &RunAccounting) -> Vec<u8> {
        let mut out = Vec::new();
        write(graph, accounting, &mut out).unwrap();
        out
    }

    #[test]
    fn the_streamed_object_is_the_one_piece_object() {
        // Lists empty, shorter than a chunk, and spanning several windows of chunks.
        for (requests, unresolved) in [(1, 0), (1, 2), (4, 5), (60, 40)] {
            let mut scenario = tally_synth::Scenario::new(7, requests);
            scenario.unresolved = unresolved;
            let graph = tally_evidence::resolve_inference_events(scenario.records()).unwrap();
            let accounting = tally_evidence::account_gpu_time(&graph).unwrap();
            assert_eq!(
                streamed(&graph, &accounting),
                one_piece(&graph, &accounting)
            );
        }
    }
}
