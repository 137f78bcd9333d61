//! Integration tests of `tally-runner` on real temporary git repositories and real processes.

mod evaluate;
mod evidence;
mod fixture;
mod lock;
mod processes;
mod scripted;
mod slurm;
mod worktrees;
