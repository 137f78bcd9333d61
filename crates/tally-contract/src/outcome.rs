//! How an attempt ended ([`Outcome`]) and why it failed ([`Failure`], one sentence each), as
//! every [`SampleRunner`](crate::SampleRunner) reports them and the store records them.
//!
//! The retry rule of `docs/campaign.md#one-sample` lives here too, because the trait's
//! `run_sample` applies it for every runner: only a leader killed by SIGTERM, SIGINT, SIGHUP or
//! SIGKILL that tally did not send is worth a second attempt.
//!
//! Deliberately absent: classifying a finished process into a failure (the runner does that
//! from its metrics and units file) and any process library: signals are Linux's numbers, named
//! by a table (`tally-process` checks it against the system's).

use std::fmt;
use std::time::Duration;

/// The most characters of stderr's last meaningful line a non-zero exit quotes (a longer line
/// is cut, ending with `…`); the whole stderr is in the sample's log file.
pub const STDERR_LINE_CHARS: usize = 300;

/// SIGHUP, SIGINT, SIGKILL and SIGTERM: the signals from outside that warrant one retry.
const RETRYABLE_SIGNALS: [i32; 4] = [15, 2, 1, 9];

/// Linux's signal names by number, from 1 (the generic numbering of x86, ARM and RISC-V).
const SIGNAL_NAMES: [&str; 31] = [
    "SIGHUP",
    "SIGINT",
    "SIGQUIT",
    "SIGILL",
    "SIGTRAP",
    "SIGABRT",
    "SIGBUS",
    "SIGFPE",
    "SIGKILL",
    "SIGUSR1",
    "SIGSEGV",
    "SIGUSR2",
    "SIGPIPE",
    "SIGALRM",
    "SIGTERM",
    "SIGSTKFLT",
    "SIGCHLD",
    "SIGCONT",
    "SIGSTOP",
    "SIGTSTP",
    "SIGTTIN",
    "SIGTTOU",
    "SIGURG",
    "SIGXCPU",
    "SIGXFSZ",
    "SIGVTALRM",
    "SIGPROF",
    "SIGWINCH",
    "SIGIO",
    "SIGPWR",
    "SIGSYS",
];

/// How one attempt's process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The command exited with this status code (0 is success as far as the process goes).
    Exited(i32),
    /// The command's leader was killed by this signal, which tally did not send (signals tally
    /// sends are reported as [`TimedOut`](Self::TimedOut) or [`Cancelled`](Self::Cancelled)).
    Signalled(i32),
    /// It ran past the timeout and tally killed its process group.
    TimedOut,
    /// The cancellation token fired (Ctrl-C) and tally killed its process group, or it fired
    /// before the command started.
    Cancelled,
    /// The command could not be started (the text says why).
    SpawnFailed(String),
    /// The checkout could not be made (the text says why); nothing ran.
    CheckoutFailed(String),
    /// A batch system (Slurm) ended the job before the command could report how it ended — its
    /// time limit, a node failure, a cancellation by someone else; the text is the batch
    /// system's state and reason (`docs/team.md#executor`).
    JobEnded(String),
}

impl Outcome {
    /// Whether the command was killed by a signal from outside that warrants one retry
    /// (SIGTERM, SIGINT, SIGHUP or SIGKILL, none of them sent by tally).
    pub fn killed_from_outside(&self) -> bool {
        matches!(self, Self::Signalled(sig) if RETRYABLE_SIGNALS.contains(sig))
    }
}

/// Why an attempt failed. [`Display`](fmt::Display) gives the one-sentence `error` that the
/// store keeps with the measurement.
#[derive(Debug, Clone, PartialEq)]
pub enum Failure {
    /// Ran past `evaluate_timeout`.
    TimedOut {
        /// The limit it ran into.
        limit: Duration,
    },
    /// Exited with a non-zero status.
    ExitStatus {
        /// The status code.
        code: i32,
        /// The last line of stderr with a letter or digit in it, trimmed, paths inside the
        /// checkout written relative to it, at most [`STDERR_LINE_CHARS`] characters (empty:
        /// no such line).
        stderr_line: String,
    },
    /// Killed by a signal tally did not send.
    Signal {
        /// The signal number.
        signal: i32,
    },
    /// Exited 0 without printing every required metric.
    MissingMetrics {
        /// The missing names, sorted.
        names: Vec<String>,
    },
    /// Exited 0 with a units file that does not check out.
    BadUnits {
        /// Why, one clause.
        why: String,
    },
    /// Exited 0 with an evidence file that cannot be read, resolved or accounted.
    BadEvidence {
        /// Why: the reader's error, which names the kept file and the line.
        why: String,
    },
    /// The checkout could not be made.
    Checkout {
        /// Why (git's message).
        why: String,
    },
    /// The command could not be started.
    Spawn {
        /// Why.
        why: String,
    },
    /// A batch system ended the job (its time limit, a node failure, ...).
    JobEnded {
        /// The batch system's state and reason, one clause.
        why: String,
    },
    /// Stopped by the cancellation token (Ctrl-C).
    Interrupted,
    /// The benchmark's output could not be kept whole (a log write failed: a full disk); what
    /// it printed cannot be trusted to be all it printed.
    Log {
        /// Why: the write's error, naming the log file.
        why: String,
    },
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TimedOut { limit } => write!(
                f,
                "the evaluate command timed out after {} s (evaluate_timeout) and its process \
                 group was killed",
                limit.as_secs_f64()
            ),
            Self::ExitStatus { code, stderr_line } if stderr_line.is_empty() => write!(
                f,
                "the evaluate command exited with status {code} and wrote nothing on stderr"
            ),
            Self::ExitStatus { code, stderr_line } => write!(
                f,
                "the evaluate command exited with status {code}; stderr ends with: {}",
                stderr_line.replace(['\r', '\n'], " ")
            ),
            Self::Signal { signal } => write!(
                f,
                "the evaluate command was killed by signal {signal} ({}), not sent by tally",
                signal_name(*signal)
            ),
            Self::MissingMetrics { names } => write!(
                f,
                "the evaluate command exited 0 but did not print the required metric{} {} \
                 (expected a stdout line `METRIC {}=<number>`)",
                if names.len() == 1 { "" } else { "s" },
                names.join(", "),
                names.first().map_or("name", String::as_str)
            ),
            Self::BadUnits { why } => write!(f, "bad units file: {why}"),
            Self::BadEvidence { why } => write!(f, "bad evidence file: {why}"),
            Self::Checkout { why } => write!(f, "could not check out the revision: {why}"),
            Self::Spawn { why } => f.write_str(why),
            Self::JobEnded { why } => write!(f, "the batch system ended the job: {why}"),
            Self::Interrupted => f.write_str("interrupted"),
            Self::Log { why } => write!(f, "the benchmark's output could not be kept: {why}"),
        }
    }
}

/// Whether a recorded `error` (a [`Failure`]'s sentence) is that of an attempt killed from
/// outside, which the retry rule follows with a second attempt: a run killed before that retry
/// was recorded leaves the retry to the run that resumes the evaluation
/// (`docs/team.md#adopting`).
pub fn error_is_retried(error: &str) -> bool {
    RETRYABLE_SIGNALS
        .iter()
        .any(|&signal| error.starts_with(&Failure::Signal { signal }.to_string()))
}

/// `SIGTERM`-style name of a signal number, or `unknown signal`.
pub fn signal_name(signal: i32) -> &'static str {
    usize::try_from(signal)
        .ok()
        .and_then(|n| n.checked_sub(1))
        .and_then(|i| SIGNAL_NAMES.get(i))
        .copied()
        .unwrap_or("unknown signal")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_errors_of_attempts_killed_from_outside_are_retried() {
        for signal in [1, 2, 9, 15] {
            assert!(error_is_retried(&Failure::Signal { signal }.to_string()));
        }
        assert!(!error_is_retried(
            &Failure::Signal { signal: 11 }.to_string()
        ));
        assert!(!error_is_retried("interrupted"));
        assert!(!error_is_retried(
            &Failure::ExitStatus {
                code: 143,
                stderr_line: String::new()
            }
            .to_string()
        ));
    }

    #[test]
    fn signals_are_named_by_their_linux_numbers() {
        assert_eq!(signal_name(9), "SIGKILL");
        assert_eq!(signal_name(15), "SIGTERM");
        assert_eq!(signal_name(31), "SIGSYS");
        for unknown in [i32::MIN, -1, 0, 32, 64] {
            assert_eq!(signal_name(unknown), "unknown signal");
        }
    }
}
