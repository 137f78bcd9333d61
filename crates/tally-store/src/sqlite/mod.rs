//! [`SqliteStore`]: the [`crate::Store`] on one SQLite file (default `.tally/tally.db`, chosen by
//! the caller) or in memory.
//!
//! This module owns opening: pragmas (WAL journal, `synchronous`, `busy_timeout`, foreign keys),
//! the versioned migrations (`migrations/sqlite/*.sql`, applied with `rusqlite_migration` in one
//! transaction; a file from a newer tally is refused), and the transaction helpers every
//! operation goes through: each write is one `BEGIN IMMEDIATE` transaction, each multi-query
//! read one deferred transaction, and nothing stays open between calls, so a `kill -9` at any
//! moment leaves the file consistent. The queries themselves live in the sibling modules.

pub(crate) mod campaigns;
mod candidates;
mod checks;
pub(crate) mod codec;
mod evaluations;
pub(crate) mod guard;
mod ideas;
mod measurements;
mod runs;
mod store_impl;
mod totals;
mod workers;

use std::path::Path;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, OpenFlags, TransactionBehavior};
use rusqlite_migration::{M, MigrationDefinitionError, Migrations};

use crate::error::{Error, StoreError};

/// The SQLite application id of a tally store (`"taly"`), set by the first migration.
pub const APPLICATION_ID: i64 = 0x7461_6c79;

/// Every migration, in order; the schema version is how many have been applied
/// (`PRAGMA user_version`). Append only: never edit or reorder a released one.
const MIGRATION_LIST: &[M<'static>] = &[
    M::up(include_str!("../../migrations/sqlite/0001_initial.sql")),
    M::up(include_str!(
        "../../migrations/sqlite/0002_implementers.sql"
    )),
    M::up(include_str!("../../migrations/sqlite/0003_run_usage.sql")),
    M::up(include_str!("../../migrations/sqlite/0004_checks.sql")),
    M::up(include_str!("../../migrations/sqlite/0005_held_gpus.sql")),
    M::up(include_str!(
        "../../migrations/sqlite/0006_run_end_stopped.sql"
    )),
    M::up(guard::MIGRATION),
];

const MIGRATIONS: Migrations<'static> = Migrations::from_slice(MIGRATION_LIST);

/// The most of the database file SQLite reads through a memory map (`PRAGMA mmap_size`).
const MMAP_SIZE: i64 = 1 << 30;

/// How hard SQLite works to keep a commit across a power cut (`PRAGMA synchronous`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Synchronous {
    /// Every commit is on disk when it returns (the default).
    #[default]
    Full,
    /// With WAL: safe against a process crash, the last commits may be lost on power loss.
    Normal,
    /// No syncing at all: only for filling throwaway databases fast (benchmarks).
    Off,
}

impl Synchronous {
    fn pragma_value(self) -> &'static str {
        match self {
            Self::Full => "FULL",
            Self::Normal => "NORMAL",
            Self::Off => "OFF",
        }
    }
}

/// Settings for [`SqliteStore::open_with`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SqliteOptions {
    /// How long a call waits for another process's write lock before failing with
    /// `StoreError::Busy` (default 5 s).
    pub busy_timeout: Duration,
    /// Durability of commits (default [`Synchronous::Full`]).
    pub synchronous: Synchronous,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        Self {
            busy_timeout: Duration::from_secs(5),
            synchronous: Synchronous::Full,
        }
    }
}

/// The SQLite store. One connection behind a mutex: `Send + Sync`, calls are serialised.
#[derive(Debug)]
pub struct SqliteStore {
    conn: Mutex<Connection>,
    path: String,
    busy_timeout: Duration,
    /// The evaluation slot this store works as, when `tally run` runs several in-process.
    worker: Option<workers::InProcessSlot>,
}

impl SqliteStore {
    /// The newest schema version this build knows.
    pub const SCHEMA_VERSION: usize = MIGRATION_LIST.len();

    /// Opens (creating it if needed) the store at `path` with default options; `:memory:`
    /// opens a private in-memory store. The directory must exist.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        Self::open_with(path, &SqliteOptions::default())
    }

    /// A fresh in-memory store (tests).
    pub fn open_in_memory() -> Result<Self, StoreError> {
        Self::open(":memory:")
    }

    /// Opens the store at `path` with explicit options, migrating it to the newest schema.
    pub fn open_with(path: impl AsRef<Path>, options: &SqliteOptions) -> Result<Self, StoreError> {
        let path = path.as_ref();
        let shown = path.display().to_string();
        let in_memory = path == Path::new(":memory:");
        if !in_memory
            && let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
            && !dir.is_dir()
        {
            return Err(StoreError::invalid(
                format!("store path {shown}"),
                format!(
                    "the directory {} does not exist; create it first",
                    dir.display()
                ),
            ));
        }
        let open_err = |source: rusqlite::Error| StoreError::Open {
            path: shown.clone(),
            source: Box::new(Flat(source)),
        };
        let mut conn = Connection::open(path).map_err(open_err)?;
        guard::allow_writes(&conn).map_err(open_err)?;
        conn.busy_timeout(options.busy_timeout).map_err(open_err)?;
        check_identity(&conn, &shown).map_err(|e| locate(e, &shown, options.busy_timeout))?;
        // journal_mode answers with the mode in force ("memory" for an in-memory database).
        let _mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
            .map_err(open_err)?;
        conn.pragma_update(None, "synchronous", options.synchronous.pragma_value())
            .map_err(open_err)?;
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(open_err)?;
        // Read the file through a memory map rather than a read call and a copy per page: the
        // bulk read of `tally status` visits every page of a large campaign.
        // (It answers with the size in force for a file, nothing in memory: not read.)
        conn.pragma_update(None, "mmap_size", MMAP_SIZE)
            .map_err(open_err)?;
        MIGRATIONS
            .to_latest(&mut conn)
            .map_err(|source| match source {
                rusqlite_migration::Error::MigrationDefinition(
                    MigrationDefinitionError::DatabaseTooFarAhead,
                ) => StoreError::SchemaTooNew {
                    path: shown.clone(),
                    found: user_version(&conn).unwrap_or(-1),
                    known: Self::SCHEMA_VERSION,
                },
                source => StoreError::Migration {
                    path: shown.clone(),
                    source: Box::new(source),
                },
            })?;
        Ok(Self {
            conn: Mutex::new(conn),
            path: shown,
            busy_timeout: options.busy_timeout,
            worker: None,
        })
    }

    /// Opens an existing store at `path` for reading only, with default options: what a
    /// command that only reads (`tally status`) needs, and all a read-only mount or another
    /// user's file allows. Nothing is created, migrated or changed (a write through it fails
    /// with SQLite's `attempt to write a readonly database`); a store that needs a migration is
    /// refused, since only a command that writes can apply it.
    ///
    /// A store in WAL mode (every tally store) needs its `-shm` index file to be read, and SQLite
    /// creates it next to the database: where that cannot be done (a read-only directory, and no
    /// tally running on the store, since it would have made the file), the store is read as the
    /// file is on disk (SQLite's `immutable`).
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let path = path.as_ref();
        let shown = path.display().to_string();
        let options = SqliteOptions::default();
        let open_err = |source: rusqlite::Error| StoreError::Open {
            path: shown.clone(),
            source: Box::new(Flat(source)),
        };
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let open = |uri: &str| -> Result<Connection, StoreError> {
            let conn = Connection::open_with_flags(uri, flags).map_err(open_err)?;
            // Nothing is written through it; registered so that every tally connection is alike.
            guard::allow_writes(&conn).map_err(open_err)?;
            conn.busy_timeout(options.busy_timeout).map_err(open_err)?;
            check_identity(&conn, &shown).map_err(|e| locate(e, &shown, options.busy_timeout))?;
            Ok(conn)
        };
        let conn = match open(&file_uri(path, "mode=ro")) {
            Err(StoreError::Database { source, .. }) | Err(StoreError::Open { source, .. })
                if read_only_failure(&*source) =>
            {
                open(&file_uri(path, "immutable=1"))?
            }
            other => other?,
        };
        let version = user_version(&conn).map_err(open_err)?;
        if version < Self::SCHEMA_VERSION as i64 {
            return Err(StoreError::Open {
                path: shown,
                source: format!(
                    "its schema version is {version}, older than this tally's ({}); a command \
                     that writes (`tally run`) upgrades it, which needs write access",
                    Self::SCHEMA_VERSION
                )
                .into(),
            });
        }
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(open_err)?;
        conn.pragma_update(None, "mmap_size", MMAP_SIZE)
            .map_err(open_err)?;
        Ok(Self {
            conn: Mutex::new(conn),
            path: shown,
            busy_timeout: options.busy_timeout,
            worker: None,
        })
    }

    /// Where the store is (`:memory:` for an in-memory one).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// What shows that something other than tally wrote the store — a guard trigger missing,
    /// changed, or one that is not tally's (`docs/store.md#guard`) — as a sentence that names
    /// the fix; `None` when the guard is intact.
    pub fn guard_damage(&self) -> Result<Option<String>, StoreError> {
        self.read(guard::tampering)
    }

    /// Restores the guard triggers (`tally store check --repair`, `docs/store.md#guard`) in one
    /// transaction: the missing and changed ones from the migration, the ones that are not
    /// tally's dropped. Returns what it did, one line each (empty: the guard was intact).
    pub fn repair_guard(&self) -> Result<Vec<String>, StoreError> {
        self.write(guard::repair)
    }

    /// The schema version of the open database (`PRAGMA user_version`).
    pub fn schema_version(&self) -> Result<i64, StoreError> {
        user_version(&self.lock()).map_err(|e| self.locate(e.into()))
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        // A panic inside a call drops its transaction (rolling it back) before the guard, so
        // the connection behind a poisoned mutex is still sound.
        self.conn.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn locate(&self, error: Error) -> StoreError {
        locate(error, &self.path, self.busy_timeout)
    }

    /// Runs `f` in one `BEGIN IMMEDIATE` transaction, committed when `f` succeeds and rolled
    /// back otherwise.
    fn write<T>(&self, f: impl FnOnce(&Connection) -> Result<T, Error>) -> Result<T, StoreError> {
        let mut conn = self.lock();
        let run = || {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let out = f(&tx)?;
            tx.commit()?;
            Ok(out)
        };
        run().map_err(|e| self.locate(e))
    }

    /// Runs `f` in one deferred (read) transaction, so its queries see one snapshot.
    pub(crate) fn read<T>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, Error>,
    ) -> Result<T, StoreError> {
        let mut conn = self.lock();
        let run = || {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Deferred)?;
            let out = f(&tx)?;
            tx.commit()?;
            Ok(out)
        };
        run().map_err(|e| self.locate(e))
    }
}

/// Fills in the store path of a database error, and turns "busy" into [`StoreError::Busy`].
fn locate(error: Error, path: &str, busy_timeout: Duration) -> StoreError {
    match error {
        Error::Sqlite(source) => match source.sqlite_error_code() {
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => StoreError::Busy {
                path: path.to_owned(),
                timeout_ms: busy_timeout.as_millis(),
            },
            _ => StoreError::Database {
                path: path.to_owned(),
                source: Box::new(Flat(source)),
            },
        },
        Error::Store(other) => other,
        #[cfg(feature = "postgres")]
        Error::Postgres(source) => StoreError::Database {
            path: path.to_owned(),
            source: Box::new(source),
        },
    }
}

/// What SQLite said, said once. A `rusqlite` error's source is SQLite's own error, whose text
/// repeats the message after a code (`attempt to write a readonly database`, then `Error code
/// 1544: attempt to write a readonly database`): printed as a chain, the cause would appear
/// twice. This keeps the message, and the code for a read-only store as a sentence.
#[derive(Debug)]
struct Flat(rusqlite::Error);

impl std::fmt::Display for Flat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)?;
        if self.0.sqlite_error_code() == Some(ErrorCode::ReadOnly) {
            f.write_str(
                " (this command writes to the store: it needs write access to the file and to \
                 its directory)",
            )?;
        }
        Ok(())
    }
}

impl std::error::Error for Flat {}

/// Whether a failure to read a store opened read-only is SQLite's refusal to make the WAL index
/// (`-shm`) beside it: then only an immutable open can read it.
fn read_only_failure(error: &(dyn std::error::Error + 'static)) -> bool {
    error
        .downcast_ref::<Flat>()
        .and_then(|flat| flat.0.sqlite_error_code())
        .is_some_and(|code| matches!(code, ErrorCode::ReadOnly | ErrorCode::CannotOpen))
}

/// The `file:` URI of a path with a query (`mode=ro`): the path's bytes percent-encoded where a
/// URI needs it (`?`, `#`, `%`, and anything not ASCII), so that any file name opens.
fn file_uri(path: &Path, query: &str) -> String {
    let mut uri = String::from("file:");
    for &byte in path.as_os_str().as_encoded_bytes() {
        if byte.is_ascii_alphanumeric() || b"/-_.~".contains(&byte) {
            uri.push(char::from(byte));
        } else {
            uri.push_str(&format!("%{byte:02X}"));
        }
    }
    uri.push('?');
    uri.push_str(query);
    uri
}

fn user_version(conn: &Connection) -> Result<i64, rusqlite::Error> {
    conn.query_row("PRAGMA user_version", [], |row| row.get(0))
}

/// Refuses files that belong to another program, and files from a newer tally.
fn check_identity(conn: &Connection, path: &str) -> Result<(), Error> {
    let app_id: i64 = conn.query_row("PRAGMA application_id", [], |row| row.get(0))?;
    let version = user_version(conn)?;
    if app_id == 0 {
        let tables: i64 = conn.query_row(
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table'",
            [],
            |row| row.get(0),
        )?;
        if tables > 0 || version != 0 {
            return Err(StoreError::NotATallyStore {
                path: path.to_owned(),
                found: app_id,
            }
            .into());
        }
    } else if app_id != APPLICATION_ID {
        return Err(StoreError::NotATallyStore {
            path: path.to_owned(),
            found: app_id,
        }
        .into());
    }
    if version > SqliteStore::SCHEMA_VERSION as i64 {
        return Err(StoreError::SchemaTooNew {
            path: path.to_owned(),
            found: version,
            known: SqliteStore::SCHEMA_VERSION,
        }
        .into());
    }
    Ok(())
}

/// `SELECT COALESCE(MAX(id), 0) + 1` over a table with an `id` column: the next id, allocated
/// inside the caller's write transaction (portable; no AUTOINCREMENT).
fn next_id(conn: &Connection, table: &'static str) -> Result<u64, Error> {
    let sql = format!("SELECT COALESCE(MAX(id), 0) + 1 FROM {table}");
    Ok(conn.prepare_cached(&sql)?.query_row([], |row| row.get(0))?)
}
