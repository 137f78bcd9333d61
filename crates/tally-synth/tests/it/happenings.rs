//! Invariants of the format-neutral model.

use std::collections::{BTreeMap, BTreeSet};

use tally_synth::Scenario;
use tally_synth::happening::{Happening, OpKind, Outcome, Role};
use tally_synth::topology::ClockKind;

#[test]
fn topology_mixes_the_four_host_patterns() {
    let topology = Scenario::new(21, 10).topology();
    assert_eq!(topology.hosts.len(), 4);
    let gpus: Vec<usize> = topology.hosts.iter().map(|h| h.gpus.len()).collect();
    assert_eq!(gpus, vec![1, 2, 1, 2]);
    let uuids = topology
        .hosts
        .iter()
        .flat_map(|h| &h.gpus)
        .filter(|g| g.uuid.is_some());
    assert_eq!(
        uuids.count(),
        4,
        "host 2 and host 3's second GPU have no UUID"
    );
    assert!(topology.hosts[1].engine_on_wall_clock);
    assert_eq!(
        topology.hosts[1].gpus[0].trace_clock.kind,
        ClockKind::Monotonic
    );
    assert_eq!(
        topology.hosts[0].gpus[0].trace_clock.kind,
        ClockKind::Device
    );
    let attachments: BTreeSet<_> = topology
        .hosts
        .iter()
        .flat_map(|h| &h.gpus)
        .map(|g| &g.attachment_id)
        .collect();
    assert_eq!(attachments.len(), 6);
}

#[test]
fn steps_are_continuous_batches_in_time_order() {
    let scenario = Scenario::new(22, 600);
    let mut last_end: BTreeMap<u32, i64> = BTreeMap::new();
    let mut last_index: BTreeMap<u32, u64> = BTreeMap::new();
    let mut batch_sizes = Vec::new();
    let mut mixed = 0;
    let mut graphs = 0;
    let mut overlapping_streams = 0;
    for happening in scenario.happenings() {
        let Happening::Step(step) = happening else {
            continue;
        };
        assert!(step.end_t > step.start_t);
        assert!(step.start_t >= *last_end.get(&step.host).unwrap_or(&i64::MIN));
        last_end.insert(step.host, step.end_t);
        let index = last_index.entry(step.host).or_insert(0);
        assert_eq!(step.index, *index + 1);
        *index = step.index;
        let members: BTreeSet<_> = step.members.iter().map(|m| m.attempt).collect();
        assert_eq!(
            members.len(),
            step.members.len(),
            "one role per request per step"
        );
        let prefill: u64 = step.members.iter().filter_map(|m| m.input_tokens).sum();
        assert_eq!(prefill, step.prefill_tokens);
        assert!(step.prefill_tokens + step.decode_tokens <= 2048);
        let roles: BTreeSet<_> = step.members.iter().map(|m| m.role).collect();
        if roles.contains(&Role::Prefill) && roles.contains(&Role::Decode) {
            mixed += 1;
        }
        batch_sizes.push(step.members.len());
        for op in &step.gpu_ops {
            assert!(op.end_t >= op.start_t);
            if let Some(graph) = &op.graph {
                graphs += 1;
                assert_eq!(op.kind, OpKind::Kernel);
                assert_eq!(graph.kernels[0].start_t, op.start_t);
                assert_eq!(graph.kernels.last().unwrap().end_t, op.end_t);
                for pair in graph.kernels.windows(2) {
                    assert!(pair[1].start_t >= pair[0].end_t, "graph kernels overlap");
                }
            }
        }
        for a in &step.gpu_ops {
            for b in &step.gpu_ops {
                if a.gpu == b.gpu
                    && a.stream < b.stream
                    && a.start_t < b.end_t
                    && b.start_t < a.end_t
                {
                    overlapping_streams += 1;
                }
            }
        }
    }
    let mean = batch_sizes.iter().sum::<usize>() as f64 / batch_sizes.len() as f64;
    assert!(
        mean > 8.0,
        "continuous batching keeps batches full: mean {mean}"
    );
    assert!(mixed > 0, "some steps mix prefill chunks and decodes");
    assert!(graphs > 0, "decode-only steps replay CUDA graphs");
    assert!(
        overlapping_streams > 0,
        "work on different streams overlaps"
    );
}

#[test]
fn every_request_ends_and_retries_are_tracked() {
    let scenario = Scenario {
        retry_per_mille: 200,
        ..Scenario::new(23, 300)
    };
    let mut ended = BTreeSet::new();
    let mut failed = 0;
    let mut attempts = BTreeMap::new();
    for happening in scenario.happenings() {
        match happening {
            Happening::RequestEnd(end) => {
                assert!(
                    ended.insert(end.request),
                    "request {} ended twice",
                    end.request
                );
                assert!(end.client_end_t > end.client_start_t);
            }
            Happening::AttemptEnd(end) => {
                if end.outcome != Outcome::Ok {
                    failed += 1;
                    assert!(end.attempt.tracked);
                    assert!(end.detokenize.is_none());
                }
                attempts.insert(
                    (end.attempt.request, end.attempt.attempt),
                    end.attempt.tracked,
                );
            }
            _ => {}
        }
    }
    assert_eq!(ended, (0..300).collect());
    assert!(failed > 20, "{failed} failed attempts at 20% retries");
    for ((request, attempt), tracked) in &attempts {
        if *attempt == 2 {
            assert!(tracked);
            assert_eq!(attempts.get(&(*request, 1)), Some(&true));
        }
    }
}
