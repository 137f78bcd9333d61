//! `tally-stats`: the statistics behind a campaign's verdicts, and the verdict rules that use
//! them (`bootstrap`, `docs/campaign.md#bootstrap`; `min_speedup`, `docs/campaign.md#min-speedup`).
//!
//! Everything here is pure: no I/O, no clock, no global random state. A bound or a judgement is
//! a function of its inputs and an explicit seed, so a stored verdict can be replayed bit for bit.
//! The crate deliberately does not gather measurements, compute means over a store, or decide
//! which measurements belong to a case: the engine builds a [`VerdictCase`] and this crate
//! answers it.
//!
//! # The statistics
//!
//! - [`Samples`]: finite, non-empty values (the invariant lives in the type), with
//!   [`Samples::mean`] and the sample standard deviation [`Samples::sd`] (divisor `n − 1`).
//! - [`Bootstrap::lower_bound`]: the percentile-bootstrap lower bound `LB(d)` on the **sum** of
//!   the values: `resamples` resamples of `n` draws with replacement, each summed, and the sum at
//!   index `⌊(1 − confidence) · resamples⌋` of the sorted sums. The index is computed exactly
//!   from the decimal spelling of the confidence ([`Confidence::tail_index`]), never with a
//!   floating-point product.
//! - [`student_t_lower_bound`]: the one-sided Student-t bound on the mean,
//!   `mean − t(confidence, n − 1) · sd / √n`.
//! - [`far_sample`]: in a paired comparison, the sample farthest from its side's median in robust
//!   scales computed without it, when it is far (more than [`FAR_SCALES`] scales and
//!   [`FAR_RELATIVE`] of the median): a throttled or disturbed sample.
//!
//! # The rules
//!
//! [`BootstrapRule::decide`] judges a [`VerdictCase`] as a fixed design. Told how its pairs are
//! measured ([`Sampling`]), [`BootstrapRule::rule`] walks them as a sequential design: the first
//! `repeats` pairs at a share of the error, far samples set aside and their pairs re-measured, a
//! second look at the rest of the error when the first is inconclusive but promising; it answers
//! a [`Ruling`], a judgement or a request for [`MoreSamples`], bounded by `max_extra_pairs`
//! (`docs/verdicts.md#more-pairs`). [`MinSpeedupRule`] wraps either.
//!
//! ## Assumptions
//!
//! The bootstrap assumes the values are independent draws from one distribution; with very few
//! values (three pairs is typical of a GPU benchmark) it is anti-conservative, because it never
//! imagines a value outside the ones it saw. The Student-t bound assumes the values are roughly
//! normal; it is exact for normal noise and conservative for symmetric heavy tails. The pairs
//! path of the verdict takes the smaller of the two, so it inherits the better-behaved one in
//! each regime (see `docs/verdicts.md` for the measured error rates).
//!
//! ## Cost
//!
//! One bootstrap bound costs `resamples · n` index draws and additions plus a selection of the
//! `resamples` sums: O(resamples · n) time and O(resamples) memory. 1,000 values × 10,000
//! resamples (ten million draws) take about 11 ms on one core, three pairs about 0.08 ms
//! (`docs/verdicts.md`); problems of 2¹⁷ draws or more run on rayon's pool, with identical
//! results (see below). The Student-t bound costs O(n) plus one
//! quantile of the t distribution.
//!
//! ## Determinism
//!
//! The generator is `Xoshiro256PlusPlus` seeded with `seed_from_u64(seed)`. The resamples are
//! cut into chunks of [`CHUNK_RESAMPLES`]; chunk `i` uses the generator after `i` calls of
//! `jump()` (streams 2¹²⁸ draws apart), and the chunks' sums are concatenated in chunk order.
//! Index draws use an exact rejection method on `next_u64` written here, so no feature flag or
//! release of `rand` changes the stream. The bootstrap uses only IEEE additions and comparisons,
//! so it is bit-identical on every machine and thread count. The Student-t quantile goes through
//! `statrs` (logarithms and powers from the platform's maths library) and is reproducible on one
//! platform; across platforms it can differ in the last bits, which matters only for a bound
//! that is exactly at zero.

mod bootstrap;
mod confidence;
mod samples;
mod screen;
mod sum;
mod verdict;

pub use bootstrap::{Bootstrap, CHUNK_RESAMPLES, Execution};
pub use confidence::Confidence;
pub use samples::{Samples, pairs_to_show, student_t_lower_bound};
pub use screen::{FAR_RELATIVE, FAR_SCALES, FarSample, PairSide, far_sample};
pub use sum::{fmean, fsum};
pub use verdict::case::{Criterion, Guardrail, Judgement, Side, VerdictCase};
pub use verdict::compare::{
    Comparison, Evidence, compare_metric, compare_metric_over, format_sig4, format_signed,
};
pub use verdict::looks::{FIRST_LOOK_TENTHS, PROMISING_TENTHS};
pub use verdict::min_speedup::MinSpeedupRule;
pub use verdict::rule::{Assessment, BootstrapRule, DEFAULT_MAX_EXTRA_PAIRS, Step};
pub use verdict::ruling::{MoreSamples, Ruling, Sampling, SetAside};

/// What can go wrong when building statistics inputs or rule parameters.
///
/// Deciding a case never fails; only constructing invalid inputs does.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StatsError {
    /// [`Samples::new`] got no values.
    #[error("no values to summarise: pass at least one finite value")]
    NoValues,
    /// [`Samples::new`] got a NaN or an infinity.
    #[error("value #{index} is {value}, not a finite number: drop it before building samples")]
    NonFinite {
        /// Position of the offending value.
        index: usize,
        /// The offending value.
        value: f64,
    },
    /// A confidence outside (0.5, 1).
    #[error("confidence = {0}: expected a number strictly between 0.5 and 1, such as 0.95")]
    Confidence(f64),
    /// `resamples = 0`.
    #[error("resamples = 0: expected at least 1, such as 10000")]
    Resamples,
    /// A `min_speedup` that is negative or not finite.
    #[error("min_speedup = {0}: expected a fraction of at least 0, such as 0.05 for 5%")]
    MinSpeedup(f64),
}
