//! The worktree cache after campaigns (`docs/campaign.md#one-sample`): a finished evaluation
//! leaves nothing under `$XDG_CACHE_HOME/tally/worktrees` — no checkout, and no empty directory
//! of the repository or the campaign — whether it succeeded or crashed, and after a `tally run`
//! with nothing to do.

use std::path::PathBuf;

use crate::campaign_repo::{CampaignRepo, text, verdicts};

const CONFIG: &str = r#"
name = "tidy"
evaluate = ["./evaluate.sh"]

[[metrics]]
name = "tok_s"
direction = "higher"
role = "primary"
repeats = 2
"#;

/// Everything under the worktree cache, at any depth.
fn under_cache(repo: &CampaignRepo) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![repo.worktree_cache()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            found.push(entry.path());
            if entry.path().is_dir() {
                stack.push(entry.path());
            }
        }
    }
    found
}

#[test]
fn a_finished_evaluation_leaves_nothing_under_the_worktree_cache() {
    let repo = CampaignRepo::new();
    repo.start_campaign(CONFIG, "tok_s=1000\nnoise=0.01\nseed=1\n");
    assert_eq!(under_cache(&repo), Vec::<PathBuf>::new(), "after init");
    repo.propose(&["tok_s=1100\nnoise=0.01\nseed=2\n", "mode=crash\n"]);
    let out = repo.run_until_idle();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(verdicts(&repo.status_json()), ["keep", "keep", "crash"]);
    assert_eq!(under_cache(&repo), Vec::<PathBuf>::new(), "after run");
    // Nothing to do: nothing made.
    let out = repo.run_until_idle();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        under_cache(&repo),
        Vec::<PathBuf>::new(),
        "after an idle run"
    );
}
