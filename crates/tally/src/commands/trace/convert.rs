//! `tally trace convert FILE... --to v2|v4 -o OUT`: the records of the inputs, in their order, as
//! one artifact. OUT is written to a temporary file beside it and renamed into place at the end,
//! so a failed conversion never leaves a partial OUT behind.

use std::io::{self, BufWriter, Write};

use anyhow::Context;
use tally_evidence::write::{ArtifactForm, ArtifactWriter};

use crate::cli::{ConvertArgs, FormArg};
use crate::evidence;
use crate::exit::Status;

/// Runs the command.
pub fn run(args: &ConvertArgs) -> anyhow::Result<Status> {
    let form = match args.to {
        FormArg::V2 => ArtifactForm::V2,
        FormArg::V4 => ArtifactForm::V4,
    };
    if args.output.as_os_str() == "-" {
        let stdout = io::stdout().lock();
        let writer = convert(
            &args.input.files,
            ArtifactWriter::new(BufWriter::new(stdout), form),
        )?;
        writer.finish()?.flush()?;
        return Ok(Status::Success);
    }
    let out_name = args.output.display().to_string();
    let dir = match args.output.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let temp = tempfile::NamedTempFile::new_in(&dir)
        .with_context(|| format!("{out_name}: cannot create a file in {}", dir.display()))?;
    let writer = convert(
        &args.input.files,
        ArtifactWriter::new(BufWriter::new(temp.as_file()), form),
    )?;
    writer
        .finish()
        .and_then(|mut w| w.flush())
        .with_context(|| format!("{out_name}: write failed"))?;
    temp.persist(&args.output)
        .with_context(|| format!("{out_name}: cannot move the converted artifact into place"))?;
    Ok(Status::Success)
}

fn convert<W: Write>(
    files: &[std::path::PathBuf],
    mut writer: ArtifactWriter<W>,
) -> anyhow::Result<ArtifactWriter<W>> {
    for path in files {
        let mut write_error: Option<io::Error> = None;
        evidence::for_each_record(path, |_, record| {
            if write_error.is_none()
                && let Err(e) = writer.write_record(&record)
            {
                write_error = Some(e);
            }
            Ok(())
        })?;
        if let Some(e) = write_error {
            return Err(e).context("writing the converted artifact failed");
        }
    }
    Ok(writer)
}
