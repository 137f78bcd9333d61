//! `tally trace convert FILE... --to v2|v4 -o OUT`: the records of the inputs, in their order, as
//! one artifact. OUT appears only when the whole conversion succeeded.

use anyhow::Context;
use tally_artifact::write::{ArtifactForm, ArtifactWriter};

use super::output::write_atomically;
use crate::cli::{ConvertArgs, FormArg};
use crate::evidence;
use crate::exit::Status;

/// Runs the command.
pub fn run(args: &ConvertArgs) -> anyhow::Result<Status> {
    let form = match args.to {
        FormArg::V2 => ArtifactForm::V2,
        FormArg::V4 => ArtifactForm::V4,
    };
    let out_name = args.output.display().to_string();
    write_atomically(&args.output, |out| {
        let mut writer = ArtifactWriter::new(out, form);
        for path in &args.input.files {
            let mut write_error: Option<std::io::Error> = None;
            evidence::for_each_record(path, |_, record| {
                if write_error.is_none()
                    && let Err(e) = writer.write_record(&record)
                {
                    write_error = Some(e);
                }
                Ok(())
            })?;
            if let Some(e) = write_error {
                return Err(e).with_context(|| format!("{out_name}: write failed"));
            }
        }
        writer
            .finish()
            .with_context(|| format!("{out_name}: write failed"))?;
        Ok(())
    })?;
    Ok(Status::Success)
}
