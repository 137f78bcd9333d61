//! The import entry points: [`import_kineto`] and [`import_nsys`] over several input files.
//!
//! An import gives every record one run and session (from `--run-id`, or derived from a hash of
//! the inputs' bytes so the same inputs always give the same artifact), emits one artifact
//! identity record first, then for each input in the order given: its iterations, then its
//! activities. Inputs are processed one after another, so memory is that of the largest single
//! input. Formats differ only in their reader module.

use std::path::PathBuf;
use std::sync::Arc;

use tally_evidence::{
    ArtifactIdentityEvent, ClockKind, CollectionMode, CorrelationContext, EventBody,
    InferenceRecord, Metadata, Provenance, Text,
};
use xxhash_rust::xxh3::Xxh3;

use crate::emit::{RunIdentity, Sink, record};
use crate::error::{Error, Result};
use crate::options::{ImportOptions, Phase, Progress};
use crate::source;
use crate::summary::ImportSummary;
use crate::trace::{TraceFacts, TraceFormat};
use crate::{kineto, nsys};

/// The `artifact_kind` of the identity record an import writes.
pub const ARTIFACT_KIND: &str = "tally.trace_import";

/// Imports Kineto (PyTorch profiler) traces, plain or gzip, sending records to `sink` in a
/// deterministic order: the artifact identity record, then per input its iterations and its
/// activities. `progress` hears about each pass of each input.
pub fn import_kineto(
    paths: &[PathBuf],
    options: &ImportOptions,
    sink: &mut dyn FnMut(InferenceRecord) -> Result<()>,
    progress: &mut dyn FnMut(Progress),
) -> Result<ImportSummary> {
    run_import(TraceFormat::Kineto, paths, options, sink, progress)
}

/// Imports Nsight Systems SQLite exports (`nsys export --type sqlite`), plain or gzip, with the
/// same record order and options as [`import_kineto`].
pub fn import_nsys(
    paths: &[PathBuf],
    options: &ImportOptions,
    sink: &mut dyn FnMut(InferenceRecord) -> Result<()>,
    progress: &mut dyn FnMut(Progress),
) -> Result<ImportSummary> {
    run_import(TraceFormat::Nsys, paths, options, sink, progress)
}

/// Refuses, before reading any, inputs that are not regular files ([`Error::NotAFile`]): a
/// device or pipe may never end and cannot be read twice. The importers call it first; a
/// caller may call it earlier to tell this usage error apart.
pub fn check_inputs(paths: &[PathBuf]) -> Result<()> {
    paths
        .iter()
        .try_for_each(|path| source::check_regular(path))
}

/// Imports into a vector (small inputs and tests).
pub fn import_to_vec(
    format: TraceFormat,
    paths: &[PathBuf],
    options: &ImportOptions,
) -> Result<(Vec<InferenceRecord>, ImportSummary)> {
    let mut records = Vec::new();
    let summary = run_import(
        format,
        paths,
        options,
        &mut |r| {
            records.push(r);
            Ok(())
        },
        &mut |_| {},
    )?;
    Ok((records, summary))
}

fn run_import(
    format: TraceFormat,
    paths: &[PathBuf],
    options: &ImportOptions,
    sink: &mut dyn FnMut(InferenceRecord) -> Result<()>,
    progress: &mut dyn FnMut(Progress),
) -> Result<ImportSummary> {
    if paths.is_empty() {
        return Err(Error::usage("no trace files given; name at least one"));
    }
    if options.run_id.as_deref() == Some("") {
        return Err(Error::usage("--run-id must not be empty"));
    }
    check_inputs(paths)?;
    let mut all = Xxh3::new();
    let mut keys = Vec::with_capacity(paths.len());
    for path in paths {
        let hash = source::content_hash(path)?;
        all.update(&hash.to_le_bytes());
        let key = format!(
            "{}:{}:{:012x}",
            format.source(),
            source::file_name(path),
            hash >> 80
        );
        keys.push(Text::from(key));
    }
    let derived = format!("import-{:016x}", all.digest128() >> 64);
    let run_id: Text = options.run_id.as_deref().unwrap_or(&derived).into();
    let run = RunIdentity {
        session_id: run_id.clone(),
        run_id,
    };
    let mut count = 0u64;
    let mut counting = |r: InferenceRecord| -> Result<()> {
        count += 1;
        sink(r)
    };
    let mut inputs = Vec::with_capacity(paths.len());
    for (input, (path, key)) in paths.iter().zip(keys).enumerate() {
        let mut report = |phase: Phase, bytes_read: u64, bytes_total: u64| {
            progress(Progress {
                input,
                inputs: paths.len(),
                phase,
                bytes_read,
                bytes_total,
            });
        };
        let mut on_scanned = |facts: &TraceFacts, sink: &mut Sink<'_>| -> Result<()> {
            if input == 0 {
                sink(artifact_record(&run, facts))?;
            }
            Ok(())
        };
        let summary = match format {
            TraceFormat::Kineto => kineto::import_one(
                path,
                key,
                &run,
                options,
                &mut counting,
                &mut report,
                &mut on_scanned,
            )?,
            TraceFormat::Nsys => nsys::import_one(
                path,
                key,
                &run,
                options,
                &mut counting,
                &mut report,
                &mut on_scanned,
            )?,
        };
        inputs.push(summary);
    }
    Ok(ImportSummary {
        run_id: run.run_id.to_string(),
        session_id: run.session_id.to_string(),
        detail: options.detail,
        records: count,
        inputs,
    })
}

/// The identity record: created at the first input's earliest timestamp, so that the same
/// inputs give a byte-identical artifact.
fn artifact_record(run: &RunIdentity, facts: &TraceFacts) -> InferenceRecord {
    let context = Arc::new(CorrelationContext {
        run_id: run.run_id.clone(),
        session_id: run.session_id.clone(),
        producer_id: "tally.trace.import".into(),
        source: "tally".into(),
        clock_domain: facts.clock_domain.clone(),
        clock_kind: ClockKind::Monotonic,
        collection_mode: CollectionMode::Imported,
        provenance: Provenance::Observed,
        source_version: Some(concat!("tally-import ", env!("CARGO_PKG_VERSION")).into()),
        engine: None,
        engine_version: None,
        backend: None,
        backend_version: None,
        host: facts.host.clone(),
        device_uuid: None,
        pid: None,
        rank: None,
        local_rank: None,
        world_size: None,
    });
    let body = EventBody::Artifact(ArtifactIdentityEvent {
        artifact_kind: ARTIFACT_KIND.into(),
        created_at_ns: facts.earliest_ns.unwrap_or(0).max(0),
    });
    record(context, "artifact".into(), Metadata::empty(), body)
}
