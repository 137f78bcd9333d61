//! `tally trace account FILE... [--json] [--top N]`: resolve, account, report. Only the text
//! report gathers kernel names (`tally_evidence::kernel_times`); `--json` never parses them.

use tally_report::evidence::{account_json, account_text};

use crate::cli::AccountArgs;
use crate::evidence;
use crate::exit::Status;
use crate::printer;

/// Runs the command.
pub fn run(args: &AccountArgs) -> anyhow::Result<Status> {
    let graph = evidence::resolve_files(&args.input.files)?;
    let accounting = tally_evidence::account_gpu_time(&graph)?;
    if args.json {
        printer::out_streamed(|out| account_json::write(&graph, &accounting, out))?;
    } else {
        let kernels = tally_evidence::kernel_times(&graph)?;
        printer::out(&account_text::render(
            &graph,
            &accounting,
            &kernels,
            args.top,
        ))?;
    }
    // The process ends here: freeing a graph of a million records one allocation at a time
    // costs a quarter of a second, and the accounting's per-iteration maps another 10 ms, for
    // nothing the exit would not return.
    std::mem::forget(graph);
    std::mem::forget(accounting);
    Ok(Status::Success)
}
