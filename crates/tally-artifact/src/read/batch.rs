//! One batch of whole lines to records, in three phases: decode every line in parallel (rayon),
//! resolve v4 context ids sequentially in file order, then assemble the resolved compact records
//! in parallel. Compact records whose ids were defined before the batch are finished in the
//! first phase (against the registry as it stood), so the last two phases see only the
//! definitions and the records that name an id defined within the batch. The first failing line
//! in file order wins, whether it failed to decode or to resolve, exactly as a sequential reader
//! would report it.
//!
//! This module owns no I/O and no thread pool: it runs on whatever rayon pool calls it, and the
//! caller (`drive`) decides where batches come from and where records go.

use rayon::prelude::*;

use tally_evidence::model::InferenceRecord;
use tally_evidence::resolve::Hashes;

use super::context::CorrelationRecordDecoder;
use super::decode::{Decoded, decode_line};
use super::fields::Fault;
use super::lines::{LineSpan, split_lines};

/// Lines decoded per rayon task at least: enough to amortise the task, few enough to balance.
const MIN_LINES_PER_TASK: usize = 64;

/// Where a batch sits in its input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Position {
    /// Physical line number of the batch's first line (1-based).
    pub line: u64,
    /// Byte offset of the batch's first byte.
    pub offset: u64,
}

/// The decoded lines of one batch, in file order, up to the failure that ended it, if any.
#[derive(Debug)]
pub(crate) struct BatchRecords {
    /// One item per physical line from the batch's first line, up to the failure: records,
    /// and blank items for blank lines and definitions. Nothing is moved between the phases.
    items: Items,
    first_line: u64,
    /// The first failing line and why; no line after it was looked at.
    pub failure: Option<(u64, Fault)>,
    /// Physical lines in the batch.
    pub line_count: u64,
}

/// The item buffers of a batch, kept for the next batch once delivered: a batch's items fill
/// megabytes, and fresh memory for each batch would be page-faulted in every time.
#[derive(Debug, Default)]
pub(crate) struct Items {
    decoded: Vec<Result<Decoded, Fault>>,
    /// Per item, when asked for: the resolver's hashes of its event, computed on the parse
    /// thread while the event's texts are in that core's cache (`None` for anything else).
    hashes: Vec<Option<Hashes>>,
}

impl Items {
    /// Empty buffers.
    pub(crate) fn new() -> Self {
        Self::default()
    }
}

impl BatchRecords {
    /// `(line, record)` for every record before the failure, in file order, taken out of the
    /// batch (whose buffer [`into_items`](Self::into_items) then gives back, empty).
    pub(crate) fn drain_records(&mut self) -> impl Iterator<Item = (u64, InferenceRecord)> + '_ {
        (self.first_line..)
            .zip(self.items.decoded.drain(..))
            .filter_map(|(line, item)| Some((line, item.ok()?.finish()?)))
    }

    /// The items (up to the failure) taken out in file order, with their hashes.
    pub(crate) fn drain_items(&mut self) -> Drained<'_> {
        let Items { decoded, hashes } = &mut self.items;
        Drained {
            first_line: self.first_line,
            items: decoded.drain(..),
            hashes,
        }
    }

    /// The batch's item buffers, emptied, for reuse.
    pub(crate) fn into_items(mut self) -> Items {
        self.items.decoded.clear();
        self.items.hashes.clear();
        self.items
    }
}

/// A batch's items being taken out: see [`BatchRecords::drain_items`].
pub(crate) struct Drained<'a> {
    /// The line of the first item.
    pub first_line: u64,
    /// The items in file order; what the drain has not yet given is its `as_slice`.
    pub items: std::vec::Drain<'a, Result<Decoded, Fault>>,
    /// The items' hashes by position (empty unless the batch was decoded with them).
    pub hashes: &'a [Option<Hashes>],
}

/// The resolver's hashes of a decoded event.
fn hashes_of(item: &Result<Decoded, Fault>) -> Option<Hashes> {
    match item {
        Ok(Decoded::Record(InferenceRecord::Event(event))) => Some(Hashes::of(event)),
        _ => None,
    }
}

thread_local! {
    /// The line spans of the batch being decoded on this thread (reused from batch to batch).
    static SPANS: std::cell::Cell<Vec<LineSpan>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Decodes one batch of whole lines (`bytes` never ends inside a line, except at the end of the
/// input) starting at `at`.
/// `buffers` are empty buffers to fill (their capacity is reused). With `hashed`, each event's
/// resolver hashes are computed too (see [`BatchRecords::drain_items`]).
pub(crate) fn decode_batch(
    bytes: &[u8],
    at: Position,
    decoder: &mut CorrelationRecordDecoder,
    buffers: Items,
    hashed: bool,
) -> BatchRecords {
    let Items {
        decoded: mut items,
        mut hashes,
    } = buffers;
    let mut spans = SPANS.take();
    spans.clear();
    split_lines(bytes, &mut spans);
    let line_count = spans.len() as u64;
    // The definitions before this batch, read-only while its lines decode in parallel: most
    // compact records are finished right there.
    let known = (!decoder.registry().is_empty()).then(|| decoder.registry());
    let lines = spans.par_iter().with_min_len(MIN_LINES_PER_TASK);
    let decode =
        |s: &LineSpan| decode_line(&bytes[s.start..s.end], at.offset + s.start as u64, known);
    if hashed {
        lines
            .map(|s| {
                let item = decode(s);
                let hashes = hashes_of(&item);
                (item, hashes)
            })
            .unzip_into_vecs(&mut items, &mut hashes);
    } else {
        lines.map(decode).collect_into_vec(&mut items);
    }
    SPANS.set(spans);

    // Definitions and context ids, in file order; the first failure ends the batch.
    let mut failure = None;
    let mut resolved_any = false;
    for (i, item) in items.iter_mut().enumerate() {
        let outcome = match item {
            Err(_) => Err(()),
            Ok(Decoded::Blank | Decoded::Record(_)) => Ok(()),
            Ok(decoded) => {
                resolved_any = true;
                decoder.resolve(decoded).map_err(|fault| *item = Err(fault))
            }
        };
        if outcome.is_err() {
            let Some(Err(fault)) = items.drain(i..).next() else {
                unreachable!("the failing item is an error")
            };
            hashes.truncate(i);
            failure = Some((at.line + i as u64, fault));
            break;
        }
    }

    if resolved_any {
        let finish = |item: &mut Result<Decoded, Fault>| {
            if let Ok(decoded) = item {
                decoded.finish_in_place();
            }
        };
        if hashed {
            items
                .par_iter_mut()
                .zip(hashes.par_iter_mut())
                .with_min_len(MIN_LINES_PER_TASK)
                .for_each(|(item, hashes)| {
                    if hashes.is_none() {
                        finish(item);
                        *hashes = hashes_of(item);
                    }
                });
        } else {
            items
                .par_iter_mut()
                .with_min_len(MIN_LINES_PER_TASK)
                .for_each(finish);
        }
    }
    BatchRecords {
        items: Items {
            decoded: items,
            hashes,
        },
        first_line: at.line,
        failure,
        line_count,
    }
}
