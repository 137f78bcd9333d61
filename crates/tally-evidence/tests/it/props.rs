//! Property tests: delivery order, redelivery and renamed copies never change the result;
//! accounting agrees with a brute-force oracle written from `docs/evidence.md#accounting`; the interval union
//! agrees with a point-set oracle.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use proptest::prelude::*;
use tally_evidence::interval::{Interval, merge_unions, union, union_length};
use tally_evidence::{
    ActivityDomain, AttributionStatus, BusyIntervals, ClockKind, CorrelationEvent,
    CorrelationGraph, DeviceClock, EventBody, InferenceRecord, Nanos, RunAccounting,
    account_gpu_time, resolve_inference_events,
};

use crate::build::{
    Ctx, activity, alignment, counts, ev, ev_meta, iteration, legacy, membership, r, renamed,
    request, stage,
};

// ---------------------------------------------------------------- random artifacts

#[derive(Clone, Debug)]
struct ActivitySpec {
    iteration: Option<u8>,
    domain: u8,
    context: u8,
    start: Option<u8>,
    len: Option<u8>,
    intervals: Option<Option<Vec<(u8, u8)>>>,
}

#[derive(Clone, Debug)]
struct ArtifactSpec {
    iterations: Vec<(bool, u8, u8, bool)>,
    requests: Vec<(bool, bool, bool)>,
    memberships: Vec<(u8, Option<u8>, u8, bool)>,
    stages: Vec<(Option<u8>, Option<u8>)>,
    activities: Vec<ActivitySpec>,
    alignments: Vec<(bool, i8, u8, Option<u8>)>,
    legacy: u8,
}

fn activity_spec() -> impl Strategy<Value = ActivitySpec> {
    (
        prop::option::weighted(0.7, 0u8..6),
        prop_oneof![6 => Just(0u8), 1 => 1u8..4],
        0u8..7,
        prop::option::weighted(0.95, 0u8..60),
        prop::option::weighted(0.9, 0u8..30),
        prop::option::weighted(
            0.3,
            prop::option::weighted(0.8, prop::collection::vec((0u8..6, 0u8..8), 1..5)),
        ),
    )
        .prop_map(
            |(iteration, domain, context, start, len, intervals)| ActivitySpec {
                iteration,
                domain,
                context,
                start,
                len,
                intervals,
            },
        )
}

fn artifact_spec() -> impl Strategy<Value = ArtifactSpec> {
    (
        prop::collection::vec(
            (prop::bool::weighted(0.8), 0u8..50, 0u8..40, any::<bool>()),
            4,
        ),
        prop::collection::vec((any::<bool>(), any::<bool>(), any::<bool>()), 3),
        prop::collection::vec(
            (0u8..4, prop::option::of(0u8..3), 0u8..6, any::<bool>()),
            0..8,
        ),
        prop::collection::vec((prop::option::of(0u8..4), prop::option::of(0u8..6)), 0..4),
        prop::collection::vec(activity_spec(), 0..14),
        prop::collection::vec(
            (any::<bool>(), -5i8..5, 0u8..4, prop::option::of(0u8..20)),
            0..3,
        ),
        0u8..3,
    )
        .prop_map(
            |(iterations, requests, memberships, stages, activities, alignments, legacy)| {
                ArtifactSpec {
                    iterations,
                    requests,
                    memberships,
                    stages,
                    activities,
                    alignments,
                    legacy,
                }
            },
        )
}

fn activity_context(variant: u8) -> Ctx {
    let t = Ctx::trace();
    match variant {
        0 => t,
        1 => t.uuid(Some("GPU-B")),
        2 => t.kind(ClockKind::Device),
        3 => t.kind(ClockKind::Wall),
        4 => t.uuid(None),
        5 => t.domain("w2/mono"),
        _ => t.producer("tr2").host("h2"),
    }
}

/// Builds the records of a spec: every entity once, event ids `e0, e1, ...`.
fn records_of(spec: &ArtifactSpec) -> Vec<InferenceRecord> {
    let mut out = Vec::new();
    let mut next = 0usize;
    let mut id = || {
        next += 1;
        format!("e{}", next - 1)
    };
    let e = Ctx::engine();
    let c = Ctx::client();
    for (i, &(present, start, len, wall)) in spec.iterations.iter().enumerate() {
        if present {
            let ctx = if wall {
                e.clone().kind(ClockKind::Wall)
            } else {
                e.clone()
            };
            let (start, end) = (Nanos::from(start), Nanos::from(start) + Nanos::from(len));
            out.push(ev(
                &ctx,
                &id(),
                iteration(&format!("I{i}"), Some(start), Some(end)),
            ));
        }
    }
    for (i, &(generic, a0, a1)) in spec.requests.iter().enumerate() {
        let name = format!("R{i}");
        for (present, attempt) in [(generic, None), (a0, Some("a0")), (a1, Some("a1"))] {
            if present {
                let attempt = attempt.map(|a| format!("{name}/{a}"));
                out.push(ev(&c, &id(), request(&name, attempt.as_deref())));
            }
        }
    }
    for &(req, attempt, it, prefill) in &spec.memberships {
        let name = format!("R{req}");
        let attempt = attempt.map(|a| r("cli", &format!("{name}/a{a}")));
        let role = if prefill { "prefill" } else { "decode" };
        let body = membership(r("cli", &name), attempt, &format!("I{it}"), role);
        out.push(ev(&e, &id(), body));
    }
    for (i, &(req, it)) in spec.stages.iter().enumerate() {
        let (req, it) = if req.is_none() && it.is_none() {
            (Some(0), None)
        } else {
            (req, it)
        };
        let body = stage(
            &format!("S{i}"),
            req.map(|q| r("cli", &format!("R{q}"))),
            it.map(|i| r("eng", &format!("I{i}"))),
        );
        out.push(ev(&e, &id(), body));
    }
    for (i, a) in spec.activities.iter().enumerate() {
        let it = a.iteration.map(|i| format!("I{i}"));
        let start = a.start.map(Nanos::from);
        let end = start.zip(a.len).map(|(s, l)| s + Nanos::from(l));
        let end = if a.len.is_some() && start.is_none() {
            Some(90)
        } else {
            end
        };
        let mut body = activity(&format!("A{i}"), it.as_deref(), start, end);
        body.activity_domain = match a.domain {
            0 => ActivityDomain::Gpu,
            1 => ActivityDomain::Runtime,
            2 => ActivityDomain::Cpu,
            _ => ActivityDomain::Unknown,
        };
        let mut metadata = "{}".to_string();
        if let (Some(intervals), Some(s), Some(e)) = (&a.intervals, start, end) {
            match intervals {
                None => {
                    body.intervals = BusyIntervals::Null;
                    metadata = r#"{"intervals": null}"#.into();
                }
                Some(pairs) => {
                    let mut list = Vec::new();
                    let mut cursor = 0;
                    for &(gap, dur) in pairs {
                        let offset = cursor + Nanos::from(gap);
                        if s + offset + Nanos::from(dur) > e {
                            break;
                        }
                        list.push((offset, Nanos::from(dur)));
                        cursor = offset + Nanos::from(dur);
                    }
                    if !list.is_empty() {
                        let json: Vec<String> =
                            list.iter().map(|(o, d)| format!("[{o}, {d}]")).collect();
                        metadata = format!(r#"{{"intervals": [{}]}}"#, json.join(", "));
                        body.intervals = BusyIntervals::List(list);
                    }
                }
            }
        }
        out.push(ev_meta(
            &activity_context(a.context),
            &id(),
            &metadata,
            EventBody::Activity(body),
        ));
    }
    for &(other, offset, unc, from) in &spec.alignments {
        let ctx = if other {
            e.clone().producer("other")
        } else {
            e.clone()
        };
        let from = from.map(Nanos::from);
        let body = alignment("b", "a", Nanos::from(offset), Nanos::from(unc), from, None);
        out.push(ev(&ctx, &id(), body));
    }
    for _ in 0..spec.legacy {
        out.push(legacy());
    }
    out
}

/// splitmix64: a tiny deterministic generator for shuffles driven by a proptest seed.
struct Mix(u64);
impl Mix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            v.swap(i, self.below(i + 1));
        }
    }
}

/// Everything order-independent about a resolution: counts, unresolved, membership and
/// alignment lists (event ids), and the accounting.
type Outcome = (
    (
        Option<tally_evidence::Text>,
        [usize; 6],
        Vec<tally_evidence::UnresolvedReference>,
        Vec<String>,
        Vec<String>,
    ),
    RunAccounting,
);

fn outcome(graph: &CorrelationGraph) -> Outcome {
    let memberships: Vec<String> = graph
        .memberships()
        .iter()
        .map(|m| m.event_id().to_string())
        .collect();
    let alignments: Vec<String> = graph
        .alignments()
        .iter()
        .map(|a| a.event_id().to_string())
        .collect();
    let stable = (
        graph.run_id().cloned(),
        counts(graph),
        graph.unresolved().to_vec(),
        memberships,
        alignments,
    );
    (stable, account_gpu_time(graph).unwrap())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn delivery_order_redelivery_and_renamed_copies_change_nothing(
        spec in artifact_spec(),
        seed in any::<u64>(),
    ) {
        let base = records_of(&spec);
        let expected = outcome(&resolve_inference_events(base.clone()).unwrap());

        let mut rng = Mix(seed);
        let mut shuffled = base.clone();
        rng.shuffle(&mut shuffled);
        prop_assert_eq!(&outcome(&resolve_inference_events(shuffled.clone()).unwrap()), &expected);

        // Redeliver a random subset, and a renamed copy (its id sorts after the original) of
        // another, all at random places.
        let mut noisy = shuffled;
        for record in &base {
            match rng.below(4) {
                0 => noisy.push(record.clone()),
                1 => {
                    if let InferenceRecord::Event(e) = record {
                        noisy.push(renamed(record, &format!("{}~re", e.event_id())));
                    }
                }
                _ => {}
            }
        }
        rng.shuffle(&mut noisy);
        prop_assert_eq!(&outcome(&resolve_inference_events(noisy).unwrap()), &expected);
    }

    #[test]
    fn accounting_matches_a_brute_force_oracle(spec in artifact_spec()) {
        let graph = resolve_inference_events(records_of(&spec)).unwrap();
        let acc = account_gpu_time(&graph).unwrap();
        let oracle = oracle_accounting(&graph);
        prop_assert_eq!(&acc.device_totals, &oracle.device_totals);
        prop_assert_eq!(&acc.iterations, &oracle.iterations);
        prop_assert_eq!(&acc.unattributed_activity_refs, &oracle.unattributed_activity_refs);
        prop_assert_eq!(&acc.unmeasured_gpu_activity_refs, &oracle.unmeasured_gpu_activity_refs);
        prop_assert_eq!(acc.iterations.len(), graph.iterations().len());

        for (key, total) in &acc.device_totals {
            prop_assert!(total.busy_ns <= total.summed_activity_ns);
            if let Some(span) = acc.device_spans.get(key) {
                prop_assert!(total.busy_ns <= span.len_ns());
            } else {
                prop_assert_eq!(total.busy_ns, 0);
            }
            let mut iteration_busy = 0;
            let mut iteration_summed = 0;
            for timing in acc.iterations.values() {
                if let Some(t) = timing.gpu.get(key) {
                    prop_assert!(t.busy_ns <= t.summed_activity_ns);
                    prop_assert!(total.busy_ns >= t.busy_ns);
                    iteration_busy += t.busy_ns;
                    iteration_summed += t.summed_activity_ns;
                }
            }
            let unlinked = total.summed_activity_ns - iteration_summed;
            prop_assert!(total.busy_ns <= iteration_busy + unlinked);
        }
    }

    #[test]
    fn union_matches_a_point_set_oracle(
        raw in prop::collection::vec((-20i64..20, 0i64..12), 0..12),
    ) {
        let mut intervals: Vec<Interval> =
            raw.iter().map(|&(s, l)| Interval::new(s, s + l).unwrap()).collect();
        let points = covered_points(&intervals);
        prop_assert_eq!(union_length(&mut intervals.clone()), points.len() as u64);
        prop_assert_eq!(union(&mut intervals), runs_of(&points));
    }

    #[test]
    fn merging_two_unions_is_the_union_of_the_concatenation(
        a in prop::collection::vec((0i64..40, 0i64..10), 0..8),
        b in prop::collection::vec((0i64..40, 0i64..10), 0..8),
    ) {
        let to_iv = |v: &[(i64, i64)]| -> Vec<Interval> {
            v.iter().map(|&(s, l)| Interval::new(s, s + l).unwrap()).collect()
        };
        let (mut a, mut b) = (to_iv(&a), to_iv(&b));
        let mut both: Vec<Interval> = a.iter().chain(b.iter()).copied().collect();
        let merged = merge_unions(&union(&mut a), &union(&mut b));
        prop_assert_eq!(merged, union(&mut both));
    }
}

// ---------------------------------------------------------------- oracles

fn covered_points(intervals: &[Interval]) -> BTreeSet<i64> {
    intervals.iter().flat_map(|i| i.start()..i.end()).collect()
}

fn runs_of(points: &BTreeSet<i64>) -> Vec<Interval> {
    let mut runs: Vec<Interval> = Vec::new();
    for &p in points {
        match runs.last_mut() {
            Some(last) if last.end() == p => *last = Interval::new(last.start(), p + 1).unwrap(),
            _ => runs.push(Interval::new(p, p + 1).unwrap()),
        }
    }
    runs
}

/// `docs/evidence.md#accounting` read literally: point sets per group, no sorting tricks.
fn oracle_accounting(graph: &CorrelationGraph) -> RunAccounting {
    type Group = (u64, BTreeSet<i64>, u64);
    let mut devices: BTreeMap<DeviceClock, Group> = BTreeMap::new();
    let mut iterations: BTreeMap<_, BTreeMap<DeviceClock, Group>> = BTreeMap::new();
    let mut unattributed = BTreeSet::new();
    let mut unmeasured = BTreeSet::new();
    for entry in graph.activities() {
        let a = entry.body();
        let ctx = entry.context();
        if a.attribution_status == AttributionStatus::Unresolved {
            unattributed.insert(a.activity_ref.clone());
        }
        if a.activity_domain != ActivityDomain::Gpu {
            continue;
        }
        let (Some(uuid), Some(start), Some(end)) = (&ctx.device_uuid, a.start_ns, a.end_ns) else {
            unmeasured.insert(a.activity_ref.clone());
            continue;
        };
        if ctx.clock_kind == ClockKind::Wall {
            unmeasured.insert(a.activity_ref.clone());
            continue;
        }
        let busy: Vec<(i64, i64)> = match &a.intervals {
            BusyIntervals::List(list) => list
                .iter()
                .map(|&(o, d)| (start + o, start + o + d))
                .collect(),
            _ => vec![(start, end)],
        };
        let key = DeviceClock {
            device_uuid: uuid.clone(),
            clock_domain: ctx.clock_domain.clone(),
            clock_kind: ctx.clock_kind,
        };
        let add = |group: &mut Group| {
            for &(s, e) in &busy {
                group.0 += (e - s) as u64;
                group.1.extend(s..e);
            }
            group.2 += 1;
        };
        add(devices.entry(key.clone()).or_default());
        if let Some(it) = &a.iteration_ref
            && graph.iterations().contains(it)
        {
            add(iterations
                .entry(it.clone())
                .or_default()
                .entry(key)
                .or_default());
        }
    }
    let time = |(summed, points, count): Group| tally_evidence::GpuTime {
        summed_activity_ns: summed,
        busy_ns: points.len() as u64,
        activity_count: count,
    };
    let iterations = graph
        .iterations()
        .iter()
        .map(|it| {
            let b = it.body();
            let elapsed = match (it.context().clock_kind, b.start_ns, b.end_ns) {
                (ClockKind::Monotonic, Some(s), Some(e)) => Some(e - s),
                _ => None,
            };
            let gpu = iterations
                .remove(&b.iteration_ref)
                .unwrap_or_default()
                .into_iter()
                .map(|(k, g)| (k, time(g)))
                .collect();
            (
                b.iteration_ref.clone(),
                tally_evidence::IterationTiming {
                    elapsed_ns: elapsed,
                    gpu,
                },
            )
        })
        .collect();
    RunAccounting {
        run_id: graph.run_id().cloned(),
        iterations,
        device_totals: devices.into_iter().map(|(k, g)| (k, time(g))).collect(),
        device_spans: BTreeMap::new(),
        unattributed_activity_refs: unattributed.into_iter().collect(),
        unmeasured_gpu_activity_refs: unmeasured.into_iter().collect(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Resolution compares records directly (`CorrelationEvent`'s equality is the same
    /// comparison); it must decide exactly what fingerprint equality decides, for every pair of
    /// records of an artifact, contexts compared by value (each copy gets its own allocation).
    #[test]
    fn direct_comparison_agrees_with_fingerprints(spec in artifact_spec()) {
        let events: Vec<CorrelationEvent> = records_of(&spec)
            .into_iter()
            .filter_map(|r| match r {
                InferenceRecord::Event(e) => Some(e),
                InferenceRecord::Legacy(_) => None,
            })
            .collect();
        for x in &events {
            for y in &events {
                let y = CorrelationEvent::new(
                    Arc::new(y.context().clone()),
                    x.event_id_text().clone(),
                    y.metadata().clone(),
                    y.body().clone(),
                );
                prop_assert_eq!(*x == y, x.fingerprint() == y.fingerprint());
            }
        }
    }
}
