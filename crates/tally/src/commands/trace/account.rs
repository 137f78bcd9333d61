//! `tally trace account FILE... [--json]`: resolve, account, report.

use crate::cli::AccountArgs;
use crate::evidence;
use crate::exit::Status;
use crate::printer;
use crate::report;

/// Runs the command.
pub fn run(args: &AccountArgs) -> anyhow::Result<Status> {
    let graph = evidence::resolve_files(&args.input.files)?;
    let accounting = tally_evidence::account_gpu_time(&graph)?;
    if args.json {
        printer::out_line(&report::account_json::render(&graph, &accounting))?;
    } else {
        printer::out(&report::account_text::render(&graph, &accounting, args.top))?;
    }
    Ok(Status::Success)
}
