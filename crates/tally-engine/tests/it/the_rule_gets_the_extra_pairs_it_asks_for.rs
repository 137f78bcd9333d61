//! Extra pairs (`docs/verdicts.md#more-pairs`): when the verdict rule asks for more pairs — to
//! re-measure one with a far sample, or to look again at an inconclusive gain — the engine
//! measures them in the same evaluation (continuing its indices and alternation, each sample
//! committed as it ends and counted in the GPU ledger), asks the stop rule before each one,
//! judges on what there is when a sample fails or the budget holds, and leaves Ctrl-C during an
//! extra sample as it leaves any evaluation. `max_extra_pairs = 0` measures nothing extra.

use tally_contract::CancelToken;
use tally_engine::RunEnd;
use tally_model::{EvaluationState, Side, Verdict};
use tally_runner::{Outcome, ScriptedAttempt, Side as RunSide};

use crate::lab::{Lab, config, id, score};

/// A lab with the baseline (`score = 100`) kept and candidate 1 (110) queued; `slow` bar samples
/// (by index) are 20% slow, as if the GPU throttled.
fn lab(text: &str, slow: &'static [u32]) -> Lab {
    let lab = Lab::new(text);
    lab.values(move |rev, side, sample| match (rev, side) {
        (0, RunSide::Bar) if slow.contains(&sample) => 80.0,
        (0, _) => 100.0,
        _ => 110.0,
    });
    lab.init();
    lab.add(&[1]);
    lab
}

const REMEASURED: &str = "re-measured pair 2: the bar's score 80.00 was 20.0% below its side's \
                          median 100.0";

#[test]
fn a_throttled_sample_has_its_pair_measured_again_in_the_same_evaluation() {
    let lab = lab(&config(3, ""), &[1]);
    assert_eq!(lab.run(), RunEnd::Idle);
    assert_eq!(
        lab.order_since(3),
        [
            "C1.0", "B0.0", "B0.1", "C1.1", "C1.2", "B0.2", "B0.3", "C1.3"
        ],
        "pair 4 continues the indices and the alternation"
    );
    let judge = &lab.evaluations()[1];
    assert_eq!((judge.repeats, judge.state), (3, EvaluationState::Finished));
    let taken: Vec<_> = lab
        .measurements()
        .into_iter()
        .filter(|m| m.evaluation == Some(judge.id))
        .collect();
    assert_eq!(taken.len(), 8, "the set-aside pair stays in the store");
    assert!(taken.iter().all(|m| m.pair.is_some()));
    assert_eq!(
        lab.verdict(1),
        (
            Verdict::Keep,
            format!(
                "against candidate#0: score 110.0 vs 100.0 (+10.00; 97% worst case +10.00 over 3 \
                 pairs); {REMEASURED}"
            )
        )
    );
    assert_eq!(lab.head(), Some(id(1)));
    assert!(
        lab.notes().contains(
            &"candidate#1: re-measure pair 2: the bar's score 80.00 is 20.0% below its side's \
              median 100.0"
                .to_string()
        ),
        "{:?}",
        lab.notes()
    );
}

#[test]
fn an_inconclusive_promising_first_look_gets_the_rest_of_the_budget() {
    let lab = Lab::new(&config(3, ""));
    // d = 3, 9, 6, then 5, 7, 6: inconclusive after three pairs, a keep after six.
    lab.values(|rev, _, sample| {
        if rev == 0 {
            100.0
        } else {
            [103.0, 109.0, 106.0, 105.0, 107.0, 106.0][sample as usize]
        }
    });
    lab.init();
    lab.add(&[1]);
    lab.run();
    assert_eq!(lab.order_since(3).len(), 12);
    assert_eq!(
        lab.verdict(1),
        (
            Verdict::Keep,
            "against candidate#0: score 106.0 vs 100.0 (+6.000; 98% worst case +3.749 over 6 \
             pairs); added 3 pairs: the first 3 were inconclusive (97% worst case -0.7488)"
                .into()
        )
    );
}

#[test]
fn the_budget_is_asked_before_each_extra_sample() {
    // One dollar a second: $3 of baseline and $6 of first look; the first extra sample makes
    // $10, and the budget holds the second. The rule judges the pairs there are.
    let text = config(
        3,
        "[plugins.stop_rule]\nprovider = \"limits\"\nhold_at = { gpu_usd = 10 }\n\
         reserve = false\n\
         [[plugins.fact_source]]\nprovider = \"gpu_hours\"\nusd_per_gpu_hour = 3600\n",
    );
    let lab = lab(&text, &[1]);
    let held = "hold_at: gpu_usd 10.00 reached 10";
    assert_eq!(lab.run(), RunEnd::Idle, "nothing else was queued");
    assert_eq!(
        lab.order_since(3),
        ["C1.0", "B0.0", "B0.1", "C1.1", "C1.2", "B0.2", "B0.3"]
    );
    let (verdict, reason) = lab.verdict(1);
    assert_eq!(verdict, Verdict::Keep, "{reason}");
    assert_eq!(
        reason,
        format!(
            "against candidate#0: score 110.0 vs 100.0 (+10.00; 97% worst case +10.00 over 2 \
             pairs); set aside pair 2: the bar's score 80.00 was 20.0% below its side's median \
             100.0; extra pairs held: {held}"
        )
    );
    assert_eq!(lab.evaluations()[1].state, EvaluationState::Finished);
    // The unpaired extra sample is in the ledger too, and the next evaluation is held.
    lab.add(&[2]);
    assert_eq!(lab.run(), RunEnd::Held(held.into()));
    assert_eq!(lab.served().len(), 3 + 7);
}

#[test]
fn a_failed_extra_sample_ends_the_extra_pairs_and_the_rule_judges_what_there_is() {
    let lab = lab(&config(3, ""), &[1]);
    lab.respond(|ask| match (ask.rev, ask.side, ask.sample) {
        (0, RunSide::Bar, 1) => score(80.0),
        (0, RunSide::Bar, 3) => ScriptedAttempt::ends(Outcome::Exited(1), ""),
        (0, _, _) => score(100.0),
        _ => score(110.0),
    });
    lab.run();
    assert_eq!(
        lab.order_since(3),
        ["C1.0", "B0.0", "B0.1", "C1.1", "C1.2", "B0.2", "B0.3"]
    );
    let (verdict, reason) = lab.verdict(1);
    assert_eq!(verdict, Verdict::Keep, "{reason}");
    assert!(
        reason.contains("over 2 pairs); set aside pair 2: the bar's score 80.00 was 20.0% below")
            && reason
                .contains("; the bar failed on pair 4: the evaluate command exited with status 1"),
        "{reason}"
    );
}

#[test]
fn ctrl_c_during_an_extra_sample_leaves_the_evaluation_as_any_other() {
    let lab = lab(&config(3, ""), &[1]);
    let cancel = CancelToken::new();
    let ctrl_c = cancel.clone();
    lab.respond(move |ask| match (ask.rev, ask.side, ask.sample) {
        (0, RunSide::Bar, 1) => score(80.0),
        (0, RunSide::Bar, 3) => {
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
    assert_eq!(lab.candidate(1).verdict, Verdict::Pending);
    let abandoned = &lab.evaluations()[1];
    assert_eq!(
        (abandoned.state, abandoned.note.as_deref()),
        (EvaluationState::Abandoned, Some("interrupted"))
    );
    let interrupted = lab.measurements().pop().unwrap();
    assert_eq!(
        (
            interrupted.side,
            interrupted.sample,
            interrupted.error.as_deref()
        ),
        (Side::Bar, 3, Some("interrupted"))
    );
    // The next run evaluates the candidate again; the pairs measured before still count, and
    // the first look (pairs 1–3, pair 2 set aside and replaced by pair 4) keeps.
    lab.values(|rev, _, _| if rev == 0 { 100.0 } else { 110.0 });
    assert_eq!(lab.run(), RunEnd::Idle);
    let (verdict, reason) = lab.verdict(1);
    assert_eq!(verdict, Verdict::Keep, "{reason}");
    assert!(reason.contains(REMEASURED), "{reason}");
}

#[test]
fn max_extra_pairs_zero_measures_nothing_extra() {
    let text = config(
        3,
        "[plugins.verdict_rule]\nprovider = \"bootstrap\"\nmax_extra_pairs = 0\n",
    );
    let lab = lab(&text, &[1]);
    lab.run();
    assert_eq!(lab.order_since(3).len(), 6);
    let (verdict, reason) = lab.verdict(1);
    assert_eq!(verdict, Verdict::Interesting);
    assert!(
        reason.starts_with(
            "against candidate#0: score 110.0 vs 93.33 (+16.67; 95% worst case -2.800 over 3 \
             pairs): the gain is not significant"
        ),
        "{reason}"
    );
}
