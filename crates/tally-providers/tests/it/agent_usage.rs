//! `agent_usage` (`docs/implementers.md#agent-usage`): runs, tokens and USD of the ended
//! implementer runs, `not_started` ones left out; an unknown cost or token count fails the fact
//! naming the run (never a zero); the projection before a launch is the mean cost per run.

use serde_json::json;
use tally_plugin::AgentRunView;

use crate::fixture::{data, fact_source};

fn run(run: u32, end: &str, tokens: Option<u64>, usd: Option<f64>) -> AgentRunView {
    AgentRunView {
        run,
        end: end.into(),
        tokens,
        usd,
        measured: 0,
    }
}

fn wanted() -> Vec<String> {
    ["agent_runs", "agent_tokens", "agent_usd"]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

#[test]
fn runs_tokens_and_usd_add_up_and_the_projection_is_the_mean_run() {
    let source = fact_source("agent_usage", json!({})).unwrap();
    let mut d = data();
    assert_eq!(source.project(&d, "agent_usd").unwrap(), None, "no run yet");
    let none = source.gather(&d, &wanted(), 0.0).unwrap();
    assert_eq!(none["agent_usd"], 0.0, "no run costs nothing");
    d.agent_runs = vec![
        run(1, "finished", Some(1_000), Some(0.25)),
        run(2, "not_started", None, None),
        run(3, "failed", Some(3_000), Some(0.75)),
    ];
    let facts = source.gather(&d, &wanted(), 0.0).unwrap();
    assert_eq!(facts["agent_runs"], 2.0);
    assert_eq!(facts["agent_tokens"], 4_000.0);
    assert_eq!(facts["agent_usd"], 1.0);
    assert_eq!(source.project(&d, "agent_usd").unwrap(), Some(0.5));
    assert_eq!(source.project(&d, "agent_runs").unwrap(), Some(1.0));
}

#[test]
fn an_unknown_cost_fails_agent_usd_naming_the_run_and_the_fix() {
    let source = fact_source("agent_usage", json!({})).unwrap();
    let mut d = data();
    d.agent_runs = vec![
        run(1, "finished", Some(10), Some(0.25)),
        run(2, "timed_out", None, None),
    ];
    let err = source
        .gather(&d, &["agent_usd".to_string()], 0.0)
        .unwrap_err();
    assert_eq!(
        err.message,
        "run#2 reported no cost; record it with `tally implementer usage run#2 --usd X`"
    );
    assert!(source.project(&d, "agent_usd").is_err());
    let runs = source.gather(&d, &["agent_runs".to_string()], 0.0).unwrap();
    assert_eq!(runs["agent_runs"], 2.0, "the count does not need the cost");
}

#[test]
fn it_takes_no_parameters() {
    let Err(problems) = fact_source("agent_usage", json!({"limit": 3})) else {
        panic!("an unknown parameter is refused");
    };
    assert!(problems[0].contains("limit"), "{problems:?}");
}
