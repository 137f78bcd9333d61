//! `tally bench ...`: the load generator for OpenAI-compatible endpoints, its fake server, and
//! the conversion of a run into evidence (docs/bench.md; exit codes in docs/cli.md).

pub mod args;
mod convert;
mod fake_server;
mod openai;

pub use args::BenchCommand;

use crate::exit::Status;

/// Runs one `tally bench` subcommand.
pub fn run(command: BenchCommand) -> anyhow::Result<Status> {
    match command {
        BenchCommand::Openai(args) => openai::run(&args),
        BenchCommand::FakeServer(args) => fake_server::run(&args),
        BenchCommand::Convert(args) => convert::run(&args),
    }
}

/// Parses a duration: seconds (`1.5`), or with a unit (`250ms`, `10s`, `2m`, `1h`).
pub fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let text = text.trim();
    let (number, scale) = if let Some(n) = text.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = text.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = text.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (text, 1.0)
    };
    match number.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 && v * scale < 1e9 => {
            Ok(std::time::Duration::from_secs_f64(v * scale))
        }
        _ => Err(format!(
            "expected a duration such as 500ms, 10s or 2m, not {text:?}"
        )),
    }
}

/// A usage error (exit 2) with its message on stderr.
fn usage(message: &str) -> anyhow::Result<Status> {
    crate::printer::error(message);
    Ok(Status::Usage)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("250ms").unwrap().as_millis(), 250);
        assert_eq!(parse_duration("2m").unwrap().as_secs(), 120);
        assert_eq!(parse_duration("1.5").unwrap().as_millis(), 1500);
        assert!(parse_duration("x").is_err() && parse_duration("-1s").is_err());
    }
}
