//! Resolution: records in, a de-duplicated [`CorrelationGraph`] out (`evidence.md` §4).
//!
//! [`Resolver`] is incremental so a reader can stream into it: [`Resolver::push`] one record at
//! a time (legacy records are skipped), then [`Resolver::finish`]. Order matters for the first
//! `run_id` and for which conflict is reported first, so pushing is sequential; it is cheap:
//!
//! - the run check compares one string;
//! - event identity `(session_id, producer_id, event_id)` is kept as a 128-bit XXH3 hash mapped
//!   to the record's content fingerprint (32 bytes per distinct identity). A redelivered
//!   duplicate is recognised there and costs nothing further; a different record under a known
//!   identity is `conflicting event identity`. Two identities colliding on 128 bits is accepted
//!   with the same ~2⁻¹²⁸ risk as the content fingerprints (see [`crate::fingerprint`]);
//! - entities are filed into [`EntityTable`]s whose exact index stores no key copies;
//! - contexts are interned: equal contexts end up sharing one allocation, whatever the reader did
//!   (a pointer check when they already are shared, one context fingerprint when not).
//!
//! Nothing here reads files, measures time or spawns threads; accounting is [`crate::account`].

mod table;
mod unresolved;

use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHashSet};
use xxhash_rust::xxh3::xxh3_128;

pub use table::{EntityTable, ResolvedEvent};
pub use unresolved::{ReferenceKind, UnresolvedReference};

use crate::error::{Error, Origin, Result};
use crate::fingerprint::{self, Fingerprint};
use crate::model::{
    ActivityReferenceEvent, ClockAlignmentEvent, CorrelationContext, CorrelationEvent, EntityRef,
    EventBody, InferenceRecord, IterationEvent, MembershipEvent, RequestEvent, StageEvent, Text,
};
use table::{Filed, Keyed};

/// The sizes of the six entity tables (what `--json` prints as `counts`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct GraphCounts {
    /// Request entries (generic requests and attempts are separate).
    pub requests: usize,
    /// Iterations.
    pub iterations: usize,
    /// Stages.
    pub stages: usize,
    /// Memberships.
    pub memberships: usize,
    /// Activities.
    pub activities: usize,
    /// Clock alignments.
    pub alignments: usize,
}

/// The resolved artifact: run id, the six entity tables and the unresolved references.
///
/// Tables keep the first-appearance order of their keys, each holding the representative with
/// the smallest `event_id` among equal records. Memberships and alignments are sorted by
/// `(session_id, producer_id, event_id)` of the kept event, as the reference returns them.
#[derive(Clone, Debug, Default)]
pub struct CorrelationGraph {
    run_id: Option<Text>,
    requests: EntityTable<RequestEvent>,
    iterations: EntityTable<IterationEvent>,
    stages: EntityTable<StageEvent>,
    memberships: Vec<ResolvedEvent<MembershipEvent>>,
    activities: EntityTable<ActivityReferenceEvent>,
    alignments: Vec<ResolvedEvent<ClockAlignmentEvent>>,
    unresolved: Vec<UnresolvedReference>,
}

impl CorrelationGraph {
    /// The run of the first correlation record; `None` when there was none.
    pub fn run_id(&self) -> Option<&Text> {
        self.run_id.as_ref()
    }
    /// Requests keyed by `(request_ref, attempt_ref)`.
    pub fn requests(&self) -> &EntityTable<RequestEvent> {
        &self.requests
    }
    /// Iterations keyed by `iteration_ref`.
    pub fn iterations(&self) -> &EntityTable<IterationEvent> {
        &self.iterations
    }
    /// Stages keyed by `stage_ref`.
    pub fn stages(&self) -> &EntityTable<StageEvent> {
        &self.stages
    }
    /// Memberships, sorted by `(session_id, producer_id, event_id)`.
    pub fn memberships(&self) -> &[ResolvedEvent<MembershipEvent>] {
        &self.memberships
    }
    /// The memberships of one iteration, in sorted order.
    pub fn memberships_of<'a>(
        &'a self,
        iteration: &'a EntityRef,
    ) -> impl Iterator<Item = &'a ResolvedEvent<MembershipEvent>> + 'a {
        self.memberships
            .iter()
            .filter(move |m| m.body().iteration_ref == *iteration)
    }
    /// Activities keyed by `activity_ref`.
    pub fn activities(&self) -> &EntityTable<ActivityReferenceEvent> {
        &self.activities
    }
    /// Clock alignments, sorted by `(session_id, producer_id, event_id)`.
    pub fn alignments(&self) -> &[ResolvedEvent<ClockAlignmentEvent>] {
        &self.alignments
    }
    /// References to missing entities, in the reference's order (§4.3).
    pub fn unresolved(&self) -> &[UnresolvedReference] {
        &self.unresolved
    }
    /// The six table sizes.
    pub fn counts(&self) -> GraphCounts {
        GraphCounts {
            requests: self.requests.len(),
            iterations: self.iterations.len(),
            stages: self.stages.len(),
            memberships: self.memberships.len(),
            activities: self.activities.len(),
            alignments: self.alignments.len(),
        }
    }
}

/// Makes equal contexts share one allocation.
#[derive(Debug, Default)]
struct ContextInterner {
    by_content: FxHashMap<Fingerprint, Arc<CorrelationContext>>,
    /// Addresses of the canonical contexts (all held alive by `by_content`).
    canonical: FxHashSet<usize>,
    last: usize,
}

impl ContextInterner {
    fn intern(&mut self, context: Arc<CorrelationContext>) -> Arc<CorrelationContext> {
        let address = Arc::as_ptr(&context) as usize;
        if address == self.last || self.canonical.contains(&address) {
            self.last = address;
            return context;
        }
        let kept = self
            .by_content
            .entry(fingerprint::context(&context))
            .or_insert(context);
        let address = Arc::as_ptr(kept) as usize;
        self.canonical.insert(address);
        self.last = address;
        kept.clone()
    }
}

/// The entity tables while records are being pushed.
#[derive(Debug, Default)]
struct Tables {
    requests: EntityTable<RequestEvent>,
    iterations: EntityTable<IterationEvent>,
    stages: EntityTable<StageEvent>,
    memberships: EntityTable<MembershipEvent>,
    activities: EntityTable<ActivityReferenceEvent>,
    alignments: EntityTable<ClockAlignmentEvent>,
}

/// Files `entry` in `table`: a new key is appended; a known key must carry an equal record, of
/// which the smallest `event_id` is kept in place.
fn file_entity<B: Keyed>(
    table: &mut EntityTable<B>,
    entry: ResolvedEvent<B>,
    origin: Origin,
) -> Result<()> {
    match table::file(table, entry) {
        Some(Filed::Inserted) => Ok(()),
        Some(Filed::Existing(position, offered)) => {
            let kept = table.entry_mut(position);
            if kept.fingerprint() != offered.fingerprint() {
                return Err(Error::ConflictingEntityIdentity { origin });
            }
            if **offered.event_id() < **kept.event_id() {
                *kept = offered;
            }
            Ok(())
        }
        None => Err(Error::OutOfRange {
            origin,
            message: "more than 4294967294 entities of one kind; split the artifact".into(),
        }),
    }
}

impl Tables {
    fn file(
        &mut self,
        event: CorrelationEvent,
        contexts: &mut ContextInterner,
        origin: Origin,
    ) -> Result<()> {
        let fingerprint = event.fingerprint();
        let (context, event_id, metadata, body) = event.into_parts();
        macro_rules! entry {
            ($body:expr) => {
                ResolvedEvent::new(
                    contexts.intern(context),
                    event_id,
                    metadata,
                    $body,
                    fingerprint,
                )
            };
        }
        match body {
            EventBody::Artifact(_) | EventBody::Capabilities(_) => Ok(()),
            EventBody::Request(b) => file_entity(&mut self.requests, entry!(b), origin),
            EventBody::Iteration(b) => file_entity(&mut self.iterations, entry!(b), origin),
            EventBody::Stage(b) => file_entity(&mut self.stages, entry!(b), origin),
            EventBody::Membership(b) => file_entity(&mut self.memberships, entry!(b), origin),
            EventBody::Activity(b) => file_entity(&mut self.activities, entry!(b), origin),
            EventBody::ClockAlignment(b) => file_entity(&mut self.alignments, entry!(b), origin),
        }
    }
}

/// Incremental resolver: push records in delivery order, then [`finish`](Resolver::finish).
///
/// Memory grows with the number of distinct records only: a redelivered duplicate is dropped
/// after one hash lookup; a copy under a new `event_id` adds one identity entry (32 bytes).
#[derive(Debug, Default)]
pub struct Resolver {
    run_id: Option<Text>,
    identities: FxHashMap<u128, Fingerprint>,
    scratch: Vec<u8>,
    contexts: ContextInterner,
    tables: Tables,
}

impl Resolver {
    /// An empty resolver.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes the next record. Legacy records are skipped. `origin` is where it was read, and is
    /// attached to the error when this record is the one that fails:
    /// [`Error::MultipleRunIds`] (run differs from the first correlation record's),
    /// [`Error::ConflictingEventIdentity`] (known identity, different content),
    /// [`Error::ConflictingEntityIdentity`] (known entity key, different content).
    pub fn push(&mut self, record: InferenceRecord, origin: Origin) -> Result<()> {
        match record {
            InferenceRecord::Legacy(_) => Ok(()),
            InferenceRecord::Event(event) => self.push_event(event, origin),
        }
    }

    /// Takes the next correlation event (see [`push`](Resolver::push)).
    pub fn push_event(&mut self, event: CorrelationEvent, origin: Origin) -> Result<()> {
        let context = event.context();
        match &self.run_id {
            None => self.run_id = Some(context.run_id.clone()),
            Some(run) if *run != context.run_id => return Err(Error::MultipleRunIds { origin }),
            Some(_) => {}
        }
        let identity = identity_hash(
            &mut self.scratch,
            &context.session_id,
            &context.producer_id,
            event.event_id(),
        );
        match self.identities.entry(identity) {
            std::collections::hash_map::Entry::Occupied(seen) => {
                if *seen.get() == event.fingerprint() {
                    Ok(())
                } else {
                    Err(Error::ConflictingEventIdentity { origin })
                }
            }
            std::collections::hash_map::Entry::Vacant(slot) => {
                let fingerprint = event.fingerprint();
                self.tables.file(event, &mut self.contexts, origin)?;
                slot.insert(fingerprint);
                Ok(())
            }
        }
    }

    /// The number of distinct event identities seen so far.
    pub fn distinct_events(&self) -> usize {
        self.identities.len()
    }

    /// Ends resolution: sorts memberships and alignments and lists unresolved references.
    pub fn finish(self) -> CorrelationGraph {
        let Tables {
            requests,
            iterations,
            stages,
            memberships,
            activities,
            alignments,
        } = self.tables;
        let memberships = sorted_by_identity(memberships.into_vec());
        let alignments = sorted_by_identity(alignments.into_vec());
        let unresolved = unresolved::unresolved_references(
            &requests,
            &iterations,
            &stages,
            &memberships,
            &activities,
        );
        CorrelationGraph {
            run_id: self.run_id,
            requests,
            iterations,
            stages,
            memberships,
            activities,
            alignments,
            unresolved,
        }
    }
}

/// Sorts by `(session_id, producer_id, event_id)`, a total order on kept events.
fn sorted_by_identity<B>(mut entries: Vec<ResolvedEvent<B>>) -> Vec<ResolvedEvent<B>> {
    entries.sort_unstable_by(|a, b| {
        let (x, y) = (a.context(), b.context());
        (&*x.session_id, &*x.producer_id, &**a.event_id()).cmp(&(
            &*y.session_id,
            &*y.producer_id,
            &**b.event_id(),
        ))
    });
    entries
}

/// 128-bit hash of an event identity, each part length-prefixed so distinct triples never
/// encode to the same bytes.
fn identity_hash(scratch: &mut Vec<u8>, session: &str, producer: &str, event_id: &str) -> u128 {
    scratch.clear();
    for part in [session, producer, event_id] {
        scratch.extend_from_slice(&(part.len() as u64).to_le_bytes());
        scratch.extend_from_slice(part.as_bytes());
    }
    xxh3_128(scratch)
}

/// Resolves a whole sequence of records (`resolve_inference_events`); errors carry no origin.
pub fn resolve_inference_events(
    records: impl IntoIterator<Item = InferenceRecord>,
) -> Result<CorrelationGraph> {
    let mut resolver = Resolver::new();
    for record in records {
        resolver.push(record, Origin::default())?;
    }
    Ok(resolver.finish())
}
