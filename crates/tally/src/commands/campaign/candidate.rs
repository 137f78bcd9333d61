//! `tally candidate add|show|remeasure|verdict`.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::bail;
use tally_model::Verdict;
use tally_report::candidate::{CandidateShow, CheckShown, SampleRecord};

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
    let view = data.candidates.iter().find(|c| c.id == u64::from(id.0));
    let measurements: Vec<_> = data
        .measurements
        .iter()
        .filter(|m| m.candidate == u64::from(id.0))
        .collect();
    let records = sample_records(&session, id)?;
    let checks = check_runs(&session, id)?;
    let show = CandidateShow {
        candidate: &candidate,
        metrics: view.map(|v| &v.metrics),
        measurements: &measurements,
        records: &records,
        checks: &checks,
    };
    if args.json {
        printer::out(&tally_report::candidate::json(&show))?;
    } else {
        printer::out(&tally_report::candidate::text(&show))?;
    }
    Ok(Status::Success)
}

/// What the store keeps beside each of the candidate's measurements: units, log files (relative
/// to the repository when inside it) and the end of a failed sample's stderr log.
/// The candidate's `[checks]` runs (`docs/campaign.md#checks`), each marked current when its
/// checks are those of the `tally.toml` in force.
fn check_runs(session: &Session, id: tally_model::CandidateId) -> anyhow::Result<Vec<CheckShown>> {
    let Some(store) = session.store.with_checks() else {
        return Ok(Vec::new());
    };
    let campaign = session.engine().campaign()?;
    let key = session.loaded.settings.checks.as_ref().map(|c| c.key());
    Ok(store
        .checks_of_candidate(campaign.id, id)?
        .into_iter()
        .map(|r| CheckShown {
            commands: r.commands,
            current: key.as_deref() == Some(r.key.as_str()),
            failed_check: r.failed_check,
            passed: r.passed,
            reason: r.reason,
        })
        .collect())
}

fn sample_records(
    session: &Session,
    id: tally_model::CandidateId,
) -> anyhow::Result<BTreeMap<u64, SampleRecord>> {
    let campaign = session.engine().campaign()?;
    let mut units = session.store.units_of_candidate(campaign.id, id)?;
    let root = session.workspace.root();
    let shown = |path: &Path| {
        path.strip_prefix(root)
            .unwrap_or(path)
            .display()
            .to_string()
    };
    let mut records = BTreeMap::new();
    for m in session.store.measurements_of_candidate(campaign.id, id)? {
        let stderr_end = match (&m.error, &m.stderr_log) {
            (Some(_), Some(log)) => Some(log_end(log)),
            _ => None,
        };
        records.insert(
            m.id.0,
            SampleRecord {
                units: units.remove(&m.id).unwrap_or_default(),
                stdout_log: m.stdout_log.as_deref().map(shown),
                stderr_log: m.stderr_log.as_deref().map(shown),
                stderr_end,
            },
        );
    }
    Ok(records)
}

/// The last [`STDERR_LINES_SHOWN`] lines of a log file, from at most its last 8 KiB; a file
/// that cannot be read says why.
fn log_end(path: &Path) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let read = || -> std::io::Result<String> {
        let mut file = std::fs::File::open(path)?;
        let len = file.metadata()?.len();
        file.seek(SeekFrom::Start(len.saturating_sub(8 * 1024)))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    };
    match read() {
        Ok(text) => {
            let lines: Vec<&str> = text.trim_end().lines().collect();
            lines[lines.len().saturating_sub(STDERR_LINES_SHOWN)..].join("\n")
        }
        Err(e) => format!("(cannot read {}: {e})", path.display()),
    }
}

/// How many lines of a failed sample's stderr `candidate show` prints.
const STDERR_LINES_SHOWN: usize = 20;

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
