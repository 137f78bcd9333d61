//! The evidence hand-over, where the two halves of tally meet: an evaluate command may write an
//! inference evidence artifact (the JSONL of `docs/evidence.md`, any schema version, plain or gzip) at
//! the path it is given as `TALLY_EVIDENCE_FILE`. After an attempt that otherwise succeeded, tally
//! keeps the file next to the attempt's logs and has the runner's
//! [`EvidenceAccountant`](tally_contract::EvidenceAccountant) account it (the binary's reads
//! it with `tally-artifact` and accounts it with `tally-evidence`: the same resolution and
//! accounting as `tally trace account`), so the
//! measurement records the GPU busy time behind it, not only its wall time.
//!
//! Owns: taking the file out of the attempt directory (which is removed), by the hand-over rules
//! of [`crate::handover`]: opened without blocking, a regular file (else the sample fails with
//! what it is, and nothing is kept), at most [`MAX_EVIDENCE_BYTES`]. The file itself is moved;
//! what a symbolic link names is copied from the descriptor that was checked, so the kept file
//! is always a regular file of the runner's. An artifact that cannot be read or resolved fails
//! the attempt with the accountant's error, which names the kept file and the line; the file
//! stays for the user to look at.

use std::fs::File;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::handover::{self, MAX_EVIDENCE_BYTES};

/// The environment variable naming the evidence file.
pub(crate) const EVIDENCE_VAR: &str = "TALLY_EVIDENCE_FILE";

/// How the evidence file is named in reasons.
const WHAT: &str = "an evidence file";

/// Takes the file the command left at `written` to `kept` (creating its directory); `Ok(false)`
/// when the command wrote none, `Err(why)` (one clause) when it cannot be taken.
pub(crate) fn keep(written: &Path, kept: &Path) -> Result<bool, String> {
    let Some((file, meta)) = handover::open_regular(written)? else {
        return Ok(false);
    };
    if meta.len() > MAX_EVIDENCE_BYTES {
        return Err(handover::too_large(MAX_EVIDENCE_BYTES, WHAT));
    }
    if let Some(dir) = kept.parent() {
        fs_err::create_dir_all(dir).map_err(|err| format!("it could not be kept ({err})"))?;
    }
    // The path itself is the file that was checked (not a link to one): move it, which costs
    // nothing whatever its size, unless the log directory is on another file system.
    let same = fs_err::symlink_metadata(written)
        .is_ok_and(|own| own.is_file() && own.dev() == meta.dev() && own.ino() == meta.ino());
    if same && fs_err::rename(written, kept).is_ok() {
        return Ok(true);
    }
    copy_bounded(&file, kept)?;
    Ok(true)
}

/// Copies an open file to `kept`, at most [`MAX_EVIDENCE_BYTES`] (a file of `/proc` reports
/// size 0 whatever it holds); a file that holds more is refused and nothing is kept.
fn copy_bounded(file: &File, kept: &Path) -> Result<(), String> {
    let mut out =
        fs_err::File::create(kept).map_err(|err| format!("it could not be kept ({err})"))?;
    let copied = io::copy(&mut io::Read::take(file, MAX_EVIDENCE_BYTES + 1), &mut out)
        .map_err(|err| format!("it could not be copied to {} ({err})", kept.display()));
    let refused = match copied {
        Ok(n) if n > MAX_EVIDENCE_BYTES => Some(handover::too_large(MAX_EVIDENCE_BYTES, WHAT)),
        Ok(_) => None,
        Err(why) => Some(why),
    };
    match refused {
        None => Ok(()),
        Some(why) => {
            drop(out);
            let _ = fs_err::remove_file(kept);
            Err(why)
        }
    }
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
    fn a_link_is_kept_as_a_copy_of_what_it_names_and_a_fifo_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let original = dir.path().join("trace.jsonl");
        fs_err::write(&original, "x\n").unwrap();
        let written = dir.path().join("evidence.jsonl");
        std::os::unix::fs::symlink(&original, &written).unwrap();
        let kept = dir.path().join("logs/kept.jsonl");
        assert_eq!(keep(&written, &kept), Ok(true));
        assert!(!fs_err::symlink_metadata(&kept).unwrap().is_symlink());
        assert_eq!(fs_err::read_to_string(&kept).unwrap(), "x\n");
        assert_eq!(fs_err::read_to_string(&original).unwrap(), "x\n");

        let fifo = dir.path().join("fifo.jsonl");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        assert_eq!(
            keep(&fifo, &dir.path().join("logs/fifo.jsonl")),
            Err("it is a FIFO (named pipe), not a regular file".into())
        );
        assert!(!dir.path().join("logs/fifo.jsonl").exists());
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
