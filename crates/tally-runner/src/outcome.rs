//! Classifying a finished attempt into its [`Failure`], if any; [`Outcome`] and [`Failure`]
//! themselves are `tally-contract`'s (re-exported here).
//!
//! Owns the classification of `docs/campaign.md#one-sample`: the process outcome decides first (timeout,
//! cancellation, a signal, a non-zero exit, a command that could not start, a checkout that could
//! not be made); a clean exit then fails when a required metric was not printed, and then when the
//! units file is bad. (The retry rule — only a leader killed by SIGTERM, SIGINT, SIGHUP or SIGKILL
//! that tally did not send is worth a second attempt — is [`Outcome::killed_from_outside`].)
//!
//! Deliberately absent: processes and files — the inputs arrive as values, so the fake runner
//! classifies canned results exactly as the real one classifies real ones.

use std::collections::BTreeMap;
use std::time::Duration;

pub use tally_contract::{Failure, Outcome, STDERR_LINE_CHARS, signal_name};

use crate::units::{Units, parse_units};

/// The last line of stderr that says something (a letter or a digit in it), trimmed, cut to
/// [`STDERR_LINE_CHARS`] characters with `…`; empty when there is none. The whole stderr is in
/// the sample's log file.
pub(crate) fn stderr_line(stderr: &str) -> String {
    let Some(line) = stderr
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.chars().any(char::is_alphanumeric))
    else {
        return String::new();
    };
    if line.chars().count() <= STDERR_LINE_CHARS {
        return line.to_owned();
    }
    let mut cut: String = line.chars().take(STDERR_LINE_CHARS - 1).collect();
    cut.push('…');
    cut
}

/// `stderr` with the checkout's paths (as given, and as the kernel resolves them) written
/// relative to it: `/home/u/.cache/tally/worktrees/c/bar-0-a1-x/bench.py` becomes `bench.py`.
pub(crate) fn relative_to_checkout(stderr: &str, checkout: &std::path::Path) -> String {
    let mut text = stderr.to_owned();
    let mut roots = vec![checkout.to_path_buf()];
    if let Ok(real) = checkout.canonicalize()
        && real != checkout
    {
        roots.push(real);
    }
    for root in roots {
        let root = root.display().to_string();
        if root.len() > 1 {
            text = text.replace(&format!("{root}/"), "").replace(&root, ".");
        }
    }
    text
}

/// Everything the classification needs about one finished process.
#[derive(Debug)]
pub(crate) struct Finished<'a> {
    pub outcome: &'a Outcome,
    pub timeout: Duration,
    pub stderr: &'a str,
    pub metrics: &'a BTreeMap<String, f64>,
    pub required: &'a [String],
    /// The units file: `None` when it was not written, `Some(Err(why))` when it could not be
    /// taken (`why` is the clause after `bad units file: `).
    pub units_file: Option<Result<String, String>>,
}

/// Classifies a finished process: `Ok(units)` on success, `Err(failure)` otherwise.
pub(crate) fn classify(done: Finished<'_>) -> Result<Option<Units>, Failure> {
    match done.outcome {
        Outcome::Exited(0) => {}
        Outcome::Exited(code) => {
            return Err(Failure::ExitStatus {
                code: *code,
                stderr_line: stderr_line(done.stderr),
            });
        }
        Outcome::Signalled(signal) => return Err(Failure::Signal { signal: *signal }),
        Outcome::TimedOut => {
            return Err(Failure::TimedOut {
                limit: done.timeout,
            });
        }
        Outcome::Cancelled => return Err(Failure::Interrupted),
        Outcome::SpawnFailed(why) => return Err(Failure::Spawn { why: why.clone() }),
        Outcome::CheckoutFailed(why) => return Err(Failure::Checkout { why: why.clone() }),
        Outcome::JobEnded(why) => return Err(Failure::JobEnded { why: why.clone() }),
    }
    let mut missing: Vec<String> = done
        .required
        .iter()
        .filter(|n| !done.metrics.contains_key(*n))
        .cloned()
        .collect();
    if !missing.is_empty() {
        missing.sort();
        missing.dedup();
        return Err(Failure::MissingMetrics { names: missing });
    }
    match done.units_file {
        None => Ok(None),
        Some(Err(why)) => Err(Failure::BadUnits { why }),
        Some(Ok(text)) => parse_units(&text, done.metrics)
            .map(Some)
            .map_err(|why| Failure::BadUnits { why }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finished<'a>(outcome: &'a Outcome, metrics: &'a BTreeMap<String, f64>) -> Finished<'a> {
        Finished {
            outcome,
            timeout: Duration::from_secs(600),
            stderr: "",
            metrics,
            required: &[],
            units_file: None,
        }
    }

    #[test]
    fn each_failure_is_one_sentence() {
        let none = BTreeMap::new();
        let fail = |outcome: Outcome| classify(finished(&outcome, &none)).unwrap_err().to_string();
        assert_eq!(
            fail(Outcome::TimedOut),
            "the evaluate command timed out after 600 s (evaluate_timeout) and its process group \
             was killed"
        );
        assert_eq!(
            fail(Outcome::Signalled(15)),
            "the evaluate command was killed by signal 15 (SIGTERM), not sent by tally"
        );
        assert_eq!(fail(Outcome::Cancelled), "interrupted");
        assert_eq!(
            fail(Outcome::CheckoutFailed("fatal: bad object".into())),
            "could not check out the revision: fatal: bad object"
        );
        assert_eq!(
            fail(Outcome::Exited(2)),
            "the evaluate command exited with status 2 and wrote nothing on stderr"
        );
    }

    #[test]
    fn a_non_zero_exit_quotes_the_last_line_of_stderr_that_says_something() {
        let none = BTreeMap::new();
        let stderr = format!("{}\nValueError: boom  \n  ---\n\n", "x".repeat(1000));
        let outcome = Outcome::Exited(1);
        let mut done = finished(&outcome, &none);
        done.stderr = &stderr;
        let Failure::ExitStatus { stderr_line, .. } = classify(done).unwrap_err() else {
            panic!("expected an exit status failure");
        };
        assert_eq!(stderr_line, "ValueError: boom");
        let sentence = Failure::ExitStatus {
            code: 1,
            stderr_line: "a\nb".into(),
        }
        .to_string();
        assert_eq!(
            sentence,
            "the evaluate command exited with status 1; stderr ends with: a b"
        );
    }

    #[test]
    fn a_long_last_line_is_cut_and_checkout_paths_are_relative() {
        let long = format!("E: {}", "y".repeat(1000));
        let line = stderr_line(&long);
        assert_eq!(line.chars().count(), STDERR_LINE_CHARS);
        assert!(line.starts_with("E: yyy") && line.ends_with("y…"), "{line}");
        assert_eq!(stderr_line(" \n--\n"), "");
        let checkout = std::path::Path::new("/no/such/cache/tally/worktrees/c/bar-0-a1-x");
        assert_eq!(
            relative_to_checkout(
                "File \"/no/such/cache/tally/worktrees/c/bar-0-a1-x/bench/run.py\", line 3 in \
                 /no/such/cache/tally/worktrees/c/bar-0-a1-x",
                checkout
            ),
            "File \"bench/run.py\", line 3 in ."
        );
    }

    #[test]
    fn required_metrics_are_checked_after_a_clean_exit_only() {
        let metrics: BTreeMap<String, f64> = [("a".to_owned(), 1.0)].into();
        let required = ["c".to_owned(), "a".to_owned(), "b".to_owned()];
        let outcome = Outcome::Exited(0);
        let mut done = finished(&outcome, &metrics);
        done.required = &required;
        assert_eq!(
            classify(done).unwrap_err().to_string(),
            "the evaluate command exited 0 but did not print the required metrics b, c \
             (expected a stdout line `METRIC b=<number>`)"
        );
        let outcome = Outcome::Exited(3);
        let mut done = finished(&outcome, &metrics);
        done.required = &required;
        assert!(matches!(
            classify(done),
            Err(Failure::ExitStatus { code: 3, .. })
        ));
    }

    #[test]
    fn units_are_checked_last() {
        let metrics: BTreeMap<String, f64> = [("a".to_owned(), 2.0)].into();
        let outcome = Outcome::Exited(0);
        let mut done = finished(&outcome, &metrics);
        done.units_file = Some(Ok(r#"{"a": {"u1": 1, "u2": 1}}"#.into()));
        assert_eq!(classify(done).unwrap().unwrap()["a"].len(), 2);
        let mut done = finished(&outcome, &metrics);
        done.units_file = Some(Ok(r#"{"a": {}}"#.into()));
        assert_eq!(
            classify(done).unwrap_err().to_string(),
            "bad units file: metric `a` has no units"
        );
    }

    #[test]
    fn only_outside_termination_signals_are_retried() {
        assert!(Outcome::Signalled(15).killed_from_outside());
        assert!(Outcome::Signalled(9).killed_from_outside());
        assert!(Outcome::Signalled(2).killed_from_outside());
        assert!(Outcome::Signalled(1).killed_from_outside());
        assert!(!Outcome::Signalled(11).killed_from_outside());
        assert!(!Outcome::TimedOut.killed_from_outside());
        assert!(!Outcome::Cancelled.killed_from_outside());
        assert!(!Outcome::Exited(143).killed_from_outside());
    }
}
