//! The linking rule: which iteration a GPU activity belongs to, decided by its launch call.
//!
//! A GPU activity belongs to the iteration whose range `[start, end)` contains the start of its
//! launch call — the runtime call with the same correlation id — on *any* thread of the launching
//! process (the reference looks only at the launching thread, so backward-pass kernels launched
//! from the autograd thread stay unlinked there). No launch call, no enclosing range, or ranges of
//! more than one iteration make the activity `unresolved` with a reason; it is still emitted and
//! counted. This module also decides which ranges are iterations and names them. It does no I/O
//! and never compares GPU timestamps with host ranges.

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};

use regex::Regex;
use rustc_hash::FxHashMap;
use tally_evidence::{EntityRef, Nanos, Text};

/// The prefix of engine iteration ranges (`stormlog.iteration/{producer_id}/{iteration_id}`).
pub const ENGINE_RANGE_PREFIX: &str = "stormlog.iteration/";

static PROFILER_STEP: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^ProfilerStep#(\d+)$").expect("a valid pattern"));

/// A CPU range that may be an iteration (a `user_annotation`, an NVTX range, ...).
#[derive(Clone, Debug)]
pub struct RangeSpan {
    /// Process.
    pub pid: i64,
    /// Thread label.
    pub tid: Text,
    /// Start (ns).
    pub start: Nanos,
    /// End (ns, exclusive).
    pub end: Nanos,
    /// Range name.
    pub name: String,
}

/// A runtime or driver call that launched GPU work.
#[derive(Clone, Debug)]
pub struct LaunchCall {
    /// Process.
    pub pid: i64,
    /// Thread label.
    pub tid: Text,
    /// Start (ns).
    pub start: Nanos,
    /// End (ns).
    pub end: Nanos,
    /// API name (`cudaLaunchKernel`, `hipMemcpyWithStream`, ...).
    pub name: Text,
}

/// Why an activity is not linked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum UnresolvedReason {
    /// No runtime call in the trace has the activity's correlation id (or it has none).
    NoLaunchRecord,
    /// The launch call lies in no iteration range of its process.
    LaunchOutsideIterationRange,
    /// The launch call lies in ranges of more than one iteration.
    AmbiguousIterationRange,
}

impl UnresolvedReason {
    /// The spelling used in metadata and summaries (the reference's).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NoLaunchRecord => "no_launch_record",
            Self::LaunchOutsideIterationRange => "launch_outside_iteration_range",
            Self::AmbiguousIterationRange => "ambiguous_iteration_range",
        }
    }
}

/// One iteration found in a trace.
#[derive(Clone, Debug)]
pub struct FoundIteration {
    /// Its reference.
    pub iteration_ref: EntityRef,
    /// The range it came from.
    pub range: RangeSpan,
    /// Whether tally emits an `infer.iteration` record for it (engine ranges are the engine's).
    pub emit: bool,
    /// The step number of a `ProfilerStep#N` range.
    pub step: Option<u64>,
}

/// Parses an engine range name into its iteration reference (`docs/evidence.md#iteration-ranges`).
pub fn parse_engine_range(name: &str) -> Option<EntityRef> {
    let rest = name.strip_prefix(ENGINE_RANGE_PREFIX)?;
    let (producer, id) = rest.split_once('/')?;
    EntityRef::new(producer, id).ok()
}

/// Chooses the iterations among `ranges` and names them. `producer` scopes tally's own refs;
/// `trace_key` prefixes their ids so the ranks of one job never collide. The result is sorted by
/// (start, end, pid, tid, name), so names and order do not depend on the input's order.
pub fn find_iterations(
    mut ranges: Vec<RangeSpan>,
    extra: Option<&Regex>,
    producer: &str,
    trace_key: &str,
) -> Vec<FoundIteration> {
    ranges.sort_by(|a, b| {
        (a.start, a.end, a.pid, &a.tid, &a.name).cmp(&(b.start, b.end, b.pid, &b.tid, &b.name))
    });
    let mut kept = Vec::new();
    for range in ranges {
        if let Some(engine_ref) = parse_engine_range(&range.name) {
            kept.push((range, Some(engine_ref), None));
        } else if let Some(caps) = PROFILER_STEP.captures(&range.name) {
            let step = caps[1].parse::<u64>().ok();
            kept.push((range, None, step));
        } else if extra.is_some_and(|re| re.is_match(&range.name)) {
            kept.push((range, None, None));
        }
    }
    let mut occurrences: FxHashMap<String, usize> = FxHashMap::default();
    for (range, engine, _) in &kept {
        if engine.is_none() {
            *occurrences.entry(range.name.clone()).or_default() += 1;
        }
    }
    let mut seen: FxHashMap<String, usize> = FxHashMap::default();
    kept.into_iter()
        .map(|(range, engine, step)| match engine {
            Some(iteration_ref) => FoundIteration {
                iteration_ref,
                range,
                emit: false,
                step,
            },
            None => {
                let ordinal = seen.entry(range.name.clone()).or_default();
                *ordinal += 1;
                let id = if occurrences[&range.name] > 1 {
                    format!("{trace_key}/{}[{}]", range.name, ordinal)
                } else {
                    format!("{trace_key}/{}", range.name)
                };
                FoundIteration {
                    iteration_ref: EntityRef::new(producer, id).expect("non-empty parts"),
                    range,
                    emit: true,
                    step,
                }
            }
        })
        .collect()
}

/// The iterations of one trace indexed by process, for launch lookups.
#[derive(Debug, Default)]
pub struct StepIndex {
    refs: Vec<Arc<EntityRef>>,
    by_pid: BTreeMap<i64, PidSpans>,
}

#[derive(Debug, Default)]
struct PidSpans {
    /// (start, end, index into refs), sorted by start.
    spans: Vec<(Nanos, Nanos, usize)>,
    longest: Nanos,
}

/// The outcome of linking one launch.
#[derive(Clone, Debug)]
pub enum Link {
    /// Linked to this iteration.
    Linked(Arc<EntityRef>),
    /// Not linked, and why.
    Unresolved(UnresolvedReason),
}

impl StepIndex {
    /// Indexes `iterations` (one entry per range; several ranges may share an iteration).
    pub fn new(iterations: &[FoundIteration]) -> Self {
        let mut refs: Vec<Arc<EntityRef>> = Vec::new();
        let mut ref_index: BTreeMap<EntityRef, usize> = BTreeMap::new();
        let mut by_pid: BTreeMap<i64, PidSpans> = BTreeMap::new();
        for found in iterations {
            let index = *ref_index
                .entry(found.iteration_ref.clone())
                .or_insert_with(|| {
                    refs.push(Arc::new(found.iteration_ref.clone()));
                    refs.len() - 1
                });
            let pid = by_pid.entry(found.range.pid).or_default();
            pid.spans.push((found.range.start, found.range.end, index));
            pid.longest = pid.longest.max(found.range.end - found.range.start);
        }
        for pid in by_pid.values_mut() {
            pid.spans.sort_unstable();
        }
        Self { refs, by_pid }
    }

    /// Links a launch call made by `pid` at `ts` (any thread).
    pub fn link(&self, pid: i64, ts: Nanos) -> Link {
        let Some(spans) = self.by_pid.get(&pid) else {
            return Link::Unresolved(UnresolvedReason::LaunchOutsideIterationRange);
        };
        let upto = spans.spans.partition_point(|&(start, _, _)| start <= ts);
        let earliest = ts.saturating_sub(spans.longest);
        let mut found: Option<usize> = None;
        for &(start, end, index) in spans.spans[..upto].iter().rev() {
            if start < earliest {
                break;
            }
            if ts < end {
                match found {
                    None => found = Some(index),
                    Some(other) if other != index => {
                        return Link::Unresolved(UnresolvedReason::AmbiguousIterationRange);
                    }
                    Some(_) => {}
                }
            }
        }
        match found {
            Some(index) => Link::Linked(self.refs[index].clone()),
            None => Link::Unresolved(UnresolvedReason::LaunchOutsideIterationRange),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(pid: i64, tid: &str, start: Nanos, end: Nanos, name: &str) -> RangeSpan {
        RangeSpan {
            pid,
            tid: tid.into(),
            start,
            end,
            name: name.into(),
        }
    }

    #[test]
    fn steps_link_by_launch_start_on_any_thread() {
        let found = find_iterations(
            vec![
                range(7, "main", 100, 200, "ProfilerStep#2"),
                range(7, "main", 0, 100, "ProfilerStep#1"),
                range(7, "main", 10, 20, "forward"),
            ],
            None,
            "p",
            "t",
        );
        assert_eq!(found.len(), 2);
        assert_eq!(&*found[0].iteration_ref.id, "t/ProfilerStep#1");
        assert_eq!(found[1].step, Some(2));
        let index = StepIndex::new(&found);
        let id = |l: Link| match l {
            Link::Linked(r) => r.id.to_string(),
            Link::Unresolved(r) => r.as_str().to_string(),
        };
        assert_eq!(id(index.link(7, 0)), "t/ProfilerStep#1");
        assert_eq!(id(index.link(7, 99)), "t/ProfilerStep#1");
        assert_eq!(id(index.link(7, 100)), "t/ProfilerStep#2");
        assert_eq!(id(index.link(7, 200)), "launch_outside_iteration_range");
        assert_eq!(id(index.link(8, 150)), "launch_outside_iteration_range");
    }

    #[test]
    fn overlapping_iterations_are_ambiguous_and_repeated_names_are_numbered() {
        let re = Regex::new("^saxpy$").unwrap();
        let found = find_iterations(
            vec![
                range(1, "a", 0, 50, "saxpy"),
                range(1, "b", 40, 90, "saxpy"),
                range(1, "a", 60, 70, "stormlog.iteration/eng/I/7"),
            ],
            Some(&re),
            "p",
            "t",
        );
        let ids: Vec<_> = found.iter().map(|f| f.iteration_ref.to_string()).collect();
        assert_eq!(ids, ["p/t/saxpy[1]", "p/t/saxpy[2]", "eng/I/7"]);
        assert!(!found[2].emit);
        let index = StepIndex::new(&found);
        assert!(matches!(
            index.link(1, 45),
            Link::Unresolved(UnresolvedReason::AmbiguousIterationRange)
        ));
        assert!(matches!(
            index.link(1, 65),
            Link::Unresolved(UnresolvedReason::AmbiguousIterationRange)
        ));
        assert!(matches!(index.link(1, 10), Link::Linked(_)));
    }
}
