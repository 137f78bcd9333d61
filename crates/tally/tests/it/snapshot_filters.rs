//! Turning a command's output into a stable snapshot, as uv's test suite does: the exit status,
//! standard output and standard error in one text, with regex filters applied in order to what
//! changes between runs and machines (temporary paths, commit ids, evaluator ids, timings and
//! the money they cost).
//!
//! Deliberately absent: asserting anything; the tests hand the text to `insta`.

use std::process::Output;

use regex::Regex;

use crate::campaign_repo::{CampaignRepo, text};

/// `(pattern, replacement)` pairs, applied in order.
pub type Filters = Vec<(String, String)>;

/// The filters every campaign snapshot needs. Replacements of commit ids keep their width, so
/// the terminal tables stay aligned.
pub fn campaign_filters(repo: &CampaignRepo) -> Filters {
    vec![
        (regex::escape(&repo.marker()), "[TEMP]".into()),
        (r"\b[0-9a-f]{40}\b".into(), "[FULL-COMMIT-ID]".into()),
        (r"\b[0-9a-f]{12}\b".into(), "<revision12>".into()),
        (r"#(\d+) [0-9a-f]{7}\b".into(), "#$1 <rev-7>".into()),
        (r"\bev-[0-9a-f]{16}\b".into(), "ev-[EVALUATOR]".into()),
        // Timings and what they cost.
        (r"\d+\.\d+ (h|USD|min)\b".into(), "[N] $1".into()),
        (r"\$\d+\.\d\d/".into(), "$$[N]/".into()),
        (
            r"\b\d+\.\d\d of (\S+) used, \d+\.\d\d left".into(),
            "[N] of $1 used, [N] left".into(),
        ),
        (r"after \d+\.\ds".into(), "after [N]s".into()),
    ]
}

/// Applies `filters` to `text`, in order.
pub fn redact(text: &str, filters: &Filters) -> String {
    filters
        .iter()
        .fold(text.to_string(), |acc, (pattern, with)| {
            Regex::new(pattern)
                .unwrap_or_else(|e| panic!("filter {pattern}: {e}"))
                .replace_all(&acc, with.as_str())
                .into_owned()
        })
}

/// The snapshot text of a finished command: status, stdout and stderr, filtered.
pub fn snapshot(out: &Output, filters: &Filters) -> String {
    format!(
        "success: {}\nexit_code: {}\n----- stdout -----\n{}\n----- stderr -----\n{}",
        out.status.success(),
        out.status
            .code()
            .map_or_else(|| "none".to_string(), |c| c.to_string()),
        redact(&text(&out.stdout), filters),
        redact(&text(&out.stderr), filters),
    )
}
