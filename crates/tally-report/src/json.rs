//! The `sections` array of `tally status --json` (`docs/campaign.md#commands`):
//! `[{"provider", "title", "order", "blocks"}]`, blocks in the contract's serde form (`{"text":
//! ...}`, `{"list": [...]}`, `{"figures": [{"label", "value", "unit"}]}`, `{"table": {"columns":
//! [...], "rows": [[...]]}}`). A failed section keeps its place with its provider as the title,
//! one text block `<provider>: failed: <error>`, and an `error` field with the message.

use serde_json::{Value, json};
use tally_plugin::Block;

use crate::{SectionOutput, failed_line};

/// The sections as the JSON array of `tally status --json`; sections that rendered nothing are
/// left out.
pub fn json(sections: &[SectionOutput]) -> Value {
    let items = sections
        .iter()
        .filter_map(|section| match &section.result {
            Ok(None) => None,
            Ok(Some(rendered)) => Some(json!({
                "provider": section.provider,
                "title": rendered.title,
                "order": section.order,
                "blocks": rendered.blocks,
            })),
            Err(error) => Some(json!({
                "provider": section.provider,
                "title": section.provider,
                "order": section.order,
                "blocks": [Block::Text(failed_line(&section.provider, error))],
                "error": error.to_string(),
            })),
        })
        .collect();
    Value::Array(items)
}
