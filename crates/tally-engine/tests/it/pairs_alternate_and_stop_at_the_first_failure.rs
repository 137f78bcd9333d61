//! Pairs (`docs/campaign.md#pairs`): with `repeats = n > 1` the candidate (C) and the bar (B) run
//! C B, B C, C B, ...; each pair is linked both ways in the store; the sequence stops at the
//! first failure; a failed bar sample is named in the reason, and with no complete pair a
//! successful candidate is `interesting`, never a keep.

use tally_model::{EvaluationKind, Measurement, Side, Verdict};
use tally_runner::{Outcome, ScriptedAttempt, Side as RunSide};

use crate::lab::{Lab, config, id, score};

/// A lab with the baseline (`score=100`) kept and candidate 1 queued; candidate 1 prints 110.
fn kept_baseline_and_one_candidate(repeats: u32) -> Lab {
    let lab = Lab::new(&config(repeats, ""));
    lab.values(|rev, _, _| if rev == 0 { 100.0 } else { 110.0 });
    lab.init();
    lab.add(&[1]);
    lab
}

fn oom() -> ScriptedAttempt {
    ScriptedAttempt::ends(Outcome::Exited(1), "").with_stderr("CUDA out of memory\n")
}

const OOM: &str = "the evaluate command exited with status 1; stderr ends with: CUDA out of memory";

#[test]
fn samples_alternate_c_b_b_c_c_b_and_pairs_are_linked_both_ways() {
    let lab = kept_baseline_and_one_candidate(3);
    lab.run();
    assert_eq!(
        lab.order_since(3),
        ["C1.0", "B0.0", "B0.1", "C1.1", "C1.2", "B0.2"]
    );
    let judge = &lab.evaluations()[1];
    assert_eq!(
        (judge.kind, judge.candidate, judge.bar, judge.repeats),
        (EvaluationKind::Judge, id(1), Some(id(0)), 3)
    );
    let taken: Vec<Measurement> = lab
        .measurements()
        .into_iter()
        .filter(|m| m.evaluation == Some(judge.id))
        .collect();
    assert_eq!(taken.len(), 6);
    let by_id = |mid| taken.iter().find(|m| m.id == mid).expect("a partner");
    for m in &taken {
        let partner = by_id(m.pair.expect("every sample of a complete pair is linked"));
        assert_eq!(partner.pair, Some(m.id), "the link goes both ways");
        assert_eq!(partner.sample, m.sample, "partners share their index");
        assert_ne!(partner.side, m.side);
        let expected = if m.side == Side::Candidate {
            id(1)
        } else {
            id(0)
        };
        assert_eq!(m.candidate, expected, "a bar sample belongs to the bar");
    }
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
fn unpaired_with_one_repeat_and_judged_on_the_aggregate() {
    let lab = kept_baseline_and_one_candidate(1);
    lab.run();
    assert_eq!(lab.order(), ["C0.0", "C1.0"]);
    assert_eq!(lab.evaluations()[1].bar, None);
    assert_eq!(
        lab.verdict(1),
        (
            Verdict::Interesting,
            "against candidate#0: score 110.0 vs 100.0 (+10.00; aggregate: not significant: \
             no repeats or per-unit results)"
                .into()
        )
    );
    assert_eq!(lab.head(), Some(id(0)));
}

#[test]
fn a_bar_failure_stops_the_sequence_and_is_named_in_the_reason() {
    let lab = kept_baseline_and_one_candidate(3);
    lab.respond(|ask| match (ask.rev, ask.side, ask.sample) {
        (0, RunSide::Bar, 1) => oom(),
        (0, _, _) => score(100.0),
        _ => score(110.0),
    });
    lab.run();
    assert_eq!(lab.order_since(3), ["C1.0", "B0.0", "B0.1"]);
    assert_eq!(
        lab.verdict(1),
        (
            Verdict::Interesting,
            format!(
                "against candidate#0: score 110.0 vs 100.0 (+10.00; no bound from 1 pair): the \
                 gain is not significant; the bar failed on pair 2: {OOM}"
            )
        )
    );
    assert_eq!(lab.head(), Some(id(0)));
}

#[test]
fn no_complete_pair_and_a_successful_candidate_is_interesting_never_a_keep() {
    let lab = kept_baseline_and_one_candidate(3);
    lab.respond(|ask| match (ask.rev, ask.side) {
        (0, RunSide::Bar) => oom(),
        (0, _) => score(100.0),
        _ => score(1000.0),
    });
    lab.run();
    assert_eq!(lab.order_since(3), ["C1.0", "B0.0"]);
    let failed_bar = lab.measurements().pop().unwrap();
    assert_eq!(failed_bar.pair, None, "a failed sample completes no pair");
    assert_eq!(
        lab.verdict(1),
        (
            Verdict::Interesting,
            format!("no complete pair to judge: the bar failed on pair 1: {OOM}")
        )
    );
    assert_eq!(lab.head(), Some(id(0)));
}

#[test]
fn a_candidate_failure_stops_the_sequence_and_the_complete_pairs_are_judged() {
    let lab = kept_baseline_and_one_candidate(3);
    lab.respond(|ask| match (ask.rev, ask.sample) {
        (0, _) => score(100.0),
        (_, 1) => oom(),
        _ => score(110.0),
    });
    lab.run();
    assert_eq!(lab.order_since(3), ["C1.0", "B0.0", "B0.1", "C1.1"]);
    assert_eq!(
        lab.verdict(1),
        (
            Verdict::Interesting,
            "against candidate#0: score 110.0 vs 100.0 (+10.00; no bound from 1 pair): the \
             gain is not significant"
                .into()
        )
    );
}
