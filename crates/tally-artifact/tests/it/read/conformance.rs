//! The shared conformance files: the refused ones fail with the reference's message, the others
//! load with the reference's record counts; gzip input and streams read the same as plain files.

use std::io::Write;

use tally_artifact::read::{
    CorrelationRecordDecoder, Input, for_each_record, for_each_record_with, iter_inference_events,
    load_inference_artifact,
};
use tally_evidence::{EventType, InferenceRecord};

use super::conformance_dir;

fn expected_error(name: &str) -> String {
    let path = conformance_dir().join(format!("{name}.expected.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let value: serde_json::Value = serde_json::from_str(&text).expect("expected JSON");
    value["error"].as_str().expect("an error case").to_owned()
}

fn load_error(name: &str) -> (String, String) {
    let path = conformance_dir().join(format!("{name}.jsonl"));
    let e = load_inference_artifact(&path).expect_err("refused");
    let prefix = format!("{}: ", path.display());
    let shown = e.to_string();
    let rest = shown
        .strip_prefix(&prefix)
        .expect("the file name first")
        .to_owned();
    (rest, expected_error(name))
}

#[test]
fn refused_cases_give_the_reference_message() {
    for name in [
        "05b-intervals-need-v3",
        "05c-v3-needs-intervals",
        "06b-v4-forward-reference",
    ] {
        let (got, expected) = load_error(name);
        assert_eq!(got, expected, "{name}");
    }
    // A JSON syntax error: only the line prefix is contractual.
    let (got, expected) = load_error("10-line-numbers");
    assert!(expected.starts_with("line 4: "));
    assert!(got.starts_with("line 4: "), "{got}");
}

/// `(file, records, legacy records)`, as stormlog 0.4.3's `load_inference_artifact` counts them.
const VALID: [(&str, usize, usize); 14] = [
    ("01-overlap", 5, 0),
    ("02-dedup-tiebreak", 6, 0),
    ("03a-conflicting-event", 2, 0),
    ("03b-conflicting-entity", 2, 0),
    ("04-measurability", 9, 0),
    ("05-intervals", 6, 0),
    ("06-v4-alias", 2, 0),
    ("07-unresolved-order", 5, 0),
    ("08a-legacy-only", 2, 2),
    ("08b-two-runs", 2, 0),
    ("09-elapsed", 4, 0),
    ("20-generated-v2", 6237, 0),
    ("21-generated-v4-dup-shuffle", 7263, 0),
    ("22-generated-legacy-dup", 4645, 20),
];

#[test]
fn valid_cases_load_with_the_reference_counts() {
    for (name, total, legacy) in VALID {
        let records = load_inference_artifact(conformance_dir().join(format!("{name}.jsonl")))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let legacy_count = records
            .iter()
            .filter(|r| matches!(r, InferenceRecord::Legacy(_)))
            .count();
        assert_eq!((records.len(), legacy_count), (total, legacy), "{name}");
    }
}

#[test]
fn v4_aliases_share_one_context() {
    let records = load_inference_artifact(conformance_dir().join("06-v4-alias.jsonl")).unwrap();
    let [InferenceRecord::Event(k1), InferenceRecord::Event(k2)] = records.as_slice() else {
        panic!("two events")
    };
    assert!(std::sync::Arc::ptr_eq(k1.context_arc(), k2.context_arc()));
    assert_eq!(k1.schema_version(), 2);
    assert_eq!(k2.schema_version(), 3);
    assert_eq!(k2.event_type(), EventType::Activity);
}

#[test]
fn the_iterator_yields_what_the_sink_gets() {
    let input = Input::Path(conformance_dir().join("22-generated-legacy-dup.jsonl"));
    let mut via_sink = Vec::new();
    for_each_record(&input, |origin, record| {
        via_sink.push((origin, record));
        Ok(())
    })
    .unwrap();
    let via_iter: Vec<_> = iter_inference_events(&input, None)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(via_sink, via_iter);
    assert_eq!(via_sink[0].0.line, Some(1));
    assert_eq!(via_sink.last().unwrap().0.line, Some(4645));

    let failing = Input::Path(conformance_dir().join("10-line-numbers.jsonl"));
    let items: Vec<_> = iter_inference_events(&failing, None).unwrap().collect();
    assert_eq!(items.len(), 2);
    assert_eq!(items[0].as_ref().unwrap().0.line, Some(2));
    let message = items[1].as_ref().unwrap_err().message();
    assert!(message.starts_with("key must be a string"), "{message}");
}

#[test]
fn gzip_reads_like_plain_whatever_its_name() {
    let plain_path = conformance_dir().join("21-generated-v4-dup-shuffle.jsonl");
    let plain = load_inference_artifact(&plain_path).unwrap();
    let bytes = std::fs::read(&plain_path).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for name in ["a.jsonl.gz", "no-suffix.jsonl"] {
        let path = dir.path().join(name);
        let mut gz = flate2::write::GzEncoder::new(
            std::fs::File::create(&path).unwrap(),
            flate2::Compression::fast(),
        );
        gz.write_all(&bytes).unwrap();
        gz.finish().unwrap();
        assert_eq!(load_inference_artifact(&path).unwrap(), plain, "{name}");
    }
    // A gzip file with a bad line reports the line, named by the path.
    let path = dir.path().join("bad.gz");
    let mut gz = flate2::write::GzEncoder::new(
        std::fs::File::create(&path).unwrap(),
        flate2::Compression::fast(),
    );
    gz.write_all(&bytes).unwrap();
    gz.write_all(b"\n{not json\n").unwrap();
    gz.finish().unwrap();
    let e = load_inference_artifact(&path).unwrap_err().to_string();
    let expected = format!("{}: line 7285: ", path.display());
    assert!(e.starts_with(&expected), "{e}");
}

/// Reads `bytes` through a FIFO (a stream that cannot be mapped), written by another thread.
fn read_through_fifo(bytes: Vec<u8>, batch_bytes: usize) -> Vec<(u64, InferenceRecord)> {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe.jsonl");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    let writer_path = fifo.clone();
    let writer = std::thread::spawn(move || std::fs::write(writer_path, bytes).unwrap());
    let mut out = Vec::new();
    for_each_record_with(
        &Input::Path(fifo),
        &super::options(batch_bytes, 2),
        &mut CorrelationRecordDecoder::new(),
        |origin, record| {
            out.push((origin.line.unwrap(), record));
            Ok(())
        },
    )
    .unwrap();
    writer.join().unwrap();
    out
}

#[test]
fn streams_read_like_mapped_files_plain_or_gzip() {
    let path = conformance_dir().join("21-generated-v4-dup-shuffle.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    // Mixed line ends, so that batch cuts fall between `\r` and `\n` too.
    let mut mixed = String::new();
    for (i, line) in text.lines().take(800).enumerate() {
        mixed.push_str(line);
        mixed.push_str(["\n", "\r\n", "\r"][i % 3]);
    }
    let expected = super::read(&mixed).unwrap();
    assert_eq!(
        expected.len(),
        787,
        "13 definitions among the first 800 lines"
    );
    for batch in [1, 97, 4096, 1 << 20] {
        assert_eq!(
            read_through_fifo(mixed.clone().into_bytes(), batch),
            expected,
            "batch {batch}"
        );
    }
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(mixed.as_bytes()).unwrap();
    assert_eq!(read_through_fifo(gz.finish().unwrap(), 333), expected);
}

#[test]
fn io_errors_name_the_input() {
    let e = load_inference_artifact("/nonexistent/x.jsonl").unwrap_err();
    assert!(e.to_string().starts_with("/nonexistent/x.jsonl: "), "{e}");
    assert_eq!(Input::from_arg("-"), Input::Stdin);
    assert_eq!(Input::Stdin.to_string(), "-");
    assert_eq!(Input::from_arg("a.jsonl").to_string(), "a.jsonl");
}
