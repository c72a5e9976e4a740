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
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use aho_corasick::{AhoCorasick, MatchKind};

use crate::secret_names::looks_secret;

pub use super::redact_safety::{SkipReason, unsafe_to_redact};

/// What a secret value is replaced with.
pub const REDACTED: &str = "[redacted]";

/// The secret values of a task, and a matcher finding them all in one pass. Clones share
/// their values: a secret learnt while the task runs ([`Redactor::add`]: a header an MCP
/// server's `headersHelper` made) is redacted by every clone from then on.
#[derive(Clone, Default)]
pub struct Redactor {
    values: Arc<RwLock<Values>>,
    /// The secrets left unredacted because redacting them would corrupt ordinary text.
    skipped: Vec<SkippedSecret>,
    /// How many occurrences this redactor (and its clones) replaced: a user learns from
    /// `redacted: N` in run_end and summary.json that something was hidden.
    replaced: Arc<AtomicU64>,
}

/// A secret drover does not redact, named by its variable (never its value), so the user
/// learns that it is not protected and why.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SkippedSecret {
    pub variable: String,
    pub reason: SkipReason,
}

impl SkippedSecret {
    /// The one-line warning drover prints for it.
    pub fn warning(&self) -> String {
        format!(
            "the value of {} is not redacted from artifacts and tool results: it is {}, so replacing it would corrupt ordinary text; use a real secret there, or none where the server needs no key",
            self.variable,
            self.reason.describe()
        )
    }
}

/// The values searched for, and their automaton.
#[derive(Default)]
struct Values {
    patterns: Vec<String>,
    /// None when there is nothing to redact.
    matcher: Option<AhoCorasick>,
}

impl Values {
    /// Add each safe secret's patterns (the value, and the value as it appears inside a
    /// JSON string) and rebuild the automaton.
    fn extend(&mut self, secrets: impl IntoIterator<Item = String>) {
        let before = self.patterns.len();
        for secret in secrets {
            if unsafe_to_redact(&secret).is_some() {
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
            self.patterns.push(secret);
            self.patterns.extend(escaped);
        }
        if self.patterns.len() == before {
            return;
        }
        self.patterns.sort();
        self.patterns.dedup();
        // Leftmost-longest: when one secret contains another, the whole of it goes.
        self.matcher = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(&self.patterns)
            .ok();
        if self.matcher.is_none() {
            // Only a pattern set too large for the automaton fails to build; never run
            // without redaction silently.
            drover_output::esay!(
                "drover: warning: cannot build the secret redactor ({} values); secrets are not redacted",
                self.patterns.len()
            );
        }
    }
}

/// Never the values: the automaton's own `Debug` would print them.
impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.read().matcher {
            Some(matcher) => write!(f, "Redactor([{} redacted values])", matcher.patterns_len()),
            None => f.write_str("Redactor([])"),
        }
    }
}

impl Redactor {
    /// A redactor for these values, except those [`unsafe_to_redact`] rejects (too short or
    /// too common to replace without corrupting ordinary text). Each value is also
    /// searched for as it appears inside a JSON string (quotes, backslashes and control
    /// characters escaped), so a transcript line is redacted whatever the value holds.
    pub fn new(secrets: impl IntoIterator<Item = String>) -> Redactor {
        let redactor = Redactor::default();
        redactor.write().extend(secrets);
        redactor
    }

    /// Redact these values too, from now on, in this redactor and every clone of it: a
    /// secret the task learns while it runs. Each is a label (what the warning names,
    /// never the value) and a value; those that cannot be redacted safely are returned.
    pub fn add(&self, secrets: impl IntoIterator<Item = (String, String)>) -> Vec<SkippedSecret> {
        let mut safe = Vec::new();
        let mut skipped = Vec::new();
        for (variable, value) in secrets {
            let trimmed = value.trim();
            if trimmed.is_empty() {
                continue;
            }
            match unsafe_to_redact(trimmed) {
                None => {
                    safe.push(trimmed.to_string());
                    if trimmed != value {
                        safe.push(value);
                    }
                }
                Some(reason) => skipped.push(SkippedSecret { variable, reason }),
            }
        }
        self.write().extend(safe);
        skipped
    }

    /// The values, to read. A poisoned lock only means a thread panicked while adding
    /// values; what was added is still whole (the automaton is replaced in one store).
    fn read(&self) -> std::sync::RwLockReadGuard<'_, Values> {
        self.values
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Values> {
        self.values
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The secrets of a task: the model's API key (`api_key`: its variable and value), and
    /// the values of every variable in `vars` (drover's environment) whose name looks like
    /// a secret, except those the spec passes on (`env.pass`). The variables in `withheld`
    /// (the model key's variable) are redacted even if passed. Values that cannot be
    /// redacted safely are left out and listed in [`Redactor::skipped`].
    pub fn for_task(
        api_key: Option<(&str, &str)>,
        vars: impl IntoIterator<Item = (OsString, OsString)>,
        pass: &[String],
        withheld: &[String],
    ) -> Redactor {
        let mut candidates: Vec<(String, String)> = api_key
            .map(|(variable, key)| (variable.to_string(), key.to_string()))
            .into_iter()
            .collect();
        for (name, value) in vars {
            let name = name.to_string_lossy();
            let withheld = withheld.iter().any(|w| *w == name);
            let secret = withheld || (looks_secret(&name) && !pass.iter().any(|p| *p == name));
            if secret {
                candidates.push((name.into_owned(), value.to_string_lossy().into_owned()));
            }
        }
        let mut secrets = Vec::new();
        let mut skipped: Vec<SkippedSecret> = Vec::new();
        for (variable, value) in candidates {
            let trimmed = value.trim();
            if trimmed.is_empty() {
                continue;
            }
            match unsafe_to_redact(trimmed) {
                None => {
                    secrets.push(trimmed.to_string());
                    if trimmed != value {
                        secrets.push(value);
                    }
                }
                Some(reason) => {
                    if !skipped.iter().any(|s| s.variable == variable) {
                        skipped.push(SkippedSecret { variable, reason });
                    }
                }
            }
        }
        skipped.sort_by(|a, b| a.variable.cmp(&b.variable));
        Redactor {
            skipped,
            ..Redactor::new(secrets)
        }
    }

    /// How many secret occurrences were replaced so far.
    pub fn replaced(&self) -> u64 {
        self.replaced.load(Ordering::Relaxed)
    }

    /// The secrets left unredacted, by variable name.
    pub fn skipped(&self) -> &[SkippedSecret] {
        &self.skipped
    }

    /// Is there anything to redact at all?
    pub fn is_empty(&self) -> bool {
        self.read().matcher.is_none()
    }

    /// Does `bytes` (binary data, such as an image) hold a secret value? Counted as a
    /// replacement when it does: the caller drops the data.
    pub fn finds_in(&self, bytes: &[u8]) -> bool {
        let found = self
            .read()
            .matcher
            .as_ref()
            .is_some_and(|matcher| matcher.is_match(bytes));
        if found {
            self.replaced.fetch_add(1, Ordering::Relaxed);
        }
        found
    }

    /// `text` with every secret value replaced by [`REDACTED`]; borrowed when nothing was.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        match &self.read().matcher {
            Some(matcher) if matcher.is_match(text) => {
                let mut out = String::with_capacity(text.len());
                let mut count = 0;
                let replaced = matcher.try_replace_all_with(text, &mut out, |_, _, out| {
                    out.push_str(REDACTED);
                    count += 1;
                    true
                });
                self.replaced.fetch_add(count.max(1), Ordering::Relaxed);
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
        assert_eq!(redactor.replaced(), 2);
        assert!(Redactor::default().is_empty());
        assert!(!format!("{redactor:?}").contains("sk-ant"), "{redactor:?}");
        assert_eq!(
            Redactor::default().redact("sk-ant-0123456789"),
            "sk-ant-0123456789"
        );
    }

    #[test]
    fn the_longest_secret_wins_when_one_contains_another() {
        let redactor = Redactor::new(["qwe7rtyu".to_string(), "qwe7rtyuiop9".into()]);
        assert_eq!(redactor.redact("xqwe7rtyuiop9y"), "x[redacted]y");
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
            Some(("MODEL_KEY", "sk-model-key-xyz")),
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
        assert_eq!(
            redactor.skipped(),
            [SkippedSecret {
                variable: "SHORT_TOKEN".into(),
                reason: SkipReason::TooShort
            }]
        );
    }

    #[test]
    fn dummy_keys_are_never_redacted_and_named_once() {
        let text = "nonexistent xylophone: none of the ollama models; sandbox text";
        for key in ["x", "none", "ollama", "sk-no-key-required", "xxxxxxxxxx"] {
            let env = vars(&[("LOCAL_KEY", key), ("PATH", "/bin")]);
            let redactor = Redactor::for_task(
                Some(("LOCAL_KEY", key)),
                env,
                &[],
                &["LOCAL_KEY".to_string()],
            );
            assert!(redactor.is_empty(), "{key}");
            assert_eq!(redactor.redact(text), text, "{key}");
            let skipped = redactor.skipped();
            assert_eq!(skipped.len(), 1, "{key}: {skipped:?}");
            assert_eq!(skipped[0].variable, "LOCAL_KEY");
            let fields = serde_json::to_value(&skipped[0]).unwrap();
            assert_eq!(
                fields,
                serde_json::json!({ "variable": "LOCAL_KEY", "reason": fields["reason"] })
            );
        }
    }

    #[test]
    fn short_values_never_fire_even_when_given_directly() {
        let redactor = Redactor::new(["x".to_string(), "abc1234".into(), String::new()]);
        assert!(redactor.is_empty());
        assert_eq!(redactor.redact("x abc1234"), "x abc1234");
    }

    #[test]
    fn a_long_key_is_redacted_inside_longer_tokens() {
        let key = "sk-live-9f8e7d6c5b4a";
        let redactor = Redactor::for_task(Some(("K", key)), Vec::new(), &[], &[]);
        assert_eq!(
            redactor.redact(&format!("url=https://h/?k={key}&x=1 ({key}) pre{key}post")),
            "url=https://h/?k=[redacted]&x=1 ([redacted]) pre[redacted]post"
        );
        // A value with surrounding whitespace in the environment is found trimmed too.
        let padded = Redactor::for_task(None, vars(&[("A_TOKEN", " tok-1234abcd\n")]), &[], &[]);
        assert_eq!(padded.redact("tok-1234abcd"), "[redacted]");
    }

    #[test]
    fn values_added_later_are_redacted_by_every_clone() {
        let redactor = Redactor::new(["first-secret-123".to_string()]);
        let clone = redactor.clone();
        assert_eq!(clone.redact("tok-9a8b7c6d5e"), "tok-9a8b7c6d5e");
        let skipped = redactor.add([
            ("helper X-Token".to_string(), "tok-9a8b7c6d5e\n".to_string()),
            ("helper X-Org".to_string(), "acme".to_string()),
            ("helper X-Empty".to_string(), String::new()),
        ]);
        assert_eq!(
            skipped,
            [SkippedSecret {
                variable: "helper X-Org".into(),
                reason: SkipReason::TooShort
            }]
        );
        assert_eq!(
            clone.redact("first-secret-123 tok-9a8b7c6d5e acme"),
            "[redacted] [redacted] acme"
        );
        assert_eq!(redactor.replaced(), 2);
        let empty = Redactor::default();
        empty.add([("k".to_string(), "value-8f7e6d5c".to_string())]);
        assert!(!empty.is_empty());
        assert!(!format!("{empty:?}").contains("value-8f"));
    }
}
