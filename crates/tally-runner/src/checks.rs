//! The `[checks]` commands of one candidate (`docs/campaign.md#checks`), the way a sample runs:
//! a fresh worktree of the revision ([`Checkout`]), each command in its own process group with
//! the timeout and cancellation (`tally_process::run_in_group`, stray processes swept by the
//! checkout's marker), output to `check-<i>.stdout.log` / `.stderr.log`, the checkout removed.
//! The first command that does not exit 0 fails the checks, with the last lines of its output.

use std::ffi::OsString;
use std::path::Path;

use tally_contract::{CancelToken, CheckOutcome, CheckRequest, signal_name};
use tally_process::{Command, End, Keep, Sink, SpawnError, run_in_group};

use crate::git::Git;
use crate::worktree::{Checkout, UNITS_VAR, marker};

/// Bytes of each stream kept in memory for the failure's last lines (the logs keep everything).
const TAIL_BYTES: usize = 8 * 1024;
/// Lines of output quoted in a failure.
const TAIL_LINES: usize = 5;
/// Characters of output quoted in a failure, at most.
const TAIL_CHARS: usize = 600;

/// Runs the request's commands in one checkout under `root`, in order, stopping at the first
/// failure.
pub(crate) fn run_checks(
    git: &Git,
    root: &Path,
    request: &CheckRequest,
    cancel: &CancelToken,
) -> CheckOutcome {
    let Some(first) = request.commands.first() else {
        return CheckOutcome::Passed;
    };
    if cancel.is_cancelled() {
        return CheckOutcome::Interrupted;
    }
    let checkout = match Checkout::create(
        git,
        root,
        &format!("check-{}", request.candidate),
        &request.revision,
        &request.links,
    ) {
        Ok(checkout) => checkout,
        Err(why) => {
            return CheckOutcome::Failed {
                name: first.name.clone(),
                why: format!("the checkout failed: {why}"),
            };
        }
    };
    let units = checkout.units_file();
    for (i, check) in request.commands.iter().enumerate() {
        let stdout_log = request.log_dir.join(format!("check-{i}.stdout.log"));
        let stderr_log = request.log_dir.join(format!("check-{i}.stderr.log"));
        let env: Vec<(OsString, OsString)> = vec![
            (UNITS_VAR.into(), units.clone().into_os_string()),
            ("TALLY_CANDIDATE".into(), request.candidate.clone().into()),
            ("TALLY_CHECK".into(), check.name.clone().into()),
        ];
        let command = Command {
            argv: &check.argv,
            dir: Some(checkout.worktree()),
            env,
            stdin: None,
            stdout: Sink {
                log: Some(&stdout_log),
                feed: None,
                keep: Keep::Tail(TAIL_BYTES),
            },
            stderr: Sink {
                log: Some(&stderr_log),
                feed: None,
                keep: Keep::Tail(TAIL_BYTES),
            },
        };
        let run = match run_in_group(command, &marker(&units), request.timeout, cancel) {
            Ok(run) => run,
            Err(why) => {
                return CheckOutcome::Failed {
                    name: check.name.clone(),
                    why: match why {
                        SpawnError::EmptyCommand => "the command is empty".to_owned(),
                        SpawnError::Log(err) => format!("could not create the log file: {err}"),
                        SpawnError::Start { program, source } => {
                            format!("could not start `{program}`: {source}")
                        }
                    },
                };
            }
        };
        let ended = match run.end {
            End::Exited(0) => continue,
            End::Cancelled => return CheckOutcome::Interrupted,
            End::Exited(code) => format!("exit {code}"),
            End::Signalled(signal) => format!("killed by {}", signal_name(signal)),
            End::TimedOut => format!("timed out after {} s", request.timeout.as_secs_f64()),
        };
        let tail = last_lines(&run.stderr)
            .or_else(|| last_lines(&run.stdout))
            .map(|t| format!(": {t}"))
            .unwrap_or_default();
        return CheckOutcome::Failed {
            name: check.name.clone(),
            why: format!("{ended}{tail}"),
        };
    }
    CheckOutcome::Passed
}

/// The last non-empty lines of `bytes`, joined with ` | `, at most [`TAIL_CHARS`] characters
/// (the end kept); `None` when there are none.
fn last_lines(bytes: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty())
        .collect();
    if lines.is_empty() {
        return None;
    }
    let joined = lines[lines.len().saturating_sub(TAIL_LINES)..].join(" | ");
    let count = joined.chars().count();
    Some(if count > TAIL_CHARS {
        let kept: String = joined.chars().skip(count - TAIL_CHARS).collect();
        format!("…{kept}")
    } else {
        joined
    })
}

#[cfg(test)]
mod tests {
    use super::last_lines;

    #[test]
    fn the_last_five_non_empty_lines_are_quoted() {
        let text = b"1\n2\n\n3\n4\n5\n6\n  \n";
        assert_eq!(last_lines(text).as_deref(), Some("2 | 3 | 4 | 5 | 6"));
        assert_eq!(last_lines(b"\n \n"), None);
        let long = "x".repeat(1000);
        let quoted = last_lines(long.as_bytes()).unwrap();
        assert!(quoted.starts_with('…') && quoted.chars().count() == 601);
    }
}
