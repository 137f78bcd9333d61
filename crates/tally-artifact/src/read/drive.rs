//! The load loop: batches from a source are decoded on a rayon pool while the previous batch's
//! records go to the caller's sink on the calling thread, in file order; the first failure (a
//! line, a read, or the sink) stops the load, except that after a resolver's error the rest of
//! the input is still read, for a line that cannot be read (the reference's precedence). Also
//! the pull-style iterator over the same batches.
//!
//! This module decides order and overlap only; what a line means is `decode`'s business and
//! where bytes come from is `input`'s.

use std::collections::VecDeque;

use rayon::{Scope, ThreadPool};

use tally_evidence::error::{Error, Origin, Result};
use tally_evidence::model::{CorrelationEvent, InferenceRecord, Text};
use tally_evidence::resolve::{Hashes, Place, Resolver};

use super::ReadOptions;
use super::batch::{BatchRecords, Items, Position, decode_batch};
use super::context::{CorrelationRecordDecoder, located};
use super::decode::Decoded;
use super::fields::Fault;
use super::input::{Source, read_error};

/// The pool batches are decoded on: rayon's global pool, or one of `threads` threads.
fn pool(options: &ReadOptions) -> Result<Option<ThreadPool>> {
    options
        .threads
        .map(|n| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(n.get())
                .thread_name(|i| format!("tally-evidence-parse-{i}"))
                .build()
                .map_err(|e| Error::refused(format!("cannot start the parse threads: {e}")))
        })
        .transpose()
}

fn in_scope<'s, R>(pool: Option<&ThreadPool>, op: impl FnOnce(&Scope<'s>) -> R) -> R {
    match pool {
        Some(pool) => pool.in_place_scope(op),
        None => rayon::in_place_scope(op),
    }
}

/// Where a load's records go, batch by batch, on the calling thread.
pub(crate) trait Consumer {
    /// Whether the consumer uses the resolver hashes of events (computed on the parse threads).
    const HASHED: bool = false;

    /// Whether a line that cannot be read, anywhere in the input, is the load's error rather
    /// than an earlier error of the consumer's own: the reference reads a whole artifact before
    /// it resolves it. After its first error such a consumer is given no more records, and the
    /// rest of the input is read only to find such a line.
    const READ_ERRORS_FIRST: bool = false;

    /// Takes the records of `batch` in file order; its first error stops the delivery (and the
    /// load, unless [`Consumer::READ_ERRORS_FIRST`] has the rest of the input read first).
    fn consume(&mut self, batch: &mut BatchRecords, name: &Text) -> Result<()>;
}

/// A caller's sink, one record at a time.
pub(crate) struct Sink<F>(pub F);

impl<F: FnMut(Origin, InferenceRecord) -> Result<()>> Consumer for Sink<F> {
    fn consume(&mut self, batch: &mut BatchRecords, name: &Text) -> Result<()> {
        for (line, record) in batch.drain_records() {
            (self.0)(Origin::at(name.clone(), line), record)?;
        }
        Ok(())
    }
}

/// How many records ahead a resolver is shown (see [`Resolver::prepare`]): enough for the index
/// reads of several records to overlap, few enough for them to stay in the cache.
const AHEAD: usize = 8;

impl Consumer for &mut Resolver {
    const HASHED: bool = true;
    const READ_ERRORS_FIRST: bool = true;

    fn consume(&mut self, batch: &mut BatchRecords, name: &Text) -> Result<()> {
        fn event(item: &Result<Decoded, Fault>) -> Option<&CorrelationEvent> {
            match item {
                Ok(Decoded::Record(InferenceRecord::Event(event))) => Some(event),
                _ => None,
            }
        }
        let resolver: &mut Resolver = self;
        let super::batch::Drained {
            first_line,
            mut items,
            hashes,
        } = batch.drain_items();
        // The hashes the parse threads computed (`HASHED`), else computed here.
        let prepare = |resolver: &Resolver, k: usize, item: &Result<Decoded, Fault>| {
            let event = event(item)?;
            let hashes = hashes.get(k).copied().flatten();
            Some(resolver.touch(event, hashes.unwrap_or_else(|| Hashes::of(event))))
        };
        let mut ahead: [Option<Hashes>; 2 * AHEAD] = [None; 2 * AHEAD];
        for (k, item) in items.as_slice().iter().take(AHEAD).enumerate() {
            ahead[k] = prepare(resolver, k, item);
        }
        let mut i = 0;
        while let Some(item) = items.next() {
            if let Some(upcoming) = items.as_slice().get(AHEAD - 1) {
                ahead[(i + AHEAD) % (2 * AHEAD)] = prepare(resolver, i + AHEAD, upcoming);
            }
            if let Ok(Decoded::Record(InferenceRecord::Event(event))) = item {
                let place = Place::Line(name, first_line + i as u64);
                resolver.push_hashed(event, ahead[i % (2 * AHEAD)], place)?;
            }
            i += 1;
        }
        Ok(())
    }
}

/// What delivering a batch came to.
struct Delivered {
    /// The batch's emptied item buffer, for reuse.
    items: Items,
    /// The consumer's error, if it failed.
    consumed: Result<()>,
    /// The line of the batch that could not be read, if any (after every record delivered).
    failure: Option<Error>,
}

/// Hands a batch's records to the consumer (unless `consumer` is `None`: the consumer has
/// failed and the input is only read on), and names its failing line.
fn deliver<C: Consumer>(
    mut batch: BatchRecords,
    name: &Text,
    consumer: Option<&mut C>,
) -> Delivered {
    let failure = batch
        .failure
        .take()
        .map(|(line, fault)| located(fault, Origin::at(name.clone(), line)));
    let consumed = consumer.map_or(Ok(()), |c| c.consume(&mut batch, name));
    Delivered {
        items: batch.into_items(),
        consumed,
        failure,
    }
}

/// Reads every batch of `source`, decoding batch k+1 while batch k is delivered. The load's
/// error is the first in file order, except that for a consumer with
/// [`Consumer::READ_ERRORS_FIRST`] a line that cannot be read wins over the consumer's error.
pub(crate) fn run<C: Consumer>(
    mut source: Source<'_>,
    name: &Text,
    options: &ReadOptions,
    decoder: &mut CorrelationRecordDecoder,
    mut consumer: C,
) -> Result<()> {
    let pool = pool(options)?;
    let mut at = Position { line: 1, offset: 0 };
    let mut previous: Option<BatchRecords> = None;
    // Two item buffers take turns: one is filled while the other's records are delivered.
    let mut spare = Items::new();
    // The consumer's error, held while the rest of the input is read (`READ_ERRORS_FIRST`).
    let mut consumer_error: Option<Error> = None;
    loop {
        // After a failing batch nothing more is read.
        let stop = previous.as_ref().is_some_and(|p| p.failure.is_some());
        let chunk = if stop { Ok(None) } else { source.next_chunk() };
        let mut decoded = None;
        let items = std::mem::take(&mut spare);
        let hashed = C::HASHED && consumer_error.is_none();
        let delivered = in_scope(pool.as_ref(), |scope| {
            if let Ok(Some(chunk)) = &chunk {
                let (decoded, decoder) = (&mut decoded, &mut *decoder);
                scope.spawn(move |_| {
                    chunk.prefault();
                    *decoded = Some(decode_batch(chunk, at, decoder, items, hashed));
                });
            }
            previous.take().map(|batch| {
                let consumer = consumer_error.is_none().then_some(&mut consumer);
                deliver(batch, name, consumer)
            })
        });
        if let Some(delivered) = delivered {
            spare = delivered.items;
            match (delivered.consumed, delivered.failure) {
                (Err(e), Some(failure)) => {
                    return Err(if C::READ_ERRORS_FIRST { failure } else { e });
                }
                (Err(e), None) if C::READ_ERRORS_FIRST => consumer_error = Some(e),
                (Err(e), None) => return Err(e),
                (Ok(()), Some(failure)) => return Err(failure),
                (Ok(()), None) => {}
            }
        }
        match chunk.map_err(|e| read_error(name, at.line, e))? {
            None => return consumer_error.map_or(Ok(()), Err),
            Some(chunk) => {
                let batch = decoded.expect("the decode task ran");
                at.line += batch.line_count;
                at.offset += chunk.len() as u64;
                previous = Some(batch);
            }
        }
    }
}

/// The records of one input, pulled one at a time (batches are decoded on rayon's global pool
/// as they are needed). Yields `Err` once, for the first failure, and then ends.
pub struct InferenceEvents {
    source: Source<'static>,
    name: Text,
    decoder: CorrelationRecordDecoder,
    at: Position,
    ready: VecDeque<(u64, InferenceRecord)>,
    spare: Items,
    failure: Option<Error>,
    done: bool,
}

impl InferenceEvents {
    pub(crate) fn new(
        source: Source<'static>,
        name: Text,
        decoder: CorrelationRecordDecoder,
    ) -> Self {
        Self {
            source,
            name,
            decoder,
            at: Position { line: 1, offset: 0 },
            ready: VecDeque::new(),
            spare: Items::new(),
            failure: None,
            done: false,
        }
    }

    /// The decoder, with the definitions read so far (to continue the file elsewhere).
    pub fn decoder(&self) -> &CorrelationRecordDecoder {
        &self.decoder
    }

    fn refill(&mut self) {
        match self.source.next_chunk() {
            Err(e) => {
                self.failure = Some(read_error(&self.name, self.at.line, e));
                self.done = true;
            }
            Ok(None) => self.done = true,
            Ok(Some(chunk)) => {
                let items = std::mem::take(&mut self.spare);
                let mut batch = decode_batch(&chunk, self.at, &mut self.decoder, items, false);
                self.at.line += batch.line_count;
                self.at.offset += chunk.len() as u64;
                let failure = batch.failure.take();
                self.ready.extend(batch.drain_records());
                self.spare = batch.into_items();
                if let Some((line, fault)) = failure {
                    self.failure = Some(located(fault, Origin::at(self.name.clone(), line)));
                    self.done = true;
                }
            }
        }
    }
}

impl Iterator for InferenceEvents {
    type Item = Result<(Origin, InferenceRecord)>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some((line, record)) = self.ready.pop_front() {
                return Some(Ok((Origin::at(self.name.clone(), line), record)));
            }
            if self.done {
                return self.failure.take().map(Err);
            }
            self.refill();
        }
    }
}
