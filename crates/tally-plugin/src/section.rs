//! Capability `section`: a titled block of status or brief content (`docs/campaign.md#sections`), rendered
//! as a terminal table, JSON, or Markdown by the host — the section only returns structure.

use serde::{Deserialize, Serialize};

use crate::error::ProviderError;
use crate::fact::FactInfo;
use crate::registry::ProviderInfo;
use crate::view::{CampaignData, Facts};

/// Where a section is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Surface {
    /// `tally status`.
    Status,
    /// The implementer brief (`tally brief`).
    Run,
}

/// A `label: value unit` figure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Figure {
    /// What it is.
    pub label: String,
    /// The value, already formatted.
    pub value: String,
    /// Its unit (may be empty).
    pub unit: String,
}

/// A table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Table {
    /// Column headers.
    pub columns: Vec<String>,
    /// Rows of cells, each as long as `columns`.
    pub rows: Vec<Vec<String>>,
}

/// One block of a section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Block {
    /// A paragraph.
    Text(String),
    /// Bullet lines.
    List(Vec<String>),
    /// Figures.
    Figures(Vec<Figure>),
    /// A table (`{"table": {"columns": [...], "rows": [[...]]}}` in JSON).
    Table(Table),
}

/// A rendered section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Rendered {
    /// The title.
    pub title: String,
    /// The blocks, in order.
    pub blocks: Vec<Block>,
}

/// One section of a surface as the engine ran it: the provider's name and place, and what it
/// rendered (the input of every renderer in `tally-report`).
#[derive(Clone, Debug, PartialEq)]
pub struct SectionOutput {
    /// The provider's name as chosen (`latency`, `exec`).
    pub provider: String,
    /// Its place on the surface (`order` of its info; the list position for explicit lists).
    pub order: u32,
    /// What it rendered: blocks, nothing (`Ok(None)`: left out), or its failure.
    pub result: Result<Option<Rendered>, ProviderError>,
}

impl SectionOutput {
    /// A section that rendered `result`.
    pub fn new(
        provider: impl Into<String>,
        order: u32,
        result: Result<Option<Rendered>, ProviderError>,
    ) -> Self {
        Self {
            provider: provider.into(),
            order,
            result,
        }
    }
}

/// What a section renders from.
#[derive(Clone, Copy, Debug)]
pub struct SectionInput<'a> {
    /// The campaign.
    pub data: &'a CampaignData,
    /// Every fact the active sources supplied.
    pub facts: &'a Facts,
    /// What each supplied fact is (unit, description).
    pub fact_info: &'a [FactInfo],
    /// Where it will be shown.
    pub surface: Surface,
}

/// A section provider.
pub trait Section: Send + Sync {
    /// A title and blocks, or `None` when there is nothing to show.
    fn render(&self, input: &SectionInput<'_>) -> Result<Option<Rendered>, ProviderError>;

    /// What this built provider says about itself beyond its registry entry: an external
    /// provider's own name, doc, parameters, surfaces and order, learnt from its `describe`
    /// answer. `None` (the default) for built-ins, whose [`Entry::info`](crate::Entry) says it
    /// all.
    fn described(&self) -> Option<&ProviderInfo> {
        None
    }
}
