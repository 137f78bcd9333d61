//! The JSONL reader: inference artifacts (schema versions 1–4) to [`InferenceRecord`]s, exactly as
//! stormlog 0.4.3's `correlation_codec` reads them (`docs/evidence.md#wire-format`, `docs/evidence.md#reader-api`), and fast.
//!
//! Entry points: [`for_each_record`] streams an [`Input`] (a file, gzip or not, or standard input)
//! into a sink in file order; [`load_inference_artifact`] collects a file; [`iter_inference_events`]
//! pulls records one by one; [`for_each_record_in_bytes`] reads bytes already in memory;
//! [`parse_inference_record`] checks one embedded record; [`CorrelationRecordDecoder`] and
//! [`ContextRegistry`] are the v4 machinery, usable line by line. Errors are
//! [`Error::Record`] (the reference's message, `line N: ` added by `Display`) or
//! [`Error::OutOfRange`] (see below), or [`Error::Io`].
//!
//! How it is fast: a file is memory-mapped in windows of [`ReadOptions::batch_bytes`] cut at line
//! ends (gzip and standard input are read into such batches by a background thread); each batch's
//! lines are parsed in parallel with rayon, each line once, by `serde_json` into a borrowed
//! structure of raw values, then checked by one validation function in the reference's order;
//! v4 context ids are resolved sequentially per batch (they are cheap); records go to the sink in
//! file order while the next batch is being parsed. Memory is bounded by about three batches
//! plus what the sink keeps (a batch grows to hold a long line, up to [`MAX_LINE_BYTES`]).
//! Identical embedded contexts share one `Arc` (a small per-thread cache keyed by the context's
//! raw text), and a line whose context text is already in that cache is parsed without scanning
//! the context again (a verified substitution; see `known`); each v4 definition is one `Arc`,
//! whatever its aliases. Low-cardinality strings (producer ids, roles, kinds, names) are shared
//! per thread too.
//!
//! Not here: resolution and de-duplication ([`tally_evidence::resolve`]) and writing
//! ([`crate::write`]).
//!
//! # Decisions where the reference is Python-specific (`docs/evidence.md#python-isms`)
//!
//! - **Booleans are never integers**, in every integer field and in `schema_version`.
//! - **Floats are not integers**: `1.0`, `1e3`, `-0.0` are refused where an integer is required
//!   (with the field's usual message); `-0` is the integer 0. `schema_version: 4.0` still makes a
//!   record a transport record (Python's `4.0 == 4`), which is then refused as the reference does.
//! - **Integers of any size are read**; one that does not fit tally's model is refused with
//!   [`Error::OutOfRange`] naming the field and the limit (the reference accepts it): counters,
//!   ids, `pid` and ranks above `u64::MAX`, times (`*_ns`) above `i64::MAX`, `offset_ns` outside
//!   `i64`. A negative integer of any size gets the reference's own message. Huge integers in
//!   `metadata.intervals` are checked as the reference would (they can only fail "must lie inside
//!   start_ns..end_ns"), and `schema_version` reports its digits
//!   (`unsupported inference schema_version: 1180591620717411303424`).
//! - **`NaN`, `Infinity`, `-Infinity`** are accepted wherever the reference accepts them: they are
//!   floats (so refused in typed fields with the field's message), and inside `metadata` the
//!   original text is kept. Implementation: a line that strict JSON refuses and that contains
//!   one of these words is rewritten by [`tally_evidence::json::rewrite_special_literals`] and
//!   parsed again; in such a line, a string that is exactly one of the rewrite's sentinels
//!   (a NUL character followed by `tally:NaN`, ...) is read as the float, which no real producer
//!   writes.
//! - **Duplicate keys**: the last value wins and the key keeps its first position, as in a Python
//!   `dict` (this decides which unexpected key a constructor error names).
//! - **Invalid UTF-8** is reported with its line and the byte offset in the (decompressed) input:
//!   `line N: invalid UTF-8 at byte offset P: ...`, where the reference has no line prefix. It is
//!   found line by line, so the first failing line in file order wins.
//! - **A byte-order mark** at the start of a line is Python's JSON error
//!   (`Unexpected UTF-8 BOM ...`); other JSON syntax errors use `serde_json`'s wording (only the
//!   `line N: ` prefix is contractual).
//! - **Lone surrogate escapes** (`"\ud800"`), which Python keeps in a `str`, cannot be held in
//!   UTF-8 text: such a string compares as itself with U+FFFD in place of the escape (so type
//!   checks and legacy records behave as in the reference), but a field whose text tally keeps
//!   refuses it: `{field} contains the lone surrogate escape \ud800, ...`.
//! - **Nesting deeper than 128** levels is a JSON error (`serde_json`'s limit), where the
//!   reference raises a `RecursionError` at about 1000 levels; and integers of more than 4300
//!   digits, which CPython 3.11 refuses to convert, are read like any other.
//! - **Constructor errors** (`TypeError` in the reference) are reproduced word for word,
//!   including the `unhashable type: 'list'` form for list or object values of `clock_kind`,
//!   `collection_mode`, `provenance`, `activity_domain` and `attribution_status`.

mod batch;
mod bodies;
mod context;
mod decode;
mod drive;
mod events;
mod fields;
mod floor;
mod input;
mod known;
mod lines;
mod scan;
mod value;
mod wire;

use std::num::NonZeroUsize;
use std::path::Path;

pub use context::{ContextRegistry, CorrelationRecordDecoder};
pub use drive::InferenceEvents;
pub use input::Input;

use tally_evidence::error::{Error, Origin, Result};
use tally_evidence::model::{InferenceRecord, Text};
use tally_evidence::resolve::Resolver;

/// The longest line the reader accepts: 16 MiB (16,777,216 bytes), terminator excluded.
///
/// A line is one record, a few hundred bytes to a few kilobytes in practice; a longer line is
/// refused as [`Error::OutOfRange`] with its file and line
/// (`<FILE>: line N: the line is longer than 16 MiB ...`). The bound is what keeps reading
/// endless input without a line end (`/dev/zero`, a gzip bomb of zeros, a sparse file) in
/// bounded memory: a plain file, a gzip stream and standard input alike stop after at most this
/// many bytes of one line (the rest of the input is not read).
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// How a file is read. The defaults suit files of any size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadOptions {
    /// Bytes per batch (a batch grows to hold a longer line). Default 16 MiB. Memory in use is
    /// about three batches plus their records. A file shorter than 32 such batches is cut into
    /// about 32 batches (of at least 1 MiB), so that reading overlaps resolving from the start.
    pub batch_bytes: usize,
    /// Parse threads: `None` uses rayon's global pool (one thread per core, or
    /// `RAYON_NUM_THREADS`); `Some(n)` a pool of `n` threads for this read.
    pub threads: Option<NonZeroUsize>,
}

impl ReadOptions {
    /// The default batch size: large enough to keep both cores busy, small enough to stay
    /// within a few tens of MiB.
    pub const DEFAULT_BATCH_BYTES: usize = 16 << 20;
}

impl Default for ReadOptions {
    fn default() -> Self {
        Self {
            batch_bytes: Self::DEFAULT_BATCH_BYTES,
            threads: None,
        }
    }
}

/// Streams the records of `input` into `sink`, in file order, with default options and a fresh
/// decoder. The sink is called on the calling thread, one record at a time; the first failing
/// line (in file order) or the sink's first error stops the load and is returned.
pub fn for_each_record(
    input: &Input,
    sink: impl FnMut(Origin, InferenceRecord) -> Result<()>,
) -> Result<()> {
    for_each_record_with(
        input,
        &ReadOptions::default(),
        &mut CorrelationRecordDecoder::new(),
        sink,
    )
}

/// [`for_each_record`] with options and a decoder that may already know definitions (and keeps
/// those of this input).
pub fn for_each_record_with(
    input: &Input,
    options: &ReadOptions,
    decoder: &mut CorrelationRecordDecoder,
    sink: impl FnMut(Origin, InferenceRecord) -> Result<()>,
) -> Result<()> {
    let name = input.name();
    let source = input::Source::open(input, options.batch_bytes).map_err(|source| Error::Io {
        name: name.clone(),
        source,
    })?;
    drive::run(source, &name, options, decoder, drive::Sink(sink))
}

/// Resolves the records of `input` into `resolver`, in file order, with default options and a
/// fresh decoder: what [`for_each_record`] with a sink calling [`Resolver::push`] does (the same
/// records), faster: the resolver is shown a few records ahead of the one it takes, and it runs
/// on one of rayon's threads, which parses whenever it has no record to resolve (rather than a
/// third thread competing for the cores).
///
/// The error is the reference's, which reads a whole artifact before it resolves it: the first
/// line that cannot be read, and only when every line can be read, the resolver's first error
/// (after which the rest of the input is read but not resolved). Pushing record by record
/// reports whichever comes first in the file.
pub fn resolve_input(input: &Input, resolver: &mut Resolver) -> Result<()> {
    resolve_input_with(input, &ReadOptions::default(), resolver)
}

/// [`resolve_input`] with options.
pub fn resolve_input_with(
    input: &Input,
    options: &ReadOptions,
    resolver: &mut Resolver,
) -> Result<()> {
    let name = input.name();
    let source = input::Source::open(input, options.batch_bytes).map_err(|source| Error::Io {
        name: name.clone(),
        source,
    })?;
    let mut decoder = CorrelationRecordDecoder::new();
    rayon::scope(|_| drive::run(source, &name, options, &mut decoder, resolver))
}

/// [`resolve_input`] for a file that is already open (just opened: a regular file is read from
/// its start), named `name` in origins and errors: for a caller that checked the file on its descriptor (that it
/// is a regular file, say, opened without blocking) and must read that very file, not whatever
/// its path names a moment later.
pub fn resolve_file(file: std::fs::File, name: &str, resolver: &mut Resolver) -> Result<()> {
    let name = Text::from(name);
    let options = ReadOptions::default();
    let source = input::Source::file(file, options.batch_bytes).map_err(|source| Error::Io {
        name: name.clone(),
        source,
    })?;
    let mut decoder = CorrelationRecordDecoder::new();
    rayon::scope(|_| drive::run(source, &name, &options, &mut decoder, resolver))
}

/// [`for_each_record_with`] for bytes already in memory (plain JSONL, not gzip), named `name` in
/// origins and errors.
pub fn for_each_record_in_bytes(
    name: &str,
    bytes: &[u8],
    options: &ReadOptions,
    decoder: &mut CorrelationRecordDecoder,
    sink: impl FnMut(Origin, InferenceRecord) -> Result<()>,
) -> Result<()> {
    let name = Text::from(name);
    drive::run(
        input::Source::slice(bytes, options.batch_bytes),
        &name,
        options,
        decoder,
        drive::Sink(sink),
    )
}

/// The number of non-blank lines of `input`, each parsed as JSON and nothing more (no record
/// is read from them), in parallel: the floor under [`for_each_record`]'s time, for
/// measurements. The first line that is not JSON (or not UTF-8) is the error.
pub fn parse_json_lines(input: &Input) -> Result<u64> {
    let name = input.name();
    let source =
        input::Source::open(input, ReadOptions::DEFAULT_BATCH_BYTES).map_err(|source| {
            Error::Io {
                name: name.clone(),
                source,
            }
        })?;
    floor::json_lines(source, &name)
}

/// Every record of the file at `path` (plain or gzip), in file order (the reference's
/// `load_inference_artifact`).
pub fn load_inference_artifact(path: impl AsRef<Path>) -> Result<Vec<InferenceRecord>> {
    let mut records = Vec::new();
    for_each_record(&Input::Path(path.as_ref().to_path_buf()), |_, record| {
        records.push(record);
        Ok(())
    })?;
    Ok(records)
}

/// The records of `input` as an iterator of `(origin, record)`, decoded batch by batch as it is
/// pulled (the reference's `iter_inference_events`; pass a decoder to continue a file).
pub fn iter_inference_events(
    input: &Input,
    decoder: Option<CorrelationRecordDecoder>,
) -> Result<InferenceEvents> {
    let name = input.name();
    let source =
        input::Source::open(input, ReadOptions::DEFAULT_BATCH_BYTES).map_err(|source| {
            Error::Io {
                name: name.clone(),
                source,
            }
        })?;
    Ok(InferenceEvents::new(
        source,
        name,
        decoder.unwrap_or_default(),
    ))
}

/// Parses and validates one embedded record from its JSON text (the reference's
/// `parse_inference_record`): a legacy (v1) record is kept verbatim, a v2/v3 record is fully
/// checked, and a v4 record is refused (`v4 requires load_inference_artifact or a sequence
/// decoder`) because its context lives elsewhere. A JSON value that is not an object is refused
/// with `record must be an object`. Errors carry no origin.
pub fn parse_inference_record(json: &str) -> Result<InferenceRecord> {
    decode::with_json(json, |line, parsed| match line {
        None => Err(fields::Fault::Value("record must be an object".into())),
        Some(wire) => {
            let rec = events::Fields {
                wire,
                lenient: parsed.lenient,
                known_context: parsed.known_context,
                plain_refs: parsed.plain_refs,
            };
            decode::embedded_record(&rec, rec.val(wire::Key::SchemaVersion), json, |r| r)
        }
    })
    .map_err(|fault| context::located(fault, Origin::default()))
}
