//! The campaign commands (`docs/campaign.md#commands`): one module per command, sharing the workspace and
//! engine set-up of `context`.

pub mod brief;
pub mod candidate;
pub(crate) mod context;
pub mod demo;
mod executor;
mod gpu_time;
pub mod idea;
mod implement;
pub mod implementer;
pub mod init;
pub mod measurement;
pub mod plugins;
mod presets;
mod progress;
pub mod resume;
pub mod run;
mod slots;
pub mod status;
