//! From records to figures: the cohort and window rules, rates, failure-penalised latency
//! quantiles, goodput against SLOs, the error fraction, and the two trust checks behind exit 4
//! (the client kept the schedule; the error fraction is within its limit). Pure: the tests feed
//! it hand-made records.

use std::collections::BTreeMap;

use crate::record::{Phase, RequestRecord, Status, TokenSource};
use crate::stats::{mean, penalized_quantile, quantile_sorted, sorted, sufficient};

/// How rates are counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RateRule {
    /// Cohort successes and their tokens ÷ |W| (open loops; closed loops in count mode).
    Cohort,
    /// Closed loop, duration mode: successes that *ended* in W and tokens of chunks that
    /// *arrived* in W, from any request (warm-up and cool-down included).
    EventsInWindow,
}

/// Latency limits for goodput (milliseconds, each `≤`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Slo {
    /// TTFT limit.
    pub ttft_ms: Option<f64>,
    /// TPOT limit (passes when a request produced at most one token).
    pub tpot_ms: Option<f64>,
    /// E2E limit.
    pub e2e_ms: Option<f64>,
}

impl Slo {
    /// Parses `ttft:MS,tpot:MS,e2e:MS` (any subset).
    pub fn parse(spec: &str) -> Result<Self, crate::SpecError> {
        let mut slo = Self::default();
        for part in spec.split(',').filter(|p| !p.trim().is_empty()) {
            let (key, value) = part
                .split_once(':')
                .ok_or_else(|| crate::SpecError::new(spec, "expected ttft:MS,tpot:MS,e2e:MS"))?;
            let value: f64 = value
                .trim()
                .parse()
                .ok()
                .filter(|v: &f64| v.is_finite() && *v >= 0.0)
                .ok_or_else(|| crate::SpecError::new(spec, format!("bad limit {value:?}")))?;
            match key.trim() {
                "ttft" => slo.ttft_ms = Some(value),
                "tpot" => slo.tpot_ms = Some(value),
                "e2e" | "e2el" => slo.e2e_ms = Some(value),
                other => {
                    return Err(crate::SpecError::new(
                        spec,
                        format!("unknown SLO {other:?}"),
                    ));
                }
            }
        }
        Ok(slo)
    }

    /// Whether a request met every limit (failures never do).
    pub fn met(&self, record: &RequestRecord, allow_chunk_counts: bool) -> bool {
        let within = |limit: Option<f64>, value: Option<f64>| match (limit, value) {
            (None, _) => true,
            (Some(limit), Some(value)) => value <= limit,
            (Some(_), None) => false,
        };
        let tpot_ok = match self.tpot_ms {
            None => true,
            Some(_) if record.output_tokens.unwrap_or(0) <= 1 => true,
            Some(limit) => record
                .tpot_ms(allow_chunk_counts)
                .is_some_and(|v| v <= limit),
        };
        record.ok()
            && within(self.ttft_ms, record.ttft_ms())
            && within(self.e2e_ms, record.e2e_ms())
            && tpot_ok
    }
}

/// What the summary is computed over.
#[derive(Clone, Debug)]
pub struct SummaryInput<'a> {
    /// All records of the run (every phase).
    pub records: &'a [RequestRecord],
    /// The measurement window W on the run clock, ns.
    pub window_ns: (u64, u64),
    /// How rates count.
    pub rule: RateRule,
    /// Goodput limits.
    pub slo: Option<Slo>,
    /// Accept chunk counts as token counts.
    pub allow_chunk_counts: bool,
    /// Open loop: the mean scheduled gap in ms (for the saturation check); `None` closed.
    pub open_loop_mean_gap_ms: Option<f64>,
    /// The highest acceptable error fraction.
    pub max_error_fraction: f64,
}

/// One quantity's distribution as reported.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Distribution {
    /// Values (successful requests, or gaps).
    pub n: usize,
    /// Failure-penalised quantiles p50, p90, p95, p99 (printed).
    pub penalized: [Option<f64>; 4],
    /// Quantiles over the values alone (JSONL).
    pub successful: [Option<f64>; 4],
    /// Mean of the values.
    pub mean: Option<f64>,
    /// Sufficiency of each level for n.
    pub sufficient: [bool; 4],
}

/// The levels reported.
pub const LEVELS: [(&str, f64); 4] = [("p50", 0.5), ("p90", 0.9), ("p95", 0.95), ("p99", 0.99)];

impl Distribution {
    fn of(values: Vec<f64>, failed: usize) -> Self {
        let values = sorted(values);
        let n = values.len();
        Self {
            n,
            penalized: LEVELS.map(|(_, p)| penalized_quantile(&values, failed, p)),
            successful: LEVELS.map(|(_, p)| quantile_sorted(&values, p)),
            mean: mean(&values),
            sufficient: LEVELS.map(|(_, p)| sufficient(n, p)),
        }
    }
}

/// Why a run is not trustworthy (exit 4).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub enum Untrustworthy {
    /// The client could not keep the open-loop schedule.
    ClientSaturated {
        /// p99 dispatch lag of requests that did not wait for a slot, ms.
        lag_p99_ms: f64,
        /// The allowed lag, ms.
        limit_ms: f64,
    },
    /// Too many requests failed.
    TooManyErrors {
        /// The error fraction.
        fraction: f64,
        /// `--max-error-fraction`.
        limit: f64,
    },
}

impl std::fmt::Display for Untrustworthy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::ClientSaturated {
                lag_p99_ms,
                limit_ms,
            } => write!(
                f,
                "client saturated: p99 dispatch lag {lag_p99_ms:.3} ms > {limit_ms:.3} ms; the schedule was not kept"
            ),
            Self::TooManyErrors { fraction, limit } => {
                write!(
                    f,
                    "error fraction {fraction:.4} > --max-error-fraction {limit}"
                )
            }
        }
    }
}

/// Every figure of a run.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Summary {
    /// METRIC lines in contract order: name, value (`inf` possible).
    pub metrics: Vec<(String, f64)>,
    /// Cohort requests by status.
    pub counts: BTreeMap<Status, u64>,
    /// |C|.
    pub offered: u64,
    /// Successful cohort requests.
    pub ok: u64,
    /// |W| in seconds.
    pub window_s: f64,
    /// TTFT from the intended arrival.
    pub ttft: Distribution,
    /// TTFT from the send.
    pub ttft_sent: Distribution,
    /// E2E from the intended arrival.
    pub e2e: Distribution,
    /// E2E from the send.
    pub e2e_sent: Distribution,
    /// TPOT (absent when token counts are not trusted).
    pub tpot: Option<Distribution>,
    /// Inter-chunk gaps, pooled.
    pub icl: Distribution,
    /// Mean output tokens per content chunk.
    pub tokens_per_chunk: Option<f64>,
    /// Share of successes with `finish_reason = length`.
    pub finish_length_share: Option<f64>,
    /// Notes for stderr.
    pub notes: Vec<String>,
    /// Set when exit 4 applies.
    pub untrustworthy: Vec<Untrustworthy>,
}

/// The metric names that may be printed, in order (the contract in `docs/bench.md`).
pub fn metric_names(with_slo: bool) -> Vec<String> {
    let mut names: Vec<String> = [
        "throughput",
        "tokens_per_s",
        "p50_ms",
        "p95_ms",
        "requests_per_s",
        "output_tokens_per_s",
        "total_tokens_per_s",
        "offered_rps",
    ]
    .map(String::from)
    .to_vec();
    for quantity in ["ttft", "tpot", "e2e"] {
        for level in ["p50", "p90", "p95", "p99", "mean"] {
            names.push(format!("{quantity}_{level}_ms"));
        }
    }
    for level in ["p50", "p95", "p99", "mean"] {
        names.push(format!("icl_{level}_ms"));
    }
    if with_slo {
        names.extend(["goodput_rps".into(), "slo_attainment".into()]);
    }
    names.extend(
        [
            "error_fraction",
            "requests_ok",
            "requests_offered",
            "dispatch_lag_p99_ms",
        ]
        .map(String::from),
    );
    names
}

fn in_window(t: Option<u64>, window: (u64, u64)) -> bool {
    t.is_some_and(|t| t >= window.0 && t < window.1)
}

/// Computes every figure.
pub fn summarize(input: &SummaryInput<'_>) -> Summary {
    let cohort: Vec<&RequestRecord> = input
        .records
        .iter()
        .filter(|r| r.phase == Phase::Measured)
        .collect();
    let offered = cohort.len() as u64;
    let ok: Vec<&RequestRecord> = cohort.iter().copied().filter(|r| r.ok()).collect();
    let failed = cohort.len() - ok.len();
    let window_s = (input.window_ns.1.saturating_sub(input.window_ns.0)) as f64 / 1e9;
    let mut counts = BTreeMap::new();
    for record in &cohort {
        *counts.entry(record.status).or_insert(0) += 1;
    }
    let mut notes = Vec::new();

    let tokens_trusted = input.allow_chunk_counts
        || ok
            .iter()
            .all(|r| r.output_tokens_source == TokenSource::ServerUsage);
    if !tokens_trusted {
        notes.push(
            "the server did not report usage.completion_tokens for every request: TPOT and token \
             rates are omitted (--allow-chunk-counts uses content chunks instead)"
                .into(),
        );
    }
    let values = |f: &dyn Fn(&RequestRecord) -> Option<f64>| -> Vec<f64> {
        ok.iter().filter_map(|r| f(r)).collect()
    };
    let ttft = Distribution::of(values(&|r| r.ttft_ms()), failed);
    let ttft_sent = Distribution::of(values(&|r| r.ttft_sent_ms()), failed);
    let e2e = Distribution::of(values(&|r| r.e2e_ms()), failed);
    let e2e_sent = Distribution::of(values(&|r| r.e2e_sent_ms()), failed);
    let tpot = tokens_trusted
        .then(|| Distribution::of(values(&|r| r.tpot_ms(input.allow_chunk_counts)), failed));
    let icl = Distribution::of(ok.iter().flat_map(|r| r.chunk_gaps_ms()).collect(), 0);

    let tokens = |r: &RequestRecord| r.output_tokens.unwrap_or(0) as f64;
    let (successes, output_tokens, prompt_tokens) = match input.rule {
        RateRule::Cohort => (
            ok.len() as f64,
            ok.iter().map(|r| tokens(r)).sum::<f64>(),
            ok.iter()
                .map(|r| r.prompt_tokens.unwrap_or(0) as f64)
                .sum::<f64>(),
        ),
        RateRule::EventsInWindow => {
            let mut successes = 0.0;
            let mut output = 0.0;
            let mut prompt = 0.0;
            for record in input.records.iter().filter(|r| r.ok()) {
                if in_window(record.end_ns, input.window_ns) {
                    successes += 1.0;
                    prompt += record.prompt_tokens.unwrap_or(0) as f64;
                }
                if !record.chunk_ns.is_empty() {
                    let weight = tokens(record) / record.chunk_ns.len() as f64;
                    let inside = record
                        .chunk_ns
                        .iter()
                        .filter(|&&t| in_window(Some(t), input.window_ns))
                        .count();
                    output += weight * inside as f64;
                }
            }
            (successes, output, prompt)
        }
    };
    let per_s = |x: f64| {
        if window_s > 0.0 {
            x / window_s
        } else {
            f64::NAN
        }
    };

    let lag_values: Vec<f64> = cohort.iter().filter_map(|r| r.dispatch_lag_ms()).collect();
    let lag_p99 = quantile_sorted(&sorted(lag_values), 0.99);
    let error_fraction = if offered > 0 {
        failed as f64 / offered as f64
    } else {
        0.0
    };

    let mut metrics: Vec<(String, f64)> = Vec::new();
    let mut push = |name: &str, value: Option<f64>| {
        if let Some(value) = value.filter(|v| !v.is_nan()) {
            metrics.push((name.to_owned(), value));
        }
    };
    let token_rate = tokens_trusted.then(|| per_s(output_tokens));
    push("throughput", token_rate);
    push("tokens_per_s", token_rate);
    push("p50_ms", e2e.penalized[0]);
    push("p95_ms", e2e.penalized[2]);
    push("requests_per_s", Some(per_s(successes)));
    push("output_tokens_per_s", token_rate);
    push(
        "total_tokens_per_s",
        tokens_trusted.then(|| per_s(output_tokens + prompt_tokens)),
    );
    push("offered_rps", Some(per_s(offered as f64)));
    let mut push_distribution = |quantity: &str, d: Option<&Distribution>, levels: &[usize]| {
        // Nothing to summarise (TTFT of whole answers, TPOT of one-token answers): left out.
        let Some(d) = d.filter(|d| d.n > 0) else {
            return;
        };
        for &i in levels {
            push(&format!("{quantity}_{}_ms", LEVELS[i].0), d.penalized[i]);
        }
        push(&format!("{quantity}_mean_ms"), d.mean);
    };
    push_distribution("ttft", Some(&ttft), &[0, 1, 2, 3]);
    push_distribution("tpot", tpot.as_ref(), &[0, 1, 2, 3]);
    push_distribution("e2e", Some(&e2e), &[0, 1, 2, 3]);
    // ICL is per gap, not per request: no penalty, and no p90 (spec'd set).
    let icl_levels = [0usize, 2, 3];
    let icl_ref = &icl;
    for &i in &icl_levels {
        push(&format!("icl_{}_ms", LEVELS[i].0), icl_ref.successful[i]);
    }
    push("icl_mean_ms", icl.mean);
    if let Some(slo) = &input.slo {
        let met = cohort
            .iter()
            .filter(|r| slo.met(r, input.allow_chunk_counts))
            .count() as f64;
        push("goodput_rps", Some(per_s(met)));
        push(
            "slo_attainment",
            (offered > 0).then(|| met / offered as f64),
        );
    }
    push("error_fraction", Some(error_fraction));
    push("requests_ok", Some(ok.len() as f64));
    push("requests_offered", Some(offered as f64));
    push("dispatch_lag_p99_ms", lag_p99);

    let mut untrustworthy = Vec::new();
    if let Some(gap_ms) = input.open_loop_mean_gap_ms {
        let unheld: Vec<f64> = cohort
            .iter()
            .filter(|r| !r.held_for_slot)
            .filter_map(|r| r.dispatch_lag_ms())
            .collect();
        if let Some(lag) = quantile_sorted(&sorted(unheld), 0.99) {
            let limit_ms = (0.05 * gap_ms).max(1.0);
            if lag > limit_ms {
                untrustworthy.push(Untrustworthy::ClientSaturated {
                    lag_p99_ms: lag,
                    limit_ms,
                });
            }
        }
    }
    if error_fraction > input.max_error_fraction {
        untrustworthy.push(Untrustworthy::TooManyErrors {
            fraction: error_fraction,
            limit: input.max_error_fraction,
        });
    }
    for (i, (level, _)) in LEVELS.iter().enumerate() {
        if !e2e.sufficient[i] && e2e.n > 0 && i > 0 {
            notes.push(format!(
                "{level} rests on {} requests: too few for a stable tail",
                e2e.n
            ));
            break;
        }
    }
    let chunks: u64 = ok.iter().map(|r| u64::from(r.chunks)).sum();
    let tokens_per_chunk =
        (chunks > 0).then(|| ok.iter().map(|r| tokens(r)).sum::<f64>() / chunks as f64);
    let finish_length_share = (!ok.is_empty()).then(|| {
        ok.iter()
            .filter(|r| r.finish_reason.as_deref() == Some("length"))
            .count() as f64
            / ok.len() as f64
    });
    Summary {
        metrics,
        counts,
        offered,
        ok: ok.len() as u64,
        window_s,
        ttft,
        ttft_sent,
        e2e,
        e2e_sent,
        tpot,
        icl,
        tokens_per_chunk,
        finish_length_share,
        notes,
        untrustworthy,
    }
}

/// Formats one METRIC value: shortest round-trip, `inf` for the failure mass.
pub fn format_value(value: f64) -> String {
    if value.is_infinite() {
        "inf".into()
    } else {
        format!("{value}")
    }
}

#[cfg(test)]
mod tests;
