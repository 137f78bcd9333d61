//! `tally trace parse-only FILE...` (hidden): read and validate every record, keep nothing. The
//! benchmark uses it to show how close `account` comes to the cost of parsing alone.

use crate::cli::ParseOnlyArgs;
use crate::evidence;
use crate::exit::Status;
use crate::printer;

/// Runs the command.
pub fn run(args: &ParseOnlyArgs) -> anyhow::Result<Status> {
    let mut records = 0u64;
    for path in &args.input.files {
        evidence::for_each_record(path, |_, _| {
            records += 1;
            Ok(())
        })?;
    }
    printer::out_line(&format!("{records} records"))?;
    Ok(Status::Success)
}
