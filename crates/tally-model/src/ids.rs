//! Identifiers and instants: the id newtypes of the campaign half and [`UnixMillis`].
//!
//! Ids are small integers handed out by the store (never by callers): campaigns, evaluations,
//! measurements and config texts count from 1 across a store; candidates count from 0 *within
//! their campaign*, so the baseline measured at `init` is `candidate#0` and the n-th proposal is
//! `candidate#n`. This module does not decide how ids are allocated; see `tally-store`.

use std::fmt;
use std::str::FromStr;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::error::ModelError;

macro_rules! store_id {
    ($(#[$doc:meta])* $name:ident, $inner:ty, $label:literal) => {
        $(#[$doc])*
        #[derive(
            Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
        )]
        #[serde(transparent)]
        pub struct $name(pub $inner);

        impl $name {
            /// The raw number.
            pub fn get(self) -> $inner {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($label, "#{}"), self.0)
            }
        }
    };
}

store_id!(
    /// A campaign in a store (`campaign#1`); the campaign's name is its user-facing handle.
    CampaignId,
    u64,
    "campaign"
);
store_id!(
    /// A candidate *within its campaign* (`candidate#0` is the baseline). Parses from
    /// `candidate#3`, `#3` or `3`.
    CandidateId,
    u32,
    "candidate"
);
store_id!(
    /// One measurement (sample) in a store (`measurement#17`).
    MeasurementId,
    u64,
    "measurement"
);
store_id!(
    /// One evaluation job in a store (`evaluation#4`).
    EvaluationId,
    u64,
    "evaluation"
);
store_id!(
    /// A stored, deduplicated `tally.toml` text (`config#2`).
    ConfigTextId,
    u64,
    "config"
);

impl FromStr for CandidateId {
    type Err = ModelError;

    /// Accepts `candidate#3`, `#3` and `3`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let digits = s
            .trim()
            .strip_prefix("candidate#")
            .or_else(|| s.trim().strip_prefix('#'))
            .unwrap_or(s.trim());
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(ModelError::BadCandidateId(s.to_owned()));
        }
        digits
            .parse::<u32>()
            .map(CandidateId)
            .map_err(|_| ModelError::BadCandidateId(s.to_owned()))
    }
}

/// A wall-clock instant: integer milliseconds since the Unix epoch, UTC. Serialises as the bare
/// integer. Callers pass instants into the store explicitly (the store never reads the clock),
/// so tests are deterministic.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct UnixMillis(pub i64);

impl UnixMillis {
    /// The current wall-clock time (before 1970 reads as 0).
    pub fn now() -> Self {
        let ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
            .unwrap_or(0);
        Self(ms)
    }

    /// Milliseconds from `self` to `later` (negative when `later` is earlier).
    pub fn millis_until(self, later: UnixMillis) -> i64 {
        later.0.saturating_sub(self.0)
    }

    /// Hours from `self` to `later`, as the `hours` fact and `max_hours` read them.
    pub fn hours_until(self, later: UnixMillis) -> f64 {
        self.millis_until(later) as f64 / 3_600_000.0
    }
}

impl fmt::Display for UnixMillis {
    /// The raw integer; pretty printing (time zones, spans) is the CLI's business.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Converts a duration in seconds (a report file's `seconds`) to whole nanoseconds, rounding to
/// nearest. `None` for a negative, non-finite or absurd (over 292 years) value.
pub fn nanos_from_seconds(seconds: f64) -> Option<u64> {
    if !seconds.is_finite() || seconds < 0.0 {
        return None;
    }
    let ns = (seconds * 1e9).round();
    // i64::MAX as f64 rounds up to 2^63, so `<` keeps the result representable as BIGINT.
    (ns < i64::MAX as f64).then_some(ns as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidate_ids_parse_in_three_spellings_and_display_with_the_prefix() {
        assert_eq!(
            "candidate#3".parse::<CandidateId>().unwrap(),
            CandidateId(3)
        );
        assert_eq!("#12".parse::<CandidateId>().unwrap(), CandidateId(12));
        assert_eq!(" 0 ".parse::<CandidateId>().unwrap(), CandidateId(0));
        assert!("candidate#".parse::<CandidateId>().is_err());
        assert!("-1".parse::<CandidateId>().is_err());
        assert!("c3".parse::<CandidateId>().is_err());
        assert!("99999999999".parse::<CandidateId>().is_err());
        assert_eq!(CandidateId(7).to_string(), "candidate#7");
        assert_eq!(MeasurementId(9).to_string(), "measurement#9");
    }

    #[test]
    fn seconds_convert_to_rounded_nanoseconds() {
        assert_eq!(nanos_from_seconds(1.5), Some(1_500_000_000));
        assert_eq!(nanos_from_seconds(0.000_000_000_4), Some(0));
        assert_eq!(nanos_from_seconds(0.0), Some(0));
        assert_eq!(nanos_from_seconds(-0.1), None);
        assert_eq!(nanos_from_seconds(f64::NAN), None);
        assert_eq!(nanos_from_seconds(f64::INFINITY), None);
        assert_eq!(nanos_from_seconds(1e10), None);
    }

    #[test]
    fn hours_between_instants() {
        let a = UnixMillis(1_000);
        let b = UnixMillis(1_000 + 5_400_000);
        assert_eq!(a.millis_until(b), 5_400_000);
        assert_eq!(a.hours_until(b), 1.5);
        assert_eq!(b.millis_until(a), -5_400_000);
    }
}
