//! `tally idea add|list|show|park` (`docs/implementers.md#ideas`): the ideas implementers are
//! asked to try, stored with the campaign. An idea's attempts default to `[implementer]
//! attempts` (2 without the table) and are resolved when shown, so a change of the table applies
//! to ideas queued before it; its base is a candidate, or the head at launch.

use anyhow::{Context, bail};
use serde_json::json;
use tally_model::{Campaign, CandidateId, UnixMillis};
use tally_store::{Idea, IdeaState, ImplementerStore, NewIdea, Run};

use super::context::{Session, caller, candidate_id};
use crate::cli::{CampaignOptions, IdeaAddArgs, IdeaCommand, IdeaListArgs, IdeaParkArgs};
use crate::exit::Status;
use crate::printer;

/// Attempts per idea when `tally.toml` has no `[implementer]` table.
const DEFAULT_ATTEMPTS: u32 = 2;

/// Runs one `tally idea` subcommand.
pub fn run(command: &IdeaCommand, options: &CampaignOptions) -> anyhow::Result<Status> {
    match command {
        IdeaCommand::Add(args) => add(args, options),
        IdeaCommand::List(args) => list(args, options),
        IdeaCommand::Show(args) => show(&args.id, options),
        IdeaCommand::Park(args) => park(args, options),
    }
}

/// The campaign's store as one that keeps ideas and implementer runs (SQLite and PostgreSQL
/// both do).
pub fn idea_store(session: &Session) -> anyhow::Result<&dyn ImplementerStore> {
    session.store.with_ideas().context(
        "this campaign's store keeps no ideas or implementer runs (docs/implementers.md#ideas)",
    )
}

/// The campaign of `tally.toml`, which must be registered.
pub fn registered(store: &dyn ImplementerStore, session: &Session) -> anyhow::Result<Campaign> {
    let name = &session.loaded.settings.name;
    store
        .campaign_by_name(name)?
        .with_context(|| format!("campaign `{name}` is not registered; run `tally init` first"))
}

fn default_attempts(session: &Session) -> u32 {
    session
        .loaded
        .settings
        .implementer
        .as_ref()
        .map_or(DEFAULT_ATTEMPTS, |i| i.attempts)
}

/// `1`, `#1` or `idea#1`.
fn idea_number(text: &str) -> anyhow::Result<u32> {
    let digits = text
        .strip_prefix("idea#")
        .or_else(|| text.strip_prefix('#'))
        .unwrap_or(text);
    match digits.parse::<u32>() {
        Ok(n) if n >= 1 && !digits.starts_with('+') => Ok(n),
        _ => bail!("{text:?} is not an idea number; write 1, #1 or idea#1"),
    }
}

/// The idea `text` names (`1`, `#1`, `idea#1`), or an error saying how to list them.
pub fn find_idea(
    store: &dyn ImplementerStore,
    campaign: &Campaign,
    text: &str,
) -> anyhow::Result<Idea> {
    let number = idea_number(text)?;
    store.idea(campaign.id, number)?.with_context(|| {
        format!(
            "no idea#{number} in campaign `{}`; `tally idea list` shows them",
            campaign.name
        )
    })
}

/// `--base REV`: a candidate id, or a revision that is a candidate's commit (the newest such).
fn resolve_base(session: &Session, campaign: &Campaign, rev: &str) -> anyhow::Result<CandidateId> {
    let candidates = session.store.list_candidates(campaign.id)?;
    if let Ok(id) = candidate_id(rev)
        && candidates.iter().any(|c| c.id == id)
    {
        return Ok(id);
    }
    let commit = session.workspace.git.resolve_commit(rev).with_context(|| {
        format!("--base {rev}: neither a candidate id nor a revision of this repository")
    })?;
    candidates
        .iter()
        .rev()
        .find(|c| c.revision == commit.as_str())
        .map(|c| c.id)
        .with_context(|| {
            format!(
                "--base {rev}: commit {} is not a candidate of campaign `{}`; queue it with \
                 `tally candidate add {rev}` first, or name a candidate id",
                &commit.as_str()[..12.min(commit.as_str().len())],
                campaign.name
            )
        })
}

fn add(args: &IdeaAddArgs, options: &CampaignOptions) -> anyhow::Result<Status> {
    let session = Session::open(options)?;
    let campaign = registered(idea_store(&session)?, &session)?;
    let text = match (&args.text, &args.file) {
        (Some(text), _) => text.clone(),
        (None, Some(path)) => std::fs::read_to_string(path)
            .with_context(|| format!("--file {}: cannot read", path.display()))?,
        (None, None) => String::new(),
    };
    if args.title.trim().is_empty() {
        bail!("TITLE is empty; give the idea a one-line title");
    }
    if args.title.contains('\n') {
        bail!("TITLE has a line break; put the details in --text or --file");
    }
    let base = args
        .base
        .as_deref()
        .map(|rev| resolve_base(&session, &campaign, rev))
        .transpose()?;
    let idea = idea_store(&session)?.add_idea(
        campaign.id,
        &NewIdea {
            title: args.title.trim().to_string(),
            text,
            attempts: args.attempts,
            base,
            added_by: caller(&session.workspace.git),
            created: UnixMillis::now(),
        },
    )?;
    printer::out_line(&format!(
        "idea#{} queued: {} (attempts {}, base {})",
        idea.number,
        idea.title,
        idea.attempts.unwrap_or(default_attempts(&session)),
        base_text(&idea)
    ))?;
    Ok(Status::Success)
}

fn base_text(idea: &Idea) -> String {
    idea.base
        .map_or_else(|| "the head at launch".to_string(), |b| b.to_string())
}

/// A run as `idea list --json` and `implementer list --json` print it.
pub fn run_json(run: &Run) -> serde_json::Value {
    let settled = run.settled.as_ref();
    json!({
        "run": run.number,
        "idea": run.started.idea,
        "base": run.started.base.0,
        "end": settled.map(|s| s.end.as_str()),
        "exit_code": settled.and_then(|s| s.exit_code),
        "error": settled.and_then(|s| s.error.clone()),
        "commits": settled.map_or_else(Vec::new, |s| s.commits.iter().map(|c| json!({
            "revision": c.revision,
            "candidate": c.candidate.map(|x| x.0),
            "note": c.note,
        })).collect()),
        "run_dir": run.started.run_dir,
        "usage": run.usage.as_ref().map(|u| json!({
            "input": u.input,
            "output": u.output,
            "cached": u.cached,
            "usd": u.usd,
            "source": u.source,
            "usd_source": u.usd_source,
        })),
    })
}

fn to_json(idea: &Idea, default: u32, runs: &[Run]) -> serde_json::Value {
    json!({
        "runs": runs.iter().filter(|r| r.started.idea == idea.number).map(run_json).collect::<Vec<_>>(),
        "number": idea.number,
        "title": idea.title,
        "text": idea.text,
        "state": idea.state.as_str(),
        "reason": idea.reason,
        "attempts": idea.attempts.unwrap_or(default),
        "attempts_default": idea.attempts.is_none(),
        "base": idea.base.map(|b| b.0),
        "added_by": idea.added_by,
        "created_ms": idea.created.0,
        "state_since_ms": idea.state_since.0,
    })
}

fn list(args: &IdeaListArgs, options: &CampaignOptions) -> anyhow::Result<Status> {
    let session = Session::open_read_only(options)?;
    let campaign = registered(idea_store(&session)?, &session)?;
    let ideas = idea_store(&session)?.list_ideas(campaign.id)?;
    let default = default_attempts(&session);
    if args.json {
        let runs = idea_store(&session)?.list_runs(campaign.id)?;
        let list: Vec<_> = ideas.iter().map(|i| to_json(i, default, &runs)).collect();
        let mut text = serde_json::to_string_pretty(&list)?;
        text.push('\n');
        printer::out(&text)?;
        return Ok(Status::Success);
    }
    if ideas.is_empty() {
        printer::out_line("no ideas yet; queue one with `tally idea add TITLE --text TEXT`")?;
        return Ok(Status::Success);
    }
    let mut text = format!(
        "{:<8} {:<7} {:>8}  {:<14} title\n",
        "idea", "state", "attempts", "base"
    );
    for i in &ideas {
        text.push_str(&format!(
            "{:<8} {:<7} {:>8}  {:<14} {}\n",
            format!("idea#{}", i.number),
            i.state.as_str(),
            i.attempts.unwrap_or(default),
            i.base.map_or_else(|| "head".to_string(), |b| b.to_string()),
            i.title
        ));
    }
    printer::out(&text)?;
    Ok(Status::Success)
}

fn show(id: &str, options: &CampaignOptions) -> anyhow::Result<Status> {
    let session = Session::open_read_only(options)?;
    let campaign = registered(idea_store(&session)?, &session)?;
    let idea = find_idea(idea_store(&session)?, &campaign, id)?;
    let attempts = match idea.attempts {
        Some(n) => n.to_string(),
        None => format!("{} (the default)", default_attempts(&session)),
    };
    let mut text = format!("idea#{}: {}\n", idea.number, idea.title);
    text.push_str(&format!("state:    {}", idea.state.as_str()));
    if let Some(reason) = &idea.reason {
        text.push_str(&format!(" ({reason})"));
    }
    text.push('\n');
    text.push_str(&format!("attempts: {attempts}\n"));
    text.push_str(&format!("base:     {}\n", base_text(&idea)));
    text.push_str(&format!("added by: {}\n", idea.added_by));
    for run in idea_store(&session)?
        .list_runs(campaign.id)?
        .iter()
        .filter(|r| r.started.idea == idea.number)
    {
        match &run.settled {
            None => text.push_str(&format!(
                "run#{}:   running (from {})\n",
                run.number, run.started.base
            )),
            Some(s) => {
                text.push_str(&format!("run#{}:   {}", run.number, s.end.as_str()));
                if let Some(error) = &s.error {
                    text.push_str(&format!(" ({})", error.lines().next().unwrap_or_default()));
                }
                text.push('\n');
                for c in &s.commits {
                    text.push_str(&format!(
                        "  {} {}\n",
                        &c.revision[..12.min(c.revision.len())],
                        match c.candidate {
                            Some(id) if c.note == "queued" => format!("queued as {id}"),
                            _ => c.note.clone(),
                        }
                    ));
                }
            }
        }
    }
    if !idea.text.trim().is_empty() {
        text.push('\n');
        text.push_str(idea.text.trim_end());
        text.push('\n');
    }
    printer::out(&text)?;
    Ok(Status::Success)
}

fn park(args: &IdeaParkArgs, options: &CampaignOptions) -> anyhow::Result<Status> {
    let session = Session::open(options)?;
    let campaign = registered(idea_store(&session)?, &session)?;
    let idea = find_idea(idea_store(&session)?, &campaign, &args.id)?;
    match idea.state {
        IdeaState::Parked => {
            printer::out_line(&format!("idea#{} is already parked", idea.number))?;
        }
        IdeaState::Done => bail!(
            "idea#{} is done (its attempts are used up); there is nothing to park",
            idea.number
        ),
        IdeaState::Ready => {
            let reason = format!("parked by {}", caller(&session.workspace.git));
            idea_store(&session)?.set_idea_state(
                campaign.id,
                idea.number,
                IdeaState::Parked,
                Some(&reason),
                UnixMillis::now(),
            )?;
            printer::out_line(&format!("idea#{} parked", idea.number))?;
        }
    }
    Ok(Status::Success)
}
