//! A small campaign every test reads: six candidates (the baseline, a keep, a discard, an
//! interesting one measured partly under an old evaluator and a cheaper rung, a crash, and a
//! pending one in flight), six evaluations with bar samples, a failed sample, a retried attempt
//! and a sample without seconds; and the builders that turn a `tally.toml` table into a provider
//! the way the config reader and the engine do.

use serde_json::{Value, json};
use tally_plugin::{
    CampaignData, CampaignSummary, CandidateView, ConfigProblem, FactInfo, FactSource, Facts,
    MeasurementView, MetricView, Params, Section, StopRule, VerdictRule, check_params,
};

pub const EVALUATOR: &str = "ev-current";

fn metric(name: &str, direction: &str, role: &str) -> MetricView {
    MetricView {
        name: name.into(),
        direction: direction.into(),
        role: role.into(),
        margin: None,
        floor: None,
        repeats: 1,
        deterministic: false,
    }
}

fn candidate(
    id: u64,
    parent: Option<u64>,
    verdict: &str,
    metrics: &[(&str, f64)],
) -> CandidateView {
    CandidateView {
        id,
        revision: format!("{id}{}", "abcdef0123456789".repeat(3))[..40].to_string(),
        parent,
        verdict: verdict.into(),
        reason: match verdict {
            "pending" => None,
            "keep" if id == 1 => Some("baseline".into()),
            other => Some(format!("{other} because of reasons")),
        },
        // The bar: the baseline for #2, the head #2 for the later judged ones.
        judged_against: match (id, verdict) {
            (1, _) | (_, "pending") => None,
            (2, _) => Some(1),
            _ => Some(2),
        },
        proposed_by: "tests".into(),
        metrics: metrics.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
    }
}

/// One measurement: id, candidate, evaluation, seconds, side, metrics.
pub fn measurement(
    id: u64,
    candidate: u64,
    evaluation: Option<u64>,
    seconds: Option<f64>,
    side: &str,
    metrics: &[(&str, f64)],
) -> MeasurementView {
    MeasurementView {
        id,
        candidate,
        evaluation,
        seconds,
        error: None,
        pair: None,
        side: side.into(),
        evaluator: EVALUATOR.into(),
        rung: None,
        attempt: 1,
        sample: 0,
        started_at: Some(1_700_000_000.0 + id as f64 * 60.0),
        metrics: metrics.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        evidence: None,
        gpu_busy_seconds: None,
        held_gpus: None,
        held_seconds: None,
    }
}

/// The campaign.
pub fn data() -> CampaignData {
    let mut p95 = metric("p95_ms", "lower", "guardrail");
    p95.margin = Some(5.0);
    let mut primary = metric("tokens_per_s", "higher", "primary");
    primary.repeats = 3;
    let campaign = CampaignSummary {
        name: "demo".into(),
        state: "held".into(),
        reason: Some("hold_at: gpu_usd 41.20 + 9.80 expected would reach 50".into()),
        head: Some(2),
        baseline: Some(1),
        queued: Vec::new(),
        evaluator: EVALUATOR.into(),
        metrics: vec![primary, p95, metric("p50_ms", "lower", "watch")],
        first_evaluation_at: Some(1_700_000_000.0),
        stop_rule: json!({
            "provider": "limits", "target": 1500, "max_runs": 200, "max_hours": 24,
            "plateau": 10, "hold_at": {"gpu_usd": 50}, "reserve": true
        }),
    };
    let candidates = vec![
        candidate(
            1,
            None,
            "keep",
            &[("tokens_per_s", 1000.0), ("p50_ms", 10.1), ("p95_ms", 21.0)],
        ),
        candidate(
            2,
            Some(1),
            "keep",
            &[("tokens_per_s", 1100.0), ("p50_ms", 9.6), ("p95_ms", 19.2)],
        ),
        candidate(
            3,
            Some(2),
            "discard",
            &[("tokens_per_s", 1090.0), ("p50_ms", 9.9), ("p95_ms", 30.0)],
        ),
        candidate(
            4,
            Some(2),
            "interesting",
            &[("tokens_per_s", 1120.0), ("p50_ms", 2.2223)],
        ),
        candidate(5, Some(2), "crash", &[]),
        candidate(6, Some(2), "pending", &[]),
    ];
    let mut ms = vec![
        // E1: the baseline, three samples.
        measurement(
            1,
            1,
            Some(1),
            Some(60.0),
            "candidate",
            &[("tokens_per_s", 1000.0), ("p50_ms", 10.0), ("p95_ms", 20.0)],
        ),
        measurement(
            2,
            1,
            Some(1),
            Some(60.0),
            "candidate",
            &[("tokens_per_s", 1002.0), ("p50_ms", 10.2), ("p95_ms", 21.0)],
        ),
        measurement(
            3,
            1,
            Some(1),
            Some(60.0),
            "candidate",
            &[("tokens_per_s", 998.0), ("p50_ms", 10.1), ("p95_ms", 22.0)],
        ),
        // E2: candidate 2 against the baseline, paired, with a retried attempt.
        measurement(
            4,
            2,
            Some(2),
            Some(61.0),
            "candidate",
            &[("tokens_per_s", 1100.0), ("p50_ms", 9.5), ("p95_ms", 19.0)],
        ),
        measurement(
            5,
            1,
            Some(2),
            Some(59.0),
            "bar",
            &[("tokens_per_s", 1001.0), ("p50_ms", 10.0), ("p95_ms", 20.5)],
        ),
        measurement(
            6,
            1,
            Some(2),
            Some(60.0),
            "bar",
            &[("tokens_per_s", 999.0), ("p50_ms", 10.2), ("p95_ms", 21.5)],
        ),
        measurement(
            7,
            2,
            Some(2),
            Some(62.0),
            "candidate",
            &[("tokens_per_s", 1102.0), ("p50_ms", 9.7), ("p95_ms", 19.4)],
        ),
        measurement(
            8,
            2,
            Some(2),
            Some(30.0),
            "candidate",
            &[("tokens_per_s", 1.0)],
        ),
        measurement(
            9,
            2,
            Some(2),
            Some(61.0),
            "candidate",
            &[("tokens_per_s", 1098.0), ("p50_ms", 9.6), ("p95_ms", 19.2)],
        ),
        // E3: candidate 3 against candidate 2.
        measurement(
            10,
            3,
            Some(3),
            Some(60.0),
            "candidate",
            &[("tokens_per_s", 1090.0), ("p50_ms", 9.9), ("p95_ms", 30.0)],
        ),
        measurement(
            11,
            2,
            Some(3),
            Some(60.0),
            "bar",
            &[("tokens_per_s", 1101.0), ("p50_ms", 9.6), ("p95_ms", 19.2)],
        ),
        // E4: candidate 4: a cheaper rung, an old evaluator, then three current samples.
        measurement(
            12,
            4,
            Some(4),
            Some(10.0),
            "candidate",
            &[("tokens_per_s", 500.0), ("p50_ms", 100.0)],
        ),
        measurement(
            13,
            4,
            Some(4),
            Some(60.0),
            "candidate",
            &[("p50_ms", 1000.0)],
        ),
        measurement(
            14,
            4,
            Some(4),
            Some(58.0),
            "candidate",
            &[("tokens_per_s", 1120.0), ("p50_ms", 1.111)],
        ),
        measurement(
            15,
            4,
            Some(4),
            Some(57.0),
            "candidate",
            &[("p50_ms", 2.222)],
        ),
        measurement(16, 4, Some(4), None, "candidate", &[("p50_ms", 3.334)]),
        // E5: candidate 5 crashed.
        measurement(17, 5, Some(5), Some(5.0), "candidate", &[]),
        // E6: candidate 6, in flight.
        measurement(
            18,
            6,
            Some(6),
            Some(30.0),
            "candidate",
            &[("p50_ms", 8.006), ("p95_ms", 16.0)],
        ),
        measurement(
            19,
            6,
            Some(6),
            Some(31.0),
            "candidate",
            &[("p50_ms", 8.008), ("p95_ms", 16.0)],
        ),
    ];
    ms[7].error = Some("killed by signal 15 from outside".into());
    ms[8].attempt = 2;
    ms[4].pair = Some(4);
    ms[5].pair = Some(7);
    ms[10].pair = Some(10);
    ms[11].rung = Some("small".into());
    ms[12].evaluator = "ev-old".into();
    ms[16].error = Some("exited with status 1: boom".into());
    CampaignData {
        campaign,
        candidates,
        measurements: ms,
        agent_runs: Vec::new(),
    }
}

/// Σ seconds of every measurement of [`data`], written out.
pub const TOTAL_SECONDS: f64 = 60.0 * 3.0
    + (61.0 + 59.0 + 60.0 + 62.0 + 30.0 + 61.0)
    + (60.0 + 60.0)
    + (10.0 + 60.0 + 58.0 + 57.0)
    + 5.0
    + (30.0 + 31.0);

/// The facts the host and `gpu_hours` supply for [`data`].
pub fn facts() -> (Facts, Vec<FactInfo>) {
    let facts: Facts = [
        ("runs", 4.0),
        ("keeps", 1.0),
        ("without_keep", 3.0),
        ("hours", 2.5),
        ("head", 1100.0),
        ("evaluations", 6.0),
        ("gpu_hours", 16.48),
        ("gpu_usd", 41.2),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let mut info = tally_providers::host_facts();
    info.extend(
        tally_providers::builtins()
            .fact_source("gpu_hours")
            .unwrap()
            .info
            .facts
            .clone(),
    );
    (facts, info)
}

/// Checks `table` against the provider's declared params (as the config reader does).
fn checked(
    specs: &[tally_plugin::ParamSpec],
    table: Value,
    prefix: &str,
) -> Result<Params, Vec<ConfigProblem>> {
    let mut problems = Vec::new();
    let table = table.as_object().cloned().unwrap_or_default();
    let params = check_params(specs, &table, prefix, &["provider"], &mut problems);
    if problems.is_empty() {
        Ok(params)
    } else {
        Err(problems)
    }
}

/// Problems as the lines the user reads.
pub fn lines(problems: Vec<ConfigProblem>) -> Vec<String> {
    problems.iter().map(ToString::to_string).collect()
}

/// `[plugins.verdict_rule]` with `provider = name` and `table`.
pub fn verdict_rule(name: &str, table: Value) -> Result<Box<dyn VerdictRule>, Vec<String>> {
    let registry = tally_providers::builtins();
    let entry = registry.verdict_rule(name).expect("registered");
    let params = checked(&entry.info.params, table, "plugins.verdict_rule").map_err(lines)?;
    (entry.build)(&params).map_err(lines)
}

/// `[plugins.stop_rule]` with `provider = name` and `table`.
pub fn stop_rule(name: &str, table: Value) -> Result<Box<dyn StopRule>, Vec<String>> {
    let registry = tally_providers::builtins();
    let entry = registry.stop_rule(name).expect("registered");
    let params = checked(&entry.info.params, table, "plugins.stop_rule").map_err(lines)?;
    (entry.build)(&params).map_err(lines)
}

/// `[[plugins.fact_source]]` number 0 with `provider = name` and `table`.
pub fn fact_source(name: &str, table: Value) -> Result<Box<dyn FactSource>, Vec<String>> {
    let registry = tally_providers::builtins();
    let entry = registry.fact_source(name).expect("registered");
    let params = checked(&entry.info.params, table, "plugins.fact_source[0]").map_err(lines)?;
    (entry.build)(&params).map_err(lines)
}

/// A section as `[status] sections = [{ provider = name, ... }]` number 0.
pub fn section(name: &str, table: Value) -> Result<Box<dyn Section>, Vec<String>> {
    let registry = tally_providers::builtins();
    let entry = registry.section(name).expect("registered");
    let params = checked(&entry.info.params, table, "status.sections[0]").map_err(lines)?;
    (entry.build)(&params).map_err(lines)
}
