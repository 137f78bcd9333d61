//! `kill -9` in the middle of writes: a child process (this test binary re-run on one helper
//! test) records paired samples with many unit rows and queues candidates as fast as it can;
//! the parent kills it with SIGKILL several times and checks after each kill that the file is
//! intact and every invariant holds (each measurement has all its units, pairs are linked
//! both ways, candidate numbers are contiguous).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rusqlite::Connection;
use tally_model::{CampaignId, CandidateId, EvaluationState, Side, UnixMillis};
use tally_store::{NewCandidate, NewMeasurement, SqliteStore, Store};

use crate::fixtures::{running_campaign, sample_with_units};

const CHILD_ENV: &str = "TALLY_STORE_CRASH_CHILD";
const UNITS: usize = 200;

/// The child's body. Without `TALLY_STORE_CRASH_CHILD` (every normal run) it returns at once;
/// `a_kill_9_mid_write_leaves_the_store_consistent` runs it in a child process.
#[test]
fn crash_child_writer() {
    let Some(path) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let store = SqliteStore::open(path).unwrap();
    let c = store.campaign_by_name("alpha").unwrap().unwrap().id;
    let e = store.unfinished_evaluations(c).unwrap()[0].id;
    for round in 0u32.. {
        let cand = store
            .record_measurement(&sample_with_units(c, CandidateId(1), e, round, UNITS))
            .unwrap();
        store
            .record_measurement(&NewMeasurement {
                side: Side::Bar,
                candidate: CandidateId(0),
                pair: Some(cand.id),
                ..sample_with_units(c, CandidateId(1), e, round, UNITS)
            })
            .unwrap();
        let batch: Vec<_> = (0..3)
            .map(|i| NewCandidate {
                revision: format!("rev-{round}-{i}"),
                proposed_by: "child".to_owned(),
                note: None,
                created: UnixMillis(i64::from(round)),
            })
            .collect();
        store.add_candidates(c, &batch).unwrap();
    }
}

fn count(store: &SqliteStore, c: CampaignId) -> usize {
    store.list_measurements(c).map(|m| m.len()).unwrap_or(0)
}

fn check_invariants(path: &std::path::Path, c: CampaignId) -> usize {
    let raw = Connection::open(path).unwrap();
    let integrity: String = raw
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");
    let fk_violations: i64 = raw
        .query_row("SELECT COUNT(*) FROM pragma_foreign_key_check", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(fk_violations, 0);
    drop(raw);
    let store = SqliteStore::open(path).unwrap();
    let measurements = store.list_measurements(c).unwrap();
    for m in &measurements {
        let units = store.units_of_measurement(m.id).unwrap();
        assert_eq!(units["tok_s"].len(), UNITS, "{} lost unit rows", m.id);
        if m.side == Side::Bar {
            let partner = store
                .measurement(m.pair.expect("bar samples are paired"))
                .unwrap();
            assert_eq!(
                partner.unwrap().pair,
                Some(m.id),
                "{} is linked one way only",
                m.id
            );
        }
    }
    let numbers: Vec<u32> = store
        .list_candidates(c)
        .unwrap()
        .iter()
        .map(|k| k.id.0)
        .collect();
    assert_eq!(numbers, (0..numbers.len() as u32).collect::<Vec<_>>());
    assert_eq!(
        (numbers.len() - 2) % 3,
        0,
        "candidate batches are all-or-nothing"
    );
    assert_eq!(
        store.totals(c).unwrap().measurements,
        measurements.len() as u64
    );
    measurements.len()
}

#[test]
fn a_kill_9_mid_write_leaves_the_store_consistent() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tally.db");
    let c = {
        let store = SqliteStore::open(&path).unwrap();
        let (c, _, e) = running_campaign(&store);
        assert_eq!(
            store.evaluation(e).unwrap().unwrap().state,
            EvaluationState::Running
        );
        c
    };
    let watcher = SqliteStore::open(&path).unwrap();
    let mut seen = 0;
    for kill in 1..=3 {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["crash::crash_child_writer", "--exact", "--test-threads=1"])
            .env(CHILD_ENV, &path)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        while count(&watcher, c) < seen + 10 * kill {
            assert!(Instant::now() < deadline, "the child wrote too slowly");
            assert!(
                child.try_wait().unwrap().is_none(),
                "the child exited early"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let now = check_invariants(&path, c);
        assert!(now > seen, "kill {kill}: the child made progress");
        seen = now;
    }
}
