//! Snapshots of what people read: `tally status`, `tally brief` and `tally plugins` on one
//! inference campaign (a keep, a gain below `min_speedup`, a crash, a regression and a candidate
//! still waiting), filtered by [`crate::snapshot_filters`].
//!
//! Update them with `INSTA_UPDATE=always cargo test -p tally --test it campaign_snapshots` and
//! review the diff; the exact verdict reasons are pinned by the campaign tests, these pin the
//! layout.

use crate::campaign_repo::{CampaignRepo, text};
use crate::snapshot_filters::{campaign_filters, snapshot};

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
