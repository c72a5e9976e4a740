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

#[cfg(test)]
mod tests {
    use super::*;

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
