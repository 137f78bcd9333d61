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
//! With `evaluation_slots = N` a campaign has N such locks, one per worker slot; a `tally run`
//! takes the first free one and works as that slot's worker (`docs/team.md#workers`), and the
//! store tells a live worker's evaluations from a killed one's by whether its slot is held.
//!
//! Deliberately absent, as for the lock file: waiting for a slot (a `tally run` that finds none
//! free exits 1). The key is `hashtext` of the schema, the campaign name and the slot (none for
//! slot 0), in a tally-only key space; two names with the same 32-bit hash would exclude each
//! other (never wrong, only cautious).

use std::fmt;

use postgres::Client;

use super::{LOCK_SPACE, connect, redact};
use crate::error::{Error, StoreError};

/// The first advisory-lock key of run locks ("taly" + 1, apart from the store's own locks).
const RUN_LOCK_SPACE: i32 = LOCK_SPACE + 1;

/// The SQL key of a slot's lock (the second key; the first is [`RUN_LOCK_SPACE`]) with the
/// campaign's name as `$1` and the slot as `$2` (int4): slot 0 keeps the key of the
/// single-worker run lock, so a `tally init` that measures the baseline excludes it.
pub(super) const SLOT_KEY: &str = "hashtext(current_schema() || '/' || $1::text \
     || CASE WHEN $2::int4 = 0 THEN '' ELSE '#' || $2::int4::text END)";

/// Every slot of the campaign is held by another process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunLockHeld {
    /// The campaign.
    pub campaign: String,
    /// How many slots it has (`evaluation_slots`).
    pub slots: u32,
    /// Who holds them: each holder's `application_name` and client address, as far as the
    /// server says (empty when the holders disconnected in between).
    pub holders: Vec<String>,
}

impl fmt::Display for RunLockHeld {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.holders.is_empty() {
            return write!(
                f,
                "another tally run is working on campaign {} (it has just let go; try again)",
                self.campaign
            );
        }
        let holders = self.holders.join("; ");
        if self.slots <= 1 {
            write!(
                f,
                "another tally run ({holders}) is working on campaign {}",
                self.campaign
            )
        } else {
            write!(
                f,
                "all {} evaluation slots of campaign {} are taken ({holders}); start this \
                 worker when one of them ends, or raise evaluation_slots in tally.toml",
                self.slots, self.campaign
            )
        }
    }
}

impl std::error::Error for RunLockHeld {}

/// Why [`PgRunLock::acquire`] failed.
#[derive(Debug, thiserror::Error)]
pub enum RunLockError {
    /// Other processes hold every slot.
    #[error(transparent)]
    Held(#[from] RunLockHeld),
    /// The database could not be reached or refused the query.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A held slot of a campaign; dropping it (or the process dying) lets go.
pub struct PgRunLock {
    _client: Client,
    slot: u32,
}

impl fmt::Debug for PgRunLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PgRunLock(slot {})", self.slot)
    }
}

impl PgRunLock {
    /// Takes the run lock of `campaign` (its only slot) on the database at `url`, or says who
    /// holds it.
    pub fn acquire(url: &str, campaign: &str) -> Result<Self, RunLockError> {
        Self::acquire_slot(url, campaign, 1)
    }

    /// Takes the first free of the campaign's `slots` worker slots (0, 1, …), or says who holds
    /// them all (`docs/team.md#workers`).
    pub fn acquire_slot(url: &str, campaign: &str, slots: u32) -> Result<Self, RunLockError> {
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
        let slots = slots.max(1);
        let run = |client: &mut Client| -> Result<Result<u32, RunLockHeld>, Error> {
            client.execute("SELECT set_config('application_name', $1, false)", &[&me])?;
            let try_sql = format!("SELECT pg_try_advisory_lock({RUN_LOCK_SPACE}, {SLOT_KEY})");
            for slot in 0..slots {
                let key = i32::try_from(slot).unwrap_or(i32::MAX);
                let got: bool = client
                    .query_one(try_sql.as_str(), &[&campaign, &key])?
                    .get(0);
                if got {
                    return Ok(Ok(slot));
                }
            }
            let mut holders = Vec::new();
            for slot in 0..slots {
                let key = i32::try_from(slot).unwrap_or(i32::MAX);
                if let Some(holder) = slot_holder(client, campaign, key)? {
                    holders.push(holder);
                }
            }
            Ok(Err(RunLockHeld {
                campaign: campaign.to_owned(),
                slots,
                holders,
            }))
        };
        match run(&mut client).map_err(fail)? {
            Ok(slot) => Ok(Self {
                _client: client,
                slot,
            }),
            Err(held) => Err(held.into()),
        }
    }

    /// The slot this lock holds (0 for the single-worker run lock).
    pub fn slot(&self) -> u32 {
        self.slot
    }
}

/// Who holds the slot's lock (`tally pid=… host=… since=…, connected from ADDR`), `None` when
/// nobody does.
fn slot_holder(client: &mut Client, campaign: &str, slot: i32) -> Result<Option<String>, Error> {
    // For a two-key advisory lock pg_locks shows the keys as classid and objid (oids).
    let sql = format!(
        "SELECT a.application_name, COALESCE(host(a.client_addr), 'local socket') \
         FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid \
         WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2 \
           AND l.classid = ({RUN_LOCK_SPACE}::int8 & 4294967295)::oid \
           AND l.objid = ({SLOT_KEY}::int8 & 4294967295)::oid \
         LIMIT 1"
    );
    Ok(client
        .query_opt(sql.as_str(), &[&campaign, &slot])?
        .map(|row| {
            let name: String = row.get(0);
            let addr: String = row.get(1);
            format!("{name}, connected from {addr}")
        }))
}

/// Whether some session holds the slot's lock (run inside a store transaction).
pub(super) fn slot_is_held(
    tx: &mut postgres::Transaction<'_>,
    campaign: &str,
    slot: i32,
) -> Result<bool, Error> {
    let sql = format!(
        "SELECT EXISTS (SELECT 1 FROM pg_locks l \
         WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2 \
           AND l.classid = ({RUN_LOCK_SPACE}::int8 & 4294967295)::oid \
           AND l.objid = ({SLOT_KEY}::int8 & 4294967295)::oid)"
    );
    Ok(tx.query_one(sql.as_str(), &[&campaign, &slot])?.get(0))
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
