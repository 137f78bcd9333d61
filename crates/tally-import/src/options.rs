//! What the caller (the `tally trace import` command) tells an importer, and what it hears back
//! while the import runs: [`ImportOptions`], [`Detail`], [`DeviceUuidOption`] and [`Progress`].
//!
//! Parsing a `--device-uuid` value lives here so the binary and tests share one grammar; clap and
//! terminal handling do not (the binary owns them).

use std::path::Path;

use regex::Regex;

use crate::error::{Error, Result};

/// How GPU events become activity records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Detail {
    /// One record per GPU event (the default): accounting sums every event.
    #[default]
    Kernel,
    /// One record per (device, kind, launch, link): a CUDA graph launch becomes one record whose
    /// `metadata.intervals` lists its merged busy sub-intervals, as the reference does.
    Launch,
}

impl Detail {
    /// The flag spelling (`kernel`, `launch`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Kernel => "kernel",
            Self::Launch => "launch",
        }
    }
}

/// One `--device-uuid [TRACE_FILE:]INDEX=UUID` value (a bare `UUID` names device index 0).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceUuidOption {
    /// Restricts the entry to inputs with this file name (or path as given); `None`: every input.
    pub trace: Option<String>,
    /// The device index (CUDA ordinal) inside the trace.
    pub index: u32,
    /// The GPU's UUID, used verbatim.
    pub uuid: String,
}

impl DeviceUuidOption {
    /// Parses `UUID`, `INDEX=UUID` or `TRACE_FILE:INDEX=UUID`.
    pub fn parse(text: &str) -> Result<Self> {
        let bad = || {
            Error::usage(format!(
                "--device-uuid {text:?}: expected UUID, INDEX=UUID or TRACE_FILE:INDEX=UUID"
            ))
        };
        let Some((left, uuid)) = text.split_once('=') else {
            if text.trim().is_empty() {
                return Err(bad());
            }
            return Ok(Self {
                trace: None,
                index: 0,
                uuid: text.trim().to_owned(),
            });
        };
        let uuid = uuid.trim();
        if uuid.is_empty() {
            return Err(bad());
        }
        let (trace, index) = match left.rsplit_once(':') {
            Some((trace, index)) if !trace.is_empty() => (Some(trace.to_owned()), index),
            _ => (None, left),
        };
        let index = index.trim().parse::<u32>().map_err(|_| bad())?;
        Ok(Self {
            trace,
            index,
            uuid: uuid.to_owned(),
        })
    }

    /// Whether this entry applies to `path`.
    pub(crate) fn applies_to(&self, path: &Path) -> bool {
        match &self.trace {
            None => true,
            Some(name) => {
                Path::new(name) == path
                    || path
                        .file_name()
                        .is_some_and(|f| f.to_string_lossy() == name.as_str())
            }
        }
    }
}

/// Everything an import needs besides its input paths.
#[derive(Clone, Debug, Default)]
pub struct ImportOptions {
    /// The run id of every record; `None` derives `import-{hash of the inputs' bytes}`.
    pub run_id: Option<String>,
    /// GPU UUIDs given by the user; they override derived identities (and must not contradict a
    /// UUID the trace itself names).
    pub device_uuids: Vec<DeviceUuidOption>,
    /// Ranges whose name matches become iterations too (besides `ProfilerStep#N` and
    /// `stormlog.iteration/...` ranges, which always do).
    pub iterations: Option<Regex>,
    /// Record granularity.
    pub detail: Detail,
    /// Also emit each runtime (launch) call as a `runtime` activity (for the Perfetto view).
    pub emit_runtime: bool,
}

/// Which pass of which input the importer is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Reading ranges and launch calls (first pass).
    Scan,
    /// Emitting GPU activities (second pass).
    Emit,
}

/// A progress report; sent at the start of each pass and about every 4 MiB of input read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// Index of the input in the list given.
    pub input: usize,
    /// Number of inputs.
    pub inputs: usize,
    /// The pass.
    pub phase: Phase,
    /// Bytes of the input file read so far in this pass (compressed bytes for gzip).
    pub bytes_read: u64,
    /// Size of the input file.
    pub bytes_total: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_uuid_forms() {
        let bare = DeviceUuidOption::parse("GPU-abc").unwrap();
        assert_eq!(
            (bare.trace, bare.index, bare.uuid.as_str()),
            (None, 0, "GPU-abc")
        );
        let indexed = DeviceUuidOption::parse("2=GPU-x").unwrap();
        assert_eq!((indexed.trace, indexed.index), (None, 2));
        let scoped = DeviceUuidOption::parse("rank1.json.gz:1=GPU-y").unwrap();
        assert_eq!(scoped.trace.as_deref(), Some("rank1.json.gz"));
        assert_eq!(scoped.index, 1);
        assert!(scoped.applies_to(Path::new("/tmp/rank1.json.gz")));
        assert!(!scoped.applies_to(Path::new("/tmp/rank0.json.gz")));
        assert!(DeviceUuidOption::parse("x=").is_err());
        assert!(DeviceUuidOption::parse("a:b=GPU").is_err());
    }
}
