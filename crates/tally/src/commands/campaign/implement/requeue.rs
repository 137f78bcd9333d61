//! Requeueing an unfinished idea (`docs/implementers.md#requeue`): a run that ended unfinished
//! (`interrupted`, `timed_out`, `failed` with its HEAD on the base, `cancelled`, `stopped`) and left a
//! commit — its own or the recovered unsaved work — gives its idea another run started from that
//! commit, up to `[implementer] requeue_unfinished` times per idea, whether or not attempts are
//! left. Nothing is stored for it: which run continues which is derived from the idea's runs in
//! order, so the launch, the collection and the brief answer alike.

use tally_model::CandidateId;
use tally_store::{Run, RunEnd};

use super::anomalies::LEFT_BASE;
use super::pins::MERGE_NOTE;

/// An unfinished run a later run of its idea continues.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Continues {
    /// The unfinished run.
    pub run: u32,
    /// Its last commit (the worktree's HEAD when it ended).
    pub commit: String,
    /// Its base candidate: the continuation starts at `commit` only while it is still the base.
    pub base: CandidateId,
}

/// What `run` left to continue, when it ended unfinished with a commit.
fn unfinished(run: &Run) -> Option<Continues> {
    let settled = run.settled.as_ref()?;
    let ends = matches!(
        settled.end,
        RunEnd::Interrupted
            | RunEnd::TimedOut
            | RunEnd::Failed
            | RunEnd::Cancelled
            | RunEnd::Stopped
    );
    if !ends || settled.error.as_deref() == Some(LEFT_BASE) {
        return None;
    }
    // Merges are made on the head, not in the worktree: its HEAD is the last other commit.
    let last = settled
        .commits
        .iter()
        .rev()
        .find(|c| !c.note.starts_with(MERGE_NOTE))?;
    Some(Continues {
        run: run.number,
        commit: last.revision.clone(),
        base: run.started.base,
    })
}

/// Each run of `idea` that started (oldest first, runs that did not start left out) with the
/// run it continued, then what the idea's next run would continue.
fn chain(
    idea: u32,
    runs: &[Run],
    allowed: u32,
) -> (Vec<(u32, Option<Continues>)>, Option<Continues>) {
    let mut out = Vec::new();
    let mut used = 0;
    let mut previous: Option<Continues> = None;
    for run in runs.iter().filter(|r| r.started.idea == idea).filter(|r| {
        r.settled
            .as_ref()
            .is_none_or(|s| s.end != RunEnd::NotStarted)
    }) {
        let continues = previous.take().filter(|_| used < allowed);
        if continues.is_some() {
            used += 1;
        }
        out.push((run.number, continues));
        previous = unfinished(run);
    }
    let next = previous.filter(|_| used < allowed);
    (out, next)
}

/// The unfinished run the next run of `idea` continues, if a requeue is due.
pub fn next(idea: u32, runs: &[Run], allowed: u32) -> Option<Continues> {
    chain(idea, runs, allowed).1
}

/// The unfinished run that run `run` of `idea` continued, if it was a requeue.
pub fn continued_by(idea: u32, run: u32, runs: &[Run], allowed: u32) -> Option<Continues> {
    chain(idea, runs, allowed)
        .0
        .into_iter()
        .find(|(n, _)| *n == run)
        .and_then(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use tally_store::RunCommit;

    use super::*;

    fn run(number: u32, end: Option<RunEnd>, commits: &[&str]) -> Run {
        let commits = commits
            .iter()
            .map(|c| RunCommit {
                revision: c.to_string(),
                candidate: None,
                note: "queued".into(),
            })
            .collect();
        super::super::test_run(number, end, None, commits)
    }

    #[test]
    fn an_unfinished_run_with_a_commit_is_continued_as_often_as_allowed() {
        let runs = [
            run(1, Some(RunEnd::Interrupted), &["r1"]),
            run(2, Some(RunEnd::NotStarted), &[]),
            run(3, Some(RunEnd::TimedOut), &["a", "b"]),
            run(4, Some(RunEnd::Failed), &["c"]),
        ];
        let from = |run: u32, commit: &str| {
            Some(Continues {
                run,
                commit: commit.into(),
                base: CandidateId(0),
            })
        };
        // Once: run#3 continues run#1 (run#2 did not start); run#4 starts afresh.
        assert_eq!(continued_by(1, 3, &runs, 1), from(1, "r1"));
        assert_eq!(continued_by(1, 4, &runs, 1), None);
        assert_eq!(next(1, &runs, 1), None, "the one requeue is used");
        // Twice: run#4 continues run#3 from its last commit, and one more is due.
        assert_eq!(continued_by(1, 4, &runs, 2), from(3, "b"));
        assert_eq!(next(1, &runs, 3), from(4, "c"));
        // Never with 0, nor after a finished run or a run without commits.
        assert_eq!(next(1, &runs, 0), None);
        assert_eq!(next(1, &[run(1, Some(RunEnd::Finished), &["x"])], 1), None);
        assert_eq!(next(1, &[run(1, Some(RunEnd::Failed), &[])], 1), None);
        assert_eq!(next(1, &[run(1, None, &[])], 1), None, "a run in progress");
    }
}
