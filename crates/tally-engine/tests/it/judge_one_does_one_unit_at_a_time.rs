//! `Engine::judge_one` (`docs/implementers.md#parallel`): `tally run` with implementers working
//! beside the queue judges one piece of work per call, then `Idle` once nothing is queued; a
//! candidate whose verdict rule failed is not tried again by the same engine.

use tally_contract::CancelToken;
use tally_engine::RunEnd;
use tally_model::Verdict;
use tally_plugin::{
    Entry, Judgement, ProviderError, ProviderInfo, Registry, VerdictCase, VerdictRule,
};

use crate::lab::{Lab, config};

#[test]
fn each_call_judges_one_candidate_then_answers_idle() {
    let lab = Lab::new(&config(3, ""));
    lab.init();
    lab.add(&[1, 2]);
    let engine = lab.engine();
    let cancel = CancelToken::new();
    assert_eq!(engine.judge_one(&cancel).unwrap(), None);
    assert_ne!(lab.candidate(1).verdict, Verdict::Pending);
    assert_eq!(lab.candidate(2).verdict, Verdict::Pending, "one unit only");
    assert_eq!(engine.judge_one(&cancel).unwrap(), None);
    assert_ne!(lab.candidate(2).verdict, Verdict::Pending);
    assert_eq!(engine.judge_one(&cancel).unwrap(), Some(RunEnd::Idle));
}

struct Broken;

impl VerdictRule for Broken {
    fn decide(&self, _: &VerdictCase) -> Result<Judgement, ProviderError> {
        Err(ProviderError::new("broken", "exited with status 2"))
    }
}

fn with_broken_rule() -> Registry {
    let mut registry = tally_providers::builtins();
    registry.verdict_rules.push(Entry {
        check: None,
        info: ProviderInfo::builtin("broken", "always fails", vec![]),
        build: |_| Ok(Box::new(Broken)),
    });
    registry
}

#[test]
fn a_candidate_whose_rule_failed_is_not_tried_again_by_the_same_engine() {
    let text = config(3, "[plugins.verdict_rule]\nprovider = \"broken\"\n");
    let lab = Lab::with_registry(&text, with_broken_rule);
    lab.init();
    lab.add(&[1]);
    let engine = lab.engine();
    let cancel = CancelToken::new();
    assert_eq!(engine.judge_one(&cancel).unwrap(), None);
    assert_eq!(lab.candidate(1).verdict, Verdict::Pending);
    let served = lab.served().len();
    assert_eq!(engine.judge_one(&cancel).unwrap(), Some(RunEnd::Idle));
    assert_eq!(lab.served().len(), served, "not evaluated again");
    // A new engine (the next `tally run`) tries it again.
    assert_eq!(lab.engine().judge_one(&cancel).unwrap(), None);
    assert!(lab.served().len() > served);
}
