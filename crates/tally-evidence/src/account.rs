//! GPU-time accounting: `account_gpu_time` of `docs/evidence.md#accounting`.
//!
//! For every activity of a [`CorrelationGraph`]: an `unresolved` one is listed as unattributed;
//! a non-GPU one stops there; a GPU one without a device UUID, on a wall clock, or without both
//! ends is listed as unmeasured; every other one adds its busy intervals (its span, or its
//! `metadata.intervals` sub-intervals) to the group of its [`DeviceClock`] — and to that
//! iteration's group when its `iteration_ref` names a resolved iteration. Each group becomes a
//! [`GpuTime`]: the summed lengths of all its intervals, the length of their union, and the number
//! of activities (not intervals).
//!
//! Representation: intervals of all groups go into one flat list per group kind (device, and
//! iteration × device), which is placed group by group (a counting sort on group ids), sorted
//! by start within each group and swept ([`crate::interval`]). Sums use checked arithmetic; an
//! overflow is [`Error::OutOfRange`], never a wrap. The accountant never splits shared time among
//! requests (that is [`crate::shares`], which only validates a split). No I/O. Each activity's
//! iteration was found by the resolver while it checked references. The grouping, the two
//! sorted reference lists and the iterations' timings are made side by side, and then the two
//! sweeps, each over its groups in parallel, on rayon's global pool.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::error::{Error, Origin, Result};
use crate::interval::{Interval, UnionSweep};
use crate::model::{
    ActivityDomain, ActivityReferenceEvent, AttributionStatus, BusyIntervals, ClockKind, EntityRef,
    Nanos, Text,
};
use crate::resolve::{CorrelationGraph, ResolvedEvent};
use crate::text_order;

mod device_times;
mod kernels;

pub use device_times::DeviceTimes;
pub use kernels::{KernelTime, activity_name, kernel_times, measured_summed_ns};

/// The group key of GPU time: `(device_uuid, clock_domain, clock_kind)` of the activity's
/// context (the host is not part of it). Ordered by those three strings, as the JSON lists are.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DeviceClock {
    /// The GPU.
    pub device_uuid: Text,
    /// The clock domain its timestamps are in.
    pub clock_domain: Text,
    /// The kind of that clock (`monotonic` or `device`; wall clocks are never measured).
    pub clock_kind: ClockKind,
}

impl fmt::Display for DeviceClock {
    /// `device_uuid|clock_domain|clock_kind`, the shorthand of `docs/evidence.md#accounting`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}|{}|{}",
            self.device_uuid,
            self.clock_domain,
            self.clock_kind.as_str()
        )
    }
}

/// Measured GPU time of one group.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct GpuTime {
    /// Sum of the lengths of all busy intervals (overlaps counted as often as they occur).
    pub summed_activity_ns: u64,
    /// Length of the union of those intervals.
    pub busy_ns: u64,
    /// Number of activities (not intervals).
    pub activity_count: u64,
}

/// One iteration's timing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IterationTiming {
    /// `end − start` on a monotonic clock with both ends; `None` otherwise.
    pub elapsed_ns: Option<Nanos>,
    /// GPU time per device clock of the activities linked to it (only keys that got one).
    pub gpu: DeviceTimes,
}

/// The time range a device group's busy intervals cover: first start to last end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BusySpan {
    /// The earliest start of any busy interval (zero-length ones included).
    pub start_ns: Nanos,
    /// The latest end of any busy interval.
    pub end_ns: Nanos,
}

impl BusySpan {
    /// `end − start`.
    pub fn len_ns(self) -> u64 {
        self.end_ns.abs_diff(self.start_ns)
    }
}

/// The result of [`account_gpu_time`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunAccounting {
    /// The graph's run id.
    pub run_id: Option<Text>,
    /// Every iteration of the graph, by reference (sorted by `(producer_id, id)`).
    pub iterations: BTreeMap<EntityRef, IterationTiming>,
    /// GPU time per device clock over all measurable GPU activities, linked or not.
    pub device_totals: BTreeMap<DeviceClock, GpuTime>,
    /// For the human report: the span each device group's intervals cover (same keys as
    /// `device_totals`, except a group whose activities all had empty interval lists).
    pub device_spans: BTreeMap<DeviceClock, BusySpan>,
    /// Activities with `attribution_status` `unresolved` (any domain), sorted, each once.
    pub unattributed_activity_refs: Vec<EntityRef>,
    /// GPU activities that cannot be measured (no device UUID, wall clock, or a missing end),
    /// sorted, each once.
    pub unmeasured_gpu_activity_refs: Vec<EntityRef>,
}

/// One busy interval of a group, as sorted and swept.
#[derive(Clone, Copy)]
struct Piece {
    group: u32,
    start: Nanos,
    end: Nanos,
}

/// Summed time and activity count of one group, before the sweep adds `busy_ns`.
#[derive(Clone, Copy, Default)]
struct Tally {
    summed: u64,
    count: u64,
}

/// The groups of one kind: tallies indexed by group id, and the flat list of their intervals.
#[derive(Default)]
struct Groups {
    tallies: Vec<Tally>,
    pieces: Vec<Piece>,
}

impl Groups {
    fn add(&mut self, group: u32, interval: Interval) {
        self.pieces.push(Piece {
            group,
            start: interval.start(),
            end: interval.end(),
        });
    }

    fn count(&mut self, group: u32, summed: u64, what: &dyn Fn() -> String) -> Result<()> {
        let tally = &mut self.tallies[group as usize];
        tally.summed = tally
            .summed
            .checked_add(summed)
            .ok_or_else(|| overflow(&what()))?;
        tally.count += 1;
        Ok(())
    }

    /// Sorts and sweeps: per group, its `GpuTime` and covered span.
    ///
    /// The pieces are first put group by group, in place (a counting sort on the dense group
    /// ids, whose placement swaps each piece into its group's range: no second list), so only
    /// each group's own pieces are sorted by start: small sorts for the many iteration groups,
    /// and nearly sorted runs for the few device groups of a trace read in order.
    fn sweep(mut self) -> Vec<(GpuTime, Option<BusySpan>)> {
        let mut starts = vec![0usize; self.tallies.len() + 1];
        for p in &self.pieces {
            starts[p.group as usize + 1] += 1;
        }
        for g in 1..starts.len() {
            starts[g] += starts[g - 1];
        }
        let pieces = &mut self.pieces;
        let mut next = starts.clone();
        for group in 0..self.tallies.len() {
            // Every piece before `next[group]` in this group's range is in place; a piece of
            // another group is swapped to the next free place of its own.
            while next[group] < starts[group + 1] {
                let at = next[group];
                let home = pieces[at].group as usize;
                if home == group {
                    next[group] += 1;
                } else {
                    pieces.swap(at, next[home]);
                    next[home] += 1;
                }
            }
        }
        // Each group's run of pieces, to sort and sweep side by side: many small iteration groups
        // per task, or one device group per task.
        let pieces_per_group = (pieces.len() / self.tallies.len().max(1)).max(1);
        let groups_per_task = (PIECES_PER_TASK / pieces_per_group).max(1);
        let mut runs: Vec<&mut [Piece]> = Vec::with_capacity(self.tallies.len());
        let mut rest = pieces.as_mut_slice();
        for group in 0..self.tallies.len() {
            let (run, after) = rest.split_at_mut(starts[group + 1] - starts[group]);
            runs.push(run);
            rest = after;
        }
        self.tallies
            .par_iter()
            .zip(runs)
            .with_min_len(groups_per_task)
            .map(|(t, run)| {
                let mut time = GpuTime {
                    summed_activity_ns: t.summed,
                    busy_ns: 0,
                    activity_count: t.count,
                };
                if run.is_empty() {
                    return (time, None);
                }
                run.sort_unstable_by_key(|p| p.start);
                let mut sweep = UnionSweep::new();
                let mut last_end = Nanos::MIN;
                for p in run.iter() {
                    sweep.push(Interval::new(p.start, p.end).expect("pieces are valid intervals"));
                    last_end = last_end.max(p.end);
                }
                time.busy_ns = sweep.covered();
                let span = BusySpan {
                    start_ns: run[0].start,
                    end_ns: last_end,
                };
                (time, Some(span))
            })
            .collect()
    }
}

/// Pieces worth a parallel task of their own (a task sorts and sweeps whole groups).
const PIECES_PER_TASK: usize = 1024;

fn overflow(what: &str) -> Error {
    Error::OutOfRange {
        origin: Origin::default(),
        message: format!(
            "{what} exceeds 18446744073709551615 ns (u64); the artifact's times are implausible"
        ),
    }
}

/// The busy intervals of a measurable activity spanning `[start, end)`: the span itself, or its
/// `metadata.intervals` (a null `intervals` value means the whole span).
fn busy_intervals(
    activity: &ActivityReferenceEvent,
    start: Nanos,
    end: Nanos,
    mut each: impl FnMut(Interval),
) -> Result<()> {
    let bad = || Error::OutOfRange {
        origin: Origin::default(),
        message: format!(
            "busy interval of activity {} lies outside 64-bit nanoseconds",
            activity.activity_ref
        ),
    };
    match &activity.intervals {
        BusyIntervals::Absent | BusyIntervals::Null => {
            each(Interval::new(start, end).ok_or_else(bad)?)
        }
        BusyIntervals::List(list) => {
            for &(offset, duration) in list {
                let from = start.checked_add(offset).ok_or_else(bad)?;
                let to = from.checked_add(duration).ok_or_else(bad)?;
                each(Interval::new(from, to).ok_or_else(bad)?);
            }
        }
    }
    Ok(())
}

/// Accounts GPU time of a resolved graph (`docs/evidence.md#accounting`).
///
/// Errors only with [`Error::OutOfRange`], when a sum would not fit `u64` nanoseconds or an
/// interval or elapsed time would not fit `i64`.
pub fn account_gpu_time(graph: &CorrelationGraph) -> Result<RunAccounting> {
    // Three independent parts side by side: the grouping of GPU intervals (sequential, as it
    // numbers the groups), the two sorted reference lists, and the iterations' elapsed times in
    // key order. The grouping, which allocates the most, stays on the calling thread, where the
    // memory the resolver freed last is.
    let (mut lists, mut iterations) = (None, None);
    let grouped = rayon::in_place_scope(|scope| {
        scope.spawn(|_| lists = Some(ReferenceLists::of(graph)));
        scope.spawn(|_| iterations = Some(iteration_timings(graph)));
        Grouped::of(graph)
    });
    let lists = lists.expect("the lists were made");
    let Grouped {
        devices,
        by_device,
        by_iteration,
        iteration_groups,
    } = grouped?;
    let SortedTimings {
        sorted: mut iterations,
        place: position_of_sorted,
    } = iterations.expect("the timings were made")?;
    let (device_sweep, iteration_sweep) =
        rayon::join(|| by_device.sweep(), || by_iteration.sweep());
    for (&(iteration, device), (time, _)) in iteration_groups.iter().zip(iteration_sweep) {
        let (_, timing) = &mut iterations[position_of_sorted[iteration as usize] as usize];
        timing.gpu.insert(devices[device as usize].clone(), time);
    }

    let mut device_totals = BTreeMap::new();
    let mut device_spans = BTreeMap::new();
    for (key, (time, span)) in devices.into_iter().zip(device_sweep) {
        if let Some(span) = span {
            device_spans.insert(key.clone(), span);
        }
        device_totals.insert(key, time);
    }
    Ok(RunAccounting {
        run_id: graph.run_id().cloned(),
        // Already in key order: collecting checks that in one pass and builds the map in bulk.
        iterations: iterations.into_iter().collect(),
        device_totals,
        device_spans,
        unattributed_activity_refs: lists.unattributed,
        unmeasured_gpu_activity_refs: lists.unmeasured,
    })
}

/// The busy intervals of every measurable GPU activity, placed in their device group and, when
/// linked to a resolved iteration, in their iteration × device group.
struct Grouped {
    /// The device clocks, by group id.
    devices: Vec<DeviceClock>,
    by_device: Groups,
    by_iteration: Groups,
    /// `(iteration position, device group)` of each iteration group, by group id.
    iteration_groups: Vec<(u32, u32)>,
}

impl Grouped {
    fn of(graph: &CorrelationGraph) -> Result<Self> {
        let mut devices: Vec<DeviceClock> = Vec::new();
        let mut device_of_key: FxHashMap<DeviceClock, u32> = FxHashMap::default();
        // Contexts are interned by the resolver, so a context's address names its device group.
        let mut device_of_context: FxHashMap<usize, u32> = FxHashMap::default();
        let mut by_device = Groups::default();
        let mut by_iteration = Groups::default();
        let mut iteration_group: FxHashMap<u64, u32> = FxHashMap::default();
        let mut iteration_groups: Vec<(u32, u32)> = Vec::new();
        let iteration_of = graph.activity_iterations();
        debug_assert_eq!(iteration_of.len(), graph.activities().len());
        let iteration_count = graph.iterations().len();
        // One interval per activity is the usual case: room for it up front, instead of
        // doubling buffers whose copies add to the peak.
        by_device.pieces.reserve(iteration_of.len());
        by_iteration.pieces.reserve(iteration_of.len());

        for (entry, &iteration) in graph.activities().iter().zip(iteration_of) {
            let activity = entry.body();
            if activity.activity_domain != ActivityDomain::Gpu {
                continue;
            }
            let Some((start, end)) = measurable_span(entry) else {
                continue;
            };
            let device = *device_of_context
                .entry(Arc::as_ptr(entry.context_arc()) as usize)
                .or_insert_with(|| {
                    let ctx = entry.context();
                    let key = DeviceClock {
                        device_uuid: ctx.device_uuid.clone().expect("measurable has a uuid"),
                        clock_domain: ctx.clock_domain.clone(),
                        clock_kind: ctx.clock_kind,
                    };
                    *device_of_key.entry(key.clone()).or_insert_with(|| {
                        devices.push(key);
                        by_device.tallies.push(Tally::default());
                        (devices.len() - 1) as u32
                    })
                });
            let group = ((iteration as usize) < iteration_count).then(|| {
                let key = (u64::from(iteration) << 32) | u64::from(device);
                *iteration_group.entry(key).or_insert_with(|| {
                    iteration_groups.push((iteration, device));
                    by_iteration.tallies.push(Tally::default());
                    (iteration_groups.len() - 1) as u32
                })
            });
            let mut summed: u64 = 0;
            let mut overflowed = false;
            busy_intervals(activity, start, end, |interval| {
                match summed.checked_add(interval.len()) {
                    Some(s) => summed = s,
                    None => overflowed = true,
                }
                by_device.add(device, interval);
                if let Some(group) = group {
                    by_iteration.add(group, interval);
                }
            })?;
            let what = || format!("summed activity time of {}", activity.activity_ref);
            if overflowed {
                return Err(overflow(&what()));
            }
            by_device.count(device, summed, &what)?;
            if let Some(group) = group {
                by_iteration.count(group, summed, &what)?;
            }
        }
        Ok(Self {
            devices,
            by_device,
            by_iteration,
            iteration_groups,
        })
    }
}

/// The activities listed rather than measured, each list sorted.
struct ReferenceLists {
    /// `attribution_status` `unresolved`, any domain.
    unattributed: Vec<EntityRef>,
    /// GPU activities that cannot be measured.
    unmeasured: Vec<EntityRef>,
}

impl ReferenceLists {
    fn of(graph: &CorrelationGraph) -> Self {
        let mut unattributed = Vec::new();
        let mut unmeasured = Vec::new();
        for entry in graph.activities().iter() {
            let activity = entry.body();
            if activity.attribution_status == AttributionStatus::Unresolved {
                unattributed.push(activity.activity_ref.clone());
            }
            if activity.activity_domain == ActivityDomain::Gpu && measurable_span(entry).is_none() {
                unmeasured.push(activity.activity_ref.clone());
            }
        }
        rayon::join(
            || text_order::sort_refs(&mut unattributed),
            || text_order::sort_refs(&mut unmeasured),
        );
        Self {
            unattributed,
            unmeasured,
        }
    }
}

/// Every iteration's reference and timing, sorted by reference.
struct SortedTimings {
    /// `(iteration_ref, timing)` in reference order, without GPU time yet.
    sorted: Vec<(EntityRef, IterationTiming)>,
    /// For each iteration table position, its place in `sorted`.
    place: Vec<u32>,
}

/// Every iteration's reference and timing without GPU time, sorted by reference, with each
/// table position's place in that order.
fn iteration_timings(graph: &CorrelationGraph) -> Result<SortedTimings> {
    let mut timings = graph
        .iterations()
        .iter()
        .enumerate()
        .map(|(position, it)| {
            let b = it.body();
            let elapsed_ns = match it.elapsed_of(b.start_ns, b.end_ns) {
                None => None,
                Some(e) => Some(Nanos::try_from(e).map_err(|_| Error::OutOfRange {
                    origin: Origin::default(),
                    message: format!("elapsed time of iteration {} exceeds i64", b.iteration_ref),
                })?),
            };
            let timing = IterationTiming {
                elapsed_ns,
                gpu: DeviceTimes::new(),
            };
            Ok((position as u32, b.iteration_ref.clone(), timing))
        })
        .collect::<Result<Vec<_>>>()?;
    // Iteration references are the table's keys: no two are equal.
    timings.sort_unstable_by(|a, b| a.1.cmp(&b.1));
    let mut place = vec![0u32; timings.len()];
    for (sorted, &(position, ..)) in timings.iter().enumerate() {
        place[position as usize] = sorted as u32;
    }
    let timings = timings
        .into_iter()
        .map(|(_, reference, timing)| (reference, timing))
        .collect();
    Ok(SortedTimings {
        sorted: timings,
        place,
    })
}

/// `(start, end)` when the activity is measurable: a device UUID, a monotonic or device clock,
/// and both ends.
fn measurable_span(entry: &ResolvedEvent<ActivityReferenceEvent>) -> Option<(Nanos, Nanos)> {
    let ctx = entry.context();
    if ctx.device_uuid.is_none() || ctx.clock_kind == ClockKind::Wall {
        return None;
    }
    Some((entry.body().start_ns?, entry.body().end_ns?))
}
