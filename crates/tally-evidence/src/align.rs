//! Clock alignment: moving a timestamp from one clock domain to another (`docs/evidence.md#alignment`).
//!
//! An alignment record says "add `offset_ns` (± `uncertainty_ns`) to a `from` timestamp in
//! `[valid_from_ns, valid_to_ns)` to get a `to` timestamp". [`covering_alignments`] finds the
//! records for a pair of domains that cover a timestamp (exact domain names: no inversion, no
//! chaining); [`alignment_offset_bounds`] gives the interval the true offset lies in, including
//! the legacy `stormlog.infer.import_execution` rule; [`align_timestamp`] demands exactly one
//! covering record and returns the midpoint of the bounds with its half-width.
//!
//! Arithmetic is done in `i128`; a result outside `i64` is [`Error::OutOfRange`], never a wrap.
//! Refusals carry the reference's wording as [`Error::Refused`]. Pure functions, no I/O.

use serde_json::Value;

use crate::error::{Error, Origin, Result};
use crate::model::{ClockAlignmentEvent, Nanos, Text};
use crate::resolve::ResolvedEvent;

/// The `source` of contexts written by stormlog's legacy execution-log import.
pub const LEGACY_EXECUTION_IMPORT_SOURCE: &str = "stormlog.infer.import_execution";

/// The refusal when not exactly one alignment covers a timestamp.
pub const NO_UNIQUE_ALIGNMENT: &str = "no valid clock alignment or multiple ambiguous alignments";

/// A timestamp moved into another clock domain.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AlignedTimestamp {
    /// The aligned value (may be negative).
    pub value_ns: Nanos,
    /// The true value lies within ± this.
    pub uncertainty_ns: Nanos,
    /// The target domain.
    pub clock_domain: Text,
}

/// The alignments from `from` to `to` whose window covers `ts` (`valid_from_ns ≤ ts <
/// valid_to_ns`, a null side open), in input order (pass
/// [`CorrelationGraph::alignments`](crate::CorrelationGraph::alignments) for the reference's).
pub fn covering_alignments<'a>(
    ts: Nanos,
    from: &str,
    to: &str,
    alignments: impl IntoIterator<Item = &'a ResolvedEvent<ClockAlignmentEvent>>,
) -> Vec<&'a ResolvedEvent<ClockAlignmentEvent>> {
    alignments
        .into_iter()
        .filter(|a| {
            let b = a.body();
            *b.from_clock_domain == *from
                && *b.to_clock_domain == *to
                && b.valid_from_ns.is_none_or(|v| v <= ts)
                && b.valid_to_ns.is_none_or(|v| ts < v)
        })
        .collect()
}

/// The interval `(low, high)` the true offset lies in: `(offset − uncertainty, offset +
/// uncertainty)`, except for a legacy execution import — context `source` exactly
/// [`LEGACY_EXECUTION_IMPORT_SOURCE`], no `alignment_basis` key in `metadata`, and
/// `metadata.gap_ns` a non-negative JSON integer — where it is `(offset, offset + gap_ns)` and
/// the uncertainty is ignored.
///
/// A `gap_ns` beyond `u64` (which the JSON layer holds as a float) or written `-0` does not
/// trigger the legacy rule here, whereas Python would treat both as integers; stormlog never
/// writes either.
pub fn alignment_offset_bounds(alignment: &ResolvedEvent<ClockAlignmentEvent>) -> (i128, i128) {
    let offset = i128::from(alignment.body().offset_ns);
    if *alignment.context().source == *LEGACY_EXECUTION_IMPORT_SOURCE
        && !alignment.metadata().is_empty()
    {
        let metadata = alignment.metadata().to_map();
        if !metadata.contains_key("alignment_basis")
            && let Some(Value::Number(gap)) = metadata.get("gap_ns")
            && let Some(gap) = gap.as_u64()
        {
            return (offset, offset + i128::from(gap));
        }
    }
    let uncertainty = i128::from(alignment.body().uncertainty_ns);
    (offset - uncertainty, offset + uncertainty)
}

/// Moves `ts` from `from` to `to` (`docs/evidence.md#align-timestamp`).
///
/// Refusals: `timestamp_ns must be non-negative`; [`NO_UNIQUE_ALIGNMENT`] when zero or several
/// alignments cover `ts` (see [`covering_alignments`] to tell which). Equal domain names need no
/// alignment: `(ts, 0, to)`. Otherwise, with `(low, high)` from [`alignment_offset_bounds`],
/// `half = ⌊(high − low + 1) / 2⌋` and the result is `ts + high − half` ± `half`.
pub fn align_timestamp<'a>(
    ts: Nanos,
    from: &str,
    to: &str,
    alignments: impl IntoIterator<Item = &'a ResolvedEvent<ClockAlignmentEvent>>,
) -> Result<AlignedTimestamp> {
    if ts < 0 {
        return Err(Error::refused("timestamp_ns must be non-negative"));
    }
    if from == to {
        return Ok(AlignedTimestamp {
            value_ns: ts,
            uncertainty_ns: 0,
            clock_domain: to.into(),
        });
    }
    let covering = covering_alignments(ts, from, to, alignments);
    let [alignment] = covering.as_slice() else {
        return Err(Error::refused(NO_UNIQUE_ALIGNMENT));
    };
    let (low, high) = alignment_offset_bounds(alignment);
    let half = (high - low + 1).div_euclid(2);
    let value = i128::from(ts) + high - half;
    let out_of_range = |what: &str, v: i128| Error::OutOfRange {
        origin: Origin::default(),
        message: format!("aligned {what} {v} does not fit 64-bit nanoseconds"),
    };
    Ok(AlignedTimestamp {
        value_ns: Nanos::try_from(value).map_err(|_| out_of_range("timestamp", value))?,
        uncertainty_ns: Nanos::try_from(half).map_err(|_| out_of_range("uncertainty", half))?,
        clock_domain: alignment.body().to_clock_domain.clone(),
    })
}
