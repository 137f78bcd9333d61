//! The JSON of the external-provider protocol (`docs/campaign.md#external-providers`, `docs/plugins.md`): the
//! request envelope and each method's input, the response envelope, the `describe` answer, and
//! the checks that each method's result has its shape. Every mismatch is a one-line message
//! quoting what was received. Processes are `process`'s concern; deciding what to do with a
//! result is the capability impls'.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tally_model::Verdict;
use tally_plugin::{
    CampaignSummary, CandidateView, Capability, FactInfo, FactReading, Facts, Judgement,
    MeasurementView, MetricView, ParamSpec, Rendered, StopDecision, StopInput, Surface,
};

/// The protocol version every request carries.
pub(crate) const PROTOCOL: u32 = 1;

/// The envelope of every request.
#[derive(Serialize)]
pub(crate) struct Request<'a, I: Serialize> {
    pub(crate) protocol: u32,
    pub(crate) capability: Capability,
    pub(crate) method: &'a str,
    pub(crate) params: &'a Value,
    pub(crate) input: I,
}

/// The input of `gather` and `project` (fact sources) and `render` (sections): the campaign as
/// the in-process providers see it, plus the method's own fields.
#[derive(Serialize)]
pub(crate) struct CampaignInput<'a, X: Serialize> {
    pub(crate) campaign: &'a CampaignSummary,
    pub(crate) candidates: &'a [CandidateView],
    pub(crate) measurements: &'a [MeasurementView],
    #[serde(flatten)]
    pub(crate) extra: X,
}

/// `gather`'s own fields.
#[derive(Serialize)]
pub(crate) struct GatherFields<'a> {
    pub(crate) wanted: &'a [String],
    pub(crate) now: f64,
}

/// `project`'s own field.
#[derive(Serialize)]
pub(crate) struct ProjectFields<'a> {
    pub(crate) fact: &'a str,
}

/// `render`'s own fields.
#[derive(Serialize)]
pub(crate) struct RenderFields<'a> {
    pub(crate) facts: &'a Facts,
    pub(crate) surface: Surface,
}

/// `check`'s input: the wanted facts, flatter than the contract's [`StopInput`] so a script
/// reads `facts["runs"]["value"]`: each fact is `{"value": <number>, "projection": <number or
/// null>}`, or `{"error": "<why its source failed>"}`.
#[derive(Serialize)]
pub(crate) struct CheckInput<'a> {
    pub(crate) facts: BTreeMap<&'a str, Reading<'a>>,
    pub(crate) primary: &'a MetricView,
    pub(crate) in_flight: bool,
}

/// One fact as `check` receives it.
#[derive(Serialize)]
#[serde(untagged)]
pub(crate) enum Reading<'a> {
    /// The value and its projected growth.
    Value { value: f64, projection: Option<f64> },
    /// Its source failed.
    Failed { error: &'a str },
}

impl<'a> CheckInput<'a> {
    /// The wire form of `input`.
    pub(crate) fn new(input: &'a StopInput) -> Self {
        let facts = input
            .facts
            .iter()
            .map(|(name, reading)| {
                let reading = match reading {
                    FactReading::Value { value, projection } => Reading::Value {
                        value: *value,
                        projection: *projection,
                    },
                    FactReading::Failed(error) => Reading::Failed { error },
                };
                (name.as_str(), reading)
            })
            .collect();
        Self {
            facts,
            primary: &input.primary,
            in_flight: input.in_flight,
        }
    }
}

/// What a provider answers to `describe`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Description {
    pub(crate) name: String,
    pub(crate) doc: String,
    #[serde(default)]
    pub(crate) params: Vec<ParamSpec>,
    #[serde(default)]
    pub(crate) facts: Vec<FactInfo>,
    #[serde(default)]
    pub(crate) projects: Vec<String>,
    #[serde(default)]
    pub(crate) wants: Vec<String>,
    #[serde(default)]
    pub(crate) surfaces: Vec<Surface>,
    #[serde(default)]
    pub(crate) order: Option<u32>,
}

/// At most this many characters of a bad answer are quoted.
const QUOTE_CHARS: usize = 200;

/// A bad answer, quoted on one line and cut to a readable length.
pub(crate) fn quote(text: &str) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() > QUOTE_CHARS {
        let cut: String = one_line.chars().take(QUOTE_CHARS).collect();
        format!("{cut}…")
    } else {
        one_line
    }
}

/// The result of a response `{"ok": <result>}`; `{"error": "..."}` and anything else are
/// messages.
pub(crate) fn response(stdout: &[u8]) -> Result<Value, String> {
    let text = String::from_utf8_lossy(stdout);
    if text.trim().is_empty() {
        return Err(
            "answered nothing on stdout; a provider prints one JSON object, \
                    {\"ok\": <result>} or {\"error\": \"<message>\"}"
                .into(),
        );
    }
    let value: Value = serde_json::from_str(&text).map_err(|e| {
        format!(
            "answered malformed JSON ({e}): {}; a provider prints one JSON object and nothing else on stdout",
            quote(&text)
        )
    })?;
    if let Value::Object(map) = &value
        && map.len() == 1
    {
        if let Some(result) = map.get("ok") {
            return Ok(result.clone());
        }
        if let Some(message) = map.get("error").and_then(Value::as_str) {
            return Err(format!("answered an error: {message}"));
        }
    }
    Err(format!(
        "answered the wrong shape: expected {{\"ok\": <result>}} or {{\"error\": \"<message>\"}}, got {}",
        quote(&value.to_string())
    ))
}

/// The message for a result of the wrong shape.
fn wrong(method: &str, expected: &str, got: &Value) -> String {
    format!(
        "answered `{method}` with the wrong shape: expected {expected}, got {}",
        quote(&got.to_string())
    )
}

/// A `describe` result.
pub(crate) fn description(result: Value) -> Result<Description, String> {
    serde_json::from_value::<Description>(result.clone()).map_err(|e| {
        wrong(
            "describe",
            &format!("{{\"name\", \"doc\", \"params\", ...}} ({e})"),
            &result,
        )
    })
}

/// A `decide` result: `{"outcome": "keep"|"interesting"|"discard"|"crash", "reason": "..."}`.
pub(crate) fn judgement(result: Value) -> Result<Judgement, String> {
    const EXPECTED: &str =
        "{\"outcome\": \"keep\"|\"interesting\"|\"discard\"|\"crash\", \"reason\": \"...\"}";
    match serde_json::from_value::<Judgement>(result.clone()) {
        Ok(j) if j.outcome != Verdict::Pending => Ok(j),
        _ => Err(wrong("decide", EXPECTED, &result)),
    }
}

/// A `check` result: `{"go": true}`, `{"hold": "..."}` or `{"stop": "..."}`.
pub(crate) fn decision(result: Value) -> Result<StopDecision, String> {
    const EXPECTED: &str = "{\"go\": true}, {\"hold\": \"<reason>\"} or {\"stop\": \"<reason>\"}";
    if let Value::Object(map) = &result
        && map.len() == 1
    {
        match map.iter().next() {
            Some((key, Value::Bool(true))) if key == "go" => return Ok(StopDecision::Go),
            Some((key, Value::String(reason))) if key == "hold" => {
                return Ok(StopDecision::Hold(reason.clone()));
            }
            Some((key, Value::String(reason))) if key == "stop" => {
                return Ok(StopDecision::Stop(reason.clone()));
            }
            _ => {}
        }
    }
    Err(wrong("check", EXPECTED, &result))
}

/// A `gather` result: every wanted fact as a finite number (unwanted ones are dropped).
pub(crate) fn facts(result: Value, wanted: &[String]) -> Result<Facts, String> {
    let Value::Object(map) = &result else {
        return Err(wrong("gather", "{\"<fact>\": <number>, ...}", &result));
    };
    let mut facts = Facts::new();
    for name in wanted {
        match map.get(name) {
            Some(value) => match value.as_f64().filter(|x| x.is_finite()) {
                Some(x) => {
                    facts.insert(name.clone(), x);
                }
                None => {
                    return Err(format!(
                        "answered `gather` with `{name}` = {}, not a finite number",
                        quote(&value.to_string())
                    ));
                }
            },
            None => {
                return Err(format!(
                    "answered `gather` without the wanted fact `{name}`, got {}",
                    quote(&result.to_string())
                ));
            }
        }
    }
    Ok(facts)
}

/// A `project` result: a finite number, or null for no projection.
pub(crate) fn projection(result: Value) -> Result<Option<f64>, String> {
    match &result {
        Value::Null => Ok(None),
        Value::Number(n) => match n.as_f64().filter(|x| x.is_finite()) {
            Some(x) => Ok(Some(x)),
            None => Err(wrong("project", "a finite number or null", &result)),
        },
        _ => Err(wrong("project", "a finite number or null", &result)),
    }
}

/// A `render` result: null, or `{"title", "blocks"}` with every table row as long as its
/// columns.
pub(crate) fn rendered(result: Value) -> Result<Option<Rendered>, String> {
    const EXPECTED: &str = "null or {\"title\": \"...\", \"blocks\": [...]}";
    if result.is_null() {
        return Ok(None);
    }
    let rendered: Rendered = serde_json::from_value(result.clone())
        .map_err(|e| wrong("render", &format!("{EXPECTED} ({e})"), &result))?;
    for block in &rendered.blocks {
        if let tally_plugin::Block::Table(table) = block
            && let Some((i, row)) = table
                .rows
                .iter()
                .enumerate()
                .find(|(_, row)| row.len() != table.columns.len())
        {
            return Err(format!(
                "answered `render` with a table whose row {i} has {} cells for {} columns",
                row.len(),
                table.columns.len()
            ));
        }
    }
    Ok(Some(rendered))
}
