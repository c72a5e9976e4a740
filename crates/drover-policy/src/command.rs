//! Matching one simple command (as the shell analyser splits a command line) against a
//! `Bash(...)` pattern.

use regex::Regex;

/// A `Bash(...)` pattern, compiled once when the rule is parsed: `*` matches any
/// characters, a trailing ` *` also matches nothing (a word boundary: `ls *` matches
/// `ls -la` and `ls`, not `lsof`), and the legacy `prefix:*` means `prefix *`.
#[derive(Debug, Clone)]
pub struct CommandPattern {
    source: String,
    regex: Regex,
}

impl PartialEq for CommandPattern {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
    }
}

impl Eq for CommandPattern {}

impl CommandPattern {
    /// Compile a `Bash(...)` pattern; the error is the regex compiler's (a pattern too
    /// large to compile).
    pub fn new(pattern: &str) -> Result<Self, regex::Error> {
        let expanded = match pattern.strip_suffix(":*") {
            Some(prefix) => format!("{prefix} *"),
            None => pattern.to_string(),
        };
        let (body, word_tail) = match expanded.strip_suffix(" *") {
            Some(body) => (body, true),
            None => (expanded.as_str(), false),
        };
        let mut regex = String::from("^");
        for (index, part) in body.split('*').enumerate() {
            if index > 0 {
                regex.push_str(".*");
            }
            regex.push_str(&regex::escape(&normalize_spaces(part)));
        }
        if word_tail {
            regex.push_str("(?: .*)?");
        }
        regex.push('$');
        let regex = Regex::new(&regex)?;
        Ok(CommandPattern {
            source: pattern.to_string(),
            regex,
        })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Does the simple command (its words joined by single spaces) match?
    pub fn matches(&self, command: &str) -> bool {
        self.regex.is_match(&normalize_spaces(command))
    }

    /// Whether this is a pattern without wildcards whose text is `source`, the command
    /// as written: `Bash(echo "Exit: $?")` allows exactly that command, quotes and all.
    pub fn is_exactly(&self, source: &str) -> bool {
        !self.source.contains('*') && normalize_spaces(&self.source) == normalize_spaces(source)
    }
}

/// One-off matching (tests, tools): compiles the pattern each time.
#[cfg(test)]
pub fn matches(pattern: &str, command: &str) -> bool {
    CommandPattern::new(pattern).is_ok_and(|p| p.matches(command))
}

fn normalize_spaces(text: &str) -> String {
    let leading = text.starts_with(' ');
    let trailing = text.ends_with(' ') && text.trim() != "";
    let mut out = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if leading && !out.is_empty() {
        out.insert(0, ' ');
    }
    if trailing {
        out.push(' ');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailing_star_is_a_word_boundary() {
        assert!(matches("ls *", "ls -la"));
        assert!(matches("ls *", "ls"));
        assert!(!matches("ls *", "lsof"));
        assert!(matches("cargo test *", "cargo test --quiet"));
        assert!(!matches("cargo test *", "cargo build"));
    }

    #[test]
    fn legacy_colon_star_means_the_same() {
        assert!(matches("cargo test:*", "cargo test --quiet"));
        assert!(matches("cargo test:*", "cargo test"));
        assert!(!matches("cargo test:*", "cargo testx"));
    }

    #[test]
    fn an_exact_pattern_is_the_command_as_written() {
        let pattern = CommandPattern::new(r#"echo "Exit: $?""#).unwrap();
        assert!(pattern.is_exactly(r#"echo  "Exit: $?""#));
        assert!(!pattern.is_exactly(r#"echo "Exit: $?" > out"#));
        let wild = CommandPattern::new("echo *").unwrap();
        assert!(!wild.is_exactly("echo *"));
    }

    #[test]
    fn star_anywhere_and_exact_patterns() {
        assert!(matches("git * --dry-run", "git push origin --dry-run"));
        assert!(matches("make", "make"));
        assert!(!matches("make", "make install"));
    }

    #[test]
    fn patterns_match_the_analysed_command_text() {
        // Matched on the analyser's `SimpleCommand::text`, so quoting cannot hide a command.
        let first = |line: &str| crate::shell::analyse(line).commands.remove(0).text;
        assert!(matches("ls *", &first("ls")));
        assert!(matches("ls *", &first("ls -la")));
        assert!(!matches("ls *", &first("lsof")));
        assert!(matches("cargo test:*", &first("cargo test --quiet")));
        assert!(!matches("cargo test:*", &first("cargo testx")));
        assert!(matches(
            "git * --dry-run",
            &first("git push origin --dry-run")
        ));
        assert!(matches("rm *", &first("\"r\"m -rf /")));
        assert!(matches("rm *", &first("timeout 5 r\\m -rf /")));
        assert!(!matches("rm *", &first("rｍ -rf /")));
        assert!(matches("echo *", &first("echo 'a && rm x'")));
        assert!(matches("make", &first("make")));
        assert!(!matches("make", &first("make install")));
    }
}
