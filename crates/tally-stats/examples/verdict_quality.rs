//! Verdict quality: simulates candidates through the real `bootstrap` rule and reports how often
//! it keeps null changes (false keeps) and real +10% changes (power), next to the percentile
//! bootstrap alone; then times the bootstrap on 1,000 units × 10,000 resamples.
//!
//! Each simulated candidate is a paired evaluation of a throughput metric (higher is better,
//! bar at 100): `pairs` candidate values next to `pairs` bar values, each multiplied by
//! independent noise of the chosen shape and relative size. A null change has the candidate at
//! 100, a real one at 110. The rule runs with its defaults (0.95, 10,000 resamples, seed 0),
//! exactly as a campaign would. Everything is seeded, so a rerun prints the same table.
//!
//! Run with `bench/verdicts/run.sh` (release build). Options: `--trials N` (per setting and
//! change, default 20000), `--no-timing`. Output is Markdown on stdout.

#![allow(clippy::print_stdout)]

use std::time::Instant;

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;
use tally_model::{Direction, Verdict};
use tally_stats::{
    Bootstrap, BootstrapRule, Criterion, Evidence, Execution, Samples, Side, VerdictCase,
};

/// Shape of the per-sample noise (all scaled to the chosen standard deviation).
#[derive(Clone, Copy)]
enum Noise {
    /// Gaussian.
    Normal,
    /// Student's t with 3 degrees of freedom: symmetric, heavy tails.
    StudentT3,
    /// Log-normal: skewed, multiplicative.
    LogNormal,
}

impl Noise {
    fn name(self) -> &'static str {
        match self {
            Self::Normal => "normal",
            Self::StudentT3 => "student-t 3df",
            Self::LogNormal => "lognormal",
        }
    }

    /// A multiplicative factor with mean 1 and standard deviation `sigma`.
    fn factor(self, rng: &mut Xoshiro256PlusPlus, sigma: f64) -> f64 {
        match self {
            Self::Normal => 1.0 + sigma * standard_normal(rng),
            Self::StudentT3 => {
                let z = standard_normal(rng);
                let chi2: f64 = (0..3).map(|_| standard_normal(rng).powi(2)).sum();
                // Var(t₃) = 3, so divide by √3 for unit variance.
                1.0 + sigma * z / (chi2 / 3.0).sqrt() / 3f64.sqrt()
            }
            Self::LogNormal => {
                let s = (1.0 + sigma * sigma).ln().sqrt();
                (s * standard_normal(rng) - s * s / 2.0).exp()
            }
        }
    }
}

/// A uniform in (0, 1].
fn unit_open(rng: &mut Xoshiro256PlusPlus) -> f64 {
    ((rng.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
}

/// Box–Muller (one of the pair).
fn standard_normal(rng: &mut Xoshiro256PlusPlus) -> f64 {
    let (u, v) = (unit_open(rng), unit_open(rng));
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

/// One simulated setting.
struct Setting {
    noise: Noise,
    sigma: f64,
    pairs: usize,
}

/// Outcome counts of one setting and change.
#[derive(Default, Clone, Copy)]
struct Kept {
    rule: u32,
    bootstrap_alone: u32,
    student_t_alone: u32,
}

impl std::ops::Add for Kept {
    type Output = Self;
    fn add(self, other: Self) -> Self {
        Self {
            rule: self.rule + other.rule,
            bootstrap_alone: self.bootstrap_alone + other.bootstrap_alone,
            student_t_alone: self.student_t_alone + other.student_t_alone,
        }
    }
}

/// The case of one simulated candidate: `pairs` paired throughput samples.
fn simulated_case(setting: &Setting, effect: f64, rng: &mut Xoshiro256PlusPlus) -> VerdictCase {
    let mut candidate = Side {
        id: 2,
        ..Side::default()
    };
    let mut bar = Side {
        id: 1,
        ..Side::default()
    };
    // One candidate value and one bar value per pair, each with its own noise.
    let (mut c, mut b) = (Vec::new(), Vec::new());
    for _ in 0..setting.pairs {
        c.push(100.0 * (1.0 + effect) * setting.noise.factor(rng, setting.sigma));
        b.push(100.0 * setting.noise.factor(rng, setting.sigma));
    }
    for (side, values) in [(&mut candidate, c), (&mut bar, b)] {
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        side.means.insert("tok_s".into(), mean);
        side.samples.insert("tok_s".into(), values);
    }
    VerdictCase {
        primary: Criterion {
            name: "tok_s".into(),
            direction: Direction::Higher,
            deterministic: false,
        },
        guardrails: Vec::new(),
        candidate,
        bar,
    }
}

/// Runs `trials` candidates of one setting and change through the rule.
fn simulate(index: u64, setting: &Setting, effect: f64, trials: u32) -> Kept {
    let rule = BootstrapRule::default();
    (0..trials)
        .into_par_iter()
        .map(|trial| {
            let seed = (index << 32) | u64::from(trial);
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
            let case = simulated_case(setting, effect, &mut rng);
            let assessment = rule.assess(&case);
            let mut kept = Kept::default();
            if assessment.judgement.outcome == Verdict::Keep {
                kept.rule = 1;
            }
            if let Some(Evidence::Pairs {
                bootstrap,
                student_t,
                ..
            }) = assessment.primary.map(|p| p.evidence)
            {
                kept.bootstrap_alone = u32::from(bootstrap.is_some_and(|b| b > 0.0));
                kept.student_t_alone = u32::from(student_t.is_some_and(|t| t > 0.0));
            }
            kept
        })
        .reduce(Kept::default, |a, b| a + b)
}

fn percent(count: u32, trials: u32) -> String {
    format!("{:.1}%", 100.0 * f64::from(count) / f64::from(trials))
}

fn quality_table(trials: u32) {
    println!(
        "## Verdict quality ({trials} candidates per cell, rule defaults: 0.95, 10000, seed 0)\n"
    );
    println!(
        "| noise | size | pairs | null kept: rule | null kept: bootstrap alone | null kept: Student-t alone \
         | +10% kept: rule | +10% kept: bootstrap alone |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let mut index = 0;
    for noise in [Noise::Normal, Noise::StudentT3, Noise::LogNormal] {
        for sigma in [0.01, 0.05] {
            for pairs in [3, 5] {
                let setting = Setting {
                    noise,
                    sigma,
                    pairs,
                };
                index += 1;
                let null = simulate(2 * index, &setting, 0.0, trials);
                let real = simulate(2 * index + 1, &setting, 0.10, trials);
                println!(
                    "| {} | {:.0}% | {} | {} | {} | {} | {} | {} |",
                    noise.name(),
                    sigma * 100.0,
                    pairs,
                    percent(null.rule, trials),
                    percent(null.bootstrap_alone, trials),
                    percent(null.student_t_alone, trials),
                    percent(real.rule, trials),
                    percent(real.bootstrap_alone, trials),
                );
            }
        }
    }
    println!();
}

/// Median wall time of `runs` calls, in milliseconds.
fn median_ms(runs: usize, mut f: impl FnMut() -> f64) -> (f64, f64) {
    let mut times = Vec::with_capacity(runs);
    let mut last = 0.0;
    for _ in 0..runs {
        let start = Instant::now();
        last = std::hint::black_box(f());
        times.push(start.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    (times[runs / 2], last)
}

fn timing_table() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(99);
    let d: Vec<f64> = (0..1_000).map(|_| standard_normal(&mut rng)).collect();
    let d = Samples::new(d).unwrap_or_else(|e| panic!("{e}"));
    let bootstrap = Bootstrap::default();
    println!("## Bootstrap cost: 1000 units × 10000 resamples\n");
    println!(
        "threads available: {}; median of 21 runs\n",
        rayon::current_num_threads()
    );
    println!("| execution | median | bound |");
    println!("|---|---|---|");
    for (name, execution) in [
        ("serial (one thread)", Execution::Serial),
        ("parallel (rayon pool)", Execution::Parallel),
    ] {
        let (ms, bound) = median_ms(21, || bootstrap.lower_bound_with(&d, execution));
        println!("| {name} | {ms:.1} ms | {bound:.6} |");
    }
    println!();
}

fn main() {
    let mut trials = 20_000;
    let mut timing = true;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--trials" => {
                trials = args
                    .next()
                    .and_then(|n| n.parse().ok())
                    .unwrap_or_else(|| panic!("--trials needs a whole number, such as 4000"));
            }
            "--no-timing" => timing = false,
            other => panic!("unknown argument {other:?}: expected --trials N or --no-timing"),
        }
    }
    if timing {
        timing_table();
    }
    quality_table(trials);
}
