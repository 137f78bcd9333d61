//! The GPU ledger (`docs/campaign.md#one-sample`, `docs/campaign.md#gpu-hours`): every attempt is a measurement — a sample killed
//! from outside is retried once with both attempts recorded and linked — and `gpu_usd` is
//! Σ seconds × gpus × price / 3600 over all of them (bar samples, failures, retries and reports
//! added by hand included).

use std::sync::{Arc, Mutex};

use tally_engine::ManualReport;
use tally_model::{Side, Verdict};
use tally_plugin::Surface;
use tally_runner::{Outcome, ScriptedAttempt, Side as RunSide};

use crate::lab::{Lab, config, id, score, secs};

const SIGTERM: &str = "the evaluate command was killed by signal 15 (SIGTERM), not sent by tally";

#[test]
fn a_sample_killed_from_outside_is_retried_once_and_both_attempts_are_recorded() {
    let lab = Lab::new(&config(1, ""));
    lab.init();
    lab.add(&[1]);
    lab.respond(|ask| match (ask.rev, ask.attempt) {
        (1, 1) => ScriptedAttempt::ends(Outcome::Signalled(15), "METRIC score=3\n"),
        _ => score(100.0),
    });
    lab.run();
    assert_eq!(lab.order(), ["C0.0", "C1.0", "C1.0+"]);
    let ms = lab.measurements();
    let (first, retry) = (&ms[1], &ms[2]);
    assert_eq!(
        (
            first.candidate,
            first.attempt,
            first.error.as_deref(),
            first.retry_of
        ),
        (id(1), 1, Some(SIGTERM), None)
    );
    assert_eq!(
        (
            retry.candidate,
            retry.attempt,
            retry.error.as_deref(),
            retry.retry_of
        ),
        (id(1), 2, None, Some(first.id))
    );
    assert_eq!(first.evaluation, retry.evaluation);
    // Judged on the retry alone: the failed attempt's printed score never enters a mean.
    assert_eq!(
        lab.verdict(1),
        (
            Verdict::Discard,
            "against candidate#0: score 100.0 vs 100.0 (0; aggregate: not significant: no \
             repeats or per-unit results)"
                .into()
        )
    );
}

#[test]
fn a_retried_bar_sample_completes_its_pair_and_is_not_a_bar_failure() {
    let lab = Lab::new(&config(3, ""));
    lab.values(|rev, _, _| if rev == 0 { 100.0 } else { 110.0 });
    lab.init();
    lab.add(&[1]);
    lab.respond(|ask| match (ask.rev, ask.side, ask.sample, ask.attempt) {
        (0, RunSide::Bar, 0, 1) => ScriptedAttempt::ends(Outcome::Signalled(1), ""),
        (0, _, _, _) => score(100.0),
        _ => score(110.0),
    });
    lab.run();
    assert_eq!(
        lab.order_since(3),
        ["C1.0", "B0.0", "B0.0+", "B0.1", "C1.1", "C1.2", "B0.2"]
    );
    let ms = lab.measurements();
    let (c0, failed, retry) = (&ms[3], &ms[4], &ms[5]);
    assert_eq!(failed.pair, None);
    assert_eq!((retry.pair, c0.pair), (Some(c0.id), Some(retry.id)));
    assert_eq!(retry.retry_of, Some(failed.id));
    assert_eq!(
        lab.verdict(1),
        (
            Verdict::Keep,
            "against candidate#0: score 110.0 vs 100.0 (+10.00; 97% worst case +10.00 over 3 \
             pairs)"
                .into()
        )
    );
}

#[test]
fn a_crash_signal_is_not_retried() {
    let lab = Lab::new(&config(1, ""));
    lab.init();
    lab.add(&[1]);
    lab.respond(|_| ScriptedAttempt::ends(Outcome::Signalled(11), ""));
    lab.run();
    assert_eq!(lab.order(), ["C0.0", "C1.0"]);
    assert_eq!(
        lab.verdict(1),
        (
            Verdict::Crash,
            "no successful measurement: the evaluate command was killed by signal 11 (SIGSEGV), \
             not sent by tally"
                .into()
        )
    );
}

#[test]
fn gpu_usd_is_every_second_of_every_measurement_times_gpus_times_price() {
    let text = config(
        3,
        "[[plugins.fact_source]]\nprovider = \"gpu_hours\"\ngpus = 2\nusd_per_gpu_hour = 2.49\n",
    );
    let lab = Lab::new(&text);
    let walls: Arc<Mutex<Vec<f64>>> = Arc::default();
    let ledger = Arc::clone(&walls);
    lab.respond(move |ask| {
        let mut walls = ledger.lock().unwrap();
        let wall = 0.25 + 0.125 * walls.len() as f64 + f64::from(ask.rev) / 7.0;
        walls.push(wall);
        let attempt = match (ask.rev, ask.side, ask.sample, ask.attempt) {
            // A retried candidate sample, a failing bar sample, a crashing candidate.
            (1, RunSide::Candidate, 0, 1) => ScriptedAttempt::ends(Outcome::Signalled(15), ""),
            (0, RunSide::Bar, 1, _) => ScriptedAttempt::ends(Outcome::Exited(1), ""),
            (2, _, _, _) => ScriptedAttempt::ends(Outcome::TimedOut, ""),
            (0, _, _, _) => score(100.0),
            _ => score(110.0),
        };
        attempt.with_wall(secs(wall))
    });
    lab.init();
    lab.add(&[1, 2]);
    lab.run();
    assert_eq!(
        lab.order(),
        [
            "C0.0", "C0.1", "C0.2", "C1.0", "C1.0+", "B0.0", "B0.1", "C2.0"
        ]
    );
    lab.engine()
        .add_measurement(
            id(2),
            &ManualReport {
                metrics: Default::default(),
                seconds: Some(42.5),
                error: Some("ran out of memory on the cluster".into()),
                ..ManualReport::default()
            },
            "bob",
        )
        .unwrap();
    let ms = lab.measurements();
    assert_eq!(ms.len(), 9);
    assert_eq!(ms.iter().filter(|m| m.side == Side::Bar).count(), 2);
    assert_eq!(ms.iter().filter(|m| m.error.is_some()).count(), 4);

    let seconds: f64 = walls.lock().unwrap().iter().sum::<f64>() + 42.5;
    let expected_usd = seconds * 2.0 * 2.49 / 3600.0;
    let facts = lab.engine().status(Surface::Status).unwrap().facts;
    let relative = |got: f64, want: f64| ((got - want) / want).abs();
    assert!(
        relative(facts["gpu_usd"], expected_usd) < 1e-9,
        "gpu_usd {} vs {expected_usd}",
        facts["gpu_usd"]
    );
    assert!(relative(facts["gpu_hours"], seconds * 2.0 / 3600.0) < 1e-9);
}
