//! `tally trace parse-only FILE... [--json-only]` (hidden): read and validate every record, keep
//! nothing; with `--json-only`, only parse every line as JSON. The benchmark uses both to show
//! how close `account` comes to the cost of reading and of parsing alone.

use crate::cli::ParseOnlyArgs;
use crate::evidence;
use crate::exit::Status;
use crate::printer;

/// Runs the command.
pub fn run(args: &ParseOnlyArgs) -> anyhow::Result<Status> {
    if args.json_only {
        let mut lines = 0u64;
        for path in &args.input.files {
            lines += tally_artifact::read::parse_json_lines(&evidence::input(path)?)?;
        }
        printer::out_line(&format!("{lines} JSON lines"))?;
        return Ok(Status::Success);
    }
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
