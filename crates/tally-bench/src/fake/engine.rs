//! The `batched` timing mode: a continuous-batching engine in one task.
//!
//! Each iteration runs every admitted sequence one step: its length is
//! `step_base + step_per_seq · running + prefill_per_token · (prompt tokens admitted this
//! iteration)`. Up to `max_batch` sequences run; the rest wait in a FIFO queue and are admitted at
//! the start of an iteration (a request that arrives mid-iteration waits for the next one). A
//! sequence's first token leaves at the end of the iteration that ran its prefill, then one token
//! per iteration. Iterations follow each other on absolute deadlines; an idle engine starts the
//! next iteration as soon as a request arrives.
//!
//! Closed loop at C ≤ max_batch, steady state, prompt i and output o tokens: τ(C) = base +
//! per_seq·C + prefill_per_token·C·i/o and output tokens/s = C/τ(C) ([`EngineConfig::tokens_per_s`]).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use crate::timer::sleep_until;

/// The engine's cost model.
#[derive(Clone, Debug, PartialEq)]
pub struct EngineConfig {
    /// Fixed cost of one iteration, ms.
    pub step_base_ms: f64,
    /// Cost per running sequence, ms.
    pub step_per_seq_ms: f64,
    /// Cost per prompt token admitted in the iteration, ms.
    pub prefill_per_token_ms: f64,
    /// Most sequences running at once.
    pub max_batch: usize,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            step_base_ms: 2.0,
            step_per_seq_ms: 0.25,
            prefill_per_token_ms: 0.002,
            max_batch: 64,
        }
    }
}

impl EngineConfig {
    /// One iteration's length, ms.
    pub fn iteration_ms(&self, running: usize, admitted_prompt_tokens: u64) -> f64 {
        self.step_base_ms
            + self.step_per_seq_ms * running as f64
            + self.prefill_per_token_ms * admitted_prompt_tokens as f64
    }

    /// τ(C) of a closed loop at concurrency C ≤ max_batch with prompt i and output o, ms.
    pub fn steady_iteration_ms(&self, concurrency: usize, input: u64, output: u64) -> f64 {
        self.step_base_ms
            + self.step_per_seq_ms * concurrency as f64
            + self.prefill_per_token_ms * concurrency as f64 * input as f64 / output as f64
    }

    /// Output tokens per second of that closed loop: C/τ(C).
    pub fn tokens_per_s(&self, concurrency: usize, input: u64, output: u64) -> f64 {
        concurrency as f64 / (self.steady_iteration_ms(concurrency, input, output) / 1e3)
    }
}

/// One sequence handed to the engine.
#[derive(Debug)]
pub struct EngineJob {
    /// Prompt tokens (prefill cost).
    pub prompt_tokens: u64,
    /// Tokens to generate (≥ 1).
    pub output_tokens: u64,
    /// Receives the instant of each generated token.
    pub tokens: mpsc::UnboundedSender<Instant>,
}

struct Running {
    job: EngineJob,
    produced: u64,
}

/// Moves a deadline that falls in the pause window to its end.
pub fn after_pause(due: Instant, pause: Option<(Instant, Instant)>) -> Instant {
    match pause {
        Some((start, end)) if due >= start && due < end => end,
        _ => due,
    }
}

/// Runs the engine until every sender of `jobs` is gone.
pub async fn run(
    config: EngineConfig,
    mut jobs: mpsc::UnboundedReceiver<EngineJob>,
    pause: Option<(Instant, Instant)>,
) {
    let mut queue: VecDeque<EngineJob> = VecDeque::new();
    let mut running: Vec<Running> = Vec::new();
    let mut iteration_start = Instant::now();
    loop {
        if running.is_empty() && queue.is_empty() {
            match jobs.recv().await {
                Some(job) => queue.push_back(job),
                None => return,
            }
            iteration_start = Instant::now();
        }
        while let Ok(job) = jobs.try_recv() {
            queue.push_back(job);
        }
        let mut admitted_tokens = 0;
        while running.len() < config.max_batch.max(1) {
            let Some(job) = queue.pop_front() else { break };
            admitted_tokens += job.prompt_tokens;
            running.push(Running { job, produced: 0 });
        }
        let length = config.iteration_ms(running.len(), admitted_tokens);
        let deadline = after_pause(
            iteration_start + Duration::from_secs_f64(length / 1e3),
            pause,
        );
        sleep_until(deadline).await;
        for sequence in &mut running {
            sequence.produced += 1;
            let _ = sequence.job.tokens.send(deadline);
        }
        running.retain(|s| s.produced < s.job.output_tokens && !s.job.tokens.is_closed());
        iteration_start = deadline;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn analytic_rates() {
        let config = EngineConfig {
            step_base_ms: 2.0,
            step_per_seq_ms: 0.5,
            prefill_per_token_ms: 0.01,
            max_batch: 8,
        };
        assert_eq!(config.iteration_ms(4, 100), 2.0 + 2.0 + 1.0);
        // C = 4, i = 64, o = 32: τ = 2 + 2 + 0.01·4·2 = 4.08 ms.
        assert!((config.steady_iteration_ms(4, 64, 32) - 4.08).abs() < 1e-12);
        assert!((config.tokens_per_s(4, 64, 32) - 4.0 / 0.00408).abs() < 1e-6);
    }

    #[test]
    fn one_sequence_runs_one_token_per_iteration() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let times = runtime.block_on(async {
            let (jobs, rx) = mpsc::unbounded_channel();
            let engine = tokio::spawn(run(
                EngineConfig {
                    step_base_ms: 4.0,
                    step_per_seq_ms: 1.0,
                    prefill_per_token_ms: 0.1,
                    max_batch: 4,
                },
                rx,
                None,
            ));
            let (tx, mut tokens) = mpsc::unbounded_channel();
            let start = Instant::now();
            jobs.send(EngineJob {
                prompt_tokens: 10,
                output_tokens: 3,
                tokens: tx,
            })
            .unwrap();
            let mut times = Vec::new();
            while let Some(t) = tokens.recv().await {
                times.push(t.duration_since(start).as_secs_f64() * 1e3);
            }
            drop(jobs);
            engine.await.unwrap();
            times
        });
        // Prefill iteration 4 + 1 + 1 = 6 ms, then 5 ms per token.
        let want = [6.0, 11.0, 16.0];
        assert_eq!(times.len(), 3);
        for (got, want) in times.iter().zip(want) {
            assert!((got - want).abs() < 1.0, "{times:?}");
        }
    }
}
