//! `drover validate --show-merged`: a spec as it runs, merged with its directory's
//! defaults, every key and item with its value and the file, line and column it was
//! written at, so where a setting comes from is never a guess.

use std::path::Path;

use serde_saphyr::Location;

use super::merged::{Merged, MergedValue, Source, merge};
use super::tree::read_tree;
use crate::load::LoadedSpec;
use crate::load::error::{Position, SpecError};

/// The widest a value is shown: the rest is cut with `…` (prompts, scripts).
const MAX_VALUE_CHARS: usize = 60;
/// Positions are lined up after the longest line up to this width.
const MAX_ALIGN: usize = 56;

/// The lines that show `loaded` merged: a heading naming the spec and its defaults
/// file, then each key and item, `key: value  (file:line:column)`.
pub fn merged_view(loaded: &LoadedSpec) -> Result<Vec<String>, SpecError> {
    let own = read_tree(&loaded.path, &loaded.text)?;
    let defaults = loaded.defaults.as_ref();
    let merged = merge(&own, defaults.map(|d| &d.tree));
    let heading = match defaults {
        Some(defaults) => format!(
            "{}: task {}, with the defaults of {}",
            loaded.path.display(),
            loaded.name(),
            defaults.path.display()
        ),
        None => format!(
            "{}: task {} (no defaults file beside it)",
            loaded.path.display(),
            loaded.name()
        ),
    };
    let files = (loaded.path.as_path(), defaults.map(|d| d.path.as_path()));
    let mut lines = Vec::new();
    if let MergedValue::Map(entries) = &merged.value {
        for (key, value) in entries {
            entry("  ", key, value, &mut lines);
        }
    }
    let width = lines
        .iter()
        .map(|line| line.text.chars().count())
        .max()
        .unwrap_or(0)
        .min(MAX_ALIGN);
    let mut shown = vec![heading];
    shown.extend(lines.into_iter().map(|line| {
        format!(
            "{:<width$}  ({})",
            line.text,
            where_written(files, line.source, line.at)
        )
    }));
    Ok(shown)
}

/// One line before its position is added.
struct Line {
    text: String,
    source: Source,
    at: Location,
}

fn where_written(files: (&Path, Option<&Path>), source: Source, at: Location) -> Position {
    let path = match (source, files.1) {
        (Source::Defaults, Some(defaults)) => defaults,
        _ => files.0,
    };
    Position::at(path, Some(at))
}

/// `key: value` at `lead` (its indentation, and `- ` for the first key of a list item),
/// and what is below it.
fn entry(lead: &str, key: &str, value: &Merged, lines: &mut Vec<Line>) {
    let below = " ".repeat(lead.chars().count() + 2);
    let (text, children) = match &value.value {
        MergedValue::Scalar(text) => (format!("{lead}{key}: {}", shown(text)), None),
        MergedValue::Map(entries) if entries.is_empty() => (format!("{lead}{key}: {{}}"), None),
        MergedValue::Seq(items) if items.is_empty() => (format!("{lead}{key}: []"), None),
        _ => (format!("{lead}{key}:"), Some(&value.value)),
    };
    lines.push(Line {
        text,
        source: value.source,
        at: value.at,
    });
    match children {
        Some(MergedValue::Map(entries)) => {
            for (key, child) in entries {
                entry(&below, key, child, lines);
            }
        }
        Some(MergedValue::Seq(items)) => {
            for child in items {
                item(&below, child, lines);
            }
        }
        _ => {}
    }
}

/// A list item at indentation `pad`: `- value`, or a mapping whose first key follows
/// the dash.
fn item(pad: &str, value: &Merged, lines: &mut Vec<Line>) {
    let line = |text: String| Line {
        text,
        source: value.source,
        at: value.at,
    };
    match &value.value {
        MergedValue::Scalar(text) => lines.push(line(format!("{pad}- {}", shown(text)))),
        MergedValue::Map(entries) if !entries.is_empty() => {
            for (index, (key, child)) in entries.iter().enumerate() {
                let lead = if index == 0 {
                    format!("{pad}- ")
                } else {
                    format!("{pad}  ")
                };
                entry(&lead, key, child, lines);
            }
        }
        MergedValue::Map(_) => lines.push(line(format!("{pad}- {{}}"))),
        MergedValue::Seq(items) => {
            lines.push(line(format!("{pad}-")));
            for child in items {
                item(&format!("{pad}  "), child, lines);
            }
        }
    }
}

/// A scalar on one line: its first line, at most [`MAX_VALUE_CHARS`] characters, `…`
/// where it was cut; `""` for the empty string.
fn shown(text: &str) -> String {
    if text.is_empty() {
        return "\"\"".to_string();
    }
    let first = text.lines().next().unwrap_or_default();
    let mut out: String = first.chars().take(MAX_VALUE_CHARS).collect();
    if out.len() < text.trim_end().len() {
        out.push('…');
    }
    out
}
