//! Verdicts on a rough machine, through the binary (`docs/verdicts.md#more-pairs`): a throttled
//! sample of a seeded benchmark has its pair measured again in the same evaluation, the run
//! says so as it happens, the reason names the pair and the sample, and nothing is dropped from
//! the store.

use regex::Regex;
use serde_json::Value;

use crate::campaign_repo::{CampaignRepo, candidate, text, verdicts};

const ROUGH: &str = r#"
name = "rough"
evaluate = ["./evaluate.sh"]

[[metrics]]
name = "tok_s"
direction = "higher"
role = "primary"
repeats = 3
"#;

#[test]
fn a_throttled_sample_is_measured_again_and_the_reason_says_so() {
    // A real +10% change; the candidate's second sample runs 25% slower. Three pairs with it
    // would read "not significant"; its pair is measured again and the gain is kept.
    let repo = CampaignRepo::new();
    repo.start_campaign(ROUGH, "tok_s=1000\nnoise=0.01\nseed=7\n");
    repo.propose(&["tok_s=1100\nnoise=0.01\nseed=8\nslow=candidate-1\n"]);
    let out = repo.run_until_idle();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
    let asked = Regex::new(
        r"candidate#1: re-measure pair 2: the candidate's tok_s (\S+) is (\S+)% below its side's median (\S+)",
    )
    .unwrap();
    assert!(asked.is_match(&said), "{said}");

    let status = repo.status_json();
    assert_eq!(verdicts(&status), ["keep", "keep"]);
    assert_eq!(status["head"]["candidate"], 1);
    let reason = candidate(&status, 1)["reason"].as_str().unwrap().to_owned();
    let shape = Regex::new(
        r"^against candidate#0: tok_s (\S+) vs (\S+) \(\+(\S+); 97% worst case \+(\S+) over 3 pairs\); re-measured pair 2: the candidate's tok_s (\S+) was (\S+)% below its side's median (\S+)$",
    )
    .unwrap();
    let caps = shape
        .captures(&reason)
        .unwrap_or_else(|| panic!("{reason}"));
    let slow: f64 = caps[5].parse().unwrap();
    let below: f64 = caps[6].parse().unwrap();
    assert!((850.0..900.0).contains(&slow), "{reason}");
    assert!((18.0..22.0).contains(&below), "{reason}");

    // The set-aside sample stays in the store: four candidate samples, all successful.
    let out = repo.tally(&["candidate", "show", "1", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let shown: Value = serde_json::from_slice(&out.stdout).unwrap();
    let measurements = shown["measurements"].as_array().unwrap();
    assert_eq!(measurements.len(), 4, "{shown:#}");
    let slowest = measurements
        .iter()
        .filter_map(|m| m["metrics"]["tok_s"].as_f64())
        .fold(f64::INFINITY, f64::min);
    assert!((850.0..900.0).contains(&slowest), "{shown:#}");
}
