//! `tally trace align --from DOMAIN --to DOMAIN TIMESTAMP_NS FILE... [--json]`.

use anyhow::bail;
use tally_evidence::{align_timestamp, covering_alignments};
use tally_report::evidence::align;

use crate::cli::AlignArgs;
use crate::evidence;
use crate::exit::Status;
use crate::printer;

/// Runs the command.
pub fn run(args: &AlignArgs) -> anyhow::Result<Status> {
    let timestamp_ns = parse_timestamp(&args.timestamp_ns)?;
    let graph = evidence::resolve_files(&args.input.files)?;
    let alignments = graph.alignments();
    match align_timestamp(timestamp_ns, &args.from, &args.to, alignments.iter()) {
        Ok(aligned) => {
            if args.json {
                printer::out(&align::json(&aligned))?;
            } else {
                printer::out(&align::text(&aligned))?;
            }
            Ok(Status::Success)
        }
        Err(err) => {
            let covering =
                covering_alignments(timestamp_ns, &args.from, &args.to, alignments.iter());
            let why = align::why_not(timestamp_ns, &args.from, &args.to, &covering);
            bail!("{err}: {why}")
        }
    }
}

/// A timestamp argument: integer nanoseconds, not negative (the reference's rule).
fn parse_timestamp(text: &str) -> anyhow::Result<i64> {
    match text.parse::<i64>() {
        Ok(ts) if ts < 0 => bail!("timestamp_ns must be non-negative"),
        Ok(ts) => Ok(ts),
        Err(_) => bail!(
            "TIMESTAMP_NS must be an integer number of nanoseconds between 0 and {}, got '{text}'",
            i64::MAX
        ),
    }
}
