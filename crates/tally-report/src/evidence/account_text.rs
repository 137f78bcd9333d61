//! The human report of `tally trace account`: what a performance engineer reads at a glance —
//! GPU time per device clock (busy vs summed vs the span they cover), the kernels that took it
//! ([`super::account_kernels`]), the busiest iterations, and what could not be attributed or
//! measured, with the reason. Long kernel names and iteration references are shortened
//! ([`super::names`]); `--json` keeps them whole.
//!
//! Device clocks, unresolved references and activity lists print in the order given. Two orders
//! are made here, both total so the text is deterministic: the busiest iterations (GPU busy time
//! summed over device clocks, largest first, ties by iteration ref), and unmeasured GPU
//! activities grouped by reason (reasons alphabetically, the first names of each in the order
//! given).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use comfy_table::{CellAlignment, Table, presets};
use tally_evidence::{
    ClockKind, CorrelationGraph, DeviceClock, EntityRef, KernelTime, RunAccounting,
};

use super::account_kernels::{render_top_kernels, render_unattributed};
use super::names::IterationLabels;
use super::units::{duration, percent, ratio};

/// How many names each "could not ..." list shows before summarising.
const NAMED: usize = 5;

/// Renders the report. `kernels` is [`tally_evidence::kernel_times`] of the graph; `top` is how
/// many iterations, and kernels per device clock, to list.
pub fn render(
    graph: &CorrelationGraph,
    accounting: &RunAccounting,
    kernels: &BTreeMap<DeviceClock, Vec<KernelTime>>,
    top: usize,
) -> String {
    let mut out = String::new();
    let c = graph.counts();
    let _ = writeln!(
        out,
        "run {}: {} · {} · {} · {} · {} · {}",
        accounting
            .run_id
            .as_deref()
            .unwrap_or("(no correlation records)"),
        plural(c.requests, "request"),
        plural(c.iterations, "iteration"),
        plural(c.stages, "stage"),
        plural(c.memberships, "membership"),
        plural(c.activities, "activity"),
        plural(c.alignments, "alignment"),
    );

    out.push('\n');
    if accounting.device_totals.is_empty() {
        out.push_str("GPU time: no measurable GPU activity\n");
    } else {
        out.push_str(
            "GPU time per device clock (busy = union of intervals, summed = sum of kernel \
             times, span = first start to last end)\n",
        );
        let mut table = new_table(&[
            "device",
            "clock domain",
            "kind",
            "busy",
            "summed",
            "summed/busy",
            "span",
            "busy/span",
            "activities",
        ]);
        for (key, time) in &accounting.device_totals {
            let span = accounting
                .device_spans
                .get(key)
                .map(|span| (span.end_ns - span.start_ns).max(0) as u64)
                .unwrap_or(0);
            table.add_row(vec![
                key.device_uuid.to_string(),
                key.clock_domain.to_string(),
                key.clock_kind.as_str().to_string(),
                duration(time.busy_ns),
                duration(time.summed_activity_ns),
                ratio(time.summed_activity_ns, time.busy_ns),
                duration(span),
                percent(time.busy_ns, span),
                time.activity_count.to_string(),
            ]);
        }
        right_align_from(&mut table, 3);
        let _ = writeln!(out, "{table}");
    }

    out.push('\n');
    render_top_kernels(&mut out, accounting, kernels, top);

    out.push('\n');
    render_iterations(&mut out, accounting, top);

    out.push('\n');
    render_problems(&mut out, graph, accounting);
    out
}

/// One iteration's GPU figures summed over its device clocks.
struct IterationRow<'a> {
    iteration: &'a EntityRef,
    busy: u64,
    summed: u64,
    count: u64,
    devices: usize,
    elapsed: Option<i64>,
}

fn render_iterations(out: &mut String, accounting: &RunAccounting, top: usize) {
    let total = accounting.iterations.len();
    if total == 0 {
        out.push_str("Iterations: none\n");
        return;
    }
    let mut rows: Vec<IterationRow<'_>> = accounting
        .iterations
        .iter()
        .map(|(r, t)| IterationRow {
            iteration: r,
            busy: t.gpu.values().map(|g| g.busy_ns).sum(),
            summed: t.gpu.values().map(|g| g.summed_activity_ns).sum(),
            count: t.gpu.values().map(|g| g.activity_count).sum(),
            devices: t.gpu.len(),
            elapsed: t.elapsed_ns,
        })
        .collect();
    // Busiest first; ties by iteration ref so the report is deterministic.
    rows.sort_by(|a, b| {
        b.busy
            .cmp(&a.busy)
            .then_with(|| a.iteration.cmp(b.iteration))
    });
    let shown = rows.len().min(top);
    let with_gpu = rows.iter().filter(|r| r.devices > 0).count();
    let labels = IterationLabels::new(accounting.iterations.keys());
    let after = match labels.prefix() {
        "" => String::new(),
        prefix => format!("; references after {prefix}"),
    };
    let _ = writeln!(
        out,
        "Busiest iterations ({shown} of {total}; {with_gpu} with measured GPU work{after})"
    );
    if shown == 0 {
        return;
    }
    let mut table = new_table(&[
        "iteration",
        "elapsed",
        "busy",
        "summed",
        "activities",
        "devices",
        "busy/elapsed",
    ]);
    for row in rows.into_iter().take(shown) {
        table.add_row(vec![
            labels.label(row.iteration),
            row.elapsed
                .map_or("—".into(), |e| duration(e.max(0) as u64)),
            duration(row.busy),
            duration(row.summed),
            row.count.to_string(),
            row.devices.to_string(),
            row.elapsed
                .map_or("—".into(), |e| percent(row.busy, e.max(0) as u64)),
        ]);
    }
    right_align_from(&mut table, 1);
    let _ = writeln!(out, "{table}");
}

fn render_problems(out: &mut String, graph: &CorrelationGraph, accounting: &RunAccounting) {
    let unresolved = graph.unresolved();
    let _ = writeln!(
        out,
        "Unresolved references: {} (records that name an entity no record defines)",
        unresolved.len()
    );
    for u in unresolved.iter().take(NAMED) {
        let _ = writeln!(
            out,
            "  {}: {} {} not found",
            u.event_id,
            u.kind.as_str(),
            u.reference
        );
    }
    more(out, unresolved.len());

    let unattributed = &accounting.unattributed_activity_refs;
    let _ = writeln!(
        out,
        "Unattributed activities: {} (not linked to an iteration; GPU ones still count in device totals)",
        unattributed.len()
    );
    render_unattributed(out, graph, accounting, NAMED);

    let unmeasured = &accounting.unmeasured_gpu_activity_refs;
    let _ = writeln!(
        out,
        "Unmeasured GPU activities: {} (not counted anywhere)",
        unmeasured.len()
    );
    if !unmeasured.is_empty() {
        let mut reasons: BTreeMap<&'static str, (usize, Vec<&EntityRef>)> = BTreeMap::new();
        for r in unmeasured {
            let reason = unmeasured_reason(graph, r);
            let entry = reasons.entry(reason).or_default();
            entry.0 += 1;
            if entry.1.len() < NAMED {
                entry.1.push(r);
            }
        }
        for (reason, (count, names)) in reasons {
            let names: Vec<String> = names.iter().map(|r| r.to_string()).collect();
            let etc = if count > names.len() { ", ..." } else { "" };
            let _ = writeln!(out, "  {count} {reason}: {}{etc}", names.join(", "));
        }
    }
}

/// Why a GPU activity could not be measured (`docs/evidence.md#accounting` step 3).
fn unmeasured_reason(graph: &CorrelationGraph, r: &EntityRef) -> &'static str {
    let Some(event) = graph.activities().get(r) else {
        return "not measurable";
    };
    let ctx = event.context();
    if ctx.device_uuid.is_none() {
        return "without a device_uuid";
    }
    if ctx.clock_kind == ClockKind::Wall {
        return "on a wall clock";
    }
    let activity = event.body();
    if activity.start_ns.is_none() || activity.end_ns.is_none() {
        "without start_ns and end_ns"
    } else {
        "not measurable"
    }
}

fn more(out: &mut String, total: usize) {
    if total > NAMED {
        let _ = writeln!(out, "  ... and {} more", total - NAMED);
    }
}

fn plural(n: usize, word: &str) -> String {
    match (n, word) {
        (1, _) => format!("1 {word}"),
        (_, "activity") => format!("{n} activities"),
        _ => format!("{n} {word}s"),
    }
}

fn new_table(header: &[&str]) -> Table {
    let mut table = Table::new();
    table.load_style(presets::NOTHING);
    table.set_header(header.to_vec());
    table
}

fn right_align_from(table: &mut Table, first: usize) {
    let columns = table.column_count();
    for i in first..columns {
        if let Some(column) = table.column_mut(i) {
            column.set_cell_alignment(CellAlignment::Right);
        }
    }
}
