//! A verdict rule that fails (`docs/campaign.md#external-providers`: an external rule that exits non-zero, times out
//! or answers nonsense) leaves the candidate pending and says why; the loop does not retry it in
//! the same run (no loop burning the device), and the next run evaluates it again.

use tally_engine::RunEnd;
use tally_model::Verdict;
use tally_plugin::{
    Entry, Judgement, ProviderError, ProviderInfo, Registry, VerdictCase, VerdictRule,
};

use crate::lab::{Lab, config, id};

struct Broken;

impl VerdictRule for Broken {
    fn decide(&self, _: &VerdictCase) -> Result<Judgement, ProviderError> {
        Err(ProviderError::new("broken", "exited with status 2"))
    }
}

/// The built-ins plus `broken`, a verdict rule that always fails.
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
fn the_candidate_stays_pending_with_the_reason_and_is_tried_again_next_run() {
    let text = config(3, "[plugins.verdict_rule]\nprovider = \"broken\"\n");
    let lab = Lab::with_registry(&text, with_broken_rule);
    lab.init();
    lab.add(&[1, 2]);
    assert_eq!(lab.run(), RunEnd::Idle);
    let why = "the verdict rule failed: broken: exited with status 2";
    for n in [1, 2] {
        let candidate = lab.candidate(n);
        assert_eq!(candidate.verdict, Verdict::Pending);
        assert_eq!(candidate.reason.as_deref(), Some(why));
        assert_eq!(candidate.verdict_set_by, None, "still the loop's to judge");
    }
    assert_eq!(
        lab.served().len(),
        3 + 6 + 6,
        "each evaluated once in this run"
    );
    assert!(
        lab.notes()
            .contains(&format!("{} stays pending: {why}", id(1)))
    );

    assert_eq!(lab.run(), RunEnd::Idle);
    assert_eq!(
        lab.served().len(),
        3 + 4 * 6,
        "the next run evaluates them again"
    );
}
