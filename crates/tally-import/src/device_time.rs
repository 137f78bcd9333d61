//! Busy time as an interval union, kept in memory proportional to the *disjoint* busy intervals.
//!
//! The import summary reports, per device, the union (busy), the sum (summed) and the count of the
//! GPU intervals it emitted. Events arrive in file order, not time order, so the union cannot be
//! swept on the fly; instead [`IntervalUnion`] appends and, whenever the buffer doubles, sorts and
//! merges it in place. Its memory is therefore at most twice the number of disjoint busy
//! intervals seen so far (touching or overlapping intervals merge), never the number of events.
//! This module is pure: no I/O, no evidence types.

use tally_evidence::Nanos;

/// A growing set of half-open intervals `[start, end)` whose union length is asked at the end.
#[derive(Clone, Debug, Default)]
pub struct IntervalUnion {
    spans: Vec<(Nanos, Nanos)>,
    merged_len: usize,
}

impl IntervalUnion {
    /// Adds `[start, end)`; an empty or inverted interval adds nothing to the union.
    pub fn push(&mut self, start: Nanos, end: Nanos) {
        if end <= start {
            return;
        }
        self.spans.push((start, end));
        if self.spans.len() >= 1024 && self.spans.len() >= 2 * self.merged_len {
            self.compact();
        }
    }

    /// Sorts and merges the buffer in place (touching intervals join).
    fn compact(&mut self) {
        self.spans.sort_unstable();
        let mut write = 0usize;
        for read in 0..self.spans.len() {
            let (start, end) = self.spans[read];
            if write > 0 && start <= self.spans[write - 1].1 {
                let last = &mut self.spans[write - 1];
                last.1 = last.1.max(end);
            } else {
                self.spans[write] = (start, end);
                write += 1;
            }
        }
        self.spans.truncate(write);
        self.merged_len = write;
    }

    /// The length of the union.
    pub fn busy(&mut self) -> Nanos {
        self.compact();
        self.spans.iter().map(|(s, e)| e - s).sum()
    }
}

/// Busy, summed and count of one group of GPU intervals.
#[derive(Clone, Debug, Default)]
pub struct DeviceTime {
    union: IntervalUnion,
    summed: Nanos,
    count: u64,
}

impl DeviceTime {
    /// Counts one activity whose busy intervals are `intervals`.
    pub fn add(&mut self, intervals: &[(Nanos, Nanos)]) {
        self.count += 1;
        for &(start, end) in intervals {
            self.summed += end - start;
            self.union.push(start, end);
        }
    }
    /// Union length of everything added.
    pub fn busy_ns(&mut self) -> Nanos {
        self.union.busy()
    }
    /// Sum of interval lengths.
    pub fn summed_ns(&self) -> Nanos {
        self.summed
    }
    /// Number of activities added.
    pub fn count(&self) -> u64 {
        self.count
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn union_merges_touching_and_overlapping() {
        let mut u = IntervalUnion::default();
        for (s, e) in [(10, 20), (0, 5), (5, 8), (15, 30), (40, 40), (50, 60)] {
            u.push(s, e);
        }
        assert_eq!(u.busy(), 8 + 20 + 10);
    }

    #[test]
    fn compaction_keeps_the_exact_union() {
        let mut u = IntervalUnion::default();
        let mut expected = 0;
        for i in 0..10_000i64 {
            // Pairs that overlap, out of order.
            let base = (9_999 - i) * 100;
            u.push(base, base + 30);
            u.push(base + 20, base + 50);
            expected += 50;
        }
        assert_eq!(u.busy(), expected);
        assert!(u.spans.len() <= 10_000);
    }
}
