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

/// What `gpu_hours` projects for the next evaluation, from `tally status --json`: the median of
/// the summed seconds of the last 5 evaluations (in the order of their first measurement).
fn median_evaluation_seconds(status: &Value) -> f64 {
    let mut measurements: Vec<&Value> = status["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["measurements"].as_array().unwrap().iter())
        .collect();
    measurements.sort_by_key(|m| m["id"].as_u64().unwrap());
    let mut order: Vec<u64> = Vec::new();
    let mut totals: Vec<f64> = Vec::new();
    for m in measurements {
        let Some(evaluation) = m["evaluation"].as_u64() else {
            continue;
        };
        let at = match order.iter().position(|e| *e == evaluation) {
            Some(at) => at,
            None => {
                order.push(evaluation);
                totals.push(0.0);
                totals.len() - 1
            }
        };
        totals[at] += m["seconds"].as_f64().unwrap_or(0.0);
    }
    let mut last: Vec<f64> = totals[totals.len().saturating_sub(5)..].to_vec();
    last.sort_by(f64::total_cmp);
    let mid = last.len() / 2;
    if last.len() % 2 == 1 {
        last[mid]
    } else {
        (last[mid - 1] + last[mid]) / 2.0
    }
}

/// The numbers of `hold_at: FACT A + B expected would reach L` in `text`.
fn projected_hold(text: &str, fact: &str) -> (f64, f64, f64) {
    let start = text
        .find(&format!("hold_at: {fact} "))
        .unwrap_or_else(|| panic!("no {fact} hold in {text}"));
    let words: Vec<&str> = text[start..].split_whitespace().collect();
    // hold_at: FACT A + B expected would reach L
    assert_eq!(
        (words[3], words[5], words[7]),
        ("+", "expected", "reach"),
        "{text}"
    );
    let number = |w: &str| w.trim_end_matches(['.', ';', ',']).parse::<f64>().unwrap();
    (number(words[2]), number(words[4]), number(words[8]))
}

#[test]
fn a_launch_is_held_when_its_expected_evaluations_would_cross_gpu_usd() {
    // 3600 USD per GPU-hour: gpu_usd is the evaluations' seconds.
    let repo = campaign(
        r#"
[[plugins.fact_source]]
provider = "gpu_hours"
usd_per_gpu_hour = 3600

[[plugins.fact_source]]
provider = "agent_usage"
"#,
    );
    add_idea(
        &repo,
        "three steps",
        "SCRIPT: conf=tok_s=1100\nSCRIPT: conf=tok_s=1200\nSCRIPT: conf=tok_s=1300\nSCRIPT: usd=0\n",
    );
    let out = repo.run_until_idle();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(runs(&repo)[0]["commits"].as_array().unwrap().len(), 3);

    // A limit that the next launch's one evaluation would not reach, but its three (the median
    // run measured three commits) would.
    let status = repo.status_json();
    let spent = status["facts"]["gpu_usd"].as_f64().unwrap();
    let per_evaluation = median_evaluation_seconds(&status);
    assert!(per_evaluation > 0.0, "{status}");
    let limit = spent + 2.0 * per_evaluation;
    let config = std::fs::read_to_string(repo.root().join("tally.toml")).unwrap();
    repo.write(
        "tally.toml",
        &format!("{config}\n[plugins.stop_rule]\nhold_at = {{ gpu_usd = {limit:.6} }}\n"),
    );
    repo.commit_all("a GPU budget");
    add_idea(&repo, "next", "SCRIPT: conf=tok_s=1400\n");
    let out = repo.run_until_idle();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert_eq!(runs(&repo).len(), 1, "nothing was launched: {stderr}");
    let (now, expected, reach) = projected_hold(&stderr, "gpu_usd");
    let status = repo.status_json();
    assert!(
        (now - status["facts"]["gpu_usd"].as_f64().unwrap()).abs() < 0.006,
        "{stderr}"
    );
    assert!(
        (expected - 3.0 * median_evaluation_seconds(&status)).abs() < 0.006,
        "the projection is 3 commits x the median evaluation: {stderr}"
    );
    assert!((reach - limit).abs() < 1e-3, "{stderr}");
}
