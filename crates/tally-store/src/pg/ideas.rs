//! `impl IdeaStore for PgStore` (`docs/implementers.md#ideas`, `#runs`): ideas and implementer
//! runs with their usage. The statements, rules and row decoding are the SQLite backend's
//! (`crate::shared`); here only the transactions and PostgreSQL's `BIGINT` parameters.
//!
//! Every call that changes a row is one write transaction under the store's write lock, so two
//! `tally run` workers on one campaign never give two ideas or two runs the same number, and a
//! run is settled at most once.

use postgres::Transaction;
use postgres::types::ToSql;
use tally_contract::{
    Idea, IdeaState, IdeaStore, NewIdea, NewRun, Run, RunCommit, RunSettlement, RunUsage,
};
use tally_model::{CampaignId, UnixMillis};

use super::codec::big;
use super::{PgStore, campaigns, candidates};
use crate::error::{Error, StoreError};
use crate::shared::dialect::dollar;
use crate::shared::{ideas, runs};

type Param<'a> = &'a (dyn ToSql + Sync);

/// The rows of a shared statement, decoded.
pub(super) fn all_rows<T>(
    tx: &mut Transaction<'_>,
    sql: &str,
    params: &[Param<'_>],
    decode: fn(&postgres::Row) -> Result<T, Error>,
) -> Result<Vec<T>, Error> {
    tx.query(dollar(sql).as_str(), params)?
        .iter()
        .map(decode)
        .collect()
}

/// The row of a shared statement, if any, decoded.
fn first_row<T>(
    tx: &mut Transaction<'_>,
    sql: &str,
    params: &[Param<'_>],
    decode: fn(&postgres::Row) -> Result<T, Error>,
) -> Result<Option<T>, Error> {
    tx.query_opt(dollar(sql).as_str(), params)?
        .as_ref()
        .map(decode)
        .transpose()
}

/// The next number of a shared `NEXT_NUMBER` statement.
fn next_number(tx: &mut Transaction<'_>, sql: &str, campaign: i64) -> Result<i64, Error> {
    Ok(tx.query_one(dollar(sql).as_str(), &[&campaign])?.get(0))
}

fn key(campaign: CampaignId) -> Result<i64, StoreError> {
    big("campaign id", campaign.0)
}

fn get_idea(
    tx: &mut Transaction<'_>,
    campaign: CampaignId,
    number: u32,
) -> Result<Option<Idea>, Error> {
    first_row(
        tx,
        &ideas::select_one(),
        &[&key(campaign)?, &i64::from(number)],
        ideas::from_row,
    )
}

fn add_idea(tx: &mut Transaction<'_>, campaign: CampaignId, new: &NewIdea) -> Result<Idea, Error> {
    campaigns::require(tx, campaign)?;
    ideas::check_new(new)?;
    if let Some(base) = new.base {
        candidates::require(tx, campaign, base)?;
    }
    let id = key(campaign)?;
    let number = next_number(tx, ideas::NEXT_NUMBER, id)?;
    tx.execute(
        dollar(&ideas::insert()).as_str(),
        &[
            &id,
            &number,
            &new.title,
            &new.text,
            &new.attempts.map(i64::from),
            &new.base.map(|b| i64::from(b.0)),
            &new.added_by,
            &new.created.0,
        ],
    )?;
    let number =
        u32::try_from(number).map_err(|_| StoreError::invalid("idea number", "over 2^32"))?;
    Ok(get_idea(tx, campaign, number)?.expect("the idea was just inserted"))
}

fn get_run(
    tx: &mut Transaction<'_>,
    campaign: CampaignId,
    number: u32,
) -> Result<Option<Run>, Error> {
    first_row(
        tx,
        &runs::select_one(),
        &[&key(campaign)?, &i64::from(number)],
        runs::from_row,
    )
}

fn start_run(tx: &mut Transaction<'_>, campaign: CampaignId, new: &NewRun) -> Result<Run, Error> {
    campaigns::require(tx, campaign)?;
    let id = key(campaign)?;
    let number = next_number(tx, runs::NEXT_NUMBER, id)?;
    tx.execute(
        dollar(runs::INSERT).as_str(),
        &[
            &id,
            &number,
            &i64::from(new.idea),
            &i64::from(new.base.0),
            &new.tag,
            &new.run_dir,
            &new.started.0,
            &new.deadline.0,
        ],
    )?;
    let number =
        u32::try_from(number).map_err(|_| StoreError::invalid("run number", "over 2^32"))?;
    Ok(get_run(tx, campaign, number)?.expect("the run was just inserted"))
}

fn settle_run(
    tx: &mut Transaction<'_>,
    campaign: CampaignId,
    number: u32,
    s: &RunSettlement,
) -> Result<Run, Error> {
    let changed = tx.execute(
        dollar(runs::SETTLE).as_str(),
        &[
            &key(campaign)?,
            &i64::from(number),
            &s.end.as_str(),
            &s.exit_code.map(i64::from),
            &s.error,
            &runs::commits_to_json(&s.commits),
            &s.ended.0,
        ],
    )?;
    if changed == 0 {
        return Err(runs::not_settleable(number).into());
    }
    Ok(get_run(tx, campaign, number)?.expect("the run exists"))
}

fn append_run_commits(
    tx: &mut Transaction<'_>,
    campaign: CampaignId,
    number: u32,
    more: &[RunCommit],
) -> Result<Run, Error> {
    let Some(settled) = get_run(tx, campaign, number)?.and_then(|r| r.settled) else {
        return Err(runs::not_appendable(number).into());
    };
    let mut commits = settled.commits;
    commits.extend_from_slice(more);
    let changed = tx.execute(
        dollar(runs::SET_COMMITS).as_str(),
        &[
            &key(campaign)?,
            &i64::from(number),
            &runs::commits_to_json(&commits),
        ],
    )?;
    if changed == 0 {
        return Err(runs::not_appendable(number).into());
    }
    Ok(get_run(tx, campaign, number)?.expect("the run exists"))
}

fn set_usage(
    tx: &mut Transaction<'_>,
    campaign: CampaignId,
    number: u32,
    u: &RunUsage,
) -> Result<Option<Run>, Error> {
    campaigns::require(tx, campaign)?;
    tx.execute(
        dollar(runs::SET_USAGE).as_str(),
        &[
            &key(campaign)?,
            &i64::from(number),
            &runs::stored_count(u.input),
            &runs::stored_count(u.output),
            &runs::stored_count(u.cached),
            &u.usd,
            &u.source,
            &runs::stored_usd_source(u),
        ],
    )?;
    get_run(tx, campaign, number)
}

impl IdeaStore for PgStore {
    fn add_idea(&self, campaign: CampaignId, new: &NewIdea) -> Result<Idea, StoreError> {
        self.write(|tx| add_idea(tx, campaign, new))
    }

    fn idea(&self, campaign: CampaignId, number: u32) -> Result<Option<Idea>, StoreError> {
        self.read(|tx| get_idea(tx, campaign, number))
    }

    fn list_ideas(&self, campaign: CampaignId) -> Result<Vec<Idea>, StoreError> {
        self.read(|tx| {
            campaigns::require(tx, campaign)?;
            all_rows(
                tx,
                &ideas::select_all(),
                &[&key(campaign)?],
                ideas::from_row,
            )
        })
    }

    fn set_idea_state(
        &self,
        campaign: CampaignId,
        number: u32,
        state: IdeaState,
        reason: Option<&str>,
        at: UnixMillis,
    ) -> Result<Option<Idea>, StoreError> {
        self.write(|tx| {
            campaigns::require(tx, campaign)?;
            tx.execute(
                dollar(ideas::SET_STATE).as_str(),
                &[
                    &key(campaign)?,
                    &i64::from(number),
                    &state.as_str(),
                    &reason,
                    &at.0,
                ],
            )?;
            get_idea(tx, campaign, number)
        })
    }

    fn start_run(&self, campaign: CampaignId, new: &NewRun) -> Result<Run, StoreError> {
        self.write(|tx| start_run(tx, campaign, new))
    }

    fn settle_run(
        &self,
        campaign: CampaignId,
        number: u32,
        settlement: &RunSettlement,
    ) -> Result<Run, StoreError> {
        self.write(|tx| settle_run(tx, campaign, number, settlement))
    }

    fn append_run_commits(
        &self,
        campaign: CampaignId,
        number: u32,
        commits: &[RunCommit],
    ) -> Result<Run, StoreError> {
        self.write(|tx| append_run_commits(tx, campaign, number, commits))
    }

    fn list_runs(&self, campaign: CampaignId) -> Result<Vec<Run>, StoreError> {
        self.read(|tx| {
            campaigns::require(tx, campaign)?;
            all_rows(tx, &runs::select_all(), &[&key(campaign)?], runs::from_row)
        })
    }

    fn set_run_usage(
        &self,
        campaign: CampaignId,
        number: u32,
        usage: &RunUsage,
    ) -> Result<Option<Run>, StoreError> {
        self.write(|tx| set_usage(tx, campaign, number, usage))
    }
}
