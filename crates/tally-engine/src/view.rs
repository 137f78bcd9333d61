//! The store's records as providers see them: [`CampaignData`] built from a
//! [`CampaignSnapshot`], and the one rule for which measurements count — successful, full
//! benchmark (`rung` null), under the current evaluator.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use tally_config::Settings;
use tally_contract::CampaignSnapshot;
use tally_model::{CandidateId, EvaluationKind, EvaluationState, Measurement};
use tally_plugin::{CampaignData, CampaignSummary, CandidateView, MeasurementView, MetricView};

/// Whether a measurement enters means and verdicts under `evaluator`.
pub fn counts(m: &Measurement, evaluator: &str) -> bool {
    m.is_success() && m.is_full_benchmark() && m.evaluator == evaluator
}

/// Metric means over the measurements that count.
pub fn means<'a>(
    measurements: impl IntoIterator<Item = &'a Measurement>,
    evaluator: &str,
) -> BTreeMap<String, f64> {
    let mut sums = MetricSums::default();
    for m in measurements.into_iter().filter(|m| counts(m, evaluator)) {
        sums.add(m);
    }
    sums.means()
}

/// Running sums per metric name, in first-seen order, keyed by the measurement's own strings:
/// a handful of metrics, so a linear search beats a map, and no name is copied until the means
/// are taken. Each metric's values are summed in measurement order, so the means are the same
/// bits whichever way they are gathered.
#[derive(Default)]
struct MetricSums<'a> {
    sums: Vec<(&'a str, f64, u32)>,
}

impl<'a> MetricSums<'a> {
    fn add(&mut self, m: &'a Measurement) {
        for (name, value) in &m.metrics {
            match self.sums.iter_mut().find(|(n, ..)| *n == name) {
                Some((_, sum, n)) => {
                    *sum += value;
                    *n += 1;
                }
                // `0.0 +` as a sum started at zero: -0.0 becomes 0.0 exactly as before.
                None => self.sums.push((name, 0.0 + *value, 1)),
            }
        }
    }

    fn means(&self) -> BTreeMap<String, f64> {
        self.sums
            .iter()
            .map(|(name, sum, n)| ((*name).to_owned(), sum / f64::from(*n)))
            .collect()
    }
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
    CampaignData {
        campaign: summary(snapshot, settings, evaluator),
        candidates: candidate_views(snapshot, evaluator),
        measurements: snapshot.measurements.iter().map(measurement_view).collect(),
        agent_runs: Vec::new(),
    }
}

/// [`campaign_data`] from a snapshot the caller no longer needs: the measurements' strings and
/// metric maps move into the view instead of being copied (`tally status` on 100,000
/// measurements). The result is the same.
pub(crate) fn into_campaign_data(
    snapshot: CampaignSnapshot,
    settings: &Settings,
    evaluator: &str,
) -> CampaignData {
    let campaign = summary(&snapshot, settings, evaluator);
    let candidates = candidate_views(&snapshot, evaluator);
    CampaignData {
        campaign,
        candidates,
        measurements: snapshot
            .measurements
            .into_iter()
            .map(into_measurement_view)
            .collect(),
        agent_runs: Vec::new(),
    }
}

/// The ended implementer runs of a campaign, for the `agent_usage` fact source; none from a
/// store that keeps no runs.
pub(crate) fn agent_runs(
    store: &dyn tally_contract::Store,
    campaign: tally_model::CampaignId,
) -> Result<Vec<tally_plugin::AgentRunView>, tally_contract::StoreError> {
    let Some(runs) = store.with_ideas() else {
        return Ok(Vec::new());
    };
    Ok(runs
        .list_runs(campaign)?
        .into_iter()
        .filter_map(|r| {
            let settled = r.settled.as_ref()?;
            // A commit queued for measuring is noted `queued` (with its `Tally-Note`, if any).
            let measured = settled
                .commits
                .iter()
                .filter(|c| c.candidate.is_some() && c.note.starts_with("queued"))
                .count() as u32;
            Some(tally_plugin::AgentRunView {
                run: r.number,
                end: settled.end.as_str().to_string(),
                tokens: r.usage.as_ref().and_then(|u| u.tokens()),
                usd: r.usage.as_ref().and_then(|u| u.usd),
                measured,
            })
        })
        .collect())
}

fn summary(snapshot: &CampaignSnapshot, settings: &Settings, evaluator: &str) -> CampaignSummary {
    let campaign = &snapshot.campaign;
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
    CampaignSummary {
        name: campaign.name.clone(),
        state: campaign.state.as_str().into(),
        reason: campaign.reason.clone(),
        head: campaign.head.map(|c| u64::from(c.0)),
        baseline: baseline(snapshot).map(|c| u64::from(c.0)),
        queued: snapshot
            .evaluations
            .iter()
            .filter(|e| matches!(e.state, EvaluationState::Queued | EvaluationState::Running))
            .map(|e| u64::from(e.candidate.0))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect(),
        evaluator: evaluator.into(),
        metrics: metric_views(settings),
        first_evaluation_at,
        stop_rule: serde_json::Value::Object(stop_rule),
    }
}

/// The baseline: the candidate of the latest `baseline` evaluation, else the first candidate
/// (`docs/campaign.md#baseline`).
fn baseline(snapshot: &CampaignSnapshot) -> Option<CandidateId> {
    snapshot
        .evaluations
        .iter()
        .rev()
        .find(|e| e.kind == EvaluationKind::Baseline)
        .map(|e| e.candidate)
        .or_else(|| snapshot.candidates.first().map(|c| c.id))
}

/// Every candidate with its means, gathered in one pass over the measurements.
fn candidate_views(snapshot: &CampaignSnapshot, evaluator: &str) -> Vec<CandidateView> {
    let candidates = &snapshot.candidates;
    let mut sums: Vec<MetricSums<'_>> = Vec::new();
    sums.resize_with(candidates.len(), MetricSums::default);
    // The store lists candidates oldest first, which is id order: a binary search finds each
    // measurement's candidate without building a map. Any other order takes the map.
    let index: Option<HashMap<CandidateId, usize>> =
        (!candidates.is_sorted_by_key(|c| c.id)).then(|| {
            candidates
                .iter()
                .enumerate()
                .map(|(i, c)| (c.id, i))
                .collect()
        });
    for m in snapshot
        .measurements
        .iter()
        .filter(|m| counts(m, evaluator))
    {
        let at = match &index {
            None => candidates.binary_search_by_key(&m.candidate, |c| c.id).ok(),
            Some(index) => index.get(&m.candidate).copied(),
        };
        if let Some(at) = at {
            sums[at].add(m);
        }
    }
    candidates
        .iter()
        .zip(&sums)
        .map(|(c, sums)| CandidateView {
            id: u64::from(c.id.0),
            revision: c.revision.clone(),
            parent: c.parent.map(|p| u64::from(p.0)),
            verdict: c.verdict.as_str().into(),
            reason: c.reason.clone(),
            judged_against: c.judged_against.map(|b| u64::from(b.0)),
            proposed_by: c.proposed_by.clone(),
            metrics: sums.means(),
        })
        .collect()
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
        sample: m.sample,
        started_at: Some(m.started.0 as f64 / 1000.0),
        metrics: m.metrics.clone(),
        evidence: m.evidence.artifact.clone(),
        gpu_busy_seconds: busy_seconds(m),
        held_gpus: m.held.map(|h| h.gpus),
        held_seconds: m.held.map(|h| h.seconds()),
    }
}

/// [`measurement_view`] moving the strings and the metric map.
fn into_measurement_view(m: Measurement) -> MeasurementView {
    MeasurementView {
        id: m.id.0,
        candidate: u64::from(m.candidate.0),
        evaluation: m.evaluation.map(|e| e.0),
        seconds: m.seconds(),
        pair: m.pair.map(|p| p.0),
        side: m.side.as_str().into(),
        attempt: m.attempt,
        sample: m.sample,
        started_at: Some(m.started.0 as f64 / 1000.0),
        gpu_busy_seconds: busy_seconds(&m),
        held_gpus: m.held.map(|h| h.gpus),
        held_seconds: m.held.map(|h| h.seconds()),
        error: m.error,
        evaluator: m.evaluator,
        rung: m.rung,
        metrics: m.metrics,
        evidence: m.evidence.artifact,
    }
}

/// The GPU busy time of a measurement's evidence, in seconds.
fn busy_seconds(m: &Measurement) -> Option<f64> {
    m.evidence.gpu_busy_ns.map(|ns| ns as f64 / 1e9)
}
