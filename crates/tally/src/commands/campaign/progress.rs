//! The terminal side of a running campaign: a progress line per sample in flight (candidate,
//! sample i of n, elapsed against the timeout) that exists only on a terminal, verdict and note lines on standard error,
//! and SIGINT, SIGTERM and SIGHUP wired to the runner's cancellation token.

use std::collections::{HashMap, HashSet};
use std::io::IsTerminal;
use std::sync::Mutex;
use std::sync::atomic::Ordering;
use std::thread::ThreadId;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use tally_engine::{Observer, SampleStart};
use tally_model::{CandidateId, Verdict};
use tally_runner::CancelToken;

/// Shows engine events on standard error. Several workers of one `tally run`
/// (`docs/team.md#slurm-slots`) share it, each on a thread of its own: each thread's sample has
/// its own line, drawn together under the notes.
pub struct Progress {
    /// The progress lines of the samples in flight, by the thread that runs them.
    bars: Mutex<HashMap<ThreadId, ProgressBar>>,
    multi: MultiProgress,
    on_terminal: bool,
    /// The threads whose sample has started and not finished (what Ctrl-C interrupted).
    in_flight: Mutex<HashSet<ThreadId>>,
    /// The failures of the samples printed since their candidate's last verdict line: a crash's
    /// reason quotes one, and it is printed once.
    failures: Mutex<Vec<(CandidateId, String)>>,
}

impl Progress {
    /// A progress display; the lines are drawn only when standard error is a terminal.
    pub fn new() -> Self {
        Self {
            bars: Mutex::new(HashMap::new()),
            multi: MultiProgress::with_draw_target(ProgressDrawTarget::stderr()),
            on_terminal: std::io::stderr().is_terminal(),
            in_flight: Mutex::new(HashSet::new()),
            failures: Mutex::new(Vec::new()),
        }
    }

    /// How many samples were running when the engines returned (interrupted ones).
    pub fn samples_in_flight(&self) -> usize {
        self.in_flight
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .len()
    }

    fn line(&self, text: &str) {
        let bars = self.bars.lock().unwrap_or_else(|e| e.into_inner());
        if bars.is_empty() || self.multi.println(text).is_err() {
            crate::printer::note(text);
        }
    }
}

impl Observer for Progress {
    fn sample_started(&self, start: &SampleStart) {
        let me = std::thread::current().id();
        self.in_flight
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(me);
        if !self.on_terminal {
            return;
        }
        // Drawn only once it says what it shows.
        let bar = ProgressBar::hidden();
        bar.set_style(
            ProgressStyle::with_template("{spinner} {msg} · {elapsed} of {prefix}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar.set_prefix(format!("{:.0}s timeout", start.timeout.as_secs_f64()));
        bar.set_message(format!(
            "{} · sample {} of {} ({})",
            start.candidate,
            start.position + 1,
            start.of,
            start.side
        ));
        let bar = self.multi.add(bar);
        bar.enable_steady_tick(Duration::from_millis(200));
        let replaced = self
            .bars
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(me, bar);
        if let Some(old) = replaced {
            old.finish_and_clear();
            self.multi.remove(&old);
        }
    }

    fn sample_finished(&self, start: &SampleStart, seconds: f64, error: Option<&str>) {
        let me = std::thread::current().id();
        // An interrupted sample is finished only by the next run's recovery: still in flight.
        if error != Some("interrupted") {
            self.in_flight
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&me);
        }
        let bar = self
            .bars
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&me);
        if let Some(bar) = bar {
            bar.finish_and_clear();
            self.multi.remove(&bar);
        }
        if let Some(error) = error {
            self.failures
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((start.candidate, error.to_owned()));
            self.line(&format!(
                "{} {} sample {} failed after {seconds:.1}s: {error}",
                start.candidate, start.side, start.sample
            ));
        }
    }

    fn judged(&self, candidate: CandidateId, verdict: Verdict, reason: &str) {
        // A candidate left pending (its verdict rule failed) is reported by the engine's note.
        if verdict == Verdict::Pending {
            return;
        }
        let printed: Vec<String> = {
            let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
            let (own, others) = std::mem::take(&mut *failures)
                .into_iter()
                .partition(|(c, _)| *c == candidate);
            *failures = others;
            own.into_iter().map(|(_, f)| f).collect()
        };
        // A failure already printed with its sample is not printed again.
        let reason = printed
            .iter()
            .find_map(|f| reason.strip_suffix(f.as_str())?.strip_suffix(": "))
            .map_or_else(
                || reason.to_owned(),
                |head| format!("{head} (the failed sample above)"),
            );
        self.line(&format!("{candidate}: {verdict} — {reason}"));
    }

    fn note(&self, message: &str) {
        self.line(message);
    }
}

/// A cancellation token that SIGINT (Ctrl-C), SIGTERM (`timeout`, `kill`, a scheduler) and SIGHUP
/// (a closed terminal or SSH session) cancel: the sample in flight is killed with its process
/// group and recorded, its checkout removed (once installed; later calls share the token).
pub fn interrupt_token() -> CancelToken {
    static TOKEN: std::sync::OnceLock<CancelToken> = std::sync::OnceLock::new();
    TOKEN
        .get_or_init(|| {
            let token = CancelToken::new();
            let handler_token = token.clone();
            use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
            if let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])
            {
                // The signals arrive on this thread, where taking the token's lock is fine.
                std::thread::spawn(move || {
                    for signal in signals.forever() {
                        let _ = RECEIVED.compare_exchange(
                            0,
                            signal,
                            Ordering::SeqCst,
                            Ordering::SeqCst,
                        );
                        handler_token.cancel();
                    }
                });
            }
            token
        })
        .clone()
}

/// The first of SIGINT, SIGTERM, SIGHUP that arrived (0: none).
static RECEIVED: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// The signal that interrupted the command: its number and name (SIGINT when none was seen,
/// e.g. a cancellation that came from elsewhere).
pub fn interrupting_signal() -> (i32, &'static str) {
    match RECEIVED.load(Ordering::SeqCst) {
        signal_hook::consts::SIGTERM => (signal_hook::consts::SIGTERM, "SIGTERM"),
        signal_hook::consts::SIGHUP => (signal_hook::consts::SIGHUP, "SIGHUP"),
        _ => (signal_hook::consts::SIGINT, "SIGINT"),
    }
}
