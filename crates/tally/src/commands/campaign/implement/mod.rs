//! Implementer runs inside `tally run` (`docs/implementers.md#runs`): `launch` picks the first
//! ready idea with attempts left, records the run and makes its worktree at the base candidate
//! outside the repository with the brief beside it; `agent` runs it to its end (exit, timeout,
//! Ctrl-C); here its work is collected, its commits queued as candidates in order (`queue`), the
//! run and the idea settled; `remerge` merges a pending agent candidate onto a head that moved
//! past it. `driver` runs one agent at a time or, with `overlap = "parallel"`,
//! several while the queue is judged. A run left unsettled by a killed `tally run` is settled
//! first: its agent adopted while alive (`adopt`), then collected. `trailers` reads the
//! `Tally-Eval`/`Tally-Note` trailers; `breaker` pauses launches after runs that did not start;
//! `pins` restores the refs that keep runs' commits; `anomalies` lists what a person should look
//! at (refusals, runs that did not start); `requeue` says which unfinished run an idea's next run
//! continues.

mod adopt;
mod agent;
pub mod anomalies;
mod breaker;
pub mod brief;
mod collect;
mod driver;
mod glob;
pub mod history;
mod launch;
mod merge;
mod pins;
mod queue;
mod remerge;
mod requeue;
mod trailers;
pub mod usage;

pub use driver::{Driven, drive};

use std::path::PathBuf;

use anyhow::Context;
use tally_config::ImplementerSettings;
use tally_model::{Actor, Campaign, CandidateId, UnixMillis, Verdict};
use tally_process::{CancelToken, End};
use tally_runner::default_worktree_root;
use tally_store::{
    HeadUpdate, Idea, IdeaState, ImplementerStore, Run, RunCommit, RunEnd, RunSettlement, RunUsage,
    VerdictWrite,
};

use super::context::{Loaded, Workspace};
use crate::printer;

/// The file `tally implementer cancel` leaves in a run's directory.
pub const CANCELLED_FILE: &str = "cancelled";

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

/// What a launch on `idea` writes and where its worktree starts.
pub struct Briefed {
    /// The brief.
    pub text: String,
    /// The run's base candidate: its commits are judged against the head, their protected
    /// paths compared with this.
    pub base: CandidateId,
    /// The base candidate's commit.
    pub revision: String,
    /// The commit the worktree starts at: the base's, or the last commit of the unfinished run
    /// it continues (`docs/implementers.md#requeue`).
    pub start: String,
}

/// The brief for `idea` on the campaign's current state (what a launch writes).
pub fn brief_text(
    loaded: &Loaded,
    store: &dyn ImplementerStore,
    campaign: &Campaign,
    idea: &Idea,
    campaign_brief: &str,
) -> anyhow::Result<Briefed> {
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
    let mut earlier = history::earlier_attempts(&summaries, idea.number);
    let runs = store.list_runs(campaign.id)?;
    let continues = requeue::next(idea.number, &runs, settings.requeue_unfinished);
    // It starts at the unfinished run's last commit while that run's base is still the base;
    // once the head moved past it, at the head, told where the work is.
    let from = continues.as_ref().filter(|c| c.base == base);
    if let Some(c) = &continues {
        let short = &c.commit[..c.commit.len().min(12)];
        let line = if from.is_some() {
            format!(
                "\nThis run continues run#{}'s unfinished work: your worktree starts at its last \
                 commit {short}, not at {base}. Those commits are recorded already: commit what \
                 you add.\n",
                c.run
            )
        } else {
            let old_base = store
                .candidate(campaign.id, c.base)?
                .map(|b| b.revision)
                .unwrap_or_default();
            format!(
                "\nrun#{} left unfinished work in commit {short}, built on {}; the head has moved \
                 past it since, so your worktree starts at the head: port what is worth keeping \
                 (`git diff {} {short}`).\n",
                c.run,
                c.base,
                &old_base[..old_base.len().min(12)]
            )
        };
        earlier.get_or_insert_with(String::new).push_str(&line);
    }
    let text = brief::compose(
        settings,
        &loaded.settings.evaluate,
        idea,
        &brief::Start {
            base: base.0,
            revision: &revision,
            continues: from.map(|c| (c.run, c.commit.as_str())),
        },
        campaign_brief,
        earlier.as_deref(),
    );
    let start = from.map_or_else(|| revision.clone(), |c| c.commit.clone());
    Ok(Briefed {
        text,
        base,
        revision,
        start,
    })
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
            None,
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
                && !candidate.reason.as_deref().is_some_and(|r| {
                    // A refusal, or a commit the head left behind (`remerge`): no judgement
                    // of the change for the note to replace.
                    r.starts_with("refused:")
                        || r.starts_with("head moved:")
                        || r.starts_with("conflicts with ")
                });
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
    stopped_for: Option<&str>,
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
        stopped_for,
    )
}

/// [`finish`]; with `unknown_exit`, the agent's exit code is unknown (an adopted agent): its
/// end is classified as after exit 0, no exit code is recorded, and the error says why. With
/// `stopped_for`, the campaign's stop (for that reason) reached the agent while it worked: the
/// run ends `stopped` (`docs/implementers.md#stop-grace`).
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
    stopped_for: Option<&str>,
) -> anyhow::Result<RunEnd> {
    let settings = loaded.settings.implementer.as_ref();
    let ignore: Vec<String> = settings.map(|s| s.ignore.clone()).unwrap_or_default();
    let dir = PathBuf::from(&run.started.run_dir);
    let worktree = dir.join("worktree");
    let base_revision = store
        .candidate(campaign.id, run.started.base)?
        .map(|c| c.revision)
        .unwrap_or_default();
    let pin_prefix = pins::run_prefix(&campaign.name, run.number);
    // A run that continued an unfinished one from its last commit lists its commits from there:
    // the earlier run's are recorded already (docs/implementers.md#requeue).
    let from = requeue::continued_by(
        run.started.idea,
        run.number,
        &store.list_runs(campaign.id)?,
        settings.map_or(0, |s| s.requeue_unfinished),
    )
    .filter(|c| c.base == run.started.base)
    .map(|c| c.commit);
    let collected = if worktree.is_dir() {
        let collected = collect::collect(
            workspace.root(),
            &worktree,
            &base_revision,
            from.as_deref(),
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
    let mut run_commits = queue::queue(
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
        stopped_for,
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
    // The agent shared the repository's refs: put back the pins it deleted or moved.
    // The run is settled already: a failure here is said, not fatal.
    match pins::restore(workspace, store, campaign) {
        Ok(0) => {}
        Ok(restored) => printer::note(&format!(
            "restored {restored} pin(s) under refs/tally/{}/ deleted or moved while run#{} worked",
            ref_name(&campaign.name),
            run.number
        )),
        Err(e) => printer::note(&format!(
            "run#{}: the pins under refs/tally/{}/ could not be checked: {e:#}",
            run.number,
            ref_name(&campaign.name)
        )),
    }
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

/// The idea after a run: attempts used up and no requeue due → done; two runs that did not
/// start → parked.
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
    let requeue_due = requeue::next(
        idea.number,
        &runs,
        settings.map_or(0, |s| s.requeue_unfinished),
    )
    .is_some();
    let change = if used >= allowed && !requeue_due {
        Some((
            IdeaState::Done,
            if used > allowed {
                format!(
                    "attempts used: {allowed} of {allowed}, and {} more run(s) continuing unfinished work",
                    used - allowed
                )
            } else {
                format!("attempts used: {used} of {allowed}")
            },
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
    stopped_for: Option<&str>,
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
        _ if left_base => (RunEnd::Failed, Some(anomalies::LEFT_BASE.to_string())),
        Ok(End::Cancelled) => (RunEnd::Cancelled, Some("cancelled (interrupted)".into())),
        Ok(how) if stopped_for.is_some() => {
            let how = match how {
                End::TimedOut => "killed after stop_grace".to_string(),
                End::Exited(code) => format!("exit {code} after the wrap-up file"),
                End::Signalled(signal) => format!("killed by signal {signal}"),
                End::Cancelled => "cancelled".to_string(),
            };
            let why = stopped_for.unwrap_or_default();
            (
                RunEnd::Stopped,
                Some(format!("the campaign stopped ({why}): {how}")),
            )
        }
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

/// A campaign name as a ref component.
pub(super) fn ref_name(name: &str) -> String {
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

/// Run `number` of idea 1, started at candidate#0, settled with `end` (unsettled when `None`):
/// for the unit tests of the modules that read stored runs.
#[cfg(test)]
fn test_run(
    number: u32,
    end: Option<tally_store::RunEnd>,
    error: Option<&str>,
    commits: Vec<RunCommit>,
) -> Run {
    use tally_model::CampaignId;
    Run {
        campaign: CampaignId(1),
        number,
        started: tally_store::NewRun {
            idea: 1,
            base: CandidateId(0),
            tag: String::new(),
            run_dir: String::new(),
            started: UnixMillis(0),
            deadline: UnixMillis(0),
        },
        settled: end.map(|end| RunSettlement {
            end,
            exit_code: None,
            error: error.map(str::to_string),
            commits,
            ended: UnixMillis(0),
        }),
        usage: None,
    }
}
