//! `tally measurement add ID --report FILE`: a measurement taken outside `tally run`, recorded
//! under the current evaluator and signed by the caller; the candidate is judged again when its
//! verdict was the loop's. A report may name the evidence artifact behind it (`"evidence"`, a
//! path relative to the report's directory): it is accounted as a sample's evidence file is
//! (`docs/evaluate-protocol.md` §4b) and the measurement records its absolute path and GPU busy
//! time; an artifact that cannot be read refuses the report.

use anyhow::Context;
use tally_contract::EvidenceAccountant;
use tally_engine::ManualReport;
use tally_model::EvidenceRef;

use super::context::{Session, caller, candidate_id};
use crate::cli::{CampaignOptions, MeasurementAddArgs, MeasurementCommand};
use crate::exit::Status;
use crate::printer;

/// Runs one `tally measurement` subcommand.
pub fn run(command: &MeasurementCommand, options: &CampaignOptions) -> anyhow::Result<Status> {
    match command {
        MeasurementCommand::Add(args) => add(args, options),
    }
}

fn add(args: &MeasurementAddArgs, options: &CampaignOptions) -> anyhow::Result<Status> {
    let name = args.report.display().to_string();
    let report = tally_runner::report::read_report(&args.report)
        .map_err(|why| anyhow::anyhow!("{name}: {why}"))?;
    let evidence = match &report.evidence {
        None => EvidenceRef::default(),
        Some(path) => {
            let path = args
                .report
                .parent()
                .map_or_else(|| path.clone(), |dir| dir.join(path));
            let path = std::fs::canonicalize(&path).with_context(|| {
                format!(
                    "{name}: evidence: {}: cannot read the artifact; the path is relative to \
                     the report's directory",
                    path.display()
                )
            })?;
            let accounted = crate::evidence::Accountant.account(&path).map_err(|why| {
                anyhow::anyhow!("{name}: evidence: {why}; fix the artifact or leave it out")
            })?;
            EvidenceRef {
                artifact: Some(path.to_string_lossy().into_owned()),
                gpu_busy_ns: Some(accounted.gpu_busy_ns),
            }
        }
    };
    let session = Session::open(options)?;
    let engine = session.engine();
    let workspace = &session.workspace;
    let id = candidate_id(&args.id)?;
    let who = caller(&workspace.git);
    let m = engine.add_measurement(
        id,
        &ManualReport {
            metrics: report.metrics,
            seconds: report.seconds,
            error: report.error,
            evidence,
        },
        &who,
    )?;
    let candidate = engine.candidate(id)?;
    printer::out_line(&format!(
        "{id}: measurement#{} recorded (by {who}); verdict {}{}",
        m.id.0,
        candidate.verdict,
        candidate
            .reason
            .as_ref()
            .map(|r| format!(": {r}"))
            .unwrap_or_default()
    ))?;
    Ok(Status::Success)
}
