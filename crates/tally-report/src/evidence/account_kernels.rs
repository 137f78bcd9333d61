//! The kernel parts of the `tally trace account` report: the top kernels of each device clock
//! (launches, summed time, mean, and share of the device clock's summed time), and unattributed
//! activities grouped by kernel name rather than listed by opaque reference
//! (`docs/evidence.md#kernels`).
//!
//! Orders, all total so the text is deterministic: kernels as [`tally_evidence::kernel_times`]
//! gives them (largest summed time first); unattributed names by summed time, then count, both
//! largest first, then by name; unnamed unattributed activities by reference, as given.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use comfy_table::{CellAlignment, Table, presets};
use tally_evidence::{
    CorrelationGraph, DeviceClock, EntityRef, KernelTime, RunAccounting, Text, activity_name,
    measured_summed_ns,
};

use super::names::{KERNEL_NAME_WIDTH, short_kernel_name};
use super::units::{duration, percent};

/// Renders the top `top` kernels of every device clock of `kernels`.
pub fn render_top_kernels(
    out: &mut String,
    accounting: &RunAccounting,
    kernels: &BTreeMap<DeviceClock, Vec<KernelTime>>,
    top: usize,
) {
    if kernels.is_empty() {
        out.push_str("Top kernels: no measurable GPU activity\n");
        return;
    }
    out.push_str(
        "Top kernels per device clock (by summed time; share = of the device clock's summed \
         time; copies and sets count under their names)\n",
    );
    for (device, rows) in kernels {
        let device_summed = accounting
            .device_totals
            .get(device)
            .map_or(0, |t| t.summed_activity_ns);
        let shown = rows.len().min(top);
        let _ = writeln!(
            out,
            "{device}: {shown} of {} names, {} summed",
            rows.len(),
            duration(device_summed)
        );
        if shown == 0 {
            continue;
        }
        let mut table = Table::new();
        table.load_style(presets::NOTHING);
        table.set_header(vec!["kernel", "launches", "summed", "mean", "share"]);
        for row in &rows[..shown] {
            table.add_row(vec![
                short_kernel_name(&row.name, KERNEL_NAME_WIDTH),
                row.launches.to_string(),
                duration(row.summed_ns),
                duration(row.summed_ns / row.launches.max(1)),
                percent(row.summed_ns, device_summed),
            ]);
        }
        for i in 1..table.column_count() {
            if let Some(column) = table.column_mut(i) {
                column.set_cell_alignment(CellAlignment::Right);
            }
        }
        let _ = writeln!(out, "{table}");
        let rest = &rows[shown..];
        if !rest.is_empty() {
            let launches: u64 = rest.iter().map(|r| r.launches).sum();
            let summed: u64 = rest.iter().map(|r| r.summed_ns).sum();
            let _ = writeln!(
                out,
                "  ... and {}: {launches} launches, {} ({})",
                more_names(rest.len()),
                duration(summed),
                percent(summed, device_summed)
            );
        }
    }
}

/// Unattributed activities of one name.
#[derive(Default)]
struct NameGroup {
    count: u64,
    summed: u64,
    measured: bool,
}

/// Lists unattributed activities: the `named` names with the most summed GPU time, each with its
/// count and that time, then up to `named` activities without a name by reference.
pub fn render_unattributed(
    out: &mut String,
    graph: &CorrelationGraph,
    accounting: &RunAccounting,
    named: usize,
) {
    let mut groups: BTreeMap<Text, NameGroup> = BTreeMap::new();
    let mut unnamed: Vec<&EntityRef> = Vec::new();
    for r in &accounting.unattributed_activity_refs {
        let event = graph.activities().get(r);
        let Some(name) = event.and_then(activity_name) else {
            unnamed.push(r);
            continue;
        };
        let group = groups.entry(name).or_default();
        group.count += 1;
        // The accountant already measured this activity without overflow.
        if let Some(Ok(Some(summed))) = event.map(measured_summed_ns) {
            group.summed = group.summed.saturating_add(summed);
            group.measured = true;
        }
    }
    let mut groups: Vec<(Text, NameGroup)> = groups.into_iter().collect();
    groups.sort_by(|(a_name, a), (b_name, b)| {
        b.summed
            .cmp(&a.summed)
            .then_with(|| b.count.cmp(&a.count))
            .then_with(|| a_name.cmp(b_name))
    });
    for (name, group) in groups.iter().take(named) {
        let time = if group.measured {
            format!(", {}", duration(group.summed))
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "  {}× {}{time}",
            group.count,
            short_kernel_name(name, KERNEL_NAME_WIDTH)
        );
    }
    if groups.len() > named {
        let rest = &groups[named..];
        let count: u64 = rest.iter().map(|(_, g)| g.count).sum();
        let _ = writeln!(
            out,
            "  ... and {} ({count} activities)",
            more_names(rest.len())
        );
    }
    if unnamed.is_empty() {
        return;
    }
    if !groups.is_empty() {
        let _ = writeln!(out, "  without a name: {}", unnamed.len());
    }
    for r in unnamed.iter().take(named) {
        let _ = writeln!(out, "  {r}");
    }
    if unnamed.len() > named {
        let _ = writeln!(out, "  ... and {} more", unnamed.len() - named);
    }
}

fn more_names(n: usize) -> String {
    if n == 1 {
        "1 more name".into()
    } else {
        format!("{n} more names")
    }
}
