//! One batch of whole lines to records, in three phases: decode every line in parallel (rayon),
//! resolve v4 context ids sequentially in file order, then assemble the resolved compact records
//! in parallel. The first failing line in file order wins, whether it failed to decode or to
//! resolve, exactly as a sequential reader would report it.
//!
//! This module owns no I/O and no thread pool: it runs on whatever rayon pool calls it, and the
//! caller (`drive`) decides where batches come from and where records go.

use std::sync::Arc;

use rayon::prelude::*;

use crate::model::{CorrelationContext, CorrelationEvent, InferenceRecord};

use super::context::{CorrelationRecordDecoder, Resolved};
use super::decode::decode_line;
use super::events::EventParts;
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

/// The records of one batch, in file order, and the failure that ended it, if any.
#[derive(Debug, Default)]
pub(crate) struct BatchRecords {
    /// `(line, record)` for every record before the failure.
    pub records: Vec<(u64, InferenceRecord)>,
    /// The first failing line and why; no line after it was looked at.
    pub failure: Option<(u64, Fault)>,
    /// Physical lines in the batch.
    pub line_count: u64,
}

enum Slot {
    Done(InferenceRecord),
    Pending(Arc<CorrelationContext>, EventParts),
}

/// Decodes one batch of whole lines (`bytes` never ends inside a line, except at the end of the
/// input) starting at `at`.
pub(crate) fn decode_batch(
    bytes: &[u8],
    at: Position,
    decoder: &mut CorrelationRecordDecoder,
) -> BatchRecords {
    let mut spans: Vec<LineSpan> = Vec::new();
    split_lines(bytes, &mut spans);
    let line_count = spans.len() as u64;
    let decoded: Vec<Result<_, Fault>> = spans
        .par_iter()
        .with_min_len(MIN_LINES_PER_TASK)
        .map(|s| decode_line(&bytes[s.start..s.end], at.offset + s.start as u64))
        .collect();
    drop(spans);

    let mut slots: Vec<(u64, Slot)> = Vec::with_capacity(decoded.len());
    let mut failure = None;
    for (line, item) in (at.line..).zip(decoded) {
        match item.and_then(|d| decoder.resolve(d)) {
            Ok(Resolved::Nothing) => {}
            Ok(Resolved::Record(record)) => slots.push((line, Slot::Done(record))),
            Ok(Resolved::Pending(context, parts)) => {
                slots.push((line, Slot::Pending(context, parts)));
            }
            Err(fault) => {
                failure = Some((line, fault));
                break;
            }
        }
    }

    let records = slots
        .into_par_iter()
        .with_min_len(MIN_LINES_PER_TASK)
        .map(|(line, slot)| {
            let record = match slot {
                Slot::Done(record) => record,
                Slot::Pending(context, parts) => InferenceRecord::Event(CorrelationEvent::new(
                    context,
                    parts.event_id,
                    parts.metadata,
                    parts.body,
                )),
            };
            (line, record)
        })
        .collect();
    BatchRecords {
        records,
        failure,
        line_count,
    }
}
