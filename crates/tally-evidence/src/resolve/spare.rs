//! Storage chunks made ready before the resolver needs them.
//!
//! A table stores its entries in chunks of [`CHUNK`] entries (see [`super::table`]); the first
//! write to each page of a new chunk is a page fault, which the kernel serves by finding,
//! zeroing and mapping a page (1.5 to 5 µs per 4 KiB page on the benchmark machine). Resolution
//! runs on one thread, in file order, and on a shuffled trace it is the slower side of the
//! reader's pipeline: the parse threads finish a batch and wait while it files the previous
//! one, and most of that wait was those faults. So the reader asks the resolver for the empty
//! chunks it will fill during the next batches ([`super::Resolver::spare_chunks`]), has a parse
//! thread fault them in ([`SpareChunks::fault_in`]) while resolution goes on, and hands them
//! back ([`super::Resolver::keep_spare_chunks`]). The number asked for follows the entries per
//! input byte seen so far, so few are left over at the end (they are freed by `finish`).
//!
//! Nothing here starts a thread or touches a file: where `fault_in` runs is the caller's choice.

use std::mem::MaybeUninit;

use super::Tables;
use super::table::{CHUNK, EntityTable, ResolvedEvent};
use crate::model::{
    ActivityReferenceEvent, IterationEvent, MembershipEvent, RequestEvent, StageEvent,
};

/// The most chunks one table is given at a time (a bound for odd estimates, such as an input
/// whose first batches hold nothing but one kind).
const MAX_PER_TABLE: usize = 64;

/// Empty chunks for the large tables (alignments stay small), not yet written.
#[derive(Debug, Default)]
pub(crate) struct SpareChunks {
    requests: Vec<Vec<ResolvedEvent<RequestEvent>>>,
    iterations: Vec<Vec<ResolvedEvent<IterationEvent>>>,
    stages: Vec<Vec<ResolvedEvent<StageEvent>>>,
    memberships: Vec<Vec<ResolvedEvent<MembershipEvent>>>,
    activities: Vec<Vec<ResolvedEvent<ActivityReferenceEvent>>>,
}

impl SpareChunks {
    /// Whether there is nothing to fault in.
    pub(crate) fn is_empty(&self) -> bool {
        self.requests.is_empty()
            && self.iterations.is_empty()
            && self.stages.is_empty()
            && self.memberships.is_empty()
            && self.activities.is_empty()
    }

    /// Writes every page of every chunk once, so that the faults happen on this thread, now.
    pub(crate) fn fault_in(&mut self) {
        self.requests.iter_mut().for_each(fault_in);
        self.iterations.iter_mut().for_each(fault_in);
        self.stages.iter_mut().for_each(fault_in);
        self.memberships.iter_mut().for_each(fault_in);
        self.activities.iter_mut().for_each(fault_in);
    }
}

/// Bytes between two writes of [`fault_in`]: a page or less on any machine tally runs on.
const PAGE: usize = 4096;

/// Zeroes one slot per page of `chunk`'s spare capacity (and the last slot). The slots stay
/// uninitialised as far as the `Vec` is concerned: its length is unchanged.
fn fault_in<T>(chunk: &mut Vec<T>) {
    let slots = chunk.spare_capacity_mut();
    // Slot starts at most a page apart: every page holds the start of a written slot.
    let step = (PAGE / size_of::<T>().max(1)).max(1);
    for slot in slots.iter_mut().step_by(step) {
        *slot = MaybeUninit::zeroed();
    }
    if let Some(last) = slots.last_mut() {
        *last = MaybeUninit::zeroed();
    }
    std::hint::black_box(slots);
}

/// `count` empty chunks of full capacity (allocated, not yet touched).
fn chunks<B>(count: usize) -> Vec<Vec<ResolvedEvent<B>>> {
    (0..count.min(MAX_PER_TABLE))
        .map(|_| Vec::with_capacity(CHUNK))
        .collect()
}

/// The chunks `table` wants for `entries` more entries.
fn wanted<B>(table: &EntityTable<B>, entries: usize) -> Vec<Vec<ResolvedEvent<B>>> {
    chunks(table.spares_wanted(entries))
}

/// The large tables' lengths when the current input started: entries per input byte are
/// measured from there.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Baseline {
    lens: [usize; 5],
}

/// The lengths of the five large tables.
fn lens(tables: &Tables) -> [usize; 5] {
    [
        tables.requests.len(),
        tables.iterations.len(),
        tables.stages.len(),
        tables.memberships.len(),
        tables.activities.len(),
    ]
}

/// The chunks the tables want for about `ahead` more bytes of the input, of which `delivered`
/// bytes were taken since `baseline` was set (at 0, the baseline is set now and nothing is asked
/// for: an input's first batch gives the rate).
pub(super) fn plan(
    tables: &Tables,
    baseline: &mut Baseline,
    delivered: u64,
    ahead: u64,
) -> SpareChunks {
    if delivered == 0 {
        baseline.lens = lens(tables);
        return SpareChunks::default();
    }
    let expected = |now: usize, before: usize| {
        let grown = now.saturating_sub(before) as u128;
        usize::try_from(grown * u128::from(ahead) / u128::from(delivered)).unwrap_or(usize::MAX)
    };
    let [r, i, s, m, a] = lens(tables);
    let [r0, i0, s0, m0, a0] = baseline.lens;
    SpareChunks {
        requests: wanted(&tables.requests, expected(r, r0)),
        iterations: wanted(&tables.iterations, expected(i, i0)),
        stages: wanted(&tables.stages, expected(s, s0)),
        memberships: wanted(&tables.memberships, expected(m, m0)),
        activities: wanted(&tables.activities, expected(a, a0)),
    }
}

/// Gives the tables their (faulted-in) chunks.
pub(super) fn keep(tables: &mut Tables, spares: SpareChunks) {
    tables.requests.keep_spares(spares.requests);
    tables.iterations.keep_spares(spares.iterations);
    tables.stages.keep_spares(spares.stages);
    tables.memberships.keep_spares(spares.memberships);
    tables.activities.keep_spares(spares.activities);
}

/// Frees every table's unused chunks.
pub(super) fn drop_all(tables: &mut Tables) {
    tables.requests.drop_spares();
    tables.iterations.drop_spares();
    tables.stages.drop_spares();
    tables.memberships.drop_spares();
    tables.activities.drop_spares();
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::Resolver;
    use crate::error::Origin;
    use crate::model::{
        ClockKind, CollectionMode, CorrelationContext, CorrelationEvent, EntityRef, EventBody,
        Metadata, Provenance,
    };

    fn membership(context: &Arc<CorrelationContext>, i: usize) -> CorrelationEvent {
        let body = MembershipEvent {
            request_ref: EntityRef::new("client", format!("req-{}", i / 8)).unwrap(),
            iteration_ref: EntityRef::new("engine", format!("it-{}", i % 97)).unwrap(),
            role: "decode".into(),
            attempt_ref: None,
            input_tokens: None,
            output_tokens: Some(1),
            kv_bytes: None,
        };
        CorrelationEvent::new(
            Arc::clone(context),
            format!("m-{i}").into(),
            Metadata::empty(),
            EventBody::Membership(body),
        )
    }

    fn pushed(
        resolver: &mut Resolver,
        events: std::ops::Range<usize>,
        context: &Arc<CorrelationContext>,
    ) {
        for i in events {
            resolver
                .push_event(membership(context, i), Origin::default())
                .expect("a new membership");
        }
    }

    #[test]
    fn spare_chunks_follow_the_rate_and_change_nothing() {
        let context = Arc::new(CorrelationContext {
            run_id: "run".into(),
            session_id: "s".into(),
            producer_id: "engine".into(),
            source: "test".into(),
            clock_domain: "d".into(),
            clock_kind: ClockKind::Monotonic,
            collection_mode: CollectionMode::Passive,
            provenance: Provenance::Reported,
            source_version: None,
            engine: None,
            engine_version: None,
            backend: None,
            backend_version: None,
            host: None,
            device_uuid: None,
            pid: None,
            rank: None,
            local_rank: None,
            world_size: None,
        });
        let mut with_spares = Resolver::new();
        // An input starts: nothing is asked for, the baseline is set.
        assert!(with_spares.spare_chunks(0, 1000).is_empty());
        // Less than a chunk of entries: the first chunk grows like a `Vec`, no spares.
        pushed(&mut with_spares, 0..1000, &context);
        assert!(with_spares.spare_chunks(1000, 1000).is_empty());
        pushed(&mut with_spares, 1000..CHUNK + 10, &context);
        // One entry per byte so far: 3 chunks' worth ahead, minus the room left in the current
        // chunk, is 3 chunks.
        let delivered = (CHUNK + 10) as u64;
        let mut spares = with_spares.spare_chunks(delivered, 3 * CHUNK as u64);
        assert_eq!(spares.memberships.len(), 3);
        assert!(spares.requests.is_empty() && spares.activities.is_empty());
        spares.fault_in();
        with_spares.keep_spare_chunks(spares);
        assert_eq!(with_spares.tables.memberships.spare_count(), 3);
        // Held spares count against what is wanted.
        assert!(
            with_spares
                .spare_chunks(delivered, 3 * CHUNK as u64)
                .is_empty()
        );
        // Filling two more chunks takes two spares.
        pushed(&mut with_spares, CHUNK + 10..3 * CHUNK + 10, &context);
        assert_eq!(with_spares.tables.memberships.spare_count(), 1);

        let mut plain = Resolver::new();
        pushed(&mut plain, 0..3 * CHUNK + 10, &context);
        let (a, b) = (with_spares.finish(), plain.finish());
        assert_eq!(a.counts(), b.counts());
        let ids = |g: &crate::CorrelationGraph| -> Vec<String> {
            g.membership_table()
                .iter()
                .map(|m| m.event_id().to_string())
                .collect()
        };
        assert_eq!(ids(&a), ids(&b));
        assert_eq!(a.unresolved(), b.unresolved());
    }

    #[test]
    fn fault_in_leaves_the_chunk_empty_with_its_capacity() {
        let mut chunk: Vec<[u64; 27]> = Vec::with_capacity(CHUNK);
        fault_in(&mut chunk);
        assert!(chunk.is_empty());
        assert!(chunk.capacity() >= CHUNK);
        chunk.push([7; 27]);
        assert_eq!(chunk[0], [7; 27]);
        // Slots larger than a page are each written.
        let mut big: Vec<[u8; 5000]> = Vec::with_capacity(3);
        fault_in(&mut big);
        assert!(big.is_empty());
    }
}
