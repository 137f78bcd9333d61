//! Lowering: format-neutral [`Happening`]s to stormlog correlation records.
//!
//! Each happening becomes the records the reporters of a real deployment would write, with the
//! reference's naming: the client's request and attempt records (`r-req-0000042`,
//! `r-req-0000042/a1`), the engine adapter's iterations (`it-N`), memberships
//! (`m-{iteration}-{request}-a{attempt}`), queue/detokenize/sample stages and runtime-launch
//! reports, the Kineto importer's activities (`{attachment}/{n}`, one per GPU operation, a
//! CUDA-graph replay as one version-3 activity whose `metadata.intervals` lists its kernels), the
//! NVML sampler's busy samples, capability reports, and clock alignments. Times are converted
//! from simulated true time to each reporter's clock.
//!
//! Metadata holds only strings and integers (never floats, booleans or NaN), so no record can
//! trip over the reference's Python value-equality quirks (`docs/evidence.md#python-isms`). Planted dangling
//! references and legacy records are added by [`crate::extras`]; the record constructors live in
//! [`crate::shapes`].

use std::sync::Arc;

use tally_evidence::{
    ActivityDomain, ActivityReferenceEvent, ArtifactIdentityEvent, BusyIntervals,
    ClockAlignmentEvent, CorrelationContext, EntityRef, EventBody, InferenceRecord, IterationEvent,
    MembershipEvent, RequestEvent, StageEvent, Text,
};

use crate::contexts::Contexts;
use crate::extras::Extras;
use crate::happening::{AttemptEnd, AttemptId, GpuOp, Happening, Member, OpKind, RequestEnd, Step};
use crate::shapes::{
    MetaText, activity, capabilities, eref, json_str, record, req, runtime_launch,
};
use crate::topology::{ClockKind, Topology};

/// Turns happenings into records; keeps the per-trace activity counters.
pub(crate) struct Lowering {
    topology: Arc<Topology>,
    contexts: Contexts,
    extras: Extras,
    /// Activities emitted so far, per host and GPU (the `n` of `{attachment}/{n}`).
    trace_counters: Vec<Vec<u64>>,
    client: Text,
    kineto: Text,
}

impl Lowering {
    pub(crate) fn new(topology: Arc<Topology>, extras: Extras) -> Self {
        let contexts = Contexts::new(&topology);
        let trace_counters = topology
            .hosts
            .iter()
            .map(|h| vec![0; h.gpus.len()])
            .collect();
        Self {
            topology,
            contexts,
            extras,
            trace_counters,
            client: "client".into(),
            kineto: "stormlog.trace.kineto".into(),
        }
    }

    /// Appends the records of `happening` to `out`.
    pub(crate) fn lower(&mut self, happening: Happening, out: &mut Vec<InferenceRecord>) {
        match happening {
            Happening::Start => self.start(out),
            Happening::ClockSync {
                host,
                window,
                from_t,
                to_t,
                error_ns,
                uncertainty_ns,
                rtt_ns,
            } => {
                let h = &self.topology.hosts[host as usize];
                let clock = h.engine_clock();
                let client = &self.topology.client.wall;
                out.push(record(
                    &self.contexts.clock_sync,
                    format!("align-{host}-{window}"),
                    format!(r#"{{"method":"ptp","rtt_ns":{rtt_ns}}}"#),
                    EventBody::ClockAlignment(ClockAlignmentEvent {
                        from_clock_domain: clock.domain.as_str().into(),
                        to_clock_domain: client.domain.as_str().into(),
                        offset_ns: client.base - clock.base + error_ns,
                        uncertainty_ns,
                        valid_from_ns: Some(clock.at(from_t)),
                        valid_to_ns: Some(clock.at(to_t)),
                    }),
                ));
            }
            Happening::Scheduled {
                host,
                attempt,
                arrival_t,
                scheduled_t,
            } => {
                let ctx = &self.contexts.engines[host as usize];
                let clock = self.topology.hosts[host as usize].engine_clock();
                let tag = attempt_tag(attempt);
                out.push(record(
                    ctx,
                    format!("st-queue-{}-{tag}", attempt.request),
                    String::new(),
                    EventBody::Stage(StageEvent {
                        stage_ref: eref(
                            &ctx.producer_id,
                            format!("queue-{}-{tag}", req(attempt.request)),
                        ),
                        name: "queue".into(),
                        request_ref: Some(self.request_ref(attempt.request)),
                        iteration_ref: None,
                        start_ns: Some(clock.at(arrival_t)),
                        end_ns: Some(clock.at(scheduled_t)),
                        input_tokens: None,
                        output_tokens: None,
                        kv_bytes: None,
                    }),
                ));
            }
            Happening::Step(step) => self.step(&step, out),
            Happening::AttemptEnd(end) => self.attempt_end(&end, out),
            Happening::RequestEnd(end) => self.request_end(&end, out),
        }
    }

    fn request_ref(&self, request: u64) -> EntityRef {
        eref(&self.client, req(request))
    }

    fn attempt_ref(&self, attempt: AttemptId) -> Option<EntityRef> {
        attempt.tracked.then(|| {
            eref(
                &self.client,
                format!("{}/a{}", req(attempt.request), attempt.attempt),
            )
        })
    }

    fn start(&mut self, out: &mut Vec<InferenceRecord>) {
        let topology = Arc::clone(&self.topology);
        out.push(record(
            &self.contexts.client,
            "artifact",
            String::new(),
            EventBody::Artifact(ArtifactIdentityEvent {
                artifact_kind: "inference_jsonl".into(),
                created_at_ns: topology.client.wall.at(-100_000_000),
            }),
        ));
        for host in &topology.hosts {
            let h = host.index as usize;
            let engine = &self.contexts.engines[h];
            let engine_caps = ["iterations", "membership", "stages", "runtime_correlation"];
            out.push(capabilities(
                engine,
                "cap-engine",
                "engine_adapter",
                &engine_caps,
                &engine_caps,
                String::new(),
            ));
            for gpu in &host.gpus {
                let trace = &self.contexts.traces[h][gpu.index as usize];
                let supported = [
                    "gpu_activity",
                    "cuda_correlation",
                    "iteration_ranges",
                    "cuda_graph_ids",
                    "streams",
                ];
                let collected = [
                    "gpu_activity",
                    "cuda_correlation",
                    "iteration_ranges",
                    "streams",
                    "cuda_graph_ids",
                ];
                let summary = format!(
                    r#"{{"summary":{{"devices":1,"trace":{}}}}}"#,
                    json_str(&gpu.trace_file)
                );
                out.push(capabilities(
                    trace,
                    &format!("cap-trace-{}", gpu.index),
                    "trace_collector",
                    &supported,
                    &collected,
                    summary,
                ));
                if gpu.trace_clock.kind == ClockKind::Device {
                    out.push(record(
                        trace,
                        format!("align-dev-{}", gpu.index),
                        r#"{"method":"cupti_timestamp"}"#.to_owned(),
                        EventBody::ClockAlignment(ClockAlignmentEvent {
                            from_clock_domain: gpu.trace_clock.domain.as_str().into(),
                            to_clock_domain: host.monotonic.domain.as_str().into(),
                            offset_ns: host.monotonic.base - gpu.trace_clock.base,
                            uncertainty_ns: 1_500,
                            valid_from_ns: None,
                            valid_to_ns: None,
                        }),
                    ));
                }
            }
            match &self.contexts.samplers[h] {
                Some(sampler) => out.push(capabilities(
                    sampler,
                    "cap-nvml",
                    "nvml_sampler",
                    &["gpu_busy"],
                    &["gpu_busy"],
                    String::new(),
                )),
                None => out.push(capabilities(
                    engine,
                    "cap-nvml",
                    "nvml_sampler",
                    &[],
                    &[],
                    String::new(),
                )),
            }
            if host.engine_on_wall_clock {
                out.push(record(
                    engine,
                    "align-mono-wall",
                    r#"{"method":"clock_gettime_pair"}"#.to_owned(),
                    EventBody::ClockAlignment(ClockAlignmentEvent {
                        from_clock_domain: host.monotonic.domain.as_str().into(),
                        to_clock_domain: host.wall.domain.as_str().into(),
                        offset_ns: host.wall.base - host.monotonic.base,
                        uncertainty_ns: 1_000,
                        valid_from_ns: None,
                        valid_to_ns: None,
                    }),
                ));
            }
        }
    }

    fn step(&mut self, step: &Step, out: &mut Vec<InferenceRecord>) {
        let topology = Arc::clone(&self.topology);
        let host = &topology.hosts[step.host as usize];
        let engine = Arc::clone(&self.contexts.engines[step.host as usize]);
        let producer = &engine.producer_id;
        let clock = host.engine_clock();
        let n = step.index;
        let iteration = eref(producer, format!("it-{n}"));
        out.push(record(
            &engine,
            format!("it-{n}"),
            format!(
                r#"{{"num_members":{},"prefill_tokens":{},"decode_tokens":{}}}"#,
                step.members.len(),
                step.prefill_tokens,
                step.decode_tokens
            ),
            EventBody::Iteration(IterationEvent {
                iteration_ref: iteration.clone(),
                batch_ref: Some(eref(producer, format!("batch-{n}"))),
                start_ns: Some(clock.at(step.start_t)),
                end_ns: Some(clock.at(step.end_t)),
            }),
        ));
        for member in &step.members {
            out.push(self.membership(&engine, &iteration, n, member));
        }
        for op in &step.gpu_ops {
            out.push(self.gpu_activity(step.host, op, &iteration));
        }
        if let Some((start, end)) = step.sample_stage {
            out.push(record(
                &engine,
                format!("st-sample-{n}"),
                String::new(),
                EventBody::Stage(StageEvent {
                    stage_ref: eref(producer, format!("sample-{n}")),
                    name: "sample".into(),
                    request_ref: None,
                    iteration_ref: Some(iteration.clone()),
                    start_ns: Some(clock.at(start)),
                    end_ns: Some(clock.at(end)),
                    input_tokens: None,
                    output_tokens: None,
                    kv_bytes: None,
                }),
            ));
        }
        if let Some(launch) = &step.runtime_launch {
            out.push(runtime_launch(
                &engine,
                format!("launch-{n}"),
                launch.correlation,
                launch.linked.then(|| iteration.clone()),
            ));
        }
        if step.busy_sample
            && let Some(sampler) = &self.contexts.samplers[step.host as usize]
        {
            out.push(record(
                sampler,
                format!("sample-{n}"),
                format!(r#"{{"utilization_pct":{}}}"#, 60 + n % 40),
                EventBody::Activity(ActivityReferenceEvent {
                    start_ns: Some(host.wall.at(step.start_t)),
                    end_ns: Some(host.wall.at(step.end_t)),
                    ..activity(
                        eref(&sampler.producer_id, format!("gpu-busy-{n}")),
                        "gpu_busy_sample",
                        ActivityDomain::Gpu,
                        Some(iteration.clone()),
                    )
                }),
            ));
        }
        if step.gc_pause {
            out.push(record(
                &engine,
                format!("gc-{n}"),
                r#"{"generation":2}"#.to_owned(),
                EventBody::Activity(activity(
                    eref(producer, format!("gc-{n}")),
                    "python_gc",
                    ActivityDomain::Cpu,
                    None,
                )),
            ));
        }
    }

    fn membership(
        &self,
        engine: &Arc<CorrelationContext>,
        iteration: &EntityRef,
        n: u64,
        member: &Member,
    ) -> InferenceRecord {
        let a = member.attempt;
        record(
            engine,
            format!("m-{n}-{}-{}", a.request, attempt_tag(a)),
            String::new(),
            EventBody::Membership(MembershipEvent {
                request_ref: self.request_ref(a.request),
                iteration_ref: iteration.clone(),
                role: member.role.as_str().into(),
                attempt_ref: self.attempt_ref(a),
                input_tokens: member.input_tokens,
                output_tokens: member.output_tokens,
                kv_bytes: member.kv_bytes,
            }),
        )
    }

    fn gpu_activity(&mut self, host: u32, op: &GpuOp, iteration: &EntityRef) -> InferenceRecord {
        let h = host as usize;
        let g = op.gpu as usize;
        let gpu = &self.topology.hosts[h].gpus[g];
        let ctx = &self.contexts.traces[h][g];
        self.trace_counters[h][g] += 1;
        let id: Text = format!("{}/{}", gpu.attachment_id, self.trace_counters[h][g]).into();
        let reason = if op.launch.is_none() {
            Some("no_launch_record")
        } else if op.outside_iteration {
            Some("launch_outside_iteration_range")
        } else {
            None
        };
        let mut meta = MetaText::new();
        meta.int("device_index", u64::from(op.gpu));
        meta.int(
            "event_count",
            op.graph.as_ref().map_or(1, |g| g.kernels.len() as u64),
        );
        meta.str("first_name", op.name);
        if let Some(launch) = &op.launch {
            meta.str("launch_api", launch.api);
        }
        if let Some(reason) = reason {
            meta.str("unresolved_reason", reason);
        }
        let mut intervals = BusyIntervals::Absent;
        if let Some(graph) = &op.graph {
            let pairs: Vec<(i64, i64)> = graph
                .kernels
                .iter()
                .map(|k| (k.start_t - op.start_t, k.end_t - k.start_t))
                .collect();
            let busy: i64 = pairs.iter().map(|p| p.1).sum();
            meta.int("busy_ns", busy as u64);
            meta.int("summed_duration_ns", busy as u64);
            let list: Vec<String> = pairs.iter().map(|(o, d)| format!("[{o},{d}]")).collect();
            meta.raw("intervals", &format!("[{}]", list.join(",")));
            intervals = BusyIntervals::List(pairs);
        }
        let kind = match op.kind {
            OpKind::Kernel => "gpu_kernel",
            OpKind::Memcpy => "gpu_memcpy",
            OpKind::Memset => "gpu_memset",
        };
        let linked = reason.is_none().then(|| iteration.clone());
        record(
            ctx,
            id.clone(),
            meta.finish(),
            EventBody::Activity(ActivityReferenceEvent {
                trace_attachment_id: Some(gpu.attachment_id.as_str().into()),
                cuda_correlation_id: op.correlation,
                stream_id: Some(op.stream),
                graph_id: op.graph.as_ref().map(|g| g.graph_id),
                start_ns: Some(gpu.trace_clock.at(op.start_t)),
                end_ns: Some(gpu.trace_clock.at(op.end_t)),
                intervals,
                ..activity(
                    EntityRef {
                        producer_id: self.kineto.clone(),
                        id,
                    },
                    kind,
                    ActivityDomain::Gpu,
                    linked,
                )
            }),
        )
    }

    fn attempt_end(&mut self, end: &AttemptEnd, out: &mut Vec<InferenceRecord>) {
        let a = end.attempt;
        let tag = attempt_tag(a);
        let engine = &self.contexts.engines[end.host as usize];
        let clock = self.topology.hosts[end.host as usize].engine_clock();
        if let Some((start, stop)) = end.detokenize {
            out.push(record(
                engine,
                format!("st-detok-{}-{tag}", a.request),
                String::new(),
                EventBody::Stage(StageEvent {
                    stage_ref: eref(
                        &engine.producer_id,
                        format!("detok-{}-{tag}", req(a.request)),
                    ),
                    name: "detokenize".into(),
                    request_ref: Some(self.request_ref(a.request)),
                    iteration_ref: None,
                    start_ns: Some(clock.at(start)),
                    end_ns: Some(clock.at(stop)),
                    input_tokens: None,
                    output_tokens: Some(end.generated_tokens),
                    kv_bytes: None,
                }),
            ));
        }
        if a.tracked {
            let wall = &self.topology.client.wall;
            out.push(record(
                &self.contexts.client,
                format!("r-{}/a{}", req(a.request), a.attempt),
                String::new(),
                EventBody::Request(RequestEvent {
                    request_ref: self.request_ref(a.request),
                    attempt_ref: self.attempt_ref(a),
                    backend_request_ref: Some(eref(&engine.producer_id, end.backend_id.as_str())),
                    start_ns: Some(wall.at(end.client_start_t)),
                    end_ns: Some(wall.at(end.client_end_t)),
                    status: Some(end.outcome.as_str().into()),
                    input_tokens: Some(end.prompt_tokens),
                    output_tokens: Some(end.generated_tokens),
                    kv_bytes: None,
                }),
            ));
        }
    }

    fn request_end(&mut self, end: &RequestEnd, out: &mut Vec<InferenceRecord>) {
        let wall = &self.topology.client.wall;
        out.push(record(
            &self.contexts.client,
            format!("r-{}", req(end.request)),
            r#"{"model":"llama-3.1-8b-instruct","stream":"sse"}"#.to_owned(),
            EventBody::Request(RequestEvent {
                request_ref: self.request_ref(end.request),
                attempt_ref: None,
                backend_request_ref: None,
                start_ns: Some(wall.at(end.client_start_t)),
                end_ns: Some(wall.at(end.client_end_t)),
                status: Some("ok".into()),
                input_tokens: Some(end.prompt_tokens),
                output_tokens: Some(end.output_tokens),
                kv_bytes: None,
            }),
        ));
        let engine = &self.contexts.engines[end.host as usize];
        self.extras.after_request(end, engine, &self.topology, out);
    }
}

/// `a{attempt}` for identified attempts, `a0` otherwise.
fn attempt_tag(a: AttemptId) -> String {
    if a.tracked {
        format!("a{}", a.attempt)
    } else {
        "a0".to_owned()
    }
}
