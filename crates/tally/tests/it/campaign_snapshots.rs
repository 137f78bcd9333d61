//! Snapshots of what people read: `tally status`, `tally brief` and `tally plugins` on one
//! inference campaign (a keep, a gain below `min_speedup`, a crash, a regression and a candidate
//! still waiting).
//!
//! [`snapshot`] works as uv's test suite's helper does: the exit status, standard output and
//! standard error in one text, with regex filters applied in order to what changes between runs
//! and machines (temporary paths, commit ids, evaluator ids, timings and the money they cost).
//!
//! Update them with `INSTA_UPDATE=always cargo test -p tally --test it campaign_snapshots` and
//! review the diff; the exact verdict reasons are pinned by the campaign tests, these pin the
//! layout.

use std::process::Output;

use regex::Regex;

use crate::campaign_repo::{CampaignRepo, text};

/// `(pattern, replacement)` pairs, applied in order.
type Filters = Vec<(String, String)>;

/// The filters every campaign snapshot needs. Replacements of commit ids keep their width, so
/// the terminal tables stay aligned.
fn campaign_filters(repo: &CampaignRepo) -> Filters {
    vec![
        (regex::escape(&repo.marker()), "[TEMP]".into()),
        (r"\b[0-9a-f]{40}\b".into(), "[FULL-COMMIT-ID]".into()),
        (r"\b[0-9a-f]{12}\b".into(), "<revision12>".into()),
        (r"#(\d+) [0-9a-f]{7}\b".into(), "#$1 <rev-7>".into()),
        (r"\bev-[0-9a-f]{16}\b".into(), "ev-[EVALUATOR]".into()),
        // Timings and what they cost.
        (r"\d+\.\d+ (h|USD)\b".into(), "[N] $1".into()),
        // A duration's unit follows its size (`docs/campaign.md#sections`).
        (r"\d+\.\d+ (min|s|ms)\b".into(), "[DURATION]".into()),
        (r"\$\d+\.\d\d/".into(), "$$[N]/".into()),
        (r"\$\d+\.\d\d spent".into(), "$$[N] spent".into()),
        (
            r"\b\d+\.\d\d of (\S+) used, \d+\.\d\d left".into(),
            "[N] of $1 used, [N] left".into(),
        ),
        (r"after \d+\.\ds".into(), "after [N]s".into()),
    ]
}

/// Applies `filters` to `text`, in order.
fn redact(text: &str, filters: &Filters) -> String {
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
fn snapshot(out: &Output, filters: &Filters) -> String {
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

const SERVING: &str = r#"
name = "serving"
evaluate = ["./evaluate.sh"]

[[metrics]]
name = "tok_s"
direction = "higher"
role = "primary"
repeats = 3

[[metrics]]
name = "p50_ms"
direction = "lower"
role = "guardrail"
margin = 2.0

[[metrics]]
name = "p95_ms"
direction = "lower"
role = "watch"

[plugins.verdict_rule]
provider = "min_speedup"
min_speedup = 0.05

[plugins.stop_rule]
provider = "limits"
hold_at = { gpu_usd = 50 }
plateau = 10

[[plugins.fact_source]]
provider = "gpu_hours"
usd_per_gpu_hour = 2.5
"#;

const BRIEF: &str = "# Brief\n\nMake the server faster without hurting the median latency.\n";

/// The campaign every snapshot shows.
fn serving_campaign() -> CampaignRepo {
    let repo = CampaignRepo::new();
    repo.write("brief.md", BRIEF);
    repo.start_campaign(SERVING, "tok_s=1000\nnoise=0.01\np50_ms=20\np95_ms=40\n");
    repo.propose(&[
        "tok_s=1100\nnoise=0.002\np50_ms=19\np95_ms=38\n",
        "tok_s=1133\nnoise=0.0002\np50_ms=19.25\np95_ms=37\n",
        "mode=crash\n",
        "tok_s=900\nnoise=0.01\np50_ms=25\np95_ms=50\n",
    ]);
    let out = repo.run_until_idle();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    repo.propose(&["tok_s=1300\nnoise=0.01\np50_ms=18\np95_ms=36\n"]);
    repo
}

#[test]
fn status_of_an_inference_campaign() {
    let repo = serving_campaign();
    let out = repo.tally(&["status"]);
    insta::assert_snapshot!(snapshot(&out, &campaign_filters(&repo)));
}

#[test]
fn brief_of_an_inference_campaign() {
    let repo = serving_campaign();
    let out = repo.tally(&["brief"]);
    insta::assert_snapshot!(snapshot(&out, &campaign_filters(&repo)));
}

#[test]
fn plugins_of_an_inference_campaign() {
    // `plugins` reads tally.toml only: no campaign needs to be registered.
    let repo = CampaignRepo::new();
    repo.write("tally.toml", SERVING);
    let out = repo.tally(&["plugins"]);
    insta::assert_snapshot!(snapshot(&out, &campaign_filters(&repo)));
}
