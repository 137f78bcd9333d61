//! The built-in sections on the fixture campaign: snapshots of every rendering, and the exact
//! promises of `latency` (`docs/campaign.md#latency`) and `goal` checked cell by cell.

use serde_json::json;
use tally_plugin::{Block, CampaignData, Rendered, SectionInput, Surface, Table};

use crate::fixture::{data, facts, section};

fn render_with(name: &str, params: serde_json::Value, data: &CampaignData) -> Option<Rendered> {
    let (facts, fact_info) = facts();
    let section = section(name, params).unwrap_or_else(|p| panic!("{p:?}"));
    section
        .render(&SectionInput {
            data,
            facts: &facts,
            fact_info: &fact_info,
            surface: Surface::Status,
        })
        .unwrap()
}

fn render(name: &str) -> Option<Rendered> {
    render_with(name, json!({}), &data())
}

fn table(rendered: &Rendered) -> &Table {
    match rendered.blocks.as_slice() {
        [Block::Table(t)] => t,
        other => panic!("expected one table, got {other:?}"),
    }
}

#[test]
fn headline() {
    insta::assert_json_snapshot!(render("headline"));
}

#[test]
fn goal() {
    insta::assert_json_snapshot!(render("goal"));
}

#[test]
fn goal_shows_progress_towards_each_limit() {
    let rendered = render("goal").unwrap();
    let Some(Block::Text(progress)) = rendered.blocks.last() else {
        panic!("{rendered:?}");
    };
    assert_eq!(
        progress,
        "tokens_per_s 1100/1500 · run 4/200 · 2.5h/24h · 3/10 runs without a keep · $41.20/$50.00"
    );
    let mut d = data();
    d.campaign.stop_rule =
        json!({"provider": "limits", "max_runs": 200, "hold_at": {"gpu_usd": 50}});
    let rendered = render_with("goal", json!({}), &d).unwrap();
    assert_eq!(
        rendered.blocks.last(),
        Some(&Block::Text("run 4/200 · $41.20/$50.00".into()))
    );
}

#[test]
fn evaluations() {
    insta::assert_json_snapshot!(render("evaluations"));
}

#[test]
fn candidates() {
    insta::assert_json_snapshot!(render("candidates"));
}

#[test]
fn latency() {
    insta::assert_json_snapshot!(render("latency"));
}

#[test]
fn latency_rows_are_the_latest_measured_candidates_with_two_decimal_means() {
    let rendered = render("latency").unwrap();
    assert_eq!(rendered.title, "Latency");
    let t = table(&rendered);
    assert_eq!(t.columns, ["candidate", "verdict", "p50_ms", "p95_ms"]);
    let rows: Vec<Vec<&str>> = t
        .rows
        .iter()
        .map(|r| r.iter().map(String::as_str).collect())
        .collect();
    // Candidate 5 crashed (no successful measurement): no row. Candidate 4's rung and
    // old-evaluator samples are left out of its means, and it never measured p95_ms.
    assert_eq!(
        rows,
        [
            ["#6 6abcdef", "pending", "8.01", "16.00"],
            ["#4 4abcdef", "interesting", "2.22", "—"],
            ["#3 3abcdef", "discard", "9.90", "30.00"],
            ["#2 2abcdef", "keep", "9.60", "19.20"],
            ["#1 1abcdef", "keep", "10.10", "21.00"],
        ]
    );
}

#[test]
fn latency_takes_its_metrics_and_rows() {
    let rendered = render_with(
        "latency",
        json!({"metrics": ["p95_ms", "ttft_ms"], "rows": 2}),
        &data(),
    )
    .unwrap();
    let t = table(&rendered);
    assert_eq!(t.columns, ["candidate", "verdict", "p95_ms", "ttft_ms"]);
    assert_eq!(
        t.rows,
        [
            ["#6 6abcdef", "pending", "16.00", "—"],
            ["#4 4abcdef", "interesting", "—", "—"],
        ]
    );
}

#[test]
fn latency_is_left_out_when_the_campaign_measures_no_latency_metric() {
    assert!(render_with("latency", json!({"metrics": ["ttft_ms"]}), &data()).is_none());
    assert!(
        render_with(
            "latency",
            json!({"metrics": ["ttft_ms", "p95_ms"]}),
            &data()
        )
        .is_some()
    );
}

#[test]
fn latency_is_left_out_when_nothing_is_measured() {
    let mut d = data();
    d.measurements
        .retain(|m| m.error.is_some() || m.rung.is_some());
    assert!(!d.measurements.is_empty());
    assert_eq!(render_with("latency", json!({}), &d), None);
    d.measurements.clear();
    assert_eq!(render_with("latency", json!({}), &d), None);
    let problems = section("latency", json!({"rows": 0, "metrics": []}))
        .err()
        .unwrap();
    assert_eq!(
        problems,
        [
            "status.sections[0].rows = 0: expected a whole number of rows from 1 to 10000",
            "status.sections[0].metrics = []: expected a list of metric names, such as [\"p50_ms\", \"p95_ms\"]",
        ]
    );
}

#[test]
fn sections_with_nothing_to_show_are_left_out() {
    let mut d = data();
    d.candidates.clear();
    d.measurements.clear();
    assert_eq!(render_with("evaluations", json!({}), &d), None);
    assert_eq!(render_with("candidates", json!({}), &d), None);
}
