//! `gpu_hours` on `[executor] kind = "slurm"` (`docs/campaign.md#gpu-hours`) against a real
//! Slurm cluster: every sample records what its job held, and the facts count that. The test
//! cluster keeps no accounting and has no GPUs, so this shows the fallback chain: `sacct` says
//! accounting is disabled, `scontrol`'s `RunTime` gives the elapsed time, the job's TRES shows
//! no GPU (0 held), and such a job counts its elapsed time × the source's `gpus`.
//!
//! `tally store copy` carries what the jobs held to PostgreSQL.
//!
//! They need `sbatch` and a cluster whose node is up (`scripts/slurm-test-cluster.sh start`),
//! the copy also `TALLY_TEST_PG_URL`; otherwise each prints a `SKIPPED` line and returns.

#![allow(clippy::print_stderr)]

use std::process::Command;

use serde_json::Value;

use crate::campaign_postgres::Schema;
use crate::campaign_repo::{CampaignRepo, text};

/// One deterministic sample per side, on Slurm, with GPU-hours priced.
const PRICED_ON_SLURM: &str = r#"
name = "held"
evaluate = ["./evaluate.sh"]
evaluate_timeout = 120

[[metrics]]
name = "tok_s"
direction = "higher"
role = "primary"
repeats = 1
deterministic = true

[executor]
kind = "slurm"
time_limit = "5:00"
cpus = 1

[[plugins.fact_source]]
provider = "gpu_hours"
gpus = 3
usd_per_gpu_hour = 7200
"#;

/// Whether `sinfo` shows a usable node; prints why the test is skipped if not.
fn cluster_up(test: &str) -> bool {
    let states = Command::new("sinfo")
        .args(["-h", "-o", "%T"])
        .output()
        .ok()
        .filter(|out| out.status.success())
        .map(|out| text(&out.stdout))
        .unwrap_or_default();
    let usable = states
        .split_whitespace()
        .any(|s| matches!(s.trim_end_matches('*'), "idle" | "mixed" | "allocated"));
    if !usable {
        eprintln!(
            "SKIPPED {test}: no Slurm node answers (sinfo: {:?}); start a cluster with \
             `scripts/slurm-test-cluster.sh start`",
            states.trim()
        );
    }
    usable
}

/// A baseline (2 s samples) and one candidate (1 s samples) judged on Slurm.
fn judged_on_slurm() -> CampaignRepo {
    let repo = CampaignRepo::new();
    repo.start_campaign(PRICED_ON_SLURM, "tok_s=1000\nnoise=0\nsleep=2\n");
    repo.propose(&["tok_s=1100\nnoise=0\nsleep=1\n"]);
    let out = repo.run_until_idle();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    repo
}

/// `tally candidate show ID --json` of both candidates, with `TALLY_DATABASE_URL` = `url`.
fn shown(repo: &CampaignRepo, url: Option<&str>) -> Vec<Value> {
    ["0", "1"]
        .iter()
        .map(|id| {
            let mut command = repo.command(&["candidate", "show", id, "--json"]);
            if let Some(url) = url {
                command.env("TALLY_DATABASE_URL", url);
            }
            let out = command.output().unwrap();
            assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
            serde_json::from_slice(&out.stdout).unwrap()
        })
        .collect()
}

#[test]
fn gpu_hours_on_slurm_count_what_each_job_held() {
    if !cluster_up("gpu_hours_on_slurm_count_what_each_job_held") {
        return;
    }
    let repo = judged_on_slurm();
    let mut gpu_seconds = 0.0;
    let mut samples = 0;
    for shown in shown(&repo, None) {
        for m in shown["measurements"].as_array().unwrap() {
            samples += 1;
            // No gres asked for, none allocated: the job held 0 GPUs...
            assert_eq!(m["held_gpus"], 0, "{m:#}");
            // ...for the whole seconds Slurm's controller counted (`RunTime`), about the sleep.
            let held = m["held_seconds"].as_f64().unwrap();
            let seconds = m["seconds"].as_f64().unwrap();
            assert_eq!(held.fract(), 0.0, "RunTime counts whole seconds: {m:#}");
            assert!(
                (held - seconds).abs() <= 2.0,
                "held {held} s against a measured {seconds} s: {m:#}"
            );
            gpu_seconds += held * 3.0;
        }
    }
    assert!(samples >= 2, "{samples} samples");
    assert!(gpu_seconds >= 3.0, "the 2 s baseline sample held ≥ 1 s");
    // A job that held no GPU counts its elapsed time × gpus (3), not its measured seconds.
    let facts = &repo.status_json()["facts"];
    let hours = facts["gpu_hours"].as_f64().unwrap();
    assert!(
        (hours - gpu_seconds / 3600.0).abs() < 1e-12,
        "gpu_hours {hours} against {} from what the jobs held",
        gpu_seconds / 3600.0
    );
    assert!((facts["gpu_usd"].as_f64().unwrap() - gpu_seconds * 2.0).abs() < 1e-9);
}

#[test]
fn store_copy_carries_what_the_slurm_jobs_held() {
    if !cluster_up("store_copy_carries_what_the_slurm_jobs_held") {
        return;
    }
    let Some(schema) = Schema::new("held") else {
        return;
    };
    let repo = judged_on_slurm();
    let on_sqlite = shown(&repo, None);
    let held = on_sqlite[0]["measurements"][0]["held_seconds"].clone();
    assert!(held.as_f64().is_some_and(|s| s >= 1.0), "{held}");
    let from = format!("sqlite:{}", repo.root().join(".tally/tally.db").display());
    let url = schema.tally_url();
    let out = repo
        .bare_command(&["store", "copy", "--from", &from, "--to", &url])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(shown(&repo, Some(&url)), on_sqlite);
    let facts = |url: Option<&str>| {
        let mut command = repo.command(&["status", "--json"]);
        if let Some(url) = url {
            command.env("TALLY_DATABASE_URL", url);
        }
        let out = command.output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let status: Value = serde_json::from_slice(&out.stdout).unwrap();
        status["facts"]["gpu_hours"].clone()
    };
    assert_eq!(facts(Some(&url)), facts(None));
}
