use super::*;

const MS: u64 = 1_000_000;

/// A successful record: due at `at` ms, sent at once, first token after `ttft` ms, then
/// `tokens - 1` tokens every `gap` ms, one per chunk, ending with the last token.
fn ok_record(index: u64, at: u64, ttft: u64, gap: u64, tokens: u64) -> RequestRecord {
    let mut r = RequestRecord::new(Phase::Measured, index, format!("tally-t-{index}"), at * MS);
    r.sent_ns = Some(at * MS);
    r.head_ns = Some(at * MS);
    r.chunk_ns = (0..tokens).map(|k| (at + ttft + k * gap) * MS).collect();
    r.first_token_ns = r.chunk_ns.first().copied();
    r.last_token_ns = r.chunk_ns.last().copied();
    r.end_ns = r.last_token_ns;
    r.chunks = tokens as u32;
    r.output_tokens = Some(tokens);
    r.output_tokens_source = TokenSource::ServerUsage;
    r.prompt_tokens = Some(10);
    r.status = Status::Ok;
    r.finish_reason = Some("length".into());
    r
}

fn failed(index: u64, status: Status) -> RequestRecord {
    let mut r = RequestRecord::new(Phase::Measured, index, format!("tally-t-{index}"), 0);
    r.sent_ns = Some(0);
    r.status = status;
    r
}

fn input(records: &[RequestRecord], window_ms: (u64, u64)) -> SummaryInput<'_> {
    SummaryInput {
        records,
        window_ns: (window_ms.0 * MS, window_ms.1 * MS),
        rule: RateRule::Cohort,
        slo: None,
        allow_chunk_counts: false,
        open_loop_mean_gap_ms: None,
        max_error_fraction: 0.01,
    }
}

fn metric(summary: &Summary, name: &str) -> Option<f64> {
    summary
        .metrics
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| *v)
}

#[test]
fn exact_requests_give_exact_figures() {
    // 10 requests, TTFT 50 ms, gap 10 ms, 20 tokens: E2E 240, TPOT 10, ICL 10.
    let records: Vec<_> = (0..10).map(|i| ok_record(i, i * 240, 50, 10, 20)).collect();
    let summary = summarize(&input(&records, (0, 2400)));
    assert_eq!(metric(&summary, "ttft_p50_ms"), Some(50.0));
    assert_eq!(metric(&summary, "e2e_p99_ms"), Some(240.0));
    assert_eq!(metric(&summary, "p50_ms"), Some(240.0));
    assert_eq!(metric(&summary, "tpot_p50_ms"), Some(10.0));
    assert_eq!(metric(&summary, "icl_p95_ms"), Some(10.0));
    assert_eq!(metric(&summary, "requests_per_s"), Some(10.0 / 2.4));
    assert_eq!(metric(&summary, "output_tokens_per_s"), Some(200.0 / 2.4));
    assert_eq!(metric(&summary, "total_tokens_per_s"), Some(300.0 / 2.4));
    assert_eq!(
        metric(&summary, "throughput"),
        metric(&summary, "output_tokens_per_s")
    );
    assert_eq!(metric(&summary, "error_fraction"), Some(0.0));
    assert!(summary.untrustworthy.is_empty());
}

#[test]
fn chunk_counts_are_not_trusted_unless_allowed() {
    let mut records: Vec<_> = (0..4).map(|i| ok_record(i, 0, 50, 10, 20)).collect();
    for r in &mut records {
        r.output_tokens_source = TokenSource::Chunks;
    }
    let summary = summarize(&input(&records, (0, 1000)));
    assert_eq!(metric(&summary, "tpot_p50_ms"), None);
    assert_eq!(metric(&summary, "throughput"), None);
    assert!(metric(&summary, "p50_ms").is_some());
    assert!(!summary.notes.is_empty());
    let mut allowed = input(&records, (0, 1000));
    allowed.allow_chunk_counts = true;
    assert_eq!(metric(&summarize(&allowed), "tpot_p50_ms"), Some(10.0));
}

#[test]
fn failures_penalize_quantiles_and_trip_the_error_limit() {
    // 98 successes with E2E 1..98 ms, 2 failures.
    let mut records: Vec<_> = (1..=98).map(|i| ok_record(i, 0, i, 1, 1)).collect();
    records.push(failed(99, Status::Error));
    records.push(failed(100, Status::Timeout));
    let summary = summarize(&input(&records, (0, 1000)));
    let values: Vec<f64> = (1..=98).map(f64::from).collect();
    assert_eq!(
        metric(&summary, "e2e_p50_ms"),
        quantile_sorted(&values, 0.5 / 0.98)
    );
    assert_eq!(metric(&summary, "e2e_p99_ms"), Some(f64::INFINITY));
    assert_eq!(metric(&summary, "error_fraction"), Some(0.02));
    assert_eq!(summary.counts.get(&Status::Timeout), Some(&1));
    assert_eq!(
        summary.untrustworthy,
        [Untrustworthy::TooManyErrors {
            fraction: 0.02,
            limit: 0.01
        }]
    );
    assert_eq!(format_value(f64::INFINITY), "inf");
}

#[test]
fn events_in_window_count_chunks_and_ends_inside() {
    // Two requests: one entirely in W = [100, 200), one straddling its start.
    let inside = ok_record(0, 120, 10, 10, 5); // chunks 130..170, ends 170
    let mut straddling = ok_record(1, 60, 10, 10, 5); // chunks 70..110, ends 110
    straddling.phase = Phase::Warmup;
    let records = [inside, straddling];
    let mut rule = input(&records, (100, 200));
    rule.rule = RateRule::EventsInWindow;
    let summary = summarize(&rule);
    // Both ended inside W; chunks inside: 5 + 2 (100 and 110).
    assert_eq!(metric(&summary, "requests_per_s"), Some(2.0 / 0.1));
    assert!((metric(&summary, "output_tokens_per_s").unwrap() - 7.0 / 0.1).abs() < 1e-9);
    assert_eq!(metric(&summary, "requests_offered"), Some(1.0));
}

#[test]
fn goodput_counts_met_cohort_requests() {
    let records: Vec<_> = (0..4)
        .map(|i| ok_record(i, 0, 10 * (i + 1), 10, 3))
        .collect();
    let mut with_slo = input(&records, (0, 1000));
    with_slo.slo = Some(Slo::parse("ttft:20,tpot:10").unwrap());
    let summary = summarize(&with_slo);
    assert_eq!(metric(&summary, "goodput_rps"), Some(2.0));
    assert_eq!(metric(&summary, "slo_attainment"), Some(0.5));
    assert!(Slo::parse("ttft:x").is_err() && Slo::parse("foo:1").is_err());
}

#[test]
fn saturation_is_judged_on_unheld_requests() {
    let mut records: Vec<_> = (0..100).map(|i| ok_record(i, i * 10, 5, 1, 1)).collect();
    for r in &mut records[..5] {
        r.sent_ns = Some(r.intended_ns + 50 * MS);
        r.held_for_slot = true;
    }
    let mut open = input(&records, (0, 1000));
    open.open_loop_mean_gap_ms = Some(10.0);
    assert!(summarize(&open).untrustworthy.is_empty());
    for r in &mut records[..5] {
        r.held_for_slot = false;
    }
    let mut open = input(&records, (0, 1000));
    open.open_loop_mean_gap_ms = Some(10.0);
    assert!(matches!(
        summarize(&open).untrustworthy.as_slice(),
        [Untrustworthy::ClientSaturated { .. }]
    ));
}

#[test]
fn metric_names_are_a_contract() {
    let names = metric_names(true);
    assert_eq!(names.len(), 8 + 15 + 4 + 2 + 4);
    let records: Vec<_> = (0..30).map(|i| ok_record(i, i * 10, 5, 1, 3)).collect();
    let mut all = input(&records, (0, 1000));
    all.slo = Some(Slo::parse("e2e:100").unwrap());
    let printed: Vec<String> = summarize(&all)
        .metrics
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(printed, names);
}
