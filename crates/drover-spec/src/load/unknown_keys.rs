//! Every unknown key of a spec, not only the first. serde stops at the first key a type
//! does not know, so after each one its entry is blanked out of the text — replaced by
//! spaces, so every other line and column stays where it was — and the text is parsed
//! again. Blanking takes away nothing but a key drover would refuse anyway, so what the
//! parser finds after it is as true of the file as written: the next unknown key, a
//! wrong type, a missing field (a misspelled key's right spelling is missing).
//!
//! An entry whose extent is not plain — the key not at the reported place (an alias, a
//! merged mapping), a flow collection left open — is not blanked: the search ends there,
//! with the errors found so far.

use serde_saphyr::Error as YamlError;

/// At most this many errors per file: a file of unrelated YAML is not parsed once per key.
pub(super) const MAX_ERRORS: usize = 50;

/// The unknown key of `error` and where it is written (line and column, from 1), if
/// `error` is about one.
pub(super) fn unknown_key(error: &YamlError) -> Option<(&str, u64, u64)> {
    let mut error = error;
    while let YamlError::AliasError { error: inner, .. }
    | YamlError::WithSnippet { error: inner, .. } = error
    {
        error = inner;
    }
    match error {
        YamlError::SerdeUnknownField {
            field, location, ..
        } => Some((field.as_str(), location.line(), location.column())),
        _ => None,
    }
}

/// `text` with the mapping entry of the key `field` written at `line`, `column` blanked out;
/// an entry that was its mapping's only one becomes `{}`, so the mapping stays a mapping.
/// None when the key is not written there, or where the entry ends is not plain.
pub(super) fn without_entry(text: &str, field: &str, line: u64, column: u64) -> Option<String> {
    let mut lines: Vec<Vec<char>> = text
        .split_inclusive('\n')
        .map(|line| line.chars().collect())
        .collect();
    let row = usize::try_from(line).ok()?.checked_sub(1)?;
    let start = usize::try_from(column).ok()?.checked_sub(1)?;
    let line = lines.get(row)?;
    let key_end = key_end(line, start, field)?;
    let prefix = &line[..start];
    if prefix.iter().all(|c| *c == ' ' || *c == '-') {
        blank_block_entry(&mut lines, row, start);
    } else if matches!(
        prefix.iter().rev().find(|c| !c.is_whitespace()),
        Some('{' | ',')
    ) {
        blank_flow_entry(&mut lines, row, key_end)?;
        blank(&mut lines[row][start..key_end]);
    } else {
        return None;
    }
    Some(lines.into_iter().flatten().collect())
}

/// Where the key `field` written at `start` of `line` ends (after a closing quote), if
/// it is written there and followed by its `:`.
fn key_end(line: &[char], start: usize, field: &str) -> Option<usize> {
    let field: Vec<char> = field.chars().collect();
    let quote = line.get(start).filter(|c| matches!(c, '"' | '\''));
    let name_start = start + usize::from(quote.is_some());
    let name_end = name_start + field.len();
    if line.get(name_start..name_end)? != field.as_slice() {
        return None;
    }
    let end = match quote {
        Some(quote) if line.get(name_end) == Some(quote) => name_end + 1,
        Some(_) => return None,
        None => name_end,
    };
    let colon = line[end..].iter().position(|c| *c != ' ')? + end;
    (line[colon] == ':').then_some(end)
}

/// Spaces for every character of `chars` but line breaks.
fn blank(chars: &mut [char]) {
    for c in chars.iter_mut().filter(|c| !matches!(c, '\n' | '\r')) {
        *c = ' ';
    }
}

/// How far a line is indented, or None for a line with nothing but spaces or a comment.
fn indent(line: &[char]) -> Option<usize> {
    let indent = line.iter().take_while(|c| **c == ' ').count();
    match line.get(indent) {
        None | Some('\n' | '\r' | '#') => None,
        Some(_) => Some(indent),
    }
}

/// Whether a line indented `at` starts a sequence item (`- x`, or `-` alone).
fn is_item(line: &[char], at: usize) -> bool {
    line.get(at) == Some(&'-') && matches!(line.get(at + 1), None | Some(' ' | '\n' | '\r'))
}

/// Blank the block mapping entry whose key starts at column `start` of line `row`: the
/// rest of that line and the lines below it that are indented further (or, a block
/// sequence being allowed at its key's indentation, items at the same indentation).
fn blank_block_entry(lines: &mut [Vec<char>], row: usize, start: usize) {
    let mut end = row + 1;
    while let Some(line) = lines.get(end) {
        match indent(line) {
            Some(at) if at < start || (at == start && !is_item(line, at)) => break,
            _ => end += 1,
        }
    }
    let alone = !has_sibling(lines, row, end, start);
    let line = &mut lines[row];
    let line_end = line
        .iter()
        .position(|c| matches!(c, '\n' | '\r'))
        .unwrap_or(line.len());
    blank(&mut line[start..line_end]);
    if alone && line_end >= start + 2 {
        line[start] = '{';
        line[start + 1] = '}';
    }
    for line in &mut lines[row + 1..end] {
        blank(line);
    }
}

/// Whether the mapping holding the entry at column `start` from line `row` to `end` has
/// another key: a line indented as far above it (back to where the mapping starts) or
/// below it (until a line indented less).
fn has_sibling(lines: &[Vec<char>], row: usize, end: usize, start: usize) -> bool {
    let key_at = |line: &Vec<char>| match indent(line) {
        Some(at) if at == start && !is_item(line, at) => Some(true),
        Some(at) if at < start => Some(false),
        _ => None,
    };
    let below = lines[end..].iter().find_map(key_at) == Some(true);
    // A key written after `- ` opens its mapping: nothing above it belongs to it.
    let opens_item = lines[row][..start].contains(&'-');
    let above = !opens_item && lines[..row].iter().rev().find_map(key_at) == Some(true);
    below || above
}

/// Blank the value of a flow mapping entry whose key ends at `key_end` of line `row`, up
/// to and with the `,` that ends it, or up to the `}` that closes its mapping; None when
/// neither comes.
fn blank_flow_entry(lines: &mut [Vec<char>], row: usize, key_end: usize) -> Option<()> {
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    let mut previous = ' ';
    let mut column = key_end;
    for line in &mut lines[row..] {
        let mut at = column;
        let mut comment = false;
        while at < line.len() {
            let c = line[at];
            let ends = match (quote, c) {
                _ if comment => false,
                (Some('"'), '\\') => {
                    // An escape: the next character is part of the string.
                    line[at] = ' ';
                    at += 1;
                    false
                }
                (Some(open), _) if c == open => {
                    quote = None;
                    false
                }
                (Some(_), _) => false,
                (None, '"' | '\'') => {
                    quote = Some(c);
                    false
                }
                (None, '#') if previous.is_whitespace() => {
                    comment = true;
                    false
                }
                (None, '{' | '[') => {
                    depth += 1;
                    false
                }
                (None, '}' | ']') if depth == 0 => return Some(()),
                (None, '}' | ']') => {
                    depth -= 1;
                    false
                }
                (None, ',') if depth == 0 => true,
                _ => false,
            };
            previous = c;
            if let Some(c) = line.get_mut(at).filter(|c| !matches!(c, '\n' | '\r')) {
                *c = ' ';
            }
            if ends {
                return Some(());
            }
            at += 1;
        }
        previous = ' ';
        column = 0;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The entry of `field` blanked, found by its first `field:` in `text`.
    fn without(text: &str, field: &str) -> Option<String> {
        let (row, line) = text
            .lines()
            .enumerate()
            .find(|(_, line)| line.contains(&format!("{field}:")))
            .unwrap();
        let column = line[..line.find(field).unwrap()].chars().count();
        without_entry(text, field, row as u64 + 1, column as u64 + 1)
    }

    #[test]
    fn a_block_entry_goes_with_its_children_and_keeps_every_position() {
        let text = "a: 1\nbogus:\n  x: [1,\n    2]\n  y: |\n    text\nb: 2\n";
        let out = without(text, "bogus").unwrap();
        assert_eq!(out.lines().count(), text.lines().count());
        assert_eq!(out.lines().next(), Some("a: 1"));
        assert_eq!(out.lines().last(), Some("b: 2"));
        assert!(
            out.lines().skip(1).take(5).all(|l| l.trim().is_empty()),
            "{out:?}"
        );
    }

    #[test]
    fn a_block_sequence_at_the_keys_indentation_goes_too() {
        let out = without("bogus:\n- a\n- b\nc: 1\n", "bogus").unwrap();
        assert_eq!(out, "      \n   \n   \nc: 1\n");
        let out = without("- bogus:\n  - a\n  name: x\n- name: y\n", "bogus").unwrap();
        assert_eq!(out, "-       \n     \n  name: x\n- name: y\n");
    }

    #[test]
    fn the_only_entry_of_a_mapping_leaves_an_empty_mapping() {
        assert_eq!(
            without("limits:\n  bogus: 1\nb: 2\n", "bogus").unwrap(),
            "limits:\n  {}      \nb: 2\n"
        );
        assert_eq!(
            without("a:\n  - bogus: 1\n", "bogus").unwrap(),
            "a:\n  - {}      \n"
        );
    }

    #[test]
    fn a_flow_entry_goes_with_its_comma() {
        let entry = "bogus: [1, {x: \"}\"}],";
        let text = format!("m: {{ a: 1, {entry} b: 2 }}\n");
        assert_eq!(
            without(&text, "bogus").unwrap(),
            text.replace(entry, &" ".repeat(entry.len()))
        );
        assert_eq!(
            without("m: {bogus: 'it''s'}\n", "bogus").unwrap(),
            format!("m: {{{}}}\n", " ".repeat("bogus: 'it''s'".len()))
        );
        assert_eq!(without("m: {bogus: [1\n", "bogus"), None);
    }

    #[test]
    fn a_key_not_written_at_the_place_is_left_alone() {
        assert_eq!(without_entry("a: 1\n", "bogus", 1, 1), None);
        assert_eq!(without_entry("bogusx: 1\n", "bogus", 1, 1), None);
        assert!(without_entry("\"bogus\": 1\n", "bogus", 1, 1).is_some());
    }
}
