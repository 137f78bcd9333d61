//! `tally store copy`: a SQLite store moved into an empty PostgreSQL one, row for row.
//!
//! Owns: copying every table (config texts, campaigns, candidates, evaluations, measurements and
//! their units) with the same ids and the same values — the schemas are the same version on both
//! backends (`docs/store.md#postgres`) — in one PostgreSQL write transaction with the foreign keys
//! deferred to the commit, so a failed copy leaves the destination empty; then checking that
//! every campaign reads back equal (the same [`CampaignSnapshot`] and config texts) from both.
//!
//! Deliberately absent: merging into a store that already has campaigns (ids would have to
//! change, and `tally status` would no longer show the same ids), and copying the other way.

use postgres::types::{ToSql, Type};
use rusqlite::types::Value;

use crate::error::{Error, StoreError};
use crate::pg::PgStore;
use crate::sqlite::SqliteStore;
use tally_contract::Store;

/// The tables in the order they are copied, each with its key (the copy's row order).
const TABLES: &[(&str, &str)] = &[
    ("config_texts", "id"),
    ("campaigns", "id"),
    ("candidates", "campaign_id, number"),
    ("evaluations", "id"),
    ("measurements", "id"),
    ("measurement_units", "measurement_id, metric, unit"),
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
        for (table, key) in TABLES {
            let mut stmt = conn.prepare(&format!("SELECT * FROM {table} ORDER BY {key}"))?;
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
        let there = to.snapshot(campaign.id)?;
        let here = from.snapshot(campaign.id)?;
        if there != here {
            return Err(StoreError::invalid(
                format!("copy of campaign `{}`", campaign.name),
                "it reads back different from the source; report this as a bug",
            ));
        }
        summary.campaigns.push(campaign.name);
    }
    Ok(summary)
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
