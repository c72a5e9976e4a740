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
    /// A pattern written with shell quoting (`rm "important file"`), its quotes taken
    /// away as the shell takes them (`rm important file`, how the analyser gives the
    /// command's words): what a deny rule also matches. An allow rule does not, since the
    /// unquoted words can name another command (`rm a b` is not `rm "a b"`).
    unquoted: Option<Regex>,
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
        let unquoted = match unquote(pattern) {
            Some(text) if text != pattern => Some(pattern_regex(&text)?),
            _ => None,
        };
        Ok(CommandPattern {
            source: pattern.to_string(),
            regex: pattern_regex(pattern)?,
            unquoted,
        })
    }

    pub fn as_str(&self) -> &str {
        &self.source
    }

    pub fn matches(&self, command: &str) -> bool {
        self.regex.is_match(&normalize_spaces(command))
    }

    /// Whether a deny rule of this pattern covers `command`: as written, or with the
    /// pattern's quotes taken away as the shell takes them.
    pub fn denies(&self, command: &str) -> bool {
        self.matches(command)
            || self
                .unquoted
                .as_ref()
                .is_some_and(|unquoted| unquoted.is_match(&normalize_spaces(command)))
    }

    /// Whether this is a pattern without wildcards whose text is `source`, the command
    /// as written: `Bash(echo "Exit: $?")` allows exactly that command, quotes and all.
    pub fn is_exactly(&self, source: &str) -> bool {
        !self.source.contains('*') && self.source.trim() == source.trim()
    }
}

/// `text` with its shell quoting taken away (`"a b"`, `'a b'`, `a\ b` → `a b`); None
/// when a quote is left open.
fn unquote(text: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = text.chars();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(open), _) if c == open => quote = None,
            (None | Some('"'), '\\') => out.push(chars.next()?),
            _ => out.push(c),
        }
    }
    quote.is_none().then_some(out)
}

/// The regex of a pattern's text (see [`CommandPattern`]).
fn pattern_regex(pattern: &str) -> Result<Regex, regex::Error> {
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
    Regex::new(&regex)
}

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
        assert!(pattern.is_exactly(r#"echo "Exit: $?""#));
        // Spaces inside quotes are part of a word: another spacing is another command.
        let spaced = CommandPattern::new(r#"rm "a b""#).unwrap();
        assert!(!spaced.is_exactly(r#"rm "a  b""#));
        assert!(!pattern.is_exactly(r#"echo "Exit: $?" > out"#));
        let wild = CommandPattern::new("echo *").unwrap();
        assert!(!wild.is_exactly("echo *"));
    }

    #[test]
    fn a_quoted_deny_pattern_covers_the_words_the_shell_makes_of_it() {
        let pattern = CommandPattern::new(r#"rm "important file""#).unwrap();
        assert!(pattern.denies("rm important file"));
        assert!(
            !pattern.matches("rm important file"),
            "allow stays as written"
        );
        let single = CommandPattern::new("git push 'origin' main *").unwrap();
        assert!(single.denies("git push origin main --force"));
        let escaped = CommandPattern::new(r"rm important\ file").unwrap();
        assert!(escaped.denies("rm important file"));
        assert_eq!(unquote(r#"echo "open"#), None);
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
