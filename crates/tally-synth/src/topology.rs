//! The simulated cluster: a client, serving hosts, their GPUs, processes and clocks.
//!
//! A [`Topology`] is fixed for a whole scenario and derived from its seed alone. Hosts follow a
//! four-way pattern (host `i` takes pattern `i % 4`) so that every scenario with four or more
//! hosts has each kind of evidence a real deployment mixes:
//!
//! | pattern | engine clock | GPUs (tensor parallel) | trace clock | GPU UUIDs | NVML sampler |
//! |---|---|---|---|---|---|
//! | 0 | monotonic | 1 | device | known | no |
//! | 1 | wall | 2 | the host's monotonic clock | known | yes (wall clock) |
//! | 2 | monotonic | 1 | device | unknown | no |
//! | 3 | monotonic | 2 | device | first GPU only | yes (wall clock) |
//!
//! Clocks are modelled as offsets from one simulated true time (ns since the run started): a
//! host's monotonic clock, its wall clock (slightly skewed), each device clock, and the client's
//! wall clock. Nothing here draws events or knows the evidence format.

use rand::RngExt;
use rand_xoshiro::Xoshiro256PlusPlus;

/// The first client wall-clock time, ns since the Unix epoch (2026-09-21).
const CLIENT_WALL_BASE: i64 = 1_790_000_000_000_000_000;

/// What a clock reading means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClockKind {
    /// A host's monotonic clock.
    Monotonic,
    /// A wall clock.
    Wall,
    /// A GPU's own clock.
    Device,
}

/// One clock: its domain name and how it reads relative to the simulated true time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Clock {
    /// The clock domain name (`worker-0/monotonic`, `client-0/boot-1a2b/unix_epoch_ns`, ...).
    pub domain: String,
    /// What kind of clock it is.
    pub kind: ClockKind,
    /// Reading at true time 0; the reading at true time `t` is `base + t`.
    pub base: i64,
}

impl Clock {
    /// The reading of this clock at simulated true time `t`.
    pub fn at(&self, t: i64) -> i64 {
        self.base + t
    }
}

/// One GPU of a host, with the profiler trace taken of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gpu {
    /// CUDA device index within the host.
    pub index: u32,
    /// The GPU's UUID, when the trace (or an operator) names it.
    pub uuid: Option<String>,
    /// Pid of the worker process driving this GPU (the trace's process).
    pub pid: u64,
    /// The clock the trace's timestamps are read from.
    pub trace_clock: Clock,
    /// The trace file name (`rank0-dev0.pt.trace.json.gz`).
    pub trace_file: String,
    /// Attachment id of the trace (`kineto:{file}:{12 hex}`), also its activities' id prefix.
    pub attachment_id: String,
}

/// One serving host: an engine process and its GPUs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Host {
    /// Host index (0-based); also the engine's rank.
    pub index: u32,
    /// Host name (`worker-{index}`).
    pub name: String,
    /// Which of the four patterns (see the module docs) it follows.
    pub pattern: u32,
    /// The host's monotonic clock.
    pub monotonic: Clock,
    /// The host's wall clock (boot-qualified domain).
    pub wall: Clock,
    /// Pid of the engine (scheduler) process.
    pub engine_pid: u64,
    /// Whether the engine adapter reports times on the wall clock instead of the monotonic one.
    pub engine_on_wall_clock: bool,
    /// The GPUs (tensor-parallel ranks) of this host's engine.
    pub gpus: Vec<Gpu>,
    /// Whether an NVML sampler reports GPU busy samples on the wall clock.
    pub sampler: bool,
}

impl Host {
    /// The clock the engine adapter reports times on.
    pub fn engine_clock(&self) -> &Clock {
        if self.engine_on_wall_clock {
            &self.wall
        } else {
            &self.monotonic
        }
    }
}

/// The load-generating client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Client {
    /// Host name (`client-0`).
    pub name: String,
    /// Pid of the client process.
    pub pid: u64,
    /// The client's wall clock.
    pub wall: Clock,
}

/// The whole simulated deployment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Topology {
    /// The run id shared by every record.
    pub run_id: String,
    /// The client.
    pub client: Client,
    /// The serving hosts.
    pub hosts: Vec<Host>,
}

impl Topology {
    /// Draws a topology of `hosts` hosts from `rng`.
    pub fn draw(seed: u64, hosts: u32, rng: &mut Xoshiro256PlusPlus) -> Self {
        let client_boot = hex(rng, 4);
        let client = Client {
            name: "client-0".into(),
            pid: 4242,
            wall: Clock {
                domain: format!("client-0/boot-{client_boot}/unix_epoch_ns"),
                kind: ClockKind::Wall,
                base: CLIENT_WALL_BASE + rng.random_range(0..1_000_000_000_000i64),
            },
        };
        let hosts = (0..hosts)
            .map(|index| draw_host(index, client.wall.base, rng))
            .collect();
        Self {
            run_id: format!("synth-{seed:016x}"),
            client,
            hosts,
        }
    }
}

fn draw_host(index: u32, client_wall_base: i64, rng: &mut Xoshiro256PlusPlus) -> Host {
    let pattern = index % 4;
    let name = format!("worker-{index}");
    // Hosts booted hours before the run; their wall clocks are skewed by up to ±2 ms.
    let monotonic = Clock {
        domain: format!("{name}/monotonic"),
        kind: ClockKind::Monotonic,
        base: rng.random_range(3_600_000_000_000..86_400_000_000_000i64),
    };
    let wall = Clock {
        domain: format!("{name}/boot-{}/unix_epoch_ns", hex(rng, 4)),
        kind: ClockKind::Wall,
        base: client_wall_base + rng.random_range(-2_000_000..2_000_000i64),
    };
    let gpu_count = if pattern % 2 == 1 { 2 } else { 1 };
    let gpus = (0..gpu_count)
        .map(|g| {
            let trace_file = format!("rank{index}-dev{g}.pt.trace.json.gz");
            let attachment_id = format!("kineto:{trace_file}:{}", hex(rng, 12));
            let uuid = match (pattern, g) {
                (2, _) | (3, 1) => None,
                _ => Some(gpu_uuid(rng)),
            };
            let trace_clock = if pattern == 1 {
                monotonic.clone()
            } else {
                Clock {
                    domain: format!("kineto:{name}:{attachment_id}"),
                    kind: ClockKind::Device,
                    base: monotonic.base + rng.random_range(100_000_000..2_000_000_000i64),
                }
            };
            Gpu {
                index: g,
                uuid,
                pid: 2000 + u64::from(index) * 10 + u64::from(g),
                trace_clock,
                trace_file,
                attachment_id,
            }
        })
        .collect();
    Host {
        index,
        name,
        pattern,
        monotonic,
        wall,
        engine_pid: 1000 + u64::from(index),
        engine_on_wall_clock: pattern == 1,
        gpus,
        sampler: pattern == 1 || pattern == 3,
    }
}

/// `n` lowercase hex digits.
pub(crate) fn hex(rng: &mut Xoshiro256PlusPlus, n: usize) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    (0..n)
        .map(|_| char::from(DIGITS[rng.random_range(0..16usize)]))
        .collect()
}

fn gpu_uuid(rng: &mut Xoshiro256PlusPlus) -> String {
    format!(
        "GPU-{}-{}-{}-{}-{}",
        hex(rng, 8),
        hex(rng, 4),
        hex(rng, 4),
        hex(rng, 4),
        hex(rng, 12)
    )
}
