//! The correlation contexts of a simulated run: who reports what, on which clock.
//!
//! One shared [`CorrelationContext`] per reporter, built once from the [`Topology`]: the client
//! (wall clock, active), the clock-sync probe, each host's engine adapter (its engine clock,
//! passive, reported), each GPU's imported Kineto trace (its trace clock, the GPU's UUID when
//! known) and each host's NVML sampler (wall clock, estimated). Records share these `Arc`s, so
//! lowering costs no context allocation per record.
//!
//! Deliberately not here: any record building (see [`crate::lower`]).

use std::sync::Arc;

use tally_evidence::{ClockKind, CollectionMode, CorrelationContext, Provenance};

use crate::topology::{self, Clock, Topology};

/// Version string reported by the simulated stormlog.
pub(crate) const STORMLOG_VERSION: &str = "0.4.3";

/// The contexts of one run.
pub(crate) struct Contexts {
    pub client: Arc<CorrelationContext>,
    pub clock_sync: Arc<CorrelationContext>,
    /// Per host.
    pub engines: Vec<Arc<CorrelationContext>>,
    /// Per host, per GPU.
    pub traces: Vec<Vec<Arc<CorrelationContext>>>,
    /// Per host (only hosts with a sampler have one).
    pub samplers: Vec<Option<Arc<CorrelationContext>>>,
}

impl Contexts {
    pub(crate) fn new(topology: &Topology) -> Self {
        let run = topology.run_id.as_str();
        let world = topology.hosts.len() as u64;
        let client = &topology.client;
        let client_context = |producer: &str, source: &str| CorrelationContext {
            host: Some(client.name.as_str().into()),
            pid: Some(client.pid),
            source_version: Some(STORMLOG_VERSION.into()),
            collection_mode: CollectionMode::Active,
            provenance: Provenance::Observed,
            ..bare(run, "sess-client", producer, source, &client.wall)
        };
        let engines = topology
            .hosts
            .iter()
            .map(|host| {
                let session = format!("sess-w{}", host.index);
                let producer = format!("engine-{}", host.index);
                Arc::new(CorrelationContext {
                    source_version: Some(STORMLOG_VERSION.into()),
                    engine: Some("vllm".into()),
                    engine_version: Some("0.11.0".into()),
                    backend: Some("cuda".into()),
                    backend_version: Some("12.8".into()),
                    host: Some(host.name.as_str().into()),
                    pid: Some(host.engine_pid),
                    rank: Some(u64::from(host.index)),
                    world_size: Some(world),
                    ..bare(
                        run,
                        &session,
                        &producer,
                        "vllm-adapter",
                        host.engine_clock(),
                    )
                })
            })
            .collect();
        let traces = topology
            .hosts
            .iter()
            .map(|host| {
                let session = format!("sess-w{}", host.index);
                host.gpus
                    .iter()
                    .map(|gpu| {
                        Arc::new(CorrelationContext {
                            source_version: Some(STORMLOG_VERSION.into()),
                            engine: Some("vllm".into()),
                            engine_version: Some("0.11.0".into()),
                            backend: Some("cupti".into()),
                            backend_version: Some("12080".into()),
                            host: Some(host.name.as_str().into()),
                            device_uuid: gpu.uuid.as_deref().map(Into::into),
                            pid: Some(gpu.pid),
                            rank: Some(u64::from(host.index)),
                            local_rank: Some(u64::from(gpu.index)),
                            world_size: Some(world),
                            collection_mode: CollectionMode::Imported,
                            provenance: Provenance::Observed,
                            ..bare(
                                run,
                                &session,
                                "stormlog.trace.kineto",
                                "kineto",
                                &gpu.trace_clock,
                            )
                        })
                    })
                    .collect()
            })
            .collect();
        let samplers = topology
            .hosts
            .iter()
            .map(|host| {
                host.sampler.then(|| {
                    let session = format!("sess-w{}", host.index);
                    let producer = format!("sampler-{}", host.index);
                    Arc::new(CorrelationContext {
                        host: Some(host.name.as_str().into()),
                        pid: Some(4000 + u64::from(host.index)),
                        device_uuid: host.gpus[0].uuid.as_deref().map(Into::into),
                        provenance: Provenance::Estimated,
                        ..bare(run, &session, &producer, "nvml-sampler", &host.wall)
                    })
                })
            })
            .collect();
        Self {
            client: Arc::new(client_context("client", "stormlog.infer.profile")),
            clock_sync: Arc::new(client_context("clock-sync", "ptp-probe")),
            engines,
            traces,
            samplers,
        }
    }
}

/// A context with only the required keys, passive and reported, on `clock`.
fn bare(
    run: &str,
    session: &str,
    producer: &str,
    source: &str,
    clock: &Clock,
) -> CorrelationContext {
    CorrelationContext {
        run_id: run.into(),
        session_id: session.into(),
        producer_id: producer.into(),
        source: source.into(),
        clock_domain: clock.domain.as_str().into(),
        clock_kind: match clock.kind {
            topology::ClockKind::Monotonic => ClockKind::Monotonic,
            topology::ClockKind::Wall => ClockKind::Wall,
            topology::ClockKind::Device => ClockKind::Device,
        },
        collection_mode: CollectionMode::Passive,
        provenance: Provenance::Reported,
        source_version: None,
        engine: None,
        engine_version: None,
        backend: None,
        backend_version: None,
        host: None,
        device_uuid: None,
        pid: None,
        rank: None,
        local_rank: None,
        world_size: None,
    }
}
