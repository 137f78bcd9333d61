//! Sorting entity references by their texts with few text comparisons.
//!
//! Trace ids are long and share long prefixes (`kineto:rank0-dev0.pt.trace.json.gz:…/1234`), so
//! a comparison sort of [`EntityRef`]s spends its time in `memcmp` on bytes every id has, one
//! pointer chase per side. Here each reference gets a fixed-size key — the rank of its
//! `producer_id` among the list's producers, and sixteen bytes of its `id` past the prefix that
//! all ids in its group share — and the keys are sorted as integers. Only groups that tie on a
//! key are looked at again, sixteen bytes further on (an MSD radix sort with a comparison sort
//! per digit). The order is exactly `EntityRef`'s `Ord`: by `producer_id`, then `id`, bytewise.

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::model::{EntityRef, Text};

/// Sorts `refs` by `(producer_id, id)` and removes repeats: the result equals
/// `refs.sort_unstable(); refs.dedup();`.
pub(crate) fn sort_refs(refs: &mut Vec<EntityRef>) {
    if refs.len() < 2 {
        return;
    }
    let mut keys: Vec<Key> = producer_ranks(refs)
        .into_iter()
        .enumerate()
        .map(|(index, rank)| Key {
            rank,
            digit: 0,
            tail: 0,
            index: index as u32,
        })
        .collect();
    // First by producer alone, then each producer's group by its ids.
    keys.sort_unstable_by_key(|k| k.rank);
    for group in keys.chunk_by_mut(|a, b| a.rank == b.rank) {
        sort_ids(group, refs, 0);
    }
    let mut slots: Vec<Option<EntityRef>> = std::mem::take(refs).into_iter().map(Some).collect();
    refs.extend(
        keys.iter()
            .map(|k| slots[k.index as usize].take().expect("each index once")),
    );
    refs.dedup();
}

/// One reference's sort key at some depth of its id.
#[derive(Clone, Copy)]
struct Key {
    /// Rank of the `producer_id` (equal texts, equal ranks).
    rank: u32,
    /// Sixteen bytes of the id from the current depth, big-endian, zero-padded.
    digit: u128,
    /// How many id bytes the digit holds (up to 16; 17 when more follow): of two ids equal over
    /// the digit, the one that ends first sorts first.
    tail: u8,
    /// Position in the list being sorted.
    index: u32,
}

/// Distinct producers ranked by text, per reference. Consecutive references mostly share a
/// producer, so the previous reference's is tried before the map.
fn producer_ranks(refs: &[EntityRef]) -> Vec<u32> {
    let mut distinct: Vec<&Text> = Vec::new();
    let mut index_of: FxHashMap<&str, u32> = FxHashMap::default();
    let mut of_ref: Vec<u32> = Vec::with_capacity(refs.len());
    let mut last: Option<(&Text, u32)> = None;
    for r in refs {
        let found = match last {
            Some((producer, index)) if *producer == r.producer_id => index,
            _ => *index_of.entry(r.producer_id.as_str()).or_insert_with(|| {
                distinct.push(&r.producer_id);
                (distinct.len() - 1) as u32
            }),
        };
        last = Some((&r.producer_id, found));
        of_ref.push(found);
    }
    let mut order: Vec<u32> = (0..distinct.len() as u32).collect();
    order.sort_unstable_by(|&a, &b| distinct[a as usize].cmp(distinct[b as usize]));
    let mut rank = vec![0u32; distinct.len()];
    for (r, &d) in order.iter().enumerate() {
        rank[d as usize] = r as u32;
    }
    of_ref.iter().map(|&d| rank[d as usize]).collect()
}

/// Groups of at least this many keys are sorted on rayon's pool (the accountant sorts its longest
/// list while its other parts are done and a core is free).
const PARALLEL: usize = 1 << 14;

/// Sorts `keys` (of one producer) by the ids of `refs` they index, from byte `depth` on, where
/// all of them agree before `depth`.
fn sort_ids(keys: &mut [Key], refs: &[EntityRef], depth: usize) {
    if keys.len() < 2 {
        return;
    }
    let parallel = keys.len() >= PARALLEL;
    let id = |k: &Key| refs[k.index as usize].id.as_bytes();
    // Skip what every id of the group shares: trace ids agree on long prefixes.
    let first = id(&keys[0]);
    let shared_with_first = |k: &Key| {
        let other = id(k);
        let n = first.len().min(other.len());
        depth + common_prefix(&first[depth..n], &other[depth..n])
    };
    let shared = if parallel {
        keys[1..].par_iter().map(shared_with_first).min()
    } else {
        keys[1..].iter().map(shared_with_first).min()
    };
    let depth = shared.unwrap_or(first.len()).max(depth);
    let set_digit = |k: &mut Key| {
        let bytes = id(k);
        let rest = &bytes[depth.min(bytes.len())..];
        let n = rest.len().min(16);
        let mut digit = [0u8; 16];
        digit[..n].copy_from_slice(&rest[..n]);
        k.digit = u128::from_be_bytes(digit);
        k.tail = if rest.len() > 16 { 17 } else { n as u8 };
    };
    let same_digit = |a: &Key, b: &Key| (a.digit, a.tail) == (b.digit, b.tail);
    // Equal ids that end within the digit need no further look.
    let sort_ties = |tie: &mut [Key]| {
        if tie.len() > 1 && tie[0].tail == 17 {
            sort_ids(tie, refs, depth + 16);
        }
    };
    if parallel {
        keys.par_iter_mut().for_each(set_digit);
        keys.par_sort_unstable_by_key(|k| (k.digit, k.tail));
        keys.par_chunk_by_mut(same_digit).for_each(sort_ties);
    } else {
        keys.iter_mut().for_each(set_digit);
        keys.sort_unstable_by_key(|k| (k.digit, k.tail));
        keys.chunk_by_mut(same_digit).for_each(sort_ties);
    }
}

/// The length of the common prefix of `a` and `b`.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let words = a.chunks_exact(8).zip(b.chunks_exact(8));
    let mut n = 0;
    for (x, y) in words {
        if x != y {
            break;
        }
        n += 8;
    }
    n + a[n..]
        .iter()
        .zip(&b[n..])
        .take_while(|(x, y)| x == y)
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn reference(producer: &str, id: &str) -> EntityRef {
        EntityRef {
            producer_id: Text::from(producer),
            id: Text::from(id),
        }
    }

    fn std_sorted(mut refs: Vec<EntityRef>) -> Vec<EntityRef> {
        refs.sort_unstable();
        refs.dedup();
        refs
    }

    #[test]
    fn trace_ids_with_a_long_shared_prefix() {
        let prefix = "kineto:rank0-dev0.pt.trace.json.gz:5161287fa4c2/";
        let mut refs: Vec<EntityRef> = (0..2000)
            .rev()
            .map(|i| reference("stormlog.trace.kineto", &format!("{prefix}{i}")))
            .chain([
                reference("a", "z"),
                reference("stormlog.trace.kineto", prefix),
            ])
            .collect();
        let expected = std_sorted(refs.clone());
        sort_refs(&mut refs);
        assert_eq!(refs, expected);
    }

    #[test]
    fn lists_long_enough_to_sort_in_parallel() {
        // Producer `a` has two tie groups over the first digit, each past `PARALLEL`: the
        // parallel path runs at both depths. Repeats and a second producer too.
        let prefix = "kineto:rank0-dev0.pt.trace.json.gz:5161287fa4c2/";
        let n = 3 * PARALLEL as u32;
        let mut refs: Vec<EntityRef> = (0..n)
            .map(|i| {
                let id = format!("{prefix}{}{}{:07}", i % 2, "x".repeat(20), (i * 7919) % n);
                reference(if i % 5 == 0 { "b" } else { "a" }, &id)
            })
            .collect();
        refs.extend(refs[..50].to_vec());
        let in_a_tie_group = refs.iter().filter(|r| &*r.producer_id == "a").count() / 2;
        assert!(
            in_a_tie_group > PARALLEL,
            "{in_a_tie_group} keys per tie group"
        );
        let expected = std_sorted(refs.clone());
        sort_refs(&mut refs);
        assert_eq!(refs, expected);
    }

    #[test]
    fn prefixes_and_nul_bytes_sort_as_bytes() {
        let ids = [
            "ab",
            "ab\0",
            "a",
            "ab\0\0",
            "abcdefghijklmnopq",
            "abcdefghijklmnop",
            "",
        ];
        let mut refs: Vec<EntityRef> = ids.iter().map(|id| reference("p", id)).collect();
        let expected = std_sorted(refs.clone());
        sort_refs(&mut refs);
        assert_eq!(refs, expected);
    }

    #[test]
    fn many_producers_in_any_order() {
        let mut refs: Vec<EntityRef> = (0..3000u32)
            .map(|i| reference(&format!("p{}", (i * 7919) % 1000), &format!("id{}", i % 13)))
            .collect();
        let expected = std_sorted(refs.clone());
        sort_refs(&mut refs);
        assert_eq!(refs, expected);
    }

    proptest! {
        #[test]
        fn equals_the_standard_sort(
            refs in proptest::collection::vec(
                (
                    prop::sample::select(vec!["p", "q", "producer", "p\0"]),
                    // Few letters and long shared runs: many ties over sixteen bytes.
                    "(kineto:rank0-dev0.pt.trace.json/|x){0,3}[ab\u{0}é]{0,20}",
                ),
                0..200,
            )
        ) {
            let mut refs: Vec<EntityRef> =
                refs.iter().map(|(p, id)| reference(p, id)).collect();
            let expected = std_sorted(refs.clone());
            sort_refs(&mut refs);
            prop_assert_eq!(refs, expected);
        }
    }
}
