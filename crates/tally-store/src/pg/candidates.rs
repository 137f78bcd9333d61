//! Candidate rows on PostgreSQL: queueing (numbered per campaign, parent = head), lookups, the
//! pending queue, and verdict writes with their head update — including the rule that the loop
//! never overwrites a verdict a person set (`docs/campaign.md#after-the-rule`).
//!
//! The same rules as the SQLite backend's `candidates` module. Two writers cannot both move the
//! head: every write transaction holds the store's write lock, so the second `MakeHead` sees
//! the head the first one set and gets `HeadMoved`.

use postgres::Transaction;
use tally_contract::{HeadUpdate, NewCandidate, VerdictWrite, VerdictWriteOutcome};
use tally_model::{Actor, CampaignId, Candidate, CandidateId, Verdict};

use super::campaigns;
use super::codec::{CANDIDATE_COLUMNS, actor_to_sql, big, candidate_from_row, unsigned};
use crate::error::{Error, StoreError};

pub(super) fn add(
    tx: &mut Transaction<'_>,
    campaign: CampaignId,
    new: &[NewCandidate],
) -> Result<Vec<Candidate>, Error> {
    let parent = campaigns::require(tx, campaign)?.head;
    let key = big("campaign id", campaign.0)?;
    let first: u32 = unsigned(
        &tx.query_one(
            "SELECT COALESCE(MAX(number), -1) + 1 FROM candidates WHERE campaign_id = $1",
            &[&key],
        )?,
        0,
        "candidate number",
    )?;
    let insert = tx.prepare(
        "INSERT INTO candidates (campaign_id, number, revision, parent, proposed_by, note, \
         verdict, reason, verdict_set_by, judged_against, created_ms, judged_ms) \
         VALUES ($1, $2, $3, $4, $5, $6, 'pending', NULL, NULL, NULL, $7, NULL)",
    )?;
    let parent_key = parent.map(|p| i64::from(p.0));
    let mut added = Vec::with_capacity(new.len());
    for (offset, candidate) in new.iter().enumerate() {
        if candidate.revision.trim().is_empty() {
            return Err(StoreError::invalid(
                format!("revision of new candidate {}", offset + 1),
                "it is empty; pass the full commit id",
            )
            .into());
        }
        if candidate.proposed_by.trim().is_empty() {
            return Err(StoreError::invalid(
                format!("proposed_by of {}", candidate.revision),
                "it is empty; say who proposes the candidate",
            )
            .into());
        }
        let number = u32::try_from(offset)
            .ok()
            .and_then(|o| first.checked_add(o))
            .ok_or_else(|| StoreError::invalid("candidate number", "over 4294967295 candidates"))?;
        tx.execute(
            &insert,
            &[
                &key,
                &i64::from(number),
                &candidate.revision,
                &parent_key,
                &candidate.proposed_by,
                &candidate.note,
                &candidate.created.0,
            ],
        )?;
        added.push(Candidate {
            campaign,
            id: CandidateId(number),
            revision: candidate.revision.clone(),
            parent,
            proposed_by: candidate.proposed_by.clone(),
            note: candidate.note.clone(),
            verdict: Verdict::Pending,
            reason: None,
            verdict_set_by: None,
            judged_against: None,
            created: candidate.created,
            judged: None,
        });
    }
    Ok(added)
}

pub(super) fn get(
    tx: &mut Transaction<'_>,
    campaign: CampaignId,
    id: CandidateId,
) -> Result<Option<Candidate>, Error> {
    let Ok(key) = i64::try_from(campaign.0) else {
        return Ok(None);
    };
    let sql = format!(
        "SELECT {CANDIDATE_COLUMNS} FROM candidates WHERE campaign_id = $1 AND number = $2"
    );
    tx.query_opt(sql.as_str(), &[&key, &i64::from(id.0)])?
        .map(|row| candidate_from_row(&row))
        .transpose()
}

/// The candidate, or `NoSuchCampaign` / `NoSuchCandidate`.
pub(super) fn require(
    tx: &mut Transaction<'_>,
    campaign: CampaignId,
    id: CandidateId,
) -> Result<Candidate, Error> {
    match get(tx, campaign, id)? {
        Some(candidate) => Ok(candidate),
        None => {
            campaigns::require(tx, campaign)?;
            Err(StoreError::NoSuchCandidate {
                campaign,
                candidate: id,
            }
            .into())
        }
    }
}

pub(super) fn list(
    tx: &mut Transaction<'_>,
    campaign: CampaignId,
) -> Result<Vec<Candidate>, Error> {
    campaigns::require(tx, campaign)?;
    let sql = format!(
        "SELECT {CANDIDATE_COLUMNS} FROM candidates WHERE campaign_id = $1 ORDER BY number"
    );
    tx.query(sql.as_str(), &[&big("campaign id", campaign.0)?])?
        .iter()
        .map(candidate_from_row)
        .collect()
}

pub(super) fn next_pending(
    tx: &mut Transaction<'_>,
    campaign: CampaignId,
) -> Result<Option<Candidate>, Error> {
    campaigns::require(tx, campaign)?;
    let sql = format!(
        "SELECT {CANDIDATE_COLUMNS} FROM candidates \
         WHERE campaign_id = $1 AND verdict = 'pending' ORDER BY number LIMIT 1"
    );
    tx.query_opt(sql.as_str(), &[&big("campaign id", campaign.0)?])?
        .map(|row| candidate_from_row(&row))
        .transpose()
}

pub(super) fn set_verdict(
    tx: &mut Transaction<'_>,
    campaign: CampaignId,
    id: CandidateId,
    write: &VerdictWrite,
) -> Result<VerdictWriteOutcome, Error> {
    let current_head = campaigns::require(tx, campaign)?.head;
    let candidate = require(tx, campaign, id)?;
    if let Actor::Person(name) = &write.by
        && name.trim().is_empty()
    {
        return Err(StoreError::invalid(
            format!("author of the verdict of {id}"),
            "the person's name is empty; say who sets it",
        )
        .into());
    }
    if write.by == Actor::Loop && candidate.is_hand_set() {
        return Ok(VerdictWriteOutcome::HandSet(candidate));
    }
    if let Some(bar) = write.judged_against {
        require(tx, campaign, bar)?;
    }
    let new_head = match write.head {
        HeadUpdate::Unchanged => {
            if current_head == Some(id) && write.verdict != Verdict::Keep {
                return Err(StoreError::invalid(
                    format!("verdict of {id}"),
                    format!(
                        "{id} is the head, and the head is always a keep; write {} with \
                         HeadUpdate::Set naming the new head",
                        write.verdict
                    ),
                )
                .into());
            }
            None
        }
        HeadUpdate::MakeHead { expected } => {
            require_keep(id, write.verdict)?;
            if current_head != expected {
                return Ok(VerdictWriteOutcome::HeadMoved(current_head));
            }
            Some(Some(id))
        }
        HeadUpdate::Set(target) => {
            match target {
                Some(t) if t == id => require_keep(id, write.verdict)?,
                Some(t) => require_keep(t, require(tx, campaign, t)?.verdict)?,
                None => {}
            }
            Some(target)
        }
    };
    let judged = write.verdict.is_judged();
    tx.execute(
        "UPDATE candidates SET verdict = $3, reason = $4, verdict_set_by = $5, \
         judged_against = $6, judged_ms = $7 WHERE campaign_id = $1 AND number = $2",
        &[
            &big("campaign id", campaign.0)?,
            &i64::from(id.0),
            &write.verdict.as_str(),
            &write.reason,
            &judged.then(|| actor_to_sql(&write.by)),
            &write.judged_against.map(|c| i64::from(c.0)),
            &judged.then_some(write.at.0),
        ],
    )?;
    if let Some(head) = new_head {
        campaigns::set_head(tx, campaign, head)?;
    }
    Ok(VerdictWriteOutcome::Applied(require(tx, campaign, id)?))
}

fn require_keep(id: CandidateId, verdict: Verdict) -> Result<(), StoreError> {
    if verdict != Verdict::Keep {
        return Err(StoreError::invalid(
            "head",
            format!("{id} would be the head with verdict {verdict}, and the head is always a keep"),
        ));
    }
    Ok(())
}
