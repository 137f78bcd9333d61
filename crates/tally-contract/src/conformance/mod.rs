//! The conformance suite every [`Store`] backend must pass: [`store_contract`].
//!
//! It pins the trait's documented behaviour with exact values — id allocation, ordering,
//! verdict ownership (the loop never overwrites a person's verdict), head updates, evaluation
//! life cycle, measurement checks, pairing, per-unit results, aggregates and the snapshot — and
//! panics with a message naming the broken rule. It knows nothing of SQL; backend-specific
//! behaviour (reopening a file, migrations, crash rollback) is tested next to each backend.
//! Compiled only with the `test-support` feature.

mod campaigns;
mod candidates;
mod evaluations;
mod measurements;
mod totals;
mod verdicts;

use std::collections::BTreeMap;

use tally_model::{
    Actor, Campaign, CampaignId, Candidate, CandidateId, EvidenceRef, Side, UnixMillis, Verdict,
};

use crate::records::{
    HeadUpdate, NewCampaign, NewCandidate, NewMeasurement, VerdictWrite, VerdictWriteOutcome,
};
use crate::store::Store;

/// Runs every check of the contract, each against a fresh store from `make` (which must return
/// an empty store each time). Panics at the first broken rule.
pub fn store_contract(make: impl Fn() -> Box<dyn Store>) {
    let make: &dyn Fn() -> Box<dyn Store> = &make;
    campaigns::run(make);
    candidates::run(make);
    verdicts::run(make);
    evaluations::run(make);
    measurements::run(make);
    totals::run(make);
}

/// Shorthand for the factory the checks receive.
type Make<'a> = &'a dyn Fn() -> Box<dyn Store>;

/// Asserts that `$result` is an error matching `$pattern`, naming `$rule` otherwise.
macro_rules! expect_err {
    ($result:expr, $pattern:pat, $rule:expr) => {
        match $result {
            Err(e) if matches!(e, $pattern) => e,
            Err(e) => panic!("{}: wrong error: {e:?}", $rule),
            Ok(v) => panic!("{}: expected an error, got {v:?}", $rule),
        }
    };
}
pub(crate) use expect_err;

/// A registered campaign named `name`, created at t = 1000 ms.
fn campaign(store: &dyn Store, name: &str) -> Campaign {
    store
        .create_campaign(&NewCampaign {
            name: name.to_owned(),
            evaluator: "eval-1".to_owned(),
            config_text: format!("name = \"{name}\"\n"),
            created: UnixMillis(1_000),
        })
        .expect("create_campaign")
}

/// A candidate to queue, proposed by `ana` at `at` ms.
fn proposal(revision: &str, at: i64) -> NewCandidate {
    NewCandidate {
        revision: revision.to_owned(),
        proposed_by: "ana".to_owned(),
        note: None,
        created: UnixMillis(at),
    }
}

/// Adds one candidate.
fn add(store: &dyn Store, campaign: CampaignId, revision: &str, at: i64) -> Candidate {
    let mut added = store
        .add_candidates(campaign, &[proposal(revision, at)])
        .expect("add_candidates");
    added.pop().expect("one candidate added")
}

/// A loop verdict write.
fn by_loop(verdict: Verdict, reason: &str, at: i64, head: HeadUpdate) -> VerdictWrite {
    VerdictWrite {
        verdict,
        reason: Some(reason.to_owned()),
        by: Actor::Loop,
        at: UnixMillis(at),
        judged_against: None,
        head,
    }
}

/// A verdict write by a person.
fn by_hand(who: &str, verdict: Verdict, reason: &str, at: i64, head: HeadUpdate) -> VerdictWrite {
    VerdictWrite {
        by: Actor::Person(who.to_owned()),
        ..by_loop(verdict, reason, at, head)
    }
}

/// Applies a write that must apply, returning the candidate.
fn applied(outcome: VerdictWriteOutcome, rule: &str) -> Candidate {
    match outcome {
        VerdictWriteOutcome::Applied(candidate) => candidate,
        other => panic!("{rule}: expected the verdict to apply, got {other:?}"),
    }
}

/// A campaign whose baseline (`candidate#0`, `rev0`) is kept and is the head.
fn campaign_with_baseline(store: &dyn Store, name: &str) -> Campaign {
    let c = campaign(store, name);
    add(store, c.id, "rev0", 1_100);
    let write = by_loop(
        Verdict::Keep,
        "baseline",
        1_200,
        HeadUpdate::MakeHead { expected: None },
    );
    applied(
        store
            .set_verdict(c.id, CandidateId(0), &write)
            .expect("keep baseline"),
        "keeping the baseline",
    );
    store.campaign(c.id).expect("campaign").expect("exists")
}

/// A successful, unpaired, hand-free sample of `candidate`: 1.5 s, `tok_s = 100`.
fn sample(campaign: CampaignId, candidate: CandidateId) -> NewMeasurement {
    NewMeasurement {
        campaign,
        candidate,
        evaluation: None,
        side: Side::Candidate,
        sample: 0,
        attempt: 1,
        retry_of: None,
        pair: None,
        evaluator: "eval-1".to_owned(),
        rung: None,
        duration_ns: Some(1_500_000_000),
        metrics: BTreeMap::from([("tok_s".to_owned(), 100.0)]),
        error: None,
        started: UnixMillis(10_000),
        ended: UnixMillis(11_500),
        stdout_log: None,
        stderr_log: None,
        evidence: EvidenceRef::default(),
        config: None,
        recorded_by: Actor::Loop,
        units: BTreeMap::new(),
        held: None,
    }
}
