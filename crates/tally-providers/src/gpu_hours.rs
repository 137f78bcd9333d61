//! The `gpu_hours` fact source (`docs/campaign.md#gpu-hours`): the GPU-hours the campaign's evaluations
//! held and what they cost, and the projection of the next evaluation's cost that `hold_at`
//! with `reserve` uses (`docs/campaign.md#stop-rules`).
//!
//! It counts every measurement the view holds — bar samples, failed samples and retried attempts
//! included, whatever their evaluator — because the GPU was held for all of them. A measurement
//! counts the GPU-seconds its Slurm job held (`held_gpus` × `held_seconds`; a job that held no
//! GPU Slurm knows of counts `held_seconds` × `gpus`), else its seconds × `gpus`; one without
//! either counts 0. It does not decide which measurements belong to the campaign (the engine's
//! view does) and it reads no clock: the facts do not depend on `now`.

use std::collections::BTreeMap;

use serde_json::json;
use tally_plugin::{
    CampaignData, Entry, FactInfo, FactSource, Facts, MeasurementView, ParamKind, ParamSpec,
    ProviderError, ProviderInfo,
};

use crate::checks::Checks;

/// How many recent evaluations the projection looks at.
const PROJECTION_WINDOW: usize = 5;

/// `gpu_hours` with checked parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GpuHours {
    /// GPUs one evaluation holds.
    pub gpus: u64,
    /// Price of one GPU-hour, USD.
    pub usd_per_gpu_hour: f64,
}

/// The facts `gpu_hours` supplies.
pub(crate) fn facts() -> Vec<FactInfo> {
    vec![
        FactInfo {
            name: "gpu_hours".into(),
            unit: "h".into(),
            doc: "the GPU-hours that the evaluations of the campaign held".into(),
        },
        FactInfo {
            name: "gpu_usd".into(),
            unit: "USD".into(),
            doc: "what those GPU-hours cost, in USD".into(),
        },
    ]
}

/// The registry entry of `gpu_hours`.
pub(crate) fn entry() -> Entry<dyn FactSource> {
    Entry {
        check: None,
        info: ProviderInfo::builtin(
            "gpu_hours",
            "turns what every measurement held (its Slurm job's GPUs × elapsed, else its seconds × gpus) into GPU-hours and dollars",
            vec![
                ParamSpec::optional(
                    "gpus",
                    ParamKind::Integer,
                    json!(1),
                    "GPUs one evaluation holds (for a Slurm job: only when Slurm allocated it none)",
                ),
                ParamSpec::required(
                    "usd_per_gpu_hour",
                    ParamKind::Number,
                    "price of one GPU-hour in USD",
                ),
            ],
        )
        .with_facts(facts()),
        build: |params| {
            let mut checks = Checks::new(params);
            let gpus = checks.integer("gpus", 1, u64::from(u32::MAX), "a whole number of GPUs ≥ 1");
            let price = checks.number(
                "usd_per_gpu_hour",
                |x| x >= 0.0,
                "a price in USD of at least 0, such as 2.49",
            );
            if price.is_none() && params.get("usd_per_gpu_hour").is_none() {
                checks.problem(
                    "usd_per_gpu_hour",
                    "missing required parameter: add `usd_per_gpu_hour = <number>` (price of one GPU-hour in USD)",
                );
            }
            checks.finish()?;
            Ok(Box::new(GpuHours {
                gpus: gpus.unwrap_or(1),
                usd_per_gpu_hour: price.unwrap_or(0.0),
            }))
        },
    }
}

impl GpuHours {
    /// `fact` for `gpu_seconds` of evaluation; `None` for a fact this source does not supply.
    fn convert(&self, fact: &str, gpu_seconds: f64) -> Option<f64> {
        let hours = gpu_seconds / 3600.0;
        match fact {
            "gpu_hours" => Some(hours),
            "gpu_usd" => Some(hours * self.usd_per_gpu_hour),
            _ => None,
        }
    }

    /// The GPU-seconds one measurement held (`docs/campaign.md#gpu-hours`): its Slurm job's
    /// allocated GPUs × elapsed seconds; `gpus` × elapsed for a job that held no GPU Slurm
    /// knows of; `gpus` × its measured seconds without a job; 0 without any of these.
    pub fn gpu_seconds(&self, m: &MeasurementView) -> f64 {
        let gpus = self.gpus as f64;
        match (m.held_gpus, m.held_seconds.filter(|s| s.is_finite())) {
            (Some(0), Some(held)) => held * gpus,
            (Some(held_gpus), Some(held)) => held * f64::from(held_gpus),
            _ => m.seconds.filter(|s| s.is_finite()).unwrap_or(0.0) * gpus,
        }
    }

    /// Σ GPU-seconds of every measurement.
    pub fn total_gpu_seconds(&self, data: &CampaignData) -> f64 {
        data.measurements.iter().map(|m| self.gpu_seconds(m)).sum()
    }

    /// The median, over the last `PROJECTION_WINDOW` (5) evaluations (in the order their first
    /// measurement appears), of each evaluation's summed GPU-seconds; `None` with no evaluation.
    pub fn projected_gpu_seconds(&self, data: &CampaignData) -> Option<f64> {
        let totals = evaluation_sums(data, |m| self.gpu_seconds(m));
        median(totals[totals.len().saturating_sub(PROJECTION_WINDOW)..].to_vec())
    }
}

/// Each evaluation's sum of `value` over its measurements (both sides, every sample), in the
/// order their first measurement appears. Measurements outside any evaluation are left out.
pub(crate) fn evaluation_sums(
    data: &CampaignData,
    value: impl Fn(&MeasurementView) -> f64,
) -> Vec<f64> {
    let mut position: BTreeMap<u64, usize> = BTreeMap::new();
    let mut totals: Vec<f64> = Vec::new();
    for m in &data.measurements {
        let Some(evaluation) = m.evaluation else {
            continue;
        };
        let at = *position.entry(evaluation).or_insert_with(|| {
            totals.push(0.0);
            totals.len() - 1
        });
        totals[at] += value(m);
    }
    totals
}

/// The median (the mean of the middle two for an even count); `None` for no values.
pub(crate) fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    })
}

impl FactSource for GpuHours {
    fn gather(
        &self,
        data: &CampaignData,
        wanted: &[String],
        _now_s: f64,
    ) -> Result<Facts, ProviderError> {
        let gpu_seconds = self.total_gpu_seconds(data);
        Ok(wanted
            .iter()
            .filter_map(|fact| Some((fact.clone(), self.convert(fact, gpu_seconds)?)))
            .collect())
    }

    fn project(&self, data: &CampaignData, fact: &str) -> Result<Option<f64>, ProviderError> {
        Ok(self
            .projected_gpu_seconds(data)
            .and_then(|s| self.convert(fact, s)))
    }
}
