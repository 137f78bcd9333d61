//! `tally-config`: `tally.toml` → [`Settings`].
//!
//! Commands read the file itself each time (no stored copy to forget to refresh); the store keeps
//! the text each evaluation ran with. Validation follows `docs/campaign.md#tally-toml`: every problem at once,
//! one line each, naming the dotted key, the bad value and the fix; unknown keys refused with a
//! did-you-mean; provider tables checked against the provider's declared parameters (the
//! [`Registry`](tally_plugin::Registry) says which providers exist). No I/O: callers pass the text.

mod checks;
mod executor;
mod implementer;
mod presets;
mod read;
mod settings;

pub use checks::{CheckSpec, ChecksSettings};
pub use executor::{ExecutorSettings, SlurmSettings};
pub use implementer::{
    ImplementerSettings, Overlap, PLACEHOLDERS, Prices, StdinMode, placeholders,
};
pub use presets::{PRESET_NAMES, Preset, preset, presets};
pub use read::{ConfigError, parse_settings, toml_to_json};
pub use settings::{MetricSpec, ProviderChoice, SectionChoice, Settings};
