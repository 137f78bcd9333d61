//! The `gpu_hours` fact source (`docs/campaign.md#gpu-hours`): the GPU-hours the campaign's evaluations
//! held and what they cost, and the projection of the next evaluation's cost that `hold_at`
//! with `reserve` uses (`docs/campaign.md#stop-rules`).
//!
//! It counts every measurement the view holds — bar samples, failed samples and retried attempts
//! included, whatever their evaluator — because the GPU was held for all of them; a measurement
//! without seconds counts 0. It does not decide which measurements belong to the campaign (the
//! engine's view does) and it reads no clock: the facts do not depend on `now`.

use std::collections::BTreeMap;

use serde_json::json;
use tally_plugin::{
    CampaignData, Entry, FactInfo, FactSource, Facts, ParamKind, ParamSpec, ProviderError,
    ProviderInfo,
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
            "turns the seconds of every measurement into GPU-hours and dollars",
            vec![
                ParamSpec::optional(
                    "gpus",
                    ParamKind::Integer,
                    json!(1),
                    "GPUs one evaluation holds",
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
    /// GPU-hours for `seconds` of evaluation.
    fn hours(&self, seconds: f64) -> f64 {
        seconds * self.gpus as f64 / 3600.0
    }

    /// `fact` for `seconds` of evaluation; `None` for a fact this source does not supply.
    fn convert(&self, fact: &str, seconds: f64) -> Option<f64> {
        match fact {
            "gpu_hours" => Some(self.hours(seconds)),
            "gpu_usd" => Some(self.hours(seconds) * self.usd_per_gpu_hour),
            _ => None,
        }
    }

    /// Σ seconds of every measurement (a measurement without seconds counts 0).
    pub fn total_seconds(data: &CampaignData) -> f64 {
        data.measurements
            .iter()
            .filter_map(|m| m.seconds)
            .filter(|s| s.is_finite())
            .sum()
    }

    /// The median, over the last `PROJECTION_WINDOW` (5) evaluations (in the order their first
    /// measurement appears), of each evaluation's summed seconds; `None` with no evaluation.
    pub fn projected_seconds(data: &CampaignData) -> Option<f64> {
        let totals = evaluation_seconds(data);
        median(totals[totals.len().saturating_sub(PROJECTION_WINDOW)..].to_vec())
    }
}

/// Each evaluation's summed seconds (both sides, every sample; none counts 0), in the order
/// their first measurement appears. Measurements outside any evaluation are left out.
pub(crate) fn evaluation_seconds(data: &CampaignData) -> Vec<f64> {
    let mut position: BTreeMap<u64, usize> = BTreeMap::new();
    let mut totals: Vec<f64> = Vec::new();
    for m in &data.measurements {
        let Some(evaluation) = m.evaluation else {
            continue;
        };
        let seconds = m.seconds.filter(|s| s.is_finite()).unwrap_or(0.0);
        let at = *position.entry(evaluation).or_insert_with(|| {
            totals.push(0.0);
            totals.len() - 1
        });
        totals[at] += seconds;
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
        let seconds = Self::total_seconds(data);
        Ok(wanted
            .iter()
            .filter_map(|fact| Some((fact.clone(), self.convert(fact, seconds)?)))
            .collect())
    }

    fn project(&self, data: &CampaignData, fact: &str) -> Result<Option<f64>, ProviderError> {
        Ok(Self::projected_seconds(data).and_then(|s| self.convert(fact, s)))
    }
}
