//! [`DeviceTimes`]: an iteration's GPU time per device clock, a map kept as a sorted list.
//!
//! An iteration runs on one device or a few, and a trace has tens of thousands of iterations: a
//! `BTreeMap` spends a whole node (about 540 bytes) on each, about 14 MB by count on the 1M
//! record benchmark, allocated on the accountant's last, sequential step (peak RSS fell 2–6 MiB
//! when they went). A sorted `Vec` of exactly the entries costs 48 bytes per device.

use super::{DeviceClock, GpuTime};

/// GPU time per device clock, in key order (a small map: lookups search the sorted entries).
///
/// It was a `BTreeMap<DeviceClock, GpuTime>` (≈ 14 MB of nodes at 1M records); the methods
/// callers used (`get`, `insert`, `iter`, `keys`, `values`, `len`, `collect`) behave the same.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct DeviceTimes {
    entries: Vec<(DeviceClock, GpuTime)>,
}

impl DeviceTimes {
    /// No devices.
    pub fn new() -> Self {
        Self::default()
    }

    /// The time of `device`, if it has one.
    pub fn get(&self, device: &DeviceClock) -> Option<&GpuTime> {
        let at = self.entries.binary_search_by(|(k, _)| k.cmp(device)).ok()?;
        Some(&self.entries[at].1)
    }

    /// Sets the time of `device`, returning the time it replaces.
    pub fn insert(&mut self, device: DeviceClock, time: GpuTime) -> Option<GpuTime> {
        match self.entries.binary_search_by(|(k, _)| k.cmp(&device)) {
            Ok(at) => Some(std::mem::replace(&mut self.entries[at].1, time)),
            Err(at) => {
                // Exactly the entries: most iterations have one device.
                self.entries.reserve_exact(1);
                self.entries.insert(at, (device, time));
                None
            }
        }
    }

    /// `(device, time)` in key order.
    pub fn iter(&self) -> <&Self as IntoIterator>::IntoIter {
        self.into_iter()
    }

    /// The devices, in order.
    pub fn keys(&self) -> impl ExactSizeIterator<Item = &DeviceClock> {
        self.entries.iter().map(|(k, _)| k)
    }

    /// The times, in key order.
    pub fn values(&self) -> impl ExactSizeIterator<Item = &GpuTime> {
        self.entries.iter().map(|(_, t)| t)
    }

    /// Number of devices.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no device has a time.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl FromIterator<(DeviceClock, GpuTime)> for DeviceTimes {
    /// Later entries of an equal key replace earlier ones, as in a map.
    fn from_iter<I: IntoIterator<Item = (DeviceClock, GpuTime)>>(items: I) -> Self {
        let mut entries: Vec<(DeviceClock, GpuTime)> = items.into_iter().collect();
        // Stable, so equal keys stay in arrival order; of each run the last one's time is kept.
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        entries.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            if same {
                std::mem::swap(&mut later.1, &mut kept.1);
            }
            same
        });
        Self { entries }
    }
}

impl<'a> IntoIterator for &'a DeviceTimes {
    type Item = (&'a DeviceClock, &'a GpuTime);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (DeviceClock, GpuTime)>,
        fn(&'a (DeviceClock, GpuTime)) -> (&'a DeviceClock, &'a GpuTime),
    >;
    fn into_iter(self) -> Self::IntoIter {
        self.entries.iter().map(|(k, t)| (k, t))
    }
}

impl IntoIterator for DeviceTimes {
    type Item = (DeviceClock, GpuTime);
    type IntoIter = std::vec::IntoIter<(DeviceClock, GpuTime)>;
    fn into_iter(self) -> Self::IntoIter {
        self.entries.into_iter()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::model::ClockKind;

    fn device(uuid: &str, domain: &str) -> DeviceClock {
        DeviceClock {
            device_uuid: uuid.into(),
            clock_domain: domain.into(),
            clock_kind: ClockKind::Device,
        }
    }

    fn time(n: u64) -> GpuTime {
        GpuTime {
            summed_activity_ns: n,
            busy_ns: n,
            activity_count: 1,
        }
    }

    #[test]
    fn behaves_as_a_btree_map() {
        let keys = [
            ("b", "x"),
            ("a", "y"),
            ("a", "x"),
            ("b", "x"),
            ("c", "z"),
            ("a", "y"),
        ];
        let (mut ours, mut map) = (DeviceTimes::new(), BTreeMap::new());
        for (n, (uuid, domain)) in keys.into_iter().enumerate() {
            let key = device(uuid, domain);
            assert_eq!(
                ours.insert(key.clone(), time(n as u64)),
                map.insert(key, time(n as u64))
            );
            assert!(ours.iter().eq(map.iter()));
        }
        assert_eq!(ours.len(), map.len());
        assert!(ours.keys().eq(map.keys()) && ours.values().eq(map.values()));
        for (uuid, domain) in [("a", "x"), ("a", "z"), ("c", "z")] {
            let key = device(uuid, domain);
            assert_eq!(ours.get(&key), map.get(&key));
        }
        let pairs: Vec<_> = keys
            .iter()
            .enumerate()
            .map(|(n, (u, d))| (device(u, d), time(n as u64)))
            .collect();
        let collected: DeviceTimes = pairs.iter().cloned().collect();
        let expected: BTreeMap<_, _> = pairs.into_iter().collect();
        assert!(collected.into_iter().eq(expected));
    }
}
