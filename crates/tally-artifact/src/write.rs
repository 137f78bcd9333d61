//! The artifact writer: records out as JSONL, byte for byte as the reference writes them.
//!
//! [`ArtifactWriter`] writes [`InferenceRecord`]s in one of two forms ([`ArtifactForm`]): v2,
//! every correlation row embedding its full context (an activity with `metadata.intervals` is
//! the version-3 row it must be), or v4, where each distinct context is written once as an
//! `infer.context` definition before its first use and rows name it by [`context_id`]. Rows are
//! what stormlog's `JsonlEventWriter` writes (`docs/evidence.md#reader-api`): `to_record()` of the event, keys
//! sorted at every level, Python's default separators, `ensure_ascii`; legacy records are their
//! own JSON re-serialised the same way. The same records always give the same bytes.
//!
//! Speed: rows are formatted straight into a reused byte buffer by a hand-written serialiser
//! (no intermediate JSON values; metadata text is re-serialised by a small streaming parser),
//! each context's JSON text is built once per writer, and the buffer goes to the sink in 1 MiB
//! writes.
//!
//! Deliberately not here: reading or validating records (records are valid by construction, see
//! [`tally_evidence::model`]) and choosing which records to write.

mod canonical;
mod python_json;
mod record;

#[cfg(test)]
mod tests;

use std::io::{self, Write};
use std::sync::Arc;

use rustc_hash::FxHashMap;
use sha2::{Digest, Sha256};

use tally_evidence::model::{BusyIntervals, CorrelationContext, EventBody, InferenceRecord};

use python_json::Separators;
use record::ContextField;

/// How contexts are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ArtifactForm {
    /// Every correlation row embeds its context (schema versions 2 and 3).
    V2,
    /// Contexts are interned: one `infer.context` definition per distinct context, and compact
    /// version-4 rows naming it (`docs/evidence.md#v4-interning`). Activities whose `metadata.intervals` is
    /// null stay embedded at version 3, as the reference's encoder leaves them.
    V4,
}

/// The reference's generated context id: `ctx-` and the first 16 lowercase hex digits of the
/// SHA-256 of the context's canonical JSON (all 19 keys, nulls included, keys sorted, `,` and
/// `:` separators, `ensure_ascii`).
pub fn context_id(ctx: &CorrelationContext) -> String {
    let mut canonical = Vec::with_capacity(512);
    record::push_context(&mut canonical, ctx, Separators::Compact);
    let digest = Sha256::digest(&canonical);
    let mut id = String::with_capacity(20);
    id.push_str("ctx-");
    for byte in &digest[..8] {
        id.push(char::from(b"0123456789abcdef"[usize::from(byte >> 4)]));
        id.push(char::from(b"0123456789abcdef"[usize::from(byte & 0xf)]));
    }
    id
}

/// Bytes gathered before they are handed to the sink.
const FLUSH_THRESHOLD: usize = 1 << 20;

/// Writes records as a JSONL artifact in the chosen [`ArtifactForm`].
///
/// Each writer has its own context registry (as the reference's writer starts a fresh one each
/// time it opens a file), so a v4 artifact defines every context it uses. Rows are formatted
/// straight into a 1 MiB output buffer, so the sink needs no buffering of its own. Call
/// [`finish`](Self::finish) to flush and get the sink back; dropping the writer flushes on a
/// best-effort basis, like [`std::io::BufWriter`].
pub struct ArtifactWriter<W: Write> {
    /// `None` only after [`finish`](Self::finish).
    sink: Option<W>,
    form: ArtifactForm,
    contexts: ContextTable,
    buf: Vec<u8>,
    metadata: Vec<u8>,
}

impl<W: Write> ArtifactWriter<W> {
    /// A writer of `form` rows into `sink`.
    pub fn new(sink: W, form: ArtifactForm) -> Self {
        Self {
            sink: Some(sink),
            form,
            contexts: ContextTable::default(),
            buf: Vec::with_capacity(FLUSH_THRESHOLD + 64 * 1024),
            metadata: Vec::with_capacity(1024),
        }
    }

    /// The form this writer writes.
    pub fn form(&self) -> ArtifactForm {
        self.form
    }

    /// Writes one record (one line, preceded in v4 by the definition of a context not yet
    /// written). Fails on an I/O error, on metadata or legacy text that is not JSON (which the
    /// reader never produces), or — v4 only, practically impossible — when two different
    /// contexts hash to the same id (`conflicting context definition: {id}`). A failed record
    /// writes nothing and registers nothing.
    pub fn write_record(&mut self, record: &InferenceRecord) -> io::Result<()> {
        let mark = self.buf.len();
        let result = self.format_record(record);
        if result.is_err() {
            self.buf.truncate(mark);
        }
        let newly_defined = result?;
        if self.buf.len() >= FLUSH_THRESHOLD {
            self.flush_buffer()?;
        }
        if let Some(slot) = newly_defined {
            self.contexts.entries[slot].defined = true;
        }
        Ok(())
    }

    /// Appends the record's line(s) to the buffer; returns the context whose definition it
    /// wrote, if any.
    fn format_record(&mut self, record: &InferenceRecord) -> io::Result<Option<usize>> {
        let mut newly_defined = None;
        match record {
            InferenceRecord::Legacy(legacy) => record::push_legacy(&mut self.buf, legacy)?,
            InferenceRecord::Event(event) => {
                self.metadata.clear();
                record::push_metadata(&mut self.metadata, event.metadata())?;
                let embedded_version = event.schema_version();
                let compact = self.form == ArtifactForm::V4 && !has_null_intervals(event.body());
                let slot = self.contexts.slot(event.context_arc(), compact)?;
                let entry = &self.contexts.entries[slot];
                if compact {
                    let id = entry.id.as_deref().expect("interned contexts have an id");
                    if !entry.defined {
                        record::push_definition(&mut self.buf, &entry.json, id);
                        self.buf.push(b'\n');
                        newly_defined = Some(slot);
                    }
                    let context = ContextField::Interned(id);
                    record::push_event(&mut self.buf, event, context, &self.metadata, 4);
                } else {
                    let context = ContextField::Embedded(&entry.json);
                    let version = embedded_version;
                    record::push_event(&mut self.buf, event, context, &self.metadata, version);
                }
            }
        }
        self.buf.push(b'\n');
        Ok(newly_defined)
    }

    fn flush_buffer(&mut self) -> io::Result<()> {
        let sink = self
            .sink
            .as_mut()
            .expect("the sink is present until finish");
        let result = sink.write_all(&self.buf);
        self.buf.clear();
        result
    }

    /// Writes every record of `records`, stopping at the first error.
    pub fn write_all<'a>(
        &mut self,
        records: impl IntoIterator<Item = &'a InferenceRecord>,
    ) -> io::Result<()> {
        records.into_iter().try_for_each(|r| self.write_record(r))
    }

    /// Flushes everything and returns the sink.
    pub fn finish(mut self) -> io::Result<W> {
        self.flush_buffer()?;
        let mut sink = self.sink.take().expect("the sink is present until finish");
        sink.flush()?;
        Ok(sink)
    }
}

impl<W: Write> Drop for ArtifactWriter<W> {
    fn drop(&mut self) {
        if let Some(sink) = self.sink.as_mut() {
            // Errors cannot be reported from a drop; `finish` reports them.
            let _ = sink.write_all(&self.buf);
            let _ = sink.flush();
        }
    }
}

/// Writes `records` as an artifact of `form` into a new byte vector.
pub fn to_jsonl<'a>(
    records: impl IntoIterator<Item = &'a InferenceRecord>,
    form: ArtifactForm,
) -> io::Result<Vec<u8>> {
    let mut writer = ArtifactWriter::new(Vec::new(), form);
    writer.write_all(records)?;
    writer.finish()
}

fn has_null_intervals(body: &EventBody) -> bool {
    matches!(body, EventBody::Activity(a) if a.intervals == BusyIntervals::Null)
}

/// One distinct context seen by a writer.
struct ContextEntry {
    context: Arc<CorrelationContext>,
    /// The context object as written in rows (sorted keys, spaced separators).
    json: Box<[u8]>,
    /// The generated id, computed when the context is first interned.
    id: Option<Box<str>>,
    /// Whether its v4 definition has been written.
    defined: bool,
}

/// The writer's registry: distinct contexts by value, their JSON text and ids.
#[derive(Default)]
struct ContextTable {
    entries: Vec<ContextEntry>,
    by_context: FxHashMap<Arc<CorrelationContext>, usize>,
    by_id: FxHashMap<Box<str>, usize>,
    last: Option<usize>,
}

impl ContextTable {
    /// The entry for `ctx`, created on first sight; with `interned`, also its id (refusing an
    /// id that another context already has).
    fn slot(&mut self, ctx: &Arc<CorrelationContext>, interned: bool) -> io::Result<usize> {
        let slot = match self.last {
            Some(last) if Arc::ptr_eq(&self.entries[last].context, ctx) => last,
            _ => match self.by_context.get(ctx) {
                Some(&slot) => slot,
                None => {
                    let mut json = Vec::with_capacity(512);
                    record::push_context(&mut json, ctx, Separators::Spaced);
                    self.entries.push(ContextEntry {
                        context: Arc::clone(ctx),
                        json: json.into_boxed_slice(),
                        id: None,
                        defined: false,
                    });
                    let slot = self.entries.len() - 1;
                    self.by_context.insert(Arc::clone(ctx), slot);
                    slot
                }
            },
        };
        self.last = Some(slot);
        if interned && self.entries[slot].id.is_none() {
            let id: Box<str> = context_id(ctx).into();
            if self.by_id.contains_key(&id) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("conflicting context definition: {id}"),
                ));
            }
            self.by_id.insert(id.clone(), slot);
            self.entries[slot].id = Some(id);
        }
        Ok(slot)
    }
}
