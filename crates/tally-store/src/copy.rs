//! `tally store copy`: a SQLite store moved into an empty PostgreSQL one, row for row.
//!
//! Owns: copying every table (config texts, campaigns, candidates, evaluations, measurements and
//! their units, ideas, implementer runs with their usage, check runs) with the same ids and the
//! same values — the newest schemas of both backends hold the same tables
//! (`docs/store.md#postgres`); SQLite's check runs, ordered by `rowid`, get it as their `id` — in
//! one PostgreSQL write transaction with the foreign keys deferred to the commit, so a failed copy
//! leaves the destination empty; then checking that every campaign reads back equal from both
//! (the same [`tally_contract::CampaignSnapshot`], ideas, runs and check runs).
//!
//! Deliberately absent: merging into a store that already has campaigns (ids would have to
//! change, and `tally status` would no longer show the same ids), and copying the other way.

use postgres::types::{ToSql, Type};
use rusqlite::types::Value;

use crate::error::{Error, StoreError};
use crate::pg::PgStore;
use crate::sqlite::SqliteStore;
use tally_contract::{CheckStore, IdeaStore, Store};
use tally_model::CampaignId;

/// The tables in the order they are copied, each with the query that reads it from SQLite
/// (its columns named as PostgreSQL's, in the copy's row order).
const TABLES: &[(&str, &str)] = &[
    ("config_texts", "SELECT * FROM config_texts ORDER BY id"),
    ("campaigns", "SELECT * FROM campaigns ORDER BY id"),
    (
        "candidates",
        "SELECT * FROM candidates ORDER BY campaign_id, number",
    ),
    ("evaluations", "SELECT * FROM evaluations ORDER BY id"),
    ("measurements", "SELECT * FROM measurements ORDER BY id"),
    (
        "measurement_units",
        "SELECT * FROM measurement_units ORDER BY measurement_id, metric, unit",
    ),
    ("ideas", "SELECT * FROM ideas ORDER BY campaign_id, number"),
    ("runs", "SELECT * FROM runs ORDER BY campaign_id, number"),
    ("checks", "SELECT rowid AS id, * FROM checks ORDER BY rowid"),
];

/// One table read from the source: its name, column names and rows.
struct SourceTable {
    name: &'static str,
    columns: Vec<String>,
    rows: Vec<Vec<Value>>,
}

/// What a copy moved.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CopySummary {
    /// The campaigns' names, by id.
    pub campaigns: Vec<String>,
    /// Rows copied per table, in copy order.
    pub rows: Vec<(&'static str, u64)>,
}

/// Copies everything in `from` into `to`, which must hold no campaign yet, and checks that each
/// campaign reads back the same from both.
pub fn copy_sqlite_to_postgres(
    from: &SqliteStore,
    to: &PgStore,
) -> Result<CopySummary, StoreError> {
    let existing = to.list_campaigns()?;
    if let Some(first) = existing.first() {
        return Err(StoreError::invalid(
            format!("destination {}", to.url()),
            format!(
                "it already holds {} campaign(s) (the first is `{}`); copy into an empty \
                 database or schema",
                existing.len(),
                first.name
            ),
        ));
    }
    // One read snapshot of the whole source, then one write transaction.
    let tables: Vec<SourceTable> = from.read(|conn| {
        let mut all = Vec::with_capacity(TABLES.len());
        for (table, query) in TABLES {
            let mut stmt = conn.prepare(query)?;
            let columns: Vec<String> = stmt.column_names().iter().map(|c| c.to_string()).collect();
            let width = columns.len();
            let rows = stmt
                .query_map([], |row| {
                    (0..width).map(|i| row.get::<_, Value>(i)).collect()
                })?
                .collect::<Result<Vec<Vec<Value>>, _>>()?;
            all.push(SourceTable {
                name: table,
                columns,
                rows,
            });
        }
        Ok(all)
    })?;
    let mut summary = CopySummary::default();
    to.write(|tx| {
        tx.batch_execute("SET CONSTRAINTS ALL DEFERRED")?;
        for SourceTable {
            name: table,
            columns,
            rows,
        } in &tables
        {
            let placeholders: Vec<String> = (1..=columns.len()).map(|i| format!("${i}")).collect();
            let insert = tx.prepare(&format!(
                "INSERT INTO {table} ({}) VALUES ({})",
                columns.join(", "),
                placeholders.join(", ")
            ))?;
            let types = insert.params().to_vec();
            for row in rows {
                let params = row
                    .iter()
                    .zip(&types)
                    .zip(columns)
                    .map(|((value, ty), column)| param(value, ty, table, column))
                    .collect::<Result<Vec<_>, StoreError>>()?;
                let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p.as_ref()).collect();
                tx.execute(&insert, &refs)?;
            }
            summary.rows.push((table, rows.len() as u64));
        }
        Ok::<_, Error>(())
    })?;
    for campaign in from.list_campaigns()? {
        if !reads_back_equal(from, to, campaign.id)? {
            return Err(StoreError::invalid(
                format!("copy of campaign `{}`", campaign.name),
                "it reads back different from the source; report this as a bug",
            ));
        }
        summary.campaigns.push(campaign.name);
    }
    Ok(summary)
}

/// Whether the campaign reads the same from both stores: its snapshot, ideas, runs and every
/// candidate's check runs.
fn reads_back_equal(
    from: &SqliteStore,
    to: &PgStore,
    campaign: CampaignId,
) -> Result<bool, StoreError> {
    let here = from.snapshot(campaign)?;
    if to.snapshot(campaign)? != here
        || to.list_ideas(campaign)? != from.list_ideas(campaign)?
        || to.list_runs(campaign)? != from.list_runs(campaign)?
    {
        return Ok(false);
    }
    for candidate in &here.candidates {
        if to.checks_of_candidate(campaign, candidate.id)?
            != from.checks_of_candidate(campaign, candidate.id)?
        {
            return Ok(false);
        }
    }
    Ok(true)
}

/// A SQLite value as a parameter of the PostgreSQL column type `ty`.
fn param(
    value: &Value,
    ty: &Type,
    table: &str,
    column: &str,
) -> Result<Box<dyn ToSql + Sync>, StoreError> {
    let mismatch = || {
        StoreError::invalid(
            format!("{table}.{column} in the source"),
            format!("{value:?} does not fit PostgreSQL type {ty}; the source is damaged"),
        )
    };
    Ok(match (value, ty) {
        (Value::Null, &Type::INT8) => Box::new(None::<i64>),
        (Value::Null, &Type::FLOAT8) => Box::new(None::<f64>),
        (Value::Null, &Type::TEXT) => Box::new(None::<String>),
        (Value::Integer(i), &Type::INT8) => Box::new(*i),
        (Value::Real(f), &Type::FLOAT8) => Box::new(*f),
        // SQLite keeps a REAL that is a whole number as REAL; an INTEGER in a REAL column
        // can only come from another writer, and converts exactly up to 2^53.
        (Value::Integer(i), &Type::FLOAT8) if i.unsigned_abs() <= 1 << 53 => Box::new(*i as f64),
        (Value::Text(s), &Type::TEXT) => Box::new(s.clone()),
        _ => return Err(mismatch()),
    })
}
