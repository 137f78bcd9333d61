//! The reference's order of kept memberships and alignments: by `(session_id, producer_id,
//! event_id)` of the kept event (`docs/evidence.md#entity-tables`). Only the sort lives here; which tables are
//! shown in this order is [`super::CorrelationGraph`]'s business.

use std::sync::Arc;

use rayon::slice::ParallelSliceMut;
use rustc_hash::FxHashMap;

use super::table::EntityTable;
use crate::model::{CorrelationContext, Text};

/// Positions sorted by `(session_id, producer_id, event_id)`, a total order on kept events.
///
/// Sorting compares a precomputed key first — the rank of `(session_id, producer_id)` among the
/// table's few distinct contexts, and the first sixteen bytes of `event_id` — and reads the full
/// `event_id` only on ties, so most comparisons touch no entry (ids of up to sixteen bytes never
/// tie).
pub(super) fn identity_order<B: Sync>(table: &EntityTable<B>) -> Vec<u32> {
    // One pass: each entry's key with its context's index in `distinct` where the rank goes.
    // Contexts are interned and consecutive entries mostly share one: the last is tried first.
    let mut contexts: FxHashMap<usize, u32> = FxHashMap::default();
    let mut distinct: Vec<&CorrelationContext> = Vec::new();
    let mut last: Option<(usize, u32)> = None;
    let mut keys: Vec<(u128, u32, u32)> = table
        .iter()
        .enumerate()
        .map(|(position, entry)| {
            let address = Arc::as_ptr(entry.context_arc()) as usize;
            let context = match last {
                Some((a, index)) if a == address => index,
                _ => {
                    let index = *contexts.entry(address).or_insert_with(|| {
                        distinct.push(entry.context());
                        (distinct.len() - 1) as u32
                    });
                    last = Some((address, index));
                    index
                }
            };
            let mut prefix = [0u8; 16];
            let id = entry.event_id().as_bytes();
            let n = id.len().min(16);
            prefix[..n].copy_from_slice(&id[..n]);
            (u128::from_be_bytes(prefix), context, position as u32)
        })
        .collect();
    let pair = |c: &CorrelationContext| (c.session_id.clone(), c.producer_id.clone());
    let mut pairs: Vec<(Text, Text)> = distinct.iter().map(|c| pair(c)).collect();
    pairs.sort_unstable();
    pairs.dedup();
    let rank_of: Vec<u32> = distinct
        .iter()
        .map(|c| pairs.binary_search(&pair(c)).expect("listed") as u32)
        .collect();
    for key in &mut keys {
        key.1 = rank_of[key.1 as usize];
    }
    keys.par_sort_unstable_by(|a, b| {
        (a.1, a.0).cmp(&(b.1, b.0)).then_with(|| {
            let (x, y) = (&table[a.2 as usize], &table[b.2 as usize]);
            x.event_id().cmp(y.event_id())
        })
    });
    keys.into_iter().map(|(_, _, position)| position).collect()
}
