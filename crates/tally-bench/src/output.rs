//! What a run writes: the per-request JSONL (`tally.bench.run` header, one `tally.bench.request`
//! per request, a `tally.bench.window` footer; stamps as wall-clock ns derived from one anchor, so
//! they never step backwards), the `METRIC name=value` lines, and the summary table for stderr.

use std::io::Write;

use serde_json::{Value, json};

use crate::client::RunClock;
use crate::record::{RequestRecord, Status};
use crate::runner::RunReport;
use crate::summary::{Distribution, LEVELS, Summary, format_value};

/// What the header says about the run besides the report.
#[derive(Clone, Debug, Default)]
pub struct RunHeader {
    /// The run id.
    pub run_id: String,
    /// tally's version.
    pub tally_version: String,
    /// The command line (API key scrubbed by the caller).
    pub argv: Vec<String>,
    /// The endpoint without credentials.
    pub endpoint: String,
    /// The model.
    pub model: String,
    /// `chat` or `completions`.
    pub api: String,
    /// Streamed answers.
    pub stream: bool,
    /// The load, as given (`closed:C`, `poisson:R`, …).
    pub arrivals: String,
    /// Canonical JSON of everything that decides the traffic, seed included.
    pub workload: Value,
    /// The seed.
    pub seed: u64,
    /// Write every chunk gap of every request.
    pub record_gaps: bool,
}

/// The machine's host name and boot id (empty when unknown).
pub fn host_and_boot_id() -> (String, String) {
    let read = |path: &str| {
        std::fs::read_to_string(path)
            .map(|s| s.trim().to_owned())
            .unwrap_or_default()
    };
    (
        read("/proc/sys/kernel/hostname"),
        read("/proc/sys/kernel/random/boot_id"),
    )
}

fn digest_of(value: &Value) -> String {
    crate::workload::digest(&value.to_string())
}

fn wall(clock: &RunClock, ns: Option<u64>) -> Value {
    ns.map_or(Value::Null, |ns| Value::from(clock.wall_ns(ns)))
}

fn opt(value: Option<f64>) -> Value {
    value.map_or(Value::Null, Value::from)
}

/// One request as a JSON object.
pub fn request_json(record: &RequestRecord, report: &RunReport, record_gaps: bool) -> Value {
    let clock = &report.clock;
    let mut value = serde_json::to_value(record).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut value {
        map.insert("type".into(), "tally.bench.request".into());
        map.insert("v".into(), 1.into());
        for key in [
            "sent_ns",
            "head_ns",
            "first_event_ns",
            "first_token_ns",
            "last_token_ns",
            "end_ns",
        ] {
            let ns = map.get(key).and_then(Value::as_u64);
            map.insert(key.into(), wall(clock, ns));
        }
        map.insert(
            "intended_ns".into(),
            clock.wall_ns(record.intended_ns).into(),
        );
        let phase_start = report.phase_ns.0;
        map.insert(
            "intended_offset_ms".into(),
            ((record.intended_ns.saturating_sub(phase_start)) as f64 / 1e6).into(),
        );
        map.insert("ttft_ms".into(), opt(record.ttft_ms()));
        map.insert("ttft_sent_ms".into(), opt(record.ttft_sent_ms()));
        map.insert("first_event_ms".into(), opt(record.first_event_ms()));
        map.insert("head_ms".into(), opt(record.head_ms()));
        map.insert("e2e_ms".into(), opt(record.e2e_ms()));
        map.insert("e2e_sent_ms".into(), opt(record.e2e_sent_ms()));
        map.insert("tpot_ms".into(), opt(record.tpot_ms(false)));
        map.insert("dispatch_lag_ms".into(), opt(record.dispatch_lag_ms()));
        if record_gaps {
            map.insert(
                "chunk_gaps_ms".into(),
                record.chunk_gaps_ms().collect::<Vec<f64>>().into(),
            );
        }
    }
    value
}

fn distribution_json(d: &Distribution) -> Value {
    let mut levels = serde_json::Map::new();
    for (i, (name, _)) in LEVELS.iter().enumerate() {
        levels.insert(
            (*name).into(),
            json!({
                "penalized": d.penalized[i].map(format_value),
                "successful": d.successful[i],
                "sufficient": d.sufficient[i],
            }),
        );
    }
    json!({"n": d.n, "mean": d.mean, "levels": levels})
}

/// The footer: windows, cohort counts, every metric with its sufficiency.
pub fn window_json(report: &RunReport) -> Value {
    let s = &report.summary;
    let counts: serde_json::Map<String, Value> = s
        .counts
        .iter()
        .map(|(status, n)| (status.name().to_owned(), Value::from(*n)))
        .collect();
    json!({
        "type": "tally.bench.window",
        "v": 1,
        "window_start_ns": report.clock.wall_ns(report.window_ns.0),
        "window_end_ns": report.clock.wall_ns(report.window_ns.1),
        "phase_start_ns": report.clock.wall_ns(report.phase_ns.0),
        "phase_end_ns": report.clock.wall_ns(report.phase_ns.1),
        "window_s": s.window_s,
        "rate_rule": format!("{:?}", report.rule),
        "offered": s.offered,
        "ok": s.ok,
        "counts": counts,
        "metrics": s.metrics.iter().map(|(n, v)| (n.clone(), Value::from(format_value(*v)))).collect::<serde_json::Map<_, _>>(),
        "ttft": distribution_json(&s.ttft),
        "ttft_sent": distribution_json(&s.ttft_sent),
        "e2e": distribution_json(&s.e2e),
        "e2e_sent": distribution_json(&s.e2e_sent),
        "tpot": s.tpot.as_ref().map(distribution_json),
        "icl": distribution_json(&s.icl),
        "tokens_per_chunk": s.tokens_per_chunk,
        "untrustworthy": s.untrustworthy.iter().map(ToString::to_string).collect::<Vec<_>>(),
        "stopped_early": report.stopped_early.is_some(),
        "stop_reason": report.stopped_early.as_ref().map(|(_, why)| why),
        "stopped_ns": report.stopped_early.as_ref().map(|(at, _)| report.clock.wall_ns(*at)),
        "steal_ms": report.steal_ms,
    })
}

/// The header line.
pub fn run_json(header: &RunHeader, report: &RunReport) -> Value {
    let (host, boot_id) = host_and_boot_id();
    let mut spec = header.workload.clone();
    if let Value::Object(map) = &mut spec {
        map.remove("seed");
    }
    json!({
        "type": "tally.bench.run",
        "v": 1,
        "run_id": header.run_id,
        "tally_version": header.tally_version,
        "argv": header.argv,
        "endpoint": header.endpoint,
        "model": header.model,
        "task": header.api,
        "stream": header.stream,
        "arrivals": header.arrivals,
        "workload": header.workload,
        "workload_digest": digest_of(&header.workload),
        "spec_digest": digest_of(&spec),
        "seed": header.seed,
        "clock_anchor_ns": report.clock.wall_anchor_ns,
        "clock_uncertainty_ns": report.clock.uncertainty_ns,
        "host": host,
        "boot_id": boot_id,
        "pid": std::process::id(),
        "clock_domain": format!("{host}/{boot_id}/wall"),
        "preflight": {"usage": report.preflight.usage, "tokens_per_word": report.preflight.tokens_per_word},
    })
}

/// Writes the JSONL of a run.
pub fn write_jsonl(
    out: &mut impl Write,
    header: &RunHeader,
    report: &RunReport,
) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, &run_json(header, report))?;
    out.write_all(b"\n")?;
    for record in &report.records {
        serde_json::to_writer(&mut *out, &request_json(record, report, header.record_gaps))?;
        out.write_all(b"\n")?;
    }
    serde_json::to_writer(&mut *out, &window_json(report))?;
    out.write_all(b"\n")?;
    out.flush()
}

/// `METRIC name=value` lines.
pub fn metric_lines(summary: &Summary) -> Vec<String> {
    summary
        .metrics
        .iter()
        .map(|(name, value)| format!("METRIC {name}={}", format_value(*value)))
        .collect()
}

fn cell(value: Option<f64>) -> String {
    match value {
        Some(v) if v.is_infinite() => "inf".into(),
        Some(v) => format!("{v:.2}"),
        None => "-".into(),
    }
}

/// The summary table for stderr.
pub fn summary_text(report: &RunReport) -> String {
    let s = &report.summary;
    let mut text = String::new();
    let counts: Vec<String> = Status::ALL
        .iter()
        .filter_map(|st| s.counts.get(st).map(|n| format!("{} {n}", st.name())))
        .collect();
    text.push_str(&format!(
        "requests: {} offered, {} ok ({}); window {:.3} s\n",
        s.offered,
        s.ok,
        counts.join(", "),
        s.window_s
    ));
    text.push_str(&format!(
        "{:<22}{:>10}{:>10}{:>10}{:>10}{:>10}\n",
        "ms", "p50", "p90", "p95", "p99", "mean"
    ));
    let mut row = |name: &str, d: Option<&Distribution>, penalized: bool| {
        let Some(d) = d else { return };
        let q = if penalized { d.penalized } else { d.successful };
        text.push_str(&format!(
            "{:<22}{:>10}{:>10}{:>10}{:>10}{:>10}\n",
            name,
            cell(q[0]),
            cell(q[1]),
            cell(q[2]),
            cell(q[3]),
            cell(d.mean)
        ));
    };
    row("ttft (intended)", Some(&s.ttft), true);
    row("ttft (from send)", Some(&s.ttft_sent), false);
    row("tpot", s.tpot.as_ref(), true);
    row("icl (per chunk)", Some(&s.icl), false);
    row("e2e (intended)", Some(&s.e2e), true);
    row("e2e (from send)", Some(&s.e2e_sent), false);
    let metric = |name: &str| s.metrics.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
    text.push_str(&format!(
        "rates: {} req/s, {} output tok/s, {} offered req/s",
        cell(metric("requests_per_s")),
        cell(metric("output_tokens_per_s")),
        cell(metric("offered_rps"))
    ));
    if let Some(tpc) = s.tokens_per_chunk {
        text.push_str(&format!("; {tpc:.2} tokens per chunk"));
    }
    text.push('\n');
    if let Some((_, why)) = &report.stopped_early {
        text.push_str(&format!(
            "interrupted ({why}): the window closed early; these figures cover what completed\n"
        ));
    }
    if let Some(steal) = report.steal_ms.filter(|ms| *ms > 0.0) {
        text.push_str(&format!(
            "machine: the hypervisor took {steal:.0} ms of this machine's CPU time (steal) while the phase ran\n"
        ));
    }
    for note in &s.notes {
        text.push_str(&format!("note: {note}\n"));
    }
    text
}
