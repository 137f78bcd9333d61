//! The store's guard (`docs/store.md#guard`): a connection without `tally_writer()` — the
//! `sqlite3` shell, a script — can neither insert, update nor delete a row of any table; tally's
//! connections can; a dropped, changed or foreign trigger is reported and repaired; a version-5
//! store gets the guard when it is upgraded.

use rusqlite::Connection;
use tally_model::{CandidateId, Verdict};
use tally_store::{SqliteStore, Store, allow_writes};

use crate::fixtures::{running_campaign, sample_with_units};

/// Every table of the store: each one is guarded.
const TABLES: &[&str] = &[
    "config_texts",
    "campaigns",
    "candidates",
    "evaluations",
    "measurements",
    "measurement_units",
    "ideas",
    "runs",
    "checks",
];

/// Writes of each kind that change nothing, so they succeed on any table when allowed.
fn harmless_writes(table: &str) -> [String; 3] {
    [
        format!("INSERT INTO {table} SELECT * FROM {table} WHERE 0"),
        format!("UPDATE {table} SET rowid = rowid"),
        format!("DELETE FROM {table} WHERE 0"),
    ]
}

/// A store file with a campaign, a judged baseline, a pending candidate and a measurement.
fn filled_store(dir: &tempfile::TempDir) -> (std::path::PathBuf, SqliteStore) {
    let path = dir.path().join("tally.db");
    let store = SqliteStore::open(&path).unwrap();
    let (c, k, e) = running_campaign(&store);
    store
        .record_measurement(&sample_with_units(c, k, e, 0, 2))
        .unwrap();
    (path, store)
}

const FORGED_KEEP: &str = "UPDATE candidates SET verdict = 'keep', verdict_set_by = 'loop', \
                           judged_ms = 9 WHERE number = 1";

#[test]
fn a_connection_without_tally_writer_cannot_write_any_table() {
    let dir = tempfile::tempdir().unwrap();
    let (path, store) = filled_store(&dir);
    let before = store
        .snapshot(store.list_campaigns().unwrap()[0].id)
        .unwrap();

    let foreign = Connection::open(&path).unwrap();
    let refused = |sql: &str| {
        let err = foreign.execute_batch(sql).unwrap_err().to_string();
        assert!(
            err.contains("no such function: tally_writer"),
            "{sql}: {err}"
        );
    };
    for table in TABLES {
        for sql in harmless_writes(table) {
            refused(&sql);
        }
    }
    refused(FORGED_KEEP);
    refused("DELETE FROM measurement_units");
    // Nothing changed, and the guard is intact.
    let campaign = store.list_campaigns().unwrap()[0].id;
    assert_eq!(store.snapshot(campaign).unwrap(), before);
    assert_eq!(
        store
            .candidate(campaign, CandidateId(1))
            .unwrap()
            .unwrap()
            .verdict,
        Verdict::Pending
    );
    assert_eq!(store.guard_damage().unwrap(), None);

    // The same statements pass on a connection that registers the function, as tally's do.
    allow_writes(&foreign).unwrap();
    for table in TABLES {
        for sql in harmless_writes(table) {
            foreign.execute_batch(&sql).unwrap();
        }
    }
    foreign.execute_batch(FORGED_KEEP).unwrap();
    assert_eq!(
        store
            .candidate(campaign, CandidateId(1))
            .unwrap()
            .unwrap()
            .verdict,
        Verdict::Keep
    );
}

#[test]
fn a_dropped_changed_or_foreign_trigger_is_found_and_repaired() {
    let dir = tempfile::tempdir().unwrap();
    let (path, store) = filled_store(&dir);
    assert_eq!(store.repair_guard().unwrap(), Vec::<String>::new());
    let foreign = Connection::open(&path).unwrap();

    // DROP TRIGGER needs no function: the write then goes through.
    foreign
        .execute_batch("DROP TRIGGER tally_guard_candidates_update;")
        .unwrap();
    foreign.execute_batch(FORGED_KEEP).unwrap();
    let found = store
        .guard_damage()
        .unwrap()
        .expect("a dropped trigger is found");
    assert!(
        found.starts_with(
            "trigger tally_guard_candidates_update is missing (the store was written by \
             something other than tally); "
        ),
        "{found}"
    );
    assert!(found.ends_with("`tally store check --repair`"), "{found}");
    assert_eq!(store.tampering().unwrap(), Some(found));

    // A trigger of the same name that does nothing, and one that is not tally's.
    foreign
        .execute_batch(
            "DROP TRIGGER tally_guard_runs_insert; \
             CREATE TRIGGER tally_guard_runs_insert BEFORE INSERT ON runs BEGIN SELECT 1; END; \
             CREATE TRIGGER sneaky AFTER UPDATE ON candidates BEGIN SELECT 1; END;",
        )
        .unwrap();
    let found = store.guard_damage().unwrap().unwrap();
    assert!(
        found.starts_with("trigger tally_guard_candidates_update is missing (and 2 more)"),
        "{found}"
    );

    assert_eq!(
        store.repair_guard().unwrap(),
        [
            "restored trigger tally_guard_candidates_update",
            "restored trigger tally_guard_runs_insert (it was changed)",
            "dropped trigger sneaky (not tally's)",
        ]
    );
    assert_eq!(store.guard_damage().unwrap(), None);
    assert_eq!(store.tampering().unwrap(), None);
    let err = foreign
        .execute_batch("UPDATE candidates SET note = 'x'")
        .unwrap_err();
    assert!(
        err.to_string().contains("no such function: tally_writer"),
        "{err}"
    );
    // The repair lasts: a reopened store finds the guard intact.
    drop(store);
    assert_eq!(
        SqliteStore::open(&path).unwrap().guard_damage().unwrap(),
        None
    );
}

#[test]
fn a_version_5_store_gets_the_guard_when_upgraded() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tally.db");
    // Schema version 5 with a campaign, as an older tally left it.
    crate::fixtures::version_5_store(
        &path,
        "INSERT INTO config_texts VALUES (1, 'x', 'name = \"old\"');
             INSERT INTO campaigns VALUES (1, 'old', 'active', NULL, 1, 1, 'e', 1, NULL);",
    );
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), 7);
    assert_eq!(store.guard_damage().unwrap(), None);
    let campaign = store.campaign_by_name("old").unwrap().expect("kept");
    assert_eq!(campaign.config_text, "name = \"old\"");
    drop(store);
    let err = Connection::open(&path)
        .unwrap()
        .execute_batch("DELETE FROM campaigns")
        .unwrap_err();
    assert!(
        err.to_string().contains("no such function: tally_writer"),
        "{err}"
    );
}
