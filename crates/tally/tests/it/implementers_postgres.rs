//! Implementers on a PostgreSQL store (`docs/team.md`, `docs/implementers.md`): a scripted
//! implementer campaign runs end to end with its ideas, runs, usage and `[checks]` results in
//! PostgreSQL — `tally idea`, `tally implementer`, `tally brief` and `status`'s runs section read
//! them back, and the agent's environment holds no database URL — and `tally store copy` carries
//! ideas, runs (with usage) and check results from SQLite so that every command shows the same.
//! Several workers with an `[implementer]` are refused before anything runs.
//!
//! Each test works in a schema of its own in the database named by `TALLY_TEST_PG_URL`; without
//! it each test prints a `SKIPPED` line and returns.

use serde_json::Value;

use crate::campaign_postgres::Schema;
use crate::campaign_repo::{CampaignRepo, candidate, section, text};

/// Commits each `SCRIPT: conf=K=V,…` line of the brief as `bench.conf`, records its environment
/// and leaves a finding.
const AGENT: &str = r#"#!/bin/sh
set -eu
env > "$E2E_DIR/env-$TALLY_RUN"
for c in $(sed -n 's/^SCRIPT: conf=//p' "$1"); do
    printf '%s\n' "$c" | tr ',' '\n' > bench.conf
    git commit -qam "agent: $c"
done
printf 'tried two steps on run %s\n' "$TALLY_RUN" > "$TALLY_FINDING_FILE"
"#;

/// A `[checks]` command that fails on a `broken` line in `bench.conf`.
const CONFIG: &str = r#"
name = "agents"
evaluate = ["./evaluate.sh"]

[[metrics]]
name = "tok_s"
direction = "higher"
role = "primary"
repeats = 2

[implementer]
command = ["sh", "agent.sh", "{brief_file}"]

[checks]
commands = [{ name = "conf", argv = ["sh", "-c", "! grep -q broken bench.conf || { echo 'bench.conf is broken' >&2; exit 1; }"] }]
"#;

/// A first commit that fails the checks, then one that is kept.
const TWO_STEPS: &str = "SCRIPT: conf=tok_s=1500,broken=1\nSCRIPT: conf=tok_s=1400\n";

/// The campaign (baseline `tok_s=1000`, `evaluation_slots` as given) with the scripted
/// implementer committed, on `database` or SQLite.
fn campaign(database: Option<&Schema>, slots: u32) -> CampaignRepo {
    let mut repo = CampaignRepo::new();
    if let Some(schema) = database {
        repo = repo.with_database(&schema.tally_url());
    }
    repo.write_executable("agent.sh", AGENT);
    repo.start_campaign(
        &format!("evaluation_slots = {slots}\n{CONFIG}"),
        "tok_s=1000\n",
    );
    repo
}

fn ok(repo: &CampaignRepo, args: &[&str]) -> String {
    let out = repo.tally(args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}: {}",
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// One idea worked by one run: candidate#1 discarded by the checks, candidate#2 kept.
fn run_one_idea(repo: &CampaignRepo) {
    ok(
        repo,
        &[
            "idea",
            "add",
            "two steps",
            "--text",
            TWO_STEPS,
            "--attempts",
            "1",
        ],
    );
    let out = repo.run_until_idle();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn an_implementer_campaign_runs_on_postgres() {
    let Some(schema) = Schema::new("implementers") else {
        return;
    };
    let repo = campaign(Some(&schema), 1);
    run_one_idea(&repo);

    let status = repo.status_json();
    let failed = candidate(&status, 1);
    assert_eq!(failed["verdict"], "discard", "{failed}");
    assert_eq!(
        failed["reason"],
        "check `conf` failed: exit 1: bench.conf is broken"
    );
    assert_eq!(failed["measurements"], serde_json::json!([]));
    assert_eq!(candidate(&status, 2)["verdict"], "keep");
    let runs = section(&status, "runs")
        .expect("a runs section")
        .to_string();
    for cell in [
        "run#1",
        "idea#1 two steps",
        "finished",
        "keep",
        "tried two steps on run 1",
    ] {
        assert!(runs.contains(cell), "{cell} in {runs}");
    }

    let ideas: Value = serde_json::from_str(&ok(&repo, &["idea", "list", "--json"])).unwrap();
    assert_eq!(ideas[0]["runs"][0]["end"], "finished", "{ideas}");
    let shown = ok(&repo, &["implementer", "show", "1"]);
    assert!(
        shown.starts_with("run#1: idea#1\nend:     finished (exit 0)\n"),
        "{shown}"
    );
    assert!(ok(&repo, &["brief"]).contains("| run#1 | idea#1 two steps | finished |"));
    let checks: Value =
        serde_json::from_str(&ok(&repo, &["candidate", "show", "1", "--json"])).unwrap();
    assert_eq!(checks["checks"][0]["passed"], false, "{checks}");

    let env = std::fs::read_to_string(repo.signals().join("env-1")).unwrap();
    assert!(env.contains("TALLY_RUN_TAG="), "the agent ran: {env}");
    // The test harness's own variable reaches every process it starts; nothing else may.
    let leaks: Vec<&str> = env
        .lines()
        .filter(|l| l.contains("postgres://") || l.contains("TALLY_DATABASE_URL"))
        .filter(|l| !l.starts_with("TALLY_TEST_PG_URL="))
        .collect();
    assert_eq!(
        leaks,
        Vec::<&str>::new(),
        "the agent's environment holds no database URL"
    );
}

#[test]
fn implementers_with_several_postgres_workers_are_refused() {
    let Some(schema) = Schema::new("implementers_slots") else {
        return;
    };
    let repo = campaign(Some(&schema), 2);
    ok(&repo, &["idea", "add", "two steps", "--text", TWO_STEPS]);
    let out = repo.run_until_idle();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("an [implementer] table with evaluation_slots = 2")
            && stderr.contains("set evaluation_slots = 1"),
        "{stderr}"
    );
    assert_eq!(ok(&repo, &["implementer", "list", "--json"]).trim(), "[]");
}

#[test]
fn store_copy_carries_ideas_runs_with_usage_and_check_results_to_postgres() {
    let Some(schema) = Schema::new("implementers_copy") else {
        return;
    };
    let repo = campaign(None, 1);
    run_one_idea(&repo);
    ok(&repo, &["implementer", "usage", "1", "--usd", "0.75"]);
    let shown = |database: Option<&str>| -> Vec<String> {
        [
            &["idea", "list", "--json"][..],
            &["implementer", "list", "--json"],
            &["implementer", "show", "1"],
            &["candidate", "show", "1", "--json"],
            &["brief"],
        ]
        .iter()
        .map(|args| {
            let mut command = repo.command(args);
            if let Some(url) = database {
                command.env("TALLY_DATABASE_URL", url);
            }
            let out = command.output().unwrap();
            assert_eq!(
                out.status.code(),
                Some(0),
                "{args:?}: {}",
                text(&out.stderr)
            );
            text(&out.stdout)
        })
        .collect()
    };
    let on_sqlite = shown(None);
    assert!(on_sqlite[1].contains("0.75"), "{}", on_sqlite[1]);

    let from = format!("sqlite:{}", repo.root().join(".tally/tally.db").display());
    let url = schema.tally_url();
    let out = repo
        .bare_command(&["store", "copy", "--from", &from, "--to", &url])
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        stdout.ends_with(", 1 ideas, 1 runs, 2 checks\n"),
        "{stdout}"
    );
    let on_postgres = shown(Some(&url));
    for (sqlite, postgres) in on_sqlite.iter().zip(&on_postgres) {
        assert_eq!(postgres, sqlite);
    }
}
