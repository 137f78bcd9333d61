//! Share validation, API-level case 13 of `docs/evidence.md#conformance-cases`, with every refusal message.

use tally_evidence::{
    CorrelationGraph, DeviceClock, EntityRef, Error, InferenceRecord, Nanos, RequestShareEstimate,
    RunAccounting, ShareBudget, account_gpu_time, resolve_inference_events,
    validate_request_shares,
};

use crate::account::{case_01, key_k};
use crate::build::{Ctx, ev, membership, r, request};

const MS: Nanos = 1_000_000;
const MODEL: &str = "token-weighted-v1";

/// Case 01 plus requests A and B, memberships A-prefill and B-decode in I1, and (when asked)
/// an attempt `attempt-A` of A in I1 with attempts `a` and `b`.
fn setup(with_attempts: bool) -> (CorrelationGraph, RunAccounting) {
    let c = Ctx::client();
    let e = Ctx::engine();
    let mut records: Vec<InferenceRecord> = case_01();
    records.extend([
        ev(&c, "rq-a", request("A", None)),
        ev(&c, "rq-b", request("B", None)),
        ev(&e, "m-a", membership(r("cli", "A"), None, "I1", "prefill")),
        ev(&e, "m-b", membership(r("cli", "B"), None, "I1", "decode")),
    ]);
    if with_attempts {
        records.extend([
            ev(&c, "rq-a-att", request("A", Some("attempt-A"))),
            ev(&c, "rq-a-a", request("A", Some("a"))),
            ev(&c, "rq-a-b", request("A", Some("b"))),
            ev(
                &e,
                "m-a-att",
                membership(r("cli", "A"), Some(r("cli", "attempt-A")), "I1", "decode"),
            ),
            ev(
                &e,
                "m-a-a",
                membership(r("cli", "A"), Some(r("cli", "a")), "I1", "decode"),
            ),
            ev(
                &e,
                "m-a-b",
                membership(r("cli", "A"), Some(r("cli", "b")), "I1", "decode"),
            ),
        ]);
    }
    let graph = resolve_inference_events(records).unwrap();
    let accounting = account_gpu_time(&graph).unwrap();
    (graph, accounting)
}

fn share(request: &str, attempt: Option<&str>, ns: Nanos, model: &str) -> RequestShareEstimate {
    RequestShareEstimate::new(r("cli", request), ns, model, attempt.map(|a| r("cli", a))).unwrap()
}

fn check(
    setup: &(CorrelationGraph, RunAccounting),
    iteration: &EntityRef,
    key: &DeviceClock,
    shares: &[RequestShareEstimate],
    unattributed: Nanos,
) -> Result<ShareBudget, Error> {
    validate_request_shares(&setup.0, &setup.1, iteration, key, shares, unattributed)
}

fn refusal(result: Result<ShareBudget, Error>) -> String {
    match result {
        Err(Error::Refused { message }) => message,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn case_13_valid_split_returns_the_budget() {
    let s = setup(false);
    let shares = [
        share("A", None, 6 * MS, MODEL),
        share("B", None, 3 * MS, MODEL),
    ];
    let budget = check(&s, &r("eng", "I1"), &key_k(), &shares, MS).unwrap();
    assert_eq!(budget.budget_ns, 10_000_000);
    assert_eq!(budget.unattributed_ns, 1_000_000);
    assert_eq!(budget.iteration_ref, r("eng", "I1"));
    assert_eq!(budget.device_clock, key_k());
    assert_eq!(budget.shares, shares.to_vec());
}

#[test]
fn case_13_refusals() {
    let s = setup(false);
    let i1 = r("eng", "I1");
    let k = key_k();
    let two = [
        share("A", None, 6 * MS, MODEL),
        share("B", None, 3 * MS, MODEL),
    ];
    assert_eq!(
        refusal(check(&s, &i1, &k, &two, 0)),
        "estimated shares and remainder must equal the measured budget"
    );
    assert_eq!(
        refusal(check(&s, &i1, &k, &[share("C", None, 10 * MS, MODEL)], 0)),
        "estimated request is not a member of the iteration"
    );
    assert_eq!(
        refusal(check(
            &s,
            &i1,
            &k,
            &[
                share("A", None, 6 * MS, MODEL),
                share("B", None, 3 * MS, "other-v2")
            ],
            MS
        )),
        "request shares must use one estimation model"
    );
    assert_eq!(
        refusal(check(
            &s,
            &i1,
            &k,
            &[
                share("A", None, 5 * MS, MODEL),
                share("A", None, 5 * MS, MODEL)
            ],
            0
        )),
        "duplicate request share"
    );
    assert_eq!(
        refusal(check(&s, &i1, &k, &two, -1)),
        "unattributed_ns must be non-negative"
    );
    let device = DeviceClock {
        clock_kind: tally_evidence::ClockKind::Device,
        ..key_k()
    };
    for (iteration, key) in [(r("eng", "I2"), &device), (r("eng", "I9"), &k)] {
        assert_eq!(
            refusal(check(&s, &iteration, key, &[], 0)),
            "no measured GPU budget for iteration and device clock"
        );
    }
    // The budget check comes first, then the remainder's sign.
    assert_eq!(
        refusal(check(&s, &r("eng", "I9"), &k, &[], -1)),
        "no measured GPU budget for iteration and device clock"
    );
    // An attempt share needs that exact (request, attempt) membership.
    assert_eq!(
        refusal(check(
            &s,
            &i1,
            &k,
            &[share("A", Some("a"), 10 * MS, MODEL)],
            0
        )),
        "estimated request is not a member of the iteration"
    );
}

#[test]
fn case_13_generic_and_attempt_shares_overlap() {
    let s = setup(true);
    let i1 = r("eng", "I1");
    let k = key_k();
    for shares in [
        [
            share("A", None, 5 * MS, MODEL),
            share("A", Some("attempt-A"), 5 * MS, MODEL),
        ],
        [
            share("A", Some("attempt-A"), 5 * MS, MODEL),
            share("A", None, 5 * MS, MODEL),
        ],
    ] {
        assert_eq!(
            refusal(check(&s, &i1, &k, &shares, 0)),
            "generic and attempt-specific request shares overlap"
        );
    }
    let valid = [
        share("A", Some("a"), 4 * MS, MODEL),
        share("A", Some("b"), 6 * MS, MODEL),
    ];
    let budget = check(&s, &i1, &k, &valid, 0).unwrap();
    assert_eq!(budget.budget_ns, 10 * MS as u64);
    // The remaining budget can all be unattributed, with no share at all.
    assert_eq!(check(&s, &i1, &k, &[], 10 * MS).unwrap().shares, vec![]);
}

#[test]
fn estimates_validate_their_own_fields() {
    let err = RequestShareEstimate::new(r("cli", "A"), -1, MODEL, None).unwrap_err();
    assert_eq!(err.message(), "estimated duration_ns must be non-negative");
    let err = RequestShareEstimate::new(r("cli", "A"), 1, "", None).unwrap_err();
    assert_eq!(err.message(), "request share needs a model name");
    // Duration is checked before the model.
    let err = RequestShareEstimate::new(r("cli", "A"), -1, "", None).unwrap_err();
    assert_eq!(err.message(), "estimated duration_ns must be non-negative");
    let ok = RequestShareEstimate::new(r("cli", "A"), 0, MODEL, Some(r("cli", "a"))).unwrap();
    assert_eq!(ok.duration_ns(), 0);
    assert_eq!(&**ok.model(), MODEL);
    assert_eq!(ok.attempt_ref(), Some(&r("cli", "a")));
}
