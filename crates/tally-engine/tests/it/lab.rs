//! [`Lab`]: one campaign wired to an in-memory store, a scripted runner, a fixed clock and an
//! observer that records what the engine said, so each test drives the real [`Engine`] and
//! asserts exact verdicts, reasons, samples and store records.
//!
//! The runner answers through a responder the test can swap at any time; [`Lab::values`] is the
//! common case (a `METRIC score=<v>` line whose value depends on the revision, the side and the
//! sample). Revisions are fake 40-hex commit ids, [`rev`]`(n)` for candidate `n`'s revision.
//! This module holds no assertions about the engine; the test modules do.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tally_config::{Settings, parse_settings};
use tally_engine::{Clock, Engine, FixedClock, InitOutcome, Observer, Providers, RunEnd};
use tally_model::{
    Actor, Campaign, CampaignState, Candidate, CandidateId, Evaluation, EvidenceRef, Measurement,
    Side as MeasurementSide, UnitValues, UnixMillis, Verdict,
};
use tally_plugin::Registry;
use tally_runner::{CancelToken, CommitId, SampleRequest, ScriptedAttempt, ScriptedRunner, Side};
use tally_store::{NewMeasurement, SqliteStore, Store};

/// When every lab campaign starts: 2023-11-14T22:13:20Z.
pub const START_MS: i64 = 1_700_000_000_000;

/// The fake full commit id of candidate `n` (the baseline is `rev(0)`).
pub fn rev(n: u32) -> String {
    format!("{:040x}", 0xabc0_0000_u64 + u64::from(n))
}

/// The candidate number a fake revision stands for.
pub fn rev_number(revision: &CommitId) -> u32 {
    let value = u64::from_str_radix(revision.as_str(), 16).expect("a lab revision");
    u32::try_from(value - 0xabc0_0000).expect("a lab revision")
}

/// `candidate#n`.
pub fn id(n: u32) -> CandidateId {
    CandidateId(n)
}

/// A successful sample printing `METRIC score=<value>`, one second long.
pub fn score(value: f64) -> ScriptedAttempt {
    ScriptedAttempt::prints(&format!("METRIC score={value}\n"))
}

/// A successful sample printing every `(name, value)` as a METRIC line.
pub fn metrics(values: &[(&str, f64)]) -> ScriptedAttempt {
    let text: String = values
        .iter()
        .map(|(name, value)| format!("METRIC {name}={value}\n"))
        .collect();
    ScriptedAttempt::prints(&text)
}

/// A `tally.toml` with one primary metric `score` (higher is better) at `repeats`, followed by
/// `extra` (more `[[metrics]]`, `[plugins.*]`, `[status]` tables).
pub fn config(repeats: u32, extra: &str) -> String {
    format!(
        "name = \"speed\"\n\
         evaluate = [\"./evaluate.sh\"]\n\
         evaluate_timeout = 60\n\
         \n\
         [[metrics]]\n\
         name = \"score\"\n\
         direction = \"higher\"\n\
         role = \"primary\"\n\
         repeats = {repeats}\n\
         {extra}"
    )
}

/// One served attempt, as the runner saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Served {
    /// The candidate number of the revision.
    pub rev: u32,
    /// `candidate` or `bar`.
    pub side: Side,
    /// `TALLY_SAMPLE`.
    pub sample: u32,
    /// 1, or 2 for a retry.
    pub attempt: u32,
}

/// What a responder is asked: which revision, side, sample and attempt, and how many times this
/// revision was served on this side before (`nth`, from 0) — so a second evaluation of the same
/// revision can answer differently.
#[derive(Clone, Copy, Debug)]
pub struct Ask {
    /// The candidate number of the revision.
    pub rev: u32,
    /// The side.
    pub side: Side,
    /// The sample index.
    pub sample: u32,
    /// The attempt number.
    pub attempt: u32,
    /// Earlier attempts served for this (revision, side).
    pub nth: u32,
}

type Responder = Box<dyn FnMut(Ask) -> ScriptedAttempt + Send>;

/// An observer that keeps every note and verdict event.
#[derive(Debug, Default)]
pub struct Recorder {
    /// `note` messages, in order.
    pub notes: Mutex<Vec<String>>,
    /// `judged` events, in order.
    pub judged: Mutex<Vec<(CandidateId, Verdict, String)>>,
}

impl Observer for Recorder {
    fn judged(&self, candidate: CandidateId, verdict: Verdict, reason: &str) {
        self.judged
            .lock()
            .unwrap()
            .push((candidate, verdict, reason.to_string()));
    }
    fn note(&self, message: &str) {
        self.notes.lock().unwrap().push(message.to_string());
    }
}

/// A campaign under test.
pub struct Lab {
    /// The store (shared so a responder can write to it, as another process would).
    pub store: Arc<SqliteStore>,
    /// The scripted runner.
    pub runner: ScriptedRunner,
    /// The clock.
    pub clock: FixedClock,
    /// What the engine said.
    pub observer: Recorder,
    /// The current `tally.toml` text.
    pub text: String,
    /// Its settings.
    pub settings: Settings,
    /// Its providers.
    pub providers: Providers,
    registry: fn() -> Registry,
    responder: Arc<Mutex<Responder>>,
}

impl Lab {
    /// A lab over `tally.toml` text, with the built-in providers. Every sample prints
    /// `score=100` until told otherwise.
    pub fn new(text: &str) -> Self {
        Self::with_registry(text, tally_providers::builtins)
    }

    /// A lab whose providers come from `registry`.
    pub fn with_registry(text: &str, registry: fn() -> Registry) -> Self {
        let (settings, providers) = load(text, registry);
        let responder: Arc<Mutex<Responder>> = Arc::new(Mutex::new(Box::new(|_| score(100.0))));
        let counts: Mutex<BTreeMap<(u32, &'static str), u32>> = Mutex::new(BTreeMap::new());
        let shared = Arc::clone(&responder);
        let runner = ScriptedRunner::from_fn(move |request: &SampleRequest, attempt| {
            let rev = rev_number(&request.revision);
            let nth = {
                let mut counts = counts.lock().unwrap_or_else(PoisonError::into_inner);
                let n = counts.entry((rev, request.side.as_str())).or_insert(0);
                *n += 1;
                *n - 1
            };
            let ask = Ask {
                rev,
                side: request.side,
                sample: request.sample,
                attempt,
                nth,
            };
            (shared.lock().unwrap_or_else(PoisonError::into_inner))(ask)
        });
        Self {
            store: Arc::new(SqliteStore::open_in_memory().expect("in-memory store")),
            runner,
            clock: FixedClock::at(START_MS),
            observer: Recorder::default(),
            text: text.to_string(),
            settings,
            providers,
            registry,
            responder,
        }
    }

    /// The same lab with a runner that adopts its attempts after a killed run (as Slurm's).
    pub fn adopting(mut self) -> Self {
        let runner = std::mem::replace(&mut self.runner, ScriptedRunner::new([]));
        self.runner = runner.adopting();
        self
    }

    /// Answers every attempt from now on with `respond`.
    pub fn respond(&self, respond: impl FnMut(Ask) -> ScriptedAttempt + Send + 'static) {
        *self
            .responder
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Box::new(respond);
    }

    /// Answers every attempt with a successful `METRIC score=<value(rev, side, sample)>`.
    pub fn values(&self, value: impl Fn(u32, Side, u32) -> f64 + Send + 'static) {
        self.respond(move |ask| score(value(ask.rev, ask.side, ask.sample)));
    }

    /// Swaps `tally.toml` for `text` (the store keeps its history).
    pub fn reconfigure(&mut self, text: &str) {
        let (settings, providers) = load(text, self.registry);
        self.text = text.to_string();
        self.settings = settings;
        self.providers = providers;
    }

    /// An engine over the lab's parts.
    pub fn engine(&self) -> Engine<'_> {
        Engine::new(
            &*self.store,
            &self.runner,
            &self.settings,
            &self.providers,
            &self.text,
            &self.clock,
            &self.observer,
            PathBuf::from("/nonexistent/tally-logs"),
        )
    }

    /// `tally init` with `rev(0)` as HEAD.
    pub fn init(&self) -> InitOutcome {
        let head = CommitId::parse(&rev(0)).expect("a full commit id");
        self.engine()
            .init(&head, &CancelToken::new())
            .expect("init works")
    }

    /// `tally candidate add` of `rev(n)` for each `n`.
    pub fn add(&self, numbers: &[u32]) -> Vec<Candidate> {
        let revisions: Vec<CommitId> = numbers
            .iter()
            .map(|n| CommitId::parse(&rev(*n)).expect("a full commit id"))
            .collect();
        self.engine()
            .add_candidates(&revisions, None, "tester")
            .expect("candidates added")
    }

    /// `tally run --until-idle`.
    pub fn run(&self) -> RunEnd {
        self.engine()
            .run(true, &CancelToken::new())
            .expect("run works")
    }

    /// The registered campaign.
    pub fn campaign(&self) -> Campaign {
        self.engine().campaign().expect("registered")
    }

    /// The campaign's state and reason.
    pub fn state(&self) -> (CampaignState, Option<String>) {
        let c = self.campaign();
        (c.state, c.reason)
    }

    /// The head.
    pub fn head(&self) -> Option<CandidateId> {
        self.campaign().head
    }

    /// One candidate.
    pub fn candidate(&self, n: u32) -> Candidate {
        self.engine()
            .candidate(id(n))
            .expect("the candidate exists")
    }

    /// A candidate's verdict and reason.
    pub fn verdict(&self, n: u32) -> (Verdict, String) {
        let c = self.candidate(n);
        (c.verdict, c.reason.unwrap_or_default())
    }

    /// Every measurement of the campaign, by id.
    pub fn measurements(&self) -> Vec<Measurement> {
        self.store
            .list_measurements(self.campaign().id)
            .expect("measurements")
    }

    /// Every evaluation of the campaign, by id.
    pub fn evaluations(&self) -> Vec<Evaluation> {
        self.store
            .list_evaluations(self.campaign().id)
            .expect("evaluations")
    }

    /// Every attempt the runner served, in order.
    pub fn served(&self) -> Vec<Served> {
        self.runner
            .requests()
            .into_iter()
            .map(|(request, attempt)| Served {
                rev: rev_number(&request.revision),
                side: request.side,
                sample: request.sample,
                attempt,
            })
            .collect()
    }

    /// The served attempts as `C<rev>.<sample>` / `B<rev>.<sample>` words (`+` marks a retry).
    pub fn order(&self) -> Vec<String> {
        self.served()
            .iter()
            .map(|s| {
                let side = match s.side {
                    Side::Candidate => 'C',
                    Side::Bar => 'B',
                };
                let retry = if s.attempt > 1 { "+" } else { "" };
                format!("{side}{}.{}{retry}", s.rev, s.sample)
            })
            .collect()
    }

    /// Forgets nothing, but returns the served words from position `from` on.
    pub fn order_since(&self, from: usize) -> Vec<String> {
        self.order().split_off(from)
    }

    /// The lab clock's now.
    pub fn clock_now(&self) -> UnixMillis {
        self.clock.now()
    }

    /// A successful, unpaired, one-second candidate-side sample of candidate `n` printing
    /// `score=<value>` under the current evaluator, outside any evaluation (set `evaluation`).
    pub fn sample_of(&self, n: u32, value: f64) -> NewMeasurement {
        let now = self.clock_now();
        NewMeasurement {
            campaign: self.campaign().id,
            candidate: id(n),
            evaluation: None,
            side: MeasurementSide::Candidate,
            sample: 0,
            attempt: 1,
            retry_of: None,
            pair: None,
            evaluator: self.engine().evaluator().to_string(),
            rung: None,
            duration_ns: Some(1_000_000_000),
            metrics: [("score".to_string(), value)].into(),
            error: None,
            started: now,
            ended: now,
            stdout_log: None,
            stderr_log: None,
            evidence: EvidenceRef::default(),
            config: None,
            recorded_by: Actor::Loop,
            units: UnitValues::new(),
            held: None,
        }
    }

    /// The notes the engine gave.
    pub fn notes(&self) -> Vec<String> {
        self.observer.notes.lock().unwrap().clone()
    }
}

/// `tally.toml` text read and its providers built, or the test fails with the problems.
fn load(text: &str, registry: fn() -> Registry) -> (Settings, Providers) {
    let settings = parse_settings(text, &registry())
        .unwrap_or_else(|e| panic!("the lab config does not parse:\n{e}\n---\n{text}"));
    let providers = Providers::build(&settings, registry()).unwrap_or_else(|problems| {
        let lines: Vec<String> = problems.iter().map(ToString::to_string).collect();
        panic!("the lab providers do not build:\n{}", lines.join("\n"))
    });
    (settings, providers)
}

/// `n` seconds of wall time.
pub fn secs(n: f64) -> Duration {
    Duration::from_secs_f64(n)
}
