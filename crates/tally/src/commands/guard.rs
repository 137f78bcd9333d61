//! The commands that change a campaign refuse to run inside an implementer's environment
//! (`docs/implementers.md#protection`): when `TALLY_ACTOR` or `TALLY_RUN_TAG` is set, a coding
//! agent — or anything it started — is asking, and the campaign's record is not its to write.
//! Reading commands (`status`, `brief`, `plugins`, `candidate show`, `idea list|show`,
//! `implementer list|show`) and the
//! evidence and bench commands stay available.

use crate::cli::{CandidateCommand, Command, IdeaCommand, ImplementerCommand, StoreCommand};

/// The variables that mark an implementer's environment.
pub const MARKERS: &[&str] = &["TALLY_ACTOR", "TALLY_RUN_TAG"];

/// The name of the command when it writes the campaign, else `None`.
fn writing_command(command: &Command) -> Option<&'static str> {
    match command {
        Command::Init(_) => Some("init"),
        Command::Run(_) => Some("run"),
        Command::Measurement(_) => Some("measurement add"),
        Command::Campaign(_) => Some("campaign resume"),
        Command::Candidate(c) => match c.command {
            CandidateCommand::Add(_) => Some("candidate add"),
            CandidateCommand::Remeasure(_) => Some("candidate remeasure"),
            CandidateCommand::Verdict(_) => Some("candidate verdict"),
            CandidateCommand::Show(_) => None,
        },
        Command::Idea(c) => match c.command {
            IdeaCommand::Add(_) => Some("idea add"),
            IdeaCommand::Park(_) => Some("idea park"),
            IdeaCommand::List(_) | IdeaCommand::Show(_) => None,
        },
        Command::Store(c) => match c {
            StoreCommand::Copy(_) => Some("store copy"),
            StoreCommand::Check(_) => Some("store check"),
        },
        Command::Implementer(c) => match c.command {
            ImplementerCommand::Cancel(_) => Some("implementer cancel"),
            ImplementerCommand::Usage(_) => Some("implementer usage"),
            ImplementerCommand::List(_)
            | ImplementerCommand::Show(_)
            | ImplementerCommand::Check => None,
        },
        Command::Status(_)
        | Command::Plugins(_)
        | Command::Brief(_)
        | Command::Demo(_)
        | Command::Trace(_)
        | Command::Bench(_) => None,
    }
}

/// Refuses a writing command when a marker variable is set (to anything but the empty string).
pub fn refuse_inside_implementer(
    command: &Command,
    var: impl Fn(&str) -> Option<String>,
) -> anyhow::Result<()> {
    let Some(name) = writing_command(command) else {
        return Ok(());
    };
    for marker in MARKERS {
        if let Some(value) = var(marker).filter(|v| !v.is_empty()) {
            anyhow::bail!(
                "not for implementers: `tally {name}` changes the campaign, and {marker}={value} \
                 says this runs inside an implementer's environment; commit your change and \
                 exit, and tally measures and judges it"
            );
        }
    }
    Ok(())
}
