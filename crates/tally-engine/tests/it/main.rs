//! The engine's integration tests: one binary, one module per promise of `campaign.md` that the
//! engine keeps, each driving the real [`tally_engine::Engine`] over an in-memory store, a
//! scripted runner and a fixed clock (see [`lab`]).

mod lab;

mod init_measures_and_keeps_the_baseline;
mod pairs_alternate_and_stop_at_the_first_failure;
mod the_verdict_follows_the_bootstrap_rule;
mod a_moved_head_is_judged_against_again;
mod confirm_re_measures_a_keep;
mod hand_set_verdicts_are_never_overwritten;
mod a_changed_evaluator_re_measures_the_head;
