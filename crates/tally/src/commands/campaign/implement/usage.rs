//! What an implementer run cost (`docs/implementers.md#usage`): read once the run has ended from
//! the harness's own output in `stdout.log` — one reader per `[implementer] usage` format — or
//! from the JSON file the agent may write at `$TALLY_USAGE_FILE`. Only the last
//! [`TAIL_BYTES`] of the log are read (where every format puts its totals); a harness that
//! reports tokens but no USD is priced with `[implementer.prices."MODEL"]`. Nothing found is
//! `None`: an unknown cost, never a zero.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde_json::Value;
use tally_config::ImplementerSettings;
use tally_store::RunUsage;

/// The most of `stdout.log` that is read, from its end: 4 MiB.
pub const TAIL_BYTES: u64 = 4 << 20;

/// The most of `$TALLY_USAGE_FILE` that is read: 64 KiB.
const FILE_BYTES: u64 = 64 << 10;

/// The file the agent may write its usage to (`$TALLY_USAGE_FILE`).
pub fn usage_file(run_dir: &Path) -> PathBuf {
    run_dir.join("usage.json")
}

/// Counts one format read, before pricing.
#[derive(Debug, Default, PartialEq)]
struct Counts {
    input: Option<u64>,
    output: Option<u64>,
    cached: Option<u64>,
    usd: Option<f64>,
}

impl Counts {
    fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

fn add(total: &mut Option<u64>, n: Option<u64>) {
    if let Some(n) = n {
        *total = Some(total.unwrap_or(0) + n);
    }
}

fn add_usd(total: &mut Option<f64>, x: Option<f64>) {
    if let Some(x) = x {
        *total = Some(total.unwrap_or(0.0) + x);
    }
}

/// The run's usage: the configured format from `stdout.log`, else `$TALLY_USAGE_FILE`, priced
/// when it has tokens but no USD. `Err` names the usage file and what is wrong with it.
pub fn read(run_dir: &Path, settings: &ImplementerSettings) -> Result<Option<RunUsage>, String> {
    let format = settings.usage.as_str();
    if format == "none" {
        return Ok(None);
    }
    let from_log = if format == "file" {
        None
    } else {
        let text = tail(&run_dir.join("stdout.log"), TAIL_BYTES);
        Some(parse(format, &text)).filter(|c| !c.is_empty())
    };
    let (counts, source) = match from_log {
        Some(c) => (c, format),
        None => match read_file(&usage_file(run_dir))? {
            Some(c) => (c, "file"),
            None => return Ok(None),
        },
    };
    Ok(Some(priced(counts, source, settings)))
}

/// Adds the USD from `prices` when the counts have tokens but no USD.
fn priced(c: Counts, source: &str, settings: &ImplementerSettings) -> RunUsage {
    let (usd, usd_source) = match c.usd {
        Some(usd) => (
            Some(usd),
            Some(if source == "file" { "file" } else { "reported" }),
        ),
        None => {
            let price = settings.model.as_ref().and_then(|m| settings.prices.get(m));
            match (price, c.input.or(c.cached).or(c.output)) {
                (Some(p), Some(_)) => {
                    let n = |x: Option<u64>| x.unwrap_or(0) as f64 / 1e6;
                    (
                        Some(
                            n(c.input) * p.input
                                + n(c.cached) * p.cached_input
                                + n(c.output) * p.output,
                        ),
                        Some("priced"),
                    )
                }
                _ => (None, None),
            }
        }
    };
    RunUsage {
        input: c.input,
        output: c.output,
        cached: c.cached,
        usd,
        source: source.to_owned(),
        usd_source: usd_source.map(str::to_owned),
    }
}

/// The last `limit` bytes of a file as text (empty when it cannot be read).
fn tail(path: &Path, limit: u64) -> String {
    let Ok(mut file) = std::fs::File::open(path) else {
        return String::new();
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let start = len.saturating_sub(limit);
    if file.seek(SeekFrom::Start(start)).is_err() {
        return String::new();
    }
    let mut bytes = Vec::new();
    let _ = file.take(limit).read_to_end(&mut bytes);
    let text = String::from_utf8_lossy(&bytes).into_owned();
    if start > 0 {
        // The first line is cut: drop it.
        text.split_once('\n')
            .map(|(_, rest)| rest.to_owned())
            .unwrap_or_default()
    } else {
        text
    }
}

fn parse(format: &str, text: &str) -> Counts {
    match format {
        "claude" => claude(text),
        "codex" => codex(text),
        "gemini" => gemini(text),
        "aider" => aider(text),
        "pi" => pi(text),
        _ => Counts::default(),
    }
}

/// The JSON document the whole text is, else the last line that is a JSON object with `key`.
fn final_json(text: &str, key: &str) -> Option<Value> {
    if let Ok(v) = serde_json::from_str::<Value>(text.trim())
        && v.get(key).is_some()
    {
        return Some(v);
    }
    text.lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<Value>(l.trim()).ok())
        .find(|v| v.get(key).is_some())
}

fn jsonl(text: &str) -> impl Iterator<Item = Value> + '_ {
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l.trim()).ok())
}

fn uint(v: &Value, key: &str) -> Option<u64> {
    v.get(key).and_then(Value::as_u64)
}

/// `claude -p --output-format json`: the final object's `total_cost_usd` and `usage`
/// (`input_tokens` + `cache_creation_input_tokens` in, `cache_read_input_tokens` cached).
fn claude(text: &str) -> Counts {
    let Some(v) = final_json(text, "total_cost_usd").or_else(|| final_json(text, "usage")) else {
        return Counts::default();
    };
    let u = &v["usage"];
    let mut input = uint(u, "input_tokens");
    add(&mut input, uint(u, "cache_creation_input_tokens"));
    Counts {
        input,
        output: uint(u, "output_tokens"),
        cached: uint(u, "cache_read_input_tokens"),
        usd: v.get("total_cost_usd").and_then(Value::as_f64),
    }
}

/// `codex exec --json`: Σ `usage` of the `turn.completed` records (`input_tokens` counts the
/// `cached_input_tokens` too; they are taken out of it).
fn codex(text: &str) -> Counts {
    let mut c = Counts::default();
    for v in jsonl(text).filter(|v| v["type"] == "turn.completed") {
        let u = &v["usage"];
        let cached = uint(u, "cached_input_tokens");
        add(
            &mut c.input,
            uint(u, "input_tokens").map(|i| i.saturating_sub(cached.unwrap_or(0))),
        );
        add(&mut c.cached, cached);
        add(&mut c.output, uint(u, "output_tokens"));
    }
    c
}

/// `gemini --output-format json`: Σ over `stats.models.*.tokens` (`prompt` less `cached` in,
/// `candidates` + `thoughts` out).
fn gemini(text: &str) -> Counts {
    let mut c = Counts::default();
    let Some(v) = final_json(text, "stats") else {
        return c;
    };
    let Some(models) = v["stats"]["models"].as_object() else {
        return c;
    };
    for model in models.values() {
        let t = &model["tokens"];
        let cached = uint(t, "cached");
        add(
            &mut c.input,
            uint(t, "prompt").map(|p| p.saturating_sub(cached.unwrap_or(0))),
        );
        add(&mut c.cached, cached);
        add(&mut c.output, uint(t, "candidates"));
        add(&mut c.output, uint(t, "thoughts"));
    }
    c
}

/// `1234`, `3.0k`, `1.2M` as aider prints token counts.
fn aider_count(text: &str) -> Option<u64> {
    let text = text.trim().replace(',', "");
    let (digits, scale) = match text.chars().last()? {
        'k' | 'K' => (&text[..text.len() - 1], 1e3),
        'm' | 'M' => (&text[..text.len() - 1], 1e6),
        _ => (text.as_str(), 1.0),
    };
    let n: f64 = digits.parse().ok()?;
    (n >= 0.0).then(|| (n * scale).round() as u64)
}

/// aider's `Tokens: 3.0k sent, 1.2k cache write, 8.1k cache hit, 42 received. Cost: $0.01
/// message, $0.05 session.` lines: tokens summed over every line (each is one message), USD the
/// last line's session cost.
fn aider(text: &str) -> Counts {
    let mut c = Counts::default();
    for line in text.lines() {
        let Some(rest) = line.trim().strip_prefix("Tokens:") else {
            continue;
        };
        let (tokens, cost) = rest.split_once("Cost:").unwrap_or((rest, ""));
        for part in tokens.trim().trim_end_matches('.').split(',') {
            let part = part.trim();
            let Some((n, label)) = part.split_once(' ') else {
                continue;
            };
            let n = aider_count(n);
            match label.trim() {
                "sent" | "cache write" => add(&mut c.input, n),
                "cache hit" => add(&mut c.cached, n),
                "received" => add(&mut c.output, n),
                _ => {}
            }
        }
        let session = cost
            .split(',')
            .find(|p| p.contains("session"))
            .and_then(|p| p.trim().trim_start_matches('$').split(' ').next())
            .and_then(|x| x.parse::<f64>().ok());
        if session.is_some() {
            c.usd = session;
        }
    }
    c
}

/// `pi --mode json`: Σ `usage` of the assistant `message_end` records (`input` + `cacheWrite`
/// in, `cacheRead` cached, `cost.total` USD).
fn pi(text: &str) -> Counts {
    let mut c = Counts::default();
    for v in jsonl(text).filter(|v| v["type"] == "message_end") {
        let m = &v["message"];
        if m.get("role").is_some_and(|r| r != "assistant") {
            continue;
        }
        let u = &m["usage"];
        add(&mut c.input, uint(u, "input"));
        add(&mut c.input, uint(u, "cacheWrite"));
        add(&mut c.cached, uint(u, "cacheRead"));
        add(&mut c.output, uint(u, "output"));
        add_usd(&mut c.usd, u["cost"]["total"].as_f64());
    }
    c
}

/// `$TALLY_USAGE_FILE`: `{"input": N, "output": N, "cached": N, "usd": X}`, each key optional
/// but at least one present; counts whole numbers ≥ 0, `usd` a number ≥ 0.
fn read_file(path: &Path) -> Result<Option<Counts>, String> {
    if !path.exists() {
        return Ok(None);
    }
    let at = path.display();
    let size = path.metadata().map(|m| m.len()).unwrap_or(0);
    if size > FILE_BYTES {
        return Err(format!(
            "{at}: {size} bytes, more than the {FILE_BYTES} a usage file may have; write {{\"input\": N, \"output\": N, \"cached\": N, \"usd\": X}}"
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("{at}: cannot read: {e}"))?;
    let value: Value = serde_json::from_str(&text).map_err(|e| {
        format!(
            "{at}: not JSON ({e}); write {{\"input\": N, \"output\": N, \"cached\": N, \"usd\": X}}"
        )
    })?;
    let Some(object) = value.as_object() else {
        return Err(format!(
            "{at}: expected a JSON object such as {{\"input\": 1200, \"output\": 300, \"usd\": 0.02}}"
        ));
    };
    let mut c = Counts::default();
    for (key, v) in object {
        match key.as_str() {
            "input" | "output" | "cached" => {
                let n = v.as_u64().ok_or_else(|| {
                    format!("{at}: {key} = {v}: expected a whole number of tokens ≥ 0")
                })?;
                match key.as_str() {
                    "input" => c.input = Some(n),
                    "output" => c.output = Some(n),
                    _ => c.cached = Some(n),
                }
            }
            "usd" if v.is_null() => {}
            "usd" => {
                let x = v.as_f64().filter(|x| *x >= 0.0).ok_or_else(|| {
                    format!("{at}: usd = {v}: expected a number ≥ 0 (or null: unknown)")
                })?;
                c.usd = Some(x);
            }
            other => {
                return Err(format!(
                    "{at}: unknown key {other:?}; expected input, output, cached, usd"
                ));
            }
        }
    }
    Ok(Some(c))
}

#[cfg(test)]
mod tests {
    use super::{aider_count, tail};

    #[test]
    fn aider_counts_carry_their_scale() {
        assert_eq!(aider_count("3.0k"), Some(3000));
        assert_eq!(aider_count("1.25M"), Some(1_250_000));
        assert_eq!(aider_count("42"), Some(42));
        assert_eq!(aider_count("x"), None);
    }

    #[test]
    fn the_tail_drops_the_line_it_cuts() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        std::fs::write(&path, "first line\nsecond\nthird\n").unwrap();
        assert_eq!(tail(&path, 12), "third\n");
        assert_eq!(tail(&path, 1000), "first line\nsecond\nthird\n");
        assert_eq!(tail(&dir.path().join("missing"), 10), "");
    }
}
