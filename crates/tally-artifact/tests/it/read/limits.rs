//! The input bounds of the reader: no line longer than `MAX_LINE_BYTES`, found in bounded memory
//! whatever the input (bytes, a mapped file, gzip, an endless device), with its file and line;
//! and files whose size the kernel does not know (`/proc`) read to their end.

use std::io::Write;

use tally_artifact::read::{
    Input, MAX_LINE_BYTES, for_each_record, parse_json_lines, resolve_file, resolve_input,
};
use tally_evidence::{Error, Resolver};

use super::{ITERATION, options, read_with, v2};

const MIB: usize = 1 << 20;

/// The message after `<FILE>: line N: `.
fn too_long() -> String {
    format!(
        "the line is longer than 16 MiB ({MAX_LINE_BYTES} bytes), the longest line tally reads \
         (one record per line); is this a JSONL evidence artifact?"
    )
}

/// `before` lines, then a blank line of `len` spaces ended by `end`, then a record.
fn with_long_line(before: usize, len: usize, end: &str) -> Vec<u8> {
    let it = v2("infer.iteration", ITERATION);
    let mut bytes = Vec::with_capacity(len + 4096);
    for _ in 0..before {
        bytes.extend_from_slice(it.as_bytes());
        bytes.push(b'\n');
    }
    bytes.resize(bytes.len() + len, b' ');
    bytes.extend_from_slice(end.as_bytes());
    bytes.extend_from_slice(it.as_bytes());
    bytes.push(b'\n');
    bytes
}

fn records(result: Result<Vec<(u64, tally_evidence::InferenceRecord)>, Error>) -> Vec<u64> {
    result.unwrap().into_iter().map(|(line, _)| line).collect()
}

#[test]
fn the_longest_line_is_read_and_one_byte_more_is_refused_with_its_line() {
    for (batch, end) in [(MIB, "\n"), (MIB, "\r\n"), (MIB, "\r"), (64 * MIB, "\n")] {
        let options = options(batch, 2);
        let fits = with_long_line(3, MAX_LINE_BYTES, end);
        assert_eq!(records(read_with(&fits, &options)), [1, 2, 3, 5], "{end:?}");
        let over = with_long_line(3, MAX_LINE_BYTES + 1, end);
        let err = read_with(&over, &options).unwrap_err();
        assert!(matches!(err, Error::OutOfRange { .. }), "{err:?}");
        assert_eq!(err.to_string(), format!("t: line 4: {}", too_long()));
    }
    // The last line, without a terminator.
    let mut last = with_long_line(1, 0, "\n");
    last.resize(last.len() + MAX_LINE_BYTES + 1, b' ');
    let err = read_with(&last, &options(MIB, 1)).unwrap_err();
    assert_eq!(err.to_string(), format!("t: line 4: {}", too_long()));
}

#[test]
fn files_and_gzip_streams_stop_at_the_long_line() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("long.jsonl");
    std::fs::write(&plain, with_long_line(2, MAX_LINE_BYTES + 1, "\n")).unwrap();
    let gzip = dir.path().join("long.jsonl.gz");
    let mut encoder = flate2::write::GzEncoder::new(
        std::fs::File::create(&gzip).unwrap(),
        flate2::Compression::fast(),
    );
    encoder
        .write_all(&with_long_line(2, 3 * MAX_LINE_BYTES, "\n"))
        .unwrap();
    encoder.finish().unwrap();
    for path in [&plain, &gzip] {
        let input = Input::Path(path.clone());
        let err = for_each_record(&input, |_, _| Ok(())).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("{}: line 3: {}", path.display(), too_long())
        );
        let err = resolve_input(&input, &mut Resolver::new()).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("{}: line 3: {}", path.display(), too_long())
        );
        let err = parse_json_lines(&input).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("{}: line 3: {}", path.display(), too_long())
        );
    }
}

#[test]
fn an_endless_device_is_refused_at_its_first_line() {
    // `/dev/zero` never ends a line: without the bound the reader would fill the memory.
    let input = Input::Path("/dev/zero".into());
    let err = for_each_record(&input, |_, _| Ok(())).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("/dev/zero: line 1: {}", too_long())
    );
    let mut events = tally_artifact::read::iter_inference_events(&input, None).unwrap();
    let err = events.next().unwrap().unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("/dev/zero: line 1: {}", too_long())
    );
    assert!(events.next().is_none());
}

#[test]
fn a_file_that_reports_size_zero_is_read_to_its_end() {
    // `/proc/cpuinfo` has a size of 0 and text in it: it is not an empty artifact.
    let input = Input::Path("/proc/cpuinfo".into());
    let err = for_each_record(&input, |_, _| Ok(())).unwrap_err();
    assert!(
        err.to_string().starts_with("/proc/cpuinfo: line 1: "),
        "{err}"
    );
    // An open file is read from the same source.
    let file = std::fs::File::open("/proc/cpuinfo").unwrap();
    let err = resolve_file(file, "cpuinfo", &mut Resolver::new()).unwrap_err();
    assert!(err.to_string().starts_with("cpuinfo: line 1: "), "{err}");
    // A really empty file is still an empty artifact.
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    for_each_record(&Input::Path(empty), |_, _| panic!("no record")).unwrap();
}

#[test]
fn an_open_file_reads_like_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.jsonl");
    let it = v2("infer.iteration", ITERATION);
    std::fs::write(&path, format!("{it}\n{{broken\n")).unwrap();
    let file = std::fs::File::open(&path).unwrap();
    let err = resolve_file(file, "a", &mut Resolver::new()).unwrap_err();
    assert!(err.to_string().starts_with("a: line 2: "), "{err}");
}
