//! Truncated and corrupt inputs give one clear error naming the file and the position, never a
//! panic.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use tally_import::{Error, ImportOptions, TraceFormat, import_to_vec};

use crate::corpus::trace;

fn gunzip(path: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_end(&mut out)
        .unwrap();
    out
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::File::create(&path)
        .unwrap()
        .write_all(bytes)
        .unwrap();
    path
}

fn kineto(path: &Path) -> Result<(), Error> {
    import_to_vec(
        TraceFormat::Kineto,
        &[path.to_path_buf()],
        &ImportOptions::default(),
    )
    .map(|_| ())
}

fn nsys(path: &Path) -> Result<(), Error> {
    import_to_vec(
        TraceFormat::Nsys,
        &[path.to_path_buf()],
        &ImportOptions::default(),
    )
    .map(|_| ())
}

#[test]
fn a_gzip_trace_cut_in_the_middle_names_the_file_and_the_byte() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(trace("hta_nccl_rank0.json.gz")).unwrap();
    let path = write(dir.path(), "cut.json.gz", &bytes[..bytes.len() / 2]);
    let err = kineto(&path).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, Error::Corrupt { .. }), "{text}");
    assert!(
        text.starts_with(&format!(
            "{}: truncated or corrupt trace file at ",
            path.display()
        )),
        "{text}"
    );
    assert!(text.contains("byte ") || text.contains("line "), "{text}");
}

#[test]
fn a_plain_trace_cut_in_the_middle_names_the_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let json = gunzip(&trace("hta_amd_mi250_rocm.json.gz"));
    let path = write(dir.path(), "cut.json", &json[..json.len() / 2]);
    let text = kineto(&path).unwrap_err().to_string();
    assert!(
        text.contains("cut.json: truncated or corrupt trace file at line "),
        "{text}"
    );
    assert!(text.contains("column"), "{text}");
}

#[test]
fn flipped_bytes_give_an_error_or_a_result_never_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let json = gunzip(&trace("hta_amd_mi250_rocm.json.gz"));
    let gz = std::fs::read(trace("hta_amd_mi250_rocm.json.gz")).unwrap();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut errors = 0;
    for round in 0..60 {
        let (source, name) = if round % 2 == 0 {
            (&json, "flip.json")
        } else {
            (&gz, "flip.json.gz")
        };
        let mut bytes = source.clone();
        for _ in 0..3 {
            let at = (next() as usize) % bytes.len();
            bytes[at] ^= 1 << (next() % 8);
        }
        let path = write(dir.path(), name, &bytes);
        if let Err(err) = kineto(&path) {
            errors += 1;
            assert!(err.to_string().contains(name), "{err}");
        }
    }
    assert!(errors > 0);
}

#[test]
fn a_bad_event_names_its_index_and_position() {
    let dir = tempfile::tempdir().unwrap();
    let text = r#"{"traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1},
  {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 5, "dur": -2, "args": {"device": 0}}
]}"#;
    let path = write(dir.path(), "neg.json", text.as_bytes());
    let err = kineto(&path).unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, Error::Malformed { .. }), "{message}");
    assert!(
        message.contains("neg.json: traceEvents[1] at line 3 column 3"),
        "{message}"
    );
    assert!(message.contains("negative dur -2"), "{message}");
    let path = write(
        dir.path(),
        "nots.json",
        br#"{"traceEvents": [{"ph": "X", "cat": "kernel", "ts": "x"}]}"#,
    );
    let message = kineto(&path).unwrap_err().to_string();
    assert!(
        message.contains("traceEvents[0]") && message.contains("ts:"),
        "{message}"
    );
}

#[test]
fn other_json_is_not_a_kineto_trace() {
    let dir = tempfile::tempdir().unwrap();
    for (name, body) in [
        ("list.json", "[1, 2]"),
        ("obj.json", r#"{"events": []}"#),
        ("te.json", r#"{"traceEvents": 3}"#),
    ] {
        let path = write(dir.path(), name, body.as_bytes());
        let message = kineto(&path).unwrap_err().to_string();
        assert!(
            message.starts_with(&path.display().to_string()),
            "{message}"
        );
        assert!(message.contains("not a Kineto trace"), "{message}");
    }
    let path = write(dir.path(), "trail.json", br#"{"traceEvents": []} x"#);
    let message = kineto(&path).unwrap_err().to_string();
    assert!(
        message.contains("trail.json: truncated or corrupt trace file at line 1 column"),
        "{message}"
    );
}

#[test]
fn broken_nsight_exports_are_refused_with_the_file_name() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(trace("pipit_saxpy_mpi_nsys.sqlite.gz")).unwrap();
    let path = write(dir.path(), "cut.sqlite.gz", &bytes[..bytes.len() / 2]);
    let message = nsys(&path).unwrap_err().to_string();
    assert!(
        message.starts_with(&format!("{}: ", path.display())),
        "{message}"
    );
    let db = gunzip(&trace("pipit_saxpy_mpi_nsys.sqlite.gz"));
    let path = write(dir.path(), "cut.sqlite", &db[..db.len() / 3]);
    let message = nsys(&path).unwrap_err().to_string();
    assert!(
        message.starts_with(&format!("{}: ", path.display())),
        "{message}"
    );
    let path = write(
        dir.path(),
        "junk.sqlite",
        b"this is not a database at all, not even close...........",
    );
    let message = nsys(&path).unwrap_err().to_string();
    assert!(
        message.contains("junk.sqlite: not an Nsight Systems SQLite export"),
        "{message}"
    );
    let empty = dir.path().join("empty.sqlite");
    rusqlite::Connection::open(&empty)
        .unwrap()
        .execute_batch("CREATE TABLE x (a)")
        .unwrap();
    let message = nsys(&empty).unwrap_err().to_string();
    assert!(
        message.contains("empty.sqlite: not an Nsight Systems SQLite export"),
        "{message}"
    );
}
