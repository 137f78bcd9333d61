//! Writing an output file all or nothing: into a temporary file beside it, renamed into place
//! only when everything was written, so a failure never leaves a partial file behind. `-` writes
//! to standard output.

use std::io::{self, BufWriter, Write};
use std::path::Path;

use anyhow::Context;

/// Calls `write` with a buffered writer for `path` and puts the file in place when it succeeds.
pub fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    if path.as_os_str() == "-" {
        let mut out = BufWriter::new(io::stdout().lock());
        write(&mut out)?;
        out.flush()?;
        return Ok(());
    }
    let name = path.display().to_string();
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let temp = tempfile::NamedTempFile::new_in(&dir)
        .with_context(|| format!("{name}: cannot create a file in {}", dir.display()))?;
    {
        let mut out = BufWriter::new(temp.as_file());
        write(&mut out)?;
        out.flush()
            .with_context(|| format!("{name}: write failed"))?;
    }
    // A temporary file is created private (0600); the output is an ordinary file.
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(temp.path(), std::fs::Permissions::from_mode(0o644))
            .with_context(|| format!("{name}: cannot set its permissions"))?;
    }
    temp.persist(path)
        .with_context(|| format!("{name}: cannot move the output into place"))?;
    Ok(())
}
