//! Shared test support: running the binary, finding the repository's `testdata/`.

use std::path::PathBuf;
use std::process::{Command, Output};

/// The repository's `testdata/` directory (conformance cases and real traces; `testdata/README.md`).
pub fn testdata_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata")
}

/// Runs `tally ARGS...` and returns its output.
pub fn tally(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tally"))
        .args(args)
        .output()
        .expect("the tally binary runs")
}

/// Standard output as text.
pub fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).expect("stdout is UTF-8")
}

/// Standard error as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone()).expect("stderr is UTF-8")
}
