//! `tally trace synth`: write a seeded synthetic artifact (see `tally-synth`).

use std::io::{self, BufWriter, Write};

use anyhow::{Context, bail};
use tally_evidence::write::ArtifactForm;
use tally_synth::{Delivery, Scenario};

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
