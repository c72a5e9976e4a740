//! `sandbox.limits`: resource limits on every command the agent runs (and sandboxed
//! checks), so a fork bomb or a disk filler ends as a failed call, not a dead runner.

use serde::Deserialize;

/// A limit as written: a number, a size such as `8GiB`, or `unlimited`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "LimitText")]
pub struct LimitValue(pub Option<u64>);

/// Numbers and strings both reach [`LimitValue`] through this.
#[derive(Deserialize)]
#[serde(untagged)]
enum LimitText {
    Number(u64),
    Text(String),
}

impl TryFrom<LimitText> for LimitValue {
    type Error = LimitError;
    fn try_from(value: LimitText) -> Result<Self, Self::Error> {
        match value {
            LimitText::Number(n) => Ok(LimitValue(Some(n))),
            LimitText::Text(text) => parse_limit(&text).map(LimitValue),
        }
    }
}

/// `unlimited`, a plain number, or a number with a binary (`KiB`, `MiB`, `GiB`, `TiB`,
/// or `K`, `M`, `G`, `T`) or decimal (`KB`, `MB`, `GB`, `TB`) unit.
fn parse_limit(text: &str) -> Result<Option<u64>, LimitError> {
    let trimmed = text.trim();
    if trimmed.eq_ignore_ascii_case("unlimited") {
        return Ok(None);
    }
    let split = trimmed
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(trimmed.len());
    let (digits, unit) = trimmed.split_at(split);
    let number: u64 = digits.parse().map_err(|_| LimitError::NotANumber {
        text: text.to_string(),
    })?;
    let factor: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "t" | "tib" => 1 << 40,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        other => {
            return Err(LimitError::UnknownUnit {
                unit: other.to_string(),
                text: text.to_string(),
            });
        }
    };
    number
        .checked_mul(factor)
        .map(Some)
        .ok_or_else(|| LimitError::TooLarge {
            text: text.to_string(),
        })
}

/// A `sandbox.limits` value that does not parse; each says what to write.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum LimitError {
    #[error("invalid limit {text:?}; write a number, a size such as 8GiB, or unlimited")]
    NotANumber { text: String },
    #[error(
        "unknown unit {unit:?} in limit {text:?}; use KiB, MiB, GiB or TiB (or KB, MB, GB, TB)"
    )]
    UnknownUnit { unit: String, text: String },
    #[error("limit {text:?} is too large")]
    TooLarge { text: String },
}

/// `sandbox.limits`; a field left out keeps its default (see `ResourceLimits`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsSpec {
    /// Processes of the user (RLIMIT_NPROC; not enforced by the kernel for root).
    pub processes: Option<LimitValue>,
    /// The largest file a command may write (RLIMIT_FSIZE).
    pub file_size: Option<LimitValue>,
    /// Virtual memory of each process (RLIMIT_AS).
    pub address_space: Option<LimitValue>,
    /// Open file descriptors of each process (RLIMIT_NOFILE).
    pub open_files: Option<LimitValue>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_numbers_sizes_or_unlimited() {
        assert_eq!(parse_limit("unlimited"), Ok(None));
        assert_eq!(parse_limit("4096"), Ok(Some(4096)));
        assert_eq!(parse_limit("8GiB"), Ok(Some(8 << 30)));
        assert_eq!(parse_limit("8 G"), Ok(Some(8 << 30)));
        assert_eq!(parse_limit("2MB"), Ok(Some(2_000_000)));
        assert!(
            parse_limit("lots")
                .unwrap_err()
                .to_string()
                .contains("unlimited")
        );
        assert!(
            parse_limit("3 parsecs")
                .unwrap_err()
                .to_string()
                .contains("unknown unit")
        );
        assert!(parse_limit("99999999999TiB").is_err());
        let spec: LimitsSpec = serde_json::from_str(
            r#"{"processes": 100, "file_size": "1GiB", "address_space": "unlimited"}"#,
        )
        .unwrap();
        assert_eq!(spec.processes, Some(LimitValue(Some(100))));
        assert_eq!(spec.file_size, Some(LimitValue(Some(1 << 30))));
        assert_eq!(spec.address_space, Some(LimitValue(None)));
        assert_eq!(spec.open_files, None);
    }
}
