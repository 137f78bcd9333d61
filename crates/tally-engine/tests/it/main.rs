//! The engine's integration tests: one binary, one module per promise of `campaign.md` that the
//! engine keeps, each driving the real [`tally_engine::Engine`] over an in-memory store, a
//! scripted runner and a fixed clock (see [`lab`]).

mod lab;

mod a_changed_evaluator_re_measures_the_head;
mod a_draining_engine_finishes_its_evaluation_and_takes_no_more;
mod a_failing_verdict_rule_leaves_the_candidate_pending;
mod a_moved_head_is_judged_against_again;
mod a_waiting_run_waits_on_its_clock;
mod confirm_re_measures_a_keep;
mod ctrl_c_and_a_killed_run_lose_nothing;
mod evidence_gives_each_measurement_its_gpu_busy_time;
mod gpu_time_is_never_lost_from_the_ledger;
mod hand_set_verdicts_are_never_overwritten;
mod hold_at_holds_before_a_limit_is_crossed;
mod init_measures_and_keeps_the_baseline;
mod judge_one_does_one_unit_at_a_time;
mod pairs_alternate_and_stop_at_the_first_failure;
mod status_shows_its_sections_in_order;
mod the_rule_gets_the_extra_pairs_it_asks_for;
mod the_stop_rule_is_asked_before_every_evaluation;
mod the_verdict_follows_the_bootstrap_rule;
