//! The event model: what one correlation record says, once read and validated.
//!
//! These are the types of stormlog's `correlation_events` module in Rust form: [`EntityRef`],
//! [`CorrelationContext`], the eight event bodies, and [`InferenceRecord`] (a correlation event or
//! an opaque legacy record). Values here are always valid: the reader (`tally-artifact`'s `read`)
//! and the constructors are the only ways in, and both check every rule of
//! `docs/evidence.md#wire-format`.
//!
//! Deliberately absent: any I/O, any JSON parsing (the reader's; metadata is kept as text,
//! and its JSON value is [`crate::json`]'s), what makes two records equal (see
//! [`crate::fingerprint`]) and any notion of order or de-duplication (see [`crate::resolve`]).
//! This module uses no other module of the crate. Times are integer nanoseconds ([`Nanos`]).

use std::fmt;

mod event;

pub use event::{CorrelationEvent, InferenceRecord, LegacyRecord};

/// Integer nanoseconds. Every time in tally is one of these; inputs outside `i64` are refused.
pub type Nanos = i64;

/// Shared immutable text: one pointer (a thin `ArcStr`), cheap to clone, compared and hashed by
/// content.
pub type Text = arcstr::ArcStr;

/// A reference to an entity inside its producer's namespace: `(producer_id, id)` is the identity.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EntityRef {
    /// The producer whose namespace `id` lives in. Non-empty.
    pub producer_id: Text,
    /// The entity's id within that namespace. Non-empty; may contain any character.
    pub id: Text,
}

impl EntityRef {
    /// Builds a reference; both parts must be non-empty (`docs/evidence.md#entity-ref`).
    pub fn new(producer_id: impl Into<Text>, id: impl Into<Text>) -> Result<Self, String> {
        let producer_id = producer_id.into();
        let id = id.into();
        if producer_id.is_empty() {
            return Err("producer_id must be a non-empty string".into());
        }
        if id.is_empty() {
            return Err("id must be a non-empty string".into());
        }
        Ok(Self { producer_id, id })
    }
}

impl fmt::Display for EntityRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.producer_id, self.id)
    }
}

/// How a context's timestamps relate to real time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ClockKind {
    /// A device (GPU) clock.
    Device,
    /// A monotonic host clock: differences are durations.
    Monotonic,
    /// A wall clock: may jump, so differences are not durations.
    Wall,
}
// The variants are declared in the alphabetical order of their wire spellings, so the derived
// `Ord` sorts `DeviceClock`s the way the JSON contract does (by the strings).

impl ClockKind {
    /// The wire spelling (`monotonic`, `wall`, `device`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Monotonic => "monotonic",
            Self::Wall => "wall",
            Self::Device => "device",
        }
    }
    /// Parses the wire spelling.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "monotonic" => Self::Monotonic,
            "wall" => Self::Wall,
            "device" => Self::Device,
            _ => return None,
        })
    }
}

/// How the evidence was collected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CollectionMode {
    /// Collected by an instrumented process while it ran.
    Active,
    /// Observed from outside.
    Passive,
    /// Imported from another tool's output (a profiler trace).
    Imported,
}

impl CollectionMode {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Passive => "passive",
            Self::Imported => "imported",
        }
    }
    /// Parses the wire spelling.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "active" => Self::Active,
            "passive" => Self::Passive,
            "imported" => Self::Imported,
            _ => return None,
        })
    }
}

/// How much the values can be trusted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Provenance {
    /// Measured directly.
    Observed,
    /// Reported by another component.
    Reported,
    /// Estimated by a model.
    Estimated,
}

impl Provenance {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Observed => "observed",
            Self::Reported => "reported",
            Self::Estimated => "estimated",
        }
    }
    /// Parses the wire spelling.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "observed" => Self::Observed,
            "reported" => Self::Reported,
            "estimated" => Self::Estimated,
            _ => return None,
        })
    }
}

/// Who observed a record, and with which clock (`docs/evidence.md#context`). All 19 keys of the wire
/// object; omitted optional keys are `None`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CorrelationContext {
    /// The run this evidence belongs to.
    pub run_id: Text,
    /// The capture session.
    pub session_id: Text,
    /// The producer; entity references are scoped by it.
    pub producer_id: Text,
    /// What produced the record (`kineto`, an engine adapter, ...).
    pub source: Text,
    /// The clock the timestamps are read from.
    pub clock_domain: Text,
    /// What kind of clock that is.
    pub clock_kind: ClockKind,
    /// How the evidence was collected.
    pub collection_mode: CollectionMode,
    /// How much it can be trusted.
    pub provenance: Provenance,
    /// Version of `source`.
    pub source_version: Option<Text>,
    /// Serving engine name.
    pub engine: Option<Text>,
    /// Serving engine version.
    pub engine_version: Option<Text>,
    /// Backend (`cupti`, ...).
    pub backend: Option<Text>,
    /// Backend version.
    pub backend_version: Option<Text>,
    /// Host name.
    pub host: Option<Text>,
    /// GPU identity; activities without one cannot be measured.
    pub device_uuid: Option<Text>,
    /// OS process id.
    pub pid: Option<u64>,
    /// Distributed rank.
    pub rank: Option<u64>,
    /// Rank within the host.
    pub local_rank: Option<u64>,
    /// Number of ranks (≥ 1).
    pub world_size: Option<u64>,
}

/// The JSON `metadata` object of a record, kept as its original text (`{}` when absent).
///
/// Metadata is free-form; tally reads only a few keys from it (`intervals`, `gap_ns`,
/// `alignment_basis`). Equality of records compares metadata by the reference's value semantics
/// (see [`crate::fingerprint`]), not by text. Its JSON value ([`Metadata::to_map`],
/// [`Metadata::from_map`]) is [`crate::json`]'s.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Metadata {
    /// Shared: the reader gives equal metadata texts one allocation.
    raw: Option<Text>,
}

impl Metadata {
    /// Empty metadata (`{}`).
    pub fn empty() -> Self {
        Self { raw: None }
    }

    /// Metadata from the JSON text of an object. The caller guarantees it is a valid JSON object.
    pub fn from_json_text(text: &str) -> Self {
        let trimmed = text.trim();
        if trimmed == "{}" || trimmed.is_empty() {
            Self { raw: None }
        } else {
            Self {
                raw: Some(text.into()),
            }
        }
    }

    /// Metadata whose (non-empty, not `{}`) text is already shared. The caller guarantees it is a
    /// valid JSON object.
    pub fn from_shared_text(text: Text) -> Self {
        Self { raw: Some(text) }
    }

    /// The JSON text of the object (`{}` when empty).
    pub fn json_text(&self) -> &str {
        self.raw.as_deref().unwrap_or("{}")
    }

    /// Whether the object has no keys.
    pub fn is_empty(&self) -> bool {
        self.raw.is_none()
    }
}

/// The `metadata.intervals` key of an activity (`docs/evidence.md#intervals`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum BusyIntervals {
    /// No `intervals` key: the activity is a version-2 record, busy over its whole span.
    #[default]
    Absent,
    /// `intervals: null`: a version-3 record, busy over its whole span.
    Null,
    /// Busy sub-intervals as `(offset_ns, duration_ns)` from `start_ns`, sorted and disjoint.
    List(Vec<(Nanos, Nanos)>),
}

/// `infer.artifact`: the run identity of a file.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ArtifactIdentityEvent {
    /// What wrote the artifact.
    pub artifact_kind: Text,
    /// When, in ns since the epoch.
    pub created_at_ns: Nanos,
}

/// `infer.request`: one logical request, or one attempt of it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RequestEvent {
    /// The request.
    pub request_ref: EntityRef,
    /// The attempt, when this record describes one retry attempt.
    pub attempt_ref: Option<EntityRef>,
    /// The backend's own id for it.
    pub backend_request_ref: Option<EntityRef>,
    /// Start.
    pub start_ns: Option<Nanos>,
    /// End (≥ start).
    pub end_ns: Option<Nanos>,
    /// Free-text status.
    pub status: Option<Text>,
    /// Prompt tokens.
    pub input_tokens: Option<u64>,
    /// Generated tokens.
    pub output_tokens: Option<u64>,
    /// KV-cache bytes.
    pub kv_bytes: Option<u64>,
}

/// `infer.iteration`: one engine step shared by its member requests.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct IterationEvent {
    /// The iteration.
    pub iteration_ref: EntityRef,
    /// The batch it ran.
    pub batch_ref: Option<EntityRef>,
    /// Start.
    pub start_ns: Option<Nanos>,
    /// End (≥ start).
    pub end_ns: Option<Nanos>,
}

/// `infer.stage`: a named span of a request or an iteration.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct StageEvent {
    /// The stage.
    pub stage_ref: EntityRef,
    /// Its name (free text).
    pub name: Text,
    /// The request it belongs to (this or `iteration_ref` is set).
    pub request_ref: Option<EntityRef>,
    /// The iteration it belongs to.
    pub iteration_ref: Option<EntityRef>,
    /// Start.
    pub start_ns: Option<Nanos>,
    /// End (≥ start).
    pub end_ns: Option<Nanos>,
    /// Prompt tokens.
    pub input_tokens: Option<u64>,
    /// Generated tokens.
    pub output_tokens: Option<u64>,
    /// KV-cache bytes.
    pub kv_bytes: Option<u64>,
}

/// `infer.membership`: one request's role in one iteration.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MembershipEvent {
    /// The member request.
    pub request_ref: EntityRef,
    /// The iteration.
    pub iteration_ref: EntityRef,
    /// Role (free text; producers use `prefill`, `decode`).
    pub role: Text,
    /// The attempt, when known.
    pub attempt_ref: Option<EntityRef>,
    /// Prompt tokens processed in this iteration.
    pub input_tokens: Option<u64>,
    /// Tokens generated in this iteration.
    pub output_tokens: Option<u64>,
    /// KV-cache bytes.
    pub kv_bytes: Option<u64>,
}

/// Whether an activity is linked to an iteration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AttributionStatus {
    /// Linked: `iteration_ref` is set.
    Linked,
    /// Not linked to any iteration.
    Unresolved,
}

impl AttributionStatus {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Linked => "linked",
            Self::Unresolved => "unresolved",
        }
    }
}

/// Where an activity ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum ActivityDomain {
    /// GPU work: counts as GPU time.
    Gpu,
    /// A runtime (launch) call on the host.
    Runtime,
    /// CPU work.
    Cpu,
    /// Not said.
    #[default]
    Unknown,
}

impl ActivityDomain {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Gpu => "gpu",
            Self::Runtime => "runtime",
            Self::Cpu => "cpu",
            Self::Unknown => "unknown",
        }
    }
    /// Parses the wire spelling.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "gpu" => Self::Gpu,
            "runtime" => Self::Runtime,
            "cpu" => Self::Cpu,
            "unknown" => Self::Unknown,
            _ => return None,
        })
    }
}

/// `infer.activity_ref`: one trace activity (a GPU kernel, copy, launch call, ...).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ActivityReferenceEvent {
    /// The activity.
    pub activity_ref: EntityRef,
    /// Free text: `gpu_kernel`, `gpu_memcpy`, `gpu_memset`, `runtime_launch`, ...
    pub activity_kind: Text,
    /// Linked or not.
    pub attribution_status: AttributionStatus,
    /// Where it ran.
    pub activity_domain: ActivityDomain,
    /// The iteration it belongs to; set exactly when linked.
    pub iteration_ref: Option<EntityRef>,
    /// Scope of the correlation ids.
    pub correlation_scope: Option<EntityRef>,
    /// The trace file it came from.
    pub trace_attachment_id: Option<Text>,
    /// Runtime correlation id.
    pub runtime_correlation_id: Option<u64>,
    /// CUDA correlation id.
    pub cuda_correlation_id: Option<u64>,
    /// Stream.
    pub stream_id: Option<u64>,
    /// CUDA graph.
    pub graph_id: Option<u64>,
    /// Start.
    pub start_ns: Option<Nanos>,
    /// End (≥ start).
    pub end_ns: Option<Nanos>,
    /// `metadata.intervals`, parsed (the raw metadata keeps it too).
    pub intervals: BusyIntervals,
}

/// `infer.capabilities`: the outcome of one optional capture component.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CapabilityEvent {
    /// The component.
    pub component: Text,
    /// Whether it was available at all.
    pub available: bool,
    /// What it supports.
    pub supported: Vec<Text>,
    /// What was enabled (⊆ supported).
    pub enabled: Vec<Text>,
    /// What was collected (⊆ enabled).
    pub collected: Vec<Text>,
}

/// `infer.clock_alignment`: how to move timestamps between two clock domains.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ClockAlignmentEvent {
    /// Source domain.
    pub from_clock_domain: Text,
    /// Target domain.
    pub to_clock_domain: Text,
    /// Add this to a source timestamp.
    pub offset_ns: Nanos,
    /// The true offset lies within ± this.
    pub uncertainty_ns: Nanos,
    /// First source timestamp the record applies to (inclusive).
    pub valid_from_ns: Option<Nanos>,
    /// End of the window (exclusive).
    pub valid_to_ns: Option<Nanos>,
}

/// The type-specific part of a correlation event.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum EventBody {
    /// `infer.artifact`
    Artifact(ArtifactIdentityEvent),
    /// `infer.request`
    Request(RequestEvent),
    /// `infer.iteration`
    Iteration(IterationEvent),
    /// `infer.stage`
    Stage(StageEvent),
    /// `infer.membership`
    Membership(MembershipEvent),
    /// `infer.activity_ref`
    Activity(ActivityReferenceEvent),
    /// `infer.capabilities`
    Capabilities(CapabilityEvent),
    /// `infer.clock_alignment`
    ClockAlignment(ClockAlignmentEvent),
}

/// The eight correlation event types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EventType {
    /// `infer.artifact`
    Artifact,
    /// `infer.request`
    Request,
    /// `infer.iteration`
    Iteration,
    /// `infer.stage`
    Stage,
    /// `infer.membership`
    Membership,
    /// `infer.activity_ref`
    Activity,
    /// `infer.capabilities`
    Capabilities,
    /// `infer.clock_alignment`
    ClockAlignment,
}

impl EventType {
    /// All eight, in the order of `docs/evidence.md#schema-versions`.
    pub const ALL: [EventType; 8] = [
        Self::Artifact,
        Self::Request,
        Self::Iteration,
        Self::Stage,
        Self::Membership,
        Self::Activity,
        Self::Capabilities,
        Self::ClockAlignment,
    ];

    /// The wire name (`infer.request`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Artifact => "infer.artifact",
            Self::Request => "infer.request",
            Self::Iteration => "infer.iteration",
            Self::Stage => "infer.stage",
            Self::Membership => "infer.membership",
            Self::Activity => "infer.activity_ref",
            Self::Capabilities => "infer.capabilities",
            Self::ClockAlignment => "infer.clock_alignment",
        }
    }

    /// Parses a wire name.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == s)
    }

    /// The reference's class name, used in constructor error messages.
    pub fn class_name(self) -> &'static str {
        match self {
            Self::Artifact => "ArtifactIdentityEvent",
            Self::Request => "RequestEvent",
            Self::Iteration => "IterationEvent",
            Self::Stage => "StageEvent",
            Self::Membership => "MembershipEvent",
            Self::Activity => "ActivityReferenceEvent",
            Self::Capabilities => "CapabilityEvent",
            Self::ClockAlignment => "ClockAlignmentEvent",
        }
    }
}

impl EventBody {
    /// The event type of this body.
    pub fn event_type(&self) -> EventType {
        match self {
            Self::Artifact(_) => EventType::Artifact,
            Self::Request(_) => EventType::Request,
            Self::Iteration(_) => EventType::Iteration,
            Self::Stage(_) => EventType::Stage,
            Self::Membership(_) => EventType::Membership,
            Self::Activity(_) => EventType::Activity,
            Self::Capabilities(_) => EventType::Capabilities,
            Self::ClockAlignment(_) => EventType::ClockAlignment,
        }
    }
}
