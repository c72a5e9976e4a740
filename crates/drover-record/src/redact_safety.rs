//! Which secret values are safe to redact. Redaction replaces every occurrence of a value,
//! inside longer tokens too (a key pasted into a URL is still a key), so a value that
//! occurs in ordinary text would corrupt what the model and the user read: with a dummy
//! key `x` for a local server, `nonexistent` reached the model as `none[redacted]istent`.
//! A value is redacted only when it is long enough and varied enough to be a real secret
//! and is not one of the dummy values users give servers that ignore the key.

/// Values shorter than this (in characters) are never redacted: `1`, `true`, `x`, `none`
/// and `admin` would turn up everywhere and blank out text that is no secret.
pub(crate) const MIN_SECRET_LEN: usize = 8;

/// A value needs at least this many distinct characters: `xxxxxxxx` and `00000000` are
/// placeholders, and runs of them are common in ordinary output (rulers, hex dumps).
const MIN_DISTINCT_CHARS: usize = 4;

/// Dummy keys that local OpenAI-compatible servers (Ollama, llama.cpp, vLLM, LM Studio)
/// and tutorials use, and words that secret-named variables often hold in CI. Compared
/// case-insensitively, with and without an `sk-` prefix. Only values of at least
/// [`MIN_SECRET_LEN`] characters need listing; shorter ones are skipped anyway.
const COMMON_VALUES: &[&str] = &[
    "sk-no-key-required",
    "no-key-required",
    "no-key-needed",
    "nokeyrequired",
    "not-needed",
    "not-required",
    "notneeded",
    "notrequired",
    "not-used",
    "not-set",
    "not_needed",
    "not_required",
    "no_key_required",
    "unneeded",
    "unused-key",
    "dummy-key",
    "dummykey",
    "dummy_key",
    "dummy-token",
    "fake-key",
    "fakekey",
    "fake_key",
    "test-key",
    "testkey",
    "test_key",
    "test-token",
    "local-key",
    "localkey",
    "lm-studio",
    "lmstudio",
    "llamacpp",
    "llama.cpp",
    "llama-cpp",
    "localai",
    "anything",
    "whatever",
    "placeholder",
    "changeme",
    "change-me",
    "change_me",
    "changeit",
    "password",
    "passw0rd",
    "password1",
    "password123",
    "your-api-key",
    "your_api_key",
    "yourapikey",
    "your-key-here",
    "your_key_here",
    "your-token",
    "your_token",
    "your-secret",
    "api-key-here",
    "insert-key-here",
    "replace-me",
    "replace_me",
    "undefined",
    "disabled",
    "enabled",
    "required",
    "optional",
    "anonymous",
    "localhost",
    "production",
    "development",
    "staging",
    "testing",
    "default",
    "example",
    "12345678",
    "123456789",
    "1234567890",
    "abcdefgh",
    "qwertyuiop",
    "letmein1",
];

/// Why a secret's value is left unredacted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SkipReason {
    /// Fewer than [`MIN_SECRET_LEN`] characters.
    TooShort,
    /// Fewer than [`MIN_DISTINCT_CHARS`] distinct characters (`xxxxxxxx`).
    TooRepetitive,
    /// A well-known dummy value or a common word.
    CommonValue,
}

impl SkipReason {
    /// What a user reads: why drover cannot redact the value safely.
    pub fn describe(self) -> String {
        match self {
            SkipReason::TooShort => format!("shorter than {MIN_SECRET_LEN} characters"),
            SkipReason::TooRepetitive => {
                format!("fewer than {MIN_DISTINCT_CHARS} distinct characters")
            }
            SkipReason::CommonValue => "a common word or a well-known dummy value".to_string(),
        }
    }
}

/// None when `value` can be redacted without corrupting ordinary text; otherwise why not.
/// An empty value is a plain `TooShort`: callers skip empty values before asking.
pub fn unsafe_to_redact(value: &str) -> Option<SkipReason> {
    if value.chars().count() < MIN_SECRET_LEN {
        return Some(SkipReason::TooShort);
    }
    let lower = value.to_lowercase();
    let unprefixed = lower.strip_prefix("sk-").unwrap_or(&lower);
    let mut distinct: Vec<char> = unprefixed.chars().collect();
    distinct.sort_unstable();
    distinct.dedup();
    if distinct.len() < MIN_DISTINCT_CHARS {
        return Some(SkipReason::TooRepetitive);
    }
    if COMMON_VALUES
        .iter()
        .any(|common| *common == lower || *common == unprefixed)
    {
        return Some(SkipReason::CommonValue);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dummy_keys_and_short_values_are_not_safe_to_redact() {
        for (value, reason) in [
            ("x", SkipReason::TooShort),
            ("none", SkipReason::TooShort),
            ("ollama", SkipReason::TooShort),
            ("EMPTY", SkipReason::TooShort),
            ("sk-1234", SkipReason::TooShort),
            ("abcdefg", SkipReason::TooShort),
            ("xxxxxxxxxxxx", SkipReason::TooRepetitive),
            ("sk-xxxxxxxx", SkipReason::TooRepetitive),
            ("00000000", SkipReason::TooRepetitive),
            ("sk-no-key-required", SkipReason::CommonValue),
            ("SK-NO-KEY-REQUIRED", SkipReason::CommonValue),
            ("lm-studio", SkipReason::CommonValue),
            ("sk-placeholder", SkipReason::CommonValue),
            ("changeme", SkipReason::CommonValue),
            ("production", SkipReason::CommonValue),
            ("12345678", SkipReason::CommonValue),
        ] {
            assert_eq!(unsafe_to_redact(value), Some(reason), "{value}");
        }
    }

    #[test]
    fn real_looking_secrets_are_redacted() {
        for value in [
            "sk-ant-api03-abcdefgh",
            "ghp_0123456789abcdef",
            "hunter2hunter2",
            "8chars!x",
            "correct horse battery staple",
        ] {
            assert_eq!(unsafe_to_redact(value), None, "{value}");
        }
    }

    #[test]
    fn length_counts_characters_not_bytes() {
        // Four two-byte characters are eight bytes but only four characters.
        assert_eq!(unsafe_to_redact("éàüö"), Some(SkipReason::TooShort));
        assert_eq!(unsafe_to_redact("éàüöéàüö"), None);
    }
}
