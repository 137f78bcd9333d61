//! [`PgStore`]: the [`crate::Store`] on a PostgreSQL database (`postgres://…`), for a team that
//! shares one campaign store (`docs/team.md`).
//!
//! This module owns connecting, the versioned migrations (`migrations/postgres/*.sql`, each
//! applied in one transaction together with its row in `tally_schema_migrations`, under an
//! advisory lock so that two processes opening a fresh database do not both migrate it), and
//! the transaction helpers every operation goes through: each write is one transaction that
//! first takes the store's write lock (`pg_advisory_xact_lock`), so writers are serialised
//! exactly as SQLite's `BEGIN IMMEDIATE` serialises them and id allocation (`MAX(id) + 1`) stays
//! race-free; each multi-query read is one `REPEATABLE READ READ ONLY` transaction, so it sees
//! one snapshot. A killed writer's connection closes, and PostgreSQL rolls its transaction back
//! and drops its locks: nothing is half-written and nothing stays locked
//! (`docs/team.md#guarantees`). The queries themselves live in the sibling modules.

mod campaigns;
mod candidates;
mod checks;
mod codec;
mod evaluations;
mod ideas;
mod lock;
mod measurements;
mod store_impl;
mod totals;
mod workers;

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use postgres::error::SqlState;
use postgres::{Client, NoTls, Transaction};

use crate::error::{Error, StoreError};

pub use lock::{PgRunLock, RunLockError, RunLockHeld};

/// Every migration, in order, as (version, name, SQL). Append only: never edit or reorder a
/// released one. Version 1 is the same schema as the SQLite store's version 1; version 2 holds
/// the tables of SQLite's versions 2 to 4 (ideas, runs with their usage, check runs), so a
/// PostgreSQL store of version 2 has every table of a SQLite store of version 4; version 3 is
/// SQLite's version 5 (what a Slurm job held), version 4 SQLite's version 6 (a run may end
/// `stopped`) (`docs/store.md#postgres`).
const MIGRATIONS: &[(i64, &str, &str)] = &[
    (
        1,
        "initial",
        include_str!("../../migrations/postgres/0001_initial.sql"),
    ),
    (
        2,
        "implementers",
        include_str!("../../migrations/postgres/0002_implementers.sql"),
    ),
    (
        3,
        "held_gpus",
        include_str!("../../migrations/postgres/0003_held_gpus.sql"),
    ),
    (
        4,
        "run_end_stopped",
        include_str!("../../migrations/postgres/0004_run_end_stopped.sql"),
    ),
];

/// Advisory-lock keys (the first of `pg_advisory_*lock(int, int)`'s two keys): "taly".
const LOCK_SPACE: i32 = 0x7461_6c79;
/// Second key: the store's write lock, taken by every write transaction.
const WRITE_LOCK: i32 = 1;
/// Second key: migrating the schema.
const MIGRATE_LOCK: i32 = 2;

/// Settings for [`PgStore::open_with`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PgOptions {
    /// How long a call waits for another process's write lock before failing with
    /// `StoreError::Busy` (default 5 s, as for SQLite).
    pub busy_timeout: Duration,
    /// The schema (namespace) that holds the tables; `None` uses the database's default
    /// (`public`). Created when missing. Tests give each store its own.
    pub schema: Option<String>,
}

impl Default for PgOptions {
    fn default() -> Self {
        Self {
            busy_timeout: Duration::from_secs(5),
            schema: None,
        }
    }
}

/// The PostgreSQL store. One connection behind a mutex: `Send + Sync`, calls are serialised.
pub struct PgStore {
    client: Mutex<Client>,
    shown: String,
    busy_timeout: Duration,
    /// The worker slot this store works as (`tally run` with its slot held), if any.
    worker: Option<u32>,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore").field("url", &self.shown).finish()
    }
}

impl PgStore {
    /// The newest schema version this build knows.
    pub const SCHEMA_VERSION: usize = MIGRATIONS.len();

    /// Connects to the database at `url` (`postgres://user:password@host:port/db`) with default
    /// options and migrates it to the newest schema.
    pub fn open(url: &str) -> Result<Self, StoreError> {
        Self::open_with(url, &PgOptions::default())
    }

    /// [`open`](Self::open) with explicit options.
    pub fn open_with(url: &str, options: &PgOptions) -> Result<Self, StoreError> {
        let shown = redact(url);
        let open_err = |source: postgres::Error| StoreError::Open {
            path: shown.clone(),
            source: Box::new(Flat(source)),
        };
        let mut client = connect(url).map_err(|e| match e {
            Error::Postgres(source) => open_err(source),
            other => locate(other, &shown, options.busy_timeout),
        })?;
        let timeout_ms = options.busy_timeout.as_millis().max(1);
        client
            .batch_execute(&format!("SET lock_timeout = {timeout_ms}"))
            .map_err(open_err)?;
        if let Some(schema) = &options.schema {
            let quoted = quote_ident(schema);
            client
                .batch_execute(&format!(
                    "CREATE SCHEMA IF NOT EXISTS {quoted}; SET search_path TO {quoted}"
                ))
                .map_err(open_err)?;
        }
        migrate(&mut client, &shown).map_err(|e| match e {
            Error::Postgres(source) => StoreError::Migration {
                path: shown.clone(),
                source: Box::new(Flat(source)),
            },
            other => locate(other, &shown, options.busy_timeout),
        })?;
        Ok(Self {
            client: Mutex::new(client),
            shown,
            busy_timeout: options.busy_timeout,
            worker: None,
        })
    }

    /// This store as the worker of `slot` (whose [`PgRunLock`] the caller holds): it claims
    /// work and recovers orphans as [`tally_contract::WorkerStore`] (`docs/team.md#workers`).
    pub fn as_worker(mut self, slot: u32) -> Self {
        self.worker = Some(slot);
        self
    }

    /// Removes a schema and everything in it: for tests that gave each store its own
    /// ([`PgOptions::schema`]). tally itself never calls it.
    pub fn drop_schema(url: &str, schema: &str) -> Result<(), StoreError> {
        let shown = redact(url);
        let mut client = connect(url).map_err(|e| locate(e, &shown, Duration::ZERO))?;
        client
            .batch_execute(&format!(
                "DROP SCHEMA IF EXISTS {} CASCADE",
                quote_ident(schema)
            ))
            .map_err(|e| locate(e.into(), &shown, Duration::ZERO))
    }

    /// The database URL with its password hidden, as messages show it.
    pub fn url(&self) -> &str {
        &self.shown
    }

    /// The schema version of the database (the newest applied migration).
    pub fn schema_version(&self) -> Result<i64, StoreError> {
        self.read(|tx| Ok(applied_version(tx)?))
    }

    fn lock(&self) -> MutexGuard<'_, Client> {
        // A panic inside a call drops its transaction (rolling it back) before the guard, so
        // the connection behind a poisoned mutex is still sound.
        self.client.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `f` in one transaction holding the store's write lock, committed when `f` succeeds
    /// and rolled back otherwise.
    pub(crate) fn write<T>(
        &self,
        f: impl FnOnce(&mut Transaction<'_>) -> Result<T, Error>,
    ) -> Result<T, StoreError> {
        let mut client = self.lock();
        let run = || {
            let mut tx = client.transaction()?;
            tx.execute(
                "SELECT pg_advisory_xact_lock($1, $2)",
                &[&LOCK_SPACE, &WRITE_LOCK],
            )?;
            let out = f(&mut tx)?;
            tx.commit()?;
            Ok(out)
        };
        run().map_err(|e| locate(e, &self.shown, self.busy_timeout))
    }

    /// Runs `f` in one read-only snapshot transaction.
    fn read<T>(
        &self,
        f: impl FnOnce(&mut Transaction<'_>) -> Result<T, Error>,
    ) -> Result<T, StoreError> {
        let mut client = self.lock();
        let run = || {
            let mut tx = client
                .build_transaction()
                .isolation_level(postgres::IsolationLevel::RepeatableRead)
                .read_only(true)
                .start()?;
            let out = f(&mut tx)?;
            tx.commit()?;
            Ok(out)
        };
        run().map_err(|e| locate(e, &self.shown, self.busy_timeout))
    }
}

/// A plain-text connection (the server is on the team's network or localhost; put TLS in front
/// with a tunnel where it is not).
fn connect(url: &str) -> Result<Client, Error> {
    let config: postgres::Config = url.parse().map_err(|e: postgres::Error| {
        StoreError::invalid(
            "database URL",
            format!(
                "{} is not a PostgreSQL URL ({e}); write postgres://USER:PASSWORD@HOST:PORT/DATABASE",
                redact(url)
            ),
        )
    })?;
    let mut config = config;
    if config.get_application_name().is_none() {
        config.application_name("tally");
    }
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(Duration::from_secs(10));
    }
    Ok(config.connect(NoTls)?)
}

/// Applies the migrations the database lacks, each in one transaction, under the migrate lock.
/// Refuses a database migrated by a newer tally.
fn migrate(client: &mut Client, shown: &str) -> Result<(), Error> {
    let mut tx = client.transaction()?;
    tx.execute(
        "SELECT pg_advisory_xact_lock($1, $2)",
        &[&LOCK_SPACE, &MIGRATE_LOCK],
    )?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS tally_schema_migrations (
             version     BIGINT PRIMARY KEY,
             name        TEXT NOT NULL,
             applied_ms  BIGINT NOT NULL
         )",
    )?;
    let found = applied_version(&mut tx)?;
    if found > SCHEMA_VERSION_I64 {
        return Err(StoreError::SchemaTooNew {
            path: shown.to_owned(),
            found,
            known: PgStore::SCHEMA_VERSION,
        }
        .into());
    }
    for (version, name, sql) in MIGRATIONS.iter().filter(|(v, ..)| *v > found) {
        tx.batch_execute(sql)?;
        tx.execute(
            "INSERT INTO tally_schema_migrations (version, name, applied_ms) \
             VALUES ($1, $2, (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT)",
            &[version, name],
        )?;
    }
    tx.commit()?;
    Ok(())
}

const SCHEMA_VERSION_I64: i64 = MIGRATIONS.len() as i64;

fn applied_version(tx: &mut Transaction<'_>) -> Result<i64, postgres::Error> {
    tx.query_one(
        "SELECT COALESCE(MAX(version), 0) FROM tally_schema_migrations",
        &[],
    )
    .map(|row| row.get(0))
}

/// Fills in the store URL of a database error, and turns a lock wait that ran out into
/// [`StoreError::Busy`].
fn locate(error: Error, shown: &str, busy_timeout: Duration) -> StoreError {
    match error {
        Error::Postgres(source) => {
            if source.code() == Some(&SqlState::LOCK_NOT_AVAILABLE) {
                StoreError::Busy {
                    path: shown.to_owned(),
                    timeout_ms: busy_timeout.as_millis(),
                }
            } else {
                StoreError::Database {
                    path: shown.to_owned(),
                    source: Box::new(Flat(source)),
                }
            }
        }
        Error::Store(other) => other,
        Error::Sqlite(source) => StoreError::Database {
            path: shown.to_owned(),
            source: Box::new(source),
        },
    }
}

/// What PostgreSQL said, in one line: the server's message (with its detail) rather than the
/// client's generic "db error".
#[derive(Debug)]
struct Flat(postgres::Error);

impl std::fmt::Display for Flat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0.as_db_error() {
            Some(db) => {
                write!(f, "{}: {}", db.severity(), db.message())?;
                if let Some(detail) = db.detail() {
                    write!(f, " ({detail})")?;
                }
                Ok(())
            }
            None => match std::error::Error::source(&self.0) {
                Some(source) => write!(f, "{}: {source}", self.0),
                None => write!(f, "{}", self.0),
            },
        }
    }
}

impl std::error::Error for Flat {}

/// The URL with the password replaced by `***`, for messages.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let (authority, tail) = match rest.find('/') {
        Some(slash) => rest.split_at(slash),
        None => (rest, ""),
    };
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _password)) => format!("{scheme}://{user}:***@{host}{tail}"),
            None => url.to_owned(),
        },
        None => url.to_owned(),
    }
}

/// A SQL identifier, double-quoted.
fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The next id of a table with an `id` column, allocated inside the caller's write transaction
/// (which holds the write lock, so no other writer can take the same one).
fn next_id(tx: &mut Transaction<'_>, table: &'static str) -> Result<i64, Error> {
    let sql = format!("SELECT COALESCE(MAX(id), 0) + 1 FROM {table}");
    Ok(tx.query_one(sql.as_str(), &[])?.get(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_reach_messages() {
        assert_eq!(
            redact("postgres://tally:s3cret@db.lab:5433/tally"),
            "postgres://tally:***@db.lab:5433/tally"
        );
        assert_eq!(redact("postgres://db.lab/tally"), "postgres://db.lab/tally");
        assert_eq!(
            redact("postgres://ana@db.lab/tally"),
            "postgres://ana@db.lab/tally"
        );
        assert_eq!(redact("postgres://u:p@h"), "postgres://u:***@h");
    }

    #[test]
    fn identifiers_are_quoted() {
        assert_eq!(quote_ident("t_1"), "\"t_1\"");
        assert_eq!(quote_ident("a\"b"), "\"a\"\"b\"");
    }
}
