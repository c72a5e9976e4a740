//! Matching shell commands against `Bash(...)` patterns.
//!
//! This is the conservative first version: a command is only matched against a pattern
//! when it is one plain command with no shell syntax that could chain, substitute or
//! redirect. Anything else is treated as unknown: it never satisfies an allow pattern,
//! and it always trips a deny pattern. Full shell analysis replaces this later without
//! changing that rule.

use regex::Regex;

/// Characters that let one command line run more than one command, or write files.
const SHELL_SYNTAX: &[char] = &[
    ';', '&', '|', '<', '>', '`', '$', '(', ')', '{', '}', '\n', '\r', '\\', '*', '?', '[', '!',
    '#', '~',
];

/// Is `command` a single plain command that a prefix pattern can judge?
pub fn is_plain(command: &str) -> bool {
    !command.trim().is_empty() && !command.contains(SHELL_SYNTAX)
}

/// Does the plain `command` match the `Bash(...)` `pattern`? `*` matches any characters,
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

    #[test]
    fn chained_and_substituted_commands_are_not_plain() {
        for command in [
            "cargo test && rm -rf /",
            "cargo test; rm x",
            "cargo test | sh",
            "cargo test > out",
            "echo $(rm x)",
            "echo `id`",
            "a\nb",
        ] {
            assert!(!is_plain(command), "{command}");
        }
        assert!(is_plain("cargo test --quiet"));
    }
}
