//! `tally bench convert --evidence RUN.jsonl -o EVIDENCE.jsonl`.

use std::io::Write;

use anyhow::Context;

use super::args::ConvertArgs;
use crate::exit::Status;
use crate::printer;

/// Converts a run's requests into evidence records; the output appears only when complete.
pub fn run(args: &ConvertArgs) -> anyhow::Result<Status> {
    let text = std::fs::read_to_string(&args.evidence)
        .with_context(|| format!("{}", args.evidence.display()))?;
    let records = tally_bench::convert::convert(&text)
        .with_context(|| format!("{}", args.evidence.display()))?;
    let dir = args
        .output
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let mut file =
        tempfile::NamedTempFile::new_in(dir).with_context(|| format!("{}", dir.display()))?;
    {
        let mut out = std::io::BufWriter::new(file.as_file_mut());
        for record in &records {
            serde_json::to_writer(&mut out, record)?;
            out.write_all(b"\n")?;
        }
        out.flush()?;
    }
    file.persist(&args.output)
        .with_context(|| format!("{}", args.output.display()))?;
    printer::note(&format!(
        "{} evidence records written to {}",
        records.len(),
        args.output.display()
    ));
    Ok(Status::Success)
}
