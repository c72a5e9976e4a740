//! Markdown files with a YAML front matter — Claude Code's agent files, Agent Skills'
//! `SKILL.md` — split into the front matter and the body, and the front matter parsed
//! with its errors placed in the file (not in the YAML alone).

use serde::de::DeserializeOwned;

/// What keeps a file from having a front matter.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrontMatterError {
    #[error("the file does not start with a `---` front matter")]
    Missing,
    #[error("the front matter has no closing `---` line")]
    Unclosed,
}

/// A front matter that does not parse: where in the file (1-based line and column, the
/// opening `---` being line 1) and what, in the parser's words (never the text it
/// quotes: the file may not be what its name says, and errors reach CI logs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Invalid {
    pub at: Option<(u64, u64)>,
    pub message: String,
}

/// The YAML between the opening and closing `---` lines, and the body after them
/// (leading blank lines and trailing whitespace removed). A byte-order mark is skipped.
pub(crate) fn split(text: &str) -> Result<(&str, &str), FrontMatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or(FrontMatterError::Missing)?;
    // An empty front matter closes on the very next line.
    let (yaml, after) = if let Some(after) = rest.strip_prefix("---") {
        ("", after)
    } else {
        let end = rest.find("\n---").ok_or(FrontMatterError::Unclosed)?;
        let (yaml, after) = rest.split_at(end);
        (yaml, &after["\n---".len()..])
    };
    // The closing line is `---` alone (trailing spaces allowed).
    let after = match after.find('\n') {
        Some(newline) if after[..newline].trim().is_empty() => &after[newline + 1..],
        None if after.trim().is_empty() => "",
        _ => return Err(FrontMatterError::Unclosed),
    };
    let body = after.trim_start_matches(['\r', '\n']).trim_end();
    Ok((yaml, body))
}

/// Parse `yaml` (a front matter [`split`] returned) as `T`.
pub(crate) fn parse<T: DeserializeOwned>(yaml: &str) -> Result<T, Invalid> {
    serde_saphyr::from_str(yaml).map_err(|e| {
        // The YAML's line 1 is the file's line 2 (after the opening `---`).
        let at = e.location().map(|l| (l.line() + 1, l.column()));
        let message = e.without_snippet().to_string();
        let first = message.lines().next().unwrap_or_default();
        let first = first.find(" at line ").map_or(first, |i| &first[..i]);
        Invalid {
            at,
            message: first.to_string(),
        }
    })
}

/// What [`parse_lenient`] says when it read the front matter line by line.
pub(crate) const READ_LINE_BY_LINE: &str = "the front matter is not valid YAML (a value holds `: ` or another YAML sign); each `key: value` line was read with its value as plain text, as Claude Code reads it (quote the value to make it valid YAML)";

/// Parse `yaml` as `T`; when that fails, read it again with each top-level
/// `key: value` line's value as text (Claude Code's agent and skill files often hold a
/// plain `description:` with `: ` in it, which YAML refuses and Claude Code reads). The
/// flag says whether that second reading was needed; the error is the first reading's.
pub(crate) fn parse_lenient<T: DeserializeOwned>(yaml: &str) -> Result<(T, bool), Invalid> {
    let strict = match parse(yaml) {
        Ok(value) => return Ok((value, false)),
        Err(invalid) => invalid,
    };
    match quoted_lines(yaml).and_then(|quoted| parse(&quoted).ok()) {
        Some(value) => Ok((value, true)),
        None => Err(strict),
    }
}

/// `yaml` with each top-level `key: value` line whose plain value holds what YAML reads
/// as structure (`: `, ` #`) written with that value as a quoted string, the indented
/// lines that continue it (not list items) joined to it; other lines as they stand.
fn quoted_lines(yaml: &str) -> Option<String> {
    let lines: Vec<&str> = yaml.lines().collect();
    let continues =
        |line: &str| line.starts_with([' ', '\t']) && !line.trim_start().starts_with("- ");
    let mut out = String::with_capacity(yaml.len() + 64);
    let mut index = 0;
    while index < lines.len() {
        let line = lines[index];
        index += 1;
        let Some((key, value)) = plain_entry(line) else {
            out.push_str(line);
            out.push('\n');
            continue;
        };
        // ` #` starts a comment, as in YAML: it is not part of the value.
        let value = value.find(" #").map_or(value, |at| &value[..at]);
        let mut value = value.trim().to_string();
        // Indented lines, and blank lines before more of them, continue the value.
        while let Some(next) = lines.get(index) {
            let blank_then_more = next.trim().is_empty()
                && lines[index..]
                    .iter()
                    .find(|l| !l.trim().is_empty())
                    .is_some_and(|l| continues(l));
            if !(continues(next) || blank_then_more) {
                break;
            }
            if !next.trim().is_empty() {
                value.push('\n');
                value.push_str(next.trim());
            }
            index += 1;
        }
        if !(value.contains(": ") || value.contains('\n')) {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        let text = serde_json::to_string(&value).ok()?;
        out.push_str(&format!("{key}: {text}\n"));
    }
    Some(out)
}

/// A top-level `key: value` line whose value is plain text (not quoted, not a
/// collection or block), as key and value.
fn plain_entry(line: &str) -> Option<(&str, &str)> {
    line.split_once(':').filter(|(key, value)| {
        !key.is_empty()
            && key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            && value.starts_with(' ')
            && !value.trim().is_empty()
            && !value
                .trim_start()
                .starts_with(['"', '\'', '[', '{', '|', '>', '&', '*', '!', '#'])
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    struct Front {
        name: String,
        description: String,
        #[serde(default)]
        tools: Option<Vec<String>>,
    }

    #[derive(Debug, serde::Deserialize)]
    struct FrontMatterWithList {
        tools: String,
    }

    #[test]
    fn a_plain_value_holding_a_colon_is_read_as_claude_code_reads_it() {
        let yaml = "name: reviewer\ndescription: Use this agent when: the code changed. Examples: <example>Context: x</example>\ntools:\n  - Read\n  - Grep";
        let (front, lenient): (Front, bool) = parse_lenient(yaml).unwrap();
        assert!(lenient);
        assert_eq!(front.name, "reviewer");
        assert_eq!(
            front.description,
            "Use this agent when: the code changed. Examples: <example>Context: x</example>"
        );
        assert_eq!(front.tools, Some(vec!["Read".to_string(), "Grep".into()]));
        let (front, lenient): (Front, bool) =
            parse_lenient("name: a\ndescription: \"quoted: fine\"").unwrap();
        assert!(!lenient);
        assert_eq!(front.description, "quoted: fine");
        // Indented lines continue the value; list items stay a list.
        let yaml =
            "name: a\ndescription: Use it: now.\n\n  <example>x: y</example>\ntools:\n  - Read";
        let (front, _): (Front, bool) = parse_lenient(yaml).unwrap();
        assert_eq!(front.description, "Use it: now.\n<example>x: y</example>");
        assert_eq!(front.tools, Some(vec!["Read".to_string()]));
        // A comment stays a comment: a list keeps its meaning.
        let yaml =
            "name: a\ndescription: Use it when: x\ntools: Read, Bash # read-only: never writes";
        let (front, _): (FrontMatterWithList, bool) = parse_lenient(yaml).unwrap();
        assert_eq!(front.tools, "Read, Bash");
        // What line-by-line reading cannot fix stays the first reading's error.
        let error = parse_lenient::<Front>("name: [a\ndescription: b").unwrap_err();
        assert!(error.at.is_some(), "{error:?}");
    }

    #[test]
    fn the_front_matter_and_the_body_come_apart() {
        let (yaml, body) = split("---\nname: x\n---\n\nBody.\n\nMore.\n").unwrap();
        assert_eq!(yaml, "name: x");
        assert_eq!(body, "Body.\n\nMore.");
        let (yaml, body) = split("\u{feff}---\r\nname: x\r\n---\r\nBody\r\n").unwrap();
        assert_eq!(yaml.trim_end(), "name: x");
        assert_eq!(body, "Body");
        assert_eq!(split("---\n---\nBody").unwrap(), ("", "Body"));
        assert_eq!(split("---\nname: x\n---").unwrap(), ("name: x", ""));
    }

    #[test]
    fn a_file_without_one_says_so() {
        assert_eq!(split("Body"), Err(FrontMatterError::Missing));
        assert_eq!(split("---\nname: x\n"), Err(FrontMatterError::Unclosed));
        assert_eq!(
            split("---\nname: x\n---more\nBody"),
            Err(FrontMatterError::Unclosed)
        );
    }

    #[test]
    fn a_parse_error_is_placed_in_the_file() {
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Front {
            name: String,
        }
        let error = parse::<Front>("name: [a\n").unwrap_err();
        assert!(error.at.is_some(), "{error:?}");
        let error = parse::<Front>("other: 1\n").unwrap_err();
        assert!(error.message.contains("name"), "{error:?}");
    }
}
