//! `tally trace synth`: write a seeded synthetic artifact, or with `--kineto` the run's PyTorch
//! profiler traces (see `tally-synth`).

use std::io::{self, BufWriter, Write};

use anyhow::{Context, bail};
use tally_artifact::write::ArtifactForm;
use tally_synth::{Delivery, KinetoOptions, Scenario};

use crate::cli::{FormArg, SynthArgs};
use crate::exit::Status;

/// Runs the command.
pub fn run(args: &SynthArgs) -> anyhow::Result<Status> {
    if !(0.0..=1.0).contains(&args.duplicates) {
        bail!(
            "--duplicates must be a fraction between 0 and 1, got {}",
            args.duplicates
        );
    }
    let mut scenario = Scenario::new(args.seed, args.requests);
    scenario.hosts = args.hosts;
    scenario.validate().map_err(|e| anyhow::anyhow!("{e}"))?;
    if args.kineto {
        return kineto(args, &scenario);
    }
    let delivery = Delivery {
        duplicates: args.duplicates,
        shuffle: args.shuffle,
        legacy: args.legacy,
        ..Delivery::default()
    };
    let form = match args.form {
        FormArg::V2 => ArtifactForm::V2,
        FormArg::V4 => ArtifactForm::V4,
    };
    if args.output.as_os_str() == "-" {
        let out = BufWriter::new(io::stdout().lock());
        let (mut out, _) = tally_synth::write_artifact_to(&scenario, &delivery, form, out)?;
        out.flush()?;
    } else {
        let file = std::fs::File::create(&args.output)
            .with_context(|| format!("{}: cannot create", args.output.display()))?;
        let (mut out, _) =
            tally_synth::write_artifact_to(&scenario, &delivery, form, BufWriter::new(file))
                .with_context(|| format!("{}: write failed", args.output.display()))?;
        out.flush()?;
    }
    Ok(Status::Success)
}

/// `--kineto`: the traces, to a file, a directory or standard output (one trace only).
fn kineto(args: &SynthArgs, scenario: &Scenario) -> anyhow::Result<Status> {
    let options = KinetoOptions {
        iterations_per_step: args.iterations_per_step,
        base_time: args.base_time,
        target_bytes: args.target_bytes,
        host: args.trace_host,
        gpu: args.trace_gpu,
        ..KinetoOptions::default()
    };
    let traces = tally_synth::kineto_traces(scenario, &options)?;
    if args.output.as_os_str() == "-" {
        if traces.len() != 1 {
            bail!(
                "-o - writes one trace, but {} are selected; choose one with --trace-host and --trace-gpu, or give a directory",
                traces.len()
            );
        }
        let out = BufWriter::new(io::stdout().lock());
        let (mut sinks, _) = tally_synth::write_kineto_to(scenario, &options, vec![out])?;
        for sink in &mut sinks {
            sink.flush()?;
        }
    } else {
        tally_synth::write_kineto(scenario, &options, &args.output)?;
    }
    Ok(Status::Success)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::cli::Cli;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(["tally", "trace", "synth", "-o", "out"].iter().chain(args))
    }

    #[test]
    fn kineto_options_parse_and_need_kineto() {
        assert!(parse(&["--kineto", "--target-bytes", "2.5G", "--trace-host", "1"]).is_ok());
        assert!(parse(&["--kineto", "--iterations-per-step", "4", "--base-time"]).is_ok());
        assert!(parse(&["--target-bytes", "5M"]).is_err());
        assert!(parse(&["--kineto", "--form", "v4"]).is_err());
        assert!(parse(&["--kineto", "--target-bytes", "5Q"]).is_err());
    }

    #[test]
    fn kineto_writes_one_file_or_a_directory() {
        let dir = tempfile::tempdir().unwrap();
        let one = dir.path().join("one.json");
        let cli = parse(&[
            "--kineto",
            "--requests",
            "5",
            "--trace-host",
            "1",
            "--trace-gpu",
            "1",
        ])
        .unwrap();
        let crate::cli::Command::Trace(crate::cli::TraceCommand::Synth(mut args)) = cli.command
        else {
            panic!("not synth");
        };
        args.output = one.clone();
        super::run(&args).unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&one).unwrap()).unwrap();
        assert_eq!(doc["host_name"], "worker-1");
        args.trace_gpu = None;
        args.output = dir.path().join("both");
        super::run(&args).unwrap();
        let mut names: Vec<String> = std::fs::read_dir(&args.output)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(
            names,
            ["rank1-dev0.pt.trace.json", "rank1-dev1.pt.trace.json"]
        );
    }
}
