//! The deterministic workload: request `index` of a phase gets the same prompt and lengths on
//! every run with the same seed, whatever the timing or concurrency. Every draw comes from a
//! SplitMix64 stream seeded by (seed, phase, purpose, index); warm-up requests use their own
//! namespace so they never share a prefix with measured ones.
//!
//! Prompts are words: a 12-hex nonce first (`unique`, so no two requests share a cacheable
//! prefix), or a shared prefix per group (`shared-prefix:RATIO,GROUPS`), or the same text for
//! everyone (`repeat`), then filler words from a fixed list. The number of words is the target
//! token count divided by the tokens-per-word ratio measured in the preflight request.

use crate::dist::LengthDist;
use crate::error::SpecError;
use crate::record::Phase;
use crate::rng::{SplitMix64, hash_bytes, mix64};

/// How prompts relate to each other.
#[derive(Clone, Debug, PartialEq)]
pub enum PromptMode {
    /// A nonce first: no shared prefixes.
    Unique,
    /// Requests fall into `groups`; the first `ratio` of each prompt is the group's.
    SharedPrefix {
        /// Share of the prompt that is the group's prefix, 0..=1.
        ratio: f64,
        /// Number of groups.
        groups: u64,
    },
    /// The same text for every request of a length.
    Repeat,
}

impl PromptMode {
    /// Parses `unique`, `shared-prefix:RATIO,GROUPS` or `repeat`.
    pub fn parse(spec: &str) -> Result<Self, SpecError> {
        match spec {
            "unique" => Ok(Self::Unique),
            "repeat" => Ok(Self::Repeat),
            _ => {
                let body = spec.strip_prefix("shared-prefix:").ok_or_else(|| {
                    SpecError::new(
                        spec,
                        "expected unique, repeat or shared-prefix:RATIO,GROUPS",
                    )
                })?;
                let (ratio, groups) = body
                    .split_once(',')
                    .ok_or_else(|| SpecError::new(spec, "expected shared-prefix:RATIO,GROUPS"))?;
                let ratio: f64 = ratio
                    .trim()
                    .parse()
                    .map_err(|_| SpecError::new(spec, "bad RATIO"))?;
                let groups: u64 = groups
                    .trim()
                    .parse()
                    .map_err(|_| SpecError::new(spec, "bad GROUPS"))?;
                if !(0.0..=1.0).contains(&ratio) || groups == 0 {
                    return Err(SpecError::new(spec, "RATIO in 0..1 and GROUPS >= 1"));
                }
                Ok(Self::SharedPrefix { ratio, groups })
            }
        }
    }
}

/// What decides the traffic (everything but the endpoint and timeouts).
#[derive(Clone, Debug)]
pub struct WorkloadSpec {
    /// Prompt length in tokens.
    pub input_len: LengthDist,
    /// Output length (`max_tokens`).
    pub output_len: LengthDist,
    /// Prompt relation.
    pub prompt: PromptMode,
    /// The seed.
    pub seed: u64,
}

/// One request's planned content.
#[derive(Clone, Debug, PartialEq)]
pub struct PlannedRequest {
    /// Prompt text.
    pub prompt: String,
    /// Planned prompt tokens.
    pub input_tokens: u64,
    /// `max_tokens`.
    pub output_tokens: u64,
}

const FILLER: [&str; 32] = [
    "time", "river", "stone", "light", "paper", "garden", "signal", "window", "copper", "forest",
    "engine", "market", "silver", "harbor", "letter", "bridge", "candle", "meadow", "thread",
    "planet", "winter", "mirror", "orbit", "canvas", "pocket", "lantern", "island", "marble",
    "violet", "falcon", "anchor", "rhythm",
];

fn phase_tag(phase: Phase) -> &'static str {
    match phase {
        Phase::Warmup => "warmup",
        Phase::Measured | Phase::Cooldown => "measured",
    }
}

impl WorkloadSpec {
    fn stream(&self, phase: Phase, purpose: &str, index: u64) -> SplitMix64 {
        let id = hash_bytes(format!("{}/{purpose}", phase_tag(phase)).as_bytes());
        SplitMix64::new(mix64(self.seed ^ id ^ mix64(index)))
    }

    /// The request `index` of `phase`, with prompts scaled by `tokens_per_word`.
    pub fn request(&self, phase: Phase, index: u64, tokens_per_word: f64) -> PlannedRequest {
        let input_tokens = self
            .input_len
            .sample(&mut self.stream(phase, "input_len", index), index);
        let output_tokens = self
            .output_len
            .sample(&mut self.stream(phase, "output_len", index), index);
        let words = ((input_tokens as f64 / tokens_per_word.max(1e-3)).round() as u64).max(1);
        let mut prompt = String::with_capacity(words as usize * 8);
        let push_words = |prompt: &mut String, rng: &mut SplitMix64, count: u64| {
            for _ in 0..count {
                if !prompt.is_empty() {
                    prompt.push(' ');
                }
                prompt.push_str(FILLER[(rng.next_u64() % FILLER.len() as u64) as usize]);
            }
        };
        let mut nonce_rng = self.stream(phase, "nonce", index);
        let nonce = format!("{:012x}", nonce_rng.next_u64() >> 16);
        match &self.prompt {
            PromptMode::Unique => {
                prompt.push_str(&nonce);
                push_words(&mut prompt, &mut nonce_rng, words - 1);
            }
            PromptMode::SharedPrefix { ratio, groups } => {
                let group = self.stream(phase, "prefix_group", index).next_u64() % groups;
                let prefix = ((words as f64 * ratio).round() as u64).min(words);
                let mut group_rng = self.stream(phase, "prefix", group);
                push_words(&mut prompt, &mut group_rng, prefix);
                if prefix < words {
                    prompt.push_str(if prompt.is_empty() { "" } else { " " });
                    prompt.push_str(&nonce);
                    push_words(&mut prompt, &mut nonce_rng, words - prefix - 1);
                }
            }
            PromptMode::Repeat => {
                let mut rng = SplitMix64::new(self.seed);
                push_words(&mut prompt, &mut rng, words);
            }
        }
        PlannedRequest {
            prompt,
            input_tokens,
            output_tokens,
        }
    }
}

/// A short stable digest of a text (16 hex digits).
pub fn digest(text: &str) -> String {
    format!("{:016x}", hash_bytes(text.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(prompt: PromptMode) -> WorkloadSpec {
        WorkloadSpec {
            input_len: LengthDist::Uniform(8, 16),
            output_len: LengthDist::Fixed(4),
            prompt,
            seed: 9,
        }
    }

    #[test]
    fn same_index_same_request_and_word_count_matches() {
        let w = spec(PromptMode::Unique);
        let a = w.request(Phase::Measured, 3, 1.0);
        assert_eq!(a, w.request(Phase::Measured, 3, 1.0));
        assert_eq!(a, w.request(Phase::Cooldown, 3, 1.0));
        assert_ne!(a.prompt, w.request(Phase::Warmup, 3, 1.0).prompt);
        assert_eq!(a.prompt.split_whitespace().count() as u64, a.input_tokens);
        let halved = w
            .request(Phase::Measured, 3, 2.0)
            .prompt
            .split_whitespace()
            .count() as u64;
        assert_eq!(
            halved,
            ((a.input_tokens as f64 / 2.0).round() as u64).max(1)
        );
    }

    #[test]
    fn prompt_modes() {
        let unique = spec(PromptMode::Unique);
        let firsts: std::collections::HashSet<String> = (0..50)
            .map(|i| {
                unique
                    .request(Phase::Measured, i, 1.0)
                    .prompt
                    .split(' ')
                    .next()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        assert_eq!(firsts.len(), 50);
        let shared = spec(PromptMode::parse("shared-prefix:0.5,2").unwrap());
        let prefixes: std::collections::HashSet<String> = (0..50)
            .map(|i| {
                shared
                    .request(Phase::Measured, i, 1.0)
                    .prompt
                    .split(' ')
                    .take(4)
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        assert!(prefixes.len() <= 2, "{prefixes:?}");
        let repeat = WorkloadSpec {
            input_len: LengthDist::Fixed(10),
            ..spec(PromptMode::Repeat)
        };
        assert_eq!(
            repeat.request(Phase::Measured, 1, 1.0),
            repeat.request(Phase::Measured, 2, 1.0)
        );
        assert!(PromptMode::parse("shared-prefix:2,1").is_err());
        assert!(PromptMode::parse("other").is_err());
    }
}
