//! Markdown for implementer briefs: each section as a `## <title>` heading, then its blocks
//! separated by blank lines — paragraphs as they are, lists as `- ` lines, figures as
//! `- label: value unit` lines, tables as GitHub pipe tables (`|` in a cell escaped, line breaks
//! turned into spaces). No HTML, no front matter; the brief around the sections is the caller's.

use tally_plugin::{Block, Figure, Rendered, Table};

use crate::{SectionOutput, failed_line};

/// The sections as Markdown, separated by blank lines, ending with a newline (empty when no
/// section rendered anything).
pub fn markdown(sections: &[SectionOutput]) -> String {
    let mut parts = Vec::new();
    for section in sections {
        match &section.result {
            Ok(None) => {}
            Ok(Some(rendered)) => parts.push(render_section(rendered)),
            Err(error) => parts.push(escape_text(&failed_line(&section.provider, error))),
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
    let mut parts = vec![format!("## {}", one_line(&rendered.title))];
    for block in &rendered.blocks {
        parts.push(match block {
            Block::Text(text) => text.trim_end().to_string(),
            Block::List(items) => items
                .iter()
                .map(|item| format!("- {}", one_line(item)))
                .collect::<Vec<_>>()
                .join("\n"),
            Block::Figures(figures) => figures
                .iter()
                .map(|f| format!("- {}", figure(f)))
                .collect::<Vec<_>>()
                .join("\n"),
            Block::Table(table) => pipe_table(table),
        });
    }
    parts.join("\n\n")
}

fn figure(f: &Figure) -> String {
    let line = format!("{}: {} {}", f.label, f.value, f.unit);
    one_line(line.trim_end())
}

fn pipe_table(table: &Table) -> String {
    let row = |cells: &[String]| {
        let cells: Vec<String> = cells.iter().map(|c| cell(c)).collect();
        format!("| {} |", cells.join(" | "))
    };
    let mut lines = vec![row(&table.columns)];
    lines.push(format!("|{}|", vec!["---"; table.columns.len()].join("|")));
    lines.extend(table.rows.iter().map(|r| row(r)));
    lines.join("\n")
}

/// A cell: one line, `|` escaped, never empty (an empty cell would still render, but a space
/// keeps the pipes readable).
fn cell(text: &str) -> String {
    one_line(text).replace('|', "\\|")
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A line of plain text that must not turn into a heading or a list by accident.
fn escape_text(text: &str) -> String {
    match text.chars().next() {
        Some('#' | '-' | '*' | '+' | '>') => format!("\\{text}"),
        _ => text.to_string(),
    }
}
