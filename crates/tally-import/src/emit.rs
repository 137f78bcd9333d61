//! The shared back half of both importers: GPU events in, evidence records out.
//!
//! [`Emitter`] owns one input's launch table and iteration index, links each GPU event by the rule
//! of [`crate::linking`], resolves its device identity (option, trace, or derived), builds the
//! `infer.activity_ref` record with a shared context, hands it to the sink and keeps the per-device
//! figures for the summary. At kernel detail a record leaves as soon as its event arrives; at
//! launch detail records are grouped per launch and leave at [`Emitter::finish`]. It does not read
//! files (the readers do) and does not write them (the sink does).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use rustc_hash::FxHashMap;
use serde_json::{Map, Value, json};
use tally_evidence::{
    ActivityDomain, ActivityReferenceEvent, AttributionStatus, BusyIntervals, ClockKind,
    CollectionMode, CorrelationContext, CorrelationEvent, EntityRef, EventBody, InferenceRecord,
    IterationEvent, Metadata, Nanos, Provenance, Text,
};

use crate::device_time::DeviceTime;
use crate::error::{Error, Result};
use crate::linking::{FoundIteration, LaunchCall, Link, StepIndex};
use crate::options::{Detail, ImportOptions};
use crate::summary::{DeviceSummary, InputSummary, UuidSource};
use crate::trace::{GpuEvent, GpuKind, LaunchTable, TraceFacts};

/// The scope of CUPTI correlation ids written on every imported activity (`docs/evidence.md#linking`).
pub const CORRELATION_SCOPE: (&str, &str) = ("cupti", "correlation_id");

/// Where records go; returning an error stops the import.
pub type Sink<'a> = dyn FnMut(InferenceRecord) -> Result<()> + 'a;

/// Run-wide identity shared by every record of one import.
#[derive(Clone, Debug)]
pub struct RunIdentity {
    /// Run id.
    pub run_id: Text,
    /// Session id.
    pub session_id: Text,
}

struct DeviceEntry {
    uuid: Option<Text>,
    source: UuidSource,
    name: Option<Text>,
    all: DeviceTime,
    kernels: DeviceTime,
}

struct Group {
    device: (Option<i64>, Option<u32>),
    kind: GpuKind,
    correlation: Option<u64>,
    link: Link,
    launch: Option<LaunchCall>,
    first: GpuEvent,
    intervals: Vec<(Nanos, Nanos)>,
    streams: BTreeSet<Option<u64>>,
    graphs: BTreeSet<Option<u64>>,
}

/// Links, identifies and emits the GPU events of one input.
pub struct Emitter<'a> {
    facts: &'a TraceFacts,
    run: &'a RunIdentity,
    options: &'a ImportOptions,
    launches: LaunchTable,
    steps: StepIndex,
    iterations: u64,
    contexts: FxHashMap<(Option<i64>, Option<Text>), Arc<CorrelationContext>>,
    devices: BTreeMap<(Option<i64>, Option<u32>), DeviceEntry>,
    next_id: u64,
    next_runtime_id: u64,
    gpu_events: u64,
    runtime_records: u64,
    linked: u64,
    reasons: BTreeMap<String, u64>,
    graph_events: u64,
    groups: Vec<Group>,
    group_index: FxHashMap<(Option<i64>, Option<u32>, GpuKind, u64), usize>,
}

impl<'a> Emitter<'a> {
    /// Prepares the emitter and sends the input's iteration records to `sink`.
    pub fn start(
        facts: &'a TraceFacts,
        run: &'a RunIdentity,
        options: &'a ImportOptions,
        launches: LaunchTable,
        iterations: Vec<FoundIteration>,
        sink: &mut Sink<'_>,
    ) -> Result<Self> {
        let steps = StepIndex::new(&iterations);
        let mut launches = launches;
        launches.seal();
        let mut emitter = Self {
            facts,
            run,
            options,
            launches,
            steps,
            iterations: iterations.len() as u64,
            contexts: FxHashMap::default(),
            devices: BTreeMap::new(),
            next_id: 0,
            next_runtime_id: 0,
            gpu_events: 0,
            runtime_records: 0,
            linked: 0,
            reasons: BTreeMap::new(),
            graph_events: 0,
            groups: Vec::new(),
            group_index: FxHashMap::default(),
        };
        for (n, found) in iterations.iter().enumerate().filter(|(_, f)| f.emit) {
            let context = emitter.context(Some(found.range.pid), None);
            let mut meta = Map::new();
            meta.insert("name".into(), json!(found.range.name));
            meta.insert("tid".into(), json!(&*found.range.tid));
            if let Some(step) = found.step {
                meta.insert("step".into(), json!(step));
            }
            let event_id: Text = format!("{}/iteration/{}", facts.trace_key, n + 1).into();
            let body = EventBody::Iteration(IterationEvent {
                iteration_ref: found.iteration_ref.clone(),
                batch_ref: None,
                start_ns: Some(found.range.start),
                end_ns: Some(found.range.end),
            });
            sink(record(context, event_id, Metadata::from_map(&meta), body))?;
        }
        Ok(emitter)
    }

    fn context(&mut self, pid: Option<i64>, uuid: Option<Text>) -> Arc<CorrelationContext> {
        let facts = self.facts;
        let run = self.run;
        self.contexts
            .entry((pid, uuid.clone()))
            .or_insert_with(|| {
                Arc::new(CorrelationContext {
                    run_id: run.run_id.clone(),
                    session_id: run.session_id.clone(),
                    producer_id: facts.format.producer().into(),
                    source: facts.format.source().into(),
                    clock_domain: facts.clock_domain.clone(),
                    clock_kind: ClockKind::Monotonic,
                    collection_mode: CollectionMode::Imported,
                    provenance: Provenance::Observed,
                    source_version: Some(
                        concat!("tally-import ", env!("CARGO_PKG_VERSION")).into(),
                    ),
                    engine: facts.engine.clone(),
                    engine_version: facts.engine_version.clone(),
                    backend: facts.backend.clone(),
                    backend_version: facts.backend_version.clone(),
                    host: facts.host.clone(),
                    device_uuid: uuid,
                    pid: pid.and_then(|p| u64::try_from(p).ok()),
                    rank: facts.rank,
                    local_rank: None,
                    world_size: facts.world_size.filter(|&w| w >= 1),
                })
            })
            .clone()
    }

    /// The identity of device `device` of process `pid` (None for single-process formats).
    fn device(&mut self, pid: Option<i64>, device: Option<u32>) -> Result<&mut DeviceEntry> {
        let key = (pid, device);
        if !self.devices.contains_key(&key) {
            let entry = self.resolve_device(pid, device)?;
            self.devices.insert(key, entry);
        }
        Ok(self.devices.get_mut(&key).expect("inserted above"))
    }

    fn resolve_device(&self, pid: Option<i64>, device: Option<u32>) -> Result<DeviceEntry> {
        let facts = self.facts;
        let entry = |uuid: Option<Text>, source| DeviceEntry {
            uuid,
            source,
            name: device.and_then(|d| facts.device_names.get(&d).cloned()),
            all: DeviceTime::default(),
            kernels: DeviceTime::default(),
        };
        let Some(index) = device else {
            return Ok(entry(None, UuidSource::Unknown));
        };
        let process = pid.or(facts.main_pid);
        let named = process.and_then(|p| facts.trace_uuids.get(&(p, index)).cloned());
        let given = self
            .options
            .device_uuids
            .iter()
            .rfind(|o| o.index == index && o.applies_to(&facts.path));
        if let Some(given) = given {
            if let Some(named) = named.as_deref().filter(|n| *n != given.uuid) {
                return Err(Error::usage(format!(
                    "--device-uuid {index}={}: {} names device {index} {named}; \
                     drop the option or fix the UUID",
                    given.uuid,
                    facts.path.display()
                )));
            }
            return Ok(entry(Some(given.uuid.as_str().into()), UuidSource::Option));
        }
        if let Some(named) = named {
            return Ok(entry(Some(named), UuidSource::Trace));
        }
        let host = facts.host.as_deref().unwrap_or("unknown-host");
        let process = process.map(|p| format!(":pid{p}")).unwrap_or_default();
        let name = facts
            .device_names
            .get(&index)
            .map(|n| format!(":{}", n.replace(char::is_whitespace, "-")))
            .unwrap_or_default();
        let derived = format!(
            "derived:{}:{host}{process}:gpu{index}{name}",
            facts.format.source()
        );
        Ok(entry(Some(derived.into()), UuidSource::Derived))
    }

    fn launch_of(&self, event: &GpuEvent) -> Option<LaunchCall> {
        event
            .correlation
            .and_then(|c| self.launches.get(event.pid, c))
    }

    /// Links, accounts and emits (or groups) one GPU event.
    pub fn gpu_event(&mut self, event: GpuEvent, sink: &mut Sink<'_>) -> Result<()> {
        self.gpu_events += 1;
        let launch = self.launch_of(&event);
        let link = match &launch {
            None => Link::Unresolved(crate::linking::UnresolvedReason::NoLaunchRecord),
            Some(call) => self.steps.link(call.pid, call.start),
        };
        match &link {
            Link::Linked(_) => self.linked += 1,
            Link::Unresolved(reason) => {
                *self.reasons.entry(reason.as_str().to_owned()).or_default() += 1;
            }
        }
        let graph_launch = launch.as_ref().is_some_and(|l| {
            l.name.starts_with("cudaGraphLaunch") || l.name.starts_with("cuGraphLaunch")
        });
        if event.graph_id.is_some() || graph_launch {
            self.graph_events += 1;
        }
        let device = self.device(event.pid, event.device)?;
        device.all.add(&[(event.start, event.end)]);
        if event.kind == GpuKind::Kernel {
            device.kernels.add(&[(event.start, event.end)]);
        }
        match (self.options.detail, event.correlation) {
            (Detail::Launch, Some(correlation)) => {
                // The link is a function of the launch, so the launch key alone groups.
                let key = (event.pid, event.device, event.kind, correlation);
                match self.group_index.get(&key) {
                    Some(&at) => {
                        let group = &mut self.groups[at];
                        group.intervals.push((event.start, event.end));
                        group.streams.insert(event.stream);
                        group.graphs.insert(event.graph_id);
                    }
                    None => {
                        self.group_index.insert(key, self.groups.len());
                        self.groups.push(Group {
                            device: (event.pid, event.device),
                            kind: event.kind,
                            correlation: Some(correlation),
                            link,
                            launch,
                            intervals: vec![(event.start, event.end)],
                            streams: BTreeSet::from([event.stream]),
                            graphs: BTreeSet::from([event.graph_id]),
                            first: event,
                        });
                    }
                }
                Ok(())
            }
            _ => {
                let group = Group {
                    device: (event.pid, event.device),
                    kind: event.kind,
                    correlation: event.correlation,
                    link,
                    launch,
                    intervals: vec![(event.start, event.end)],
                    streams: BTreeSet::from([event.stream]),
                    graphs: BTreeSet::from([event.graph_id]),
                    first: event,
                };
                if self.options.detail == Detail::Launch {
                    self.groups.push(group);
                    Ok(())
                } else {
                    self.emit_group(group, sink)
                }
            }
        }
    }

    fn emit_group(&mut self, group: Group, sink: &mut Sink<'_>) -> Result<()> {
        self.next_id += 1;
        let uuid = self.device(group.device.0, group.device.1)?.uuid.clone();
        let pid = group
            .launch
            .as_ref()
            .map(|l| l.pid)
            .or(group.device.0)
            .or(self.facts.main_pid);
        let context = self.context(pid, uuid);
        let producer = self.facts.format.producer();
        let event_id: Text = format!("{}/{}", self.facts.trace_key, self.next_id).into();
        let mut meta = Map::new();
        let count = group.intervals.len();
        let summed: Nanos = group.intervals.iter().map(|(s, e)| e - s).sum();
        meta.insert("event_count".into(), json!(count));
        meta.insert("summed_duration_ns".into(), json!(summed));
        meta.insert("first_name".into(), json!(group.first.name));
        meta.insert("device_index".into(), json!(group.device.1));
        if let Some(launch) = &group.launch {
            meta.insert("launch_api".into(), json!(&*launch.name));
            meta.insert("launch_tid".into(), json!(&*launch.tid));
        }
        if let Link::Unresolved(reason) = &group.link {
            meta.insert("unresolved_reason".into(), json!(reason.as_str()));
        }
        let streams: Vec<u64> = group.streams.iter().flatten().copied().collect();
        if streams.len() > 1 {
            meta.insert("streams".into(), json!(streams));
        }
        let start = group.intervals.iter().map(|i| i.0).min().unwrap_or(0);
        let end = group.intervals.iter().map(|i| i.1).max().unwrap_or(0);
        let mut intervals = BusyIntervals::Absent;
        if count > 1 {
            let merged = merge(group.intervals);
            let list: Vec<(Nanos, Nanos)> =
                merged.iter().map(|&(s, e)| (s - start, e - s)).collect();
            let busy: Nanos = list.iter().map(|i| i.1).sum();
            meta.insert(
                "intervals".into(),
                Value::Array(list.iter().map(|&(o, d)| json!([o, d])).collect()),
            );
            meta.insert("busy_ns".into(), json!(busy));
            intervals = BusyIntervals::List(list);
        }
        let single = |set: &BTreeSet<Option<u64>>| match set.iter().collect::<Vec<_>>()[..] {
            [only] => *only,
            _ => None,
        };
        let (status, iteration_ref) = match group.link {
            Link::Linked(r) => (AttributionStatus::Linked, Some((*r).clone())),
            Link::Unresolved(_) => (AttributionStatus::Unresolved, None),
        };
        let body = EventBody::Activity(ActivityReferenceEvent {
            activity_ref: EntityRef::new(producer, event_id.clone()).expect("non-empty"),
            activity_kind: group.kind.activity_kind().into(),
            attribution_status: status,
            activity_domain: ActivityDomain::Gpu,
            iteration_ref,
            correlation_scope: Some(scope()),
            trace_attachment_id: Some(self.facts.trace_key.clone()),
            runtime_correlation_id: None,
            cuda_correlation_id: group.correlation,
            stream_id: single(&group.streams),
            graph_id: single(&group.graphs),
            start_ns: Some(start),
            end_ns: Some(end),
            intervals,
        });
        sink(record(context, event_id, Metadata::from_map(&meta), body))
    }

    /// Emits one launch call as a `runtime` activity (linked by the same rule).
    pub fn runtime_call(
        &mut self,
        correlation: u64,
        call: &LaunchCall,
        sink: &mut Sink<'_>,
    ) -> Result<()> {
        self.next_runtime_id += 1;
        self.runtime_records += 1;
        let context = self.context(Some(call.pid), None);
        let link = self.steps.link(call.pid, call.start);
        let event_id: Text =
            format!("{}/runtime/{}", self.facts.trace_key, self.next_runtime_id).into();
        let mut meta = Map::new();
        meta.insert("name".into(), json!(&*call.name));
        meta.insert("tid".into(), json!(&*call.tid));
        let (status, iteration_ref) = match link {
            Link::Linked(r) => (AttributionStatus::Linked, Some((*r).clone())),
            Link::Unresolved(reason) => {
                meta.insert("unresolved_reason".into(), json!(reason.as_str()));
                (AttributionStatus::Unresolved, None)
            }
        };
        let body = EventBody::Activity(ActivityReferenceEvent {
            activity_ref: EntityRef::new(self.facts.format.producer(), event_id.clone())
                .expect("non-empty"),
            activity_kind: "runtime_launch".into(),
            attribution_status: status,
            activity_domain: ActivityDomain::Runtime,
            iteration_ref,
            correlation_scope: Some(scope()),
            trace_attachment_id: Some(self.facts.trace_key.clone()),
            runtime_correlation_id: None,
            cuda_correlation_id: Some(correlation),
            stream_id: None,
            graph_id: None,
            start_ns: Some(call.start),
            end_ns: Some(call.end.max(call.start)),
            intervals: BusyIntervals::Absent,
        });
        sink(record(context, event_id, Metadata::from_map(&meta), body))
    }

    /// Emits the launch groups (launch detail) and returns the input's summary.
    pub fn finish(mut self, sink: &mut Sink<'_>) -> Result<InputSummary> {
        for group in std::mem::take(&mut self.groups) {
            self.emit_group(group, sink)?;
        }
        let facts = self.facts;
        let devices = self
            .devices
            .iter_mut()
            .map(|(&(pid, index), entry)| DeviceSummary {
                pid,
                device_index: index,
                name: entry.name.as_deref().map(str::to_owned),
                device_uuid: entry.uuid.as_deref().map(str::to_owned),
                uuid_source: entry.source,
                busy_ns: entry.all.busy_ns(),
                summed_ns: entry.all.summed_ns(),
                count: entry.all.count(),
                kernel_busy_ns: entry.kernels.busy_ns(),
                kernel_count: entry.kernels.count(),
            })
            .collect();
        Ok(InputSummary {
            path: facts.path.clone(),
            format: facts.format,
            trace_key: facts.trace_key.to_string(),
            clock_domain: facts.clock_domain.to_string(),
            host: facts.host.as_deref().map(str::to_owned),
            rank: facts.rank,
            gpu_events: self.gpu_events,
            activity_records: self.next_id,
            runtime_records: self.runtime_records,
            launch_calls: self.launches.len() as u64,
            iterations: self.iterations,
            linked_gpu_events: self.linked,
            unresolved_gpu_events: self.reasons,
            graph_gpu_events: self.graph_events,
            devices,
            not_imported: facts.not_imported.clone(),
            notes: facts.notes.clone(),
        })
    }
}

fn scope() -> EntityRef {
    EntityRef::new(CORRELATION_SCOPE.0, CORRELATION_SCOPE.1).expect("non-empty")
}

/// Wraps parts into a record.
pub fn record(
    context: Arc<CorrelationContext>,
    event_id: Text,
    metadata: Metadata,
    body: EventBody,
) -> InferenceRecord {
    InferenceRecord::Event(CorrelationEvent::new(context, event_id, metadata, body))
}

/// Sorts and merges intervals; touching ones join.
fn merge(mut intervals: Vec<(Nanos, Nanos)>) -> Vec<(Nanos, Nanos)> {
    intervals.sort_unstable();
    let mut out: Vec<(Nanos, Nanos)> = Vec::with_capacity(intervals.len());
    for (start, end) in intervals {
        match out.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => out.push((start, end)),
        }
    }
    out
}
