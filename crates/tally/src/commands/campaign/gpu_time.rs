//! Where the head's GPU time went, for the brief (`docs/implementers.md#gpu-time`): the newest
//! successful sample of the head under the current evaluator that handed over evidence is read
//! again and accounted — GPU busy time against the sample's wall time, and the kernels that took
//! the most summed time (`tally_evidence::kernel_times`, as in `tally trace account`), merged
//! over device clocks by name. Without such a sample the section says so in one line.

use std::collections::BTreeMap;
use std::path::Path;

use tally_plugin::{Block, CampaignData, MeasurementView, Rendered, SectionOutput, Table};

use crate::evidence::resolve_files;

/// Kernels the table lists.
pub const TOP_KERNELS: usize = 5;

/// Characters of a kernel name shown, as `tally trace account` shortens them (return type and
/// parameter list dropped; longer ones end in `…`).
const NAME_CHARS: usize = 64;

/// The section's provider name and place (before the installed sections of the `run` surface).
const PROVIDER: &str = "gpu_time";
const ORDER: u32 = 0;

/// The section for the campaign's head; `root` is the repository (stored paths may be relative to
/// it).
pub fn head_gpu_section(root: &Path, data: &CampaignData) -> SectionOutput {
    let blocks = match data.campaign.head {
        None => vec![Block::Text("No head yet: nothing was measured.".into())],
        Some(head) => match newest_with_evidence(data, head) {
            None => vec![Block::Text(format!(
                "No GPU evidence for the head (candidate#{head}): its samples handed over no \
                 evidence file (`TALLY_EVIDENCE_FILE`, docs/evaluate-protocol.md)."
            ))],
            Some((m, artifact)) => accounted(root, m, artifact),
        },
    };
    SectionOutput::new(
        PROVIDER,
        ORDER,
        Ok(Some(Rendered {
            title: "Where the head's GPU time went".into(),
            blocks,
        })),
    )
}

/// The newest successful sample of `head` under the current evaluator with an evidence file.
fn newest_with_evidence(data: &CampaignData, head: u64) -> Option<(&MeasurementView, &str)> {
    data.measurements
        .iter()
        .filter(|m| {
            m.candidate == head && m.error.is_none() && m.evaluator == data.campaign.evaluator
        })
        .filter_map(|m| m.evidence.as_deref().map(|e| (m, e)))
        .max_by_key(|(m, _)| m.id)
}

fn accounted(root: &Path, m: &MeasurementView, artifact: &str) -> Vec<Block> {
    let path = root.join(artifact);
    let read = resolve_files(&[&path]).and_then(|graph| {
        let accounting = tally_evidence::account_gpu_time(&graph)?;
        let kernels = tally_evidence::kernel_times(&graph)?;
        Ok((accounting, kernels))
    });
    let (accounting, kernels) = match read {
        Ok(read) => read,
        Err(e) => {
            return vec![Block::Text(format!(
                "The head's evidence (sample #{}) could not be read again: {e}",
                m.id
            ))];
        }
    };
    let busy_ns: u64 = accounting.device_totals.values().map(|t| t.busy_ns).sum();
    let devices = accounting.device_totals.len();
    let busy_s = busy_ns as f64 / 1e9;
    let wall = match m.seconds {
        Some(wall) if wall > 0.0 => format!(
            " of the sample's {wall:.3} s wall time ({:.1} %)",
            100.0 * busy_s / wall
        ),
        _ => String::new(),
    };
    let mut blocks = vec![Block::Text(format!(
        "Sample #{} of the head ({} side, sample {}): GPU busy {busy_s:.3} s{wall}, over {devices} \
         device clock(s).",
        m.id, m.side, m.sample
    ))];
    let mut by_name: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for rows in kernels.values() {
        for k in rows {
            let entry = by_name.entry(k.name.to_string()).or_default();
            entry.0 += k.launches;
            entry.1 += k.summed_ns;
        }
    }
    let total: u64 = by_name.values().map(|(_, ns)| ns).sum();
    let mut rows: Vec<(String, u64, u64)> =
        by_name.into_iter().map(|(n, (l, ns))| (n, l, ns)).collect();
    rows.sort_by(|a, b| b.2.cmp(&a.2).then(b.1.cmp(&a.1)).then(a.0.cmp(&b.0)));
    if rows.is_empty() {
        blocks.push(Block::Text("It names no GPU activity.".into()));
        return blocks;
    }
    let share = |ns: u64| format!("{:.1} %", 100.0 * ns as f64 / total.max(1) as f64);
    blocks.push(Block::Table(Table {
        columns: ["kernel", "launches", "summed ms", "share"]
            .map(String::from)
            .to_vec(),
        rows: rows
            .iter()
            .take(TOP_KERNELS)
            .map(|(name, launches, ns)| {
                vec![
                    tally_report::evidence::names::short_kernel_name(name, NAME_CHARS),
                    launches.to_string(),
                    format!("{:.3}", *ns as f64 / 1e6),
                    share(*ns),
                ]
            })
            .collect(),
    }));
    if rows.len() > TOP_KERNELS {
        let rest: u64 = rows[TOP_KERNELS..].iter().map(|r| r.2).sum();
        blocks.push(Block::Text(format!(
            "{} more kernel name(s): {} of the summed kernel time.",
            rows.len() - TOP_KERNELS,
            share(rest)
        )));
    }
    blocks
}
