//! `tally trace shares FILE... --iteration P ID --device UUID --clock-domain D [--clock-kind K]
//! --shares SHARES.json --unattributed NS [--json]`: validate a share model against the measured
//! budget of one iteration on one device clock (`docs/evidence.md#shares`).

use anyhow::{Context, bail};
use serde::Deserialize;
use tally_evidence::{
    ClockKind, DeviceClock, EntityRef, RequestShareEstimate, account_gpu_time,
    validate_request_shares,
};
use tally_report::evidence::shares;

use crate::cli::{ClockKindArg, SharesArgs};
use crate::evidence;
use crate::exit::Status;
use crate::printer;

/// One entry of SHARES.json.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ShareEntry {
    request_ref: RefEntry,
    #[serde(default)]
    attempt_ref: Option<RefEntry>,
    duration_ns: i64,
    model: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RefEntry {
    producer_id: String,
    id: String,
}

impl RefEntry {
    fn to_ref(&self, file: &str, field: &str) -> anyhow::Result<EntityRef> {
        EntityRef::new(self.producer_id.as_str(), self.id.as_str())
            .map_err(|message| anyhow::anyhow!("{file}: {field}: {message}"))
    }
}

/// Runs the command.
pub fn run(args: &SharesArgs) -> anyhow::Result<Status> {
    let unattributed_ns: i64 = match args.unattributed.parse::<i64>() {
        Ok(ns) => ns,
        Err(_) => bail!(
            "--unattributed must be an integer number of nanoseconds, got '{}'",
            args.unattributed
        ),
    };
    let shares_name = args.shares.display().to_string();
    let text = std::fs::read_to_string(&args.shares)
        .with_context(|| format!("{shares_name}: cannot read the shares file"))?;
    let entries: Vec<ShareEntry> = serde_json::from_str(&text).map_err(|e| {
        anyhow::anyhow!(
            "{shares_name}: line {}: {e}; expected a JSON list of \
             {{\"request_ref\", \"attempt_ref\", \"duration_ns\", \"model\"}} objects",
            e.line()
        )
    })?;
    let mut shares = Vec::with_capacity(entries.len());
    for (i, entry) in entries.iter().enumerate() {
        let request_ref = entry
            .request_ref
            .to_ref(&shares_name, &format!("[{i}].request_ref"))?;
        let attempt_ref = match &entry.attempt_ref {
            Some(r) => Some(r.to_ref(&shares_name, &format!("[{i}].attempt_ref"))?),
            None => None,
        };
        let share = RequestShareEstimate::new(
            request_ref,
            entry.duration_ns,
            entry.model.as_str(),
            attempt_ref,
        )
        .map_err(|e| anyhow::anyhow!("{shares_name}: [{i}]: {e}"))?;
        shares.push(share);
    }

    let iteration_ref = EntityRef::new(args.iteration[0].as_str(), args.iteration[1].as_str())
        .map_err(|message| anyhow::anyhow!("--iteration: {message}"))?;
    let device_clock = DeviceClock {
        device_uuid: args.device.as_str().into(),
        clock_domain: args.clock_domain.as_str().into(),
        clock_kind: match args.clock_kind {
            ClockKindArg::Monotonic => ClockKind::Monotonic,
            ClockKindArg::Wall => ClockKind::Wall,
            ClockKindArg::Device => ClockKind::Device,
        },
    };

    let graph = evidence::resolve_files(&args.input.files)?;
    let accounting = account_gpu_time(&graph)?;
    let budget = validate_request_shares(
        &graph,
        &accounting,
        &iteration_ref,
        &device_clock,
        &shares,
        unattributed_ns,
    )?;

    if args.json {
        printer::out(&shares::json(&budget))?;
    } else {
        printer::out(&shares::text(&budget))?;
    }
    Ok(Status::Success)
}
