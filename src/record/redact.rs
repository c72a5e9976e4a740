//! Redaction: secret values replaced by `[redacted]` in everything drover records or sends
//! to the model. Scrubbing the agent's environment keeps secrets out of its commands'
//! variables, but a command can still read drover's own environment
//! (`cat /proc/$PPID/environ`) or a file that holds a key; whatever it prints becomes a
//! tool result, the transcript and the model's context. So the values themselves are
//! searched for (Aho-Corasick, all at once) in tool results, check output, every
//! transcript line and the reports. Defence in depth, not a boundary: a value the command
//! encodes (base64, reversed, split) is not recognised.

use std::borrow::Cow;
use std::ffi::OsString;

use aho_corasick::{AhoCorasick, MatchKind};

use crate::policy::sandbox::env::looks_secret;

/// What a secret value is replaced with.
pub const REDACTED: &str = "[redacted]";

/// Environment values shorter than this are not redacted: a short value (`1`, `true`,
/// `admin`) would turn up everywhere and blank out text that is no secret.
pub const MIN_SECRET_LEN: usize = 8;

/// The secret values of a task, and a matcher finding them all in one pass.
#[derive(Clone, Default)]
pub struct Redactor {
    /// None when there is nothing to redact.
    matcher: Option<AhoCorasick>,
}

/// Never the values: the automaton's own `Debug` would print them.
impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.matcher {
            Some(matcher) => write!(f, "Redactor([{} redacted values])", matcher.patterns_len()),
            None => f.write_str("Redactor([])"),
        }
    }
}

impl Redactor {
    /// A redactor for exactly these values (empty ones are ignored). Each value is also
    /// searched for as it appears inside a JSON string (quotes, backslashes and control
    /// characters escaped), so a transcript line is redacted whatever the value holds.
    pub fn new(secrets: impl IntoIterator<Item = String>) -> Redactor {
        let mut patterns: Vec<String> = Vec::new();
        for secret in secrets {
            if secret.is_empty() {
                continue;
            }
            let escaped = serde_json::to_string(&secret)
                .ok()
                .and_then(|quoted| {
                    quoted
                        .strip_prefix('"')
                        .and_then(|rest| rest.strip_suffix('"'))
                        .map(str::to_string)
                })
                .filter(|escaped| *escaped != secret);
            patterns.push(secret);
            patterns.extend(escaped);
        }
        patterns.sort();
        patterns.dedup();
        if patterns.is_empty() {
            return Redactor::default();
        }
        // Leftmost-longest: when one secret contains another, the whole of it goes.
        let matcher = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(&patterns)
            .ok();
        if matcher.is_none() {
            // Only a pattern set too large for the automaton fails to build; never run
            // without redaction silently.
            eprintln!(
                "drover: warning: cannot build the secret redactor ({} values); secrets are not redacted",
                patterns.len()
            );
        }
        Redactor { matcher }
    }

    /// The secrets of a task: the model's API key (`api_key`), and the values (at least
    /// [`MIN_SECRET_LEN`] characters) of every variable in `vars` (drover's environment)
    /// whose name looks like a secret, except those the spec passes on (`env.pass`). The
    /// variables in `withheld` (the model key's variable) are redacted even if passed.
    pub fn for_task(
        api_key: Option<&str>,
        vars: impl IntoIterator<Item = (OsString, OsString)>,
        pass: &[String],
        withheld: &[String],
    ) -> Redactor {
        let mut secrets: Vec<String> = api_key
            .map(str::trim)
            .filter(|key| !key.is_empty())
            .map(str::to_string)
            .into_iter()
            .collect();
        for (name, value) in vars {
            let name = name.to_string_lossy();
            let withheld = withheld.iter().any(|w| *w == name);
            let secret = withheld || (looks_secret(&name) && !pass.iter().any(|p| *p == name));
            if !secret {
                continue;
            }
            let value = value.to_string_lossy();
            for value in [value.as_ref(), value.trim()] {
                if value.chars().count() >= MIN_SECRET_LEN {
                    secrets.push(value.to_string());
                }
            }
        }
        Redactor::new(secrets)
    }

    /// Is there anything to redact at all?
    pub fn is_empty(&self) -> bool {
        self.matcher.is_none()
    }

    /// `text` with every secret value replaced by [`REDACTED`]; borrowed when nothing was.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        match &self.matcher {
            Some(matcher) if matcher.is_match(text) => {
                let mut out = String::with_capacity(text.len());
                let replaced = matcher.try_replace_all_with(text, &mut out, |_, _, out| {
                    out.push_str(REDACTED);
                    true
                });
                Cow::Owned(match replaced {
                    Ok(()) => out,
                    // Only an automaton built for anchored searches fails here, which
                    // this one is not; should it ever, hide the whole text.
                    Err(_) => format!("{REDACTED} (this text holds a secret value)"),
                })
            }
            _ => Cow::Borrowed(text),
        }
    }

    /// [`Redactor::redact`] into an owned string.
    pub fn redact_owned(&self, text: String) -> String {
        match self.redact(&text) {
            Cow::Borrowed(_) => text,
            Cow::Owned(redacted) => redacted,
        }
    }

    /// Every string in a JSON value (keys too), redacted in place.
    pub fn redact_json(&self, value: &mut serde_json::Value) {
        if self.is_empty() {
            return;
        }
        match value {
            serde_json::Value::String(text) => {
                if let Cow::Owned(redacted) = self.redact(text) {
                    *text = redacted;
                }
            }
            serde_json::Value::Array(items) => {
                for item in items {
                    self.redact_json(item);
                }
            }
            serde_json::Value::Object(map) => {
                let entries = std::mem::take(map);
                for (key, mut item) in entries {
                    self.redact_json(&mut item);
                    map.insert(self.redact_owned(key), item);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect()
    }

    #[test]
    fn secret_values_are_replaced_wherever_they_are() {
        let redactor = Redactor::new(["sk-ant-0123456789".to_string(), "hunter2hunter2".into()]);
        assert_eq!(
            redactor.redact("ANTHROPIC_API_KEY=sk-ant-0123456789\0PW=hunter2hunter2!"),
            "ANTHROPIC_API_KEY=[redacted]\0PW=[redacted]!"
        );
        assert!(matches!(redactor.redact("nothing here"), Cow::Borrowed(_)));
        assert!(Redactor::default().is_empty());
        assert!(!format!("{redactor:?}").contains("sk-ant"), "{redactor:?}");
        assert_eq!(
            Redactor::default().redact("sk-ant-0123456789"),
            "sk-ant-0123456789"
        );
    }

    #[test]
    fn the_longest_secret_wins_when_one_contains_another() {
        let redactor = Redactor::new(["abcdefgh".to_string(), "abcdefghijkl".into()]);
        assert_eq!(redactor.redact("xabcdefghijkly"), "x[redacted]y");
    }

    #[test]
    fn values_escaped_in_json_are_found_too() {
        let secret = "pa\"ss\\word\n123";
        let redactor = Redactor::new([secret.to_string()]);
        let line = serde_json::json!({ "content": format!("got {secret}") }).to_string();
        let redacted = redactor.redact(&line);
        assert_eq!(redacted, r#"{"content":"got [redacted]"}"#);
        let mut value = serde_json::json!({ "a": [secret], secret: 1 });
        redactor.redact_json(&mut value);
        assert_eq!(
            value,
            serde_json::json!({ "a": ["[redacted]"], "[redacted]": 1 })
        );
    }

    #[test]
    fn a_task_redacts_the_key_and_secret_looking_variables_not_passed_ones() {
        let env = vars(&[
            ("PATH", "/usr/local/bin:/usr/bin"),
            ("FAKE_API_KEY", "fake-key-0123456789"),
            ("GITHUB_TOKEN", "ghp_abcdefghijklmnop"),
            ("NPM_TOKEN", "npm_passed_on_by_name"),
            ("SHORT_TOKEN", "abc"),
            ("LLM_KEY", "llm-key-value-123"),
        ]);
        let redactor = Redactor::for_task(
            Some("sk-model-key-xyz"),
            env,
            &["NPM_TOKEN".to_string(), "LLM_KEY".to_string()],
            &["LLM_KEY".to_string()],
        );
        let text = "sk-model-key-xyz fake-key-0123456789 ghp_abcdefghijklmnop \
                    npm_passed_on_by_name abc /usr/local/bin:/usr/bin llm-key-value-123";
        assert_eq!(
            redactor.redact(text),
            "[redacted] [redacted] [redacted] npm_passed_on_by_name abc /usr/local/bin:/usr/bin [redacted]"
        );
    }
}
