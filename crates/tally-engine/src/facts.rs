//! Facts (`docs/campaign.md#facts`): the host's own (`runs`, `keeps`, `without_keep`, `hours`, `head`,
//! `evaluations`) and those of the active fact sources, gathered only when wanted, and the stop
//! rule asked with them before every evaluation (`docs/campaign.md#stop-rules`). A failing source becomes a
//! [`FactReading::Failed`] — never a zero.

use std::collections::{BTreeMap, BTreeSet};

use tally_plugin::{CampaignData, FactReading, Facts, ProviderError, StopDecision, StopInput};

use crate::providers::Providers;

pub use tally_plugin::HOST_FACTS;

/// The fact source whose facts grow with an implementer launch rather than an evaluation.
pub const AGENT_USAGE: &str = "agent_usage";

pub use tally_plugin::{TOTAL_USD, TOTAL_USD_PARTS};

/// What the stop rule is asked before: the facts that action grows carry their source's
/// projection (`agent_usage`'s before a launch, every other source's before an evaluation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Upcoming {
    /// An evaluation of a candidate.
    Evaluation,
    /// An implementer launch.
    Launch,
}

/// How many of its projections the facts of `source` grow by before `upcoming`; `None`: no
/// projection. Before a launch (`docs/implementers.md#gating`): `agent_usage`'s one run, and
/// every other source's next evaluation times the median number of commits an implementer run
/// had measured (none before the first run that started).
fn projections(source: &str, upcoming: Option<Upcoming>, data: &CampaignData) -> Option<f64> {
    match upcoming {
        None => None,
        Some(Upcoming::Launch) if source == AGENT_USAGE => Some(1.0),
        Some(Upcoming::Launch) => measured_per_run(data),
        Some(Upcoming::Evaluation) => (source != AGENT_USAGE).then_some(1.0),
    }
}

/// The median of the commits measured per implementer run that started; `None` before one.
pub fn measured_per_run(data: &CampaignData) -> Option<f64> {
    let mut counts: Vec<f64> = data
        .agent_runs
        .iter()
        .filter(|r| r.end != "not_started")
        .map(|r| f64::from(r.measured))
        .collect();
    if counts.is_empty() {
        return None;
    }
    counts.sort_by(f64::total_cmp);
    let mid = counts.len() / 2;
    Some(if counts.len() % 2 == 1 {
        counts[mid]
    } else {
        (counts[mid - 1] + counts[mid]) / 2.0
    })
}

/// Whether the active sources supply both parts of `total_usd`.
pub fn has_total_usd(providers: &Providers) -> bool {
    TOTAL_USD_PARTS.iter().all(|part| {
        providers
            .fact_sources
            .iter()
            .any(|s| s.info.facts.iter().any(|f| f.name == *part))
    })
}

/// The host's facts from the campaign view at time `now_s` (seconds since the epoch).
pub fn host_facts(data: &CampaignData, now_s: f64) -> Facts {
    let baseline = data.campaign.baseline;
    let judged = |c: &&tally_plugin::CandidateView| c.verdict != "pending";
    let proposals = || data.candidates.iter().filter(|c| Some(c.id) != baseline);
    let mut facts = Facts::new();
    facts.insert("runs".into(), proposals().filter(judged).count() as f64);
    facts.insert(
        "keeps".into(),
        proposals().filter(|c| c.verdict == "keep").count() as f64,
    );
    let last_keep = data
        .candidates
        .iter()
        .filter(|c| c.verdict == "keep")
        .map(|c| c.id)
        .max();
    facts.insert(
        "without_keep".into(),
        data.candidates
            .iter()
            .filter(judged)
            .filter(|c| last_keep.is_none_or(|k| c.id > k))
            .count() as f64,
    );
    facts.insert(
        "hours".into(),
        data.campaign
            .first_evaluation_at
            .map_or(0.0, |t| ((now_s - t) / 3600.0).max(0.0)),
    );
    let primary = data
        .campaign
        .metrics
        .iter()
        .find(|m| m.role == "primary")
        .map(|m| m.name.clone());
    if let (Some(head), Some(primary)) = (data.campaign.head, primary)
        && let Some(value) = data
            .candidates
            .iter()
            .find(|c| c.id == head)
            .and_then(|c| c.metrics.get(&primary))
    {
        facts.insert("head".into(), *value);
    }
    let evaluations: BTreeSet<u64> = data
        .measurements
        .iter()
        .filter_map(|m| m.evaluation)
        .collect();
    facts.insert("evaluations".into(), evaluations.len() as f64);
    facts
}

/// Reads the wanted facts (with the projections of what `upcoming` grows, when set): host facts
/// directly, source facts from the source that declares them, each source asked once, then
/// `total_usd` from its parts (unknown when either is).
pub fn gather(
    providers: &Providers,
    data: &CampaignData,
    wanted: &[String],
    now_s: f64,
    upcoming: Option<Upcoming>,
) -> BTreeMap<String, FactReading> {
    let total = wanted.iter().any(|w| w == TOTAL_USD) && has_total_usd(providers);
    let mut asked: Vec<String> = wanted.to_vec();
    if total {
        for part in TOTAL_USD_PARTS {
            if !asked.iter().any(|w| w == part) {
                asked.push(part.to_string());
            }
        }
    }
    let mut readings = gather_asked(providers, data, &asked, now_s, upcoming);
    if total {
        let parts: Vec<FactReading> = TOTAL_USD_PARTS
            .iter()
            .map(|p| readings.get(*p).cloned())
            .map(|r| {
                r.unwrap_or_else(|| FactReading::Failed(format!("{TOTAL_USD}: a part is missing")))
            })
            .collect();
        let reading = match (&parts[0], &parts[1]) {
            (FactReading::Failed(e), _) | (_, FactReading::Failed(e)) => {
                FactReading::Failed(e.clone())
            }
            (
                FactReading::Value {
                    value: a,
                    projection: pa,
                },
                FactReading::Value {
                    value: b,
                    projection: pb,
                },
            ) => FactReading::Value {
                value: a + b,
                projection: match (pa, pb) {
                    (None, None) => None,
                    (x, y) => Some(x.unwrap_or(0.0) + y.unwrap_or(0.0)),
                },
            },
        };
        readings.insert(TOTAL_USD.to_string(), reading);
        readings.retain(|name, _| wanted.contains(name));
    }
    readings
}

fn gather_asked(
    providers: &Providers,
    data: &CampaignData,
    wanted: &[String],
    now_s: f64,
    upcoming: Option<Upcoming>,
) -> BTreeMap<String, FactReading> {
    let host = host_facts(data, now_s);
    let mut readings = BTreeMap::new();
    for name in wanted {
        if let Some(value) = host.get(name) {
            readings.insert(
                name.clone(),
                FactReading::Value {
                    value: *value,
                    projection: None,
                },
            );
        }
    }
    for source in &providers.fact_sources {
        let mine: Vec<String> = wanted
            .iter()
            .filter(|w| source.info.facts.iter().any(|f| &f.name == *w))
            .filter(|w| !readings.contains_key(*w))
            .cloned()
            .collect();
        if mine.is_empty() {
            continue;
        }
        match source.source.gather(data, &mine, now_s) {
            Ok(values) => {
                for name in &mine {
                    let reading = match values.get(name) {
                        Some(value) if value.is_finite() => {
                            let times = projections(&source.name, upcoming, data);
                            let projection = if let Some(times) = times {
                                match source.source.project(data, name) {
                                    Ok(p) => p.map(|p| p * times),
                                    Err(e) => {
                                        readings.insert(
                                            name.clone(),
                                            FactReading::Failed(e.to_string()),
                                        );
                                        continue;
                                    }
                                }
                            } else {
                                None
                            };
                            FactReading::Value {
                                value: *value,
                                projection,
                            }
                        }
                        Some(value) => FactReading::Failed(format!(
                            "{}: gave {value} for `{name}`, not a finite number",
                            source.name
                        )),
                        None => {
                            FactReading::Failed(format!("{}: did not supply `{name}`", source.name))
                        }
                    };
                    readings.insert(name.clone(), reading);
                }
            }
            Err(e) => {
                for name in mine {
                    readings.insert(name, FactReading::Failed(e.to_string()));
                }
            }
        }
    }
    readings
}

/// Every fact the host and the active sources supply (for `status`), and the errors of sources
/// that failed.
pub fn all_facts(providers: &Providers, data: &CampaignData, now_s: f64) -> (Facts, Vec<String>) {
    let wanted: Vec<String> = providers.fact_info().into_iter().map(|f| f.name).collect();
    let mut facts = Facts::new();
    let mut errors = Vec::new();
    for (name, reading) in gather(providers, data, &wanted, now_s, None) {
        match reading {
            FactReading::Value { value, .. } => {
                facts.insert(name, value);
            }
            FactReading::Failed(e) => {
                if !errors.contains(&e) {
                    errors.push(e);
                }
            }
        }
    }
    (facts, errors)
}

/// Asks the stop rule, with the facts it wants (projected for `upcoming`), before an evaluation
/// or a launch.
pub fn check_stop(
    providers: &Providers,
    data: &CampaignData,
    now_s: f64,
    in_flight: bool,
    upcoming: Upcoming,
) -> Result<StopDecision, ProviderError> {
    let wanted = providers.stop.wanted_facts();
    let facts = gather(providers, data, &wanted, now_s, Some(upcoming));
    let primary = data
        .campaign
        .metrics
        .iter()
        .find(|m| m.role == "primary")
        .cloned()
        .expect("a validated campaign has a primary metric");
    providers.stop.check(&StopInput {
        facts,
        primary,
        in_flight,
    })
}
