//! `limits.context`, `limits.max_identical_calls` and `limits.wrap_up`: what keeps a
//! long run inside the model's window, catches a model that repeats itself, and lets a
//! run stopped by a limit say where its work stands. Plain data; the loop applies it.

use serde::{Deserialize, Serialize};

use super::values::InvalidValue;

/// `limits.context`: `off`, or how the conversation is kept inside the window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ContextSpec {
    /// `off` (or `false`): no management; `on` (or `true`): the defaults.
    Switch(bool),
    Settings(ContextSettings),
}

impl<'de> Deserialize<'de> for ContextSpec {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = ContextSpec;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("off, on, or a mapping such as { strategy: summarize, window: 200000 }")
            }
            // YAML 1.1 readers turn on/off into booleans; accept both spellings.
            fn visit_bool<E: serde::de::Error>(self, on: bool) -> Result<ContextSpec, E> {
                Ok(ContextSpec::Switch(on))
            }
            fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<ContextSpec, E> {
                match value.trim() {
                    "on" => Ok(ContextSpec::Switch(true)),
                    "off" => Ok(ContextSpec::Switch(false)),
                    other => Err(E::invalid_value(serde::de::Unexpected::Str(other), &self)),
                }
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<ContextSpec, A::Error> {
                ContextSettings::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(ContextSpec::Settings)
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// `limits.context` as a mapping; a key left out keeps its default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContextSettings {
    #[serde(default)]
    pub strategy: Option<ContextStrategy>,
    /// The model's window in tokens (default: the built-in table's for the model).
    #[serde(default)]
    pub window: Option<ContextWindow>,
    /// The share of the window a request may reach before the conversation is compacted.
    #[serde(default)]
    pub threshold: Option<Threshold>,
    /// `clear_tool_results`: the newest tool results that are never cleared.
    #[serde(default)]
    pub keep_tool_results: Option<KeepResults>,
}

/// How a conversation that would pass the threshold is made smaller.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ContextStrategy {
    /// Old tool results become a placeholder naming the call (then, if that is not
    /// enough, the oldest exchanges go): no model call, deterministic.
    #[default]
    ClearToolResults,
    /// The model summarizes the conversation, and the summary replaces it.
    Summarize,
    /// Anthropic's own context editing, on the server; drover's clearing where the
    /// provider or the server does not offer it.
    Server,
    Off,
}

impl ContextStrategy {
    pub fn as_str(self) -> &'static str {
        match self {
            ContextStrategy::ClearToolResults => "clear_tool_results",
            ContextStrategy::Summarize => "summarize",
            ContextStrategy::Server => "server",
            ContextStrategy::Off => "off",
        }
    }
}

/// The smallest window a spec may give: a request with drover's system prompt and tool
/// definitions alone takes several thousand tokens.
pub const MIN_CONTEXT_WINDOW: u64 = 4_096;

/// A window in tokens, at least [`MIN_CONTEXT_WINDOW`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "u64")]
pub struct ContextWindow(pub u64);

impl TryFrom<u64> for ContextWindow {
    type Error = InvalidValue;
    fn try_from(tokens: u64) -> Result<Self, Self::Error> {
        if tokens < MIN_CONTEXT_WINDOW {
            return Err(InvalidValue(format!(
                "limits.context.window is {tokens} tokens; give the model's window, at least {MIN_CONTEXT_WINDOW}"
            )));
        }
        Ok(ContextWindow(tokens))
    }
}

/// A share of the window: `70%` or `0.7`, between 10% and 95%.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(try_from = "ThresholdText")]
pub struct Threshold(pub f64);

#[derive(Deserialize)]
#[serde(untagged)]
enum ThresholdText {
    Number(f64),
    Text(String),
}

impl TryFrom<ThresholdText> for Threshold {
    type Error = InvalidValue;
    fn try_from(value: ThresholdText) -> Result<Self, Self::Error> {
        let share = match &value {
            ThresholdText::Number(share) => Some(*share),
            ThresholdText::Text(text) => text
                .trim()
                .strip_suffix('%')
                .and_then(|percent| percent.trim().parse::<f64>().ok())
                .map(|percent| percent / 100.0),
        };
        match share {
            Some(share) if (0.1..=0.95).contains(&share) => Ok(Threshold(share)),
            _ => Err(InvalidValue(format!(
                "limits.context.threshold {}: give a share of the window between 10% and 95%, such as 70% or 0.7",
                match value {
                    ThresholdText::Number(n) => n.to_string(),
                    ThresholdText::Text(t) => format!("{t:?}"),
                }
            ))),
        }
    }
}

/// How many of the newest tool results are never cleared: 1 to 100.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "u32")]
pub struct KeepResults(pub u32);

impl TryFrom<u32> for KeepResults {
    type Error = InvalidValue;
    fn try_from(count: u32) -> Result<Self, Self::Error> {
        if !(1..=100).contains(&count) {
            return Err(InvalidValue(format!(
                "limits.context.keep_tool_results is {count}; give 1 to 100 (the newest results are never cleared)"
            )));
        }
        Ok(KeepResults(count))
    }
}

/// The default of `limits.max_identical_calls`.
pub const DEFAULT_MAX_IDENTICAL_CALLS: u32 = 5;

/// `limits.max_identical_calls`: a count of 2 or more, or `off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdenticalCalls(pub Option<u32>);

impl<'de> Deserialize<'de> for IdenticalCalls {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = IdenticalCalls;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a number of 2 or more (the same call with the same result that many times in a row), or off")
            }
            fn visit_u64<E: serde::de::Error>(self, count: u64) -> Result<IdenticalCalls, E> {
                match u32::try_from(count) {
                    Ok(count) if count >= 2 => Ok(IdenticalCalls(Some(count))),
                    _ => Err(E::invalid_value(
                        serde::de::Unexpected::Unsigned(count),
                        &self,
                    )),
                }
            }
            fn visit_i64<E: serde::de::Error>(self, count: i64) -> Result<IdenticalCalls, E> {
                match u64::try_from(count) {
                    Ok(count) => self.visit_u64(count),
                    Err(_) => Err(E::invalid_value(
                        serde::de::Unexpected::Signed(count),
                        &self,
                    )),
                }
            }
            // YAML 1.1 readers turn `off` into false.
            fn visit_bool<E: serde::de::Error>(self, on: bool) -> Result<IdenticalCalls, E> {
                if on {
                    Err(E::invalid_value(serde::de::Unexpected::Bool(on), &self))
                } else {
                    Ok(IdenticalCalls(None))
                }
            }
            fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<IdenticalCalls, E> {
                match value.trim() {
                    "off" => Ok(IdenticalCalls(None)),
                    other => Err(E::invalid_value(serde::de::Unexpected::Str(other), &self)),
                }
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

impl IdenticalCalls {
    /// The limit in force: the spec's, or [`DEFAULT_MAX_IDENTICAL_CALLS`].
    pub fn effective(limit: Option<IdenticalCalls>) -> Option<u32> {
        match limit {
            None => Some(DEFAULT_MAX_IDENTICAL_CALLS),
            Some(IdenticalCalls(limit)) => limit,
        }
    }
}

impl ContextSpec {
    /// The strategy in force (`clear_tool_results` when the spec says nothing).
    pub fn strategy(spec: Option<&ContextSpec>) -> ContextStrategy {
        match spec {
            None | Some(ContextSpec::Switch(true)) => ContextStrategy::default(),
            Some(ContextSpec::Switch(false)) => ContextStrategy::Off,
            Some(ContextSpec::Settings(settings)) => settings.strategy.unwrap_or_default(),
        }
    }

    /// The settings written, if a mapping was.
    pub fn settings(spec: Option<&ContextSpec>) -> ContextSettings {
        match spec {
            Some(ContextSpec::Settings(settings)) => *settings,
            _ => ContextSettings::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context(yaml: &str) -> Result<ContextSpec, String> {
        serde_saphyr::from_str::<ContextSpec>(yaml).map_err(|e| e.to_string())
    }

    #[test]
    fn context_is_off_on_or_a_mapping() {
        assert_eq!(
            ContextSpec::strategy(Some(&context("off").unwrap())),
            ContextStrategy::Off
        );
        assert_eq!(
            ContextSpec::strategy(Some(&context("false").unwrap())),
            ContextStrategy::Off
        );
        assert_eq!(
            ContextSpec::strategy(Some(&context("on").unwrap())),
            ContextStrategy::ClearToolResults
        );
        assert_eq!(
            ContextSpec::strategy(None),
            ContextStrategy::ClearToolResults
        );
        let spec =
            context("{ strategy: summarize, window: 32000, threshold: 60%, keep_tool_results: 2 }")
                .unwrap();
        assert_eq!(
            ContextSpec::strategy(Some(&spec)),
            ContextStrategy::Summarize
        );
        let settings = ContextSpec::settings(Some(&spec));
        assert_eq!(settings.window, Some(ContextWindow(32_000)));
        assert_eq!(settings.threshold, Some(Threshold(0.6)));
        assert_eq!(settings.keep_tool_results, Some(KeepResults(2)));
        let spec = context("{ threshold: 0.8 }").unwrap();
        assert_eq!(
            ContextSpec::settings(Some(&spec)).threshold,
            Some(Threshold(0.8))
        );
    }

    #[test]
    fn bad_context_values_say_what_to_write() {
        assert!(context("sometimes").is_err());
        assert!(
            context("{ window: 100 }")
                .unwrap_err()
                .contains("at least 4096")
        );
        assert!(
            context("{ threshold: 99% }")
                .unwrap_err()
                .contains("between 10% and 95%")
        );
        assert!(
            context("{ threshold: 2 }")
                .unwrap_err()
                .contains("between 10% and 95%")
        );
        assert!(
            context("{ keep_tool_results: 0 }")
                .unwrap_err()
                .contains("1 to 100")
        );
        assert!(context("{ strategy: forget }").is_err());
        assert!(context("{ windw: 9000 }").is_err());
    }

    #[test]
    fn identical_calls_is_a_count_of_two_or_more_or_off() {
        let parse = |yaml: &str| serde_saphyr::from_str::<IdenticalCalls>(yaml);
        assert_eq!(parse("3").unwrap(), IdenticalCalls(Some(3)));
        assert_eq!(parse("off").unwrap(), IdenticalCalls(None));
        assert!(parse("1").unwrap_err().to_string().contains("2 or more"));
        assert!(parse("never").is_err());
        assert_eq!(
            IdenticalCalls::effective(None),
            Some(DEFAULT_MAX_IDENTICAL_CALLS)
        );
        assert_eq!(IdenticalCalls::effective(Some(IdenticalCalls(None))), None);
    }
}
