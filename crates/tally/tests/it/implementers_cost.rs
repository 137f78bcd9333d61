//! What implementers cost, as facts, through the binary (`docs/implementers.md#agent-usage`,
//! `docs/implementers.md#gating`): an agent that writes `$TALLY_USAGE_FILE` with the USD its
//! idea's `SCRIPT: usd=` line gives; `hold_at` on `agent_usd` or `total_usd` holds `tally run`
//! before the launch that would cross it, and a run of unknown cost holds it until
//! `tally implementer usage` records one.

use serde_json::Value;

use crate::campaign_repo::{CampaignRepo, candidate, text};

/// Commits each `SCRIPT: conf=` line, then writes the `SCRIPT: usd=` cost, if any, to
/// `$TALLY_USAGE_FILE`.
const AGENT: &str = r#"#!/bin/sh
set -eu
for c in $(sed -n 's/^SCRIPT: conf=//p' "$1"); do
    printf '%s\n' "$c" > bench.conf
    git commit -qam "agent: $c"
done
usd=$(sed -n 's/^SCRIPT: usd=//p' "$1")
if [ -n "$usd" ]; then
    printf '{"input": 1000, "output": 100, "usd": %s}' "$usd" > "$TALLY_USAGE_FILE"
fi
"#;

fn campaign(plugins: &str) -> CampaignRepo {
    let repo = CampaignRepo::new();
    repo.write_executable("agent.sh", AGENT);
    repo.start_campaign(
        &format!(
            r#"
name = "costs"
evaluate = ["./evaluate.sh"]

[[metrics]]
name = "tok_s"
direction = "higher"
role = "primary"
repeats = 2

{plugins}

[implementer]
command = ["sh", "agent.sh", "{{brief_file}}"]
"#
        ),
        "tok_s=1000\n",
    );
    repo
}

fn add_idea(repo: &CampaignRepo, title: &str, script: &str) {
    let out = repo.tally(&["idea", "add", title, "--text", script, "--attempts", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

fn runs(repo: &CampaignRepo) -> Vec<Value> {
    let out = repo.tally(&["implementer", "list", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    serde_json::from_slice::<Value>(&out.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

const AGENT_USD_LIMIT: &str = r#"
[plugins.stop_rule]
hold_at = { agent_usd = 1.0 }

[[plugins.fact_source]]
provider = "agent_usage"
"#;

#[test]
fn the_launch_that_would_cross_agent_usd_is_held_with_the_projection() {
    let repo = campaign(AGENT_USD_LIMIT);
    add_idea(&repo, "first", "SCRIPT: conf=tok_s=1200\nSCRIPT: usd=0.6\n");
    add_idea(
        &repo,
        "second",
        "SCRIPT: conf=tok_s=1400\nSCRIPT: usd=0.6\n",
    );
    let out = repo.run_until_idle();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("is held: hold_at: agent_usd 0.60 + 0.60 expected would reach 1"),
        "{stderr}"
    );
    assert_eq!(runs(&repo).len(), 1, "the second idea was not launched");
    assert_eq!(
        candidate(&repo.status_json(), 1)["verdict"],
        "keep",
        "the first run's commit was judged: an evaluation does not grow agent_usd"
    );
    let status = repo.status_json();
    assert_eq!(status["campaign"]["state"], "held", "{status}");

    let out = repo.tally(&["status"]);
    let shown = text(&out.stdout);
    assert!(shown.contains("agent_usd"), "{shown}");
}

#[test]
fn a_run_of_unknown_cost_holds_until_its_cost_is_recorded() {
    let repo = campaign(AGENT_USD_LIMIT);
    add_idea(&repo, "first", "SCRIPT: conf=tok_s=1200\n");
    add_idea(
        &repo,
        "second",
        "SCRIPT: conf=tok_s=1400\nSCRIPT: usd=0.1\n",
    );
    let out = repo.run_until_idle();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains(
            "is held: hold_at: agent_usd unknown: agent_usage: run#1 reported no cost; record it with `tally implementer usage run#1 --usd X`"
        ),
        "{stderr}"
    );
    assert_eq!(
        candidate(&repo.status_json(), 1)["verdict"],
        "pending",
        "nothing more runs on an unknown cost, not even an evaluation"
    );

    let out = repo.tally(&["implementer", "usage", "run#1", "--usd", "0.2"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = repo.run_until_idle();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(runs(&repo).len(), 2, "the second idea is launched");
    assert_eq!(candidate(&repo.status_json(), 2)["verdict"], "keep");
}

#[test]
fn total_usd_adds_gpu_and_agent_usd_and_holds_the_launch() {
    let repo = campaign(
        r#"
[plugins.stop_rule]
hold_at = { total_usd = 1.0 }

[[plugins.fact_source]]
provider = "gpu_hours"
usd_per_gpu_hour = 0

[[plugins.fact_source]]
provider = "agent_usage"
"#,
    );
    add_idea(&repo, "first", "SCRIPT: conf=tok_s=1200\nSCRIPT: usd=0.7\n");
    add_idea(
        &repo,
        "second",
        "SCRIPT: conf=tok_s=1400\nSCRIPT: usd=0.7\n",
    );
    let out = repo.run_until_idle();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("is held: hold_at: total_usd 0.70 + 0.70 expected would reach 1"),
        "{stderr}"
    );
    assert_eq!(runs(&repo).len(), 1);
    let facts = &repo.status_json()["facts"];
    assert_eq!(
        (
            &facts["agent_usd"],
            &facts["gpu_usd"],
            &facts["total_usd"],
            &facts["agent_runs"]
        ),
        (&0.7.into(), &0.0.into(), &0.7.into(), &1.0.into()),
        "{facts}"
    );
    let listed = text(&repo.tally(&["plugins"]).stdout);
    assert!(
        listed.contains("total_usd [USD] gpu_usd + agent_usd"),
        "{listed}"
    );
}

#[test]
fn total_usd_without_both_sources_is_a_config_problem_naming_the_missing_one() {
    let repo = CampaignRepo::new();
    repo.write_executable("agent.sh", AGENT);
    repo.write(
        "tally.toml",
        r#"
name = "costs"
evaluate = ["./evaluate.sh"]

[[metrics]]
name = "tok_s"
direction = "higher"
role = "primary"

[plugins.stop_rule]
hold_at = { total_usd = 10 }

[[plugins.fact_source]]
provider = "agent_usage"
"#,
    );
    repo.commit_bench("baseline", "tok_s=1000\n");
    let out = repo.tally(&["init"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains(
            "plugins.stop_rule.hold_at.total_usd: `total_usd` is the host's gpu_usd + agent_usd; add a [[plugins.fact_source]] table with provider = \"gpu_hours\""
        ),
        "{}",
        text(&out.stderr)
    );
}
