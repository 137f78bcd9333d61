//! `link_trace_activities`: join a trace's activities to an engine's iterations through scoped
//! correlation ids, exactly as the reference does (`docs/evidence.md#linking`) — never by timestamps.
//!
//! A correlation key exists only for an activity with a `correlation_scope` whose context has
//! both `host` and `pid`: `(run_id, session_id, host, pid, device_uuid, correlation_scope,
//! "runtime"|"cuda", id)` for each id it carries. Engine activities that already name an
//! iteration contribute key → iteration; a trace activity without an iteration collects the
//! iterations of all its keys and is linked only when exactly one results. Everything else passes
//! through unchanged, in order. Pure: no I/O.

use std::collections::{BTreeSet, HashMap};

use tally_evidence::{
    ActivityReferenceEvent, AttributionStatus, CorrelationEvent, EntityRef, EventBody,
    InferenceRecord, Text,
};

type Key = (
    Text,
    Text,
    Text,
    u64,
    Option<Text>,
    EntityRef,
    &'static str,
    u64,
);

fn keys(event: &CorrelationEvent, activity: &ActivityReferenceEvent) -> Vec<Key> {
    let context = event.context();
    let (Some(scope), Some(host), Some(pid)) =
        (&activity.correlation_scope, &context.host, context.pid)
    else {
        return Vec::new();
    };
    let base = |kind: &'static str, id: u64| -> Key {
        (
            context.run_id.clone(),
            context.session_id.clone(),
            host.clone(),
            pid,
            context.device_uuid.clone(),
            scope.clone(),
            kind,
            id,
        )
    };
    let mut out = Vec::with_capacity(2);
    if let Some(id) = activity.runtime_correlation_id {
        out.push(base("runtime", id));
    }
    if let Some(id) = activity.cuda_correlation_id {
        out.push(base("cuda", id));
    }
    out
}

/// What [`link_trace_activities`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LinkOutcome {
    /// The trace records, in their order, with newly linked activities rewritten.
    pub records: Vec<InferenceRecord>,
    /// Activities linked by this call.
    pub linked: u64,
    /// Activities whose keys named several iterations (left unchanged).
    pub ambiguous: u64,
    /// Unlinked activities whose keys named no iteration (left unchanged).
    pub unmatched: u64,
}

/// Links the unlinked activities of `trace` to the iterations that `engine` activities with the
/// same correlation keys name. Returns the trace records (engine records are not repeated; the
/// caller writes them first, as the reference's capture does).
pub fn link_trace_activities(
    engine: &[InferenceRecord],
    trace: Vec<InferenceRecord>,
) -> LinkOutcome {
    let mut links: HashMap<Key, BTreeSet<EntityRef>> = HashMap::new();
    for record in engine {
        let InferenceRecord::Event(event) = record else {
            continue;
        };
        if let EventBody::Activity(activity) = event.body()
            && let Some(iteration) = &activity.iteration_ref
        {
            for key in keys(event, activity) {
                links.entry(key).or_default().insert(iteration.clone());
            }
        }
    }
    let mut outcome = LinkOutcome::default();
    for record in trace {
        let InferenceRecord::Event(event) = &record else {
            outcome.records.push(record);
            continue;
        };
        let EventBody::Activity(activity) = event.body() else {
            outcome.records.push(record);
            continue;
        };
        if activity.iteration_ref.is_some() {
            outcome.records.push(record);
            continue;
        }
        let mut candidates: BTreeSet<&EntityRef> = BTreeSet::new();
        for key in keys(event, activity) {
            if let Some(found) = links.get(&key) {
                candidates.extend(found.iter());
            }
        }
        match candidates.len() {
            1 => {
                let iteration = (*candidates.first().expect("one")).clone();
                let InferenceRecord::Event(event) = record else {
                    unreachable!("matched above")
                };
                let (context, event_id, metadata, body) = event.into_parts();
                let EventBody::Activity(mut activity) = body else {
                    unreachable!("matched above")
                };
                activity.iteration_ref = Some(iteration);
                activity.attribution_status = AttributionStatus::Linked;
                outcome.linked += 1;
                outcome
                    .records
                    .push(InferenceRecord::Event(CorrelationEvent::new(
                        context,
                        event_id,
                        metadata,
                        EventBody::Activity(activity),
                    )));
            }
            0 => {
                outcome.unmatched += 1;
                outcome.records.push(record);
            }
            _ => {
                outcome.ambiguous += 1;
                outcome.records.push(record);
            }
        }
    }
    outcome
}
