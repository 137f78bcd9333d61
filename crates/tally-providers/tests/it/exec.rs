//! `exec` against real external providers written in Python 3 (`tests/it/providers/`): a fact
//! source, a verdict rule, a stop rule and a section that work, and providers that exit
//! non-zero, are killed, time out, print nonsense or nothing, answer an error or the wrong
//! shape — every failure a `ProviderError` naming the provider, never a panic.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tally_model::Verdict;
use tally_plugin::{
    Block, FactReading, MetricView, ProviderError, SectionInput, StopDecision, StopInput, Surface,
    VerdictCase,
};

use crate::fixture::{data, fact_source, facts, section, stop_rule, verdict_rule};

fn script(name: &str) -> String {
    format!("{}/tests/it/providers/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// `command` for a working provider, run through its shebang.
fn working(name: &str) -> Value {
    json!([script(name)])
}

/// `command` for the misbehaving provider in `mode`, and the label errors must use.
fn misbehaving(mode: &str) -> (Value, String) {
    let path = script("misbehave.py");
    (
        json!(["python3", path, mode]),
        format!("exec python3 {path} {mode}"),
    )
}

fn case() -> VerdictCase {
    serde_json::from_value(json!({
        "primary": {"name": "tokens_per_s", "direction": "higher"},
        "candidate": {"id": 7, "means": {"tokens_per_s": 1100.0}},
        "bar": {"id": 2, "means": {"tokens_per_s": 1000.0}},
    }))
    .unwrap()
}

fn stop_input(runs: f64, gpu_usd: FactReading, in_flight: bool) -> StopInput {
    StopInput {
        facts: [
            (
                "runs".to_string(),
                FactReading::Value {
                    value: runs,
                    projection: None,
                },
            ),
            ("gpu_usd".to_string(), gpu_usd),
        ]
        .into_iter()
        .collect(),
        primary: MetricView {
            name: "tokens_per_s".into(),
            direction: "higher".into(),
            role: "primary".into(),
            margin: None,
            floor: None,
            repeats: 3,
            deterministic: false,
        },
        in_flight,
    }
}

fn usd(value: f64) -> FactReading {
    FactReading::Value {
        value,
        projection: None,
    }
}

#[test]
fn an_external_fact_source_gathers_and_projects() {
    let source = fact_source(
        "exec",
        json!({"command": working("fact_source.py"), "params": {"usd_per_hour": 7.2}}),
    )
    .unwrap();
    let info = source.described().unwrap();
    assert_eq!(info.name, "spot_price");
    assert!(!info.builtin);
    assert_eq!(info.facts[0].name, "spot_usd");
    assert_eq!(info.facts[0].unit, "USD");
    let facts = source
        .gather(&data(), &["spot_usd".to_string()], 1.7e9)
        .unwrap();
    let expected = crate::fixture::TOTAL_SECONDS / 3600.0 * 7.2;
    assert!((facts["spot_usd"] - expected).abs() <= 1e-9 * expected);
    assert_eq!(facts.len(), 1);
    assert_eq!(source.project(&data(), "spot_usd").unwrap(), Some(12.5));
    // Facts it does not declare as projected are never asked for.
    assert_eq!(source.project(&data(), "other").unwrap(), None);
    // The parameter's default comes from its describe answer.
    let default = fact_source("exec", json!({"command": working("fact_source.py")})).unwrap();
    let facts = default
        .gather(&data(), &["spot_usd".to_string()], 0.0)
        .unwrap();
    assert!((facts["spot_usd"] - crate::fixture::TOTAL_SECONDS / 3600.0 * 3.0).abs() < 1e-9);
}

#[test]
fn an_external_verdict_rule_decides() {
    let rule = verdict_rule(
        "exec",
        json!({"command": working("verdict_rule.py"), "params": {"threshold": 0.05}}),
    )
    .unwrap();
    let judgement = rule.decide(&case()).unwrap();
    assert_eq!(judgement.outcome, Verdict::Keep);
    assert_eq!(judgement.reason, "tokens_per_s +10.0% against candidate#2");
    let strict = verdict_rule(
        "exec",
        json!({"command": working("verdict_rule.py"), "params": {"threshold": 0.2}}),
    )
    .unwrap();
    assert_eq!(strict.decide(&case()).unwrap().outcome, Verdict::Discard);
}

#[test]
fn an_external_stop_rule_declares_its_wanted_facts_and_checks() {
    let rule = stop_rule(
        "exec",
        json!({"command": working("stop_rule.py"), "params": {"budget": 50, "max_runs": 5}}),
    )
    .unwrap();
    assert_eq!(rule.wanted_facts(), ["runs", "gpu_usd"]);
    let check = |input: StopInput| rule.check(&input).unwrap();
    assert_eq!(check(stop_input(1.0, usd(10.0), false)), StopDecision::Go);
    assert_eq!(
        check(stop_input(1.0, usd(51.0), false)),
        StopDecision::Hold("spent 51.00 of 50".into())
    );
    assert_eq!(
        check(stop_input(
            1.0,
            FactReading::Failed("exec x: timed out".into()),
            false
        )),
        StopDecision::Hold("gpu_usd unknown: exec x: timed out".into())
    );
    assert_eq!(
        check(stop_input(5.0, usd(10.0), false)),
        StopDecision::Stop("5 runs".into())
    );
    assert_eq!(check(stop_input(5.0, usd(10.0), true)), StopDecision::Go);
}

#[test]
fn an_external_section_renders() {
    let section = section("exec", json!({"command": working("section.py")})).unwrap();
    let info = section.described().unwrap();
    assert_eq!(
        (info.order, info.surfaces.clone()),
        (Some(150), vec![Surface::Status])
    );
    let (facts, fact_info) = facts();
    let mut d = data();
    let input = |d: &tally_plugin::CampaignData| {
        section.render(&SectionInput {
            data: d,
            facts: &facts,
            fact_info: &fact_info,
            surface: Surface::Run,
        })
    };
    let rendered = input(&d).unwrap().unwrap();
    assert_eq!(rendered.title, "Verdicts of demo (run)");
    assert_eq!(rendered.blocks[0], Block::Text("19 measurements".into()));
    let Block::Table(table) = &rendered.blocks[2] else {
        panic!("{rendered:?}");
    };
    assert_eq!(
        table.rows,
        [
            ["crash", "1"],
            ["discard", "1"],
            ["interesting", "1"],
            ["keep", "2"],
            ["pending", "1"],
        ]
    );
    d.candidates.clear();
    assert_eq!(input(&d).unwrap(), None);
}

/// Every call of the misbehaving provider in `mode`, as each capability, with its error.
fn errors(mode: &str) -> Vec<ProviderError> {
    let (command, _) = misbehaving(mode);
    let table = json!({"command": command, "timeout_s": 3});
    let (facts, fact_info) = facts();
    let d = data();
    let verdict = verdict_rule("exec", table.clone()).unwrap();
    let stop = stop_rule("exec", table.clone()).unwrap();
    let source = fact_source("exec", table.clone()).unwrap();
    let section = section("exec", table).unwrap();
    let input = SectionInput {
        data: &d,
        facts: &facts,
        fact_info: &fact_info,
        surface: Surface::Status,
    };
    vec![
        verdict.decide(&case()).unwrap_err(),
        stop.check(&stop_input(1.0, usd(1.0), false)).unwrap_err(),
        source.gather(&d, &["x".to_string()], 0.0).unwrap_err(),
        source.project(&d, "x").unwrap_err(),
        section.render(&input).unwrap_err(),
    ]
}

/// The messages of [`errors`], after checking each names the provider.
fn messages(mode: &str) -> Vec<String> {
    let (_, label) = misbehaving(mode);
    errors(mode)
        .into_iter()
        .map(|e| {
            assert_eq!(e.provider, label);
            assert!(e.to_string().starts_with(&format!("{label}: ")), "{e}");
            e.message
        })
        .collect()
}

#[test]
fn a_provider_that_exits_non_zero_fails_with_its_stderr() {
    for message in messages("exit") {
        assert_eq!(
            message,
            "exited with status 3; stderr: loading weights | Traceback: ZeroDivisionError: division by zero"
        );
    }
    for message in messages("signal") {
        assert_eq!(message, "was killed by signal 9");
    }
}

#[test]
fn a_provider_that_times_out_is_killed() {
    let (command, label) = misbehaving("timeout");
    let rule = verdict_rule("exec", json!({"command": command, "timeout_s": 2.5})).unwrap();
    let started = Instant::now();
    let error = rule.decide(&case()).unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        error.to_string(),
        format!("{label}: timed out after 2.5 s; stderr: thinking...")
    );
    assert!(
        messages("timeout")
            .iter()
            .all(|m| m == "timed out after 3 s; stderr: thinking...")
    );
}

#[test]
fn a_provider_that_prints_nonsense_or_nothing_fails() {
    for message in messages("nonsense") {
        assert!(
            message.starts_with("answered malformed JSON (expected value at line 1 column 1): hello, tally! the answer is 42; "),
            "{message}"
        );
    }
    for message in messages("silent") {
        assert!(
            message.starts_with("answered nothing on stdout; "),
            "{message}"
        );
    }
    for message in messages("envelope") {
        assert_eq!(
            message,
            "answered the wrong shape: expected {\"ok\": <result>} or {\"error\": \"<message>\"}, got {\"result\":1}"
        );
    }
}

#[test]
fn a_provider_error_is_passed_on() {
    for message in messages("error") {
        assert_eq!(message, "answered an error: threshold must be positive");
    }
}

#[test]
fn an_answer_of_the_wrong_shape_fails() {
    assert_eq!(
        messages("wrong-shape"),
        [
            "answered `decide` with the wrong shape: expected {\"outcome\": \"keep\"|\"interesting\"|\"discard\"|\"crash\", \"reason\": \"...\"}, got {\"verdict\":\"keep\"}",
            "answered `check` with the wrong shape: expected {\"go\": true}, {\"hold\": \"<reason>\"} or {\"stop\": \"<reason>\"}, got {\"continue\":true}",
            "answered `gather` with `x` = \"lots\", not a finite number",
            "answered `project` with the wrong shape: expected a finite number or null, got \"soon\"",
            "answered `render` with a table whose row 0 has 1 cells for 2 columns",
        ]
    );
    let (command, _) = misbehaving("pending");
    let rule = verdict_rule("exec", json!({"command": command})).unwrap();
    assert!(
        rule.decide(&case())
            .unwrap_err()
            .message
            .contains("got {\"outcome\":\"pending\"")
    );
}

#[test]
fn a_provider_that_cannot_describe_itself_is_a_config_problem() {
    let (command, label) = misbehaving("describe-fails");
    let problems = verdict_rule("exec", json!({"command": command}))
        .err()
        .unwrap();
    let shown = serde_json::to_string(&command).unwrap();
    assert_eq!(
        problems,
        [format!(
            "plugins.verdict_rule.command = {shown}: {label}: exited with status 2; stderr: no such model: gpt-17; \
             check that the command runs and answers `describe` for a verdict_rule (docs/plugins.md)"
        )]
    );
    let problems = stop_rule("exec", json!({"command": ["./no-such-provider"]}))
        .err()
        .unwrap();
    assert_eq!(problems.len(), 1);
    assert!(
        problems[0].starts_with(
            "plugins.stop_rule.command = [\"./no-such-provider\"]: exec ./no-such-provider: could not start `./no-such-provider`: No such file or directory"
        ),
        "{}",
        problems[0]
    );
}

#[test]
fn exec_parameters_are_checked_including_the_providers_own() {
    let (command, _) = misbehaving("required-param");
    let problems = verdict_rule(
        "exec",
        json!({"command": command, "params": {"treshold": 1}}),
    )
    .err()
    .unwrap();
    assert_eq!(
        problems,
        [
            "plugins.verdict_rule.params.treshold: unknown key; did you mean `threshold`?",
            "plugins.verdict_rule.params.threshold: missing required parameter: add `threshold = <number>` (a fraction)",
        ]
    );
    let problems = verdict_rule("exec", json!({"command": [], "timeout_s": 0}))
        .err()
        .unwrap();
    assert_eq!(
        problems,
        [
            "plugins.verdict_rule.command = []: expected a non-empty argv, e.g. [\"./my-provider.py\"]",
            "plugins.verdict_rule.timeout_s = 0: expected a number of seconds > 0 and at most 86400",
        ]
    );
    let problems = verdict_rule("exec", json!({})).err().unwrap();
    assert_eq!(
        problems,
        [
            "plugins.verdict_rule.command: missing required parameter: add `command = <list of strings>` (the argv to run, e.g. [\"./my-provider.py\", \"--flag\"] (no shell))"
        ]
    );
}

#[test]
fn the_example_in_docs_plugins_md_is_the_tested_script() {
    let docs = std::fs::read_to_string(format!(
        "{}/../../docs/plugins.md",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let start = docs.find("```python\n").expect("a python example") + "```python\n".len();
    let end = start + docs[start..].find("```\n").unwrap();
    let tested = std::fs::read_to_string(script("verdict_rule.py")).unwrap();
    assert_eq!(&docs[start..end], tested);
    // It answers every case, including a bar without a score.
    let rule = verdict_rule(
        "exec",
        json!({"command": working("verdict_rule.py"), "params": {"threshold": 0.05}}),
    )
    .unwrap();
    let mut no_bar = case();
    no_bar.bar.means.clear();
    let judgement = rule.decide(&no_bar).unwrap();
    assert_eq!(
        (judgement.outcome, judgement.reason.as_str()),
        (Verdict::Keep, "candidate#2 has no score")
    );
}
