//! The built-in sections on the fixture campaign: every figure and cell checked against values
//! derived by hand from the fixture (the derivation is written next to each), plus snapshots of
//! the `goal` and `latency` renderings whose cells are also checked one by one below.

use serde_json::json;
use tally_plugin::{Block, CampaignData, Rendered, SectionInput, Surface, Table};

use crate::fixture::{self, data, facts, section};

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

/// The figures of a rendering as `label = value unit` lines.
fn figures(rendered: &Rendered) -> Vec<String> {
    match rendered.blocks.as_slice() {
        [Block::Figures(figures)] => figures
            .iter()
            .map(|f| {
                format!("{} = {} {}", f.label, f.value, f.unit)
                    .trim_end()
                    .to_owned()
            })
            .collect(),
        other => panic!("expected one block of figures, got {other:?}"),
    }
}

#[test]
fn headline() {
    // Derived from the fixture by hand: the campaign is held (state and reason), its head is
    // candidate 2 (revision "2abcdef…") with tokens_per_s 1100 against the baseline's 1000
    // (+10.0%), `keeps` comes from the facts, 5 candidates besides the baseline of which #6 is
    // pending, and the two `gpu_hours` facts with their units.
    let rendered = render("headline").unwrap();
    assert_eq!(rendered.title, "demo");
    assert_eq!(
        figures(&rendered),
        [
            "state = held: hold_at: gpu_usd 41.20 + 9.80 expected would reach 50",
            "head = candidate#2 2abcdef",
            "tokens_per_s = 1100",
            "gain over the baseline = +10.0%",
            "keeps = 1",
            "candidates = 5 (1 pending)",
            "gpu_hours = 16.48 h",
            "gpu_usd = 41.20 USD",
        ]
    );
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
        "tokens_per_s 1100/1500 · run 4/200 · 2.5h/24h · 3/10 runs without a keep · $41.20 spent / $50.00 hold limit"
    );
    let mut d = data();
    d.campaign.stop_rule =
        json!({"provider": "limits", "max_runs": 200, "hold_at": {"gpu_usd": 50}});
    let rendered = render_with("goal", json!({}), &d).unwrap();
    assert_eq!(
        rendered.blocks.last(),
        Some(&Block::Text(
            "run 4/200 · $41.20 spent / $50.00 hold limit".into()
        ))
    );
}

#[test]
fn evaluations() {
    // Summed seconds per evaluation, from the fixture: E1 3 × 60 = 180; E2 61 + 59 + 60 + 62 + 30
    // + 61 = 333 (a failed sample); E3 60 + 60 = 120; E4 10 + 60 + 58 + 57 + (none) = 185 (a
    // failed sample); E5 5; E6 30 + 31 = 61. In minutes 3.0, 5.55, 2.0, 3.083, 0.083, 1.017:
    // the median of six is (2.0 + 3.0) / 2 = 2.5; the first five's median is 3.0 and the
    // latest five's (5.55, 2.0, 3.083, 0.083, 1.017) is 2.0. Candidate 6 waits.
    let rendered = render("evaluations").unwrap();
    assert_eq!(rendered.title, "Evaluations");
    assert_eq!(
        figures(&rendered),
        [
            "evaluations = 6",
            "failed = 2",
            "median = 2.5 min",
            "first 5 → latest 5 = 3.0 → 2.0 min",
            "waiting = 1",
        ]
    );
    // Sub-minute evaluations are shown in seconds, not as 0.x min: a tenth of the times above,
    // 18, 33.3, 12, 18.5, 0.5 and 6.1 s, have the median (12 + 18) / 2 = 15 s; the first five's
    // is 18 s and the latest five's 12 s.
    let mut d = data();
    for m in &mut d.measurements {
        m.seconds = m.seconds.map(|s| s / 10.0);
    }
    let shown = figures(&render_with("evaluations", json!({}), &d).unwrap());
    assert_eq!(
        shown[2..4],
        ["median = 15.0 s", "first 5 → latest 5 = 18.0 → 12.0 s"]
    );
}

#[test]
fn evaluations_show_the_gpu_busy_time_their_evidence_accounts_for() {
    let mut d = data();
    let busy = |d: &mut CampaignData, id: u64, seconds: f64| {
        let m = d.measurements.iter_mut().find(|m| m.id == id).unwrap();
        m.gpu_busy_seconds = Some(seconds);
    };
    // E1: three samples of 10 s busy each (wall 3 × 60 s); E3: 12.5 s on each side (wall
    // 60 + 60 s); E4: 5 s on the sample that has no wall time; E6: 0.25 s on one sample of
    // 30 s. E2 and E5 handed nothing over.
    for id in [1, 2, 3] {
        busy(&mut d, id, 10.0);
    }
    busy(&mut d, 10, 12.5);
    busy(&mut d, 11, 12.5);
    busy(&mut d, 16, 5.0);
    busy(&mut d, 18, 0.25);
    // Busy per evaluation with evidence: 30, 25, 5, 0.25 s; the median of four is
    // (5 + 25) / 2 = 15 s. Busy over the wall time of the samples that have evidence:
    // 60.25 / (180 + 120 + 0 + 30) = 18.3 %.
    let rendered = render_with("evaluations", json!({}), &d).unwrap();
    assert_eq!(
        figures(&rendered),
        [
            "evaluations = 6",
            "failed = 2",
            "median = 2.5 min",
            "first 5 → latest 5 = 3.0 → 2.0 min",
            "GPU busy = 15.0 s",
            "GPU busy / wall = 18 %",
            "waiting = 1",
        ]
    );
    // A median of a minute or more is shown in minutes, under a second in milliseconds.
    for m in &mut d.measurements {
        m.gpu_busy_seconds = m.gpu_busy_seconds.map(|b| b * 8.0);
    }
    let shown = figures(&render_with("evaluations", json!({}), &d).unwrap());
    assert!(
        shown.contains(&"GPU busy = 2.0 min".to_owned()),
        "{shown:?}"
    );
    assert!(
        shown.contains(&"GPU busy / wall = 146 %".to_owned()),
        "{shown:?}"
    );
    for m in &mut d.measurements {
        m.gpu_busy_seconds = m.gpu_busy_seconds.map(|b| b / 800.0);
    }
    let shown = figures(&render_with("evaluations", json!({}), &d).unwrap());
    assert!(
        shown.contains(&"GPU busy = 150.0 ms".to_owned()),
        "{shown:?}"
    );
}

#[test]
fn candidates() {
    // Latest first. Each primary (tokens_per_s) is the candidate's mean from the fixture, over
    // the samples that printed it under the current evaluator: #1's three and the two it ran as
    // the bar of #2, #2's three (one failed) and one as the bar of #3, #4's one current full
    // sample. The delta is against the bar the verdict used, over the complete pairs: #2 over
    // (1100, 1001) and (1102, 999): 1101 − 1000 = +101 (+10.1 %); #3 over (1090, 1101): −11
    // (−1.0 %); #4 has no pair, so its mean against the bar's: 1120 − 1100 = +20 (+1.8 %). The
    // baseline has no bar, the crash and the pending candidate no mean. Four significant digits.
    let rendered = render("candidates").unwrap();
    assert_eq!(rendered.title, "Candidates");
    let t = table(&rendered);
    assert_eq!(
        t.columns,
        [
            "candidate",
            "verdict",
            "tokens_per_s",
            "samples",
            "Δ bar",
            "reason"
        ]
    );
    assert_eq!(
        t.rows,
        [
            ["#6 6abcdef", "pending", "—", "—", "—", ""],
            [
                "#5 5abcdef",
                "crash",
                "—",
                "—",
                "—",
                "crash because of reasons"
            ],
            [
                "#4 4abcdef",
                "interesting",
                "1120",
                "1",
                "+20.00 (+1.8%)",
                "interesting because of reasons"
            ],
            [
                "#3 3abcdef",
                "discard",
                "1090",
                "1",
                "-11.00 (-1.0%)",
                "discard because of reasons"
            ],
            [
                "#2 2abcdef",
                "keep",
                "1100",
                "3 + 1 as bar",
                "+101.0 (+10.1%)",
                "keep because of reasons"
            ],
            [
                "#1 1abcdef",
                "keep",
                "1000",
                "3 + 2 as bar",
                "—",
                "baseline"
            ],
        ]
    );
}

#[test]
fn candidates_show_the_parent_where_it_is_not_the_bar() {
    // #4 was queued while #1 was the head (its parent) and judged against #2, which was kept in
    // between: one pair (1120 against #2's 1105). The delta against the bar comes first, then
    // the parent's, labelled: 1120 − 1000 = +120 (+12.0 %). A pending candidate with a mean shows
    // the change against its parent, labelled.
    let mut d = data();
    d.candidates[3].parent = Some(1);
    let mut bar = fixture::measurement(
        20,
        2,
        Some(4),
        Some(60.0),
        "bar",
        &[("tokens_per_s", 1105.0)],
    );
    bar.pair = Some(14);
    d.measurements.push(bar);
    d.candidates[5]
        .metrics
        .insert("tokens_per_s".into(), 1111.0);
    d.measurements.push(fixture::measurement(
        21,
        6,
        Some(6),
        Some(60.0),
        "candidate",
        &[("tokens_per_s", 1111.0)],
    ));
    let rendered = render_with("candidates", json!({}), &d).unwrap();
    let rows = &table(&rendered).rows;
    assert_eq!(rows[0][3..5], ["1", "parent #2: +11.00 (+1.0%)"]);
    assert_eq!(
        rows[2][3..5],
        ["1", "+15.00 (+1.4%); parent #1: +120.0 (+12.0%)"]
    );
    assert_eq!(rows[4][3], "3 + 2 as bar", "#2 ran as the bar twice now");
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
fn latency_is_shown_whenever_there_are_samples_even_before_a_latency_metric_is_printed() {
    let rendered = render_with(
        "latency",
        json!({"metrics": ["ttft_ms"], "rows": 2}),
        &data(),
    )
    .expect("candidates have successful samples");
    assert_eq!(
        table(&rendered).rows,
        [
            ["#6 6abcdef", "pending", "—"],
            ["#4 4abcdef", "interesting", "—"]
        ]
    );
}

#[test]
fn latency_means_are_exactly_rounded_as_python_fmean() {
    // Python: '%.2f' % statistics.fmean([34.696, 42.074, 37.192, 30.938]) == '36.23'; a
    // left-to-right sum over the count gives 36.22.
    let mut d = data();
    d.measurements.retain(|m| m.candidate == 6);
    let template = d.measurements[0].clone();
    d.measurements.clear();
    for (i, v) in [34.696, 42.074, 37.192, 30.938].into_iter().enumerate() {
        let mut m = template.clone();
        m.id = 100 + i as u64;
        m.metrics = [("p50_ms".to_string(), v)].into_iter().collect();
        d.measurements.push(m);
    }
    let rendered = render_with("latency", json!({"metrics": ["p50_ms"]}), &d).unwrap();
    assert_eq!(table(&rendered).rows, [["#6 6abcdef", "pending", "36.23"]]);
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
