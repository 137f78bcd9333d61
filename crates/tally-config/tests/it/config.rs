//! Every rule of `docs/campaign.md#tally-toml`, with a small fake registry.

use serde_json::json;
use tally_config::{ConfigError, SectionChoice, parse_settings};
use tally_model::{Direction, Role};
use tally_plugin::{
    Entry, Judgement, ParamKind, ParamSpec, Params, ProviderError, ProviderInfo, Registry,
    Rendered, Section, SectionInput, StopDecision, StopInput, StopRule, Surface, VerdictCase,
    VerdictRule,
};

struct Fake;
impl VerdictRule for Fake {
    fn decide(&self, _: &VerdictCase) -> Result<Judgement, ProviderError> {
        Err(ProviderError::new("fake", "not for deciding"))
    }
}
impl StopRule for Fake {
    fn wanted_facts(&self) -> Vec<String> {
        vec![]
    }
    fn check(&self, _: &StopInput) -> Result<StopDecision, ProviderError> {
        Ok(StopDecision::Go)
    }
}
impl Section for Fake {
    fn render(&self, _: &SectionInput<'_>) -> Result<Option<Rendered>, ProviderError> {
        Ok(None)
    }
}

pub(crate) fn registry() -> Registry {
    let mut r = Registry::default();
    r.verdict_rules.push(Entry {
        check: None,
        info: ProviderInfo::builtin(
            "bootstrap",
            "paired bootstrap",
            vec![ParamSpec::optional(
                "confidence",
                ParamKind::Number,
                json!(0.95),
                "confidence",
            )],
        ),
        build: |_: &Params| Ok(Box::new(Fake) as Box<dyn VerdictRule>),
    });
    r.stop_rules.push(Entry {
        check: None,
        info: ProviderInfo::builtin(
            "limits",
            "limits",
            vec![ParamSpec::unset("max_runs", ParamKind::Integer, "max runs")],
        ),
        build: |_: &Params| Ok(Box::new(Fake) as Box<dyn StopRule>),
    });
    for (name, order) in [("headline", 100), ("latency", 175)] {
        r.sections.push(Entry {
            check: None,
            info: ProviderInfo::builtin(
                name,
                "a section",
                vec![ParamSpec::optional(
                    "rows",
                    ParamKind::Integer,
                    json!(5),
                    "rows",
                )],
            )
            .shown(&[Surface::Status], order),
            build: |_: &Params| Ok(Box::new(Fake) as Box<dyn Section>),
        });
    }
    r
}

pub(crate) const MINIMAL: &str = r#"
name = "demo"
evaluate = ["./evaluate.sh"]

[[metrics]]
name = "tokens_per_s"
direction = "higher"
role = "primary"
repeats = 3

[[metrics]]
name = "p95_ms"
direction = "lower"
role = "guardrail"
margin = 2.5
"#;

#[test]
fn a_minimal_config_resolves_with_defaults() {
    let s = parse_settings(MINIMAL, &registry()).unwrap();
    assert_eq!(s.name, "demo");
    assert_eq!(s.evaluate_timeout_s, 600.0);
    assert_eq!(s.evaluation_slots, 1);
    assert_eq!(s.primary().name, "tokens_per_s");
    assert_eq!(s.primary().direction, Direction::Higher);
    assert_eq!(s.metrics[1].role, Role::Guardrail);
    assert_eq!(s.metrics[1].margin, Some(2.5));
    assert_eq!(s.repeats(), 3);
    assert_eq!(s.verdict_rule.provider, "bootstrap");
    assert_eq!(s.verdict_rule.params.f64("confidence"), Some(0.95));
    assert_eq!(s.stop_rule.provider, "limits");
    assert_eq!(s.status, SectionChoice::Default { exclude: vec![] });
}

#[test]
fn every_problem_is_reported_at_once_with_its_key() {
    let text = r#"
name = ""
evalute = ["x"]
evaluate_timeout = -1

[[metrics]]
name = "tps"
direction = "faster"
role = "primary"
repeats = 0

[[metrics]]
name = "p95"
direction = "lower"
margin = 1

[plugins.verdict_rule]
provider = "bootstrapp"

[plugins.stop_rule]
max_runz = 3

[status]
exclude = ["latncy"]
"#;
    let Err(ConfigError::Problems(problems)) = parse_settings(text, &registry()) else {
        panic!("expected problems");
    };
    let lines: Vec<String> = problems.iter().map(ToString::to_string).collect();
    let expected = [
        "evalute: unknown key; did you mean `evaluate`?",
        "name = \"\": expected a non-empty string naming the campaign",
        "evaluate: missing: add `evaluate = [\"./evaluate.sh\"]`, the command that prints METRIC lines",
        "evaluate_timeout = -1: expected a positive number of seconds per sample",
        "metrics[0].direction = \"faster\": expected \"higher\" or \"lower\"",
        "metrics[0].repeats = 0: expected a whole number of pairs from 1 to 1000",
        "metrics[1].margin = 1: only a guardrail has a margin; set `role = \"guardrail\"` or remove it",
        "plugins.verdict_rule.provider = \"bootstrapp\": unknown verdict_rule provider; did you mean \"bootstrap\"?",
        "plugins.stop_rule.max_runz: unknown key; did you mean `max_runs`?",
        "status.exclude[0] = \"latncy\": not an installed section; did you mean \"latency\"?",
    ];
    assert_eq!(lines, expected);
}

#[test]
fn evaluation_slots_take_1_to_64_workers() {
    let with = |slots: &str| MINIMAL.replacen("\n", &format!("\nevaluation_slots = {slots}\n"), 1);
    let s = parse_settings(&with("2"), &registry()).unwrap();
    assert_eq!(s.evaluation_slots, 2);
    assert_eq!(
        parse_settings(&with("64"), &registry())
            .unwrap()
            .evaluation_slots,
        64
    );
    for bad in ["0", "65", "1.5", "\"2\""] {
        let Err(ConfigError::Problems(problems)) = parse_settings(&with(bad), &registry()) else {
            panic!("evaluation_slots = {bad} was accepted");
        };
        let lines: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert_eq!(
            lines,
            [format!(
                "evaluation_slots = {bad}: expected a whole number from 1 to 64: how many \
                 `tally run` workers may evaluate at once (more than 1 needs a PostgreSQL \
                 store or the Slurm executor); set 1"
            )]
        );
    }
}

#[test]
fn syntax_errors_say_where() {
    let Err(ConfigError::Syntax { line, column, .. }) =
        parse_settings("name = \"x\"\nevaluate = [\n", &registry())
    else {
        panic!("expected a syntax error");
    };
    assert_eq!(line, 2, "the unclosed array starts on line 2");
    assert!(column >= 1);
}

#[test]
fn exactly_one_primary_and_not_both_section_keys() {
    let text = MINIMAL.replace("role = \"primary\"", "role = \"watch\"")
        + "\n[status]\nsections = [\"latency\"]\nexclude = [\"headline\"]\n";
    let Err(ConfigError::Problems(problems)) = parse_settings(&text, &registry()) else {
        panic!("expected problems");
    };
    let lines: Vec<String> = problems.iter().map(ToString::to_string).collect();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("metrics: exactly one metric must have")),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("status: set either `sections`")),
        "{lines:?}"
    );
}

#[test]
fn explicit_sections_keep_their_order_and_params() {
    let text = MINIMAL.to_string()
        + "\n[status]\nsections = [{ provider = \"latency\", rows = 8 }, \"headline\"]\n";
    let s = parse_settings(&text, &registry()).unwrap();
    let SectionChoice::Explicit(list) = s.status else {
        panic!("explicit list expected")
    };
    assert_eq!(list[0].provider, "latency");
    assert_eq!(list[0].params.u64("rows"), Some(8));
    assert_eq!(list[0].key, "status.sections[0]");
    assert_eq!(list[1].provider, "headline");
    assert_eq!(list[1].params.u64("rows"), Some(5));
}
