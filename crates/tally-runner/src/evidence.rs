//! The evidence hand-over, where the two halves of tally meet: an evaluate command may write an
//! inference evidence artifact (the JSONL of `docs/evidence.md`, any schema version, plain or gzip) at
//! the path it is given as `TALLY_EVIDENCE_FILE`. After an attempt that otherwise succeeded, tally
//! keeps the file next to the attempt's logs and has the runner's
//! [`EvidenceAccountant`](tally_contract::EvidenceAccountant) account it (the binary's reads
//! it with `tally-artifact` and accounts it with `tally-evidence`: the same resolution and
//! accounting as `tally trace account`), so the
//! measurement records the GPU busy time behind it, not only its wall time.
//!
//! Owns: moving the file out of the attempt directory (which is removed). An artifact that
//! cannot be read or resolved fails the attempt with the accountant's error, which names the
//! kept file and the line; the file stays for the user to look at.

use std::io;
use std::path::Path;

/// The environment variable naming the evidence file.
pub(crate) const EVIDENCE_VAR: &str = "TALLY_EVIDENCE_FILE";

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
}
