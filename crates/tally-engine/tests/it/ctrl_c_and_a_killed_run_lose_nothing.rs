//! Crash-safety (`docs/campaign.md#crash-safety`): every sample is committed the moment it ends. Ctrl-C
//! records the interrupted sample as failed (`interrupted`), abandons the evaluation and leaves
//! the candidate pending for the next run; an evaluation a killed `tally run` left `running` is
//! abandoned by the next run and evaluated again, with nothing judged twice — or, with a runner
//! that adopts its attempts (Slurm, `docs/team.md#adopting`), resumed where it stopped.

use std::panic::{AssertUnwindSafe, catch_unwind};

use tally_engine::RunEnd;
use tally_model::{EvaluationKind, EvaluationState, Side, Verdict};
use tally_runner::{CancelToken, Failure, Outcome, ScriptedAttempt, Side as RunSide};
use tally_store::{NewEvaluation, NewMeasurement, Store};

use crate::lab::{Lab, config, id, score};

const PAIRS: [&str; 6] = ["C1.0", "B0.0", "B0.1", "C1.1", "C1.2", "B0.2"];

fn lab(text: &str) -> Lab {
    let lab = Lab::new(text);
    lab.values(|rev, _, _| if rev == 0 { 100.0 } else { 110.0 });
    lab.init();
    lab.add(&[1]);
    lab
}

#[test]
fn ctrl_c_records_the_sample_as_interrupted_and_a_later_run_finishes_the_candidate() {
    let lab = lab(&config(3, ""));
    let cancel = CancelToken::new();
    let ctrl_c = cancel.clone();
    lab.respond(move |ask| match (ask.rev, ask.side, ask.sample) {
        (0, RunSide::Bar, 1) => {
            ctrl_c.cancel();
            ScriptedAttempt::ends(Outcome::Cancelled, "")
        }
        (0, _, _) => score(100.0),
        _ => score(110.0),
    });
    assert_eq!(
        lab.engine().run(true, &cancel).unwrap(),
        RunEnd::Interrupted
    );
    assert_eq!(lab.order_since(3), ["C1.0", "B0.0", "B0.1"]);
    let interrupted = lab.measurements().pop().unwrap();
    assert_eq!(
        (interrupted.side, interrupted.error.as_deref()),
        (Side::Bar, Some("interrupted"))
    );
    assert_eq!(lab.candidate(1).verdict, Verdict::Pending);
    let abandoned = &lab.evaluations()[1];
    assert_eq!(
        (abandoned.state, abandoned.note.as_deref()),
        (EvaluationState::Abandoned, Some("interrupted"))
    );

    lab.values(|rev, _, _| if rev == 0 { 100.0 } else { 110.0 });
    assert_eq!(lab.run(), RunEnd::Idle);
    assert_eq!(lab.order_since(6), PAIRS);
    // The complete pair taken before Ctrl-C still counts.
    assert_eq!(
        lab.verdict(1),
        (
            Verdict::Keep,
            "against candidate#0: score 110.0 vs 100.0 (+10.00; 98% worst case +10.00 over 4 \
             pairs); with 1 pair measured after the first 3 (97% worst case +10.00)"
                .into()
        )
    );
    assert_eq!(lab.evaluations()[2].state, EvaluationState::Finished);
}

#[test]
fn a_re_measurement_interrupted_by_ctrl_c_is_queued_again() {
    let lab = lab(&config(3, ""));
    lab.run();
    assert_eq!(lab.verdict(1).0, Verdict::Keep);
    lab.add(&[2]);
    lab.values(|rev, _, _| [100.0, 110.0, 105.0][rev as usize]);
    lab.run();
    assert_eq!(lab.verdict(2).0, Verdict::Discard);
    let served = lab.served().len();

    lab.engine().remeasure(id(2), Some(2)).unwrap();
    let cancel = CancelToken::new();
    let ctrl_c = cancel.clone();
    lab.respond(move |ask| {
        if ask.rev == 1 {
            ctrl_c.cancel();
            return ScriptedAttempt::ends(Outcome::Cancelled, "");
        }
        score(110.0)
    });
    assert_eq!(
        lab.engine().run(true, &cancel).unwrap(),
        RunEnd::Interrupted
    );
    assert_eq!(lab.order_since(served), ["C2.0", "B1.0"]);

    lab.values(|rev, _, _| [100.0, 110.0, 105.0][rev as usize]);
    assert_eq!(lab.run(), RunEnd::Idle);
    assert_eq!(
        lab.order_since(served + 2),
        ["C2.0", "B1.0", "B1.1", "C2.1"],
        "the re-measurement asked for by hand is not lost"
    );
    let last = lab.evaluations().pop().unwrap();
    assert_eq!(
        (
            last.kind,
            last.candidate,
            last.bar,
            last.repeats,
            last.state
        ),
        (
            EvaluationKind::Remeasure,
            id(2),
            Some(id(1)),
            2,
            EvaluationState::Finished
        )
    );
    // Judged again on every pair against the head: 3 from its judge job, 2 from the re-measure
    // (the sample before Ctrl-C completed no pair).
    assert_eq!(
        lab.verdict(2),
        (
            Verdict::Discard,
            "against candidate#1: score 105.0 vs 110.0 (-5.000; 98% worst case -5.000 over 5 \
             pairs); with 2 pairs measured after the first 3 (97% worst case -5.000)"
                .into()
        )
    );
}

#[test]
fn a_cancelled_token_starts_nothing() {
    let lab = lab(&config(3, ""));
    let cancel = CancelToken::new();
    cancel.cancel();
    assert_eq!(
        lab.engine().run(true, &cancel).unwrap(),
        RunEnd::Interrupted
    );
    assert_eq!(lab.served().len(), 3);
    assert_eq!(lab.evaluations().len(), 1);
}

#[test]
fn a_running_evaluation_left_by_a_killed_run_is_abandoned_and_evaluated_again_once() {
    let lab = lab(&config(3, ""));
    // What a `tally run` killed during candidate 1's second sample leaves: a running
    // evaluation with its first sample committed.
    let campaign = lab.campaign().id;
    let store = &*lab.store;
    let left = store
        .queue_evaluation(&NewEvaluation {
            campaign,
            candidate: id(1),
            bar: Some(id(0)),
            kind: EvaluationKind::Judge,
            repeats: 3,
            queued: lab.clock_now(),
        })
        .unwrap();
    store.start_evaluation(left.id, lab.clock_now()).unwrap();
    store
        .record_measurement(&NewMeasurement {
            evaluation: Some(left.id),
            ..lab.sample_of(1, 120.0)
        })
        .unwrap();

    assert_eq!(lab.run(), RunEnd::Idle);
    assert_eq!(lab.order_since(3), PAIRS);
    let evaluations = lab.evaluations();
    assert_eq!(evaluations.len(), 3);
    assert_eq!(
        (evaluations[1].state, evaluations[1].note.as_deref()),
        (
            EvaluationState::Abandoned,
            Some("tally run ended while it was running; evaluated again")
        )
    );
    assert_eq!(
        (evaluations[2].kind, evaluations[2].state),
        (EvaluationKind::Judge, EvaluationState::Finished)
    );
    assert_eq!(lab.measurements().len(), 3 + 1 + 6);
    assert!(
        lab.notes().contains(
            &"candidate#1: an earlier tally run ended during its evaluation; evaluating it again"
                .to_string()
        )
    );
    let judged: Vec<_> = lab
        .observer
        .judged
        .lock()
        .unwrap()
        .iter()
        .filter(|(c, _, _)| *c == id(1))
        .map(|(_, v, _)| *v)
        .collect();
    assert_eq!(judged, [Verdict::Keep]);
    // The left-over sample completed no pair: it enters the candidate's mean, not the pairs.
    assert_eq!(
        lab.verdict(1).1,
        "against candidate#0: score 110.0 vs 100.0 (+10.00; 97% worst case +10.00 over 3 pairs)"
    );
    let status = lab.engine().status(tally_plugin::Surface::Status).unwrap();
    assert_eq!(status.data.candidates[1].metrics["score"], 112.5);
    // Nothing left to do.
    assert_eq!(lab.run(), RunEnd::Idle);
    assert_eq!(lab.served().len(), 3 + 6);
}

#[test]
fn a_running_evaluation_is_resumed_without_its_recorded_samples_when_the_runner_adopts() {
    let lab = lab(&config(3, "")).adopting();
    // What a `tally run` killed during candidate 1's third sample (B0.1) leaves: a running
    // evaluation with its first pair committed.
    let campaign = lab.campaign().id;
    let store = &*lab.store;
    let left = store
        .queue_evaluation(&NewEvaluation {
            campaign,
            candidate: id(1),
            bar: Some(id(0)),
            kind: EvaluationKind::Judge,
            repeats: 3,
            queued: lab.clock_now(),
        })
        .unwrap();
    store.start_evaluation(left.id, lab.clock_now()).unwrap();
    let first = store
        .record_measurement(&NewMeasurement {
            evaluation: Some(left.id),
            ..lab.sample_of(1, 110.0)
        })
        .unwrap();
    store
        .record_measurement(&NewMeasurement {
            evaluation: Some(left.id),
            side: Side::Bar,
            pair: Some(first.id),
            ..lab.sample_of(0, 100.0)
        })
        .unwrap();

    assert_eq!(lab.run(), RunEnd::Idle);
    // Only the samples it had not recorded ran, in the evaluation's own order.
    assert_eq!(lab.order_since(3), ["B0.1", "C1.1", "C1.2", "B0.2"]);
    let evaluations = lab.evaluations();
    assert_eq!(evaluations.len(), 2);
    assert_eq!(
        (evaluations[1].id, evaluations[1].state),
        (left.id, EvaluationState::Finished)
    );
    assert_eq!(lab.measurements().len(), 3 + 6);
    assert!(lab.notes().contains(
        &"candidate#1: resuming the evaluation an earlier tally run left (its recorded samples \
          are kept, its jobs adopted)"
            .to_string()
    ));
    assert_eq!(
        lab.verdict(1),
        (
            Verdict::Keep,
            "against candidate#0: score 110.0 vs 100.0 (+10.00; 97% worst case +10.00 over 3 \
             pairs)"
                .into()
        )
    );
    assert_eq!(lab.run(), RunEnd::Idle);
    assert_eq!(lab.served().len(), 3 + 4);
}

#[test]
fn a_resumed_evaluation_runs_the_retry_its_killed_run_had_under_way() {
    let lab = lab(&config(3, "")).adopting();
    // The killed run recorded C1.0's first attempt, killed from outside by SIGTERM, and died
    // during its retry.
    let campaign = lab.campaign().id;
    let store = &*lab.store;
    let left = store
        .queue_evaluation(&NewEvaluation {
            campaign,
            candidate: id(1),
            bar: Some(id(0)),
            kind: EvaluationKind::Judge,
            repeats: 3,
            queued: lab.clock_now(),
        })
        .unwrap();
    store.start_evaluation(left.id, lab.clock_now()).unwrap();
    let killed = store
        .record_measurement(&NewMeasurement {
            evaluation: Some(left.id),
            metrics: Default::default(),
            error: Some(Failure::Signal { signal: 15 }.to_string()),
            ..lab.sample_of(1, 0.0)
        })
        .unwrap();

    assert_eq!(lab.run(), RunEnd::Idle);
    assert_eq!(
        lab.order_since(3),
        ["C1.0+", "B0.0", "B0.1", "C1.1", "C1.2", "B0.2"]
    );
    let retry = lab
        .measurements()
        .into_iter()
        .find(|m| m.attempt == 2)
        .expect("the retry is recorded");
    assert_eq!(
        (retry.evaluation, retry.retry_of, retry.error),
        (Some(left.id), Some(killed.id), None)
    );
    assert_eq!(lab.evaluations()[1].state, EvaluationState::Finished);
    assert_eq!(lab.verdict(1).0, Verdict::Keep);
}

#[test]
fn a_confirmation_killed_in_flight_is_queued_again_as_a_confirmation() {
    let lab = lab(&config(
        3,
        "[plugins.verdict_rule]\nprovider = \"bootstrap\"\nconfirm = true\n",
    ));
    // The process dies (a panic stands for kill -9) during the confirmation's second pair.
    lab.respond(|ask| {
        if ask.rev == 1 && ask.nth == 4 {
            panic!("killed");
        }
        score(if ask.rev == 0 { 100.0 } else { 110.0 })
    });
    let killed = catch_unwind(AssertUnwindSafe(|| lab.run()));
    assert!(killed.is_err());
    assert_eq!(lab.evaluations()[2].kind, EvaluationKind::Confirm);
    assert_eq!(lab.evaluations()[2].state, EvaluationState::Running);

    lab.values(|rev, _, _| if rev == 0 { 100.0 } else { 110.0 });
    assert_eq!(lab.run(), RunEnd::Idle);
    let kinds: Vec<_> = lab
        .evaluations()
        .iter()
        .map(|e| (e.kind, e.state))
        .collect();
    assert_eq!(
        kinds,
        [
            (EvaluationKind::Baseline, EvaluationState::Finished),
            (EvaluationKind::Judge, EvaluationState::Finished),
            (EvaluationKind::Confirm, EvaluationState::Abandoned),
            (EvaluationKind::Confirm, EvaluationState::Finished),
        ]
    );
    // Judged on the new confirmation's own three pairs.
    assert_eq!(
        lab.verdict(1),
        (
            Verdict::Keep,
            "against candidate#0: score 110.0 vs 100.0 (+10.00; 97% worst case +10.00 over 3 \
             pairs) (confirmed)"
                .into()
        )
    );
    assert_eq!(lab.head(), Some(id(1)));
}

#[test]
fn without_until_idle_the_run_picks_up_new_candidates_until_ctrl_c() {
    let lab = Lab::new(&config(3, ""));
    lab.values(|rev, _, _| if rev == 0 { 100.0 } else { 110.0 });
    lab.init();
    let cancel = CancelToken::new();
    let ctrl_c = cancel.clone();
    let store = std::sync::Arc::clone(&lab.store);
    let campaign = lab.campaign().id;
    let proposer = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(50));
        let new = tally_store::NewCandidate {
            revision: crate::lab::rev(1),
            proposed_by: "agent".into(),
            note: None,
            created: tally_model::UnixMillis(crate::lab::START_MS),
        };
        store.add_candidates(campaign, &[new]).unwrap();
        // Ctrl-C once the run has judged it.
        while store.candidate(campaign, id(1)).unwrap().unwrap().verdict == Verdict::Pending {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        ctrl_c.cancel();
    });
    assert_eq!(
        lab.engine().run(false, &cancel).unwrap(),
        RunEnd::Interrupted
    );
    proposer.join().unwrap();
    assert_eq!(lab.order_since(3), PAIRS);
    assert_eq!(lab.verdict(1).0, Verdict::Keep);
}
