//! The JSONL reader (`tally_artifact::read`): conformance files, the error catalogue and check
//! order, the physical layer, Python-isms, and batch/thread independence.

mod batches;
mod catalogue;
mod check_order;
mod conformance;
mod field_messages;
mod limits;
mod physical;
mod resolving;

use std::num::NonZeroUsize;
use std::path::PathBuf;

use tally_artifact::read::{CorrelationRecordDecoder, ReadOptions, for_each_record_in_bytes};
use tally_evidence::{Error, InferenceRecord};

/// The repository's `testdata/` directory (`testdata/README.md`).
pub fn testdata_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata")
}

/// The conformance folder of the evidence half.
pub fn conformance_dir() -> PathBuf {
    testdata_dir().join("conformance/evidence")
}

/// Options with a batch size and thread count.
pub fn options(batch_bytes: usize, threads: usize) -> ReadOptions {
    ReadOptions {
        batch_bytes,
        threads: NonZeroUsize::new(threads),
    }
}

/// Reads `text` as a file named `t` with the given options: the records with their lines.
pub fn read_with(text: &[u8], options: &ReadOptions) -> Result<Vec<(u64, InferenceRecord)>, Error> {
    let mut out = Vec::new();
    for_each_record_in_bytes(
        "t",
        text,
        options,
        &mut CorrelationRecordDecoder::new(),
        |origin, record| {
            assert_eq!(origin.source.as_deref(), Some("t"));
            out.push((origin.line.expect("a line"), record));
            Ok(())
        },
    )?;
    Ok(out)
}

/// Reads `text` as a file named `t` with default options.
pub fn read(text: &str) -> Result<Vec<(u64, InferenceRecord)>, Error> {
    read_with(text.as_bytes(), &ReadOptions::default())
}

/// The error reading `text` gives, as the CLI prints it after `error: `.
pub fn error(text: &str) -> String {
    match read(text) {
        Ok(records) => panic!(
            "expected an error, read {} records from {text}",
            records.len()
        ),
        Err(e) => e.to_string(),
    }
}

/// Asserts that `text` fails at `line` with `message` (an `Error::Record`).
pub fn refused(text: &str, line: u64, message: &str) {
    let got = error(text);
    assert_eq!(got, format!("t: line {line}: {message}"), "input: {text}");
    let Err(Error::Record { .. }) = read(text) else {
        panic!("not a record error: {text}")
    };
}

pub fn ctx_with(member: &str) -> String {
    format!("{},{member}}}", &CTX[..CTX.len() - 1])
}

pub fn activity(version: u8, fields: &str) -> String {
    record(version, "infer.activity_ref", CTX, fields)
}

/// A valid context object (JSON text).
pub const CTX: &str = r#"{"run_id":"r","session_id":"s","producer_id":"eng","source":"src","clock_domain":"w/mono","clock_kind":"monotonic","collection_mode":"passive","provenance":"observed"}"#;

/// A v2 record of type `ty` with a valid context, `event_id` `e`, and `fields` (raw JSON members,
/// may be empty).
pub fn v2(ty: &str, fields: &str) -> String {
    record(2, ty, CTX, fields)
}

/// A record with an explicit version and context text.
pub fn record(version: u8, ty: &str, ctx: &str, fields: &str) -> String {
    let sep = if fields.is_empty() { "" } else { "," };
    format!(
        r#"{{"schema_version":{version},"event_type":"{ty}","context":{ctx},"event_id":"e"{sep}{fields}}}"#
    )
}

/// A v4 definition of `id` as [`CTX`].
pub fn definition(id: &str) -> String {
    format!(
        r#"{{"schema_version":4,"event_type":"infer.context","context_id":"{id}","context":{CTX}}}"#
    )
}

/// A compact v4 record of type `ty` naming context `id`.
pub fn compact(id: &str, ty: &str, fields: &str) -> String {
    let sep = if fields.is_empty() { "" } else { "," };
    format!(
        r#"{{"schema_version":4,"event_type":"{ty}","context_id":"{id}","event_id":"e"{sep}{fields}}}"#
    )
}

/// A valid iteration's own fields.
pub const ITERATION: &str =
    r#""iteration_ref":{"producer_id":"eng","id":"I1"},"start_ns":0,"end_ns":10"#;

/// A valid unresolved gpu activity's own fields.
pub const ACTIVITY: &str = r#""activity_ref":{"producer_id":"tr","id":"K1"},"activity_kind":"gpu_kernel","attribution_status":"unresolved","activity_domain":"gpu","start_ns":100,"end_ns":200"#;
