//! Shared test support: running the binary, finding `shared/`.

use std::path::PathBuf;
use std::process::{Command, Output};

/// The `shared/` directory beside the repository (`TALLY_SHARED_DIR` overrides).
pub fn shared_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("TALLY_SHARED_DIR") {
        return PathBuf::from(dir);
    }
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared");
    assert!(
        dir.is_dir(),
        "shared/ not found at {}; set TALLY_SHARED_DIR",
        dir.display()
    );
    dir
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
