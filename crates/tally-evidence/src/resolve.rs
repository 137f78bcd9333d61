//! Resolution: records in, a de-duplicated [`CorrelationGraph`] out (`docs/evidence.md#resolution`).
//!
//! [`Resolver`] is incremental so a reader can stream into it: [`Resolver::push`] one record at
//! a time (legacy records are skipped), then [`Resolver::finish`]. Order matters for the first
//! `run_id` and for which conflict is reported first, so pushing is sequential; it is cheap:
//!
//! - the run check compares one string (usually one pointer);
//! - event identity `(session_id, producer_id, event_id)` is looked up in an exact index whose
//!   slots point at the kept events themselves (8 bytes per identity, see `identity`). A
//!   redelivered duplicate is recognised there, compared with the kept record directly (shared
//!   context and metadata are pointer checks, then the typed body) and dropped; a different
//!   record under a known identity is `conflicting event identity`. Nothing is fingerprinted
//!   except the records kept aside (artifact and capability records, losing duplicates);
//! - entities are filed into [`EntityTable`]s (chunked storage that never moves, with an exact
//!   index that stores no key copies);
//! - contexts are interned: equal contexts end up sharing one allocation, whatever the reader
//!   did (a pointer check when they already are shared, one context fingerprint when not).
//!
//! A reader that parses ahead of the resolver (`tally-artifact`'s) computes each event's
//! [`Hashes`] on its parse threads, shows the resolver records a few ahead
//! ([`Resolver::touch`]) and pushes them with their hashes ([`Resolver::push_hashed`]).
//!
//! Nothing here reads files or measures time; [`Resolver::finish`] runs the reference checks on
//! rayon's global pool, and the memberships' sorted order is computed when first asked for.
//! Accounting is [`crate::account`].

mod identity;
mod order;
mod table;
mod unresolved;

use std::sync::{Arc, OnceLock};

use rustc_hash::{FxHashMap, FxHashSet};

pub use table::{EntityTable, Iter, ResolvedEvent, SortedIter, SortedView};
pub use unresolved::{ReferenceKind, UnresolvedReference};

use crate::error::{Error, Origin, Result};
use crate::fingerprint::{self, Fingerprint};
use crate::model::{
    ActivityReferenceEvent, ClockAlignmentEvent, CorrelationContext, CorrelationEvent, EntityRef,
    EventBody, InferenceRecord, IterationEvent, MembershipEvent, RequestEvent, StageEvent, Text,
};
use identity::{
    Identities, IdentityView, Location, Lookup, SideIdentity, TableKind, identity_hash,
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
/// the smallest `event_id` among equal records. Memberships and alignments are exposed, as the
/// reference returns them, sorted by `(session_id, producer_id, event_id)` of the kept event
/// ([`memberships`](Self::memberships), [`alignments`](Self::alignments)); their tables in
/// first-appearance order are there too.
#[derive(Clone, Debug, Default)]
pub struct CorrelationGraph {
    run_id: Option<Text>,
    requests: EntityTable<RequestEvent>,
    iterations: EntityTable<IterationEvent>,
    stages: EntityTable<StageEvent>,
    memberships: EntityTable<MembershipEvent>,
    /// Sorted on first use: accounting never asks for it (see [`Self::memberships`]).
    membership_order: OnceLock<Vec<u32>>,
    activities: EntityTable<ActivityReferenceEvent>,
    /// Per activity, the position of its iteration (see [`Self::activity_iterations`]).
    activity_iterations: Vec<u32>,
    alignments: EntityTable<ClockAlignmentEvent>,
    alignment_order: Vec<u32>,
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
    /// Memberships sorted by `(session_id, producer_id, event_id)` (the reference's order).
    ///
    /// The order is computed on the first call (a sort of every membership: tens of
    /// milliseconds at a million), so a caller that never asks, like the accountant, never pays.
    pub fn memberships(&self) -> SortedView<'_, MembershipEvent> {
        let order = self
            .membership_order
            .get_or_init(|| order::identity_order(&self.memberships));
        SortedView::new(&self.memberships, order)
    }
    /// Memberships keyed by `(request_ref, attempt_ref, iteration_ref, role)`, in
    /// first-appearance order.
    pub fn membership_table(&self) -> &EntityTable<MembershipEvent> {
        &self.memberships
    }
    /// The memberships of one iteration, in sorted order (a scan of all memberships).
    pub fn memberships_of<'a>(
        &'a self,
        iteration: &'a EntityRef,
    ) -> impl Iterator<Item = &'a ResolvedEvent<MembershipEvent>> + 'a {
        self.memberships()
            .into_iter()
            .filter(move |m| m.body().iteration_ref == *iteration)
    }
    /// Activities keyed by `activity_ref`.
    pub fn activities(&self) -> &EntityTable<ActivityReferenceEvent> {
        &self.activities
    }
    /// For each activity (table order), the position in [`iterations`](Self::iterations) of
    /// the iteration its `iteration_ref` names; a value past the table's end when it has none
    /// or names no iteration. Found once, while the references are checked.
    pub(crate) fn activity_iterations(&self) -> &[u32] {
        &self.activity_iterations
    }
    /// Clock alignments sorted by `(session_id, producer_id, event_id)` (the reference's order).
    pub fn alignments(&self) -> SortedView<'_, ClockAlignmentEvent> {
        SortedView::new(&self.alignments, &self.alignment_order)
    }
    /// Clock alignments keyed by `(session_id, producer_id, from, to, offset, uncertainty,
    /// window)`, in first-appearance order.
    pub fn alignment_table(&self) -> &EntityTable<ClockAlignmentEvent> {
        &self.alignments
    }
    /// References to missing entities, in the reference's order (`docs/evidence.md#unresolved`).
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

/// Canonical contexts: equal contexts of kept events share one allocation, so the graph holds
/// one `CorrelationContext` per distinct context whatever the reader delivered.
///
/// A context already known by address costs one pointer lookup (the reader shares one `Arc` per
/// v4 definition and caches embedded ones, so this is the common case); an unknown one is
/// fingerprinted (once per allocation, see [`fingerprint::shared_context`]) and either becomes
/// canonical or is replaced by the canonical equal one.
///
/// Strings inside bodies (reference producers, kinds, roles) are deliberately *not* interned:
/// replacing a reader's fresh string means freeing it on the resolving thread, which was
/// measured to cost about 1 µs per record (4× the rest of `push`) for about 110 bytes saved per
/// record. A reader that wants that saving should share those strings when it makes them.
#[derive(Debug, Default)]
struct Interner {
    contexts: FxHashMap<Fingerprint, Arc<CorrelationContext>>,
    /// Addresses of the canonical contexts (all held alive by `contexts`).
    canonical: FxHashSet<usize>,
    last_context: usize,
}

impl Interner {
    /// The canonical context equal to `context`.
    fn context(&mut self, context: Arc<CorrelationContext>) -> Arc<CorrelationContext> {
        let address = Arc::as_ptr(&context) as usize;
        if address == self.last_context || self.canonical.contains(&address) {
            self.last_context = address;
            return context;
        }
        let kept = self
            .contexts
            .entry(fingerprint::shared_context(&context))
            .or_insert(context);
        let address = Arc::as_ptr(kept) as usize;
        self.canonical.insert(address);
        self.last_context = address;
        kept.clone()
    }
}

/// Where [`Tables::file`] put an event's identity.
enum Placed {
    /// The event is the kept representative at this table position.
    Entity(TableKind, u32),
    /// The event is the new representative at this position; the one it replaced must become a
    /// side identity.
    Replaced(TableKind, u32, SideIdentity),
    /// The event is kept in no table (artifact, capabilities, or a losing duplicate).
    Side(SideIdentity),
}

fn side_identity<B: Keyed>(entry: &ResolvedEvent<B>) -> SideIdentity {
    SideIdentity {
        session_id: entry.context().session_id.clone(),
        producer_id: entry.context().producer_id.clone(),
        event_id: entry.event_id().clone(),
        fingerprint: entry.fingerprint(),
    }
}

fn view_of<B>(table: &EntityTable<B>, position: u32) -> IdentityView<'_> {
    let entry = &table[position as usize];
    IdentityView {
        session_id: &entry.context().session_id,
        producer_id: &entry.context().producer_id,
        event_id: entry.event_id(),
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

/// Files `entry` in `entities`: a new key is appended; a known key must carry an equal record,
/// of which the smallest `event_id` is kept in place.
// Inlined down to the table's push, so that the entry is built where it is stored rather than
// copied through each call.
#[inline(always)]
fn file_entity<B: Keyed>(
    entities: &mut EntityTable<B>,
    kind: TableKind,
    key_hash: u64,
    entry: ResolvedEvent<B>,
    origin: &Place<'_>,
) -> Result<Placed> {
    match table::file(entities, key_hash, entry) {
        Some(Filed::Inserted(position)) => Ok(Placed::Entity(kind, position)),
        Some(Filed::Existing(position, offered)) => {
            let kept = entities.entry_mut(position);
            if !kept.same_content(offered.context_arc(), offered.metadata(), offered.body()) {
                return Err(Error::ConflictingEntityIdentity {
                    origin: origin.origin(),
                });
            }
            if **offered.event_id() < **kept.event_id() {
                let replaced = std::mem::replace(kept, offered);
                Ok(Placed::Replaced(kind, position, side_identity(&replaced)))
            } else {
                Ok(Placed::Side(side_identity(&offered)))
            }
        }
        None => Err(too_many(origin.origin())),
    }
}

fn too_many(origin: Origin) -> Error {
    Error::OutOfRange {
        origin,
        message: format!(
            "more than {} distinct records of one kind; split the artifact",
            table::MAX_ENTITIES
        ),
    }
}

impl Tables {
    /// Files `event`, whose entity key hashes to `key_hash`, in its table.
    #[inline(always)]
    fn file(
        &mut self,
        event: CorrelationEvent,
        key_hash: u64,
        interner: &mut Interner,
        origin: &Place<'_>,
    ) -> Result<Placed> {
        let (context, event_id, metadata, body) = event.into_parts();
        macro_rules! entry {
            ($body:expr) => {
                ResolvedEvent::new(interner.context(context), event_id, metadata, $body)
            };
        }
        use TableKind as K;
        match body {
            // Kept in no table: a later record under this identity is compared by fingerprint.
            body @ (EventBody::Artifact(_) | EventBody::Capabilities(_)) => {
                let fingerprint = fingerprint::event(
                    fingerprint::shared_context(&context),
                    fingerprint::metadata(&metadata),
                    &body,
                );
                Ok(Placed::Side(SideIdentity {
                    session_id: context.session_id.clone(),
                    producer_id: context.producer_id.clone(),
                    event_id,
                    fingerprint,
                }))
            }
            EventBody::Request(b) => {
                file_entity(&mut self.requests, K::Requests, key_hash, entry!(b), origin)
            }
            EventBody::Iteration(b) => file_entity(
                &mut self.iterations,
                K::Iterations,
                key_hash,
                entry!(b),
                origin,
            ),
            EventBody::Stage(b) => {
                file_entity(&mut self.stages, K::Stages, key_hash, entry!(b), origin)
            }
            EventBody::Membership(b) => file_entity(
                &mut self.memberships,
                K::Memberships,
                key_hash,
                entry!(b),
                origin,
            ),
            EventBody::Activity(b) => file_entity(
                &mut self.activities,
                K::Activities,
                key_hash,
                entry!(b),
                origin,
            ),
            EventBody::ClockAlignment(b) => file_entity(
                &mut self.alignments,
                K::Alignments,
                key_hash,
                entry!(b),
                origin,
            ),
        }
    }

    /// The hash of the entity key of `event` (0 for the kinds kept in no table).
    fn key_hash(event: &CorrelationEvent) -> u64 {
        let context = event.context();
        match event.body() {
            EventBody::Artifact(_) | EventBody::Capabilities(_) => 0,
            EventBody::Request(b) => Keyed::key_hash(context, b),
            EventBody::Iteration(b) => Keyed::key_hash(context, b),
            EventBody::Stage(b) => Keyed::key_hash(context, b),
            EventBody::Membership(b) => Keyed::key_hash(context, b),
            EventBody::Activity(b) => Keyed::key_hash(context, b),
            EventBody::ClockAlignment(b) => Keyed::key_hash(context, b),
        }
    }

    /// Reads the index of the table `event` goes to where its key would be (a hint).
    fn touch(&self, event: &CorrelationEvent, key_hash: u64) {
        match event.body() {
            EventBody::Artifact(_) | EventBody::Capabilities(_) => {}
            EventBody::Request(_) => self.requests.touch(key_hash),
            EventBody::Iteration(_) => self.iterations.touch(key_hash),
            EventBody::Stage(_) => self.stages.touch(key_hash),
            EventBody::Membership(_) => self.memberships.touch(key_hash),
            EventBody::Activity(_) => self.activities.touch(key_hash),
            EventBody::ClockAlignment(_) => self.alignments.touch(key_hash),
        }
    }

    /// Whether the kept entry at `position` of table `kind` is the same record as `event`
    /// (everything but `event_id` equal; a body of another type never is).
    fn same_as(&self, kind: TableKind, position: u32, event: &CorrelationEvent) -> bool {
        fn same<B: PartialEq>(
            table: &EntityTable<B>,
            position: u32,
            event: &CorrelationEvent,
            body: &B,
        ) -> bool {
            table[position as usize].same_content(event.context_arc(), event.metadata(), body)
        }
        use TableKind as K;
        match (kind, event.body()) {
            (K::Requests, EventBody::Request(b)) => same(&self.requests, position, event, b),
            (K::Iterations, EventBody::Iteration(b)) => same(&self.iterations, position, event, b),
            (K::Stages, EventBody::Stage(b)) => same(&self.stages, position, event, b),
            (K::Memberships, EventBody::Membership(b)) => {
                same(&self.memberships, position, event, b)
            }
            (K::Activities, EventBody::Activity(b)) => same(&self.activities, position, event, b),
            (K::Alignments, EventBody::ClockAlignment(b)) => {
                same(&self.alignments, position, event, b)
            }
            _ => false,
        }
    }

    fn view(&self, kind: TableKind, position: u32) -> IdentityView<'_> {
        match kind {
            TableKind::Requests => view_of(&self.requests, position),
            TableKind::Iterations => view_of(&self.iterations, position),
            TableKind::Stages => view_of(&self.stages, position),
            TableKind::Memberships => view_of(&self.memberships, position),
            TableKind::Activities => view_of(&self.activities, position),
            TableKind::Alignments => view_of(&self.alignments, position),
        }
    }
}

/// Where a record was read, made into an [`Origin`] only for an error (a reader's line costs
/// nothing until then).
pub enum Place<'a> {
    /// An origin already made.
    Origin(Origin),
    /// A line of the input named so.
    Line(&'a Text, u64),
}

impl Place<'_> {
    fn origin(&self) -> Origin {
        match self {
            Place::Origin(origin) => origin.clone(),
            Place::Line(name, line) => Origin::at(Text::clone(name), *line),
        }
    }
}

/// The hashes an event is resolved with: of its identity and of its entity key.
#[derive(Clone, Copy, Debug, Default)]
pub struct Hashes {
    identity: u64,
    key: u64,
}

impl Hashes {
    /// The hashes of `event` (a pure function of it, so any thread may compute them).
    pub fn of(event: &CorrelationEvent) -> Self {
        let context = event.context();
        Self {
            identity: identity_hash(&context.session_id, &context.producer_id, event.event_id()),
            key: Tables::key_hash(event),
        }
    }
}

/// Incremental resolver: push records in delivery order, then [`finish`](Resolver::finish).
///
/// Memory grows with the number of distinct records only: a redelivered duplicate is dropped
/// after one index lookup; a copy under a new `event_id` adds one identity (an 8-byte slot and a
/// 64-byte side record).
#[derive(Debug, Default)]
pub struct Resolver {
    run_id: Option<Text>,
    identities: Identities,
    interner: Interner,
    tables: Tables,
}

impl Resolver {
    /// An empty resolver.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty resolver expecting about `records` distinct records (a hint: the identity index
    /// is sized for it up front instead of growing by rehashing).
    pub fn with_capacity(records: usize) -> Self {
        let mut resolver = Self::default();
        resolver.identities.reserve(records);
        resolver
    }

    /// Takes the next record. Legacy records are skipped. `origin` is where it was read, and is
    /// attached to the error when this record is the one that fails:
    /// [`Error::MultipleRunIds`] (run differs from the first correlation record's),
    /// [`Error::ConflictingEventIdentity`] (known identity, different content),
    /// [`Error::ConflictingEntityIdentity`] (known entity key, different content), and
    /// [`Error::OutOfRange`] past 536 870 911 distinct records of one kind.
    #[inline]
    pub fn push(&mut self, record: InferenceRecord, origin: Origin) -> Result<()> {
        match record {
            InferenceRecord::Legacy(_) => Ok(()),
            InferenceRecord::Event(event) => self.push_event(event, origin),
        }
    }

    /// Takes the next correlation event (see [`push`](Resolver::push)).
    pub fn push_event(&mut self, event: CorrelationEvent, origin: Origin) -> Result<()> {
        self.push_hashed(event, None, Place::Origin(origin))
    }

    /// Reads the index memory that `event`'s `hashes` (its [`Hashes::of`]) lead to, so that
    /// pushing it a little later finds that memory in the cache: a reader that sees records
    /// ahead calls this a few records before [`push_hashed`](Self::push_hashed). It changes
    /// nothing, and gives the hashes back.
    pub fn touch(&self, event: &CorrelationEvent, hashes: Hashes) -> Hashes {
        self.identities.touch(hashes.identity);
        self.tables.touch(event, hashes.key);
        hashes
    }

    /// [`push_event`](Self::push_event) with the event's [`Hashes`], when already computed.
    #[inline]
    pub fn push_hashed(
        &mut self,
        event: CorrelationEvent,
        hashes: Option<Hashes>,
        origin: Place<'_>,
    ) -> Result<()> {
        let hashes = hashes.unwrap_or_else(|| Hashes::of(&event));
        let context = event.context();
        match &self.run_id {
            None => self.run_id = Some(context.run_id.clone()),
            Some(run) if *run != context.run_id => {
                return Err(Error::MultipleRunIds {
                    origin: origin.origin(),
                });
            }
            Some(_) => {}
        }
        let hash = hashes.identity;
        let tables = &mut self.tables;
        let lookup = self.identities.lookup(
            hash,
            &context.session_id,
            &context.producer_id,
            event.event_id(),
            |kind, position| tables.view(kind, position),
        );
        let new = match lookup {
            Lookup::Known(location) => {
                let same = match location {
                    Location::Entity(kind, position) => tables.same_as(kind, position, &event),
                    Location::Side(index) => {
                        self.identities.side_fingerprint(index) == event.fingerprint()
                    }
                };
                return if same {
                    Ok(())
                } else {
                    Err(Error::ConflictingEventIdentity {
                        origin: origin.origin(),
                    })
                };
            }
            Lookup::New(new) => new,
        };
        let recorded = match tables.file(event, hashes.key, &mut self.interner, &origin)? {
            Placed::Entity(kind, position) => {
                new.at(Location::Entity(kind, position));
                Some(())
            }
            Placed::Side(side) => new.aside(side),
            Placed::Replaced(kind, position, old) => {
                let old_hash = identity_hash(&old.session_id, &old.producer_id, &old.event_id);
                new.replacing(Location::Entity(kind, position), old_hash, old)
            }
        };
        recorded.ok_or_else(|| too_many(origin.origin()))
    }

    /// The number of distinct event identities seen so far.
    pub fn distinct_events(&self) -> usize {
        self.identities.len()
    }

    /// Ends resolution: orders memberships and alignments and lists unresolved references.
    pub fn finish(self) -> CorrelationGraph {
        // The identity index is done with: freed first, its memory serves the sort keys below
        // instead of adding to the peak.
        drop(self.identities);
        drop(self.interner);
        let Tables {
            requests,
            iterations,
            stages,
            mut memberships,
            activities,
            mut alignments,
        } = self.tables;
        // The graph looks memberships and alignments up by position only: their key indexes
        // (9 MB at 1M records) go too.
        memberships.drop_index();
        alignments.drop_index();
        // The alignments' sort (a few entries) beside the reference checks; the memberships'
        // order waits for its first reader.
        let (alignment_order, mut checked) = rayon::join(
            || order::identity_order(&alignments),
            || unresolved::check(&requests, &iterations, &stages, &memberships, &activities),
        );
        let activity_iterations = std::mem::take(&mut checked.activity_iterations);
        let unresolved = unresolved::unresolved_references(checked, &memberships);
        CorrelationGraph {
            run_id: self.run_id,
            requests,
            iterations,
            stages,
            memberships,
            membership_order: OnceLock::new(),
            activities,
            activity_iterations,
            alignments,
            alignment_order,
            unresolved,
        }
    }
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
