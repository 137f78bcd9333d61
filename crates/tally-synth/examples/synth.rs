//! Writes a synthetic artifact, for trying the generator without the `tally` binary.
//!
//! `cargo run -p tally-synth --example synth -- --requests N [--seed S] [--form v2|v4]
//! [--duplicates F] [--shuffle] [--shuffle-window N] [--legacy N] [--unresolved N] [--hosts N]
//! (-o FILE | --count-only)`
#![allow(clippy::print_stderr)]

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use tally_artifact::write::ArtifactForm;
use tally_synth::{Delivery, Scenario, write_artifact};

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<(), String> {
    let mut scenario = Scenario::new(1, 1000);
    let mut delivery = Delivery::default();
    let mut form = ArtifactForm::V2;
    let mut output: Option<PathBuf> = None;
    let mut count_only = false;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--requests" => scenario.requests = parse(&value()?)?,
            "--seed" => scenario.seed = parse(&value()?)?,
            "--hosts" => scenario.hosts = parse(&value()?)?,
            "--unresolved" => scenario.unresolved = parse(&value()?)?,
            "--legacy" => delivery.legacy = parse(&value()?)?,
            "--duplicates" => delivery.duplicates = parse(&value()?)?,
            "--shuffle" => delivery.shuffle = true,
            "--shuffle-window" => delivery.shuffle_window = parse(&value()?)?,
            "--form" => {
                form = match value()?.as_str() {
                    "v2" => ArtifactForm::V2,
                    "v4" => ArtifactForm::V4,
                    other => return Err(format!("--form must be v2 or v4, not {other}")),
                }
            }
            "-o" | "--output" => output = Some(PathBuf::from(value()?)),
            "--count-only" => count_only = true,
            other => return Err(format!("unknown flag {other}")),
        }
    }
    let started = Instant::now();
    if count_only {
        let records = scenario
            .delivered(&delivery)
            .map_err(|e| e.to_string())?
            .count();
        let seconds = started.elapsed().as_secs_f64();
        eprintln!("generated {records} records in {seconds:.3} s (not written)");
        return Ok(());
    }
    let output = output.ok_or("-o FILE is required")?;
    let summary = write_artifact(&scenario, &delivery, form, &output).map_err(|e| e.to_string())?;
    eprintln!(
        "wrote {} records to {} in {:.3} s",
        summary.records,
        output.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

fn parse<T: std::str::FromStr>(text: &str) -> Result<T, String> {
    text.parse().map_err(|_| format!("cannot parse {text:?}"))
}
