//! The same sections as terminal text, Markdown and JSON: snapshots of each, and the promises
//! checked exactly — lines within 100 columns, a failed section as one line, empty sections left
//! out, the JSON table shape of `tally status --json`.

use serde_json::json;
use tally_plugin::{Block, Figure, ProviderError, Rendered, Table};
use tally_report::{SectionOutput, WIDTH, json, markdown, terminal};

fn figure(label: &str, value: &str, unit: &str) -> Figure {
    Figure {
        label: label.into(),
        value: value.into(),
        unit: unit.into(),
    }
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn sections() -> Vec<SectionOutput> {
    let headline = Rendered {
        title: "demo".into(),
        blocks: vec![Block::Figures(vec![
            figure(
                "state",
                "held: hold_at: gpu_usd 41.20 + 9.80 expected would reach 50",
                "",
            ),
            figure("head", "candidate#2 2abcdef", ""),
            figure("gain over the baseline", "+10.0%", ""),
            figure("gpu_hours", "16.48", "h"),
            figure("gpu_usd", "41.20", "USD"),
        ])],
    };
    let goal = Rendered {
        title: "Goal".into(),
        blocks: vec![
            Block::List(strings(&[
                "tokens_per_s: higher is better (primary, 3 repeats)",
                "p95_ms: lower is better (guardrail, margin 5)",
            ])),
            Block::Text("run 4/200 · $41.20/$50.00".into()),
        ],
    };
    let latency = Rendered {
        title: "Latency".into(),
        blocks: vec![Block::Table(Table {
            columns: strings(&["candidate", "verdict", "p50_ms", "p95_ms"]),
            rows: vec![
                strings(&["#6 6abcdef", "pending", "8.01", "16.00"]),
                strings(&["#4 4abcdef", "interesting", "2.22", "—"]),
            ],
        })],
    };
    let long_reason = "against candidate#2: tokens_per_s 1103 vs 1000 (+103.0; 95% worst case +96.12 over 3 pairs); guardrails past their margin: p95_ms 31.00 vs 19.20 (+11.80; 95% worst case -14.50 over 3 pairs) | piped";
    let candidates = Rendered {
        title: "Candidates".into(),
        blocks: vec![
            Block::Text(
                "The latest candidates, latest first. Each row shows the verdict the rule gave, the \
                 primary metric's mean over its successful measurements, and the change against the \
                 candidate it was proposed on."
                    .into(),
            ),
            Block::Table(Table {
                columns: strings(&["candidate", "verdict", "tokens_per_s", "Δ parent", "reason"]),
                rows: vec![
                    strings(&["#4 4abcdef", "interesting", "1103", "+3.000 (+0.3%)", long_reason]),
                    strings(&["#1 1abcdef", "keep", "1000", "—", "baseline"]),
                ],
            }),
        ],
    };
    vec![
        SectionOutput::new("headline", 100, Ok(Some(headline))),
        SectionOutput::new("goal", 110, Ok(Some(goal))),
        SectionOutput::new("evaluations", 170, Ok(None)),
        SectionOutput::new("latency", 175, Ok(Some(latency))),
        SectionOutput::new(
            "exec",
            176,
            Err(ProviderError::new(
                "exec ./tail.py",
                "timed out after 10 s; stderr: loading",
            )),
        ),
        SectionOutput::new("candidates", 180, Ok(Some(candidates))),
    ]
}

#[test]
fn terminal_text() {
    insta::assert_snapshot!(terminal(&sections()));
}

#[test]
fn terminal_lines_fit_the_width() {
    let text = terminal(&sections());
    for line in text.lines() {
        assert!(
            line.chars().count() <= usize::from(WIDTH),
            "{} columns: {line}",
            line.chars().count()
        );
    }
    // The long reason is wrapped inside its column, not cut.
    let joined: String = text.split_whitespace().collect();
    assert!(joined.contains("piped"));
}

#[test]
fn markdown_text() {
    insta::assert_snapshot!(markdown(&sections()));
}

#[test]
fn markdown_tables_are_github_pipe_tables() {
    let text = markdown(&sections());
    assert!(text.contains(
        "## Latency\n\n| candidate | verdict | p50_ms | p95_ms |\n|---|---|---|---|\n| #6 6abcdef | pending | 8.01 | 16.00 |\n| #4 4abcdef | interesting | 2.22 | — |\n"
    ));
    assert!(text.contains("(+11.80; 95% worst case -14.50 over 3 pairs) \\| piped |"));
    assert!(text.contains("- gpu_usd: 41.20 USD\n"));
    assert!(text.contains("- head: candidate#2 2abcdef\n"));
    assert!(text.contains("\n\nexec ./tail.py: failed: timed out after 10 s; stderr: loading\n\n"));
}

#[test]
fn json_sections() {
    insta::assert_json_snapshot!(json(&sections()));
}

#[test]
fn json_has_the_status_shape() {
    let value = json(&sections());
    let items = value.as_array().unwrap();
    let providers: Vec<&str> = items
        .iter()
        .map(|s| s["provider"].as_str().unwrap())
        .collect();
    assert_eq!(
        providers,
        ["headline", "goal", "latency", "exec", "candidates"]
    );
    assert_eq!(
        items[2],
        json!({
            "provider": "latency",
            "title": "Latency",
            "order": 175,
            "blocks": [{"table": {
                "columns": ["candidate", "verdict", "p50_ms", "p95_ms"],
                "rows": [["#6 6abcdef", "pending", "8.01", "16.00"], ["#4 4abcdef", "interesting", "2.22", "—"]]
            }}]
        })
    );
    assert_eq!(
        items[3],
        json!({
            "provider": "exec",
            "title": "exec",
            "order": 176,
            "blocks": [{"text": "exec ./tail.py: failed: timed out after 10 s; stderr: loading"}],
            "error": "exec ./tail.py: timed out after 10 s; stderr: loading"
        })
    );
    assert_eq!(
        items[1]["blocks"][0],
        json!({"list": ["tokens_per_s: higher is better (primary, 3 repeats)", "p95_ms: lower is better (guardrail, margin 5)"]})
    );
    assert_eq!(
        items[0]["blocks"][0]["figures"][3],
        json!({"label": "gpu_hours", "value": "16.48", "unit": "h"})
    );
}

#[test]
fn a_failed_section_is_one_line_and_empty_sections_are_left_out() {
    let failed = vec![SectionOutput::new(
        "latency",
        175,
        Err(ProviderError::new("latency", "no metric named p99_ms")),
    )];
    assert_eq!(
        terminal(&failed),
        "latency: failed: no metric named p99_ms\n"
    );
    assert_eq!(
        markdown(&failed),
        "latency: failed: no metric named p99_ms\n"
    );
    let empty = vec![SectionOutput::new("latency", 175, Ok(None))];
    assert_eq!(terminal(&empty), "");
    assert_eq!(markdown(&empty), "");
    assert_eq!(json(&empty), json!([]));
}
