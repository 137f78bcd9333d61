//! The run lock on PostgreSQL: one `tally run` (or baseline-measuring `tally init`) per campaign
//! at a time across every machine that shares the database (`docs/team.md#guarantees`).
//!
//! Owns: a session-level advisory lock (`pg_try_advisory_lock`) keyed by the campaign's name,
//! held on a connection of its own for as long as the [`PgRunLock`] lives. PostgreSQL drops a
//! session's advisory locks when its connection ends, so a holder killed even with SIGKILL (its
//! socket closes) cannot leave the lock stuck, and there is no lock file to go stale. The
//! connection's `application_name` says who holds it (`tally pid=… host=… since=…`), so a
//! second process can name the holder from `pg_stat_activity`, like the lock file does for
//! SQLite.
//!
//! Deliberately absent, as for the lock file: waiting for the lock (a second `tally run` exits
//! 1). The key is `hashtext` of the schema and the campaign name, in a tally-only key space; two names with the
//! same 32-bit hash would exclude each other (never wrong, only cautious).

use std::fmt;

use postgres::Client;

use super::{LOCK_SPACE, connect, redact};
use crate::error::{Error, StoreError};

/// The first advisory-lock key of run locks ("taly" + 1, apart from the store's own locks).
const RUN_LOCK_SPACE: i32 = LOCK_SPACE + 1;

/// Another process holds the campaign's run lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunLockHeld {
    /// The campaign.
    pub campaign: String,
    /// Who holds it: the holder's `application_name` and client address, as far as the
    /// server says (`None` when the holder disconnected in between).
    pub holder: Option<String>,
}

impl fmt::Display for RunLockHeld {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.holder {
            Some(holder) => write!(
                f,
                "another tally run ({holder}) is working on campaign {}",
                self.campaign
            ),
            None => write!(
                f,
                "another tally run is working on campaign {} (it has just let go; try again)",
                self.campaign
            ),
        }
    }
}

impl std::error::Error for RunLockHeld {}

/// Why [`PgRunLock::acquire`] failed.
#[derive(Debug, thiserror::Error)]
pub enum RunLockError {
    /// Another process holds it.
    #[error(transparent)]
    Held(#[from] RunLockHeld),
    /// The database could not be reached or refused the query.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A held run lock; dropping it (or the process dying) lets go.
pub struct PgRunLock {
    _client: Client,
}

impl fmt::Debug for PgRunLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PgRunLock")
    }
}

impl PgRunLock {
    /// Takes the run lock of `campaign` on the database at `url`, or says who holds it.
    pub fn acquire(url: &str, campaign: &str) -> Result<Self, RunLockError> {
        let shown = redact(url);
        let fail = |e: Error| -> RunLockError {
            match e {
                Error::Store(store) => store.into(),
                Error::Postgres(source) => StoreError::Open {
                    path: shown.clone(),
                    source: Box::new(super::Flat(source)),
                }
                .into(),
                Error::Sqlite(source) => StoreError::Open {
                    path: shown.clone(),
                    source: Box::new(source),
                }
                .into(),
            }
        };
        let mut client = connect(url).map_err(fail)?;
        let me = holder_name();
        let run = |client: &mut Client| -> Result<Option<RunLockHeld>, Error> {
            client.execute("SELECT set_config('application_name', $1, false)", &[&me])?;
            let got: bool = client
                .query_one(
                    "SELECT pg_try_advisory_lock($1, hashtext(current_schema() || '/' || $2))",
                    &[&RUN_LOCK_SPACE, &campaign],
                )?
                .get(0);
            if got {
                return Ok(None);
            }
            // For a two-key advisory lock pg_locks shows the keys as classid and objid (oids).
            let holder = client
                .query_opt(
                    "SELECT a.application_name, COALESCE(host(a.client_addr), 'local socket') \
                     FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid \
                     WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2 \
                       AND l.classid = ($1::int8 & 4294967295)::oid \
                       AND l.objid = (hashtext(current_schema() || '/' || $2)::int8 & 4294967295)::oid \
                     LIMIT 1",
                    &[&i64::from(RUN_LOCK_SPACE), &campaign],
                )?
                .map(|row| {
                    let name: String = row.get(0);
                    let addr: String = row.get(1);
                    format!("{name}, connected from {addr}")
                });
            Ok(Some(RunLockHeld {
                campaign: campaign.to_owned(),
                holder,
            }))
        };
        match run(&mut client).map_err(fail)? {
            None => Ok(Self { _client: client }),
            Some(held) => Err(held.into()),
        }
    }
}

/// `tally pid=1234 host=gpu-7 since=1772366400` (Unix seconds): what `pg_stat_activity` shows
/// of the holder (the server keeps at most 63 bytes).
fn holder_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "unknown".to_owned());
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let mut name = format!(
        "tally pid={} host={host} since={started}",
        std::process::id()
    );
    while name.len() > 63 {
        name.pop();
    }
    name
}
