//! JSON shapes shared by the evidence commands (`evidence-cli.md`): entity refs, device clocks,
//! GPU time.

use serde::Serialize;
use tally_evidence::{DeviceClock, EntityRef, GpuTime};

/// `{"producer_id", "id"}`.
#[derive(Serialize)]
pub struct RefJson<'a> {
    producer_id: &'a str,
    id: &'a str,
}

impl<'a> From<&'a EntityRef> for RefJson<'a> {
    fn from(r: &'a EntityRef) -> Self {
        Self {
            producer_id: &r.producer_id,
            id: &r.id,
        }
    }
}

/// `{"device_uuid", "clock_domain", "clock_kind"}`.
#[derive(Serialize)]
pub struct DeviceClockJson<'a> {
    device_uuid: &'a str,
    clock_domain: &'a str,
    clock_kind: &'a str,
}

impl<'a> From<&'a DeviceClock> for DeviceClockJson<'a> {
    fn from(k: &'a DeviceClock) -> Self {
        Self {
            device_uuid: &k.device_uuid,
            clock_domain: &k.clock_domain,
            clock_kind: k.clock_kind.as_str(),
        }
    }
}

/// One GPU-time group: its key and the three figures.
#[derive(Serialize)]
pub struct GpuTimeJson<'a> {
    device_clock: DeviceClockJson<'a>,
    summed_activity_ns: u64,
    busy_ns: u64,
    activity_count: u64,
}

impl<'a> GpuTimeJson<'a> {
    /// The JSON form of one group.
    pub fn new(key: &'a DeviceClock, time: &GpuTime) -> Self {
        Self {
            device_clock: key.into(),
            summed_activity_ns: time.summed_activity_ns,
            busy_ns: time.busy_ns,
            activity_count: time.activity_count,
        }
    }
}
