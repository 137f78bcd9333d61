//! Terminal text: each section as its title underlined, then its blocks — paragraphs and list
//! lines wrapped to [`WIDTH`] columns, figures as aligned `label: value unit` lines, tables drawn
//! by comfy-table at most [`WIDTH`] columns wide (long cells wrap inside their column). No
//! colour and no terminal detection: the output is the same on a terminal, in a pipe and in a
//! snapshot.

use comfy_table::{ContentArrangement, Table as Grid, presets};
use tally_plugin::{Block, Figure, Rendered, Table};

use crate::{SectionOutput, failed_line};

/// The widest line the terminal report prints.
pub const WIDTH: u16 = 100;

/// The sections as terminal text, separated by blank lines, ending with a newline (empty when
/// no section rendered anything).
pub fn terminal(sections: &[SectionOutput]) -> String {
    let mut parts = Vec::new();
    for section in sections {
        match &section.result {
            Ok(None) => {}
            Ok(Some(rendered)) => parts.push(render_section(rendered)),
            Err(error) => parts.push(failed_line(&section.provider, error)),
        }
    }
    if parts.is_empty() {
        return String::new();
    }
    let mut out = parts.join("\n\n");
    out.push('\n');
    out
}

fn render_section(rendered: &Rendered) -> String {
    let mut lines = vec![
        rendered.title.clone(),
        "─".repeat(rendered.title.chars().count().max(1)),
    ];
    for block in &rendered.blocks {
        match block {
            Block::Text(text) => lines.extend(wrap(text, "", "")),
            Block::List(items) => {
                for item in items {
                    lines.extend(wrap(item, "- ", "  "));
                }
            }
            Block::Figures(figures) => lines.extend(figure_lines(figures)),
            Block::Table(table) => lines.push(grid(table)),
        }
    }
    lines.join("\n")
}

/// `label: value unit`, values aligned after the longest label.
fn figure_lines(figures: &[Figure]) -> Vec<String> {
    let widest = figures
        .iter()
        .map(|f| f.label.chars().count())
        .max()
        .unwrap_or(0);
    figures
        .iter()
        .map(|f| {
            let pad = " ".repeat(widest - f.label.chars().count());
            let line = format!("{}: {pad}{} {}", f.label, f.value, f.unit);
            line.trim_end().to_string()
        })
        .collect()
}

fn grid(table: &Table) -> String {
    let mut grid = Grid::new();
    grid.load_style(presets::UTF8_FULL_CONDENSED)
        .force_no_tty()
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(WIDTH)
        .set_header(table.columns.clone());
    for row in &table.rows {
        grid.add_row(row.clone());
    }
    grid.to_string()
}

/// Word-wraps `text` to [`WIDTH`] columns: the first line after `first`, the rest after
/// `rest`. A word longer than a line stays whole.
fn wrap(text: &str, first: &str, rest: &str) -> Vec<String> {
    let width = usize::from(WIDTH);
    let mut lines = Vec::new();
    for paragraph in text.lines() {
        let mut line = if lines.is_empty() { first } else { rest }.to_string();
        let mut empty = true;
        for word in paragraph.split_whitespace() {
            let needed = line.chars().count() + usize::from(!empty) + word.chars().count();
            if !empty && needed > width {
                lines.push(std::mem::replace(&mut line, rest.to_string()));
                empty = true;
            }
            if !empty {
                line.push(' ');
            }
            line.push_str(word);
            empty = false;
        }
        lines.push(line);
    }
    if lines.is_empty() {
        lines.push(first.trim_end().to_string());
    }
    lines
}
