//! Implementer runs inside `tally run` (`docs/implementers.md#runs`): pick the first ready idea
//! with attempts left, record the run, start the agent in a worktree at the base candidate
//! outside the repository with the brief beside it, wait for its end (exit, timeout, Ctrl-C),
//! collect its work, queue its commits as candidates in order, settle the run and the idea. One
//! run at a time; `tally run` judges the queued candidates before it starts the next. A run left
//! unsettled by a killed `tally run` is settled first: its agent adopted while alive
//! (`adopt`), then collected.

mod adopt;
mod agent;
mod breaker;
pub mod brief;
mod collect;
mod glob;
pub mod history;
mod trailers;
pub mod usage;

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use anyhow::Context;
use tally_config::ImplementerSettings;
use tally_model::{Actor, Campaign, CampaignState, CandidateId, UnixMillis, Verdict};
use tally_process::{CancelToken, End};
use tally_runner::{CommitId, default_worktree_root};
use tally_store::{
    HeadUpdate, Idea, IdeaState, ImplementerStore, NewRun, Run, RunCommit, RunEnd, RunSettlement,
    RunUsage, VerdictWrite,
};

use super::context::{Loaded, Workspace};
use crate::printer;

/// The file `tally implementer cancel` leaves in a run's directory.
pub const CANCELLED_FILE: &str = "cancelled";

/// What a launch ended as.
pub struct Launched {
    /// `tally run` itself was interrupted (Ctrl-C, SIGTERM): it must stop too.
    pub interrupted: bool,
    /// The stop rule, asked before the launch, held or stopped the campaign: nothing was
    /// launched.
    pub refused: Option<tally_engine::RunEnd>,
}

/// A run's directory: `<worktree root of the campaign>/runs/<run>`, outside the repository.
fn run_dir(workspace: &Workspace, campaign: &str, run: u32) -> anyhow::Result<PathBuf> {
    Ok(default_worktree_root(workspace.root(), campaign)?
        .join("runs")
        .join(run.to_string()))
}

fn uuid() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/uuid")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| format!("{:x}-{}", std::process::id(), UnixMillis::now().0))
}

/// Attempts the idea allows.
pub fn allowed(idea: &Idea, settings: Option<&ImplementerSettings>) -> u32 {
    idea.attempts
        .unwrap_or_else(|| settings.map_or(2, |s| s.attempts))
}

/// Attempts the idea has used: its settled runs that count.
pub fn used(idea: &Idea, runs: &[Run]) -> u32 {
    runs.iter()
        .filter(|r| r.started.idea == idea.number)
        .filter(|r| {
            r.settled
                .as_ref()
                .is_some_and(|s| s.end.counts_as_attempt())
        })
        .count() as u32
}

/// The brief for `idea` on the campaign's current state (what a launch writes).
pub fn brief_text(
    loaded: &Loaded,
    store: &dyn ImplementerStore,
    campaign: &Campaign,
    idea: &Idea,
    campaign_brief: &str,
) -> anyhow::Result<(String, CandidateId, String)> {
    let settings = loaded.settings.implementer.as_ref().context(
        "tally.toml has no [implementer] table; add one (docs/implementers.md#config) to brief an implementer",
    )?;
    let base = idea
        .base
        .or(campaign.head)
        .context("the campaign has no head yet; run `tally init` to measure the baseline")?;
    let revision = store
        .candidate(campaign.id, base)?
        .with_context(|| format!("the idea's base {base} is not a candidate"))?
        .revision;
    let summaries = history::summaries(store, campaign)?;
    let earlier = history::earlier_attempts(&summaries, idea.number);
    let text = brief::compose(
        settings,
        &loaded.settings.evaluate,
        idea,
        base.0,
        &revision,
        campaign_brief,
        earlier.as_deref(),
    );
    Ok((text, base, revision))
}

/// Settles every run a killed `tally run` left unsettled (`docs/implementers.md#crash-safety`):
/// an agent still alive (a process carrying the run's tag) is adopted — waited for, its stored
/// deadline enforced, killed on Ctrl-C — and then, or at once when it is gone, its work is
/// collected and queued as after any run; its exit code is unknown and recorded as such.
pub fn settle_leftovers(
    workspace: &Workspace,
    loaded: &Loaded,
    store: &dyn ImplementerStore,
    engine: &tally_engine::Engine<'_>,
    cancel: &CancelToken,
) -> anyhow::Result<()> {
    let Some(campaign) = store.campaign_by_name(&loaded.settings.name)? else {
        return Ok(());
    };
    let wrap_up_s = loaded
        .settings
        .implementer
        .as_ref()
        .map_or(0.0, |s| s.wrap_up_s);
    for run in store.list_runs(campaign.id)? {
        if run.settled.is_some() {
            continue;
        }
        let idea = store.idea(campaign.id, run.started.idea)?;
        let dir = PathBuf::from(&run.started.run_dir);
        if adopt::alive(&run.started.tag) {
            printer::note(&format!(
                "run#{} was left running by a killed tally run: its agent is alive, waiting for it (deadline {})",
                run.number,
                run.started.deadline.0 / 1000
            ));
        } else {
            printer::note(&format!(
                "run#{} was left by a killed tally run and its agent is gone: collecting its work",
                run.number
            ));
        }
        let followed = adopt::follow(
            &run.started.tag,
            run.started.deadline,
            wrap_up_s,
            &agent::wrap_up_file(&dir),
            cancel,
        );
        let (end, unknown_exit) = match followed {
            adopt::Followed::Gone => (
                Ok(End::Exited(0)),
                Some(
                    "exit code unknown: tally run was killed while the agent ran, and the agent was gone when the next tally run looked",
                ),
            ),
            adopt::Followed::Exited => (
                Ok(End::Exited(0)),
                Some("exit code unknown: adopted by the next tally run after tally run was killed"),
            ),
            adopt::Followed::TimedOut => (Ok(End::TimedOut), None),
            adopt::Followed::Cancelled => (Ok(End::Cancelled), None),
        };
        finish_with(
            workspace,
            loaded,
            store,
            engine,
            &campaign,
            &run,
            idea.as_ref(),
            end,
            String::new(),
            unknown_exit,
        )?;
    }
    Ok(())
}

/// Applies the `Tally-Note` trailers of judged agent commits (`docs/implementers.md#trailers`):
/// a candidate queued from a noted commit whose loop verdict is `discard` or `interesting`
/// becomes `interesting` with the note as its reason. Refusals (protected paths) and verdicts
/// set by a person stand. Called after each judging pass of `tally run`.
pub fn apply_notes(loaded: &Loaded, store: &dyn ImplementerStore) -> anyhow::Result<()> {
    let Some(campaign) = store.campaign_by_name(&loaded.settings.name)? else {
        return Ok(());
    };
    for run in store.list_runs(campaign.id)? {
        let Some(settled) = &run.settled else {
            continue;
        };
        for commit in &settled.commits {
            let (Some(id), Some(note)) =
                (commit.candidate, commit.note.strip_prefix(trailers::NOTED))
            else {
                continue;
            };
            let Some(candidate) = store.candidate(campaign.id, id)? else {
                continue;
            };
            let noted = matches!(candidate.verdict, Verdict::Discard | Verdict::Interesting)
                && candidate.verdict_set_by == Some(Actor::Loop)
                && candidate.reason.as_deref() != Some(note)
                && !candidate
                    .reason
                    .as_deref()
                    .is_some_and(|r| r.starts_with("refused:"));
            if !noted {
                continue;
            }
            let written = store.set_verdict(
                campaign.id,
                id,
                &VerdictWrite {
                    verdict: Verdict::Interesting,
                    reason: Some(note.to_string()),
                    by: Actor::Loop,
                    at: UnixMillis::now(),
                    judged_against: candidate.judged_against,
                    head: HeadUpdate::Unchanged,
                },
            )?;
            if !matches!(written, tally_store::VerdictWriteOutcome::Applied(_)) {
                continue;
            }
            printer::note(&format!(
                "{id}: interesting — {note} (Tally-Note; the loop said {}: {})",
                candidate.verdict.as_str(),
                candidate.reason.as_deref().unwrap_or("no reason")
            ));
        }
    }
    Ok(())
}

/// Launches one implementer on the first ready idea with attempts left, waits for it and
/// queues its work. `None` when nothing can be launched.
pub fn launch_next(
    workspace: &Workspace,
    loaded: &Loaded,
    store: &dyn ImplementerStore,
    engine: &tally_engine::Engine<'_>,
    campaign_brief: &str,
    cancel: &CancelToken,
) -> anyhow::Result<Option<Launched>> {
    let Some(settings) = loaded.settings.implementer.as_ref() else {
        return Ok(None);
    };
    let Some(campaign) = store.campaign_by_name(&loaded.settings.name)? else {
        return Ok(None);
    };
    // A held campaign may launch again: the stop rule, asked below, says whether.
    if campaign.state == CampaignState::Stopped || campaign.head.is_none() || cancel.is_cancelled()
    {
        return Ok(None);
    }
    let runs = store.list_runs(campaign.id)?;
    let Some(idea) = store
        .list_ideas(campaign.id)?
        .into_iter()
        .find(|i| i.state == IdeaState::Ready && used(i, &runs) < allowed(i, Some(settings)))
    else {
        return Ok(None);
    };
    if let Some(reason) = breaker::tripped(&campaign, &runs, UnixMillis::now()) {
        store.set_campaign_state(
            campaign.id,
            CampaignState::Held,
            Some(&reason),
            UnixMillis::now(),
        )?;
        return Ok(Some(Launched {
            interrupted: false,
            refused: Some(tally_engine::RunEnd::Held(reason)),
        }));
    }
    // The stop rule before every launch, as before every evaluation (docs/implementers.md#gating).
    if let Some(end) = engine.before_launch()? {
        return Ok(Some(Launched {
            interrupted: false,
            refused: Some(end),
        }));
    }
    let (text, base, revision) = brief_text(loaded, store, &campaign, &idea, campaign_brief)?;
    let number = runs.iter().map(|r| r.number).max().unwrap_or(0) + 1;
    let dir = run_dir(workspace, &campaign.name, number)?;
    if dir.exists() {
        // A directory of an earlier store's run of the same number: not ours to keep.
        let _ = workspace.git.worktree_remove_force(&dir.join("worktree"));
        std::fs::remove_dir_all(&dir)
            .with_context(|| format!("{}: cannot remove", dir.display()))?;
        let _ = workspace.git.worktree_prune();
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("{}: cannot create", dir.display()))?;
    let brief_file = dir.join("brief.md");
    std::fs::write(&brief_file, &text)?;
    std::fs::set_permissions(&brief_file, std::fs::Permissions::from_mode(0o444))?;
    let tag = uuid();
    let started = UnixMillis::now();
    let deadline = UnixMillis(started.0 + (settings.timeout_s * 1000.0) as i64);
    let run = store.start_run(
        campaign.id,
        &NewRun {
            idea: idea.number,
            base,
            tag: tag.clone(),
            run_dir: dir.display().to_string(),
            started,
            deadline,
        },
    )?;
    let worktree = dir.join("worktree");
    let commit =
        CommitId::parse(&revision).context("the base candidate's revision is not a commit id")?;
    printer::note(&format!(
        "run#{} started: idea#{} {:?} at {base}",
        run.number, idea.number, idea.title
    ));
    let (end, stderr_tail) = match workspace.git.worktree_add_detached(&worktree, &commit) {
        Err(e) => (
            Err(format!("cannot create the worktree: {e}")),
            String::new(),
        ),
        Ok(()) => {
            let ended = agent::run(
                &agent::Launch {
                    run: run.number,
                    settings,
                    run_dir: &dir,
                    worktree: &worktree,
                    brief_file: &brief_file,
                    brief: &text,
                    tag: &tag,
                    session_id: &uuid(),
                    base: &revision,
                    deadline_s: deadline.0 / 1000,
                    identity: needs_identity(workspace),
                },
                cancel,
            );
            (ended.end, ended.stderr_tail)
        }
    };
    finish(
        workspace,
        loaded,
        store,
        engine,
        &campaign,
        &run,
        Some(&idea),
        end,
        stderr_tail,
    )?;
    Ok(Some(Launched {
        interrupted: cancel.is_cancelled(),
        refused: None,
    }))
}

fn needs_identity(workspace: &Workspace) -> bool {
    workspace.git.config_value("user.email").is_none()
        || workspace.git.config_value("user.name").is_none()
}

/// Collects, queues and settles `run`, then the idea.
#[allow(clippy::too_many_arguments)]
fn finish(
    workspace: &Workspace,
    loaded: &Loaded,
    store: &dyn ImplementerStore,
    engine: &tally_engine::Engine<'_>,
    campaign: &Campaign,
    run: &Run,
    idea: Option<&Idea>,
    end: Result<End, String>,
    stderr_tail: String,
) -> anyhow::Result<RunEnd> {
    finish_with(
        workspace,
        loaded,
        store,
        engine,
        campaign,
        run,
        idea,
        end,
        stderr_tail,
        None,
    )
}

/// [`finish`]; with `unknown_exit`, the agent's exit code is unknown (an adopted agent): its
/// end is classified as after exit 0, no exit code is recorded, and the error says why.
#[allow(clippy::too_many_arguments)]
fn finish_with(
    workspace: &Workspace,
    loaded: &Loaded,
    store: &dyn ImplementerStore,
    engine: &tally_engine::Engine<'_>,
    campaign: &Campaign,
    run: &Run,
    idea: Option<&Idea>,
    end: Result<End, String>,
    stderr_tail: String,
    unknown_exit: Option<&str>,
) -> anyhow::Result<RunEnd> {
    let settings = loaded.settings.implementer.as_ref();
    let ignore: Vec<String> = settings.map(|s| s.ignore.clone()).unwrap_or_default();
    let dir = PathBuf::from(&run.started.run_dir);
    let worktree = dir.join("worktree");
    let base_revision = store
        .candidate(campaign.id, run.started.base)?
        .map(|c| c.revision)
        .unwrap_or_default();
    let pin_prefix = format!(
        "refs/tally/{}/runs/{}",
        ref_name(&campaign.name),
        run.number
    );
    let collected = if worktree.is_dir() {
        let collected = collect::collect(
            workspace.root(),
            &worktree,
            &base_revision,
            run.number,
            &pin_prefix,
            &ignore,
            needs_identity(workspace),
        );
        let _ = workspace.git.worktree_remove_force(&worktree);
        let _ = workspace.git.worktree_prune();
        Some(collected?)
    } else {
        None
    };
    let (commits, recovered, left_base) = match collected {
        Some(c) => (c.commits, c.recovered, c.left_base),
        None => (Vec::new(), None, false),
    };
    let own: Vec<&String> = commits
        .iter()
        .filter(|c| Some(*c) != recovered.as_ref())
        .collect();
    let mut run_commits = queue(
        workspace,
        store,
        campaign,
        engine,
        run,
        idea,
        &own,
        &base_revision,
        settings,
    )?;
    if let Some(r) = &recovered {
        run_commits.push(RunCommit {
            revision: r.clone(),
            candidate: None,
            note: "recovered: unsaved work, not measured".into(),
        });
    }
    let cancelled_by_hand = dir.join(CANCELLED_FILE).exists();
    let (end, exit_code, error) = classify(
        end,
        &stderr_tail,
        left_base,
        !own.is_empty(),
        recovered.is_some(),
    );
    let (exit_code, error) = match unknown_exit {
        Some(why) if exit_code == Some(0) => (
            None,
            Some(error.map_or(why.to_string(), |e| format!("{e}; {why}"))),
        ),
        _ => (exit_code, error),
    };
    let (end, error) = if cancelled_by_hand {
        (
            RunEnd::Cancelled,
            Some("cancelled by `tally implementer cancel`".to_string()),
        )
    } else {
        (end, error)
    };
    let settled = store.settle_run(
        campaign.id,
        run.number,
        &RunSettlement {
            end,
            exit_code,
            error: error.clone(),
            commits: run_commits,
            ended: UnixMillis::now(),
        },
    )?;
    // A run that did not start ran no agent: there is no usage to read.
    if let Some(settings) = settings.filter(|_| end != RunEnd::NotStarted) {
        record_usage(store, campaign, run.number, &dir, settings)?;
    }
    let queued = settled.settled.as_ref().map_or(0, |s| {
        s.commits.iter().filter(|c| c.candidate.is_some()).count()
    });
    printer::note(&format!(
        "run#{} ended {}: {} commit(s), {queued} queued{}",
        run.number,
        end.as_str(),
        commits.len(),
        error
            .map(|e| format!(" ({})", e.lines().next().unwrap_or_default()))
            .unwrap_or_default()
    ));
    if let Some(idea) = idea {
        if cancelled_by_hand && idea.state == IdeaState::Ready {
            let reason = format!("run#{} was cancelled by hand", run.number);
            store.set_idea_state(
                campaign.id,
                idea.number,
                IdeaState::Parked,
                Some(&reason),
                UnixMillis::now(),
            )?;
        } else {
            settle_idea(store, campaign, idea, settings)?;
        }
    }
    Ok(end)
}

/// Reads the run's usage ([`usage::read`]), stores it and says what it cost; unknown is said
/// too, with the command that records it by hand.
fn record_usage(
    store: &dyn ImplementerStore,
    campaign: &Campaign,
    run: u32,
    dir: &std::path::Path,
    settings: &ImplementerSettings,
) -> anyhow::Result<()> {
    let usage = match usage::read(dir, settings) {
        Ok(usage) => usage,
        Err(problem) => {
            printer::note(&format!("run#{run}: usage not read: {problem}"));
            None
        }
    };
    if let Some(u) = &usage {
        store.set_run_usage(campaign.id, run, u)?;
    }
    let known = usage.as_ref().and_then(|u| u.usd);
    printer::note(&format!(
        "run#{run} usage: {}{}",
        usage_text(usage.as_ref()),
        if known.is_none() {
            format!("; record its cost with `tally implementer usage run#{run} --usd X`")
        } else {
            String::new()
        }
    ));
    Ok(())
}

/// `1200 in, 300 out, 0 cached tokens, $0.0123 (priced from codex)`, unknowns as `?`.
pub fn usage_text(usage: Option<&RunUsage>) -> String {
    let Some(u) = usage else {
        return "unknown (nothing reported)".to_string();
    };
    let n = |x: Option<u64>| x.map_or_else(|| "?".to_string(), |n| n.to_string());
    let usd = match (u.usd, u.usd_source.as_deref()) {
        (Some(usd), Some(how)) if how == u.source => format!("${usd:.4} ({how})"),
        (Some(usd), Some(how)) => format!("${usd:.4} ({how}, {})", u.source),
        (Some(usd), None) => format!("${usd:.4} ({})", u.source),
        (None, _) => format!("USD unknown ({})", u.source),
    };
    format!(
        "{} in, {} out, {} cached tokens, {usd}",
        n(u.input),
        n(u.output),
        n(u.cached)
    )
}

/// The idea after a run: attempts used up → done; two runs that did not start → parked.
fn settle_idea(
    store: &dyn ImplementerStore,
    campaign: &Campaign,
    idea: &Idea,
    settings: Option<&ImplementerSettings>,
) -> anyhow::Result<()> {
    if idea.state != IdeaState::Ready {
        return Ok(());
    }
    let runs = store.list_runs(campaign.id)?;
    let (used, allowed) = (used(idea, &runs), allowed(idea, settings));
    let not_started = runs
        .iter()
        .filter(|r| r.started.idea == idea.number)
        .filter(|r| {
            r.settled
                .as_ref()
                .is_some_and(|s| s.end == RunEnd::NotStarted)
        })
        .count();
    let change = if used >= allowed {
        Some((
            IdeaState::Done,
            format!("attempts used: {used} of {allowed}"),
        ))
    } else if not_started >= 2 {
        Some((
            IdeaState::Parked,
            "its implementer did not start twice".to_string(),
        ))
    } else {
        None
    };
    if let Some((state, reason)) = change {
        store.set_idea_state(
            campaign.id,
            idea.number,
            state,
            Some(&reason),
            UnixMillis::now(),
        )?;
    }
    Ok(())
}

fn classify(
    end: Result<End, String>,
    stderr_tail: &str,
    left_base: bool,
    own_commits: bool,
    recovered: bool,
) -> (RunEnd, Option<i32>, Option<String>) {
    let with_tail = |head: String| {
        if stderr_tail.is_empty() {
            head
        } else {
            format!("{head}; stderr: {stderr_tail}")
        }
    };
    let exit_code = match &end {
        Ok(End::Exited(code)) => Some(*code),
        _ => None,
    };
    let nothing = !own_commits && !recovered;
    let (kind, error) = match end {
        Err(why) if nothing => (RunEnd::NotStarted, Some(why)),
        Err(why) => (RunEnd::Cancelled, Some(why)),
        Ok(End::Exited(code @ (126 | 127))) if nothing => (
            RunEnd::NotStarted,
            Some(with_tail(format!("the agent did not start (exit {code})"))),
        ),
        _ if left_base => (RunEnd::Failed, Some("HEAD left the base".to_string())),
        Ok(End::Cancelled) => (RunEnd::Cancelled, Some("cancelled (interrupted)".into())),
        Ok(End::TimedOut) => (RunEnd::TimedOut, Some("killed at the timeout".into())),
        Ok(End::Exited(0)) if own_commits => (RunEnd::Finished, None),
        Ok(End::Exited(0)) if recovered => (RunEnd::Interrupted, None),
        Ok(End::Exited(0)) => (RunEnd::NoCommits, None),
        Ok(End::Exited(code)) => (RunEnd::Failed, Some(with_tail(format!("exit {code}")))),
        Ok(End::Signalled(signal)) => (
            RunEnd::Failed,
            Some(with_tail(format!("killed by signal {signal}"))),
        ),
    };
    (kind, exit_code, error)
}

/// Queues the run's own commits as candidates, in order; one whose tree differs from the base in
/// a protected path is added already judged `discard`, never measured.
#[allow(clippy::too_many_arguments)]
fn queue(
    workspace: &Workspace,
    store: &dyn ImplementerStore,
    campaign: &Campaign,
    engine: &tally_engine::Engine<'_>,
    run: &Run,
    idea: Option<&Idea>,
    own: &[&String],
    base_revision: &str,
    settings: Option<&ImplementerSettings>,
) -> anyhow::Result<Vec<RunCommit>> {
    let mut out = Vec::new();
    if own.is_empty() {
        return Ok(out);
    }
    let max = settings.map_or(5, |s| s.max_measured) as usize;
    let git = &workspace.git;
    let existing = engine.data()?.candidates;
    let existing_revisions: Vec<&str> = existing.iter().map(|c| c.revision.as_str()).collect();
    let mut known: Vec<(String, CandidateId)> = git
        .trees_of(&existing_revisions)?
        .into_iter()
        .zip(existing.iter().map(|c| CandidateId(c.id as u32)))
        .collect();
    let own_trees = git.trees_of(&own.iter().map(|c| c.as_str()).collect::<Vec<_>>())?;
    let last = own.len() - 1;
    let mut measured = 0usize;
    for (i, (commit, tree)) in own.iter().zip(&own_trees).enumerate() {
        if let Some((_, same)) = known.iter().find(|(t, _)| t == tree) {
            out.push(RunCommit {
                revision: (*commit).clone(),
                candidate: Some(*same),
                note: format!("same tree as {same}: not measured again"),
            });
            continue;
        }
        if let Some(path) = protected_change(workspace, base_revision, commit, settings)? {
            let reason = format!("refused: changes protected path {path}");
            let id = CommitId::parse(commit).context("git printed a commit id it cannot parse")?;
            let note = format!("run#{}: {reason}", run.number);
            let added = engine.add_candidates(
                &[id],
                Some(&note),
                &format!("implementer#{}", run.number),
            )?;
            let candidate = added
                .first()
                .map(|c| c.id)
                .context("no candidate was added")?;
            let _ = store.set_verdict(
                campaign.id,
                candidate,
                &VerdictWrite {
                    verdict: Verdict::Discard,
                    reason: Some(reason.clone()),
                    by: Actor::Loop,
                    at: UnixMillis::now(),
                    judged_against: None,
                    head: HeadUpdate::Unchanged,
                },
            )?;
            printer::note(&format!("{candidate}: discard — {reason} (not measured)"));
            known.push((tree.clone(), candidate));
            out.push(RunCommit {
                revision: (*commit).clone(),
                candidate: Some(candidate),
                note: reason,
            });
            continue;
        }
        let message = git.command(&["log", "-1", "--format=%B", commit])?;
        let steering = trailers::parse(&message);
        if steering.skip {
            printer::note(&format!(
                "run#{}: {} {}",
                run.number,
                &commit[..commit.len().min(12)],
                trailers::SKIPPED
            ));
            out.push(RunCommit {
                revision: (*commit).clone(),
                candidate: None,
                note: trailers::SKIPPED.into(),
            });
            continue;
        }
        // The first max - 1 and the last are queued.
        if measured + 1 >= max && i != last {
            out.push(RunCommit {
                revision: (*commit).clone(),
                candidate: None,
                note: "skipped: over max_measured".into(),
            });
            continue;
        }
        let subject = collect::subject(workspace.root(), commit);
        let note = format!(
            "run#{}{}: {subject}",
            run.number,
            idea.map(|i| format!(" idea#{}", i.number))
                .unwrap_or_default()
        );
        let id = CommitId::parse(commit).context("git printed a commit id it cannot parse")?;
        let added =
            engine.add_candidates(&[id], Some(&note), &format!("implementer#{}", run.number))?;
        let candidate = added
            .first()
            .map(|c| c.id)
            .context("no candidate was added")?;
        known.push((tree.clone(), candidate));
        measured += 1;
        out.push(RunCommit {
            revision: (*commit).clone(),
            candidate: Some(candidate),
            note: steering
                .note
                .map_or_else(|| "queued".into(), |n| format!("{}{n}", trailers::NOTED)),
        });
    }
    Ok(out)
}

/// The first protected path (by `[implementer] protect`) whose content differs between the base
/// and `commit`, if any.
fn protected_change(
    workspace: &Workspace,
    base: &str,
    commit: &str,
    settings: Option<&ImplementerSettings>,
) -> anyhow::Result<Option<String>> {
    let Some(settings) = settings else {
        return Ok(None);
    };
    let changed = workspace
        .git
        .command(&["diff", "--name-only", "--no-renames", base, commit])?;
    Ok(changed
        .lines()
        .find(|path| settings.protect.iter().any(|g| glob::matches(g, path)))
        .map(str::to_string))
}

/// A campaign name as a ref component.
fn ref_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}
