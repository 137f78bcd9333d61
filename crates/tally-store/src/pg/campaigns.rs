//! Campaign rows and config texts on PostgreSQL: register, look up, change state, config and
//! head; store `tally.toml` texts once each (keyed by their SHA-256).
//!
//! The same rules as the SQLite backend's `campaigns` module, in PostgreSQL's dialect; moving
//! the head together with a verdict happens in `candidates`.

use postgres::Transaction;
use tally_contract::NewCampaign;
use tally_model::{
    Campaign, CampaignId, CampaignState, CandidateId, ConfigTextId, UnixMillis, Verdict,
};

use super::codec::{CAMPAIGN_COLUMNS, big, campaign_from_row, unsigned};
use super::{candidates, next_id};
use crate::error::{Error, StoreError};
use crate::sqlite::campaigns::sha256_hex;

fn select(filter: &str) -> String {
    format!(
        "SELECT {CAMPAIGN_COLUMNS} FROM campaigns c \
         JOIN config_texts t ON t.id = c.config_text_id {filter}"
    )
}

pub(super) fn create(tx: &mut Transaction<'_>, new: &NewCampaign) -> Result<Campaign, Error> {
    if new.name.trim().is_empty() {
        return Err(
            StoreError::invalid("campaign name", "it is empty; set `name` in tally.toml").into(),
        );
    }
    require_evaluator(&new.evaluator)?;
    if by_name(tx, &new.name)?.is_some() {
        return Err(StoreError::CampaignExists {
            name: new.name.clone(),
        }
        .into());
    }
    let config = big(
        "config text id",
        record_config_text(tx, &new.config_text)?.0,
    )?;
    let id = next_id(tx, "campaigns")?;
    tx.execute(
        "INSERT INTO campaigns (id, name, state, reason, state_since_ms, created_ms, evaluator, \
         config_text_id, head) VALUES ($1, $2, 'active', NULL, $3, $3, $4, $5, NULL)",
        &[&id, &new.name, &new.created.0, &new.evaluator, &config],
    )?;
    require(tx, CampaignId(id as u64))
}

pub(super) fn get(tx: &mut Transaction<'_>, id: CampaignId) -> Result<Option<Campaign>, Error> {
    let Ok(key) = i64::try_from(id.0) else {
        return Ok(None);
    };
    tx.query_opt(select("WHERE c.id = $1").as_str(), &[&key])?
        .map(|row| campaign_from_row(&row))
        .transpose()
}

/// The campaign, or `NoSuchCampaign`.
pub(super) fn require(tx: &mut Transaction<'_>, id: CampaignId) -> Result<Campaign, Error> {
    get(tx, id)?.ok_or(StoreError::NoSuchCampaign(id).into())
}

pub(super) fn by_name(tx: &mut Transaction<'_>, name: &str) -> Result<Option<Campaign>, Error> {
    tx.query_opt(select("WHERE c.name = $1").as_str(), &[&name])?
        .map(|row| campaign_from_row(&row))
        .transpose()
}

pub(super) fn list(tx: &mut Transaction<'_>) -> Result<Vec<Campaign>, Error> {
    tx.query(select("ORDER BY c.id").as_str(), &[])?
        .iter()
        .map(campaign_from_row)
        .collect()
}

pub(super) fn set_state(
    tx: &mut Transaction<'_>,
    id: CampaignId,
    state: CampaignState,
    reason: Option<&str>,
    at: UnixMillis,
) -> Result<Campaign, Error> {
    require(tx, id)?;
    tx.execute(
        "UPDATE campaigns SET state = $2, reason = $3, state_since_ms = $4 WHERE id = $1",
        &[&big("campaign id", id.0)?, &state.as_str(), &reason, &at.0],
    )?;
    require(tx, id)
}

pub(super) fn set_config(
    tx: &mut Transaction<'_>,
    id: CampaignId,
    evaluator: &str,
    config_text: &str,
) -> Result<Campaign, Error> {
    require(tx, id)?;
    require_evaluator(evaluator)?;
    let config = big("config text id", record_config_text(tx, config_text)?.0)?;
    tx.execute(
        "UPDATE campaigns SET evaluator = $2, config_text_id = $3 WHERE id = $1",
        &[&big("campaign id", id.0)?, &evaluator, &config],
    )?;
    require(tx, id)
}

pub(super) fn set_head(
    tx: &mut Transaction<'_>,
    id: CampaignId,
    head: Option<CandidateId>,
) -> Result<Campaign, Error> {
    require(tx, id)?;
    if let Some(head) = head {
        let candidate = candidates::require(tx, id, head)?;
        if candidate.verdict != Verdict::Keep {
            return Err(StoreError::invalid(
                "head",
                format!(
                    "{head} is {}, and the head is always a keep; set its verdict to keep first",
                    candidate.verdict
                ),
            )
            .into());
        }
    }
    tx.execute(
        "UPDATE campaigns SET head = $2 WHERE id = $1",
        &[&big("campaign id", id.0)?, &head.map(|h| i64::from(h.0))],
    )?;
    require(tx, id)
}

fn require_evaluator(evaluator: &str) -> Result<(), StoreError> {
    if evaluator.is_empty() {
        return Err(StoreError::invalid(
            "evaluator",
            "the evaluator identity is empty; pass the hash of the evaluate command",
        ));
    }
    Ok(())
}

pub(super) fn record_config_text(
    tx: &mut Transaction<'_>,
    text: &str,
) -> Result<ConfigTextId, Error> {
    let hash = sha256_hex(text);
    if let Some(row) = tx.query_opt("SELECT id FROM config_texts WHERE sha256 = $1", &[&hash])? {
        return Ok(ConfigTextId(unsigned(&row, 0, "config text id")?));
    }
    let id = next_id(tx, "config_texts")?;
    tx.execute(
        "INSERT INTO config_texts (id, sha256, text) VALUES ($1, $2, $3)",
        &[&id, &hash, &text],
    )?;
    Ok(ConfigTextId(id as u64))
}

pub(super) fn config_text(
    tx: &mut Transaction<'_>,
    id: ConfigTextId,
) -> Result<Option<String>, Error> {
    let Ok(key) = i64::try_from(id.0) else {
        return Ok(None);
    };
    Ok(tx
        .query_opt("SELECT text FROM config_texts WHERE id = $1", &[&key])?
        .map(|row| row.get(0)))
}
