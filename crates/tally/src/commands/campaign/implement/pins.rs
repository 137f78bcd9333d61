//! The refs that keep implementer commits alive (`docs/implementers.md#pins`): each run's
//! commits are pinned as `refs/tally/<campaign>/runs/<run>/<i>` and the merges tally made for
//! them as `.../merge-<M>`, `M` the merge candidate's number. An agent's worktree shares the repository's refs, so an agent can delete or
//! move them; at each collection every pin the store knows of is rewritten when it is missing
//! or moved, as long as its commit still exists.

use std::collections::BTreeMap;

use tally_model::{Campaign, CandidateId};
use tally_store::{ImplementerStore, RunCommit};

use super::super::context::Workspace;
use super::ref_name;

/// The note of a run's merge commit starts with this (`remerge::merge_one`).
pub const MERGE_NOTE: &str = "queued: merge: ";

/// The prefix of run `run`'s pins: `refs/tally/<campaign>/runs/<run>`.
pub fn run_prefix(campaign: &str, run: u32) -> String {
    format!("{}/runs/{run}", campaign_prefix(campaign))
}

/// The prefix of every pin of the campaign: `refs/tally/<campaign>`.
fn campaign_prefix(campaign: &str) -> String {
    format!("refs/tally/{}", ref_name(campaign))
}

/// The name of the pin of run `run`'s merge candidate `merge`.
pub fn merge_pin(campaign: &str, run: u32, merge: CandidateId) -> String {
    format!("{}/merge-{}", run_prefix(campaign, run), merge.0)
}

/// The pins of one settled run, `(ref, commit)`: its own commits numbered from 1 in the order
/// collected, its merges by their candidate.
fn of_run(campaign: &str, run: u32, commits: &[RunCommit]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut own = 0;
    for c in commits {
        if c.note.starts_with(MERGE_NOTE) {
            if let Some(merge) = c.candidate {
                out.push((merge_pin(campaign, run, merge), c.revision.clone()));
            }
        } else {
            own += 1;
            out.push((
                format!("{}/{own}", run_prefix(campaign, run)),
                c.revision.clone(),
            ));
        }
    }
    out
}

/// Rewrites every pin of the campaign's settled runs that is missing or points elsewhere, when
/// its commit still exists; answers how many were rewritten.
pub fn restore(
    workspace: &Workspace,
    store: &dyn ImplementerStore,
    campaign: &Campaign,
) -> anyhow::Result<usize> {
    let git = &workspace.git;
    let listed = git.command(&[
        "for-each-ref",
        "--format=%(refname) %(objectname)",
        &format!("{}/", campaign_prefix(&campaign.name)),
    ])?;
    let present: BTreeMap<&str, &str> = listed.lines().filter_map(|l| l.split_once(' ')).collect();
    let mut restored = 0;
    for run in store.list_runs(campaign.id)? {
        let Some(settled) = &run.settled else {
            continue;
        };
        for (name, commit) in of_run(&campaign.name, run.number, &settled.commits) {
            if present.get(name.as_str()) == Some(&commit.as_str()) {
                continue;
            }
            // Objects are not collected at once: a commit whose pin went is usually still here.
            if git
                .command(&["cat-file", "-e", &format!("{commit}^{{commit}}")])
                .is_err()
            {
                continue;
            }
            git.command(&["update-ref", &name, &commit])?;
            restored += 1;
        }
    }
    Ok(restored)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit(revision: &str, note: &str) -> RunCommit {
        RunCommit {
            revision: revision.into(),
            candidate: note.starts_with(MERGE_NOTE).then_some(CandidateId(5)),
            note: note.into(),
        }
    }

    #[test]
    fn own_commits_are_numbered_and_merges_named_by_their_candidate() {
        let pins = of_run(
            "my camp",
            3,
            &[
                commit("a", "queued"),
                commit("b", "head moved: merged as candidate#5"),
                commit(
                    "m",
                    "queued: merge: run#3's b (candidate#4) onto head candidate#2",
                ),
                commit("r", "recovered: unsaved work, not measured"),
            ],
        );
        assert_eq!(
            pins,
            [
                ("refs/tally/my_camp/runs/3/1", "a"),
                ("refs/tally/my_camp/runs/3/2", "b"),
                ("refs/tally/my_camp/runs/3/merge-5", "m"),
                ("refs/tally/my_camp/runs/3/3", "r"),
            ]
            .map(|(n, c)| (n.to_string(), c.to_string()))
        );
    }
}
