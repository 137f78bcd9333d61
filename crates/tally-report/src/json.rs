//! The `sections` array of `tally status --json` (`docs/campaign.md#commands`):
//! `[{"provider", "title", "order", "blocks"}]`, blocks in the contract's serde form (`{"text":
//! ...}`, `{"list": [...]}`, `{"figures": [{"label", "value", "unit"}]}`, `{"table": {"columns":
//! [...], "rows": [[...]]}}`). A failed section keeps its place with its provider as the title,
//! one text block `<provider>: failed: <error>`, and an `error` field with the message.
//!
//! Keys print in alphabetical order at every level (`blocks`, `error`, `order`, `provider`,
//! `title`; a figure's `label`, `unit`, `value`), as they did when this array was built as a
//! `serde_json::Value`: the structs below declare their fields in that order.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::Value;
use tally_plugin::{Block, Figure, Table};

use crate::{SectionOutput, failed_line};

/// The sections as the JSON array of `tally status --json`; sections that rendered nothing are
/// left out.
pub fn json(sections: &[SectionOutput]) -> Value {
    serde_json::to_value(sections_json(sections)).expect("sections serialise")
}

/// The sections that rendered something or failed, in the order given, as their JSON objects.
pub(crate) fn sections_json(sections: &[SectionOutput]) -> Vec<SectionJson<'_>> {
    sections
        .iter()
        .filter_map(|section| match &section.result {
            Ok(None) => None,
            Ok(Some(rendered)) => Some(SectionJson {
                blocks: rendered.blocks.iter().map(BlockJson::from).collect(),
                error: None,
                order: section.order,
                provider: &section.provider,
                title: &rendered.title,
            }),
            Err(error) => Some(SectionJson {
                blocks: vec![BlockJson::Text(Cow::Owned(failed_line(
                    &section.provider,
                    error,
                )))],
                error: Some(error.to_string()),
                order: section.order,
                provider: &section.provider,
                title: &section.provider,
            }),
        })
        .collect()
}

/// One section of the array.
#[derive(Serialize)]
pub(crate) struct SectionJson<'a> {
    blocks: Vec<BlockJson<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    order: u32,
    provider: &'a str,
    title: &'a str,
}

/// A block in the contract's serde form (`tally_plugin::Block`), figure keys sorted.
#[derive(Serialize)]
#[serde(rename_all = "snake_case")]
enum BlockJson<'a> {
    Text(Cow<'a, str>),
    List(&'a [String]),
    Figures(Vec<FigureJson<'a>>),
    Table(&'a Table),
}

impl<'a> From<&'a Block> for BlockJson<'a> {
    fn from(block: &'a Block) -> Self {
        match block {
            Block::Text(text) => Self::Text(Cow::Borrowed(text)),
            Block::List(items) => Self::List(items),
            Block::Figures(figures) => {
                Self::Figures(figures.iter().map(FigureJson::from).collect())
            }
            // `{"columns", "rows"}`: the contract's own order is already alphabetical.
            Block::Table(table) => Self::Table(table),
        }
    }
}

/// `{"label", "unit", "value"}`.
#[derive(Serialize)]
struct FigureJson<'a> {
    label: &'a str,
    unit: &'a str,
    value: &'a str,
}

impl<'a> From<&'a Figure> for FigureJson<'a> {
    fn from(f: &'a Figure) -> Self {
        Self {
            label: &f.label,
            unit: &f.unit,
            value: &f.value,
        }
    }
}
