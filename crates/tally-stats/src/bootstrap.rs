//! The seeded percentile bootstrap: `LB(d)`, the lower bound on the sum of `d`
//! (`docs/campaign.md#bootstrap`), computed the same way on one thread or many.
//!
//! Layout of the work, which is part of the replay contract: the `resamples` resamples are cut
//! into chunks of [`CHUNK_RESAMPLES`] (the last one shorter); chunk `i` draws from
//! `Xoshiro256PlusPlus::seed_from_u64(seed)` advanced by `i` calls of `jump()`; each resample is
//! `n` index draws, added left to right; the chunks' sums are laid out in chunk order and the
//! bound is the sum of rank `⌊(1 − confidence) · resamples⌋` (0-based, ascending, by
//! `f64::total_cmp`). Serial and parallel execution fill the same slots from the same streams, so
//! they agree bit for bit. This module does not know about pairs, units or verdicts.

use std::num::NonZeroU32;

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;

use crate::{Confidence, Samples};

/// Resamples per chunk: each chunk has its own generator stream.
pub const CHUNK_RESAMPLES: usize = 256;

/// Below this many index draws (`n · resamples`) [`Execution::Auto`] stays on the calling
/// thread: spreading the work would cost more than it saves.
const PARALLEL_DRAWS: usize = 1 << 17;

/// Where the chunks run. The result does not depend on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Execution {
    /// Serial for small problems, rayon's pool for large ones.
    #[default]
    Auto,
    /// Every chunk on the calling thread, in order.
    Serial,
    /// Chunks spread over rayon's pool.
    Parallel,
}

/// Parameters of a percentile bootstrap: confidence, number of resamples, seed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bootstrap {
    /// The one-sided confidence of the bound.
    pub confidence: Confidence,
    /// How many resamples to draw.
    pub resamples: NonZeroU32,
    /// Seed of the generator.
    pub seed: u64,
}

impl Default for Bootstrap {
    /// 0.95, 10,000 resamples, seed 0: the `bootstrap` rule's defaults.
    fn default() -> Self {
        Self {
            confidence: Confidence::default(),
            resamples: NonZeroU32::new(10_000).unwrap_or(NonZeroU32::MIN),
            seed: 0,
        }
    }
}

impl Bootstrap {
    /// `LB(d)`: the resample sum of `d` at 0-based index `⌊(1 − confidence) · resamples⌋` in
    /// ascending order.
    ///
    /// A lower bound on `Σ d` at the given confidence. Lies between `n · min(d)` and
    /// `n · max(d)`; a single value `v` gives exactly `v`.
    pub fn lower_bound(&self, d: &Samples) -> f64 {
        self.lower_bound_with(d, Execution::Auto)
    }

    /// [`Bootstrap::lower_bound`], choosing where the chunks run.
    pub fn lower_bound_with(&self, d: &Samples, execution: Execution) -> f64 {
        let mut sums = self.resample_sums(d, execution);
        let index = self.confidence.tail_index(self.resamples.get());
        let (_, bound, _) = sums.select_nth_unstable_by(index, f64::total_cmp);
        *bound
    }

    /// Every resample's sum, in chunk order (unsorted).
    pub fn resample_sums(&self, d: &Samples, execution: Execution) -> Vec<f64> {
        let resamples = self.resamples.get() as usize;
        let values = d.values();
        let mut sums = vec![0.0; resamples];
        let streams = chunk_streams(self.seed, resamples.div_ceil(CHUNK_RESAMPLES));
        let parallel = match execution {
            Execution::Auto => values.len().saturating_mul(resamples) >= PARALLEL_DRAWS,
            Execution::Serial => false,
            Execution::Parallel => true,
        };
        if parallel {
            sums.par_chunks_mut(CHUNK_RESAMPLES)
                .zip(streams)
                .for_each(|(chunk, mut rng)| fill_chunk(chunk, values, &mut rng));
        } else {
            for (chunk, mut rng) in sums.chunks_mut(CHUNK_RESAMPLES).zip(streams) {
                fill_chunk(chunk, values, &mut rng);
            }
        }
        sums
    }
}

/// One generator per chunk: the seeded generator, then each next one `jump()`ed once more.
fn chunk_streams(seed: u64, chunks: usize) -> Vec<Xoshiro256PlusPlus> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut streams = Vec::with_capacity(chunks);
    for _ in 0..chunks {
        streams.push(rng.clone());
        rng.jump();
    }
    streams
}

/// Fills `sums` with one resample sum each.
fn fill_chunk(sums: &mut [f64], values: &[f64], rng: &mut Xoshiro256PlusPlus) {
    let n = values.len() as u64;
    for slot in sums {
        let mut sum = 0.0;
        for _ in 0..n {
            sum += values[draw_index(rng, n)];
        }
        *slot = sum;
    }
}

/// A uniform index in `0..n`, exactly (Lemire's multiply-and-reject on 64 bits).
///
/// Written here rather than taken from `rand`'s `random_range` so that the stream of indices
/// depends only on the generator: `rand`'s integer sampling changes with its `unbiased` feature,
/// which any crate in a build may switch on.
fn draw_index(rng: &mut Xoshiro256PlusPlus, n: u64) -> usize {
    let mut product = u128::from(rng.next_u64()) * u128::from(n);
    if (product as u64) < n {
        let threshold = n.wrapping_neg() % n;
        while (product as u64) < threshold {
            product = u128::from(rng.next_u64()) * u128::from(n);
        }
    }
    (product >> 64) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draw_index_is_uniform_enough_and_in_range() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        let mut counts = [0u32; 3];
        for _ in 0..30_000 {
            counts[draw_index(&mut rng, 3)] += 1;
        }
        for count in counts {
            assert!((9_500..10_500).contains(&count), "{counts:?}");
        }
    }

    #[test]
    fn draw_index_uses_the_high_bits_of_next_u64() {
        // Pins the index stream: a change of method would change every stored verdict.
        let mut reference = Xoshiro256PlusPlus::seed_from_u64(0);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(0);
        for _ in 0..100 {
            let expected = ((u128::from(reference.next_u64()) * 10) >> 64) as usize;
            assert_eq!(draw_index(&mut rng, 10), expected);
        }
    }

    #[test]
    fn chunk_streams_start_at_the_seed_and_differ() {
        let streams = chunk_streams(42, 3);
        assert_eq!(streams[0], Xoshiro256PlusPlus::seed_from_u64(42));
        let mut second = Xoshiro256PlusPlus::seed_from_u64(42);
        second.jump();
        assert_eq!(streams[1], second);
        assert_ne!(streams[1], streams[2]);
    }
}
