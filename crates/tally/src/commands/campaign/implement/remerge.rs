//! Agent candidates the head left behind (`docs/implementers.md#head-moved`): a pending candidate
//! of a run — its own commit, or a merge tally made for it — that does not contain the head would,
//! if kept, become the head and drop what the head gained meanwhile. Such a candidate is judged
//! `interesting` and merged onto the head as a new candidate, or named as conflicting: when the
//! run's commits are queued (`queue`) and, through [`rescan`], after each judged unit that moved
//! the head. A run's later pending commit is merged onto the merge of its earlier one, so the
//! merges keep the run's order and each contains the one before.

use tally_model::{Campaign, CandidateId, EvaluationState, UnixMillis, Verdict};
use tally_store::{ImplementerStore, Run, RunCommit};

use super::super::context::Workspace;
use super::merge::{self, Onto};
use super::{collect, needs_identity, pins, queue};

/// What a pending commit is merged onto: the head, or the merge of the run's earlier commit
/// (itself merged onto the head).
#[derive(Clone)]
pub struct Target {
    /// The candidate merged onto.
    pub candidate: CandidateId,
    /// Its revision.
    pub revision: String,
    /// The head it stands for.
    pub head: CandidateId,
}

impl Target {
    /// The head itself.
    pub fn head(candidate: CandidateId, revision: String) -> Self {
        Target {
            candidate,
            revision,
            head: candidate,
        }
    }

    /// `head candidate#1`, or `candidate#4 (the run's earlier commit merged onto head
    /// candidate#1)`.
    fn describe(&self) -> String {
        if self.candidate == self.head {
            format!("head {}", self.head)
        } else {
            format!(
                "{} (the run's earlier commit merged onto head {})",
                self.candidate, self.head
            )
        }
    }
}

/// Merges the run's pending `commit` (candidate `own`) onto `onto`. `own` is judged
/// `interesting`: "head moved: merged onto candidate#H as candidate#M", or "conflicts with head
/// candidate#H in PATHS" with nothing queued. Answers the reason and the merge's row when one
/// was queued.
#[allow(clippy::too_many_arguments)]
pub fn merge_one(
    workspace: &Workspace,
    engine: &tally_engine::Engine<'_>,
    store: &dyn ImplementerStore,
    campaign: &Campaign,
    run: &Run,
    own: CandidateId,
    commit: &str,
    onto: &Target,
) -> anyhow::Result<(String, Option<RunCommit>)> {
    let short = &commit[..commit.len().min(12)];
    let subject = collect::subject(workspace.root(), commit);
    let message = format!(
        "tally: merge run#{}'s {short} onto {}\n\n{subject}\n\nTally-Merge: run#{}\n",
        run.number, onto.candidate, run.number
    );
    let identity = needs_identity(workspace).then_some(run.number);
    match merge::onto_head(workspace.root(), &onto.revision, commit, &message, identity)? {
        Onto::Conflict(paths) => {
            let reason = format!("conflicts with {} in {}", onto.describe(), paths.join(", "));
            queue::judge_unmeasured(store, campaign, own, Verdict::Interesting, &reason)?;
            Ok((reason, None))
        }
        Onto::Merged(merged) => {
            let note = format!(
                "merge: run#{}'s {short} ({own}) onto {}",
                run.number,
                onto.describe()
            );
            let merge = queue::add(engine, run, &merged, &note)?;
            let pin = pins::merge_pin(&campaign.name, run.number, merge);
            workspace.git.command(&["update-ref", &pin, &merged])?;
            let reason = format!("head moved: merged onto {} as {merge}", onto.candidate);
            queue::judge_unmeasured(store, campaign, own, Verdict::Interesting, &reason)?;
            Ok((
                reason,
                Some(RunCommit {
                    revision: merged,
                    candidate: Some(merge),
                    note: format!("queued: {note}"),
                }),
            ))
        }
    }
}

/// After the head moved: every pending candidate of a settled run (proposed by that run, so a
/// person's candidates are never touched) that does not contain the head is merged onto it
/// ([`merge_one`]); the merges are appended to the run's commits. An evaluation of such a
/// candidate that is still queued (`tally candidate remeasure`) or was left running by a killed
/// `tally run` is abandoned first, so it is never judged after all: it runs on the loop's
/// thread, between evaluations, so none of this process is in flight. A run whose idea pins a
/// `--base` is left as it is. Answers how many merges were queued.
pub fn rescan(
    workspace: &Workspace,
    store: &dyn ImplementerStore,
    engine: &tally_engine::Engine<'_>,
) -> anyhow::Result<usize> {
    let campaign = engine.campaign()?;
    let Some(head) = campaign.head else {
        return Ok(0);
    };
    let Some(head) = store.candidate(campaign.id, head)? else {
        return Ok(0);
    };
    let unfinished = store.unfinished_evaluations(campaign.id)?;
    let mut queued = 0;
    for run in store.list_runs(campaign.id)? {
        let Some(settled) = &run.settled else {
            continue;
        };
        let pinned = store
            .idea(campaign.id, run.started.idea)?
            .is_some_and(|i| i.base.is_some());
        if pinned {
            continue;
        }
        let proposer = format!("implementer#{}", run.number);
        let mut onto = Target::head(head.id, head.revision.clone());
        let mut merges = Vec::new();
        for row in &settled.commits {
            let Some(id) = row.candidate else {
                continue;
            };
            let Some(candidate) = store.candidate(campaign.id, id)? else {
                continue;
            };
            if candidate.verdict != Verdict::Pending
                || candidate.proposed_by != proposer
                || merge::contains(workspace.root(), &candidate.revision, &onto.revision)?
            {
                continue;
            }
            for evaluation in unfinished.iter().filter(|e| e.candidate == id) {
                store.end_evaluation(
                    evaluation.id,
                    EvaluationState::Abandoned,
                    Some(&format!(
                        "the head moved to {} past {id}, an agent commit that does not contain it",
                        head.id
                    )),
                    UnixMillis::now(),
                )?;
            }
            let (_, merged) = merge_one(
                workspace,
                engine,
                store,
                &campaign,
                &run,
                id,
                &candidate.revision,
                &onto,
            )?;
            if let Some(row) = merged {
                onto = Target {
                    candidate: row.candidate.expect("a queued merge has its candidate"),
                    revision: row.revision.clone(),
                    head: head.id,
                };
                merges.push(row);
            }
        }
        if !merges.is_empty() {
            queued += merges.len();
            store.append_run_commits(campaign.id, run.number, &merges)?;
        }
    }
    Ok(queued)
}
