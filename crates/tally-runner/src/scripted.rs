//! [`ScriptedRunner`]: a fake [`SampleRunner`] for tests (hyperfine's `MockExecutor` pattern).
//!
//! Owns: answering samples from canned results — stdout text, exit outcome, stderr, a units file,
//! a wall time, the GPU busy time of an evidence file — without git or processes, so campaign
//! logic is tested exactly and without timing noise. The canned stdout goes through the real
//! METRIC scanner and the canned result through the real classification, and the retry rule is
//! the trait's own, so a fake attempt fails or succeeds exactly as a real one with the same
//! output would. It records every request it served.
//!
//! Deliberately absent: any I/O (logs are `None`). Meant for tests, including the engine's; it is
//! compiled into the crate so other crates' tests can use it.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tally_contract::{
    Attempt, CancelToken, Evidence, EvidenceFile, Outcome, SampleRequest, SampleRunner,
};

use crate::metric::MetricScanner;
use crate::outcome::{Finished, classify};

/// One canned attempt.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptedAttempt {
    /// How the process "ended".
    pub outcome: Outcome,
    /// What it "printed" on stdout (parsed with the METRIC grammar).
    pub stdout: String,
    /// What it "printed" on stderr (quoted by a non-zero exit).
    pub stderr: String,
    /// The units file it "wrote", if any.
    pub units_json: Option<String>,
    /// Its wall time.
    pub wall: Duration,
    /// The GPU busy time of the evidence file it "wrote", if any (the artifact path is
    /// `scripted.evidence.jsonl`; accounted only when the attempt succeeds, as a real one).
    pub gpu_busy_ns: Option<u64>,
}

impl ScriptedAttempt {
    /// Exits 0 after printing `stdout`; one second of wall time.
    pub fn prints(stdout: &str) -> Self {
        Self {
            outcome: Outcome::Exited(0),
            stdout: stdout.to_owned(),
            stderr: String::new(),
            units_json: None,
            wall: Duration::from_secs(1),
            gpu_busy_ns: None,
        }
    }
    /// Ends with `outcome` after printing `stdout`.
    pub fn ends(outcome: Outcome, stdout: &str) -> Self {
        Self {
            outcome,
            ..Self::prints(stdout)
        }
    }
    /// With this stderr.
    pub fn with_stderr(mut self, stderr: &str) -> Self {
        self.stderr = stderr.to_owned();
        self
    }
    /// With this units file.
    pub fn with_units(mut self, json: &str) -> Self {
        self.units_json = Some(json.to_owned());
        self
    }
    /// With this wall time.
    pub fn with_wall(mut self, wall: Duration) -> Self {
        self.wall = wall;
        self
    }
    /// With an evidence file that accounts for this GPU busy time.
    pub fn with_gpu_busy_ns(mut self, gpu_busy_ns: u64) -> Self {
        self.gpu_busy_ns = Some(gpu_busy_ns);
        self
    }
}

type Responder = Box<dyn FnMut(&SampleRequest, u32) -> ScriptedAttempt + Send>;

/// A fake runner answering from a script. For tests only.
pub struct ScriptedRunner {
    respond: Mutex<Responder>,
    served: Mutex<Vec<(SampleRequest, u32)>>,
    adopts: bool,
}

impl std::fmt::Debug for ScriptedRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedRunner")
            .field("served", &self.requests().len())
            .finish()
    }
}

impl ScriptedRunner {
    /// Answers attempts in call order from `script`. Running past its end panics with the
    /// request that found it empty (a test that asks for more samples than it scripted is wrong).
    pub fn new(script: impl IntoIterator<Item = ScriptedAttempt>) -> Self {
        let mut queue: VecDeque<ScriptedAttempt> = script.into_iter().collect();
        Self::from_fn(move |request, attempt| {
            queue.pop_front().unwrap_or_else(|| {
                panic!(
                    "ScriptedRunner ran out of scripted attempts at {} sample {} attempt {attempt} \
                     of candidate {}",
                    request.side, request.sample, request.candidate
                )
            })
        })
    }

    /// Answers each attempt by calling `respond` with the request and attempt number (1 or 2).
    pub fn from_fn(
        respond: impl FnMut(&SampleRequest, u32) -> ScriptedAttempt + Send + 'static,
    ) -> Self {
        Self {
            respond: Mutex::new(Box::new(respond)),
            served: Mutex::new(Vec::new()),
            adopts: false,
        }
    }

    /// Says it adopts its attempts after a killed run, as the Slurm runner does
    /// ([`SampleRunner::adopts_attempts`]): the engine then resumes evaluations a killed run left.
    pub fn adopting(mut self) -> Self {
        self.adopts = true;
        self
    }

    /// Every request served so far with its attempt number, in order.
    pub fn requests(&self) -> Vec<(SampleRequest, u32)> {
        self.served
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl SampleRunner for ScriptedRunner {
    fn adopts_attempts(&self) -> bool {
        self.adopts
    }

    fn run_attempt(&self, request: &SampleRequest, attempt: u32, cancel: &CancelToken) -> Attempt {
        let scripted = if cancel.is_cancelled() {
            // As the real runner: a cancelled token starts nothing.
            ScriptedAttempt {
                wall: Duration::ZERO,
                ..ScriptedAttempt::ends(Outcome::Cancelled, "")
            }
        } else {
            self.served
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push((request.clone(), attempt));
            (self.respond.lock().unwrap_or_else(PoisonError::into_inner))(request, attempt)
        };
        let mut scanner = MetricScanner::new();
        scanner.feed(scripted.stdout.as_bytes());
        let metrics = scanner.metrics();
        let done = Finished {
            outcome: &scripted.outcome,
            timeout: request.command.timeout,
            stderr: &scripted.stderr,
            metrics: &metrics,
            required: &request.required_metrics,
            units_file: scripted.units_json.clone().map(Ok),
        };
        let (units, failure) = match classify(done) {
            Ok(units) => (units, None),
            Err(failure) => (None, Some(failure)),
        };
        let succeeded = failure.is_none();
        Attempt {
            attempt,
            outcome: scripted.outcome,
            wall: scripted.wall,
            metrics,
            units,
            failure,
            logs: None,
            retried: false,
            stray_pids: Vec::new(),
            held: None,
            evidence: scripted.gpu_busy_ns.map(|gpu_busy_ns| EvidenceFile {
                artifact: PathBuf::from("scripted.evidence.jsonl"),
                accounted: succeeded.then_some(Evidence {
                    gpu_busy_ns,
                    devices: 1,
                }),
            }),
        }
    }
}
