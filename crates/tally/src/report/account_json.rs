//! The `tally trace account --json` object, exactly the shape of `evidence-cli.md`: keys in the
//! contract's order, lists in the reference's order (iterations by `(producer_id, id)`, GPU groups
//! by `(device_uuid, clock_domain, clock_kind)`).

use serde::Serialize;
use tally_evidence::{CorrelationGraph, RunAccounting};

use super::json::{GpuTimeJson, RefJson};

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

/// Writes the contract object on one line to `out` (streamed: the object of a million-record
/// trace is tens of megabytes, and is never held whole in memory).
pub fn write(
    graph: &CorrelationGraph,
    accounting: &RunAccounting,
    out: &mut impl std::io::Write,
) -> std::io::Result<()> {
    let counts = graph.counts();
    let value = AccountJson {
        run_id: accounting.run_id.as_deref(),
        counts: CountsJson {
            requests: counts.requests,
            iterations: counts.iterations,
            stages: counts.stages,
            memberships: counts.memberships,
            activities: counts.activities,
            alignments: counts.alignments,
        },
        unresolved: graph
            .unresolved()
            .iter()
            .map(|u| UnresolvedJson {
                event_id: &u.event_id,
                kind: u.kind.as_str(),
                reference: (&u.reference).into(),
            })
            .collect(),
        iterations: accounting
            .iterations
            .iter()
            .map(|(iteration_ref, timing)| IterationJson {
                iteration_ref: iteration_ref.into(),
                elapsed_ns: timing.elapsed_ns,
                gpu: timing
                    .gpu
                    .iter()
                    .map(|(k, t)| GpuTimeJson::new(k, t))
                    .collect(),
            })
            .collect(),
        device_totals: accounting
            .device_totals
            .iter()
            .map(|(k, t)| GpuTimeJson::new(k, t))
            .collect(),
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
    serde_json::to_writer(out, &value).map_err(std::io::Error::from)
}
