//! Half-open nanosecond intervals and their union: the "busy time" sweep of `docs/evidence.md#accounting`.
//!
//! An [`Interval`] is `[start, end)` with `start ≤ end` (held by the type). The union of a set of
//! intervals is computed by sorting on the start and sweeping once: an interval that overlaps or
//! touches the current run extends it, any other starts a new run. Zero-length intervals cover no
//! point, so they add nothing to a union's length and never appear in a union's runs.
//!
//! Lengths are `u64`: an interval inside `i64` is at most `2⁶⁴ − 1` long, and so is a union of
//! disjoint intervals, so [`union_length`] cannot overflow. Summing the lengths of *overlapping*
//! intervals can, which is why the accountant sums with checked arithmetic.
//!
//! This module owns only the arithmetic: which intervals belong together (a device, an
//! iteration) is [`crate::account`]'s business. No I/O, no allocation beyond the returned lists.

use crate::model::Nanos;

/// A half-open interval `[start, end)` of nanoseconds with `start ≤ end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Interval {
    start: Nanos,
    end: Nanos,
}

impl Interval {
    /// `[start, end)`, or `None` when `end < start`.
    pub fn new(start: Nanos, end: Nanos) -> Option<Self> {
        (start <= end).then_some(Self { start, end })
    }

    /// The first nanosecond covered (when not empty).
    pub fn start(self) -> Nanos {
        self.start
    }

    /// The first nanosecond after the interval.
    pub fn end(self) -> Nanos {
        self.end
    }

    /// `end − start`, exact for every interval inside `i64`.
    pub fn len(self) -> u64 {
        self.end.abs_diff(self.start)
    }

    /// Whether the interval covers nothing (`start == end`).
    pub fn is_empty(self) -> bool {
        self.start == self.end
    }
}

/// Accumulates the union of intervals fed in ascending order of `start` (ties in any order).
///
/// This is the sweep itself, for callers that already hold sorted intervals (the accountant sorts
/// one flat list per group kind and sweeps each group's run of it).
#[derive(Clone, Debug, Default)]
pub struct UnionSweep {
    current: Option<Interval>,
    covered: u64,
}

impl UnionSweep {
    /// An empty sweep.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the next interval; `interval.start()` must be ≥ every earlier start. Returns the run
    /// that this interval closed, if it started a new one (empty runs are never returned).
    pub fn push(&mut self, interval: Interval) -> Option<Interval> {
        if interval.is_empty() {
            return None;
        }
        match &mut self.current {
            Some(run) if interval.start <= run.end => {
                debug_assert!(interval.start >= run.start, "sweep input must be sorted");
                run.end = run.end.max(interval.end);
                None
            }
            slot => {
                let closed = slot.replace(interval);
                if let Some(run) = closed {
                    self.covered += run.len();
                }
                closed
            }
        }
    }

    /// The total covered length, closing the last run.
    pub fn covered(&self) -> u64 {
        self.covered + self.current.map_or(0, Interval::len)
    }

    /// Closes the sweep, returning the last run (if any) and the covered length.
    pub fn finish(self) -> (Option<Interval>, u64) {
        let covered = self.covered();
        (self.current, covered)
    }
}

/// The length of the union of `intervals` (sorted in place by start first).
pub fn union_length(intervals: &mut [Interval]) -> u64 {
    intervals.sort_unstable_by_key(|i| i.start);
    let mut sweep = UnionSweep::new();
    for &interval in intervals.iter() {
        sweep.push(interval);
    }
    sweep.covered()
}

/// The union of `intervals` as maximal disjoint, non-touching, non-empty runs in ascending order
/// (`intervals` is sorted in place by start first).
pub fn union(intervals: &mut [Interval]) -> Vec<Interval> {
    intervals.sort_unstable_by_key(|i| i.start);
    let mut runs = Vec::new();
    let mut sweep = UnionSweep::new();
    for &interval in intervals.iter() {
        runs.extend(sweep.push(interval));
    }
    runs.extend(sweep.finish().0);
    runs
}

/// Merges two unions (each sorted, disjoint and non-touching, as [`union`] returns them) into
/// the union of both, in one linear pass.
pub fn merge_unions(a: &[Interval], b: &[Interval]) -> Vec<Interval> {
    let mut runs = Vec::with_capacity(a.len() + b.len());
    let mut sweep = UnionSweep::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        let next = if j == b.len() || (i < a.len() && a[i].start <= b[j].start) {
            i += 1;
            a[i - 1]
        } else {
            j += 1;
            b[j - 1]
        };
        runs.extend(sweep.push(next));
    }
    runs.extend(sweep.finish().0);
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iv(start: Nanos, end: Nanos) -> Interval {
        Interval::new(start, end).unwrap()
    }

    #[test]
    fn touching_and_overlapping_merge_and_empty_adds_nothing() {
        // Case 05 of `docs/evidence.md#conformance-cases`: [100,130) [150,200) [120,160) [300,300) [400,410) [410,420).
        let mut list = vec![
            iv(100, 130),
            iv(150, 200),
            iv(120, 160),
            iv(300, 300),
            iv(400, 410),
            iv(410, 420),
        ];
        assert_eq!(union_length(&mut list), 120);
        assert_eq!(union(&mut list), vec![iv(100, 200), iv(400, 420)]);
        assert_eq!(Interval::new(2, 1), None);
        assert_eq!(iv(i64::MIN, i64::MAX).len(), u64::MAX);
    }

    #[test]
    fn merge_of_two_unions() {
        let a = [iv(0, 5), iv(10, 12)];
        let b = [iv(5, 7), iv(20, 30)];
        assert_eq!(merge_unions(&a, &b), vec![iv(0, 7), iv(10, 12), iv(20, 30)]);
        assert_eq!(merge_unions(&[], &b), b.to_vec());
    }
}
