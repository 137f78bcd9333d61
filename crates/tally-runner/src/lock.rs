//! The run lock: one `tally run` per campaign at a time (`docs/campaign.md#crash-safety`).
//!
//! Owns: an exclusive `flock` on a lock file (by convention `.tally/run-<campaign>.lock`, see
//! [`run_lock_path`]) held for as long as the [`RunLock`] lives. The kernel drops a `flock` when
//! the last descriptor of it closes, so a holder killed even with SIGKILL cannot leave it stuck;
//! there is no stale-lock detection to get wrong. The descriptor is close-on-exec (Rust's
//! default), so evaluate commands started by the holder do not inherit the lock. Once locked,
//! the file is rewritten with the holder's pid, start time and host, so a second process can say
//! who holds it: `another tally run (pid 1234 on gpu-7, started 2026-03-01T12:00:00Z) is working
//! on campaign X`.
//!
//! Deliberately absent: waiting for the lock (a second `tally run` exits 1), and locks across
//! machines — `flock` on a network file system may not exclude a process on another host.

use std::fmt;
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

use crate::RunnerError;

/// Who holds a run lock, as far as its file says (fields a reader could not parse are `None`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LockHolder {
    /// The holder's process id.
    pub pid: Option<u32>,
    /// When it took the lock (RFC 3339, UTC, whole seconds).
    pub started: Option<String>,
    /// Its host name.
    pub host: Option<String>,
}

impl LockHolder {
    fn current() -> Self {
        let started = jiff::Timestamp::now()
            .round(jiff::Unit::Second)
            .map(|t| t.to_string())
            .ok();
        let host = nix::unistd::gethostname()
            .ok()
            .map(|h| h.to_string_lossy().into_owned());
        Self {
            pid: Some(std::process::id()),
            started,
            host,
        }
    }

    fn to_file_text(&self) -> String {
        let mut text = String::new();
        if let Some(pid) = self.pid {
            text.push_str(&format!("pid={pid}\n"));
        }
        if let Some(started) = &self.started {
            text.push_str(&format!("started={started}\n"));
        }
        if let Some(host) = &self.host {
            text.push_str(&format!("host={host}\n"));
        }
        text
    }

    fn parse(text: &str) -> Self {
        let mut holder = Self::default();
        for line in text.lines() {
            match line.split_once('=') {
                Some(("pid", v)) => holder.pid = v.trim().parse().ok(),
                Some(("started", v)) => holder.started = Some(v.trim().to_owned()),
                Some(("host", v)) => holder.host = Some(v.trim().to_owned()),
                _ => {}
            }
        }
        holder
    }
}

impl fmt::Display for LockHolder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.pid {
            Some(pid) => write!(f, "pid {pid}")?,
            None => f.write_str("pid unknown")?,
        }
        if let Some(host) = &self.host {
            write!(f, " on {host}")?;
        }
        if let Some(started) = &self.started {
            write!(f, ", started {started}")?;
        }
        Ok(())
    }
}

/// The conventional lock file of a campaign: `<tally_dir>/run-<campaign>.lock`, with characters
/// other than ASCII letters, digits, `-`, `_` and `.` in the name replaced by `_`.
pub fn run_lock_path(tally_dir: &Path, campaign: &str) -> PathBuf {
    let name: String = campaign
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    tally_dir.join(format!("run-{name}.lock"))
}

/// An exclusive hold on a campaign's run lock; released when dropped or when the process dies.
#[derive(Debug)]
pub struct RunLock {
    file: fs_err::File,
}

impl RunLock {
    /// Takes the lock at `path` (creating the file and its directory) without waiting.
    /// [`RunnerError::LockHeld`] names the holder when another process has it.
    pub fn acquire(path: &Path, campaign: &str) -> Result<Self, RunnerError> {
        if let Some(parent) = path.parent() {
            fs_err::create_dir_all(parent)?;
        }
        let mut file = fs_err::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        match file.file().try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut text = String::new();
                let _ = file.read_to_string(&mut text);
                return Err(RunnerError::LockHeld {
                    campaign: campaign.to_owned(),
                    holder: LockHolder::parse(&text),
                });
            }
            Err(std::fs::TryLockError::Error(err)) => {
                return Err(std::io::Error::new(
                    err.kind(),
                    format!("failed to lock {}: {err}", path.display()),
                )
                .into());
            }
        }
        file.set_len(0)?;
        file.rewind()?;
        file.write_all(LockHolder::current().to_file_text().as_bytes())?;
        file.flush()?;
        Ok(Self { file })
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        self.file.path()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holders_round_trip_through_the_file() {
        let holder = LockHolder {
            pid: Some(1234),
            started: Some("2026-03-01T12:00:00Z".into()),
            host: Some("gpu-7".into()),
        };
        assert_eq!(LockHolder::parse(&holder.to_file_text()), holder);
        assert_eq!(
            holder.to_string(),
            "pid 1234 on gpu-7, started 2026-03-01T12:00:00Z"
        );
        assert_eq!(LockHolder::parse("").to_string(), "pid unknown");
    }

    #[test]
    fn a_second_acquire_in_the_same_process_is_refused_then_allowed() {
        let dir = tempfile::tempdir().unwrap();
        let path = run_lock_path(&dir.path().join(".tally"), "fast/decode");
        assert!(path.ends_with(".tally/run-fast_decode.lock"));
        let held = RunLock::acquire(&path, "fast/decode").unwrap();
        let err = RunLock::acquire(&path, "fast/decode").unwrap_err();
        let expected = format!("another tally run (pid {}", std::process::id());
        assert!(err.to_string().starts_with(&expected), "{err}");
        assert!(
            err.to_string()
                .ends_with("is working on campaign fast/decode"),
            "{err}"
        );
        drop(held);
        RunLock::acquire(&path, "fast/decode").unwrap();
    }
}
