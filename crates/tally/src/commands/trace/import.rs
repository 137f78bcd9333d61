//! `tally trace import kineto|nsys TRACE... -o ARTIFACT.jsonl` and
//! `tally trace link ENGINE.jsonl TRACE.jsonl -o OUT.jsonl` (see `docs/importers.md`).
//!
//! Imports stream: records go straight from the importer to the artifact writer, with a progress
//! bar (bytes of each input) on a terminal, and a summary of what was imported, linked and left
//! unattributed — per device, busy and summed GPU time — on standard error.

use std::io::IsTerminal;

use anyhow::{Context, bail};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tally_artifact::write::{ArtifactForm, ArtifactWriter};
use tally_import::{Detail, DeviceUuidOption, ImportOptions, ImportSummary, Phase, Progress};
use tally_report::evidence::units::duration;

use super::output::write_atomically;
use crate::cli::{DetailArg, FormArg, ImportArgs, ImportCommand, LinkArgs};
use crate::evidence;
use crate::exit::Status;
use crate::printer;

fn form(arg: FormArg) -> ArtifactForm {
    match arg {
        FormArg::V2 => ArtifactForm::V2,
        FormArg::V4 => ArtifactForm::V4,
    }
}

/// Runs `tally trace import`.
pub fn run(command: &ImportCommand) -> anyhow::Result<Status> {
    let (args, nsys) = match command {
        ImportCommand::Kineto(args) => (args, false),
        ImportCommand::Nsys(args) => (args, true),
    };
    // A device or pipe as a trace is a usage error (exit 2), refused before anything reads it:
    // it may never end (`/dev/zero`).
    if let Err(e) = tally_import::check_inputs(&args.traces) {
        if matches!(e, tally_import::Error::NotAFile { .. }) {
            printer::error(&e.to_string());
            return Ok(Status::Usage);
        }
        return Err(e.into());
    }
    let options = options(args)?;
    let bar = progress_bar();
    let mut summary: Option<ImportSummary> = None;
    write_atomically(&args.output, |out| {
        let mut writer = ArtifactWriter::new(out, form(args.form));
        let mut write_error: Option<std::io::Error> = None;
        let mut sink = |record| {
            if write_error.is_none()
                && let Err(e) = writer.write_record(&record)
            {
                write_error = Some(e);
            }
            Ok(())
        };
        let mut on_progress = |p: Progress| show_progress(&bar, &args.traces, p);
        let result = if nsys {
            tally_import::import_nsys(&args.traces, &options, &mut sink, &mut on_progress)
        } else {
            tally_import::import_kineto(&args.traces, &options, &mut sink, &mut on_progress)
        };
        if let Some(bar) = &bar {
            bar.finish_and_clear();
        }
        summary = Some(result?);
        if let Some(e) = write_error {
            return Err(e).context(format!("{}: write failed", args.output.display()));
        }
        writer
            .finish()
            .with_context(|| format!("{}: write failed", args.output.display()))?;
        Ok(())
    })?;
    if let Some(summary) = summary {
        printer::note(&render_summary(&summary));
    }
    Ok(Status::Success)
}

fn options(args: &ImportArgs) -> anyhow::Result<ImportOptions> {
    let mut device_uuids = Vec::new();
    for text in &args.device_uuids {
        device_uuids.push(DeviceUuidOption::parse(text).map_err(|e| {
            anyhow::anyhow!(
                "--device-uuid {text:?}: {e}; write UUID, INDEX=UUID or TRACE_FILE:INDEX=UUID"
            )
        })?);
    }
    let iterations = match &args.iterations {
        Some(pattern) => Some(regex::Regex::new(pattern).map_err(|e| {
            anyhow::anyhow!("--iterations {pattern:?}: not a regular expression: {e}")
        })?),
        None => None,
    };
    Ok(ImportOptions {
        run_id: args.run_id.clone(),
        device_uuids,
        iterations,
        detail: match args.detail {
            DetailArg::Kernel => Detail::Kernel,
            DetailArg::Launch => Detail::Launch,
        },
        emit_runtime: args.runtime,
    })
}

fn progress_bar() -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("{msg} [{bar:30}] {bytes}/{total_bytes} ({eta})")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    Some(bar)
}

fn show_progress(bar: &Option<ProgressBar>, traces: &[std::path::PathBuf], p: Progress) {
    let Some(bar) = bar else { return };
    bar.set_length(p.bytes_total);
    bar.set_position(p.bytes_read);
    let name = traces
        .get(p.input)
        .and_then(|t| t.file_name())
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let phase = match p.phase {
        Phase::Scan => "scanning",
        Phase::Emit => "importing",
    };
    bar.set_message(format!("{phase} {name} ({}/{})", p.input + 1, p.inputs));
}

fn render_summary(summary: &ImportSummary) -> String {
    let mut text = format!(
        "run {}: {} records ({:?} detail)",
        summary.run_id, summary.records, summary.detail
    );
    for input in &summary.inputs {
        text.push_str(&format!(
            "\n{}: {} GPU events, {} linked to {} iterations, {} launch calls",
            input.path.display(),
            input.gpu_events,
            input.linked_gpu_events,
            input.iterations,
            input.launch_calls
        ));
        for (reason, n) in &input.unresolved_gpu_events {
            text.push_str(&format!("\n  {n} unattributed: {reason}"));
        }
        for d in &input.devices {
            text.push_str(&format!(
                "\n  device {} ({:?}): busy {}, summed {}, {} activities",
                d.device_uuid.as_deref().unwrap_or("unknown"),
                d.uuid_source,
                duration(d.busy_ns.max(0) as u64),
                duration(d.summed_ns.max(0) as u64),
                d.count
            ));
        }
        for note in &input.notes {
            text.push_str(&format!("\n  note: {note}"));
        }
    }
    text
}

/// Runs `tally trace link`.
pub fn link(args: &LinkArgs) -> anyhow::Result<Status> {
    let engine = read_all(&args.engine)?;
    let trace = read_all(&args.trace)?;
    let outcome = tally_import::link_trace_activities(&engine, trace);
    write_atomically(&args.output, |out| {
        let mut writer = ArtifactWriter::new(out, form(args.form));
        for record in engine.iter().chain(outcome.records.iter()) {
            writer
                .write_record(record)
                .with_context(|| format!("{}: write failed", args.output.display()))?;
        }
        writer.finish()?;
        Ok(())
    })?;
    printer::note(&format!(
        "linked {} activities ({} ambiguous, {} without a matching engine record)",
        outcome.linked, outcome.ambiguous, outcome.unmatched
    ));
    Ok(Status::Success)
}

/// Every record of one artifact, in order.
pub fn read_all(path: &std::path::Path) -> anyhow::Result<Vec<tally_evidence::InferenceRecord>> {
    let mut records = Vec::new();
    evidence::for_each_record(path, |_, r| {
        records.push(r);
        Ok(())
    })?;
    if records.is_empty() {
        bail!("{}: no records", path.display());
    }
    Ok(records)
}
