//! The Nsight Systems importer: an `nsys export --type sqlite` database, plain or gzip.
//!
//! The schema changes between Nsight releases, so every table is probed (`sqlite_master`,
//! `PRAGMA table_info`) and read with the columns it has; both export generations in the test
//! corpus (`EXPORT_META_DATA` of 2022–2023 and `META_DATA_EXPORT` of 2024) work. Launch calls
//! come from `CUPTI_ACTIVITY_KIND_RUNTIME` keyed by (pid, correlation id), iterations from NVTX
//! push/pop and start/end ranges, GPU work from the kernel, memcpy and memset tables in one query
//! ordered by (start, end, kind, rowid). Device UUIDs come from `TARGET_INFO_GPU` only where the
//! export says which GPU a process's CUDA ordinal is; otherwise the identity is derived. Nothing
//! is written to the database (it is opened read-only); a gzip input is decompressed to a
//! temporary file first.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use rusqlite::{Connection, OpenFlags, Row};
use tally_evidence::{Nanos, Text};

use crate::emit::{Emitter, RunIdentity, Sink};
use crate::error::{Error, Result};
use crate::linking::{LaunchCall, RangeSpan, find_iterations};
use crate::options::{ImportOptions, Phase};
use crate::source;
use crate::summary::InputSummary;
mod devices;

use crate::trace::{
    GpuEvent, GpuKind, LaunchTable, TraceFacts, TraceFormat, clock_domain, main_pid,
};
use devices::gpu_identities;

const GPU_TABLES: [(&str, GpuKind); 3] = [
    ("CUPTI_ACTIVITY_KIND_KERNEL", GpuKind::Kernel),
    ("CUPTI_ACTIVITY_KIND_MEMCPY", GpuKind::Memcpy),
    ("CUPTI_ACTIVITY_KIND_MEMSET", GpuKind::Memset),
];
const RUNTIME: &str = "CUPTI_ACTIVITY_KIND_RUNTIME";
const REQUIRED_GPU_COLUMNS: [&str; 6] = [
    "start",
    "end",
    "deviceId",
    "streamId",
    "correlationId",
    "globalPid",
];

/// The process id inside an Nsight `globalPid`/`globalTid`.
pub fn nsys_pid(global: i64) -> i64 {
    (global >> 24) & 0xFF_FFFF
}

/// The thread id inside a `globalTid`.
pub fn nsys_tid(global: i64) -> i64 {
    global & 0xFF_FFFF
}

struct Database<'p> {
    path: &'p Path,
    connection: Connection,
    tables: BTreeSet<String>,
}

impl Database<'_> {
    fn sql_error(&self, e: rusqlite::Error) -> Error {
        Error::format(
            self.path,
            format!("not an Nsight Systems SQLite export: {e}"),
        )
    }

    fn has(&self, table: &str) -> bool {
        self.tables.contains(table)
    }

    fn columns(&self, table: &str) -> Result<BTreeSet<String>> {
        let mut statement = self
            .connection
            .prepare(&format!("PRAGMA table_info(\"{table}\")"))
            .map_err(|e| self.sql_error(e))?;
        let names = statement
            .query_map([], |row| row.get::<_, String>(1))
            .map_err(|e| self.sql_error(e))?
            .collect::<rusqlite::Result<BTreeSet<String>>>()
            .map_err(|e| self.sql_error(e))?;
        Ok(names)
    }

    /// Runs `sql`, calling `each` for every row; a NULL where a number is needed is reported
    /// with the table and the row's position.
    fn each_row(
        &self,
        sql: &str,
        what: &str,
        each: &mut dyn FnMut(&Row<'_>) -> Result<()>,
    ) -> Result<()> {
        let mut statement = self
            .connection
            .prepare(sql)
            .map_err(|e| self.sql_error(e))?;
        let mut rows = statement.query([]).map_err(|e| self.sql_error(e))?;
        let mut n = 0u64;
        while let Some(row) = rows.next().map_err(|e| self.sql_error(e))? {
            n += 1;
            each(row).map_err(|e| match e {
                Error::Malformed { message, .. } => Error::Malformed {
                    path: self.path.to_path_buf(),
                    location: format!("{what} row {n}"),
                    message,
                },
                other => other,
            })?;
        }
        Ok(())
    }

    fn scalar_text(&self, sql: &str) -> Option<String> {
        self.connection
            .query_row(sql, [], |row| row.get::<_, Option<String>>(0))
            .ok()
            .flatten()
            .filter(|s| !s.is_empty())
    }
}

fn get_i64(row: &Row<'_>, index: usize, column: &str) -> Result<i64> {
    match row.get::<_, Option<i64>>(index) {
        Ok(Some(v)) => Ok(v),
        Ok(None) => Err(malformed(format!("NULL {column}"))),
        Err(e) => Err(malformed(format!("{column}: {e}"))),
    }
}

fn get_opt_i64(row: &Row<'_>, index: usize) -> Option<i64> {
    row.get::<_, Option<i64>>(index).ok().flatten()
}

fn malformed(message: String) -> Error {
    Error::Malformed {
        path: Default::default(),
        location: String::new(),
        message: format!("malformed Nsight Systems SQLite export: {message}"),
    }
}

fn open<'p>(path: &'p Path, file: &source::SqliteFile) -> Result<Database<'p>> {
    let connection = Connection::open_with_flags(
        file.path(),
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| Error::format(path, format!("not an Nsight Systems SQLite export: {e}")))?;
    let mut db = Database {
        path,
        connection,
        tables: BTreeSet::new(),
    };
    let mut tables = BTreeSet::new();
    db.each_row(
        "SELECT name FROM sqlite_master WHERE type = 'table'",
        "sqlite_master",
        &mut |row| {
            tables.insert(
                row.get::<_, String>(0)
                    .map_err(|e| malformed(e.to_string()))?,
            );
            Ok(())
        },
    )?;
    db.tables = tables;
    let meta = [
        "META_DATA_EXPORT",
        "EXPORT_META_DATA",
        "TARGET_INFO_SESSION_START_TIME",
    ];
    if !db.has("StringIds") || !meta.iter().any(|t| db.has(t)) {
        return Err(Error::format(
            path,
            "not an Nsight Systems SQLite export (no StringIds or export metadata table); \
             export the report with `nsys export --type sqlite`",
        ));
    }
    if !GPU_TABLES.iter().any(|(t, _)| db.has(t)) && !db.has(RUNTIME) {
        return Err(Error::format(
            path,
            "no CUDA activity in this report; record with --trace=cuda",
        ));
    }
    Ok(db)
}

/// Imports one Nsight export: metadata, launches and ranges, iterations, then GPU work.
pub(crate) fn import_one(
    path: &Path,
    trace_key: Text,
    run: &RunIdentity,
    options: &ImportOptions,
    sink: &mut Sink<'_>,
    progress: &mut dyn FnMut(Phase, u64, u64),
    on_scanned: &mut dyn FnMut(&TraceFacts, &mut Sink<'_>) -> Result<()>,
) -> Result<InputSummary> {
    let size = std::fs::metadata(path)
        .map_err(|e| Error::io(path, e))?
        .len();
    progress(Phase::Scan, 0, size);
    let file = source::sqlite_file(path)?;
    let db = open(path, &file)?;
    let base: i64 = db
        .scalar_text("SELECT CAST(utcEpochNs AS TEXT) FROM TARGET_INFO_SESSION_START_TIME")
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let (launches, launch_sql) = launches(&db, base)?;
    let ranges = ranges(&db, base)?;
    let gpu_sql = gpu_query(&db)?;
    let mut facts = facts(&db, path, trace_key, &launches, gpu_sql.as_deref(), base)?;
    progress(Phase::Scan, size, size);
    on_scanned(&facts, sink)?;
    let iterations = find_iterations(
        ranges,
        options.iterations.as_ref(),
        facts.format.producer(),
        &facts.trace_key,
    );
    facts.notes.sort();
    let facts = facts;
    progress(Phase::Emit, 0, size);
    let mut emitter = Emitter::start(&facts, run, options, launches, iterations, sink)?;
    if let Some(sql) = gpu_sql {
        db.each_row(&sql, "GPU activity", &mut |row| {
            let kind = match get_i64(row, 8, "kind")? {
                0 => GpuKind::Kernel,
                1 => GpuKind::Memcpy,
                _ => GpuKind::Memset,
            };
            let start = get_i64(row, 0, "start")?;
            let end = get_i64(row, 1, "end")?;
            if end < start {
                return Err(malformed(format!("end {end} before start {start}")));
            }
            let event = GpuEvent {
                start: shifted(base, start)?,
                end: shifted(base, end)?,
                kind,
                name: row
                    .get::<_, Option<String>>(7)
                    .ok()
                    .flatten()
                    .unwrap_or_default(),
                device: get_opt_i64(row, 2).and_then(|d| u32::try_from(d).ok()),
                stream: get_opt_i64(row, 3).and_then(|s| u64::try_from(s).ok()),
                correlation: get_opt_i64(row, 4)
                    .and_then(|c| u64::try_from(c).ok())
                    .filter(|&c| c != 0),
                graph_id: get_opt_i64(row, 6)
                    .and_then(|g| u64::try_from(g).ok())
                    .filter(|&g| g != 0),
                pid: Some(nsys_pid(get_i64(row, 5, "globalPid")?)),
            };
            emitter.gpu_event(event, sink)
        })?;
    }
    if options.emit_runtime
        && let Some(sql) = launch_sql
    {
        db.each_row(&sql, RUNTIME, &mut |row| {
            let (correlation, call) = launch_row(row, base)?;
            emitter.runtime_call(correlation, &call, sink)
        })?;
    }
    progress(Phase::Emit, size, size);
    emitter.finish(sink)
}

fn shifted(base: i64, value: i64) -> Result<Nanos> {
    base.checked_add(value).ok_or_else(|| {
        malformed(format!(
            "timestamp {value} overflows with the session start"
        ))
    })
}

fn launch_row(row: &Row<'_>, base: i64) -> Result<(u64, LaunchCall)> {
    let start = get_i64(row, 0, "start")?;
    let end = get_opt_i64(row, 1).unwrap_or(start);
    let global = get_i64(row, 2, "globalTid")?;
    let correlation = u64::try_from(get_i64(row, 3, "correlationId")?)
        .map_err(|_| malformed("negative correlationId".into()))?;
    let name: Option<String> = row.get(4).ok().flatten();
    Ok((
        correlation,
        LaunchCall {
            pid: nsys_pid(global),
            tid: nsys_tid(global).to_string().into(),
            start: shifted(base, start)?,
            end: shifted(base, end.max(start))?,
            name: name.unwrap_or_default().into(),
        },
    ))
}

fn launches(db: &Database<'_>, base: i64) -> Result<(LaunchTable, Option<String>)> {
    let mut table = LaunchTable::default();
    if !db.has(RUNTIME) {
        return Ok((table, None));
    }
    let columns = db.columns(RUNTIME)?;
    for needed in ["start", "globalTid", "correlationId"] {
        if !columns.contains(needed) {
            return Err(Error::format(
                db.path,
                format!("malformed Nsight Systems SQLite export: {RUNTIME} has no {needed} column"),
            ));
        }
    }
    let end = if columns.contains("end") {
        "r.\"end\""
    } else {
        "NULL"
    };
    let name = if columns.contains("nameId") {
        "(SELECT value FROM StringIds s WHERE s.id = r.nameId)"
    } else if columns.contains("name") {
        "CAST(r.name AS TEXT)"
    } else {
        "NULL"
    };
    let sql = format!(
        "SELECT r.start, {end}, r.globalTid, r.correlationId, {name} FROM {RUNTIME} r \
         WHERE r.correlationId IS NOT NULL AND r.correlationId != 0 \
         ORDER BY r.start, r.rowid"
    );
    db.each_row(&sql, RUNTIME, &mut |row| {
        let (correlation, call) = launch_row(row, base)?;
        table.insert(Some(call.pid), correlation, &call);
        Ok(())
    })?;
    Ok((table, Some(sql)))
}

fn ranges(db: &Database<'_>, base: i64) -> Result<Vec<RangeSpan>> {
    let mut out = Vec::new();
    if !db.has("NVTX_EVENTS") {
        return Ok(out);
    }
    let columns = db.columns("NVTX_EVENTS")?;
    if !["start", "end", "eventType", "globalTid"]
        .iter()
        .all(|c| columns.contains(*c))
    {
        return Ok(out);
    }
    let text = match (columns.contains("text"), columns.contains("textId")) {
        (true, true) => "COALESCE(n.text, (SELECT value FROM StringIds s WHERE s.id = n.textId))",
        (true, false) => "n.text",
        (false, true) => "(SELECT value FROM StringIds s WHERE s.id = n.textId)",
        (false, false) => return Ok(out),
    };
    let sql = format!(
        "SELECT n.start, n.\"end\", n.globalTid, {text} FROM NVTX_EVENTS n \
         WHERE n.eventType IN (59, 60) AND n.\"end\" IS NOT NULL AND n.globalTid IS NOT NULL \
         ORDER BY n.start, n.rowid"
    );
    db.each_row(&sql, "NVTX_EVENTS", &mut |row| {
        let start = get_i64(row, 0, "start")?;
        let end = get_i64(row, 1, "end")?;
        let global = get_i64(row, 2, "globalTid")?;
        let Some(name) = row.get::<_, Option<String>>(3).ok().flatten() else {
            return Ok(());
        };
        if end >= start {
            out.push(RangeSpan {
                pid: nsys_pid(global),
                tid: nsys_tid(global).to_string().into(),
                start: shifted(base, start)?,
                end: shifted(base, end)?,
                name,
            });
        }
        Ok(())
    })?;
    Ok(out)
}

/// One query over the GPU tables present: columns start, end, deviceId, streamId, correlationId,
/// globalPid, graphId, name, kind (0 kernel, 1 memcpy, 2 memset).
fn gpu_query(db: &Database<'_>) -> Result<Option<String>> {
    let mut parts = Vec::new();
    for (kind_index, (table, kind)) in GPU_TABLES.iter().enumerate() {
        if !db.has(table) {
            continue;
        }
        let columns = db.columns(table)?;
        if let Some(missing) = REQUIRED_GPU_COLUMNS.iter().find(|c| !columns.contains(**c)) {
            return Err(Error::format(
                db.path,
                format!("malformed Nsight Systems SQLite export: {table} has no {missing} column"),
            ));
        }
        let graph = if columns.contains("graphId") {
            "t.graphId"
        } else {
            "NULL"
        };
        let name = match kind {
            GpuKind::Kernel => {
                let id = ["shortName", "demangledName"]
                    .into_iter()
                    .find(|c| columns.contains(*c));
                match id {
                    Some(c) => format!("(SELECT value FROM StringIds s WHERE s.id = t.{c})"),
                    None => "'kernel'".to_owned(),
                }
            }
            GpuKind::Memcpy if columns.contains("copyKind") && db.has("ENUM_CUDA_MEMCPY_OPER") => {
                "'Memcpy ' || COALESCE((SELECT label FROM ENUM_CUDA_MEMCPY_OPER e \
                 WHERE e.id = t.copyKind), '')"
                    .to_owned()
            }
            GpuKind::Memcpy => "'Memcpy'".to_owned(),
            GpuKind::Memset => "'Memset'".to_owned(),
        };
        parts.push(format!(
            "SELECT t.start, t.\"end\", t.deviceId, t.streamId, t.correlationId, t.globalPid, \
             {graph}, {name}, {kind_index}, t.rowid FROM {table} t"
        ));
    }
    if parts.is_empty() {
        return Ok(None);
    }
    Ok(Some(format!(
        "{} ORDER BY 1, 2, 9, 10",
        parts.join(" UNION ALL ")
    )))
}

fn facts(
    db: &Database<'_>,
    path: &Path,
    trace_key: Text,
    launches: &LaunchTable,
    gpu_sql: Option<&str>,
    base: i64,
) -> Result<TraceFacts> {
    let host = db
        .has("META_DATA_CAPTURE")
        .then(|| {
            db.scalar_text("SELECT value FROM META_DATA_CAPTURE WHERE name = 'DEVICE_DISPLAY_NAME'")
        })
        .flatten()
        .or_else(|| {
            db.has("TARGET_INFO_SYSTEM_ENV")
                .then(|| {
                    db.scalar_text(
                        "SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'Hostname'",
                    )
                })
                .flatten()
        });
    let mut notes = Vec::new();
    let mut not_imported = BTreeMap::new();
    // Which processes ran which CUDA ordinals.
    let mut used: BTreeSet<(i64, u32)> = BTreeSet::new();
    let mut earliest: Option<i64> = launches.calls().map(|(_, _, start)| start).min();
    for (table, _) in GPU_TABLES
        .iter()
        .filter(|(t, _)| gpu_sql.is_some() && db.has(t))
    {
        let sql = format!(
            "SELECT globalPid, deviceId, MIN(start) FROM {table} WHERE globalPid IS NOT NULL \
             GROUP BY 1, 2 ORDER BY 1, 2"
        );
        db.each_row(&sql, table, &mut |row| {
            let pid = nsys_pid(get_i64(row, 0, "globalPid")?);
            if let Some(device) = get_opt_i64(row, 1).and_then(|d| u32::try_from(d).ok()) {
                used.insert((pid, device));
            }
            if let Some(first) = get_opt_i64(row, 2) {
                let first = shifted(base, first)?;
                earliest = Some(earliest.map_or(first, |e| e.min(first)));
            }
            Ok(())
        })?;
    }
    let (device_names, trace_uuids) = gpu_identities(db, &used, &mut notes)?;
    if db.has("CUPTI_ACTIVITY_KIND_GRAPH_TRACE") {
        let rows = db
            .scalar_text("SELECT CAST(COUNT(*) AS TEXT) FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE")
            .and_then(|s| s.parse::<u64>().ok())
            .unwrap_or(0);
        if rows > 0 {
            not_imported.insert("graph_trace_rows".to_owned(), rows);
            notes.push(format!(
                "{rows} graph-level trace rows are not imported; record with \
                 --cuda-graph-trace=node for per-kernel records"
            ));
        }
    }
    let pid = main_pid(launches).or_else(|| used.iter().next().map(|&(p, _)| p));
    let host: Option<Text> = host.map(Text::from);
    Ok(TraceFacts {
        format: TraceFormat::Nsys,
        path: path.to_path_buf(),
        trace_key,
        clock_domain: clock_domain(TraceFormat::Nsys, host.as_deref(), None, pid),
        host,
        rank: None,
        world_size: None,
        backend: Some("cupti".into()),
        backend_version: None,
        engine: None,
        engine_version: None,
        device_names,
        trace_uuids,
        main_pid: pid,
        earliest_ns: earliest,
        notes,
        not_imported,
    })
}
