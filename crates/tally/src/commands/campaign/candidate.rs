//! `tally candidate add|show|remeasure|verdict`.

use anyhow::bail;
use tally_model::Verdict;

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
    if !args.again {
        commits = without_duplicates(&args.revisions, commits, &session)?;
        if commits.is_empty() {
            return Ok(Status::Success);
        }
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

/// `commits` less those that are already candidates (the same commit, or a commit with the same
/// tree: the same code) or repeat an earlier one of this command; each left out is said, with
/// the candidate it repeats.
fn without_duplicates(
    revs: &[String],
    commits: Vec<tally_runner::CommitId>,
    session: &Session,
) -> anyhow::Result<Vec<tally_runner::CommitId>> {
    let git = &session.workspace.git;
    let existing = session.engine().data()?.candidates;
    let existing_revisions: Vec<&str> = existing.iter().map(|c| c.revision.as_str()).collect();
    let new_revisions: Vec<&str> = commits.iter().map(|c| c.as_str()).collect();
    let existing_trees = git.trees_of(&existing_revisions)?;
    let new_trees = git.trees_of(&new_revisions)?;
    let mut kept = Vec::new();
    let mut kept_trees: Vec<(&str, &str)> = Vec::new();
    for ((rev, commit), tree) in revs.iter().zip(&commits).zip(&new_trees) {
        let same_candidate = existing
            .iter()
            .zip(&existing_trees)
            .find(|(c, t)| c.revision == commit.as_str() || *t == tree);
        let said = if let Some((c, _)) = same_candidate {
            let what = if c.revision == commit.as_str() {
                "the same commit".to_owned()
            } else {
                format!(
                    "the same tree as {}",
                    &c.revision[..12.min(c.revision.len())]
                )
            };
            Some(format!("already candidate#{} ({what})", c.id))
        } else {
            kept_trees
                .iter()
                .find(|(_, t)| t == tree)
                .map(|(r, _)| format!("the same code as {r}, given before it"))
        };
        match said {
            Some(why) => printer::out_line(&format!(
                "{rev}: {why}; not queued (`--again` queues it anyway)"
            ))?,
            None => {
                kept_trees.push((rev.as_str(), tree.as_str()));
                kept.push(commit.clone());
            }
        }
    }
    Ok(kept)
}

fn show(args: &CandidateShowArgs, options: &CampaignOptions) -> anyhow::Result<Status> {
    let session = Session::open_read_only(options)?;
    let engine = session.engine();
    let id = candidate_id(&args.id)?;
    let candidate = engine.candidate(id)?;
    let data = engine.data()?;
    let view = data
        .candidates
        .iter()
        .find(|c| c.id == u64::from(id.0))
        .cloned();
    let measurements: Vec<_> = data
        .measurements
        .iter()
        .filter(|m| m.candidate == u64::from(id.0))
        .collect();
    if args.json {
        let value = serde_json::json!({
            "id": id.0,
            "revision": candidate.revision,
            "parent": candidate.parent.map(|p| p.0),
            "verdict": candidate.verdict.as_str(),
            "reason": candidate.reason,
            "verdict_set_by": candidate.verdict_set_by.as_ref().map(ToString::to_string),
            "proposed_by": candidate.proposed_by,
            "note": candidate.note,
            "metrics": view.as_ref().map(|v| v.metrics.clone()).unwrap_or_default(),
            "measurements": measurements
                .iter()
                .collect::<Vec<_>>(),
        });
        printer::out_line(&serde_json::to_string_pretty(&value)?)?;
        return Ok(Status::Success);
    }
    let mut text = format!(
        "{id} {}\n  verdict: {}{}\n  reason: {}\n  parent: {}\n  proposed by: {}{}\n",
        candidate.revision,
        candidate.verdict,
        candidate
            .verdict_set_by
            .as_ref()
            .map(|a| format!(" (set by {a})"))
            .unwrap_or_default(),
        candidate.reason.as_deref().unwrap_or("—"),
        candidate.parent.map_or("none".into(), |p| p.to_string()),
        candidate.proposed_by,
        candidate
            .note
            .as_ref()
            .map(|n| format!("\n  note: {n}"))
            .unwrap_or_default(),
    );
    if let Some(view) = view {
        for (name, value) in &view.metrics {
            text.push_str(&format!("  {name}: {}\n", tally_stats::format_sig4(*value)));
        }
    }
    text.push_str(&format!("  measurements: {}\n", measurements.len()));
    for m in measurements {
        let metrics: Vec<String> = m
            .metrics
            .iter()
            .map(|(k, v)| format!("{k}={}", tally_stats::format_sig4(*v)))
            .collect();
        text.push_str(&format!(
            "    #{} {} sample {}{} {:.2}s {}{}\n",
            m.id,
            m.side,
            m.sample,
            if m.attempt > 1 {
                format!(" (attempt {})", m.attempt)
            } else {
                String::new()
            },
            m.seconds.unwrap_or(0.0),
            metrics.join(" "),
            m.error
                .as_ref()
                .map(|e| format!(" error: {e}"))
                .unwrap_or_default()
        ));
    }
    printer::out(&text)?;
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
