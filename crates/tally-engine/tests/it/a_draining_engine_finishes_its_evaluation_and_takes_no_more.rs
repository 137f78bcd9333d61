//! An engine draining on a flag (`Engine::draining_on`, one of several workers of one `tally
//! run`, `docs/team.md#slurm-slots`): once another worker's run has ended and set the flag, it
//! finishes the evaluation in hand — every sample and the verdict — takes no new work, and
//! returns `Idle` at once even when it would otherwise wait for candidates.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tally_engine::RunEnd;
use tally_model::{Side, Verdict};
use tally_runner::CancelToken;

use crate::lab::{Lab, config, score};

#[test]
fn a_drained_engine_finishes_the_evaluation_in_hand_then_returns_without_waiting() {
    let lab = Lab::new(&config(2, ""));
    lab.init();
    lab.add(&[1, 2]);
    let drain = Arc::new(AtomicBool::new(false));
    // Another worker's run ends while candidate 1's first sample runs.
    let flag = Arc::clone(&drain);
    lab.respond(move |ask| {
        if ask.rev == 1 {
            flag.store(true, Ordering::SeqCst);
        }
        score(if ask.side == Side::Candidate && ask.rev == 1 {
            150.0
        } else {
            100.0
        })
    });
    let served = lab.served().len();
    // Without --until-idle: a run that is not drained would wait for candidates for ever.
    let end = lab
        .engine()
        .draining_on(&drain)
        .run(false, &CancelToken::new())
        .unwrap();
    assert_eq!(end, RunEnd::Idle);
    // Candidate 1 was measured to its end (both pairs, against the baseline) and judged;
    // candidate 2 was not touched.
    let ran = &lab.served()[served..];
    assert_eq!(ran.len(), 4, "{:?}", lab.order_since(served));
    assert!(
        ran.iter().all(|s| s.rev == 1 || s.rev == 0),
        "{:?}",
        lab.order_since(served)
    );
    assert_ne!(lab.verdict(1).0, Verdict::Pending);
    assert_eq!(lab.verdict(2).0, Verdict::Pending);
    let two = lab.candidate(2).id;
    assert!(lab.evaluations().iter().all(|e| e.candidate != two));
}
