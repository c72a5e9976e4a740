//! Volatile output: the parts of a tool result that differ from run to run without the
//! work differing (durations, timestamps, temporary paths, process ids). A replay masks
//! them in both the recorded and the replayed result before comparing, so `--strict`
//! fails only on real drift, and shows each masked span as `‹volatile›`.

use std::borrow::Cow;

use regex::Regex;

/// What a masked span is shown as.
pub(crate) const MASK: &str = "‹volatile›";

/// drover's built-in masks, each with what it is for (listed in docs/replay.md).
pub(crate) const BUILT_IN: &[(&str, &str)] = &[
    (
        "timestamps (RFC 3339 and ISO 8601)",
        r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?",
    ),
    ("times of day", r"\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b"),
    (
        "durations (`finished in 2.09s`, `took 120ms`, `1m 30s`)",
        r"\b\d+(?:\.\d+)?\s?(?:ns|µs|us|ms|s|secs?|seconds?|m|mins?|minutes?|h|hours?)\b",
    ),
    (
        "temporary paths (/tmp, /var/folders, $TMPDIR-style)",
        r"(?:/private)?(?:/tmp|/var/tmp|/var/folders)/[^\s'\x22:,;)\]}>]+",
    ),
    (
        "process ids in common messages (`pid 1234`, `process 1234`)",
        r"(?i)\b(?:pid|process(?: id)?)[ =:#]*\d+\b",
    ),
];

/// The masks of one replay: the built-in ones and the user's (`replay.ignore`,
/// `--ignore`).
#[derive(Debug, Clone)]
pub struct Masks {
    patterns: Vec<Regex>,
}

/// A user's mask that is not a regular expression.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{pattern:?} is not a valid regular expression: {message}")]
pub struct InvalidMask {
    pub pattern: String,
    pub message: String,
}

impl Masks {
    /// The built-in masks, then `user`'s.
    pub fn new<S: AsRef<str>>(user: &[S]) -> Result<Masks, InvalidMask> {
        let mut patterns = Vec::new();
        for (_, pattern) in BUILT_IN {
            // invariant: the built-in patterns are constants a unit test compiles.
            if let Ok(regex) = Regex::new(pattern) {
                patterns.push(regex);
            }
        }
        for pattern in user {
            patterns.push(Self::compile(pattern.as_ref())?);
        }
        Ok(Masks { patterns })
    }

    /// One user pattern, checked (a spec's `replay.ignore` is checked when it loads).
    pub fn compile(pattern: &str) -> Result<Regex, InvalidMask> {
        regex::RegexBuilder::new(pattern)
            .size_limit(1 << 20)
            .build()
            .map_err(|e| InvalidMask {
                pattern: pattern.to_string(),
                message: e.to_string(),
            })
    }

    /// `text` with every volatile span replaced by [`MASK`].
    pub fn mask<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let mut out = Cow::Borrowed(text);
        for pattern in &self.patterns {
            if let Cow::Owned(masked) = pattern.replace_all(&out, MASK) {
                out = Cow::Owned(masked);
            }
        }
        out
    }
}

impl Default for Masks {
    fn default() -> Self {
        let none: [&str; 0] = [];
        // invariant: with no user pattern there is nothing that can fail to compile.
        Masks::new(&none).unwrap_or(Masks {
            patterns: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_built_in_mask_compiles() {
        for (what, pattern) in BUILT_IN {
            assert!(Regex::new(pattern).is_ok(), "{what}");
        }
        assert_eq!(Masks::default().patterns.len(), BUILT_IN.len());
    }

    #[test]
    fn volatile_spans_are_masked_alike_in_both_runs() {
        let masks = Masks::default();
        let pairs = [
            (
                "    Finished `test` profile in 2.09s\ntest result: ok. 3 passed; finished in 0.01s",
                "    Finished `test` profile in 2.12s\ntest result: ok. 3 passed; finished in 0.02s",
            ),
            ("took 120ms", "took 98ms"),
            ("at 2026-11-26T13:27:33.120Z", "at 2026-11-27T09:01:02Z"),
            ("[12:01:02] started", "[12:03:59] started"),
            (
                "wrote /tmp/.tmpAbC123/out.txt",
                "wrote /tmp/.tmpXyZ789/out.txt",
            ),
            ("server pid 4242 up", "server pid 977 up"),
        ];
        for (recorded, replayed) in pairs {
            assert_eq!(masks.mask(recorded), masks.mask(replayed), "{recorded}");
            assert!(masks.mask(recorded).contains(MASK), "{recorded}");
        }
    }

    #[test]
    fn real_differences_stay() {
        let masks = Masks::default();
        for (recorded, replayed) in [
            ("test result: ok. 3 passed", "test result: FAILED. 2 passed"),
            ("fn add(a: i32) -> i32", "fn add(a: i64) -> i64"),
            ("3 files changed", "4 files changed"),
        ] {
            assert_ne!(masks.mask(recorded), masks.mask(replayed), "{recorded}");
        }
    }

    #[test]
    fn user_masks_add_to_the_built_in_ones() {
        let masks = Masks::new(&["seed=\\d+"]).unwrap();
        assert_eq!(masks.mask("seed=42 ok"), masks.mask("seed=7 ok"));
        let error = Masks::new(&["(unclosed"]).unwrap_err();
        assert!(error.to_string().contains("(unclosed"), "{error}");
    }
}
