//! The store's guard against writes that do not come from tally (`docs/store.md#guard`).
//!
//! Migration `0007_store_guard.sql` puts a trigger before every INSERT, UPDATE and DELETE of
//! every table; each calls `tally_writer()`, a SQL function that [`allow_writes`] registers on
//! tally's own connections only, so any other program's write fails with "no such function:
//! tally_writer" and writes nothing. Dropping a trigger needs no function, so [`tampering`]
//! compares the file's triggers with the migration's — missing, changed, or a trigger that is
//! not tally's — and [`repair`] puts the migration's back. The guard stops a careless write, not
//! a determined one: a program of the same user can register the function itself.

use std::collections::BTreeMap;

use rusqlite::Connection;
use rusqlite::functions::FunctionFlags;

use crate::error::Error;

/// The SQL function every guard trigger calls.
pub const WRITER_FUNCTION: &str = "tally_writer";

/// The migration that creates the triggers: one `CREATE TRIGGER … END;` per line.
pub(super) const MIGRATION: &str = include_str!("../../migrations/sqlite/0007_store_guard.sql");

/// Registers `tally_writer()` on `conn`, so that its writes pass the guard triggers. Every
/// connection tally opens on a store calls this; a tool or test that writes a store with a raw
/// connection must too.
pub fn allow_writes(conn: &Connection) -> rusqlite::Result<()> {
    conn.create_scalar_function(
        WRITER_FUNCTION,
        0,
        // Innocuous: allowed in triggers even where the schema is not trusted.
        FunctionFlags::SQLITE_UTF8
            | FunctionFlags::SQLITE_DETERMINISTIC
            | FunctionFlags::SQLITE_INNOCUOUS,
        |_| Ok(1_i64),
    )
}

/// The guard triggers the migration creates: name → the `CREATE TRIGGER` text SQLite keeps for
/// it (the statement without its final `;`).
pub(super) fn expected() -> BTreeMap<&'static str, &'static str> {
    MIGRATION
        .lines()
        .filter(|line| line.starts_with("CREATE TRIGGER "))
        .map(|line| {
            let name = line
                .split_whitespace()
                .nth(2)
                .expect("a CREATE TRIGGER line names its trigger");
            (name, line.trim_end().trim_end_matches(';'))
        })
        .collect()
}

/// One way the file's triggers differ from the guard's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Damage {
    /// A guard trigger is gone.
    Missing(&'static str),
    /// A guard trigger's text is not the migration's.
    Changed(&'static str),
    /// A trigger the guard does not have: it would run inside tally's own writes.
    Foreign(String),
}

impl std::fmt::Display for Damage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Missing(name) => write!(f, "trigger {name} is missing"),
            Self::Changed(name) => write!(f, "trigger {name} was changed"),
            Self::Foreign(name) => write!(f, "trigger {name} is not tally's"),
        }
    }
}

/// Every difference between the file's triggers and the guard's, in trigger-name order
/// (missing and changed ones first). One `sqlite_master` read.
pub(super) fn damage(conn: &Connection) -> Result<Vec<Damage>, Error> {
    let mut stmt = conn.prepare_cached(
        "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' ORDER BY name",
    )?;
    let mut found: BTreeMap<String, Option<String>> = stmt
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
        .collect::<Result<_, _>>()?;
    let mut out = Vec::new();
    for (name, sql) in expected() {
        match found.remove(name) {
            None => out.push(Damage::Missing(name)),
            Some(text) if text.as_deref() != Some(sql) => out.push(Damage::Changed(name)),
            Some(_) => {}
        }
    }
    out.extend(found.into_keys().map(Damage::Foreign));
    Ok(out)
}

/// The sentence a held campaign carries when the triggers were tampered with, without the
/// `store tampered: ` the engine puts in front; `None` when they are intact.
pub(super) fn tampering(conn: &Connection) -> Result<Option<String>, Error> {
    let damage = damage(conn)?;
    let Some(first) = damage.first() else {
        return Ok(None);
    };
    let more = match damage.len() {
        1 => String::new(),
        n => format!(" (and {} more)", n - 1),
    };
    Ok(Some(format!(
        "{first}{more} (the store was written by something other than tally); check the \
         campaign's verdicts and measurements (`tally status`, `tally candidate show N`; correct \
         one with `tally candidate verdict`), then restore the guard with `tally store check \
         --repair`"
    )))
}

/// Puts the guard back in one transaction: drops foreign and changed triggers and creates the
/// missing and changed ones from the migration. Returns what it did, one line each.
pub(super) fn repair(conn: &Connection) -> Result<Vec<String>, Error> {
    let expected = expected();
    let mut done = Vec::new();
    for damage in damage(conn)? {
        match &damage {
            Damage::Missing(name) => {
                conn.execute_batch(expected[name])?;
                done.push(format!("restored trigger {name}"));
            }
            Damage::Changed(name) => {
                conn.execute_batch(&format!("DROP TRIGGER \"{name}\";"))?;
                conn.execute_batch(expected[name])?;
                done.push(format!("restored trigger {name} (it was changed)"));
            }
            Damage::Foreign(name) => {
                let quoted = name.replace('"', "\"\"");
                conn.execute_batch(&format!("DROP TRIGGER \"{quoted}\";"))?;
                done.push(format!("dropped trigger {name} (not tally's)"));
            }
        }
    }
    Ok(done)
}
