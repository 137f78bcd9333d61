//! `status_load`: fills a SQLite store with a campaign of 10,000 candidates and 100,000
//! measurements (one paired evaluation of 5 pairs per candidate), then times what `tally status`
//! needs from the store: opening the file, one `snapshot` (campaign + all candidates + all
//! measurements + all evaluations) and `totals`. It also times serialising the snapshot to JSON,
//! to size the rest of the 200 ms budget. Wall time and, on Linux, CPU time are reported (on a
//! shared machine the two differ by the time spent waiting for a core).
//!
//! Run: `cargo run --release -p tally-store --example status_load [PATH]` (default: a file in a
//! fresh temporary directory, removed at the end; an existing PATH filled by an earlier run is
//! reused).
#![allow(clippy::print_stdout)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use tally_model::{
    Actor, CampaignId, CandidateId, ConfigTextId, EvaluationKind, EvaluationState, EvidenceRef,
    Side, UnixMillis, Verdict,
};
use tally_store::{
    HeadUpdate, NewCampaign, NewCandidate, NewEvaluation, NewMeasurement, SqliteOptions,
    SqliteStore, Store, StoreError, Synchronous, VerdictWrite,
};

const CANDIDATES: u32 = 10_000;
const PAIRS: u32 = 5;
const EVALUATOR: &str = "0f3a9c51d2e4b6a87c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b";

fn main() -> Result<(), StoreError> {
    let temp = std::env::temp_dir().join(format!("tally-status-load-{}", std::process::id()));
    let path = match std::env::args_os().nth(1) {
        Some(p) => PathBuf::from(p),
        None => {
            std::fs::create_dir_all(&temp).expect("create a temporary directory");
            temp.join("tally.db")
        }
    };
    let filled = SqliteStore::open(&path)?
        .campaign_by_name("load")?
        .is_some();
    if filled {
        println!("reusing {}", path.display());
    } else {
        let fill_start = Instant::now();
        fill(&path)?;
        println!(
            "filled {} in {:.1} s ({} bytes)",
            path.display(),
            fill_start.elapsed().as_secs_f64(),
            std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0)
        );
    }

    let mut reads = Vec::new();
    let mut reads_cpu = Vec::new();
    let mut json = Vec::new();
    for _ in 0..7 {
        let start = Instant::now();
        let cpu_start = cpu_time();
        let store = SqliteStore::open(&path)?;
        let campaign = store.campaign_by_name("load")?.expect("the campaign");
        let snapshot = store.snapshot(campaign.id)?;
        let totals = store.totals(campaign.id)?;
        reads.push(start.elapsed());
        if let (Some(a), Some(b)) = (cpu_start, cpu_time()) {
            reads_cpu.push(b.saturating_sub(a));
        }
        assert_eq!(snapshot.candidates.len(), CANDIDATES as usize);
        assert_eq!(
            snapshot.measurements.len(),
            (CANDIDATES * PAIRS * 2) as usize
        );
        assert_eq!(totals.measurements, u64::from(CANDIDATES * PAIRS * 2));
        let start = Instant::now();
        let text = serde_json::to_string(&(&snapshot.candidates, &snapshot.measurements))
            .expect("serialise");
        json.push(start.elapsed());
        assert!(text.len() > 1_000_000);
    }
    report("open + snapshot + totals (wall)", &mut reads);
    if !reads_cpu.is_empty() {
        report("open + snapshot + totals (CPU)", &mut reads_cpu);
    }
    report("snapshot to JSON", &mut json);
    if std::env::args_os().nth(1).is_none() {
        std::fs::remove_dir_all(&temp).expect("remove the temporary directory");
    }
    Ok(())
}

/// CPU time this thread has run (Linux `/proc/self/schedstat`), so a figure taken on a busy
/// machine can be told apart from time spent waiting for a core.
fn cpu_time() -> Option<Duration> {
    let text = std::fs::read_to_string("/proc/self/schedstat").ok()?;
    let ns = text.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}

fn report(what: &str, times: &mut [Duration]) {
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "{what}: min {:.1} ms, median {:.1} ms, max {:.1} ms over {} runs",
        ms(times[0]),
        ms(times[times.len() / 2]),
        ms(times[times.len() - 1]),
        times.len()
    );
}

/// One campaign: a kept baseline, then candidates each measured by one paired evaluation
/// against the head and judged (every 25th a keep that moves the head).
fn fill(path: &std::path::Path) -> Result<(), StoreError> {
    let store = SqliteStore::open_with(
        path,
        &SqliteOptions {
            synchronous: Synchronous::Off,
            ..SqliteOptions::default()
        },
    )?;
    let c = store
        .create_campaign(&NewCampaign {
            name: "load".to_owned(),
            evaluator: "0f3a9c51d2e4b6a87c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b"
                .to_owned(),
            config_text: "name = \"load\"\nevaluate = [\"./bench.sh\"]\n".to_owned(),
            created: UnixMillis(1_700_000_000_000),
        })?
        .id;
    let config = store.record_config_text("name = \"load\"\nevaluate = [\"./bench.sh\"]\n")?;
    let proposals: Vec<_> = (0..CANDIDATES)
        .map(|n| NewCandidate {
            revision: format!("{:040x}", 0x5eed_u64.wrapping_mul(u64::from(n) + 1)),
            proposed_by: "agent-7".to_owned(),
            note: (n % 3 == 0).then(|| format!("try idea {n}")),
            created: UnixMillis(1_700_000_000_000 + i64::from(n)),
        })
        .collect();
    store.add_candidates(c, &proposals[..1])?;
    let mut clock = 1_700_000_100_000_i64;
    let baseline = store.queue_evaluation(&NewEvaluation {
        campaign: c,
        candidate: CandidateId(0),
        bar: None,
        kind: EvaluationKind::Baseline,
        repeats: PAIRS * 2,
        queued: UnixMillis(clock),
    })?;
    store.start_evaluation(baseline.id, UnixMillis(clock))?;
    for sample in 0..PAIRS * 2 {
        store.record_measurement(&NewMeasurement {
            evaluation: Some(baseline.id),
            sample,
            ..measurement(c, CandidateId(0), 0, sample, clock, config)
        })?;
        clock += 61_000;
    }
    store.end_evaluation(
        baseline.id,
        EvaluationState::Finished,
        None,
        UnixMillis(clock),
    )?;
    judge(&store, c, CandidateId(0), Verdict::Keep, None)?;
    store.add_candidates(c, &proposals[1..])?;
    let mut head = CandidateId(0);
    for n in 1..CANDIDATES {
        let candidate = CandidateId(n);
        let e = store.queue_evaluation(&NewEvaluation {
            campaign: c,
            candidate,
            bar: Some(head),
            kind: EvaluationKind::Judge,
            repeats: PAIRS,
            queued: UnixMillis(clock),
        })?;
        store.start_evaluation(e.id, UnixMillis(clock))?;
        for pair in 0..PAIRS {
            let first_side = if pair % 2 == 0 {
                Side::Candidate
            } else {
                Side::Bar
            };
            let mut partner = None;
            for side in [first_side, other(first_side)] {
                let who = if side == Side::Candidate {
                    candidate
                } else {
                    head
                };
                let failed = n % 50 == 0 && pair == PAIRS - 1;
                let new = NewMeasurement {
                    evaluation: Some(e.id),
                    side,
                    pair: partner,
                    error: failed.then(|| "non-zero exit 1: CUDA out of memory".to_owned()),
                    ..measurement(c, who, n, pair, clock, config)
                };
                let m = store.record_measurement(&new)?;
                partner = Some(m.id);
                clock += 61_000;
            }
        }
        store.end_evaluation(e.id, EvaluationState::Finished, None, UnixMillis(clock))?;
        let verdict = match n % 25 {
            0 => Verdict::Keep,
            1..=3 => Verdict::Interesting,
            _ => Verdict::Discard,
        };
        judge(&store, c, candidate, verdict, Some(head))?;
        if verdict == Verdict::Keep {
            head = candidate;
        }
    }
    Ok(())
}

/// A successful, unpaired candidate-side sample with four metrics and log paths.
fn measurement(
    c: CampaignId,
    who: CandidateId,
    n: u32,
    sample: u32,
    clock: i64,
    config: ConfigTextId,
) -> NewMeasurement {
    NewMeasurement {
        campaign: c,
        candidate: who,
        evaluation: None,
        side: Side::Candidate,
        sample,
        attempt: 1,
        retry_of: None,
        pair: None,
        evaluator: EVALUATOR.to_owned(),
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
        stdout_log: Some(PathBuf::from(format!(
            ".tally/logs/{n:05}-{sample}-{who}.out"
        ))),
        stderr_log: Some(PathBuf::from(format!(
            ".tally/logs/{n:05}-{sample}-{who}.err"
        ))),
        evidence: EvidenceRef::default(),
        config: Some(config),
        recorded_by: Actor::Loop,
        held: None,
        units: BTreeMap::new(),
    }
}

fn other(side: Side) -> Side {
    match side {
        Side::Candidate => Side::Bar,
        Side::Bar => Side::Candidate,
    }
}

fn judge(
    store: &SqliteStore,
    c: CampaignId,
    candidate: CandidateId,
    verdict: Verdict,
    bar: Option<CandidateId>,
) -> Result<(), StoreError> {
    let head = if verdict == Verdict::Keep {
        HeadUpdate::MakeHead { expected: bar }
    } else {
        HeadUpdate::Unchanged
    };
    let outcome = store.set_verdict(
        c,
        candidate,
        &VerdictWrite {
            verdict,
            reason: Some(format!(
                "against {}: tok_s ... (+0.4%)",
                bar.unwrap_or(candidate)
            )),
            by: Actor::Loop,
            at: UnixMillis(1_800_000_000_000),
            judged_against: bar,
            head,
        },
    )?;
    assert!(matches!(
        outcome,
        tally_store::VerdictWriteOutcome::Applied(_)
    ));
    Ok(())
}
