//! The store's records as providers see them: [`CampaignData`] built from a
//! [`CampaignSnapshot`], and the one rule for which measurements count — successful, full
//! benchmark (`rung` null), under the current evaluator.

use std::collections::BTreeMap;

use tally_config::Settings;
use tally_model::{CandidateId, Measurement};
use tally_plugin::{CampaignData, CampaignSummary, CandidateView, MeasurementView, MetricView};
use tally_store::CampaignSnapshot;

/// Whether a measurement enters means and verdicts under `evaluator`.
pub fn counts(m: &Measurement, evaluator: &str) -> bool {
    m.is_success() && m.is_full_benchmark() && m.evaluator == evaluator
}

/// Metric means over the measurements that count.
pub fn means<'a>(
    measurements: impl IntoIterator<Item = &'a Measurement>,
    evaluator: &str,
) -> BTreeMap<String, f64> {
    let mut sums: BTreeMap<String, (f64, u32)> = BTreeMap::new();
    for m in measurements.into_iter().filter(|m| counts(m, evaluator)) {
        for (name, value) in &m.metrics {
            let entry = sums.entry(name.clone()).or_default();
            entry.0 += value;
            entry.1 += 1;
        }
    }
    sums.into_iter()
        .map(|(name, (sum, n))| (name, sum / f64::from(n)))
        .collect()
}

/// The metrics as configured, primary first.
pub fn metric_views(settings: &Settings) -> Vec<MetricView> {
    let mut metrics: Vec<MetricView> = settings
        .metrics
        .iter()
        .map(|m| MetricView {
            name: m.name.clone(),
            direction: m.direction.as_str().into(),
            role: m.role.as_str().into(),
            margin: m.margin,
            floor: m.floor,
            repeats: m.repeats,
            deterministic: m.deterministic,
        })
        .collect();
    metrics.sort_by_key(|m| m.role != "primary");
    metrics
}

/// The provider view of a campaign.
pub fn campaign_data(
    snapshot: &CampaignSnapshot,
    settings: &Settings,
    evaluator: &str,
) -> CampaignData {
    let campaign = &snapshot.campaign;
    let mut by_candidate: BTreeMap<CandidateId, Vec<&Measurement>> = BTreeMap::new();
    for m in &snapshot.measurements {
        by_candidate.entry(m.candidate).or_default().push(m);
    }
    let first_evaluation_at = snapshot
        .evaluations
        .iter()
        .filter_map(|e| e.started)
        .min()
        .map(|t| t.0 as f64 / 1000.0);
    let mut stop_rule = serde_json::Map::new();
    stop_rule.insert(
        "provider".into(),
        settings.stop_rule.provider.clone().into(),
    );
    for (k, v) in settings.stop_rule.params.values() {
        stop_rule.insert(k.clone(), v.clone());
    }
    CampaignData {
        campaign: CampaignSummary {
            name: campaign.name.clone(),
            state: campaign.state.as_str().into(),
            reason: campaign.reason.clone(),
            head: campaign.head.map(|c| u64::from(c.0)),
            baseline: snapshot.candidates.first().map(|c| u64::from(c.id.0)),
            evaluator: evaluator.into(),
            metrics: metric_views(settings),
            first_evaluation_at,
            stop_rule: serde_json::Value::Object(stop_rule),
        },
        candidates: snapshot
            .candidates
            .iter()
            .map(|c| CandidateView {
                id: u64::from(c.id.0),
                revision: c.revision.clone(),
                parent: c.parent.map(|p| u64::from(p.0)),
                verdict: c.verdict.as_str().into(),
                reason: c.reason.clone(),
                proposed_by: c.proposed_by.clone(),
                metrics: means(
                    by_candidate.get(&c.id).into_iter().flatten().copied(),
                    evaluator,
                ),
            })
            .collect(),
        measurements: snapshot.measurements.iter().map(measurement_view).collect(),
    }
}

/// One measurement as providers see it.
pub fn measurement_view(m: &Measurement) -> MeasurementView {
    MeasurementView {
        id: m.id.0,
        candidate: u64::from(m.candidate.0),
        evaluation: m.evaluation.map(|e| e.0),
        seconds: m.seconds(),
        error: m.error.clone(),
        pair: m.pair.map(|p| p.0),
        side: m.side.as_str().into(),
        evaluator: m.evaluator.clone(),
        rung: m.rung.clone(),
        attempt: m.attempt,
        started_at: Some(m.started.0 as f64 / 1000.0),
        metrics: m.metrics.clone(),
    }
}
