//! Clock alignment, API-level cases 11 and 12 of `docs/evidence.md#conformance-cases`.

use tally_evidence::{
    AlignedTimestamp, CorrelationGraph, Error, Nanos, align_timestamp, alignment_offset_bounds,
    covering_alignments, resolve_inference_events,
};

use crate::build::{Ctx, alignment, ev, ev_meta};

const B: &str = "worker-b/monotonic";
const A: &str = "worker-a/monotonic";
const REFUSED: &str = "no valid clock alignment or multiple ambiguous alignments";

fn graph_of(records: Vec<tally_evidence::InferenceRecord>) -> CorrelationGraph {
    resolve_inference_events(records).unwrap()
}

fn aligned(value_ns: Nanos, uncertainty_ns: Nanos, domain: &str) -> AlignedTimestamp {
    AlignedTimestamp {
        value_ns,
        uncertainty_ns,
        clock_domain: domain.into(),
    }
}

fn refusal(result: Result<AlignedTimestamp, Error>) -> String {
    match result {
        Err(Error::Refused { message }) => message,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn case_11_one_alignment_window_is_half_open() {
    let g = graph_of(vec![ev(
        &Ctx::engine(),
        "al",
        alignment(B, A, -50, 4, Some(100), Some(200)),
    )]);
    let al = || g.alignments();
    assert_eq!(
        align_timestamp(150, B, A, al()).unwrap(),
        aligned(100, 4, A)
    );
    assert_eq!(align_timestamp(100, B, A, al()).unwrap(), aligned(50, 4, A));
    assert_eq!(refusal(align_timestamp(200, B, A, al())), REFUSED);
    assert_eq!(refusal(align_timestamp(250, B, A, al())), REFUSED);
    assert_eq!(refusal(align_timestamp(150, B, A, &[])), REFUSED);
    // No inversion: the record does not move A to B.
    assert_eq!(refusal(align_timestamp(150, A, B, al())), REFUSED);
    assert_eq!(
        align_timestamp(150, "x", "x", al()).unwrap(),
        aligned(150, 0, "x")
    );
    assert_eq!(
        align_timestamp(150, "x", "x", &[]).unwrap(),
        aligned(150, 0, "x")
    );
    assert_eq!(
        refusal(align_timestamp(-1, "x", "x", al())),
        "timestamp_ns must be non-negative"
    );
    assert_eq!(covering_alignments(150, B, A, al()).len(), 1);
    assert_eq!(covering_alignments(99, B, A, al()).len(), 0);
}

#[test]
fn case_11_two_producers_make_two_entries_and_an_ambiguity() {
    let body = || alignment(B, A, -50, 4, Some(100), Some(200));
    let g = graph_of(vec![
        ev(&Ctx::engine(), "al", body()),
        ev(&Ctx::engine().producer("other"), "al", body()),
        // The same record redelivered under another id by the first producer is one entity.
        ev(&Ctx::engine(), "al-2", body()),
    ]);
    assert_eq!(g.alignments().len(), 2);
    let covering = covering_alignments(150, B, A, g.alignments());
    let producers: Vec<&str> = covering.iter().map(|a| &*a.context().producer_id).collect();
    assert_eq!(producers, ["eng", "other"]);
    assert_eq!(refusal(align_timestamp(150, B, A, g.alignments())), REFUSED);
}

#[test]
fn case_11_negative_results_are_allowed() {
    let g = graph_of(vec![ev(
        &Ctx::engine(),
        "al",
        alignment(B, A, -100, 7, Some(5), Some(10)),
    )]);
    assert_eq!(
        align_timestamp(5, B, A, g.alignments()).unwrap(),
        aligned(-95, 7, A)
    );
}

#[test]
fn open_windows_cover_everything_on_their_open_side() {
    let g = graph_of(vec![ev(
        &Ctx::engine(),
        "al",
        alignment(B, A, 10, 0, None, None),
    )]);
    assert_eq!(
        align_timestamp(0, B, A, g.alignments()).unwrap(),
        aligned(10, 0, A)
    );
    assert_eq!(
        align_timestamp(Nanos::MAX - 10, B, A, g.alignments()).unwrap(),
        aligned(Nanos::MAX, 0, A)
    );
}

#[test]
fn case_12_legacy_execution_import_bounds() {
    let legacy = Ctx::engine().source("stormlog.infer.import_execution");
    let g = graph_of(vec![ev_meta(
        &legacy,
        "al",
        r#"{"gap_ns": 5}"#,
        alignment(B, A, 100, 7, None, None),
    )]);
    assert_eq!(alignment_offset_bounds(&g.alignments()[0]), (100, 105));
    assert_eq!(
        align_timestamp(10, B, A, g.alignments()).unwrap(),
        aligned(112, 3, A)
    );

    let g = graph_of(vec![ev_meta(
        &legacy,
        "al",
        r#"{"gap_ns": 5, "alignment_basis": "anything"}"#,
        alignment(B, A, 100, 7, None, None),
    )]);
    assert_eq!(alignment_offset_bounds(&g.alignments()[0]), (93, 107));
    assert_eq!(
        align_timestamp(10, B, A, g.alignments()).unwrap(),
        aligned(110, 7, A)
    );
}

#[test]
fn the_legacy_rule_needs_the_exact_source_and_an_integer_gap() {
    let cases = [
        ("stormlog.infer.import_execution", r#"{"gap_ns": 5.0}"#),
        ("stormlog.infer.import_execution", r#"{"gap_ns": true}"#),
        ("stormlog.infer.import_execution", r#"{"gap_ns": -1}"#),
        ("stormlog.infer.import_execution", r#"{"gap_ns": "5"}"#),
        ("stormlog.infer.import_executions", r#"{"gap_ns": 5}"#),
        ("eng", r#"{"gap_ns": 5}"#),
    ];
    for (source, metadata) in cases {
        let g = graph_of(vec![ev_meta(
            &Ctx::engine().source(source),
            "al",
            metadata,
            alignment(B, A, 100, 7, None, None),
        )]);
        assert_eq!(
            alignment_offset_bounds(&g.alignments()[0]),
            (93, 107),
            "{source} {metadata}"
        );
    }
    // A zero gap is legacy and exact.
    let g = graph_of(vec![ev_meta(
        &Ctx::engine().source("stormlog.infer.import_execution"),
        "al",
        r#"{"gap_ns": 0}"#,
        alignment(B, A, 100, 7, None, None),
    )]);
    assert_eq!(
        align_timestamp(10, B, A, g.alignments()).unwrap(),
        aligned(110, 0, A)
    );
}

#[test]
fn results_outside_i64_are_errors_not_wraps() {
    let g = graph_of(vec![ev(
        &Ctx::engine(),
        "al",
        alignment(B, A, Nanos::MAX, 0, None, None),
    )]);
    let err = align_timestamp(1, B, A, g.alignments()).unwrap_err();
    assert!(matches!(err, Error::OutOfRange { .. }), "{err:?}");
    // Bounds themselves are exact beyond i64.
    let g = graph_of(vec![ev(
        &Ctx::engine(),
        "al",
        alignment(B, A, Nanos::MIN, Nanos::MAX, None, None),
    )]);
    let (low, high) = alignment_offset_bounds(&g.alignments()[0]);
    assert_eq!(low, i128::from(Nanos::MIN) - i128::from(Nanos::MAX));
    assert_eq!(high, -1);
}
