//! Verdict quality: simulates candidates through the real `bootstrap` rule, as a fixed design
//! (every pair in one look, the rule before `max_extra_pairs`) and as the sequential design a
//! campaign runs (far samples re-measured, a second look when the first is inconclusive), and
//! reports how often each keeps null changes (false keeps), +5% and +10% changes (power), and
//! how many samples each measured; then times the bootstrap on 1,000 units × 10,000 resamples.
//!
//! Each simulated candidate is a paired evaluation of a throughput metric (higher is better,
//! bar at 100, candidate at 100, 105 or 110) on a simulated machine: samples in the engine's
//! order (pair i is candidate then bar for even i, bar then candidate for odd i), each value
//! multiplied by the machine's noise at that moment. Clean machines have independent noise of
//! one shape; rough ones drift, throttle, or have heavy-tailed slowdowns (see [`Machine`]).
//! The sequential design asks the rule, measures the pairs it asks for on the same machine, and
//! asks again, exactly as the engine does. The rule runs with its defaults (0.95, 10,000
//! resamples, seed 0, `max_extra_pairs` 3). Everything is seeded, so a rerun prints the same
//! tables.
//!
//! Run with `bench/verdicts/run.sh` (release build). Options: `--trials N` (per cell, default
//! 20000), `--only clean|rough` (one group of machines), `--no-timing`. Output is Markdown on
//! stdout.

#![allow(clippy::print_stdout)]

use std::f64::consts::TAU;
use std::time::Instant;

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;
use tally_model::{Direction, Verdict};
use tally_stats::{
    Bootstrap, BootstrapRule, Criterion, Evidence, Execution, Samples, Sampling, Side, Step,
    VerdictCase,
};

/// A simulated machine: what multiplies a sample's throughput.
#[derive(Clone, Copy)]
enum Machine {
    /// Independent Gaussian noise of this relative size.
    Normal(f64),
    /// Independent Student-t noise (3 degrees of freedom: symmetric, heavy tails), scaled to
    /// this relative standard deviation.
    StudentT3(f64),
    /// Independent log-normal noise (skewed, multiplicative) of this relative size.
    LogNormal(f64),
    /// Log-normal noise of 1.5% on a slow drift: `1 + 0.03 · sin(2π t / 40 + φ)` for the t-th
    /// sample, φ uniform per candidate (±3% over about 40 samples).
    Drift,
    /// Log-normal noise of 1.5%; one sample in 15 takes 25% longer (throughput / 1.25).
    Throttles,
    /// Drift, noise and throttles together: the rough machine of `docs/verdicts.md`.
    Rough,
    /// Log-normal noise of 1.5%; each sample takes `1 + X` times longer, `X` with a Pareto tail
    /// of index 1.2: `X = 0.005 · (U^(−1/1.2) − 1)` (median 0.4%, one sample in 18 slowed more
    /// than 5%, one in 110 more than 25%; no finite variance).
    HeavyTail,
}

impl Machine {
    fn name(self) -> String {
        match self {
            Self::Normal(s) => format!("normal {:.0}%", s * 100.0),
            Self::StudentT3(s) => format!("student-t 3df {:.0}%", s * 100.0),
            Self::LogNormal(s) => format!("lognormal {:.0}%", s * 100.0),
            Self::Drift => "drift ±3% + lognormal 1.5%".to_owned(),
            Self::Throttles => "throttles 1 in 15 + lognormal 1.5%".to_owned(),
            Self::Rough => "drift + throttles + lognormal 1.5%".to_owned(),
            Self::HeavyTail => "Pareto slowdowns + lognormal 1.5%".to_owned(),
        }
    }

    fn is_rough(self) -> bool {
        matches!(
            self,
            Self::Drift | Self::Throttles | Self::Rough | Self::HeavyTail
        )
    }
}

/// One simulated candidate's run on a machine: a generator, the drift's phase, and the next
/// sample's time index.
struct Run {
    machine: Machine,
    rng: Xoshiro256PlusPlus,
    phase: f64,
    t: u32,
}

impl Run {
    fn new(machine: Machine, seed: u64) -> Self {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let phase = TAU * unit_open(&mut rng);
        Self {
            machine,
            rng,
            phase,
            t: 0,
        }
    }

    /// The factor of the next sample.
    fn factor(&mut self) -> f64 {
        let t = f64::from(self.t);
        self.t += 1;
        let rng = &mut self.rng;
        let drift = 1.0 + 0.03 * (TAU * t / 40.0 + self.phase).sin();
        match self.machine {
            Machine::Normal(s) => 1.0 + s * standard_normal(rng),
            Machine::StudentT3(s) => {
                let z = standard_normal(rng);
                let chi2: f64 = (0..3).map(|_| standard_normal(rng).powi(2)).sum();
                // Var(t₃) = 3, so divide by √3 for unit variance.
                1.0 + s * z / (chi2 / 3.0).sqrt() / 3f64.sqrt()
            }
            Machine::LogNormal(s) => log_normal(rng, s),
            Machine::Drift => drift * log_normal(rng, 0.015),
            Machine::Throttles => log_normal(rng, 0.015) / throttle(rng),
            Machine::Rough => drift * log_normal(rng, 0.015) / throttle(rng),
            Machine::HeavyTail => {
                let noise = log_normal(rng, 0.015);
                noise / (1.0 + 0.005 * (unit_open(rng).powf(-1.0 / 1.2) - 1.0))
            }
        }
    }

    /// Appends `pairs` pairs to `candidate` and `bar`, in the engine's order.
    fn measure(&mut self, pairs: usize, effect: f64, candidate: &mut Vec<f64>, bar: &mut Vec<f64>) {
        for _ in 0..pairs {
            let candidate_first = candidate.len().is_multiple_of(2);
            let (first, second) = (self.factor(), self.factor());
            let (c, b) = if candidate_first {
                (first, second)
            } else {
                (second, first)
            };
            candidate.push(100.0 * (1.0 + effect) * c);
            bar.push(100.0 * b);
        }
    }
}

/// 1.25 for a throttled sample (one in 15), 1 otherwise.
fn throttle(rng: &mut Xoshiro256PlusPlus) -> f64 {
    if unit_open(rng) < 1.0 / 15.0 {
        1.25
    } else {
        1.0
    }
}

/// A log-normal factor with mean 1 and standard deviation `sigma`.
fn log_normal(rng: &mut Xoshiro256PlusPlus, sigma: f64) -> f64 {
    let s = (1.0 + sigma * sigma).ln().sqrt();
    (s * standard_normal(rng) - s * s / 2.0).exp()
}

/// A uniform in (0, 1].
fn unit_open(rng: &mut Xoshiro256PlusPlus) -> f64 {
    ((rng.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
}

/// Box–Muller (one of the pair).
fn standard_normal(rng: &mut Xoshiro256PlusPlus) -> f64 {
    let (u, v) = (unit_open(rng), unit_open(rng));
    (-2.0 * u.ln()).sqrt() * (TAU * v).cos()
}

/// The case of `candidate` and `bar` paired throughput samples.
fn case_of(candidate: &[f64], bar: &[f64]) -> VerdictCase {
    let side = |id, values: &[f64]| {
        let mut side = Side {
            id,
            ..Side::default()
        };
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        side.means.insert("tok_s".into(), mean);
        side.samples.insert("tok_s".into(), values.to_vec());
        side
    };
    VerdictCase {
        primary: Criterion {
            name: "tok_s".into(),
            direction: Direction::Higher,
            deterministic: false,
        },
        guardrails: Vec::new(),
        candidate: side(2, candidate),
        bar: side(1, bar),
    }
}

/// Counts over the candidates of one cell.
#[derive(Default, Clone, Copy)]
struct Tally {
    /// Kept by the fixed design.
    fixed: u32,
    /// Whose fixed bootstrap bound alone was positive.
    bootstrap_alone: u32,
    /// Whose fixed Student-t bound alone was positive.
    student_t_alone: u32,
    /// Kept by the sequential design.
    sequential: u32,
    /// Samples the sequential design measured.
    samples: u64,
    /// Candidates with a pair set aside.
    set_aside: u32,
    /// Candidates that had a second look.
    second_look: u32,
}

impl std::ops::Add for Tally {
    type Output = Self;
    fn add(self, o: Self) -> Self {
        Self {
            fixed: self.fixed + o.fixed,
            bootstrap_alone: self.bootstrap_alone + o.bootstrap_alone,
            student_t_alone: self.student_t_alone + o.student_t_alone,
            sequential: self.sequential + o.sequential,
            samples: self.samples + o.samples,
            set_aside: self.set_aside + o.set_aside,
            second_look: self.second_look + o.second_look,
        }
    }
}

/// One candidate: the fixed design on its first `pairs` pairs, then the sequential design on
/// the same pairs and the ones it asks for.
fn one(machine: Machine, pairs: usize, effect: f64, seed: u64) -> Tally {
    let rule = BootstrapRule::default();
    let mut run = Run::new(machine, seed);
    let (mut candidate, mut bar) = (Vec::new(), Vec::new());
    run.measure(pairs, effect, &mut candidate, &mut bar);
    let mut tally = Tally::default();

    let fixed = rule.assess(&case_of(&candidate, &bar));
    tally.fixed = u32::from(fixed.judgement.outcome == Verdict::Keep);
    if let Some(Evidence::Pairs {
        bootstrap,
        student_t,
        ..
    }) = fixed.primary.map(|p| p.evidence)
    {
        tally.bootstrap_alone = u32::from(bootstrap.is_some_and(|b| b > 0.0));
        tally.student_t_alone = u32::from(student_t.is_some_and(|t| t > 0.0));
    }

    let sampling = Sampling {
        repeats: pairs as u32,
        can_measure: true,
    };
    loop {
        match rule.assess_sampled(&case_of(&candidate, &bar), &sampling) {
            Step::More(more) => {
                if more.reason.starts_with("add") {
                    tally.second_look = 1;
                }
                run.measure(more.pairs as usize, effect, &mut candidate, &mut bar);
            }
            Step::Judged(assessment) => {
                tally.sequential = u32::from(assessment.judgement.outcome == Verdict::Keep);
                tally.set_aside = u32::from(!assessment.set_aside.is_empty());
                break;
            }
        }
    }
    tally.samples = 2 * candidate.len() as u64;
    tally
}

/// Runs `trials` candidates of one cell.
fn simulate(cell: u64, machine: Machine, pairs: usize, effect: f64, trials: u32) -> Tally {
    (0..trials)
        .into_par_iter()
        .map(|trial| one(machine, pairs, effect, (cell << 32) | u64::from(trial)))
        .reduce(Tally::default, |a, b| a + b)
}

fn percent(count: u32, trials: u32) -> String {
    format!("{:.1}%", 100.0 * f64::from(count) / f64::from(trials))
}

fn mean_samples(tally: &Tally, trials: u32) -> String {
    format!("{:.2}", tally.samples as f64 / f64::from(trials))
}

/// One row's cells: null, +5%, +10%.
struct Row {
    machine: Machine,
    pairs: usize,
    cells: [Tally; 3],
}

fn quality_tables(trials: u32, only: Option<&str>) {
    let mut machines = Vec::new();
    if only != Some("rough") {
        for sigma in [0.01, 0.05] {
            machines.push(Machine::Normal(sigma));
            machines.push(Machine::StudentT3(sigma));
            machines.push(Machine::LogNormal(sigma));
        }
    }
    if only != Some("clean") {
        machines.extend([
            Machine::Drift,
            Machine::Throttles,
            Machine::Rough,
            Machine::HeavyTail,
        ]);
    }
    let mut rows = Vec::new();
    for machine in machines {
        for pairs in [3, 5] {
            let mut cells = [Tally::default(); 3];
            for (e, effect) in [0.0, 0.05, 0.10].into_iter().enumerate() {
                // Cell seeds depend on the machine's name, so a row's numbers do not change
                // when rows are added or left out.
                let cell = name_seed(&machine.name()) ^ ((pairs as u64) << 8) ^ (e as u64);
                cells[e] = simulate(cell, machine, pairs, effect, trials);
            }
            rows.push(Row {
                machine,
                pairs,
                cells,
            });
        }
    }

    println!(
        "## Verdict quality ({trials} candidates per cell; rule defaults: 0.95, 10000 resamples, \
         seed 0, max_extra_pairs 3)\n"
    );
    println!(
        "Fixed: every pair in one look (the rule with `max_extra_pairs = 0`). Sequential: the \
         rule as a campaign runs it. Samples: mean per candidate (null / +5% / +10%).\n"
    );
    println!(
        "| machine | pairs | null kept: fixed | null kept: sequential | +5% kept: fixed | +5% \
         kept: sequential | +10% kept: fixed | +10% kept: sequential | samples: fixed | samples: \
         sequential |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for row in &rows {
        let [null, five, ten] = &row.cells;
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} / {} / {} |",
            row.machine.name(),
            row.pairs,
            percent(null.fixed, trials),
            percent(null.sequential, trials),
            percent(five.fixed, trials),
            percent(five.sequential, trials),
            percent(ten.fixed, trials),
            percent(ten.sequential, trials),
            2 * row.pairs,
            mean_samples(null, trials),
            mean_samples(five, trials),
            mean_samples(ten, trials),
        );
    }
    println!();

    println!("## What the sequential design did (share of candidates: null / +10%)\n");
    println!("| machine | pairs | a pair set aside | a second look |");
    println!("|---|---|---|---|");
    for row in &rows {
        let [null, _, ten] = &row.cells;
        println!(
            "| {} | {} | {} / {} | {} / {} |",
            row.machine.name(),
            row.pairs,
            percent(null.set_aside, trials),
            percent(ten.set_aside, trials),
            percent(null.second_look, trials),
            percent(ten.second_look, trials),
        );
    }
    println!();

    println!("## The fixed design's two bounds on their own (null kept)\n");
    println!("| machine | pairs | rule | bootstrap alone | Student-t alone |");
    println!("|---|---|---|---|---|");
    for row in rows.iter().filter(|r| !r.machine.is_rough()) {
        let null = &row.cells[0];
        println!(
            "| {} | {} | {} | {} | {} |",
            row.machine.name(),
            row.pairs,
            percent(null.fixed, trials),
            percent(null.bootstrap_alone, trials),
            percent(null.student_t_alone, trials),
        );
    }
    println!();
}

/// A seed from a name (FNV-1a), stable across releases.
fn name_seed(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    }) << 16
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
    let mut only = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--trials" => {
                trials = args
                    .next()
                    .and_then(|n| n.parse().ok())
                    .unwrap_or_else(|| panic!("--trials needs a whole number, such as 4000"));
            }
            "--only" => {
                only = args.next().filter(|g| g == "clean" || g == "rough");
                assert!(only.is_some(), "--only needs clean or rough");
            }
            "--no-timing" => timing = false,
            other => panic!(
                "unknown argument {other:?}: expected --trials N, --only clean|rough or --no-timing"
            ),
        }
    }
    if timing {
        timing_table();
    }
    let start = Instant::now();
    quality_tables(trials, only.as_deref());
    println!(
        "simulated in {:.0} s on {} threads",
        start.elapsed().as_secs_f64(),
        rayon::current_num_threads()
    );
}
