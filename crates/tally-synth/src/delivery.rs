//! Delivery faults: redelivered records and out-of-order delivery, applied to a record stream.
//!
//! **Duplicates.** Each record is redelivered with probability `duplicates`, between 1 and
//! [`MAX_REDELIVERY_DELAY`] records later. Half of the redeliveries of entity records (requests,
//! iterations, stages, memberships, activities, clock alignments) come under another `event_id`
//! — either the original id with a `#redelivered` suffix (the original stays the kept entry) or
//! with a `0-redelivered/` prefix (the copy sorts first and becomes the kept entry, exercising
//! the reference's smallest-`event_id` rule); every other redelivery is byte-identical.
//! Neither kind changes the reference's accounting.
//!
//! **Shuffle.** Records are shuffled within consecutive windows of `window` records (Fisher–
//! Yates with the scenario's delivery RNG). A window of at least the stream's length is a full
//! shuffle; it holds the whole run in memory, so use it only for moderate sizes. The default
//! window ([`DEFAULT_SHUFFLE_WINDOW`]) keeps memory bounded (about 64 Ki records) while still
//! moving records far from where a time-ordered writer would put them.
//!
//! Everything is deterministic in the two RNGs' seeds.

use std::collections::VecDeque;

use rand::RngExt;
use rand_xoshiro::Xoshiro256PlusPlus;
use tally_evidence::{CorrelationEvent, EventBody, InferenceRecord};

/// Longest delay, in records, between a record and its redelivery.
pub const MAX_REDELIVERY_DELAY: usize = 2048;

/// Default shuffle window, in records.
pub const DEFAULT_SHUFFLE_WINDOW: usize = 1 << 16;

/// Applies redelivery and windowed shuffling to a record stream.
pub struct Delivered<I> {
    inner: Option<I>,
    /// Draws redeliveries.
    rng: Xoshiro256PlusPlus,
    /// Draws the shuffle (separate, so shuffling never changes which records are redelivered).
    shuffle_rng: Xoshiro256PlusPlus,
    duplicates: f64,
    /// `delayed[k]` holds redeliveries due after `k` more input records.
    delayed: VecDeque<Vec<InferenceRecord>>,
    window: Option<usize>,
    ready: VecDeque<InferenceRecord>,
    buffer: Vec<InferenceRecord>,
}

impl<I: Iterator<Item = InferenceRecord>> Delivered<I> {
    /// Wraps `inner`. `duplicates` is the redelivery probability (0 ≤ p ≤ 1), drawn from `rng`;
    /// `window` is the shuffle window (`None`: keep order; `Some(0)` counts as a full shuffle),
    /// drawn from `shuffle_rng`.
    pub fn new(
        inner: I,
        rng: Xoshiro256PlusPlus,
        shuffle_rng: Xoshiro256PlusPlus,
        duplicates: f64,
        window: Option<usize>,
    ) -> Self {
        Self {
            inner: Some(inner),
            rng,
            shuffle_rng,
            duplicates,
            delayed: (0..=MAX_REDELIVERY_DELAY).map(|_| Vec::new()).collect(),
            window: window.map(|w| if w == 0 { usize::MAX } else { w }),
            ready: VecDeque::new(),
            buffer: Vec::new(),
        }
    }

    /// The next record after redelivery, before shuffling; `None` at the end.
    fn next_redelivered(&mut self) -> Option<InferenceRecord> {
        loop {
            if let Some(r) = self.ready.pop_front() {
                return Some(r);
            }
            let Some(inner) = self.inner.as_mut() else {
                // Drain what is still delayed.
                let bucket = self.delayed.iter_mut().find(|b| !b.is_empty())?;
                self.ready.extend(bucket.drain(..));
                continue;
            };
            match inner.next() {
                None => self.inner = None,
                Some(record) => {
                    let due = self.delayed.pop_front().unwrap_or_default();
                    self.delayed.push_back(Vec::new());
                    if self.duplicates > 0.0 && self.rng.random_bool(self.duplicates) {
                        let copy = redelivery(&record, &mut self.rng);
                        let delay = self.rng.random_range(0..MAX_REDELIVERY_DELAY);
                        self.delayed[delay].push(copy);
                    }
                    self.ready.push_back(record);
                    self.ready.extend(due);
                }
            }
        }
    }
}

impl<I: Iterator<Item = InferenceRecord>> Iterator for Delivered<I> {
    type Item = InferenceRecord;

    fn next(&mut self) -> Option<InferenceRecord> {
        let Some(window) = self.window else {
            return self.next_redelivered();
        };
        if self.buffer.is_empty() {
            while self.buffer.len() < window {
                match self.next_redelivered() {
                    Some(r) => self.buffer.push(r),
                    None => break,
                }
            }
            // Fisher–Yates; the buffer is then drained from its end.
            for k in (1..self.buffer.len()).rev() {
                let j = self.shuffle_rng.random_range(0..=k as u64) as usize;
                self.buffer.swap(k, j);
            }
        }
        self.buffer.pop()
    }
}

/// A redelivered copy of `record`: identical, or an entity under another `event_id`.
fn redelivery(record: &InferenceRecord, rng: &mut Xoshiro256PlusPlus) -> InferenceRecord {
    let InferenceRecord::Event(event) = record else {
        return record.clone();
    };
    let entity = !matches!(
        event.body(),
        EventBody::Artifact(_) | EventBody::Capabilities(_)
    );
    if !entity || rng.random_bool(0.5) {
        return record.clone();
    }
    let id = if rng.random_bool(0.5) {
        format!("{}#redelivered", event.event_id())
    } else {
        format!("0-redelivered/{}", event.event_id())
    };
    let (context, _, metadata, body) = event.clone().into_parts();
    InferenceRecord::Event(CorrelationEvent::new(context, id.into(), metadata, body))
}
