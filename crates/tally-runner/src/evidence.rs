//! The evidence hand-over, where the two halves of tally meet: an evaluate command may write an
//! inference evidence artifact (the JSONL of `evidence.md`, any schema version, plain or gzip) at
//! the path it is given as `TALLY_EVIDENCE_FILE`. After an attempt that otherwise succeeded, tally
//! keeps the file next to the attempt's logs and accounts it with `tally-evidence` (the same
//! resolution and accounting as `tally trace account`), so the measurement records the GPU busy
//! time behind it, not only its wall time.
//!
//! The GPU busy time of an artifact is the sum over its device clocks of `busy_ns` (the union of
//! each device's busy intervals, `docs/evidence.md#accounting`): GPU-time in the sense of GPU-seconds, with
//! overlapping kernels on one device counted once and two devices counted twice.
//!
//! Owns: moving the file out of the attempt directory (which is removed) and the accounting.
//! An artifact that cannot be read or resolved fails the attempt with the reader's error, which
//! names the kept file and the line; the file stays for the user to look at.

use std::io;
use std::path::Path;

use tally_artifact::read::{self, Input};
use tally_evidence::{Resolver, account_gpu_time};

/// The environment variable naming the evidence file.
pub(crate) const EVIDENCE_VAR: &str = "TALLY_EVIDENCE_FILE";

/// What an evidence artifact accounts for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evidence {
    /// GPU busy time: the sum over the artifact's device clocks of the union of their busy
    /// intervals, in nanoseconds.
    pub gpu_busy_ns: u64,
    /// Device clocks (device and clock domain) with measurable GPU activity.
    pub devices: usize,
}

/// Moves the file the command wrote at `written` to `kept` (creating its directory); `Ok(false)`
/// when the command wrote none.
pub(crate) fn keep(written: &Path, kept: &Path) -> Result<bool, String> {
    match fs_err::metadata(written) {
        Ok(_) => {}
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(err) => return Err(err.to_string()),
    }
    if let Some(dir) = kept.parent() {
        fs_err::create_dir_all(dir).map_err(|err| err.to_string())?;
    }
    // The attempt directory and the log directory may lie on different file systems.
    if fs_err::rename(written, kept).is_err() {
        fs_err::copy(written, kept).map_err(|err| err.to_string())?;
        fs_err::remove_file(written).map_err(|err| err.to_string())?;
    }
    Ok(true)
}

/// Resolves and accounts the artifact at `path`: its GPU busy time. The error is the reader's
/// (`<path>: line N: <message>`, as `tally trace account` prints it).
pub fn account(path: &Path) -> Result<Evidence, String> {
    let mut resolver = Resolver::new();
    read::resolve_input(&Input::Path(path.to_path_buf()), &mut resolver)
        .map_err(|err| err.to_string())?;
    let graph = resolver.finish();
    let accounting = account_gpu_time(&graph).map_err(|err| err.to_string())?;
    let gpu_busy_ns = accounting
        .device_totals
        .values()
        .try_fold(0u64, |sum, time| sum.checked_add(time.busy_ns))
        .ok_or_else(|| "its GPU busy time does not fit in 64 bits of nanoseconds".to_owned())?;
    Ok(Evidence {
        gpu_busy_ns,
        devices: accounting.device_totals.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_file_is_no_evidence() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            keep(&dir.path().join("evidence.jsonl"), &dir.path().join("kept")),
            Ok(false)
        );
    }

    #[test]
    fn a_kept_file_leaves_the_attempt_directory() {
        let dir = tempfile::tempdir().unwrap();
        let written = dir.path().join("attempt/evidence.jsonl");
        let kept = dir.path().join("logs/deep/candidate-0-a1.evidence.jsonl");
        fs_err::create_dir_all(written.parent().unwrap()).unwrap();
        fs_err::write(&written, "x").unwrap();
        assert_eq!(keep(&written, &kept), Ok(true));
        assert!(!written.exists());
        assert_eq!(fs_err::read_to_string(&kept).unwrap(), "x");
    }

    #[test]
    fn an_unreadable_artifact_names_the_file_and_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("e.jsonl");
        fs_err::write(&path, "\n{not json\n").unwrap();
        let why = account(&path).unwrap_err();
        assert!(
            why.starts_with(&format!("{}: line 2: ", path.display())),
            "{why}"
        );
    }
}
