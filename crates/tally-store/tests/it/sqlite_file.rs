//! File-backed SQLite: reopening keeps everything, migrations from empty, refusing newer and
//! foreign files, WAL with a second connection, the busy error, concurrent writers (threads
//! sharing a store and separate connections), and a failing write that must roll back the
//! measurement together with its units.

use std::time::Duration;

use rusqlite::Connection;
use tally_model::{CampaignState, MeasurementId, Side, UnixMillis};
use tally_store::{APPLICATION_ID, NewMeasurement, SqliteOptions, SqliteStore, Store, StoreError};

use crate::fixtures::{running_campaign, sample_with_units};

fn table_names(conn: &Connection) -> Vec<String> {
    let mut stmt = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .unwrap();
    stmt.query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[test]
fn migrations_apply_from_empty_and_set_the_file_up() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tally.db");
    let store = SqliteStore::open(&path).unwrap();
    // Seven migrations: 0001_initial, 0002_implementers, 0003_run_usage, 0004_checks,
    // 0005_held_gpus, 0006_run_end_stopped, 0007_store_guard.
    assert_eq!(SqliteStore::SCHEMA_VERSION, 7);
    assert_eq!(store.schema_version().unwrap(), 7);
    assert_eq!(store.path(), path.display().to_string());
    drop(store);
    let raw = Connection::open(&path).unwrap();
    assert_eq!(
        table_names(&raw),
        [
            "campaigns",
            "candidates",
            "checks",
            "config_texts",
            "evaluations",
            "ideas",
            "measurement_units",
            "measurements",
            "runs"
        ]
    );
    let app_id: i64 = raw
        .query_row("PRAGMA application_id", [], |r| r.get(0))
        .unwrap();
    assert_eq!(app_id, APPLICATION_ID);
    let mode: String = raw
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal", "WAL persists in the file");
    // Opening again is a no-op migration.
    assert_eq!(
        SqliteStore::open(&path).unwrap().schema_version().unwrap(),
        7
    );
}

#[test]
fn reopening_a_file_keeps_everything() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tally.db");
    let store = SqliteStore::open(&path).unwrap();
    let (c, k, e) = running_campaign(&store);
    let first = store
        .record_measurement(&sample_with_units(c, k, e, 0, 3))
        .unwrap();
    store
        .record_measurement(&NewMeasurement {
            side: Side::Bar,
            candidate: tally_model::CandidateId(0),
            pair: Some(first.id),
            ..sample_with_units(c, k, e, 0, 2)
        })
        .unwrap();
    store
        .set_campaign_state(
            c,
            CampaignState::Held,
            Some("hold_at: gpu_usd"),
            UnixMillis(5),
        )
        .unwrap();
    let before = store.snapshot(c).unwrap();
    let units_before = store.units_of_candidate(c, k).unwrap();
    let totals_before = store.totals(c).unwrap();
    drop(store);

    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(store.snapshot(c).unwrap(), before);
    assert_eq!(store.units_of_candidate(c, k).unwrap(), units_before);
    assert_eq!(store.totals(c).unwrap(), totals_before);
    assert_eq!(before.measurements[0].pair, Some(MeasurementId(2)));
    assert_eq!(before.campaign.state, CampaignState::Held);
    let next = store
        .record_measurement(&sample_with_units(c, k, e, 1, 1))
        .unwrap();
    assert_eq!(next.id, MeasurementId(3), "ids continue after a reopen");
}

#[test]
fn a_store_from_a_newer_tally_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tally.db");
    drop(SqliteStore::open(&path).unwrap());
    Connection::open(&path)
        .unwrap()
        .pragma_update(None, "user_version", 8)
        .unwrap();
    let err = SqliteStore::open(&path).unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::SchemaTooNew {
                found: 8,
                known: 7,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        format!(
            "the store {} has schema version 8, newer than this tally knows (7); upgrade tally \
             to open it",
            path.display()
        )
    );
    let version: i64 = Connection::open(&path)
        .unwrap()
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, 8, "a refused file is left untouched");
}

#[test]
fn other_programs_databases_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain.db");
    Connection::open(&plain)
        .unwrap()
        .execute_batch("CREATE TABLE notes (t TEXT);")
        .unwrap();
    let err = SqliteStore::open(&plain).unwrap_err();
    assert!(
        matches!(err, StoreError::NotATallyStore { found: 0, .. }),
        "{err:?}"
    );
    let other = dir.path().join("other.db");
    Connection::open(&other)
        .unwrap()
        .pragma_update(None, "application_id", 42)
        .unwrap();
    let err = SqliteStore::open(&other).unwrap_err();
    assert!(
        matches!(err, StoreError::NotATallyStore { found: 42, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("is not a tally store"), "{err}");
    assert_eq!(table_names(&Connection::open(&plain).unwrap()), ["notes"]);
}

#[test]
fn a_missing_directory_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("no-such-dir").join("tally.db");
    let err = SqliteStore::open(&path).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "invalid store path {}: the directory {} does not exist; create it first",
            path.display(),
            dir.path().join("no-such-dir").display()
        )
    );
}

#[test]
fn a_failing_write_rolls_back_the_measurement_with_its_units() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tally.db");
    let store = SqliteStore::open(&path).unwrap();
    let (c, k, e) = running_campaign(&store);
    let partner = store
        .record_measurement(&NewMeasurement {
            side: Side::Bar,
            candidate: tally_model::CandidateId(0),
            ..sample_with_units(c, k, e, 0, 1)
        })
        .unwrap();
    // A trigger that fails the 3rd unit row, after the measurement row and two units are in.
    Connection::open(&path)
        .unwrap()
        .execute_batch(
            "CREATE TRIGGER refuse_unit BEFORE INSERT ON measurement_units \
             WHEN NEW.unit = 'prompt-0002' BEGIN SELECT RAISE(ABORT, 'unit refused'); END;",
        )
        .unwrap();
    let doomed = NewMeasurement {
        pair: Some(partner.id),
        ..sample_with_units(c, k, e, 0, 5)
    };
    let err = store.record_measurement(&doomed).unwrap_err();
    assert!(matches!(err, StoreError::Database { .. }), "{err:?}");
    assert!(err.to_string().contains("unit refused"), "{err}");
    assert!(
        err.to_string()
            .starts_with(&format!("store {}", path.display())),
        "{err}"
    );
    assert_eq!(
        store.list_measurements(c).unwrap().len(),
        1,
        "no measurement row"
    );
    assert_eq!(
        store.measurement(partner.id).unwrap().unwrap().pair,
        None,
        "no pair link"
    );
    let units: i64 = Connection::open(&path)
        .unwrap()
        .query_row("SELECT COUNT(*) FROM measurement_units", [], |r| r.get(0))
        .unwrap();
    assert_eq!(
        units, 1,
        "only the partner's unit row; none of the failed sample's"
    );
    Connection::open(&path)
        .unwrap()
        .execute_batch("DROP TRIGGER refuse_unit;")
        .unwrap();
    let ok = store.record_measurement(&doomed).unwrap();
    assert_eq!(ok.id, MeasurementId(2));
    assert_eq!(store.units_of_measurement(ok.id).unwrap()["tok_s"].len(), 5);
}

#[test]
fn a_second_connection_reads_while_the_first_writes_and_a_held_lock_is_busy() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tally.db");
    let writer = SqliteStore::open(&path).unwrap();
    let (c, k, e) = running_campaign(&writer);
    let reader = SqliteStore::open_with(
        &path,
        &SqliteOptions {
            busy_timeout: Duration::from_millis(50),
            ..SqliteOptions::default()
        },
    )
    .unwrap();
    writer
        .record_measurement(&sample_with_units(c, k, e, 0, 2))
        .unwrap();
    assert_eq!(
        reader.list_measurements(c).unwrap().len(),
        1,
        "sees committed writes"
    );

    let blocker = Connection::open(&path).unwrap();
    blocker.execute_batch("BEGIN IMMEDIATE;").unwrap();
    assert_eq!(
        reader.list_measurements(c).unwrap().len(),
        1,
        "WAL: reads go on while another process holds the write lock"
    );
    let err = reader
        .record_measurement(&sample_with_units(c, k, e, 1, 2))
        .unwrap_err();
    assert!(
        matches!(err, StoreError::Busy { timeout_ms: 50, .. }),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        format!(
            "the store {} stayed locked by another tally process for 50 ms; try again when it \
             is done",
            path.display()
        )
    );
    blocker.execute_batch("COMMIT;").unwrap();
    reader
        .record_measurement(&sample_with_units(c, k, e, 1, 2))
        .unwrap();
    assert_eq!(writer.list_measurements(c).unwrap().len(), 2);
}

#[test]
fn stores_and_errors_cross_threads() {
    fn shareable<T: Send + Sync + 'static>() {}
    shareable::<SqliteStore>();
    shareable::<StoreError>();
    shareable::<std::sync::Arc<dyn Store>>();
}

#[test]
fn concurrent_writers_on_one_file_queue_instead_of_colliding() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tally.db");
    let (c, k, e) = running_campaign(&SqliteStore::open(&path).unwrap());
    let shared = std::sync::Arc::new(SqliteStore::open(&path).unwrap());
    let writers: Vec<_> = (0..4u32)
        .map(|w| {
            let path = path.clone();
            let shared = std::sync::Arc::clone(&shared);
            std::thread::spawn(move || {
                // Two writers share one store (one connection); two have their own
                // connection, like separate processes.
                let own = (w % 2 == 0).then(|| SqliteStore::open(&path).unwrap());
                let store: &dyn Store = own.as_ref().map_or(&*shared as &dyn Store, |s| s);
                (0..25u32)
                    .map(|i| {
                        store
                            .record_measurement(&sample_with_units(c, k, e, w * 100 + i, 3))
                            .unwrap()
                            .id
                            .0
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut ids: Vec<u64> = writers
        .into_iter()
        .flat_map(|w| w.join().unwrap())
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, (1..=100).collect::<Vec<_>>(), "every id once");
    let listed = shared.list_measurements(c).unwrap();
    assert_eq!(listed.len(), 100);
    assert!(
        listed
            .iter()
            .all(|m| shared.units_of_measurement(m.id).unwrap()["tok_s"].len() == 3)
    );
}

#[test]
fn a_store_opened_read_only_reads_everything_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    // A name that a `file:` URI must escape.
    let path = dir.path().join("a ?#%é.db");
    let store = SqliteStore::open(&path).unwrap();
    let (c, k, e) = running_campaign(&store);
    store
        .record_measurement(&sample_with_units(c, k, e, 0, 3))
        .unwrap();
    let before = store.snapshot(c).unwrap();
    drop(store);

    let read_only = SqliteStore::open_read_only(&path).unwrap();
    assert_eq!(read_only.snapshot(c).unwrap(), before);
    assert_eq!(
        read_only.schema_version().unwrap(),
        SqliteStore::SCHEMA_VERSION as i64
    );
    let err = read_only
        .record_measurement(&sample_with_units(c, k, e, 1, 1))
        .unwrap_err();
    // SQLite's message, said once (its own error repeats it after a code), and what to do.
    let message = err.to_string();
    assert_eq!(
        message,
        format!(
            "store {}: attempt to write a readonly database (this command writes to the store: \
             it needs write access to the file and to its directory)",
            path.display()
        )
    );
    assert!(std::error::Error::source(&err).is_some_and(|s| s.source().is_none()));
    drop(read_only);
    assert_eq!(
        SqliteStore::open(&path).unwrap().snapshot(c).unwrap(),
        before
    );

    // Nothing is created, and an empty or foreign file is not migrated.
    let missing = dir.path().join("missing.db");
    assert!(SqliteStore::open_read_only(&missing).is_err());
    assert!(!missing.exists());
    let empty = dir.path().join("empty.db");
    drop(Connection::open(&empty).unwrap());
    let err = SqliteStore::open_read_only(&empty).unwrap_err();
    assert!(
        err.to_string().ends_with(
            "its schema version is 0, older than this tally's (7); a command that writes (`tally \
             run`) upgrades it, which needs write access"
        ),
        "{err}"
    );
}
