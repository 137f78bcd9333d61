//! Entity tables: the kept events of one kind, keyed by their entity key (`docs/evidence.md#entity-tables`).
//!
//! An [`EntityTable`] stores each entity once, in the order its key first appeared, as a
//! [`ResolvedEvent`] (the event's parts with a typed body). The key is never stored separately:
//! the index is a hash table of `(position, 32-bit key hash)` pairs, and a lookup compares the
//! key fields of the stored body itself. That keeps the per-entity overhead at about 9–18 bytes
//! (8 per slot plus the control byte, at hashbrown's load factor) and lookups exact, with no hash
//! collision risk.
//!
//! A [`SortedView`] shows a table in a precomputed order (the resolver's identity order for
//! memberships and alignments). What a key is for each body type lives here too ([`Keyed`]). De-duplication policy (which of
//! two equal entities is kept, what a conflict is) belongs to [`super::Resolver`]; this module
//! only finds and replaces.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use hashbrown::{HashTable, hash_table};
use rustc_hash::FxHasher;

use crate::fingerprint::{self, Fingerprint};
use crate::model::{
    ActivityReferenceEvent, ClockAlignmentEvent, ClockKind, CorrelationContext, EntityRef,
    EventBody, IterationEvent, MembershipEvent, Metadata, Nanos, RequestEvent, StageEvent, Text,
};

/// One kept event of a table: the record's parts with its typed body.
///
/// Two entries are the same record when their contexts, metadata and bodies are equal in the
/// sense of [`crate::fingerprint`]; `event_id` is not part of that.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedEvent<B> {
    context: Arc<CorrelationContext>,
    event_id: Text,
    metadata: Metadata,
    body: B,
}

impl<B> ResolvedEvent<B> {
    #[inline(always)]
    pub(crate) fn new(
        context: Arc<CorrelationContext>,
        event_id: Text,
        metadata: Metadata,
        body: B,
    ) -> Self {
        Self {
            context,
            event_id,
            metadata,
            body,
        }
    }

    /// Who observed it, with which clock.
    pub fn context(&self) -> &CorrelationContext {
        &self.context
    }
    /// The shared context (the resolver interns equal contexts into one allocation).
    pub fn context_arc(&self) -> &Arc<CorrelationContext> {
        &self.context
    }
    /// The kept representative's event id (the smallest among equal records).
    pub fn event_id(&self) -> &Text {
        &self.event_id
    }
    /// The metadata object.
    pub fn metadata(&self) -> &Metadata {
        &self.metadata
    }
    /// The typed body.
    pub fn body(&self) -> &B {
        &self.body
    }
    /// Whether this entry and a record with these parts are the same record (everything but
    /// `event_id` equal, see [`crate::fingerprint`]).
    pub(crate) fn same_content(
        &self,
        context: &Arc<CorrelationContext>,
        metadata: &Metadata,
        body: &B,
    ) -> bool
    where
        B: PartialEq,
    {
        self.body == *body
            && fingerprint::same_content(&self.context, &self.metadata, context, metadata)
    }
    /// Content fingerprint of the record without its `event_id`, computed (only records that
    /// leave the tables need one: see `resolve::identity`).
    pub(crate) fn fingerprint(&self) -> Fingerprint
    where
        B: Keyed,
    {
        fingerprint::event(
            fingerprint::shared_context(&self.context),
            fingerprint::metadata(&self.metadata),
            &self.body.to_event_body(),
        )
    }
    /// `end − start` when the context's clock is monotonic and both ends are present
    /// (`docs/evidence.md#events`), given the body's span.
    pub(crate) fn elapsed_of(&self, start: Option<Nanos>, end: Option<Nanos>) -> Option<i128> {
        if self.context.clock_kind != ClockKind::Monotonic {
            return None;
        }
        Some(i128::from(end?) - i128::from(start?))
    }
}

/// How a body type names its entity (`docs/evidence.md#entity-tables`). Crate-internal.
pub(crate) trait Keyed: Sized + PartialEq + Clone {
    /// Hash of the entity key (the fields that [`Keyed::same_key`] compares) of `body`, observed
    /// in `context`.
    fn key_hash(context: &CorrelationContext, body: &Self) -> u64;
    /// Whether two entries have the same entity key.
    fn same_key(a: &ResolvedEvent<Self>, b: &ResolvedEvent<Self>) -> bool;
    /// The body as an [`EventBody`] (a copy, for a fingerprint).
    fn to_event_body(&self) -> EventBody;
}

fn hash_ref(h: &mut FxHasher, r: &EntityRef) {
    r.producer_id.hash(h);
    r.id.hash(h);
}

fn hash_opt_ref(h: &mut FxHasher, r: Option<&EntityRef>) {
    match r {
        None => h.write_u8(0),
        Some(r) => {
            h.write_u8(1);
            hash_ref(h, r);
        }
    }
}

/// The hash of a single-reference key, as the tables keyed by one [`EntityRef`] compute it.
pub(crate) fn ref_key_hash(r: &EntityRef) -> u64 {
    let mut h = FxHasher::default();
    hash_ref(&mut h, r);
    h.finish()
}

/// The hash of a request key `(request_ref, attempt_ref)`.
pub(crate) fn request_key_hash(request: &EntityRef, attempt: Option<&EntityRef>) -> u64 {
    let mut h = FxHasher::default();
    hash_ref(&mut h, request);
    hash_opt_ref(&mut h, attempt);
    h.finish()
}

impl Keyed for RequestEvent {
    fn to_event_body(&self) -> EventBody {
        EventBody::Request(self.clone())
    }
    fn key_hash(_: &CorrelationContext, b: &Self) -> u64 {
        request_key_hash(&b.request_ref, b.attempt_ref.as_ref())
    }
    fn same_key(a: &ResolvedEvent<Self>, b: &ResolvedEvent<Self>) -> bool {
        a.body.request_ref == b.body.request_ref && a.body.attempt_ref == b.body.attempt_ref
    }
}

impl Keyed for IterationEvent {
    fn to_event_body(&self) -> EventBody {
        EventBody::Iteration(self.clone())
    }
    fn key_hash(_: &CorrelationContext, b: &Self) -> u64 {
        ref_key_hash(&b.iteration_ref)
    }
    fn same_key(a: &ResolvedEvent<Self>, b: &ResolvedEvent<Self>) -> bool {
        a.body.iteration_ref == b.body.iteration_ref
    }
}

impl Keyed for StageEvent {
    fn to_event_body(&self) -> EventBody {
        EventBody::Stage(self.clone())
    }
    fn key_hash(_: &CorrelationContext, b: &Self) -> u64 {
        ref_key_hash(&b.stage_ref)
    }
    fn same_key(a: &ResolvedEvent<Self>, b: &ResolvedEvent<Self>) -> bool {
        a.body.stage_ref == b.body.stage_ref
    }
}

impl Keyed for ActivityReferenceEvent {
    fn to_event_body(&self) -> EventBody {
        EventBody::Activity(self.clone())
    }
    fn key_hash(_: &CorrelationContext, b: &Self) -> u64 {
        ref_key_hash(&b.activity_ref)
    }
    fn same_key(a: &ResolvedEvent<Self>, b: &ResolvedEvent<Self>) -> bool {
        a.body.activity_ref == b.body.activity_ref
    }
}

impl Keyed for MembershipEvent {
    fn to_event_body(&self) -> EventBody {
        EventBody::Membership(self.clone())
    }
    fn key_hash(_: &CorrelationContext, b: &Self) -> u64 {
        let mut h = FxHasher::default();
        hash_ref(&mut h, &b.request_ref);
        hash_opt_ref(&mut h, b.attempt_ref.as_ref());
        hash_ref(&mut h, &b.iteration_ref);
        b.role.hash(&mut h);
        h.finish()
    }
    fn same_key(a: &ResolvedEvent<Self>, b: &ResolvedEvent<Self>) -> bool {
        let (x, y) = (&a.body, &b.body);
        x.request_ref == y.request_ref
            && x.attempt_ref == y.attempt_ref
            && x.iteration_ref == y.iteration_ref
            && x.role == y.role
    }
}

impl Keyed for ClockAlignmentEvent {
    fn to_event_body(&self) -> EventBody {
        EventBody::ClockAlignment(self.clone())
    }
    fn key_hash(context: &CorrelationContext, b: &Self) -> u64 {
        let mut h = FxHasher::default();
        context.session_id.hash(&mut h);
        context.producer_id.hash(&mut h);
        b.from_clock_domain.hash(&mut h);
        b.to_clock_domain.hash(&mut h);
        (
            b.offset_ns,
            b.uncertainty_ns,
            b.valid_from_ns,
            b.valid_to_ns,
        )
            .hash(&mut h);
        h.finish()
    }
    fn same_key(a: &ResolvedEvent<Self>, b: &ResolvedEvent<Self>) -> bool {
        let (x, y) = (&a.body, &b.body);
        a.context.session_id == b.context.session_id
            && a.context.producer_id == b.context.producer_id
            && x.from_clock_domain == y.from_clock_domain
            && x.to_clock_domain == y.to_clock_domain
            && x.offset_ns == y.offset_ns
            && x.uncertainty_ns == y.uncertainty_ns
            && x.valid_from_ns == y.valid_from_ns
            && x.valid_to_ns == y.valid_to_ns
    }
}

/// Folds a 64-bit key hash to the 32 bits kept in the index.
pub(crate) fn fold(hash: u64) -> u32 {
    (hash ^ (hash >> 32)) as u32
}

/// Spreads a stored 32-bit hash back over 64 bits for the hash table (which takes its bucket
/// from the low bits and its tag from the top seven). Multiplying by an odd constant is a
/// bijection, so equal keys still meet.
pub(crate) fn spread(folded: u32) -> u64 {
    u64::from(folded).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// What [`file`] did with an entry.
pub(crate) enum Filed<B> {
    /// The key was new: the entry was appended at this position.
    Inserted(u32),
    /// The key was known: here are the kept entry's position and the offered entry, for the
    /// caller to decide.
    Existing(u32, ResolvedEvent<B>),
}

/// Entries per storage chunk. Full chunks never move, so a growing table copies nothing and
/// touches each page once (a doubling `Vec` of 320-byte entries would copy and fault in twice).
const CHUNK_SHIFT: u32 = 12;
const CHUNK: usize = 1 << CHUNK_SHIFT;

/// The kept entities of one kind in first-appearance order of their keys, with an exact index.
///
/// Positions are `u32` and stable: an entity keeps its position when a smaller `event_id`
/// replaces its representative.
#[derive(Clone, Debug)]
pub struct EntityTable<B> {
    chunks: Vec<Vec<ResolvedEvent<B>>>,
    len: u32,
    index: HashTable<(u32, u32)>,
}

impl<B> Default for EntityTable<B> {
    fn default() -> Self {
        Self {
            chunks: Vec::new(),
            len: 0,
            index: HashTable::new(),
        }
    }
}

impl<B> EntityTable<B> {
    /// Number of entities.
    pub fn len(&self) -> usize {
        self.len as usize
    }
    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The entities in first-appearance order of their keys.
    pub fn iter(&self) -> Iter<'_, B> {
        Iter {
            inner: self.chunks.iter().flatten(),
            left: self.len(),
        }
    }
    /// The entity at `position` (first-appearance order), if any.
    pub fn get_at(&self, position: usize) -> Option<&ResolvedEvent<B>> {
        self.chunks
            .get(position >> CHUNK_SHIFT)
            .and_then(|c| c.get(position & (CHUNK - 1)))
    }
    /// Frees the key index, for a table that nothing looks up by key once resolution is over
    /// (memberships, alignments: the graph offers no lookup for them). Only
    /// [`Resolver::finish`](super::Resolver::finish) calls it, on a table no record will be
    /// filed in again.
    pub(super) fn drop_index(&mut self) {
        self.index = HashTable::new();
    }
    /// Reads the index where a key hashing to `hash` would be, so that a lookup that follows
    /// soon finds it in the cache (a hint: it changes nothing).
    pub(crate) fn touch(&self, hash: u64) {
        std::hint::black_box(self.index.find(spread(fold(hash)), |_| false));
    }
    /// The position of the entity whose key hashes to `hash` and satisfies `eq`.
    fn position(&self, hash: u64, mut eq: impl FnMut(&ResolvedEvent<B>) -> bool) -> Option<u32> {
        let folded = fold(hash);
        self.index
            .find(spread(folded), |&(i, h)| {
                h == folded && eq(&self[i as usize])
            })
            .map(|&(i, _)| i)
    }
    pub(crate) fn entry_mut(&mut self, position: u32) -> &mut ResolvedEvent<B> {
        let p = position as usize;
        &mut self.chunks[p >> CHUNK_SHIFT][p & (CHUNK - 1)]
    }
    #[inline(always)]
    fn push(&mut self, entry: ResolvedEvent<B>) {
        if self.chunks.last().is_none_or(|c| c.len() == CHUNK) {
            // The first chunk grows like a `Vec` (small tables stay small); later ones are
            // allocated whole.
            let capacity = if self.chunks.is_empty() { 0 } else { CHUNK };
            self.chunks.push(Vec::with_capacity(capacity));
        }
        self.chunks.last_mut().expect("a chunk").push(entry);
        self.len += 1;
    }
}

/// Iterator over an [`EntityTable`] in first-appearance order.
#[derive(Clone, Debug)]
pub struct Iter<'a, B> {
    inner: std::iter::Flatten<std::slice::Iter<'a, Vec<ResolvedEvent<B>>>>,
    left: usize,
}

impl<'a, B> Iterator for Iter<'a, B> {
    type Item = &'a ResolvedEvent<B>;
    fn next(&mut self) -> Option<Self::Item> {
        let next = self.inner.next()?;
        self.left -= 1;
        Some(next)
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl<B> ExactSizeIterator for Iter<'_, B> {}

impl<'a, B> IntoIterator for &'a EntityTable<B> {
    type Item = &'a ResolvedEvent<B>;
    type IntoIter = Iter<'a, B>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// The largest number of entities one table holds (positions must fit the identity index's
/// 29-bit field; see [`super::identity`]).
pub(crate) const MAX_ENTITIES: u32 = (1 << 29) - 1;

/// Appends `entry`, whose key hashes to `key_hash`, to `table` when its key is new; otherwise
/// hands it back with the kept entry's position. `None` when the table is full
/// ([`MAX_ENTITIES`]).
#[inline(always)]
pub(crate) fn file<B: Keyed>(
    table: &mut EntityTable<B>,
    key_hash: u64,
    entry: ResolvedEvent<B>,
) -> Option<Filed<B>> {
    let folded = fold(key_hash);
    let chunks = &table.chunks;
    let slot = table.index.entry(
        spread(folded),
        |&(i, h)| h == folded && B::same_key(chunk_entry(chunks, i), &entry),
        |&(_, h)| spread(h),
    );
    match slot {
        hash_table::Entry::Occupied(kept) => Some(Filed::Existing(kept.get().0, entry)),
        hash_table::Entry::Vacant(slot) => {
            if table.len >= MAX_ENTITIES {
                return None;
            }
            let position = table.len;
            slot.insert((position, folded));
            table.push(entry);
            Some(Filed::Inserted(position))
        }
    }
}

fn chunk_entry<B>(chunks: &[Vec<ResolvedEvent<B>>], position: u32) -> &ResolvedEvent<B> {
    let p = position as usize;
    &chunks[p >> CHUNK_SHIFT][p & (CHUNK - 1)]
}

impl<B> std::ops::Index<usize> for EntityTable<B> {
    type Output = ResolvedEvent<B>;
    fn index(&self, position: usize) -> &Self::Output {
        &self.chunks[position >> CHUNK_SHIFT][position & (CHUNK - 1)]
    }
}

/// A table seen in a precomputed order (memberships and alignments in the reference's order).
#[derive(Debug)]
pub struct SortedView<'a, B> {
    table: &'a EntityTable<B>,
    order: &'a [u32],
}

impl<'a, B> SortedView<'a, B> {
    pub(crate) fn new(table: &'a EntityTable<B>, order: &'a [u32]) -> Self {
        Self { table, order }
    }
}

impl<B> Clone for SortedView<'_, B> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<B> Copy for SortedView<'_, B> {}

impl<'a, B> SortedView<'a, B> {
    /// Number of entries.
    pub fn len(&self) -> usize {
        self.order.len()
    }
    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }
    /// The `i`-th entry in this order.
    pub fn get(&self, i: usize) -> Option<&'a ResolvedEvent<B>> {
        self.order.get(i).map(|&p| &self.table[p as usize])
    }
    /// The entries in this order.
    pub fn iter(&self) -> SortedIter<'a, B> {
        SortedIter {
            table: self.table,
            order: self.order.iter(),
        }
    }
}

impl<B> std::ops::Index<usize> for SortedView<'_, B> {
    type Output = ResolvedEvent<B>;
    fn index(&self, i: usize) -> &Self::Output {
        &self.table[self.order[i] as usize]
    }
}

impl<'a, B> IntoIterator for SortedView<'a, B> {
    type Item = &'a ResolvedEvent<B>;
    type IntoIter = SortedIter<'a, B>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// Iterator of a [`SortedView`].
#[derive(Debug)]
pub struct SortedIter<'a, B> {
    table: &'a EntityTable<B>,
    order: std::slice::Iter<'a, u32>,
}

impl<B> Clone for SortedIter<'_, B> {
    fn clone(&self) -> Self {
        Self {
            table: self.table,
            order: self.order.clone(),
        }
    }
}

impl<'a, B> Iterator for SortedIter<'a, B> {
    type Item = &'a ResolvedEvent<B>;
    fn next(&mut self) -> Option<Self::Item> {
        self.order.next().map(|&p| &self.table[p as usize])
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.order.size_hint()
    }
}

impl<B> ExactSizeIterator for SortedIter<'_, B> {}

macro_rules! single_ref_lookup {
    ($body:ty, $field:ident, $what:literal) => {
        impl EntityTable<$body> {
            #[doc = concat!("The position of the ", $what, " with this reference.")]
            pub fn position_of(&self, reference: &EntityRef) -> Option<usize> {
                self.position(ref_key_hash(reference), |e| e.body.$field == *reference)
                    .map(|p| p as usize)
            }
            #[doc = concat!("The ", $what, " with this reference.")]
            pub fn get(&self, reference: &EntityRef) -> Option<&ResolvedEvent<$body>> {
                self.position_of(reference).map(|p| &self[p])
            }
            #[doc = concat!("Whether a ", $what, " with this reference exists.")]
            pub fn contains(&self, reference: &EntityRef) -> bool {
                self.position_of(reference).is_some()
            }
        }
    };
}

single_ref_lookup!(IterationEvent, iteration_ref, "iteration");
single_ref_lookup!(StageEvent, stage_ref, "stage");
single_ref_lookup!(ActivityReferenceEvent, activity_ref, "activity");

impl EntityTable<RequestEvent> {
    /// The request entry keyed `(request, attempt)`; `attempt = None` is the generic request.
    pub fn get(
        &self,
        request: &EntityRef,
        attempt: Option<&EntityRef>,
    ) -> Option<&ResolvedEvent<RequestEvent>> {
        self.position(request_key_hash(request, attempt), |e| {
            e.body.request_ref == *request && e.body.attempt_ref.as_ref() == attempt
        })
        .map(|p| &self[p as usize])
    }
    /// Whether the entry keyed `(request, attempt)` exists.
    pub fn contains(&self, request: &EntityRef, attempt: Option<&EntityRef>) -> bool {
        self.get(request, attempt).is_some()
    }
}
