//! The serving simulation: a closed-loop client and one continuous-batching engine per host.
//!
//! The client keeps `concurrency` requests in flight per host: each slot sends a request, waits
//! for it to end, thinks a little and sends the next, until the scenario's request count is
//! reached. A few requests fail on their first attempt (engine error or client timeout) and are
//! retried on the same host after a back-off; those requests' attempts are identified.
//!
//! Each engine runs a vLLM-style scheduler: every step decodes one token for each running
//! request whose prompt is done, then fills the rest of a 2048-token budget with prompt chunks
//! (chunked prefill), admitting waiting requests in arrival order. The step that finishes a
//! prompt also samples its first token. Step time grows with prompt tokens and decoding
//! requests; tensor-parallel hosts are faster per step and add an all-reduce.
//!
//! Hosts advance in global time order (the host with the earliest next step goes next), so the
//! output is one time-ordered stream of [`Happening`]s, produced lazily: memory is bounded by the
//! requests in flight, never by the run's length.

use std::collections::VecDeque;
use std::sync::Arc;

use rand::RngExt;
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::gpu_work::{self, GpuLauncher, StepShape};
use crate::happening::{
    AttemptEnd, AttemptId, Happening, Member, Outcome, RequestEnd, Role, RuntimeLaunch, Step,
};
use crate::topology::{Topology, hex};

/// Token budget of one step.
const STEP_TOKEN_BUDGET: u64 = 2048;
/// KV-cache bytes per token (a Llama-3-8B-like model in bf16).
const KV_BYTES_PER_TOKEN: u64 = 131_072;
/// Length of a clock-synchronisation window.
const SYNC_WINDOW_NS: i64 = 3_000_000_000;

/// What drives a [`Simulation`].
#[derive(Clone, Debug)]
pub(crate) struct SimulationParams {
    pub requests: u64,
    pub concurrency: u32,
    pub retry_per_mille: u32,
}

/// One attempt in flight.
#[derive(Clone, Debug)]
struct Seq {
    id: AttemptId,
    prompt: u64,
    output: u64,
    prefilled: u64,
    generated: u64,
    /// Fails once it has generated this many tokens, with this outcome.
    failure: Option<(u64, Outcome)>,
    request_start_t: i64,
    client_start_t: i64,
    arrival_t: i64,
    backend_id: String,
    last_iteration: u64,
}

/// One host's engine.
struct Engine {
    host: u32,
    rng: Xoshiro256PlusPlus,
    /// When the engine is next free to start a step.
    now: i64,
    pending: Vec<Seq>,
    waiting: VecDeque<Seq>,
    running: Vec<Seq>,
    steps: u64,
    next_window: u64,
    launchers: Vec<GpuLauncher>,
    tensor_parallel: bool,
    sampler: bool,
}

/// An attempt that left an engine, for the client to act on.
struct Ended {
    seq: Seq,
    outcome: Outcome,
    client_end_t: i64,
}

/// The lazy stream of [`Happening`]s of one scenario.
pub struct Simulation {
    topology: Arc<Topology>,
    params: SimulationParams,
    issued: u64,
    engines: Vec<Engine>,
    out: VecDeque<Happening>,
    started: bool,
}

impl Simulation {
    pub(crate) fn new(
        topology: Arc<Topology>,
        params: SimulationParams,
        mut engine_rng: impl FnMut(u32) -> Xoshiro256PlusPlus,
    ) -> Self {
        let engines = topology
            .hosts
            .iter()
            .map(|host| Engine {
                host: host.index,
                rng: engine_rng(host.index),
                now: 0,
                pending: Vec::new(),
                waiting: VecDeque::new(),
                running: Vec::new(),
                steps: 0,
                next_window: 1,
                launchers: host
                    .gpus
                    .iter()
                    .map(|gpu| GpuLauncher {
                        gpu: gpu.index,
                        tid: gpu.pid + 7,
                        correlation: 0,
                    })
                    .collect(),
                tensor_parallel: host.gpus.len() > 1,
                sampler: host.sampler,
            })
            .collect();
        Self {
            topology,
            params,
            issued: 0,
            engines,
            out: VecDeque::new(),
            started: false,
        }
    }

    /// The topology the simulation runs on.
    pub fn topology(&self) -> &Arc<Topology> {
        &self.topology
    }

    fn start(&mut self) {
        self.out.push_back(Happening::Start);
        for e in 0..self.engines.len() {
            let sync = self.engines[e].clock_sync(0);
            self.out.push_back(sync);
        }
        // Each slot sends its first request within the first 20 ms.
        for _ in 0..self.params.concurrency {
            for e in 0..self.engines.len() {
                let t = self.engines[e].rng.random_range(0..20_000_000i64);
                self.issue(e, t, None);
            }
        }
    }

    /// Sends a new request (or, with `retry_of`, the next attempt of one) to engine `e`.
    fn issue(&mut self, e: usize, client_t: i64, retry_of: Option<Seq>) {
        let engine = &mut self.engines[e];
        let rng = &mut engine.rng;
        let latency = rng.random_range(150_000..400_000i64);
        let backend_id = format!("cmpl-{}", hex(rng, 12));
        let seq = match retry_of {
            Some(previous) => Seq {
                id: AttemptId {
                    attempt: previous.id.attempt + 1,
                    ..previous.id
                },
                prefilled: 0,
                generated: 0,
                failure: None,
                client_start_t: client_t,
                arrival_t: client_t + latency,
                backend_id,
                last_iteration: 0,
                ..previous
            },
            None => {
                if self.issued >= self.params.requests {
                    return;
                }
                let request = self.issued;
                self.issued += 1;
                let prompt = match rng.random_range(0..10u32) {
                    0..=5 => rng.random_range(64..512u64),
                    6..=8 => rng.random_range(512..2048u64),
                    _ => rng.random_range(2048..6000u64),
                };
                let mut output = 1 + rng.random_range(0..7u64) + rng.random_range(0..7u64);
                if rng.random_range(0..20u32) == 0 {
                    output += rng.random_range(10..40u64);
                }
                let retried = rng.random_range(0..1000u32) < self.params.retry_per_mille;
                let failure = retried.then(|| {
                    let outcome = if rng.random_range(0..10u32) < 7 {
                        Outcome::Error
                    } else {
                        Outcome::Timeout
                    };
                    (rng.random_range(1..=output), outcome)
                });
                Seq {
                    id: AttemptId {
                        request,
                        attempt: 1,
                        tracked: retried,
                    },
                    prompt,
                    output,
                    prefilled: 0,
                    generated: 0,
                    failure,
                    request_start_t: client_t,
                    client_start_t: client_t,
                    arrival_t: client_t + latency,
                    backend_id,
                    last_iteration: 0,
                }
            }
        };
        engine.pending.push(seq);
    }

    /// Runs the next step of the engine that is due first. `false` when every engine is done.
    fn advance(&mut self) -> bool {
        if !self.started {
            self.started = true;
            self.start();
            return true;
        }
        let due = (0..self.engines.len())
            .filter_map(|e| self.engines[e].next_time().map(|t| (t, e)))
            .min();
        let Some((t, e)) = due else {
            return false;
        };
        let ended = self.engines[e].step(t, &mut self.out);
        for Ended {
            seq,
            outcome,
            client_end_t,
        } in ended
        {
            let host = self.engines[e].host;
            if outcome != Outcome::Ok {
                let backoff = self.engines[e].rng.random_range(20_000_000..200_000_000i64);
                self.issue(e, client_end_t + backoff, Some(seq));
                continue;
            }
            self.out.push_back(Happening::RequestEnd(RequestEnd {
                request: seq.id.request,
                host,
                attempts: seq.id.attempt,
                prompt_tokens: seq.prompt,
                output_tokens: seq.generated,
                client_start_t: seq.request_start_t,
                client_end_t,
                last_iteration: seq.last_iteration,
            }));
            let think = self.engines[e].rng.random_range(0..10_000_000i64);
            self.issue(e, client_end_t + think, None);
        }
        true
    }
}

impl Iterator for Simulation {
    type Item = Happening;

    fn next(&mut self) -> Option<Happening> {
        loop {
            if let Some(h) = self.out.pop_front() {
                return Some(h);
            }
            if !self.advance() {
                return None;
            }
        }
    }
}

impl Engine {
    fn next_time(&self) -> Option<i64> {
        if !self.running.is_empty() || !self.waiting.is_empty() {
            return Some(self.now);
        }
        let arrival = self.pending.iter().map(|s| s.arrival_t).min()?;
        Some(arrival.max(self.now))
    }

    fn clock_sync(&mut self, window: u64) -> Happening {
        let w = window as i64;
        let uncertainty_ns = self.rng.random_range(15_000..60_000i64);
        Happening::ClockSync {
            host: self.host,
            window,
            from_t: if window == 0 {
                -50_000_000
            } else {
                w * SYNC_WINDOW_NS
            },
            to_t: (w + 1) * SYNC_WINDOW_NS,
            error_ns: self
                .rng
                .random_range(-uncertainty_ns / 2..=uncertainty_ns / 2),
            uncertainty_ns,
            rtt_ns: self.rng.random_range(80_000..250_000i64),
        }
    }

    fn step(&mut self, t: i64, out: &mut VecDeque<Happening>) -> Vec<Ended> {
        while t >= self.next_window as i64 * SYNC_WINDOW_NS {
            let sync = self.clock_sync(self.next_window);
            out.push_back(sync);
            self.next_window += 1;
        }
        // Arrivals up to `t` join the waiting queue in arrival order.
        let mut arrived: Vec<Seq> = Vec::new();
        self.pending.retain(|s| {
            if s.arrival_t <= t {
                arrived.push(s.clone());
                false
            } else {
                true
            }
        });
        arrived.sort_by_key(|s| (s.arrival_t, s.id.request));
        self.waiting.extend(arrived);

        self.steps += 1;
        let index = self.steps;
        let mut budget = STEP_TOKEN_BUDGET;
        let mut members = Vec::new();
        let mut decode_seqs = 0;
        for seq in &mut self.running {
            if seq.prefilled == seq.prompt {
                seq.generated += 1;
                members.push(Member {
                    attempt: seq.id,
                    role: Role::Decode,
                    input_tokens: None,
                    output_tokens: Some(1),
                    kv_bytes: None,
                });
                budget -= 1;
                decode_seqs += 1;
            }
        }
        // Prompt chunks: first the running requests still prefilling, then new admissions.
        let mut chunks: Vec<(usize, u64)> = Vec::new();
        for (k, seq) in self.running.iter().enumerate() {
            if seq.prefilled < seq.prompt && budget > 0 {
                let chunk = (seq.prompt - seq.prefilled).min(budget);
                budget -= chunk;
                chunks.push((k, chunk));
            }
        }
        while budget > 0 {
            let Some(seq) = self.waiting.pop_front() else {
                break;
            };
            out.push_back(Happening::Scheduled {
                host: self.host,
                attempt: seq.id,
                arrival_t: seq.arrival_t,
                scheduled_t: t,
            });
            let chunk = seq.prompt.min(budget);
            budget -= chunk;
            chunks.push((self.running.len(), chunk));
            self.running.push(seq);
        }
        let mut prefill_tokens = 0;
        for &(k, chunk) in &chunks {
            let seq = &mut self.running[k];
            seq.prefilled += chunk;
            prefill_tokens += chunk;
            let first_token = seq.prefilled == seq.prompt;
            if first_token {
                seq.generated = 1;
            }
            members.push(Member {
                attempt: seq.id,
                role: Role::Prefill,
                input_tokens: Some(chunk),
                output_tokens: first_token.then_some(1),
                kv_bytes: Some(chunk * KV_BYTES_PER_TOKEN),
            });
        }
        for seq in &mut self.running {
            seq.last_iteration = index;
        }
        let decode_tokens = decode_seqs as u64;

        let rng = &mut self.rng;
        let mut duration = 3_200_000 + prefill_tokens as i64 * 1_600 + decode_seqs * 40_000;
        if self.tensor_parallel {
            duration = duration * 65 / 100;
        }
        duration = duration * rng.random_range(950..1050i64) / 1000;
        let end_t = t + duration;
        let shape = StepShape {
            start_t: t,
            end_t,
            prefill_tokens,
            decode_seqs: decode_tokens,
            tensor_parallel: self.tensor_parallel,
        };
        let mut gpu_ops = Vec::new();
        for launcher in &mut self.launchers {
            gpu_work::draw_ops(rng, launcher, &shape, &mut gpu_ops);
        }
        let runtime_launch = (rng.random_range(0..3u32) == 0).then(|| RuntimeLaunch {
            correlation: gpu_ops
                .iter()
                .find_map(|op| op.launch.as_ref().map(|l| l.correlation))
                .unwrap_or(1),
            linked: rng.random_range(0..100u32) >= 3,
        });
        let sample_stage = index.is_multiple_of(4).then(|| {
            let start = end_t - rng.random_range(100_000..250_000i64);
            (start, start + rng.random_range(20_000..90_000i64))
        });
        out.push_back(Happening::Step(Box::new(Step {
            host: self.host,
            index,
            start_t: t,
            end_t,
            members,
            prefill_tokens,
            decode_tokens,
            gpu_ops,
            runtime_launch,
            sample_stage,
            busy_sample: self.sampler && index.is_multiple_of(16),
            gc_pause: index % 128 == 64,
        })));

        // Requests that are done or fail leave, in their running order.
        let mut ended = Vec::new();
        let mut k = 0;
        while k < self.running.len() {
            let seq = &self.running[k];
            let outcome = match seq.failure {
                Some((after, outcome)) if seq.generated >= after => Some(outcome),
                _ if seq.generated >= seq.output => Some(Outcome::Ok),
                _ => None,
            };
            match outcome {
                None => k += 1,
                Some(outcome) => {
                    let seq = self.running.remove(k);
                    ended.push(self.end_attempt(seq, outcome, end_t, out));
                }
            }
        }
        self.now = end_t + self.rng.random_range(30_000..250_000i64);
        ended
    }

    fn end_attempt(
        &mut self,
        seq: Seq,
        outcome: Outcome,
        end_t: i64,
        out: &mut VecDeque<Happening>,
    ) -> Ended {
        let rng = &mut self.rng;
        let detokenize = (outcome == Outcome::Ok).then(|| {
            let start = end_t + rng.random_range(10_000..40_000i64);
            (start, start + rng.random_range(40_000..200_000i64))
        });
        let engine_done = detokenize.map_or(end_t, |(_, end)| end);
        let client_end_t = match outcome {
            Outcome::Timeout => engine_done + rng.random_range(1_000_000..5_000_000i64),
            _ => engine_done + rng.random_range(150_000..400_000i64),
        };
        out.push_back(Happening::AttemptEnd(AttemptEnd {
            host: self.host,
            attempt: seq.id,
            backend_id: seq.backend_id.clone(),
            outcome,
            prompt_tokens: seq.prompt,
            generated_tokens: seq.generated,
            client_start_t: seq.client_start_t,
            client_end_t,
            detokenize,
        }));
        Ended {
            seq,
            outcome,
            client_end_t,
        }
    }
}
