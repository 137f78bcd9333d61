//! The binary's bridge to `tally-artifact` and `tally-evidence`: turns command-line paths into
//! reader inputs and feeds every record of every file, in order, to one resolver
//! (`evidence-cli.md`: each file is read on its own terms — its own line numbers and v4 contexts —
//! and all records resolve together).

use std::path::Path;

use tally_artifact::read::{self, Input};
use tally_evidence::{CorrelationGraph, InferenceRecord, Origin, Resolver};

/// The reader input for a command-line path (`-` is standard input).
pub fn input(path: &Path) -> Input {
    if path.as_os_str() == "-" {
        Input::Stdin
    } else {
        Input::Path(path.to_path_buf())
    }
}

/// Streams every record of one file, in file order, to `sink`.
pub fn for_each_record(
    path: &Path,
    sink: impl FnMut(Origin, InferenceRecord) -> tally_evidence::Result<()>,
) -> tally_evidence::Result<()> {
    read::for_each_record(&input(path), sink)
}

/// Reads all files and resolves their records as one artifact. The error is the reference's,
/// which reads every file before it resolves: the first line that cannot be read, in file order,
/// and only when every line of every file can be read, the first error of resolution.
pub fn resolve_files(paths: &[impl AsRef<Path>]) -> tally_evidence::Result<CorrelationGraph> {
    let mut resolver = Resolver::new();
    for (k, path) in paths.iter().enumerate() {
        if let Err(error) = read::resolve_input(&input(path.as_ref()), &mut resolver) {
            // `resolve_input` has read this file to its end; the later ones are only read.
            if error.is_resolution() {
                for later in &paths[k + 1..] {
                    read::for_each_record(&input(later.as_ref()), |_, _| Ok(()))?;
                }
            }
            return Err(error);
        }
    }
    Ok(resolver.finish())
}
