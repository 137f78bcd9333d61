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
        printer::note(&format!(
            "wrote {}: {}",
            args.output.display(),
            sentence(&summary)
        ));
    }
    Ok(Status::Success)
}

/// What the export drew, as a sentence.
fn sentence(s: &tally_import::PerfettoSummary) -> String {
    let mut text = format!(
        "{} trace events: {} activities ({} not attributed to an iteration, {} unmeasured), \
         {} iterations, {} requests, {} flow arrows from launches to GPU work",
        s.events, s.activities, s.unattributed, s.unmeasured, s.iterations, s.requests, s.flows
    );
    if s.undrawable > 0 {
        text.push_str(&format!(
            "; {} records without a start or an end were not drawn",
            s.undrawable
        ));
    }
    text
}
