//! `tally candidate add|show|remeasure|verdict`.

use anyhow::bail;
use tally_model::Verdict;
use tally_report::candidate::CandidateShow;

use super::context::{Session, caller, candidate_id};
use crate::cli::{
    CampaignOptions, CandidateAddArgs, CandidateCommand, CandidateRemeasureArgs, CandidateShowArgs,
    CandidateVerdictArgs,
};
use crate::exit::Status;
use crate::printer;

/// Runs one `tally candidate` subcommand.
pub fn run(command: &CandidateCommand, options: &CampaignOptions) -> anyhow::Result<Status> {
    match command {
        CandidateCommand::Add(args) => add(args, options),
        CandidateCommand::Show(args) => show(args, options),
        CandidateCommand::Remeasure(args) => remeasure(args, options),
        CandidateCommand::Verdict(args) => verdict(args, options),
    }
}

fn add(args: &CandidateAddArgs, options: &CampaignOptions) -> anyhow::Result<Status> {
    let session = Session::open(options)?;
    let engine = session.engine();
    let workspace = &session.workspace;
    let mut commits = Vec::new();
    for rev in &args.revisions {
        commits.push(workspace.git.resolve_commit(rev)?);
    }
    let who = caller(&workspace.git);
    for c in engine.add_candidates(&commits, args.note.as_deref(), &who)? {
        printer::out_line(&format!(
            "{}: {} queued (parent {})",
            c.id,
            &c.revision[..12.min(c.revision.len())],
            c.parent.map_or("none".into(), |p| p.to_string())
        ))?;
    }
    Ok(Status::Success)
}

fn show(args: &CandidateShowArgs, options: &CampaignOptions) -> anyhow::Result<Status> {
    let session = Session::open(options)?;
    let engine = session.engine();
    let id = candidate_id(&args.id)?;
    let candidate = engine.candidate(id)?;
    let data = engine.data()?;
    let view = data.candidates.iter().find(|c| c.id == u64::from(id.0));
    let measurements: Vec<_> = data
        .measurements
        .iter()
        .filter(|m| m.candidate == u64::from(id.0))
        .collect();
    let show = CandidateShow {
        candidate: &candidate,
        metrics: view.map(|v| &v.metrics),
        measurements: &measurements,
    };
    if args.json {
        printer::out(&tally_report::candidate::json(&show))?;
    } else {
        printer::out(&tally_report::candidate::text(&show))?;
    }
    Ok(Status::Success)
}

fn remeasure(args: &CandidateRemeasureArgs, options: &CampaignOptions) -> anyhow::Result<Status> {
    let session = Session::open(options)?;
    let engine = session.engine();
    let id = candidate_id(&args.id)?;
    if args.repeats == Some(0) {
        bail!("--repeats 0: expected at least 1 pair");
    }
    engine.remeasure(id, args.repeats)?;
    printer::out_line(&format!(
        "{id}: re-measurement queued; `tally run` measures it and judges it again"
    ))?;
    Ok(Status::Success)
}

fn verdict(args: &CandidateVerdictArgs, options: &CampaignOptions) -> anyhow::Result<Status> {
    let session = Session::open(options)?;
    let engine = session.engine();
    let workspace = &session.workspace;
    let id = candidate_id(&args.id)?;
    let Some(outcome) = Verdict::parse(&args.outcome) else {
        bail!(
            "OUTCOME {:?}: expected keep, interesting, discard, crash or pending",
            args.outcome
        );
    };
    let who = caller(&workspace.git);
    let c = engine.set_verdict_by_hand(id, outcome, &args.reason, &who)?;
    printer::out_line(&format!(
        "{}: {} (set by {who}): {}",
        c.id,
        c.verdict,
        c.reason.as_deref().unwrap_or("")
    ))?;
    Ok(Status::Success)
}
