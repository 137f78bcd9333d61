//! `tally store copy --from sqlite:PATH --to postgres://…`: moves a SQLite store into an empty
//! PostgreSQL database for a team (`docs/team.md#moving`), with the same ids and values, and
//! says what it copied. Exit 0, or 1 with the reason (the destination is left empty).
//!
//! `tally store check [--repair]`: says whether the SQLite store's guard triggers are intact
//! (`docs/store.md#guard`) — exit 0, or 1 naming what is wrong and the fix — and with `--repair`
//! restores them.

use std::path::Path;

use anyhow::bail;

use super::campaign::context::{Database, Workspace};
use crate::cli::{CampaignOptions, StoreCheckArgs, StoreCommand};
use crate::exit::Status;
use crate::printer;

/// Runs the command.
pub fn run(command: &StoreCommand) -> anyhow::Result<Status> {
    match command {
        StoreCommand::Copy(args) => copy(&args.from, &args.to),
        StoreCommand::Check(with) => check(&with.options, &with.args),
    }
}

/// `tally store check [--repair]`.
fn check(options: &CampaignOptions, args: &StoreCheckArgs) -> anyhow::Result<Status> {
    let path = match Workspace::discover(options)?.database() {
        Database::Postgres(_) => {
            printer::out_line(
                "a PostgreSQL store has no guard triggers to check: its URL is never in an \
                 implementer's environment (docs/store.md#guard)",
            )?;
            return Ok(Status::Success);
        }
        Database::Sqlite(path) => path,
    };
    if !path.is_file() {
        bail!(
            "there is no store at {}; run `tally init` first, or name the store with --database",
            path.display()
        );
    }
    let store = tally_store::SqliteStore::open(&path)?;
    let shown = path.display();
    if args.repair {
        let done = store.repair_guard()?;
        if done.is_empty() {
            printer::out_line(&format!(
                "store {shown}: the guard is intact; nothing to repair"
            ))?;
        } else {
            for line in &done {
                printer::out_line(&format!("store {shown}: {line}"))?;
            }
            printer::out_line(&format!(
                "store {shown}: the guard is restored; a campaign held for it runs on at the \
                 next `tally run`"
            ))?;
        }
        return Ok(Status::Success);
    }
    match store.guard_damage()? {
        None => {
            printer::out_line(&format!("store {shown}: the guard is intact"))?;
            Ok(Status::Success)
        }
        Some(why) => bail!("store {shown} tampered: {why}"),
    }
}

#[cfg(feature = "postgres")]
fn copy(from: &str, to: &str) -> anyhow::Result<Status> {
    let source = sqlite_path(from)?;
    if !to.starts_with("postgres://") && !to.starts_with("postgresql://") {
        bail!("--to {to}: not a PostgreSQL URL; write postgres://USER:PASSWORD@HOST:PORT/DATABASE");
    }
    if !source.is_file() {
        bail!("--from {from}: no store at {}", source.display());
    }
    let source = tally_store::SqliteStore::open_read_only(source)?;
    let destination = tally_store::PgStore::open(to)?;
    let summary = tally_store::copy_sqlite_to_postgres(&source, &destination)?;
    let rows: Vec<String> = summary
        .rows
        .iter()
        .map(|(table, n)| format!("{n} {}", table.replace('_', " ")))
        .collect();
    let names: Vec<String> = summary.campaigns.iter().map(|n| format!("`{n}`")).collect();
    crate::printer::out_line(&format!(
        "copied {} campaign(s) ({}) to {}: {}",
        summary.campaigns.len(),
        names.join(", "),
        destination.url(),
        rows.join(", ")
    ))?;
    Ok(Status::Success)
}

#[cfg(not(feature = "postgres"))]
fn copy(_from: &str, _to: &str) -> anyhow::Result<Status> {
    bail!(
        "tally store copy: this tally was built without PostgreSQL support; rebuild it with the \
         `postgres` feature (cargo build --features postgres)"
    )
}

/// The file of a `--from` value: `sqlite:PATH` or a path; other schemes are refused.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
fn sqlite_path(from: &str) -> anyhow::Result<&Path> {
    if from.starts_with("postgres://") || from.starts_with("postgresql://") {
        bail!(
            "--from {from}: copying from PostgreSQL is not supported; --from takes a SQLite store (sqlite:PATH)"
        );
    }
    Ok(Path::new(from.strip_prefix("sqlite:").unwrap_or(from)))
}
