//! `tally` on a PostgreSQL store (`docs/team.md`): two `tally run` processes on one campaign
//! evaluate each sample once and move the head once, with the verdicts one process reaches on
//! SQLite; a `kill -9` of a writer leaves the store consistent and the work resumable.
//!
//! Each test works in a schema of its own in the database named by `TALLY_TEST_PG_URL`
//! (`scripts/pg-test-server.sh start` prints one) and drops it at the end; without the
//! variable each test prints a `SKIPPED` line and returns.

#![allow(clippy::print_stderr)]

use std::collections::BTreeSet;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use tally_store::{PgOptions, PgStore};

use crate::campaign_repo::{CampaignRepo, candidate, text, verdicts};

/// One primary metric, three pairs per evaluation.
const PAIRED: &str = r#"
name = "team"
evaluate = ["./evaluate.sh"]
evaluate_timeout = 60

[[metrics]]
name = "tok_s"
direction = "higher"
role = "primary"
repeats = 3
"#;

const BASELINE: &str = "tok_s=1000\nnoise=0.01\nseed=1\n";

/// A schema of its own for one test, dropped at the end.
pub(crate) struct Schema {
    url: String,
    name: String,
}

impl Schema {
    /// Creates (and migrates) the schema; `None` after printing why the test is skipped.
    pub(crate) fn new(test: &str) -> Option<Self> {
        let Ok(url) = std::env::var("TALLY_TEST_PG_URL") else {
            eprintln!(
                "SKIPPED {test}: TALLY_TEST_PG_URL is not set (start a server with \
                 `scripts/pg-test-server.sh start`)"
            );
            return None;
        };
        let name = format!("e2e_{test}_{}", std::process::id());
        let options = PgOptions {
            schema: Some(name.clone()),
            ..PgOptions::default()
        };
        drop(PgStore::open_with(&url, &options).expect("the test database"));
        Some(Self { url, name })
    }

    /// The URL tally gets: the test database, with the schema first on the search path.
    pub(crate) fn tally_url(&self) -> String {
        let separator = if self.url.contains('?') { '&' } else { '?' };
        format!(
            "{}{separator}options=-c%20search_path%3D{}",
            self.url, self.name
        )
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        let _ = PgStore::drop_schema(&self.url, &self.name);
    }
}

fn spawn_run(repo: &CampaignRepo) -> Child {
    repo.command(&["run", "--until-idle"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tally run starts")
}

/// No sample of an evaluation is recorded twice (same evaluation, side, index and attempt).
pub(crate) fn assert_each_sample_once(status: &Value) {
    let mut seen = BTreeSet::new();
    for c in status["candidates"].as_array().unwrap() {
        for m in c["measurements"].as_array().unwrap() {
            let key = (
                m["evaluation"].as_u64().expect("measured by the loop"),
                m["side"].as_str().unwrap().to_owned(),
                m["sample"].as_u64().unwrap(),
                m["attempt"].as_u64().unwrap(),
            );
            assert!(seen.insert(key.clone()), "recorded twice: {key:?}");
        }
    }
}

/// The judged reasons of every candidate, in order.
fn reasons(status: &Value) -> Vec<String> {
    (0..status["candidates"].as_array().unwrap().len() as u64)
        .map(|id| candidate(status, id)["reason"].to_string())
        .collect()
}

#[test]
fn two_runs_on_one_postgres_campaign_evaluate_each_sample_once() {
    let Some(schema) = Schema::new("two_runs") else {
        return;
    };
    let confs = [
        "tok_s=1100\nnoise=0.01\nseed=2\nstall_at=candidate-0\n",
        "tok_s=1250\nnoise=0.01\nseed=3\n",
        "tok_s=900\nnoise=0.01\nseed=4\n",
    ];
    let repo = CampaignRepo::new().with_database(&schema.tally_url());
    repo.start_campaign(PAIRED, BASELINE);
    repo.propose(&confs);

    let first = spawn_run(&repo);
    repo.wait_for_signal("stalled");
    // A second process on the campaign, from another checkout of the repository as a teammate
    // would have it, is refused while the first works, naming it.
    let second = repo.run_until_idle();
    let stderr = text(&second.stderr);
    assert_eq!(second.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "error: another tally run (tally pid={} host=",
            first.id()
        )),
        "{stderr}"
    );
    assert!(stderr.contains(") is working on campaign team"), "{stderr}");
    // Readers are welcome meanwhile.
    assert_eq!(
        verdicts(&repo.status_json()),
        ["keep", "pending", "pending", "pending"]
    );

    repo.signal("release");
    let out = first.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // Once it is done, another run finds nothing left to do.
    let again = repo.run_until_idle();
    assert_eq!(again.status.code(), Some(0), "{}", text(&again.stderr));
    let status = repo.status_json();
    assert_each_sample_once(&status);

    // The same campaign judged by one process on SQLite.
    let alone = CampaignRepo::new();
    alone.start_campaign(PAIRED, BASELINE);
    alone.propose(&confs);
    alone.signal("release");
    let out = alone.run_until_idle();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let expected = alone.status_json();
    assert_eq!(verdicts(&status), verdicts(&expected));
    assert_eq!(reasons(&status), reasons(&expected));
    assert_eq!(status["head"], expected["head"]);
    assert_ne!(status["head"]["candidate"], Value::Null);
}

#[test]
fn kill_9_of_a_postgres_writer_leaves_the_store_consistent_and_resumable() {
    let Some(schema) = Schema::new("kill_9") else {
        return;
    };
    let repo = CampaignRepo::new().with_database(&schema.tally_url());
    repo.start_campaign(PAIRED, BASELINE);
    repo.propose(&[
        "tok_s=1100\nnoise=0.01\nseed=2\n",
        "tok_s=1250\nnoise=0.01\nseed=3\nstall_at=candidate-1\n",
        "tok_s=900\nnoise=0.01\nseed=4\n",
    ]);

    let mut first = spawn_run(&repo);
    repo.wait_for_signal("stalled");
    first.kill().unwrap(); // SIGKILL
    first.wait().unwrap();

    let status = repo.status_json();
    assert_eq!(verdicts(&status), ["keep", "keep", "pending", "pending"]);
    assert_each_sample_once(&status);

    // The server ends the killed process's session (and its run lock) once it sees the closed
    // connection: a new run gets the lock within moments, never "stuck".
    let deadline = Instant::now() + Duration::from_secs(30);
    let out = loop {
        let out = repo.run_until_idle();
        let locked = text(&out.stderr).contains("another tally run");
        if !locked || Instant::now() > deadline {
            break out;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let status = repo.status_json();
    // What the same kill leaves on SQLite (campaign_safety.rs): the killed evaluation's finished
    // pair still counts, nothing of it was added twice.
    assert_eq!(verdicts(&status), ["keep", "keep", "keep", "discard"]);
    assert_each_sample_once(&status);
    assert!(repo.leftover_checkouts().is_empty());
}

#[test]
fn store_copy_moves_a_sqlite_campaign_to_postgres_as_status_shows_it() {
    let Some(schema) = Schema::new("copy") else {
        return;
    };
    let repo = CampaignRepo::new();
    repo.start_campaign(PAIRED, BASELINE);
    repo.propose(&[
        "tok_s=1100\nnoise=0.01\nseed=2\np50_ms=12.5\n",
        "tok_s=900\nnoise=0.01\nseed=3\n",
    ]);
    let out = repo.run_until_idle();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // A hand-set verdict and a remeasure make the store less regular.
    let out = repo.tally(&[
        "candidate",
        "verdict",
        "2",
        "interesting",
        "--reason",
        "look again",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let on_sqlite = repo.status_json();

    let from = format!("sqlite:{}", repo.root().join(".tally/tally.db").display());
    let url = schema.tally_url();
    let out = repo
        .bare_command(&["store", "copy", "--from", &from, "--to", &url])
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        stdout.starts_with("copied 1 campaign(s) (`team`) to postgres://tally:***@"),
        "{stdout}"
    );
    assert!(stdout.contains("3 candidates"), "{stdout}");

    let status = repo
        .command(&["status", "--json"])
        .env("TALLY_DATABASE_URL", &url)
        .output()
        .unwrap();
    assert_eq!(status.status.code(), Some(0), "{}", text(&status.stderr));
    let mut on_postgres: Value = serde_json::from_slice(&status.stdout).unwrap();
    // Everything is equal but `hours`, the campaign's age read from the clock at each status.
    let mut on_sqlite = on_sqlite;
    for status in [&mut on_sqlite, &mut on_postgres] {
        let hours = status["facts"]
            .as_object_mut()
            .unwrap()
            .remove("hours")
            .expect("the hours fact");
        assert!(hours.as_f64().unwrap() > 0.0);
    }
    assert_eq!(on_postgres, on_sqlite);

    // A second copy would change ids: refused, and the destination is as it was.
    let again = repo
        .bare_command(&["store", "copy", "--from", &from, "--to", &url])
        .output()
        .unwrap();
    let stderr = text(&again.stderr);
    assert_eq!(again.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("it already holds 1 campaign(s) (the first is `team`)"),
        "{stderr}"
    );
}
