//! `gpu_hours` (`docs/campaign.md#gpu-hours`, `docs/campaign.md#stop-rules`): Σ GPU-seconds of
//! every measurement × price / 3600 over bar, failed and retried samples — what a Slurm job held
//! when the measurement has it, else seconds × gpus; the projection is the median of the last
//! five evaluations' summed GPU-seconds; parameters are checked.

use serde_json::json;
use tally_plugin::CampaignData;

use crate::fixture::{TOTAL_SECONDS, data, fact_source, measurement};

fn wanted(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

fn close(actual: f64, expected: f64) {
    let relative = ((actual - expected) / expected).abs();
    assert!(relative <= 1e-9, "{actual} vs {expected} ({relative:e})");
}

#[test]
fn facts_count_every_second_of_every_measurement() {
    let source = fact_source("gpu_hours", json!({"gpus": 2, "usd_per_gpu_hour": 2.49})).unwrap();
    let data = data();
    // The view holds bar samples, a failed sample, its retry, a cheaper rung, an old evaluator
    // and a sample without seconds: all counted, the last as 0.
    assert!(data.measurements.iter().any(|m| m.side == "bar"));
    assert!(data.measurements.iter().any(|m| m.error.is_some()));
    assert!(data.measurements.iter().any(|m| m.attempt == 2));
    assert!(data.measurements.iter().any(|m| m.seconds.is_none()));
    let facts = source
        .gather(&data, &wanted(&["gpu_hours", "gpu_usd"]), 0.0)
        .unwrap();
    assert_eq!(TOTAL_SECONDS, 884.0);
    close(facts["gpu_hours"], TOTAL_SECONDS * 2.0 / 3600.0);
    close(facts["gpu_usd"], TOTAL_SECONDS * 2.0 * 2.49 / 3600.0);
    assert_eq!(facts.len(), 2);
}

#[test]
fn only_wanted_facts_are_gathered() {
    let source = fact_source("gpu_hours", json!({"usd_per_gpu_hour": 3})).unwrap();
    let facts = source
        .gather(&data(), &wanted(&["gpu_usd", "runs"]), 0.0)
        .unwrap();
    assert_eq!(facts.keys().collect::<Vec<_>>(), ["gpu_usd"]);
    close(facts["gpu_usd"], TOTAL_SECONDS * 3.0 / 3600.0);
}

/// Evaluations 1..=n, each one sample of `seconds[i]` (split over both sides for the odd ones).
fn evaluations(seconds: &[f64]) -> CampaignData {
    let mut d = data();
    d.measurements.clear();
    let mut id = 0;
    for (i, s) in seconds.iter().enumerate() {
        let evaluation = Some(i as u64 + 1);
        id += 1;
        if i % 2 == 1 {
            d.measurements.push(measurement(
                id,
                2,
                evaluation,
                Some(s / 2.0),
                "candidate",
                &[],
            ));
            id += 1;
            d.measurements
                .push(measurement(id, 1, evaluation, Some(s / 2.0), "bar", &[]));
        } else {
            d.measurements
                .push(measurement(id, 2, evaluation, Some(*s), "candidate", &[]));
        }
    }
    // A report added by hand, outside any evaluation: counted in the facts, not projected.
    d.measurements
        .push(measurement(id + 1, 2, None, Some(9999.0), "candidate", &[]));
    d
}

#[test]
fn projection_is_the_median_of_the_last_five_evaluations() {
    let source = fact_source("gpu_hours", json!({"gpus": 4, "usd_per_gpu_hour": 2})).unwrap();
    let d = evaluations(&[1000.0, 1000.0, 50.0, 10.0, 40.0, 20.0, 30.0]);
    close(
        source.project(&d, "gpu_hours").unwrap().unwrap(),
        30.0 * 4.0 / 3600.0,
    );
    close(
        source.project(&d, "gpu_usd").unwrap().unwrap(),
        30.0 * 4.0 * 2.0 / 3600.0,
    );
    assert_eq!(source.project(&d, "runs").unwrap(), None);
    // An even count takes the mean of the middle two.
    let d = evaluations(&[10.0, 100.0, 30.0, 20.0]);
    close(
        source.project(&d, "gpu_hours").unwrap().unwrap(),
        25.0 * 4.0 / 3600.0,
    );
    // The fixture: evaluations 2..=6 sum 333, 120, 185, 5 and 61 seconds: median 120.
    close(
        source.project(&data(), "gpu_hours").unwrap().unwrap(),
        120.0 * 4.0 / 3600.0,
    );
}

#[test]
fn held_gpu_seconds_replace_seconds_times_gpus() {
    let source = fact_source("gpu_hours", json!({"gpus": 2, "usd_per_gpu_hour": 3})).unwrap();
    let mut d = data();
    d.measurements.clear();
    // A local sample: 100 s × gpus (2).
    d.measurements
        .push(measurement(1, 2, Some(1), Some(100.0), "candidate", &[]));
    // A Slurm job that held 8 GPUs for 130 s (its own measured wall time, 120 s, is not used).
    let mut eight = measurement(2, 1, Some(1), Some(120.0), "bar", &[]);
    eight.held_gpus = Some(8);
    eight.held_seconds = Some(130.0);
    d.measurements.push(eight);
    // A gres-less job: Slurm allocated no GPU, so its elapsed 50 s counts × gpus (2).
    let mut none = measurement(3, 2, Some(2), Some(40.0), "candidate", &[]);
    none.held_gpus = Some(0);
    none.held_seconds = Some(50.0);
    d.measurements.push(none);
    // A job whose measured seconds are unknown still counts what it held.
    let mut unknown = measurement(4, 1, Some(2), None, "bar", &[]);
    unknown.held_gpus = Some(1);
    unknown.held_seconds = Some(7.0);
    d.measurements.push(unknown);
    let gpu_seconds = 100.0 * 2.0 + 130.0 * 8.0 + 50.0 * 2.0 + 7.0;
    let facts = source
        .gather(&d, &wanted(&["gpu_hours", "gpu_usd"]), 0.0)
        .unwrap();
    close(facts["gpu_hours"], gpu_seconds / 3600.0);
    close(facts["gpu_usd"], gpu_seconds * 3.0 / 3600.0);
    // Evaluations sum 1240 and 107 GPU-seconds: the median of two is their mean.
    close(
        source.project(&d, "gpu_hours").unwrap().unwrap(),
        (1240.0 + 107.0) / 2.0 / 3600.0,
    );
}

#[test]
fn no_evaluation_means_no_projection() {
    let source = fact_source("gpu_hours", json!({"usd_per_gpu_hour": 2})).unwrap();
    let mut d = data();
    d.measurements.retain(|m| m.evaluation.is_none());
    assert_eq!(source.project(&d, "gpu_usd").unwrap(), None);
    let facts = source.gather(&d, &wanted(&["gpu_usd"]), 0.0).unwrap();
    assert_eq!(facts["gpu_usd"], 0.0);
}

#[test]
fn parameters_are_checked() {
    let problems = fact_source("gpu_hours", json!({"gpus": 0, "usd_per_gpu_hour": -1}))
        .err()
        .unwrap();
    assert_eq!(
        problems,
        [
            "plugins.fact_source[0].gpus = 0: expected a whole number of GPUs ≥ 1",
            "plugins.fact_source[0].usd_per_gpu_hour = -1: expected a price in USD of at least 0, such as 2.49",
        ]
    );
    let problems = fact_source("gpu_hours", json!({"gpus": 1})).err().unwrap();
    assert_eq!(
        problems,
        [
            "plugins.fact_source[0].usd_per_gpu_hour: missing required parameter: add `usd_per_gpu_hour = <number>` (price of one GPU-hour in USD)"
        ]
    );
}
