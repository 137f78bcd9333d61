//! Adopting the agent of a run that a killed `tally run` left unsettled
//! (`docs/implementers.md#crash-safety`): its processes are found by the run's tag in `/proc`
//! (`TALLY_RUN_TAG=<uuid>` in their environment, as the kill path finds them). While any is
//! alive the new `tally run` polls; the run's stored deadline still applies (the wrap-up file
//! `wrap_up` seconds before it, then SIGTERM to every tagged process and SIGKILL
//! [`TERM_GRACE`] later), and Ctrl-C kills them at once. Its exit code cannot be known: the
//! agent is not our child.

use std::path::Path;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use tally_model::UnixMillis;
use tally_process::CancelToken;

use super::agent::TERM_GRACE;

/// How often the tagged processes are looked for.
const POLL: Duration = Duration::from_millis(200);

/// How long killed processes get to disappear from `/proc`.
const KILL_GRACE: Duration = Duration::from_secs(5);

/// What became of an unsettled run's agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Followed {
    /// No process carried the tag when we looked: it died with (or after) the killed `tally run`.
    Gone,
    /// It was alive, was adopted, and its last process exited by itself.
    Exited,
    /// It was alive at its deadline and was killed.
    TimedOut,
    /// `tally run` was interrupted while it waited: the agent was killed.
    Cancelled,
}

/// The marker the run's processes carry.
fn markers(tag: &str) -> [Vec<u8>; 1] {
    [format!("TALLY_RUN_TAG={tag}").into_bytes()]
}

/// Whether a process carrying `tag` is alive.
pub fn alive(tag: &str) -> bool {
    !tally_process::find_marked(&markers(tag)).is_empty()
}

/// Waits for the tagged processes of a run to end, enforcing its `deadline` (the wrap-up file
/// `wrap_file` appears `wrap_up_s` before it).
pub fn follow(
    tag: &str,
    deadline: UnixMillis,
    wrap_up_s: f64,
    wrap_file: &Path,
    cancel: &CancelToken,
) -> Followed {
    let markers = markers(tag);
    if tally_process::find_marked(&markers).is_empty() {
        return Followed::Gone;
    }
    let wrap_at = deadline.0 - (wrap_up_s * 1000.0) as i64;
    loop {
        if cancel.is_cancelled() {
            kill_all(&markers);
            return Followed::Cancelled;
        }
        let now = UnixMillis::now().0;
        if now >= wrap_at && !wrap_file.exists() {
            let _ = std::fs::write(wrap_file, "wrap up: commit your work and exit\n");
        }
        if now >= deadline.0 {
            terminate(&markers, cancel);
            return Followed::TimedOut;
        }
        std::thread::sleep(POLL);
        if tally_process::find_marked(&markers).is_empty() {
            return Followed::Exited;
        }
    }
}

/// SIGTERM to every tagged process, [`TERM_GRACE`] to exit (Ctrl-C cuts it short), then SIGKILL.
fn terminate(markers: &[Vec<u8>], cancel: &CancelToken) {
    tally_process::signal_marked(markers, Signal::SIGTERM);
    let until = Instant::now() + TERM_GRACE;
    while Instant::now() < until && !cancel.is_cancelled() {
        if tally_process::find_marked(markers).is_empty() {
            return;
        }
        std::thread::sleep(POLL);
    }
    kill_all(markers);
}

/// SIGKILL to every tagged process until none is left (or [`KILL_GRACE`] passed).
fn kill_all(markers: &[Vec<u8>]) {
    let until = Instant::now() + KILL_GRACE;
    while !tally_process::kill_marked(markers).is_empty() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
}
