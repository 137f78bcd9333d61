//! The `[checks]` gate's contract (`docs/campaign.md#checks`): what the engine asks a runner to
//! check ([`CheckRequest`]), what comes back ([`CheckOutcome`]), and the record a store keeps of
//! each check run ([`CheckRecord`], [`CheckStore`]) so that `candidate show` can say it ran and a
//! candidate that passed is not checked again.
//!
//! Deliberately absent: how the commands run (a checkout and process groups are
//! `tally-runner`'s) and what a failure means for the verdict (the engine's).

use std::path::PathBuf;
use std::time::Duration;

use tally_model::{CampaignId, CandidateId, UnixMillis};

use crate::error::StoreError;
use crate::sample::CommitId;

/// One check command.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckCommand {
    /// Its name, for messages.
    pub name: String,
    /// The argv, run without a shell in the checkout.
    pub argv: Vec<String>,
}

/// The checks of one candidate.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckRequest {
    /// The commands, in order; the first failure stops the rest.
    pub commands: Vec<CheckCommand>,
    /// The wall-clock limit of each command.
    pub timeout: Duration,
    /// `link` entries offered in the checkout, as for samples.
    pub links: Vec<PathBuf>,
    /// The revision to check out.
    pub revision: CommitId,
    /// The candidate's id, passed as `TALLY_CANDIDATE`.
    pub candidate: String,
    /// Where the logs go (created if missing): `check-<i>.stdout.log` and `.stderr.log`.
    pub log_dir: PathBuf,
}

/// How the checks ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckOutcome {
    /// Every command exited 0.
    Passed,
    /// A command failed (or could not be checked out or started); the rest did not run.
    Failed {
        /// The failing check's name.
        name: String,
        /// Why, in one line: how it ended and the last lines of its output.
        why: String,
    },
    /// Ctrl-C stopped a command; nothing is concluded.
    Interrupted,
}

/// A check run, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckRecord {
    /// The candidate checked.
    pub candidate: CandidateId,
    /// The checks' identity (`ChecksSettings::key` of `tally-config`).
    pub key: String,
    /// How many commands the checks had.
    pub commands: u32,
    /// Whether every command passed.
    pub passed: bool,
    /// The failing check's name, when one failed.
    pub failed_check: Option<String>,
    /// Why it failed.
    pub reason: Option<String>,
    /// When the first command started.
    pub started: UnixMillis,
    /// When the last one ended.
    pub ended: UnixMillis,
}

/// A store that keeps check runs.
pub trait CheckStore {
    /// Records one finished check run (a run cut short by Ctrl-C or a crash is never recorded).
    fn record_check(&self, campaign: CampaignId, record: &CheckRecord) -> Result<(), StoreError>;
    /// Every check run of a candidate, oldest first.
    fn checks_of_candidate(
        &self,
        campaign: CampaignId,
        candidate: CandidateId,
    ) -> Result<Vec<CheckRecord>, StoreError>;
}
