//! Queueing a run's own commits as candidates, in order (`docs/implementers.md#runs`): a tree
//! that already is a candidate resolves to it; a commit that changes a protected path is added
//! already judged `discard`; past `max_measured` the middle ones are skipped; and when the head
//! moved since the launch, a commit that does not contain it is recorded `interesting` and merged
//! onto it as a new candidate, or named as conflicting (`remerge`,
//! `docs/implementers.md#head-moved`).

use anyhow::Context;
use tally_config::ImplementerSettings;
use tally_model::{Actor, Campaign, CandidateId, UnixMillis, Verdict};
use tally_runner::CommitId;
use tally_store::{HeadUpdate, Idea, ImplementerStore, Run, RunCommit, VerdictWrite};

use super::super::context::Workspace;
use super::merge;
use super::remerge::{self, Target};
use super::{collect, glob, trailers};
use crate::printer;

/// Queues the run's own commits as candidates, in order; one whose tree differs from the base in
/// a protected path is added already judged `discard`, never measured.
#[allow(clippy::too_many_arguments)]
pub fn queue(
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
    // The head moved since the launch (the run started at the head, not at an idea's pinned
    // base): commits that do not contain the new head are merged onto it, each after the
    // first onto the merge of the one before.
    let mut moved = match engine.campaign()?.head {
        Some(head) if idea.is_none_or(|i| i.base.is_none()) && head != run.started.base => store
            .candidate(campaign.id, head)?
            .map(|c| Target::head(head, c.revision)),
        _ => None,
    };
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
            let note = format!("run#{}: {reason}", run.number);
            let candidate = add(engine, run, commit, &note)?;
            judge_unmeasured(store, campaign, candidate, Verdict::Discard, &reason)?;
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
        if let Some(onto) = &mut moved
            && !merge::contains(workspace.root(), commit, &onto.revision)?
        {
            let (judged, merged) =
                onto_moved_head(workspace, engine, store, campaign, run, idea, commit, onto)?;
            out.push(judged);
            if let Some(m) = merged {
                measured += 1;
                *onto = Target {
                    candidate: m.candidate.expect("a queued merge has its candidate"),
                    revision: m.revision.clone(),
                    head: onto.head,
                };
                out.push(m);
            }
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

/// Adds `commit` as a pending candidate proposed by the run.
pub(super) fn add(
    engine: &tally_engine::Engine<'_>,
    run: &Run,
    commit: &str,
    note: &str,
) -> anyhow::Result<CandidateId> {
    let id = CommitId::parse(commit).context("git printed a commit id it cannot parse")?;
    let added = engine.add_candidates(&[id], Some(note), &format!("implementer#{}", run.number))?;
    added
        .first()
        .map(|c| c.id)
        .context("no candidate was added")
}

/// Judges `candidate` `verdict` for `reason` without a measurement, and says so.
pub(super) fn judge_unmeasured(
    store: &dyn ImplementerStore,
    campaign: &Campaign,
    candidate: CandidateId,
    verdict: Verdict,
    reason: &str,
) -> anyhow::Result<()> {
    let _ = store.set_verdict(
        campaign.id,
        candidate,
        &VerdictWrite {
            verdict,
            reason: Some(reason.to_string()),
            by: Actor::Loop,
            at: UnixMillis::now(),
            judged_against: None,
            head: HeadUpdate::Unchanged,
        },
    )?;
    printer::note(&format!(
        "{candidate}: {} — {reason} (not measured)",
        verdict.as_str()
    ));
    Ok(())
}

/// The commit of the run that does not contain `onto` (the moved head, or the merge of the
/// run's earlier commit): added as a candidate first, so the candidates keep the run's order,
/// then judged `interesting` and merged onto `onto` as a new queued candidate unless they
/// conflict ([`remerge::merge_one`]). Answers the commit's row and the merge's, if any.
#[allow(clippy::too_many_arguments)]
fn onto_moved_head(
    workspace: &Workspace,
    engine: &tally_engine::Engine<'_>,
    store: &dyn ImplementerStore,
    campaign: &Campaign,
    run: &Run,
    idea: Option<&Idea>,
    commit: &str,
    onto: &Target,
) -> anyhow::Result<(RunCommit, Option<RunCommit>)> {
    let subject = collect::subject(workspace.root(), commit);
    let note = format!(
        "run#{}{}: {subject}",
        run.number,
        idea.map(|i| format!(" idea#{}", i.number))
            .unwrap_or_default()
    );
    let own = add(engine, run, commit, &note)?;
    let (reason, merged) =
        remerge::merge_one(workspace, engine, store, campaign, run, own, commit, onto)?;
    Ok((
        RunCommit {
            revision: commit.to_string(),
            candidate: Some(own),
            note: reason,
        },
        merged,
    ))
}
