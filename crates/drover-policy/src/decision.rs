//! What the policy says about one call: allowed or denied, with its grounds.
//!
//! An enum rather than a flag beside the grounds, so every reader matches on the outcome
//! and the loop records, tells the model and acts on the very value the policy returned
//! (a hook's refusal is one more `Deny`), never a copy that could drift from it.

use std::path::PathBuf;

use serde::{Serialize, Serializer};

use super::Rule;

/// The policy's answer for one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow(Grounds),
    Deny(Grounds),
}

/// Why a call was allowed or denied: recorded in the transcript and told to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grounds {
    /// The rule that decided (as written), or None for a default.
    pub rule: Option<String>,
    pub reason: String,
    /// The path judged (absolute, symlinks resolved), for a call that names one: the tool
    /// must act on this path, not resolve its input again. Never serialized.
    pub target: Option<PathBuf>,
}

impl Grounds {
    /// Grounds naming `rule` (None: a default) and no path.
    pub fn new(rule: Option<String>, reason: impl Into<String>) -> Self {
        Grounds {
            rule,
            reason: reason.into(),
            target: None,
        }
    }

    fn by(rule: Option<&Rule>, reason: impl Into<String>) -> Self {
        Grounds::new(rule.map(|r| r.text().to_string()), reason)
    }
}

impl Decision {
    /// Allowed by `rule` (None: by a default).
    pub(crate) fn allow(rule: Option<&Rule>, reason: impl Into<String>) -> Self {
        Decision::Allow(Grounds::by(rule, reason))
    }

    /// Denied by `rule` (None: by a default).
    pub(crate) fn deny(rule: Option<&Rule>, reason: impl Into<String>) -> Self {
        let mut reason = reason.into();
        if let Some(rule) = rule.filter(|rule| rule.is_asked()) {
            reason.push_str(&format!(
                " ({rule} is an ask rule: drover runs headless and nobody can be asked, so it denies)"
            ));
        }
        Decision::Deny(Grounds::by(rule, reason))
    }

    pub fn allowed(&self) -> bool {
        matches!(self, Decision::Allow(_))
    }

    pub fn grounds(&self) -> &Grounds {
        match self {
            Decision::Allow(grounds) | Decision::Deny(grounds) => grounds,
        }
    }

    /// The rule that decided, as written; None for a default.
    pub fn rule(&self) -> Option<&str> {
        self.grounds().rule.as_deref()
    }

    pub fn reason(&self) -> &str {
        &self.grounds().reason
    }

    /// The same decision about the path `target` (see [`Grounds::target`]).
    pub(crate) fn on(mut self, target: Option<PathBuf>) -> Self {
        match &mut self {
            Decision::Allow(grounds) | Decision::Deny(grounds) => grounds.target = target,
        }
        self
    }
}

/// `{"allowed": …, "rule": …, "reason": …}`: the shape the decision had as a struct, so
/// any JSON made of it stays byte for byte the same. The target is never written.
impl Serialize for Decision {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Shown<'a> {
            allowed: bool,
            rule: &'a Option<String>,
            reason: &'a str,
        }
        Shown {
            allowed: self.allowed(),
            rule: &self.grounds().rule,
            reason: self.reason(),
        }
        .serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serializes_as_the_struct_did_without_the_target() {
        let allowed = Decision::Allow(Grounds::new(Some("Read".into()), "Read(a) is allowed"))
            .on(Some(PathBuf::from("/ws/a")));
        assert_eq!(
            serde_json::to_string(&allowed).unwrap(),
            r#"{"allowed":true,"rule":"Read","reason":"Read(a) is allowed"}"#
        );
        let denied = Decision::Deny(Grounds::new(None, "default deny"));
        assert_eq!(
            serde_json::to_string(&denied).unwrap(),
            r#"{"allowed":false,"rule":null,"reason":"default deny"}"#
        );
    }
}
