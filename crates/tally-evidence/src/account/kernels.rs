//! GPU time by activity name — which kernels took the time (`docs/evidence.md#kernels`).
//!
//! For the human report of `tally trace account`, and never part of [`super::account_gpu_time`]
//! or its JSON, so the accounting itself pays nothing for it: names are metadata, kept as text,
//! and are parsed only here. An activity's name is its `metadata.first_name` (what
//! `tally trace import` writes: the kernel, copy or set name; a launch record's first kernel),
//! else `metadata.name`, else none ([`activity_name`]). The table counts exactly the activities
//! the accountant measures (GPU domain, a device UUID, a monotonic or device clock, both ends),
//! each with the same summed time (the lengths of its busy intervals), so a device clock's rows
//! add up to its `summed_activity_ns` and `activity_count`; an activity without a name is
//! counted under `(unnamed {activity_kind})`.
//!
//! Representation: the activities table is cut into ranges read side by side on rayon's pool;
//! each range interns names per device clock in a hash map keyed by the name's text (a name is
//! copied once per range, not per activity), and the maps are merged by name.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use rayon::prelude::*;
use rustc_hash::FxHashMap;
use serde::Deserialize;

use super::{DeviceClock, busy_intervals, measurable_span, overflow};
use crate::error::Result;
use crate::model::{ActivityDomain, ActivityReferenceEvent, Text};
use crate::resolve::{CorrelationGraph, ResolvedEvent};

/// The GPU time of the activities of one name on one device clock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelTime {
    /// The name ([`activity_name`]), or `(unnamed {activity_kind})`.
    pub name: Text,
    /// How many activities (kernel launches, copies, sets; a launch record counts once).
    pub launches: u64,
    /// The sum of their busy intervals' lengths, as in `summed_activity_ns`.
    pub summed_ns: u64,
}

/// The name of an activity: `metadata.first_name`, else `metadata.name`, when it is a string.
pub fn activity_name(event: &ResolvedEvent<ActivityReferenceEvent>) -> Option<Text> {
    names_of(event.metadata().json_text(), |name| Text::from(name))
}

/// The summed time `account_gpu_time` gives a measurable GPU activity (the lengths of its busy
/// intervals); `None` for one it does not measure.
///
/// Errors only with [`crate::Error::OutOfRange`], as the accountant does.
pub fn measured_summed_ns(event: &ResolvedEvent<ActivityReferenceEvent>) -> Result<Option<u64>> {
    let activity = event.body();
    if activity.activity_domain != ActivityDomain::Gpu {
        return Ok(None);
    }
    let Some((start, end)) = measurable_span(event) else {
        return Ok(None);
    };
    let mut summed: Option<u64> = Some(0);
    busy_intervals(activity, start, end, |interval| {
        summed = summed.and_then(|s| s.checked_add(interval.len()));
    })?;
    summed.map(Some).ok_or_else(|| {
        overflow(&format!(
            "summed activity time of {}",
            activity.activity_ref
        ))
    })
}

/// Per device clock, GPU time by activity name, largest summed time first (ties: more launches
/// first, then by name), over the activities `account_gpu_time` measures.
///
/// Errors only with [`crate::Error::OutOfRange`], where the accountant would.
pub fn kernel_times(graph: &CorrelationGraph) -> Result<BTreeMap<DeviceClock, Vec<KernelTime>>> {
    let table = graph.activities();
    let merged = (0..table.len())
        .into_par_iter()
        .with_min_len(ACTIVITIES_PER_TASK)
        .try_fold(ByName::default, |mut acc, position| {
            let event = table.get_at(position).expect("a position of the table");
            acc.add(event)?;
            Ok(acc)
        })
        .map(|acc| acc.map(ByName::finish))
        .try_reduce(FxHashMap::default, |a, b| Ok(merge(a, b)))?;
    let mut out = BTreeMap::new();
    for (device, names) in merged {
        let mut rows: Vec<KernelTime> = names
            .into_iter()
            .map(|(name, tally)| KernelTime {
                name,
                launches: tally.launches,
                summed_ns: tally.summed,
            })
            .collect();
        rows.sort_unstable_by(|a, b| {
            b.summed_ns
                .cmp(&a.summed_ns)
                .then_with(|| b.launches.cmp(&a.launches))
                .then_with(|| a.name.cmp(&b.name))
        });
        out.insert(device, rows);
    }
    Ok(out)
}

/// Activities worth a parallel task of their own (each parses one metadata object).
const ACTIVITIES_PER_TASK: usize = 4096;

/// Launches and summed time of one name.
#[derive(Clone, Copy, Default)]
struct Tally {
    launches: u64,
    summed: u64,
}

impl Tally {
    fn add(&mut self, other: Tally) -> Result<()> {
        self.launches += other.launches;
        self.summed = self
            .summed
            .checked_add(other.summed)
            .ok_or_else(|| overflow("summed activity time of one kernel name"))?;
        Ok(())
    }
}

type NameTable = FxHashMap<DeviceClock, FxHashMap<Text, Tally>>;

/// One range's names, per device clock; device clocks found through the interned context.
#[derive(Default)]
struct ByName {
    device_of_context: FxHashMap<usize, u32>,
    devices: Vec<(DeviceClock, FxHashMap<Text, Tally>)>,
}

impl ByName {
    fn add(&mut self, event: &ResolvedEvent<ActivityReferenceEvent>) -> Result<()> {
        let Some(summed) = measured_summed_ns(event)? else {
            return Ok(());
        };
        let devices = &mut self.devices;
        let device = *self
            .device_of_context
            .entry(Arc::as_ptr(event.context_arc()) as usize)
            .or_insert_with(|| {
                let ctx = event.context();
                let key = DeviceClock {
                    device_uuid: ctx.device_uuid.clone().expect("measurable has a uuid"),
                    clock_domain: ctx.clock_domain.clone(),
                    clock_kind: ctx.clock_kind,
                };
                // Contexts that differ elsewhere (host, pid) may share a device clock.
                match devices.iter().position(|(d, _)| *d == key) {
                    Some(at) => at as u32,
                    None => {
                        devices.push((key, FxHashMap::default()));
                        (devices.len() - 1) as u32
                    }
                }
            });
        let names = &mut self.devices[device as usize].1;
        let one = Tally {
            launches: 1,
            summed,
        };
        let text = event.metadata().json_text();
        let found = names_of(text, |name| match names.get_mut(name) {
            Some(tally) => tally.add(one),
            None => {
                names.insert(Text::from(name), one);
                Ok(())
            }
        });
        match found {
            Some(result) => result,
            None => {
                let unnamed = format!("(unnamed {})", event.body().activity_kind);
                names.entry(Text::from(unnamed)).or_default().add(one)
            }
        }
    }

    fn finish(self) -> NameTable {
        self.devices.into_iter().collect()
    }
}

fn merge(mut a: NameTable, b: NameTable) -> NameTable {
    for (device, names) in b {
        let into = a.entry(device).or_default();
        for (name, tally) in names {
            // The sums were checked per range; their total is at most the device's summed
            // time, which the accountant checked too, so this cannot overflow.
            let entry = into.entry(name).or_default();
            entry.launches += tally.launches;
            entry.summed = entry.summed.saturating_add(tally.summed);
        }
    }
    a
}

/// The two keys a name is read from, borrowed from the metadata text where it has no escapes.
#[derive(Deserialize)]
struct NameKeys<'a> {
    #[serde(borrow, default)]
    first_name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
}

/// Calls `with` on the activity's name (`first_name`, else `name`) found in the metadata text.
///
/// The fast path reads only the two keys; metadata it cannot read that way (a key that is not a
/// string, a repeated key, the literals `NaN`/`Infinity`) is parsed whole, as the reader kept it.
fn names_of<T>(metadata: &str, with: impl FnOnce(&str) -> T) -> Option<T> {
    if let Ok(keys) = serde_json::from_str::<NameKeys<'_>>(metadata) {
        return keys.first_name.or(keys.name).map(|name| with(&name));
    }
    let map = crate::json::parse_lenient(metadata).ok()?;
    ["first_name", "name"]
        .iter()
        .find_map(|key| map.get(key)?.as_str())
        .map(with)
}

#[cfg(test)]
mod tests {
    use super::names_of;

    fn name(metadata: &str) -> Option<String> {
        names_of(metadata, str::to_string)
    }

    #[test]
    fn a_name_is_first_name_else_name_when_a_string() {
        assert_eq!(
            name(r#"{"first_name": "gemm", "name": "x"}"#).as_deref(),
            Some("gemm")
        );
        assert_eq!(
            name(r#"{"name": "relu", "tid": 3}"#).as_deref(),
            Some("relu")
        );
        assert_eq!(
            name(r#"{"first_name": null, "name": "relu"}"#).as_deref(),
            Some("relu")
        );
        assert_eq!(name("{}"), None);
        // Escapes are decoded.
        assert_eq!(
            name(r#"{"first_name": "a\"b\u00e9"}"#).as_deref(),
            Some("a\"bé")
        );
        // What the two-key read refuses is read whole: a non-string key, a repeated key (the
        // last wins, as in Python), a non-standard literal elsewhere in the object.
        assert_eq!(
            name(r#"{"first_name": 7, "name": "relu"}"#).as_deref(),
            Some("relu")
        );
        assert_eq!(
            name(r#"{"first_name": "a", "first_name": "b"}"#).as_deref(),
            Some("b")
        );
        assert_eq!(
            name(r#"{"first_name": "gemm", "x": NaN}"#).as_deref(),
            Some("gemm")
        );
    }
}
