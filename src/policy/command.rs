//! Matching one simple command (as the shell analyser splits a command line) against a
//! `Bash(...)` pattern.

use regex::Regex;

/// Does the simple `command` match the `Bash(...)` `pattern`? `*` matches any characters,
/// a trailing ` *` also matches nothing (a word boundary: `ls *` matches `ls -la` and
/// `ls`, not `lsof`), and the legacy `prefix:*` means `prefix *`.
pub fn matches(pattern: &str, command: &str) -> bool {
    let pattern = match pattern.strip_suffix(":*") {
        Some(prefix) => format!("{prefix} *"),
        None => pattern.to_string(),
    };
    let command = normalize_spaces(command);
    let (body, word_tail) = match pattern.strip_suffix(" *") {
        Some(body) => (body.to_string(), true),
        None => (pattern.clone(), false),
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
    Regex::new(&regex).is_ok_and(|re| re.is_match(&command))
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
    fn star_anywhere_and_exact_patterns() {
        assert!(matches("git * --dry-run", "git push origin --dry-run"));
        assert!(matches("make", "make"));
        assert!(!matches("make", "make install"));
    }
}
