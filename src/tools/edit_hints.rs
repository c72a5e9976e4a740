//! Diagnosing a failed Edit: when old_string is not in the file, say why in a way the
//! model can act on (a pasted Read line-number prefix, or whitespace that differs).

/// If every non-empty line of `s` starts with a Read line-number prefix (optional spaces,
/// digits, a TAB), `s` without those prefixes.
pub fn strip_line_number_prefixes(s: &str) -> Option<String> {
    let mut any = false;
    let mut out = Vec::new();
    for line in s.split('\n') {
        if line.trim().is_empty() {
            out.push(line);
            continue;
        }
        let rest = line.trim_start_matches(' ');
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits == 0 {
            return None;
        }
        let after = &rest[digits..];
        let stripped = after
            .strip_prefix('\t')
            .or_else(|| after.strip_prefix('→'))?;
        any = true;
        out.push(stripped);
    }
    any.then(|| out.join("\n"))
}

/// Collapse every run of whitespace to one space and trim the ends.
fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The text in `content` that equals `wanted` except for whitespace (indentation, spaces,
/// line breaks inside lines), as whole lines of the file. None when nothing matches.
pub fn whitespace_insensitive_match(content: &str, wanted: &str) -> Option<String> {
    let target = squash(wanted);
    if target.is_empty() {
        return None;
    }
    let lines: Vec<&str> = content.split('\n').collect();
    let wanted_lines = wanted.trim().split('\n').count().max(1);
    // Try windows of the same number of lines first, then one line more or less (a line
    // break added or removed by the model).
    for span in [
        wanted_lines,
        wanted_lines + 1,
        wanted_lines.saturating_sub(1),
    ] {
        if span == 0 || span > lines.len() {
            continue;
        }
        for start in 0..=lines.len() - span {
            let window = lines[start..start + span].join("\n");
            let squashed = squash(&window);
            let hit = if span == 1 {
                squashed.contains(&target)
            } else {
                squashed == target
            };
            if hit {
                return Some(
                    lines[start..start + span]
                        .iter()
                        .map(|l| l.strip_suffix('\r').unwrap_or(l))
                        .collect::<Vec<_>>()
                        .join("\n"),
                );
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_read_prefixes() {
        assert_eq!(
            strip_line_number_prefixes("12\tfn a() {\n13\t    x\n").as_deref(),
            Some("fn a() {\n    x\n")
        );
        assert_eq!(
            strip_line_number_prefixes("     7→let x = 1;").as_deref(),
            Some("let x = 1;")
        );
        assert_eq!(strip_line_number_prefixes("let x = 1;"), None);
        assert_eq!(strip_line_number_prefixes("12\tok\nplain"), None);
    }

    #[test]
    fn finds_text_differing_only_in_whitespace() {
        let content = "fn main() {\n        let x  = 1;\n    y();\n}\n";
        assert_eq!(
            whitespace_insensitive_match(content, "let x = 1;\ny();").as_deref(),
            Some("        let x  = 1;\n    y();")
        );
        assert_eq!(
            whitespace_insensitive_match(content, "let x = 1;").as_deref(),
            Some("        let x  = 1;")
        );
        assert_eq!(whitespace_insensitive_match(content, "z();"), None);
    }
}
