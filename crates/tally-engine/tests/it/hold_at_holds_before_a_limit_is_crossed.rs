//! `hold_at` (`docs/campaign.md#stop-rules`, `docs/campaign.md#facts`, `docs/campaign.md#gpu-hours`): a fact at its limit holds the campaign (reversible: asked
//! again before each evaluation); with `reserve` the `gpu_hours` projection holds it *before*
//! the evaluation that would cross a budget; a fact source that fails holds it (never read as
//! zero); a fact that no active source supplies is a config error naming the source that would.

use tally_config::{ConfigError, parse_settings};
use tally_engine::RunEnd;
use tally_model::{CampaignState, Verdict};
use tally_plugin::{
    CampaignData, Entry, FactInfo, FactSource, Facts, ProviderError, ProviderInfo, Registry,
    Surface,
};

use crate::lab::{Lab, config};

fn lab(text: &str) -> Lab {
    let lab = Lab::new(text);
    lab.values(|rev, _, _| if rev == 0 { 100.0 } else { 95.0 });
    lab.init();
    lab
}

fn stop_rule(params: &str) -> String {
    format!("[plugins.stop_rule]\nprovider = \"limits\"\n{params}\n")
}

/// `gpu_hours` at 3600 USD per GPU-hour: one USD per second of evaluation.
const DOLLAR_A_SECOND: &str = "[[plugins.fact_source]]\nprovider = \"gpu_hours\"\n\
                               usd_per_gpu_hour = 3600\n";

#[test]
fn a_host_fact_at_its_limit_holds_and_is_asked_again_before_each_evaluation() {
    let mut lab = lab(&config(3, &stop_rule("hold_at = { runs = 1 }")));
    lab.add(&[1, 2]);
    let reason = "hold_at: runs 1.00 reached 1";
    assert_eq!(lab.run(), RunEnd::Held(reason.into()));
    assert_eq!(lab.state(), (CampaignState::Held, Some(reason.into())));
    let status = lab.engine().status(Surface::Status).unwrap();
    let headline = status.sections[0].result.clone().unwrap().unwrap();
    let tally_plugin::Block::Figures(figures) = &headline.blocks[0] else {
        panic!("the headline starts with figures");
    };
    assert_eq!(
        (figures[0].label.as_str(), figures[0].value.as_str()),
        ("state", "held: hold_at: runs 1.00 reached 1")
    );
    let served = lab.served().len();
    assert_eq!(served, 3 + 6);

    // Held, not stopped: asked again, still holding.
    assert_eq!(lab.run(), RunEnd::Held(reason.into()));
    // Resuming by hand does not beat the rule.
    lab.engine().resume().unwrap();
    assert_eq!(lab.run(), RunEnd::Held(reason.into()));
    assert_eq!(lab.served().len(), served);

    // A higher limit: it goes on, and the campaign is active again.
    lab.reconfigure(&config(3, &stop_rule("hold_at = { runs = 5 }")));
    assert_eq!(lab.run(), RunEnd::Idle);
    assert_eq!(lab.verdict(2).0, Verdict::Discard);
    assert_eq!(lab.state(), (CampaignState::Active, None));
}

#[test]
fn holds_are_checked_before_stops() {
    let lab = lab(&config(
        3,
        &stop_rule("max_runs = 1\nhold_at = { runs = 1 }"),
    ));
    lab.add(&[1, 2]);
    assert_eq!(
        lab.run(),
        RunEnd::Held("hold_at: runs 1.00 reached 1".into())
    );
}

#[test]
fn with_reserve_a_gpu_budget_holds_before_the_evaluation_that_would_cross_it() {
    let text = config(
        3,
        &format!(
            "{}{DOLLAR_A_SECOND}",
            stop_rule("hold_at = { gpu_usd = 12 }")
        ),
    );
    let lab = lab(&text);
    lab.add(&[1, 2, 3]);
    // $3 of baseline + $3 expected: go. Then $9 + median($3, $6) = $13.50 would reach $12.
    assert_eq!(
        lab.run(),
        RunEnd::Held("hold_at: gpu_usd 9.00 + 4.50 expected would reach 12".into())
    );
    assert_eq!(lab.served().len(), 3 + 6);
    assert_eq!(lab.verdict(2).0, Verdict::Pending);
    let facts = lab.engine().status(Surface::Status).unwrap().facts;
    assert_eq!(facts["gpu_usd"], 9.0);
    assert_eq!(facts["gpu_hours"], 9.0 / 3600.0);
}

#[test]
fn without_reserve_the_budget_holds_only_once_reached() {
    let text = config(
        3,
        &format!(
            "{}{DOLLAR_A_SECOND}",
            stop_rule("hold_at = { gpu_usd = 12 }\nreserve = false")
        ),
    );
    let lab = lab(&text);
    lab.add(&[1, 2, 3]);
    assert_eq!(
        lab.run(),
        RunEnd::Held("hold_at: gpu_usd 15.00 reached 12".into())
    );
    assert_eq!(lab.served().len(), 3 + 6 + 6);
}

/// A fact source whose meter is always offline.
struct OfflineMeter;

impl FactSource for OfflineMeter {
    fn gather(&self, _: &CampaignData, _: &[String], _: f64) -> Result<Facts, ProviderError> {
        Err(ProviderError::new("meter", "the meter is offline"))
    }
}

/// The built-ins plus `meter`, which supplies `budget_usd` and always fails.
fn with_meter() -> Registry {
    let mut registry = tally_providers::builtins();
    registry.fact_sources.push(Entry {
        check: None,
        info: ProviderInfo::builtin("meter", "reads the cloud bill", vec![]).with_facts(vec![
            FactInfo {
                name: "budget_usd".into(),
                unit: "USD".into(),
                doc: "spent so far".into(),
            },
        ]),
        build: |_| Ok(Box::new(OfflineMeter)),
    });
    registry
}

#[test]
fn a_failing_fact_source_holds_and_is_never_read_as_zero() {
    let text = config(
        3,
        &format!(
            "{}[[plugins.fact_source]]\nprovider = \"meter\"\n",
            stop_rule("hold_at = { budget_usd = 100 }")
        ),
    );
    let lab = Lab::with_registry(&text, with_meter);
    lab.init();
    lab.add(&[1]);
    let reason = "hold_at: budget_usd unknown: meter: the meter is offline";
    assert_eq!(lab.run(), RunEnd::Held(reason.into()));
    assert_eq!(lab.state(), (CampaignState::Held, Some(reason.into())));
    assert_eq!(lab.served().len(), 3, "only the baseline ran");
    let status = lab.engine().status(Surface::Status).unwrap();
    assert!(!status.facts.contains_key("budget_usd"));
    assert_eq!(status.fact_errors, ["meter: the meter is offline"]);
}

#[test]
fn a_hold_at_fact_that_no_active_source_supplies_is_a_config_error() {
    // The config reader finds it (every chosen provider builds without effects), with every
    // other problem of `tally.toml`; `Providers::build` checks again with what external sources
    // describe.
    let text = config(3, &stop_rule("hold_at = { gpu_usd = 50 }"));
    let Err(ConfigError::Problems(problems)) = parse_settings(&text, &tally_providers::builtins())
    else {
        panic!("read without a gpu_usd supplier");
    };
    let lines: Vec<String> = problems.iter().map(ToString::to_string).collect();
    assert_eq!(
        lines,
        [
            "plugins.stop_rule.hold_at.gpu_usd: no active fact source supplies `gpu_usd`; add a \
             [[plugins.fact_source]] table with provider = \"gpu_hours\""
        ]
    );
}
