//! Anomalies of implementer runs (`docs/implementers.md#anomalies`): what a person should look
//! at, derived from what the store keeps rather than stored apart — a commit refused for a
//! protected path, a run whose agent did not start, a run whose HEAD left its base. `tally
//! status` shows them as the `anomalies` section, newest first; the brief does not (an agent
//! need not learn the guard).

use tally_plugin::{Block, Rendered, SectionOutput, Table};
use tally_store::{Run, RunEnd};

/// Anomalies the section shows.
pub const SHOWN_ANOMALIES: usize = 8;

/// The place of the `anomalies` section on a surface: after the `runs` section.
const ANOMALIES_ORDER: u32 = 1001;

/// The error of a run whose HEAD left its base (`classify` in `implement/mod.rs`).
pub const LEFT_BASE: &str = "HEAD left the base";

/// The prefix of a refused commit's note (`queue::queue`).
const REFUSED: &str = "refused: ";

/// One anomaly: the run and what happened.
#[derive(Debug, PartialEq, Eq)]
pub struct Anomaly {
    /// The run it happened in.
    pub run: u32,
    /// What happened, one line.
    pub what: String,
}

/// Every anomaly of `runs`, newest first (later runs first; within a run, later commits first).
pub fn of_runs(runs: &[Run]) -> Vec<Anomaly> {
    let mut out = Vec::new();
    for run in runs.iter().rev() {
        let Some(settled) = &run.settled else {
            continue;
        };
        let first_line = |e: &Option<String>| {
            e.as_deref()
                .and_then(|e| e.lines().next())
                .unwrap_or("no error recorded")
                .to_string()
        };
        if settled.end == RunEnd::NotStarted {
            out.push(Anomaly {
                run: run.number,
                what: format!("did not start: {}", first_line(&settled.error)),
            });
        }
        if settled.error.as_deref() == Some(LEFT_BASE) {
            out.push(Anomaly {
                run: run.number,
                what: "left its base: HEAD no longer contains the base commit; nothing queued"
                    .to_string(),
            });
        }
        for commit in settled.commits.iter().rev() {
            if let Some(why) = commit.note.strip_prefix(REFUSED) {
                out.push(Anomaly {
                    run: run.number,
                    what: format!(
                        "refused {}: {why}",
                        &commit.revision[..commit.revision.len().min(7)]
                    ),
                });
            }
        }
    }
    out
}

/// The `anomalies` section: the newest [`SHOWN_ANOMALIES`], then a count of the older ones;
/// `None` when there are none.
pub fn section(runs: &[Run]) -> Option<SectionOutput> {
    let anomalies = of_runs(runs);
    if anomalies.is_empty() {
        return None;
    }
    let rows = anomalies
        .iter()
        .take(SHOWN_ANOMALIES)
        .map(|a| vec![format!("run#{}", a.run), a.what.clone()])
        .collect();
    let mut blocks = vec![Block::Table(Table {
        columns: vec!["run".to_string(), "anomaly".to_string()],
        rows,
    })];
    if anomalies.len() > SHOWN_ANOMALIES {
        blocks.push(Block::Text(format!(
            "{} earlier anomaly(ies) not shown: `tally implementer list`",
            anomalies.len() - SHOWN_ANOMALIES
        )));
    }
    Some(SectionOutput::new(
        "anomalies",
        ANOMALIES_ORDER,
        Ok(Some(Rendered {
            title: "Implementer anomalies".into(),
            blocks,
        })),
    ))
}

#[cfg(test)]
mod tests {
    use tally_store::RunCommit;

    use super::*;

    fn run(number: u32, end: RunEnd, error: Option<&str>, notes: &[&str]) -> Run {
        let commits = notes
            .iter()
            .enumerate()
            .map(|(i, n)| RunCommit {
                revision: format!("{i}abcdef0123"),
                candidate: None,
                note: n.to_string(),
            })
            .collect();
        super::super::test_run(number, Some(end), error, commits)
    }

    #[test]
    fn refusals_runs_that_did_not_start_and_left_bases_are_listed_newest_first() {
        let runs = [
            run(
                1,
                RunEnd::Finished,
                None,
                &[
                    "refused: changes protected path evaluate.sh",
                    "queued",
                    "refused: changes protected path tally.toml",
                ],
            ),
            run(
                2,
                RunEnd::NotStarted,
                Some("the agent did not start (exit 127)\nmore"),
                &[],
            ),
            run(3, RunEnd::Failed, Some(LEFT_BASE), &[]),
            run(4, RunEnd::Finished, None, &["queued"]),
        ];
        let found: Vec<(u32, String)> = of_runs(&runs)
            .into_iter()
            .map(|a| (a.run, a.what))
            .collect();
        assert_eq!(
            found,
            [
                (
                    3,
                    "left its base: HEAD no longer contains the base commit; nothing queued"
                ),
                (2, "did not start: the agent did not start (exit 127)"),
                (1, "refused 2abcdef: changes protected path tally.toml"),
                (1, "refused 0abcdef: changes protected path evaluate.sh"),
            ]
            .map(|(r, w)| (r, w.to_string()))
        );
        assert!(section(&runs[3..]).is_none(), "no anomaly, no section");
        // Capped: the newest 8, then a count of the rest.
        let many: Vec<Run> = (1..=10)
            .map(|n| run(n, RunEnd::NotStarted, Some("exit 127"), &[]))
            .collect();
        let shown = section(&many).expect("a section");
        let Ok(Some(rendered)) = &shown.result else {
            panic!("a rendered section");
        };
        match &rendered.blocks[..] {
            [Block::Table(t), Block::Text(more)] => {
                assert_eq!(t.rows.len(), SHOWN_ANOMALIES);
                assert_eq!(t.rows[0][0], "run#10");
                assert_eq!(
                    more,
                    "2 earlier anomaly(ies) not shown: `tally implementer list`"
                );
            }
            other => panic!("{other:?}"),
        }
    }
}
