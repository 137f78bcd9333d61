//! `tally trace export perfetto ARTIFACT... -o OUT.json`: a Chrome trace-event file (Perfetto UI,
//! chrome://tracing) with one track per device stream, iterations on their host track, requests as
//! async tracks, and flow arrows from launch calls to GPU activities (`docs/importers.md`).

use anyhow::Context;

use super::import::read_all;
use super::output::write_atomically;
use crate::cli::PerfettoArgs;
use crate::exit::Status;
use crate::printer;

/// Runs the command.
pub fn run(args: &PerfettoArgs) -> anyhow::Result<Status> {
    let mut records = Vec::new();
    for path in &args.input.files {
        records.extend(read_all(path)?);
    }
    let mut summary = None;
    write_atomically(&args.output, |out| {
        summary = Some(
            tally_import::export_perfetto(&records, out)
                .with_context(|| format!("{}: export failed", args.output.display()))?,
        );
        Ok(())
    })?;
    if let Some(summary) = summary {
        printer::note(&format!("wrote {}: {summary:?}", args.output.display()));
    }
    Ok(Status::Success)
}
