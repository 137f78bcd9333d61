//! `tally-engine`: the campaign loop (`docs/campaign.md`: vocabulary to facts, sections, commands).
//!
//! [`Engine`] takes a [`Store`](tally_contract::Store), a
//! [`SampleRunner`](tally_contract::SampleRunner), resolved [`Settings`](tally_config::Settings),
//! built [`Providers`], a [`Clock`] and an [`Observer`] — all traits or plain values, so tests hand
//! it an in-memory store, a scripted runner and a fixed clock and test campaign logic exactly.
//!
//! What it owns: pairing candidate and bar samples and committing each the moment it ends
//! (`evaluate`), building verdict cases and writing verdicts with their head moves (`judge`),
//! measuring the extra pairs a verdict rule asks for in the same evaluation (`more`), the
//! loop with crash recovery, evaluator changes, the stop rule before every evaluation and
//! confirmation of keeps (`run`), the baseline and the hold on a bar without a score
//! (`baseline`), the `[checks]` gate before the first sample (`checks`), facts (`facts`), and running the sections of a surface into
//! [`SectionOutput`](tally_plugin::SectionOutput)s (`engine`), which `tally-report` renders.
//! Deliberately absent: printing and rendering (`tally-report` renders what it returns), the
//! terminal, clap, the lock file (the binary owns those), any provider logic (the registry's
//! providers decide; the engine asks), and any adapter: it sees the store and the runner only
//! through `tally-contract`'s traits, so it builds without SQLite or a process library.

mod baseline;
mod checks;
mod clock;
mod engine;
mod error;
mod evaluate;
mod evaluator;
mod facts;
mod judge;
mod more;
mod observer;
mod providers;
mod run;
mod view;

pub use clock::{Clock, FixedClock, SystemClock};
pub use engine::{Engine, ManualReport, StatusReport};
pub use error::{EngineError, Result};
pub use evaluate::EvaluationEnd;
pub use evaluator::evaluator_identity;
pub use facts::{HOST_FACTS, TOTAL_USD, Upcoming, host_facts};
pub use observer::{Observer, SampleStart, Silent};
pub use providers::{ActiveSource, ChosenSection, Providers};
pub use run::{InitOutcome, RunEnd};
pub use view::{campaign_data, counts, means};
