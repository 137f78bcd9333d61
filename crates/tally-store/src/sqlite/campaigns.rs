//! Campaign rows and config texts: register, look up, change state, config and head; store
//! `tally.toml` texts once each (keyed by their SHA-256).
//!
//! Candidates, evaluations and measurements are other modules' business; moving the head
//! together with a verdict happens in `candidates`.

use rusqlite::{Connection, OptionalExtension, params};
use sha2::{Digest, Sha256};
use tally_contract::NewCampaign;
use tally_model::{
    Campaign, CampaignId, CampaignState, CandidateId, ConfigTextId, UnixMillis, Verdict,
};

use super::codec::{CAMPAIGN_COLUMNS, campaign_from_row};
use super::{candidates, next_id};
use crate::error::{Error, StoreError};

fn select(filter: &str) -> String {
    format!(
        "SELECT {CAMPAIGN_COLUMNS} FROM campaigns c \
         JOIN config_texts t ON t.id = c.config_text_id {filter}"
    )
}

pub(super) fn create(conn: &Connection, new: &NewCampaign) -> Result<Campaign, Error> {
    if new.name.trim().is_empty() {
        return Err(
            StoreError::invalid("campaign name", "it is empty; set `name` in tally.toml").into(),
        );
    }
    require_evaluator(&new.evaluator)?;
    if by_name(conn, &new.name)?.is_some() {
        return Err(StoreError::CampaignExists {
            name: new.name.clone(),
        }
        .into());
    }
    let config = record_config_text(conn, &new.config_text)?;
    let id = next_id(conn, "campaigns")?;
    conn.prepare_cached(
        "INSERT INTO campaigns (id, name, state, reason, state_since_ms, created_ms, evaluator, \
         config_text_id, head) VALUES (?1, ?2, 'active', NULL, ?3, ?3, ?4, ?5, NULL)",
    )?
    .execute(params![
        id,
        new.name,
        new.created.0,
        new.evaluator,
        config.0
    ])?;
    require(conn, CampaignId(id))
}

pub(super) fn get(conn: &Connection, id: CampaignId) -> Result<Option<Campaign>, Error> {
    Ok(conn
        .prepare_cached(&select("WHERE c.id = ?1"))?
        .query_row([id.0], campaign_from_row)
        .optional()?)
}

/// The campaign, or `NoSuchCampaign`.
pub(super) fn require(conn: &Connection, id: CampaignId) -> Result<Campaign, Error> {
    get(conn, id)?.ok_or(StoreError::NoSuchCampaign(id).into())
}

pub(super) fn by_name(conn: &Connection, name: &str) -> Result<Option<Campaign>, Error> {
    Ok(conn
        .prepare_cached(&select("WHERE c.name = ?1"))?
        .query_row([name], campaign_from_row)
        .optional()?)
}

pub(super) fn list(conn: &Connection) -> Result<Vec<Campaign>, Error> {
    let mut stmt = conn.prepare_cached(&select("ORDER BY c.id"))?;
    let rows = stmt.query_map([], campaign_from_row)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

pub(super) fn set_state(
    conn: &Connection,
    id: CampaignId,
    state: CampaignState,
    reason: Option<&str>,
    at: UnixMillis,
) -> Result<Campaign, Error> {
    require(conn, id)?;
    conn.prepare_cached(
        "UPDATE campaigns SET state = ?2, reason = ?3, state_since_ms = ?4 WHERE id = ?1",
    )?
    .execute(params![id.0, state.as_str(), reason, at.0])?;
    require(conn, id)
}

pub(super) fn set_config(
    conn: &Connection,
    id: CampaignId,
    evaluator: &str,
    config_text: &str,
) -> Result<Campaign, Error> {
    require(conn, id)?;
    require_evaluator(evaluator)?;
    let config = record_config_text(conn, config_text)?;
    conn.prepare_cached("UPDATE campaigns SET evaluator = ?2, config_text_id = ?3 WHERE id = ?1")?
        .execute(params![id.0, evaluator, config.0])?;
    require(conn, id)
}

pub(super) fn set_head(
    conn: &Connection,
    id: CampaignId,
    head: Option<CandidateId>,
) -> Result<Campaign, Error> {
    require(conn, id)?;
    if let Some(head) = head {
        let candidate = candidates::require(conn, id, head)?;
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
    conn.prepare_cached("UPDATE campaigns SET head = ?2 WHERE id = ?1")?
        .execute(params![id.0, head.map(|h| h.0)])?;
    require(conn, id)
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

/// Lowercase hex SHA-256 of a text.
pub(crate) fn sha256_hex(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    let mut hex = String::with_capacity(64);
    for byte in digest.iter() {
        hex.push(char::from(b"0123456789abcdef"[usize::from(byte >> 4)]));
        hex.push(char::from(b"0123456789abcdef"[usize::from(byte & 0xf)]));
    }
    hex
}

pub(super) fn record_config_text(conn: &Connection, text: &str) -> Result<ConfigTextId, Error> {
    let hash = sha256_hex(text);
    let known: Option<u64> = conn
        .prepare_cached("SELECT id FROM config_texts WHERE sha256 = ?1")?
        .query_row([&hash], |row| row.get(0))
        .optional()?;
    if let Some(id) = known {
        return Ok(ConfigTextId(id));
    }
    let id = next_id(conn, "config_texts")?;
    conn.prepare_cached("INSERT INTO config_texts (id, sha256, text) VALUES (?1, ?2, ?3)")?
        .execute(params![id, hash, text])?;
    Ok(ConfigTextId(id))
}

pub(super) fn config_text(conn: &Connection, id: ConfigTextId) -> Result<Option<String>, Error> {
    Ok(conn
        .prepare_cached("SELECT text FROM config_texts WHERE id = ?1")?
        .query_row([id.0], |row| row.get(0))
        .optional()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_of_known_texts() {
        assert_eq!(
            sha256_hex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            sha256_hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
