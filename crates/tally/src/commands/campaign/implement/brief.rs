//! The brief an implementer gets (`docs/implementers.md#brief`): tally's rules, then what
//! `tally brief` prints (`brief.md`, the campaign context, the `run`-surface sections, the `runs`
//! section), then the idea and its earlier attempts. It names no run, path or clock value — those are in the agent's environment — so
//! `tally brief --idea N` prints exactly what a launch on the same state writes.

use tally_config::ImplementerSettings;
use tally_store::Idea;

/// Where the worktree of a launch starts.
pub struct Start<'a> {
    /// The base candidate's number.
    pub base: u32,
    /// Its commit.
    pub revision: &'a str,
    /// The unfinished run it continues and that run's last commit, where the worktree starts.
    pub continues: Option<(u32, &'a str)>,
}

/// The brief for `idea`, starting at `start`, around `campaign_brief` (the output of
/// `tally brief`).
pub fn compose(
    implementer: &ImplementerSettings,
    evaluate: &[String],
    idea: &Idea,
    start: &Start<'_>,
    campaign_brief: &str,
    earlier_attempts: Option<&str>,
) -> String {
    let Start {
        base,
        revision,
        continues,
    } = *start;
    let short = &revision[..12.min(revision.len())];
    let mut out = format!("# Implementer brief: idea#{}\n\n## Rules\n\n", idea.number);
    let rules = [
        match continues {
            None => format!(
                "You are in a git worktree of the campaign's repository at candidate#{base} \
                 ({short}), outside the repository itself (`$TALLY_BASE` is the full commit id)."
            ),
            Some((run, commit)) => format!(
                "You are in a git worktree of the campaign's repository at commit {}, the last \
                 commit of run#{run}'s unfinished work on candidate#{base} ({short}), outside \
                 the repository itself (`$TALLY_BASE` is candidate#{base}'s full commit id).",
                &commit[..12.min(commit.len())]
            ),
        },
        format!(
            "Commit each step that works. When you exit, your commits (first parent, oldest \
             first) become candidates in order, each measured and judged against the head; a keep \
             becomes the head the next one is judged against. At most {} are queued: past that \
             the earlier ones are skipped and the last is always queued. A commit with the same \
             tree as an existing candidate is that candidate and is not measured again.",
            implementer.max_measured
        ),
        format!(
            "Unsaved work left when you exit is committed for you (`Tally-Recovered`), kept under \
             a ref, and never measured: commit what you want judged.{}",
            if implementer.requeue_unfinished > 0 {
                " A run that ends unfinished (unsaved work, the deadline, a failure) is continued \
                 by a later run of this idea from its last commit."
            } else {
                ""
            }
        ),
        format!(
            "Your deadline is `$TALLY_DEADLINE` (Unix seconds, {} s after the start). The file \
             `$TALLY_WRAP_UP` appears {} s before it: when it exists, commit and exit. At the \
             deadline every process you started is killed.",
            implementer.timeout_s, implementer.wrap_up_s
        ),
        "Leave no background process: when you exit, every process you started is killed."
            .to_string(),
        "Before you exit, write 3 to 10 lines to `$TALLY_FINDING_FILE`: what you tried, what \
         moved, what did not and why. Later briefs show them to whoever works on this campaign \
         next."
            .to_string(),
        "`tally` commands that change the campaign refuse to run for you.".to_string(),
        format!(
            "The benchmark is `{}`, run from the repository's root; it prints `METRIC \
             name=value` lines.",
            evaluate.join(" ")
        ),
    ];
    for rule in rules {
        out.push_str(&format!("- {rule}\n"));
    }
    out.push('\n');
    out.push_str(campaign_brief.trim_end());
    out.push_str(&format!("\n\n## Your idea: {}\n\n", idea.title));
    if idea.text.trim().is_empty() {
        out.push_str("(no text: the title is the idea)\n");
    } else {
        out.push_str(idea.text.trim_end());
        out.push('\n');
    }
    if let Some(earlier) = earlier_attempts {
        out.push('\n');
        out.push_str(earlier);
    }
    out
}
