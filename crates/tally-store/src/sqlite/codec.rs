//! Row ⇄ value conversions of the SQLite backend: the column lists of each table, decoding rows
//! into model types, and encoding the values that have a storage spelling (actors, metric maps,
//! paths).
//!
//! Only conversions; no query decides anything here. Decoding failures (a word outside its
//! vocabulary, malformed metrics JSON) surface as `FromSqlConversionFailure` naming the column.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rusqlite::Row;
use rusqlite::types::Type;
use serde_json::value::RawValue;
use tally_model::{
    Actor, Campaign, CampaignId, CampaignState, Candidate, CandidateId, ConfigTextId, Evaluation,
    EvaluationId, EvaluationKind, EvaluationState, EvidenceRef, Held, HeldFrom, Measurement,
    MeasurementId, Side, UnixMillis, Verdict,
};

use crate::error::StoreError;

/// Campaign columns, for `FROM campaigns c JOIN config_texts t ON t.id = c.config_text_id`.
pub(crate) const CAMPAIGN_COLUMNS: &str = "c.id, c.name, c.state, c.reason, c.state_since_ms, \
     c.created_ms, c.evaluator, c.head, c.config_text_id, t.text";

/// Candidate columns.
pub(crate) const CANDIDATE_COLUMNS: &str = "campaign_id, number, revision, parent, proposed_by, \
     note, verdict, reason, verdict_set_by, judged_against, created_ms, judged_ms";

/// Evaluation columns.
pub(crate) const EVALUATION_COLUMNS: &str = "id, campaign_id, candidate, bar, kind, repeats, \
     state, note, queued_ms, started_ms, ended_ms";

/// Measurement columns.
pub(crate) const MEASUREMENT_COLUMNS: &str = "id, campaign_id, candidate, evaluation_id, side, \
     sample, attempt, retry_of, pair, evaluator, rung, duration_ns, metrics, error, started_ms, \
     ended_ms, stdout_log, stderr_log, evidence, gpu_busy_ns, config_text_id, recorded_by, \
     held_gpus, held_ns, held_from";

/// A decoding failure of column `idx`.
fn bad_column(idx: usize, what: &str, why: String) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(
        idx,
        Type::Text,
        Box::new(StoreError::invalid(format!("stored {what}"), why)),
    )
}

/// Decodes a closed-vocabulary word.
fn word<T>(
    row: &Row<'_>,
    idx: usize,
    what: &str,
    parse: fn(&str) -> Option<T>,
) -> Result<T, rusqlite::Error> {
    let text = row.get_ref(idx)?.as_str()?;
    parse(text).ok_or_else(|| bad_column(idx, what, format!("unknown word {text:?}")))
}

/// The storage spelling of an actor: `loop` or `person:<name>`.
pub(crate) fn actor_to_sql(actor: &Actor) -> String {
    match actor {
        Actor::Loop => "loop".to_owned(),
        Actor::Person(name) => format!("person:{name}"),
    }
}

pub(crate) fn actor_from_sql(text: &str) -> Option<Actor> {
    if text == "loop" {
        return Some(Actor::Loop);
    }
    text.strip_prefix("person:")
        .filter(|name| !name.is_empty())
        .map(|name| Actor::Person(name.to_owned()))
}

fn actor(row: &Row<'_>, idx: usize) -> Result<Actor, rusqlite::Error> {
    word(row, idx, "actor", actor_from_sql)
}

fn optional_actor(row: &Row<'_>, idx: usize) -> Result<Option<Actor>, rusqlite::Error> {
    match row.get_ref(idx)?.as_str_or_null()? {
        None => Ok(None),
        Some(_) => actor(row, idx).map(Some),
    }
}

fn millis(row: &Row<'_>, idx: usize) -> Result<UnixMillis, rusqlite::Error> {
    row.get(idx).map(UnixMillis)
}

fn optional_millis(row: &Row<'_>, idx: usize) -> Result<Option<UnixMillis>, rusqlite::Error> {
    Ok(row.get::<_, Option<i64>>(idx)?.map(UnixMillis))
}

fn optional_path(row: &Row<'_>, idx: usize) -> Result<Option<PathBuf>, rusqlite::Error> {
    Ok(row.get::<_, Option<String>>(idx)?.map(PathBuf::from))
}

/// A path as stored text; the store keeps UTF-8 paths only.
pub(crate) fn path_to_sql(what: &str, path: Option<&Path>) -> Result<Option<String>, StoreError> {
    path.map(|p| {
        p.to_str().map(str::to_owned).ok_or_else(|| {
            StoreError::invalid(
                what,
                format!("{} is not valid UTF-8; use a UTF-8 path", p.display()),
            )
        })
    })
    .transpose()
}

/// Metrics as a JSON object. Values must be finite (checked by the caller); serde_json writes
/// the shortest text that parses back to the same `f64`.
pub(crate) fn metrics_to_sql(metrics: &BTreeMap<String, f64>) -> Result<String, StoreError> {
    serde_json::to_string(metrics).map_err(|e| StoreError::invalid("metrics", e.to_string()))
}

/// Parses a metrics JSON object exactly: each number's text goes through `str::parse::<f64>`,
/// which rounds correctly (serde_json's default float parser may be off by one ulp).
pub(crate) fn metrics_from_sql(text: &str) -> Result<BTreeMap<String, f64>, String> {
    if let Some(metrics) = metrics_from_sql_fast(text) {
        return Ok(metrics);
    }
    let raw: BTreeMap<String, &RawValue> =
        serde_json::from_str(text).map_err(|e| format!("metrics JSON: {e}"))?;
    raw.into_iter()
        .map(|(name, value)| {
            value
                .get()
                .parse::<f64>()
                .map(|v| (name, v))
                .map_err(|_| format!("metric value {} is not a number", value.get()))
        })
        .collect()
}

/// The fast path of [`metrics_from_sql`] for exactly what [`metrics_to_sql`] writes — `{}` or
/// `{"name":number,...}` with no whitespace and no escapes in names — parsed without building a
/// JSON tree (the status bulk read parses 100,000 of these). `None` means "not that shape":
/// the caller falls back to the full parser, so this never changes a result.
fn metrics_from_sql_fast(text: &str) -> Option<BTreeMap<String, f64>> {
    let body = text.strip_prefix('{')?.strip_suffix('}')?;
    let mut metrics = BTreeMap::new();
    let mut rest = body;
    while !rest.is_empty() {
        let quoted = rest.strip_prefix('"')?;
        let name_end = quoted.find('"')?;
        let name = &quoted[..name_end];
        if name.contains('\\') {
            return None;
        }
        let value_text = quoted[name_end + 1..].strip_prefix(':')?;
        let (number, next) = match value_text.find(',') {
            Some(comma) => (&value_text[..comma], Some(&value_text[comma + 1..])),
            None => (value_text, None),
        };
        // JSON numbers start with '-' or a digit; this also rejects Rust-only spellings
        // such as "inf", "NaN" or "+1".
        if !number.starts_with(|c: char| c == '-' || c.is_ascii_digit()) {
            return None;
        }
        let value: f64 = number.parse().ok()?;
        metrics.insert(name.to_owned(), value);
        match next {
            Some(after) if !after.is_empty() => rest = after,
            Some(_) => return None,
            None => break,
        }
    }
    Some(metrics)
}

/// Decodes a campaign row (see [`CAMPAIGN_COLUMNS`]).
pub(super) fn campaign_from_row(row: &Row<'_>) -> Result<Campaign, rusqlite::Error> {
    Ok(Campaign {
        id: CampaignId(row.get(0)?),
        name: row.get(1)?,
        state: word(row, 2, "campaign state", CampaignState::parse)?,
        reason: row.get(3)?,
        state_since: millis(row, 4)?,
        created: millis(row, 5)?,
        evaluator: row.get(6)?,
        head: row.get::<_, Option<u32>>(7)?.map(CandidateId),
        config: ConfigTextId(row.get(8)?),
        config_text: row.get(9)?,
    })
}

/// Decodes a candidate row (see [`CANDIDATE_COLUMNS`]).
pub(super) fn candidate_from_row(row: &Row<'_>) -> Result<Candidate, rusqlite::Error> {
    Ok(Candidate {
        campaign: CampaignId(row.get(0)?),
        id: CandidateId(row.get(1)?),
        revision: row.get(2)?,
        parent: row.get::<_, Option<u32>>(3)?.map(CandidateId),
        proposed_by: row.get(4)?,
        note: row.get(5)?,
        verdict: word(row, 6, "verdict", Verdict::parse)?,
        reason: row.get(7)?,
        verdict_set_by: optional_actor(row, 8)?,
        judged_against: row.get::<_, Option<u32>>(9)?.map(CandidateId),
        created: millis(row, 10)?,
        judged: optional_millis(row, 11)?,
    })
}

/// Decodes an evaluation row (see [`EVALUATION_COLUMNS`]).
pub(super) fn evaluation_from_row(row: &Row<'_>) -> Result<Evaluation, rusqlite::Error> {
    Ok(Evaluation {
        id: EvaluationId(row.get(0)?),
        campaign: CampaignId(row.get(1)?),
        candidate: CandidateId(row.get(2)?),
        bar: row.get::<_, Option<u32>>(3)?.map(CandidateId),
        kind: word(row, 4, "evaluation kind", EvaluationKind::parse)?,
        repeats: row.get(5)?,
        state: word(row, 6, "evaluation state", EvaluationState::parse)?,
        note: row.get(7)?,
        queued: millis(row, 8)?,
        started: optional_millis(row, 9)?,
        ended: optional_millis(row, 10)?,
    })
}

/// Decodes a measurement row (see [`MEASUREMENT_COLUMNS`]).
pub(super) fn measurement_from_row(row: &Row<'_>) -> Result<Measurement, rusqlite::Error> {
    let metrics_text = row.get_ref(12)?.as_str()?;
    let metrics = metrics_from_sql(metrics_text).map_err(|why| bad_column(12, "metrics", why))?;
    Ok(Measurement {
        id: MeasurementId(row.get(0)?),
        campaign: CampaignId(row.get(1)?),
        candidate: CandidateId(row.get(2)?),
        evaluation: row.get::<_, Option<u64>>(3)?.map(EvaluationId),
        side: word(row, 4, "side", Side::parse)?,
        sample: row.get(5)?,
        attempt: row.get(6)?,
        retry_of: row.get::<_, Option<u64>>(7)?.map(MeasurementId),
        pair: row.get::<_, Option<u64>>(8)?.map(MeasurementId),
        evaluator: row.get(9)?,
        rung: row.get(10)?,
        duration_ns: row.get(11)?,
        metrics,
        error: row.get(13)?,
        started: millis(row, 14)?,
        ended: millis(row, 15)?,
        stdout_log: optional_path(row, 16)?,
        stderr_log: optional_path(row, 17)?,
        evidence: EvidenceRef {
            artifact: row.get(18)?,
            gpu_busy_ns: row.get(19)?,
        },
        config: row.get::<_, Option<u64>>(20)?.map(ConfigTextId),
        recorded_by: actor(row, 21)?,
        held: held(row)?,
    })
}

/// Decodes `held_gpus, held_ns, held_from` (22–24): all three or none.
fn held(row: &Row<'_>) -> Result<Option<Held>, rusqlite::Error> {
    let gpus: Option<u32> = row.get(22)?;
    let elapsed_ns: Option<u64> = row.get(23)?;
    let from = match row.get_ref(24)?.as_str_or_null()? {
        Some(text) => Some(
            HeldFrom::parse(text)
                .ok_or_else(|| bad_column(24, "held_from", format!("unknown word {text:?}")))?,
        ),
        None => None,
    };
    match (gpus, elapsed_ns, from) {
        (Some(gpus), Some(elapsed_ns), Some(from)) => Ok(Some(Held {
            gpus,
            elapsed_ns,
            from,
        })),
        (None, None, None) => Ok(None),
        _ => Err(bad_column(
            22,
            "held_gpus, held_ns, held_from",
            "only some of the three are set; a sample's held allocation has all three or none"
                .to_owned(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_round_trip_bit_for_bit() {
        let hard = [
            0.1 + 0.2,
            1e-300,
            f64::MAX,
            f64::MIN_POSITIVE,
            5e-324,
            -0.0,
            123_456_789.123_456_79,
            2.0_f64.powi(60) + 1.0,
            9_007_199_254_740_993.0,
            0.3,
        ];
        let metrics: BTreeMap<String, f64> = hard
            .iter()
            .enumerate()
            .map(|(i, v)| (format!("m{i}"), *v))
            .collect();
        let text = metrics_to_sql(&metrics).unwrap();
        let back = metrics_from_sql(&text).unwrap();
        for (name, v) in &metrics {
            assert_eq!(
                back[name].to_bits(),
                v.to_bits(),
                "{name} = {v:e} via {text}"
            );
        }
    }

    #[test]
    fn the_fast_metrics_parser_agrees_with_serde_json_or_declines() {
        let written = metrics_to_sql(&BTreeMap::from([
            ("tok_s".to_owned(), 1234.5),
            ("a,b:c".to_owned(), -1e-7),
            ("é".to_owned(), 3.0),
        ]))
        .unwrap();
        let fast = metrics_from_sql_fast(&written).expect("our own output takes the fast path");
        assert_eq!(fast["a,b:c"], -1e-7);
        assert_eq!(fast.len(), 3);
        assert_eq!(metrics_from_sql_fast("{}"), Some(BTreeMap::new()));
        for other in [
            r#"{"a": 1}"#,
            r#"{"q\"x":1}"#,
            r#"{"a":1,}"#,
            r#"{"a":inf}"#,
            r#"{"a":+1}"#,
            r#"{"a":1"#,
            "[]",
        ] {
            assert_eq!(metrics_from_sql_fast(other), None, "{other}");
        }
        let escaped = metrics_to_sql(&BTreeMap::from([("q\"x".to_owned(), 2.0)])).unwrap();
        assert_eq!(
            metrics_from_sql(&escaped).unwrap()["q\"x"],
            2.0,
            "the fallback"
        );
        assert_eq!(
            metrics_from_sql(r#"{"a": 1.5}"#).unwrap()["a"],
            1.5,
            "the fallback"
        );
        assert!(metrics_from_sql(r#"{"a":"x"}"#).is_err());
    }

    #[test]
    fn actors_have_one_spelling_each() {
        assert_eq!(actor_to_sql(&Actor::Loop), "loop");
        assert_eq!(actor_to_sql(&Actor::Person("loop".into())), "person:loop");
        assert_eq!(
            actor_from_sql("person:loop"),
            Some(Actor::Person("loop".into()))
        );
        assert_eq!(actor_from_sql("person:"), None);
        assert_eq!(actor_from_sql("robot"), None);
    }
}
