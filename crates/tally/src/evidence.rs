//! The binary's bridge to `tally-artifact` and `tally-evidence`: turns command-line paths into
//! reader inputs and feeds every record of every file, in order, to one resolver (each file is
//! read on its own terms — its own line numbers and v4 contexts — and all records resolve
//! together: `docs/cli.md`); and the campaign half's [`Accountant`], the one place where the two
//! halves meet.

use std::path::Path;

use tally_artifact::read::{self, Input};
use tally_contract::{Evidence, EvidenceAccountant};
use tally_evidence::{CorrelationGraph, InferenceRecord, Origin, Resolver, account_gpu_time};

/// The reader input for a command-line path (`-` is standard input). A standard input that was
/// closed when tally started (`<&-`) is refused: it is no artifact, not an empty one.
pub fn input(path: &Path) -> tally_evidence::Result<Input> {
    if path.as_os_str() != "-" {
        return Ok(Input::Path(path.to_path_buf()));
    }
    if crate::stdin::closed_at_start() {
        return Err(tally_evidence::Error::Io {
            name: "-".into(),
            source: std::io::Error::other(
                "standard input is closed; pipe an artifact in (`... | tally trace account -`) \
                 or name a file",
            ),
        });
    }
    Ok(Input::Stdin)
}

/// Streams every record of one file, in file order, to `sink`.
pub fn for_each_record(
    path: &Path,
    sink: impl FnMut(Origin, InferenceRecord) -> tally_evidence::Result<()>,
) -> tally_evidence::Result<()> {
    read::for_each_record(&input(path)?, sink)
}

/// Reads all files and resolves their records as one artifact. The error is the reference's,
/// which reads every file before it resolves: the first line that cannot be read, in file order,
/// and only when every line of every file can be read, the first error of resolution.
pub fn resolve_files(paths: &[impl AsRef<Path>]) -> tally_evidence::Result<CorrelationGraph> {
    let mut resolver = Resolver::new();
    for (k, path) in paths.iter().enumerate() {
        if let Err(error) = read::resolve_input(&input(path.as_ref())?, &mut resolver) {
            // `resolve_input` has read this file to its end; the later ones are only read.
            if error.is_resolution() {
                for later in &paths[k + 1..] {
                    read::for_each_record(&input(later.as_ref())?, |_, _| Ok(()))?;
                }
            }
            return Err(error);
        }
    }
    Ok(resolver.finish())
}

/// Accounts the evidence artifacts of campaign measurements — those an evaluate command hands
/// over at `TALLY_EVIDENCE_FILE`, and those of `tally measurement add` — with the same resolution
/// and accounting as `tally trace account`.
pub struct Accountant;

impl EvidenceAccountant for Accountant {
    /// The artifact's GPU busy time: the sum over its device clocks of `busy_ns`. The error is the
    /// reader's (`<path>: line N: <message>`, as `tally trace account` prints it). The artifact
    /// must be a regular file, opened without blocking and checked on its descriptor (the
    /// hand-over rules of `docs/evaluate-protocol.md` §4c): a FIFO named by a report would
    /// otherwise wait for a writer for good.
    fn account(&self, path: &Path) -> Result<Evidence, String> {
        let name = path.display().to_string();
        let (file, _) = tally_runner::handover::open_regular(path)
            .and_then(|opened| opened.ok_or_else(|| "it does not exist".to_owned()))
            .map_err(|why| format!("{name}: {why}"))?;
        let mut resolver = Resolver::new();
        read::resolve_file(file, &name, &mut resolver).map_err(|err| err.to_string())?;
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unreadable_artifact_names_the_file_and_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("e.jsonl");
        std::fs::write(&path, "\n{not json\n").unwrap();
        let why = Accountant.account(&path).unwrap_err();
        assert!(
            why.starts_with(&format!("{}: line 2: ", path.display())),
            "{why}"
        );
    }
}
