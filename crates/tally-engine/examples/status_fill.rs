//! `status_fill`: builds the store of a large campaign for the `tally status` benchmark
//! (`bench/campaign/`): 10,000 candidates and 100,000 measurements in `REPO/.tally/tally.db`,
//! for the campaign that `REPO/tally.toml` describes.
//!
//! The measurements are recorded under `tally_engine::evaluator_identity` of that `tally.toml`
//! (parsed with the built-in providers, as the binary does), so `tally status -C REPO` computes
//! every mean as in real use. The shape: a baseline of 10 unpaired samples, then one paired
//! judge evaluation of 5 pairs per candidate against the head; every 25th candidate is a keep
//! that moves the head, 1–3 of every 25 interesting, the rest discards; every 50th candidate's
//! last pair has a failed candidate sample. It fills through the public `Store` API, one write
//! transaction per record as the loop does, with `synchronous = OFF` to keep the fill short.
//! It does not time anything: the benchmark times the real binary.
//!
//! Run: `cargo run --release -p tally-engine --example status_fill -- REPO [CANDIDATES]`
//! (default 10,000 candidates; 10 measurements per candidate). Refuses a store that exists.
#![allow(clippy::print_stdout)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use tally_model::{
    Actor, CampaignId, CandidateId, ConfigTextId, EvaluationKind, EvaluationState, EvidenceRef,
    Side, UnixMillis, Verdict,
};
use tally_store::{
    HeadUpdate, NewCampaign, NewCandidate, NewEvaluation, NewMeasurement, SqliteOptions,
    SqliteStore, Store, Synchronous, VerdictWrite, VerdictWriteOutcome,
};

/// Pairs per judge evaluation (so 10 measurements per candidate).
const PAIRS: u32 = 5;

/// What every measurement shares.
struct Fill<'a> {
    store: &'a SqliteStore,
    campaign: CampaignId,
    evaluator: String,
    config: ConfigTextId,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args_os().skip(1);
    let repo = PathBuf::from(args.next().ok_or("usage: status_fill REPO [CANDIDATES]")?);
    let candidates: u32 = match args.next() {
        Some(n) => n
            .to_str()
            .and_then(|n| n.parse().ok())
            .filter(|n| *n >= 1)
            .ok_or("CANDIDATES: expected a whole number of at least 1, such as 10000")?,
        None => 10_000,
    };
    let text = std::fs::read_to_string(repo.join("tally.toml"))
        .map_err(|e| format!("{}/tally.toml: {e}", repo.display()))?;
    let settings = tally_config::parse_settings(&text, &tally_providers::builtins())
        .map_err(|e| format!("{}/tally.toml: {e:?}", repo.display()))?;
    let evaluator = tally_engine::evaluator_identity(&settings);
    let path = repo.join(".tally").join("tally.db");
    if path.exists() {
        return Err(format!("{}: exists; remove it first", path.display()).into());
    }
    std::fs::create_dir_all(path.parent().expect("a parent"))?;
    let start = Instant::now();
    let store = SqliteStore::open_with(
        &path,
        &SqliteOptions {
            synchronous: Synchronous::Off,
            ..SqliteOptions::default()
        },
    )?;
    let campaign = store
        .create_campaign(&NewCampaign {
            name: settings.name.clone(),
            evaluator: evaluator.clone(),
            config_text: text.clone(),
            created: UnixMillis(1_700_000_000_000),
        })?
        .id;
    let config = store.record_config_text(&text)?;
    let fill = Fill {
        store: &store,
        campaign,
        evaluator,
        config,
    };
    fill.campaign(candidates)?;
    println!(
        "filled {} in {:.1} s: campaign `{}`, evaluator {}, {candidates} candidates, {} \
         measurements ({} bytes)",
        path.display(),
        start.elapsed().as_secs_f64(),
        settings.name,
        fill.evaluator,
        candidates * PAIRS * 2,
        std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0)
    );
    Ok(())
}

impl Fill<'_> {
    /// The baseline (kept), then `count - 1` proposals each judged against the head.
    fn campaign(&self, count: u32) -> Result<(), tally_store::StoreError> {
        let proposals: Vec<_> = (0..count)
            .map(|n| NewCandidate {
                revision: revision(n),
                proposed_by: "agent-7".to_owned(),
                note: n.is_multiple_of(3).then(|| format!("try idea {n}")),
                created: UnixMillis(1_700_000_000_000 + i64::from(n)),
            })
            .collect();
        self.store.add_candidates(self.campaign, &proposals[..1])?;
        let mut clock = 1_700_000_100_000_i64;
        let baseline = self.store.queue_evaluation(&NewEvaluation {
            campaign: self.campaign,
            candidate: CandidateId(0),
            bar: None,
            kind: EvaluationKind::Baseline,
            repeats: PAIRS * 2,
            queued: UnixMillis(clock),
        })?;
        self.store
            .start_evaluation(baseline.id, UnixMillis(clock))?;
        for sample in 0..PAIRS * 2 {
            self.store.record_measurement(&NewMeasurement {
                evaluation: Some(baseline.id),
                ..self.measurement(CandidateId(0), 0, sample, clock)
            })?;
            clock += 61_000;
        }
        self.store.end_evaluation(
            baseline.id,
            EvaluationState::Finished,
            None,
            UnixMillis(clock),
        )?;
        self.judge(CandidateId(0), Verdict::Keep, None)?;
        if count > 1 {
            self.store.add_candidates(self.campaign, &proposals[1..])?;
        }
        let mut head = CandidateId(0);
        for n in 1..count {
            let candidate = CandidateId(n);
            clock = self.judge_evaluation(candidate, head, n, clock)?;
            let verdict = match n % 25 {
                0 => Verdict::Keep,
                1..=3 => Verdict::Interesting,
                _ => Verdict::Discard,
            };
            self.judge(candidate, verdict, Some(head))?;
            if verdict == Verdict::Keep {
                head = candidate;
            }
        }
        Ok(())
    }

    /// One paired evaluation of `candidate` against `head`: `PAIRS` pairs, alternating which
    /// side runs first. Returns the clock after it.
    fn judge_evaluation(
        &self,
        candidate: CandidateId,
        head: CandidateId,
        n: u32,
        mut clock: i64,
    ) -> Result<i64, tally_store::StoreError> {
        let e = self.store.queue_evaluation(&NewEvaluation {
            campaign: self.campaign,
            candidate,
            bar: Some(head),
            kind: EvaluationKind::Judge,
            repeats: PAIRS,
            queued: UnixMillis(clock),
        })?;
        self.store.start_evaluation(e.id, UnixMillis(clock))?;
        for pair in 0..PAIRS {
            let first = if pair % 2 == 0 {
                Side::Candidate
            } else {
                Side::Bar
            };
            let mut partner = None;
            for side in [first, other(first)] {
                let who = if side == Side::Candidate {
                    candidate
                } else {
                    head
                };
                let failed = side == Side::Candidate && n.is_multiple_of(50) && pair == PAIRS - 1;
                let m = self.store.record_measurement(&NewMeasurement {
                    evaluation: Some(e.id),
                    side,
                    pair: partner,
                    error: failed.then(|| "non-zero exit 1: CUDA out of memory".to_owned()),
                    ..self.measurement(who, n, pair, clock)
                })?;
                partner = Some(m.id);
                clock += 61_000;
            }
        }
        self.store
            .end_evaluation(e.id, EvaluationState::Finished, None, UnixMillis(clock))?;
        Ok(clock)
    }

    /// A successful, unpaired candidate-side sample with four metrics and log paths.
    fn measurement(&self, who: CandidateId, n: u32, sample: u32, clock: i64) -> NewMeasurement {
        NewMeasurement {
            campaign: self.campaign,
            candidate: who,
            evaluation: None,
            side: Side::Candidate,
            sample,
            attempt: 1,
            retry_of: None,
            pair: None,
            evaluator: self.evaluator.clone(),
            rung: None,
            duration_ns: Some(61_000_000_000 + u64::from(n) * 1_000 + u64::from(sample)),
            metrics: BTreeMap::from([
                ("tok_s".to_owned(), 1234.5 + f64::from(n % 97) * 0.37),
                ("p50_ms".to_owned(), 12.25 + f64::from(sample) * 0.01),
                ("p95_ms".to_owned(), 20.5 + f64::from(n % 13) * 0.1),
                ("gpu_mem_gb".to_owned(), 71.3),
            ]),
            error: None,
            started: UnixMillis(clock),
            ended: UnixMillis(clock + 61_000),
            stdout_log: Some(log(n, sample, who, "out")),
            stderr_log: Some(log(n, sample, who, "err")),
            evidence: EvidenceRef::default(),
            config: Some(self.config),
            recorded_by: Actor::Loop,
            units: BTreeMap::new(),
            held: None,
        }
    }

    /// The loop's verdict on `candidate`, moving the head on a keep.
    fn judge(
        &self,
        candidate: CandidateId,
        verdict: Verdict,
        bar: Option<CandidateId>,
    ) -> Result<(), tally_store::StoreError> {
        let head = if verdict == Verdict::Keep {
            HeadUpdate::MakeHead { expected: bar }
        } else {
            HeadUpdate::Unchanged
        };
        let outcome = self.store.set_verdict(
            self.campaign,
            candidate,
            &VerdictWrite {
                verdict,
                reason: Some(format!(
                    "against {}: tok_s +0.4% (lower bound -0.1%)",
                    bar.unwrap_or(candidate)
                )),
                by: Actor::Loop,
                at: UnixMillis(1_800_000_000_000),
                judged_against: bar,
                head,
            },
        )?;
        assert!(
            matches!(outcome, VerdictWriteOutcome::Applied(_)),
            "the verdict on {candidate} was not applied: {outcome:?}"
        );
        Ok(())
    }
}

fn log(n: u32, sample: u32, who: CandidateId, stream: &str) -> PathBuf {
    Path::new(".tally/logs").join(format!("{n:05}-{sample}-{who}.{stream}"))
}

/// A commit-id-like 40 hex digits, distinct per candidate (splitmix64 of `n`).
fn revision(n: u32) -> String {
    let mix = |x: u64| {
        let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let a = mix(u64::from(n));
    let b = mix(a);
    let c = mix(b);
    format!("{a:016x}{b:016x}{:08x}", c >> 32)
}

fn other(side: Side) -> Side {
    match side {
        Side::Candidate => Side::Bar,
        Side::Bar => Side::Candidate,
    }
}
