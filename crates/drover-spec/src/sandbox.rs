//! `sandbox:`: off, on, or settings (the network, resource limits, more writable
//! directories), for a task, a check, a hook or an MCP server.

use serde::Deserialize;

use super::network::{NetworkRules, NetworkSpec};
use super::values::Switch;

/// `sandbox: off`, `sandbox: on`, or `sandbox: { network: true }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SandboxSpec {
    Switch(Switch),
    Settings(SandboxSettings),
}

impl<'de> Deserialize<'de> for SandboxSpec {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = SandboxSpec;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("on, off, or a mapping such as { network: true }")
            }
            // YAML 1.1 readers turn on/off into booleans; accept both spellings.
            fn visit_bool<E: serde::de::Error>(self, value: bool) -> Result<SandboxSpec, E> {
                Ok(SandboxSpec::Switch(if value {
                    Switch::On
                } else {
                    Switch::Off
                }))
            }
            fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<SandboxSpec, E> {
                match value {
                    "on" => Ok(SandboxSpec::Switch(Switch::On)),
                    "off" => Ok(SandboxSpec::Switch(Switch::Off)),
                    other => Err(E::invalid_value(serde::de::Unexpected::Str(other), &self)),
                }
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<SandboxSpec, A::Error> {
                SandboxSettings::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(SandboxSpec::Settings)
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

impl SandboxSpec {
    /// Whether commands under the `sandbox:` setting `spec` (absent: on) are sandboxed.
    pub fn is_on(spec: Option<&SandboxSpec>) -> bool {
        !matches!(spec, Some(SandboxSpec::Switch(Switch::Off)))
    }

    /// Whether commands under the `sandbox:` setting `spec` (absent: on) have the whole
    /// network: `network: true`, or no sandbox at all. Rules naming hosts are not the
    /// whole network.
    pub fn has_network(spec: Option<&SandboxSpec>) -> bool {
        match spec {
            None | Some(SandboxSpec::Switch(Switch::On)) => false,
            Some(SandboxSpec::Switch(Switch::Off)) => true,
            Some(SandboxSpec::Settings(settings)) => {
                matches!(settings.network, Some(NetworkSpec::All))
            }
        }
    }

    /// The `network:` the setting `spec` writes itself; None when it writes none
    /// (no `sandbox:`, `on`, `off`, or settings without `network:`).
    pub fn network(spec: Option<&SandboxSpec>) -> Option<&NetworkSpec> {
        match spec {
            Some(SandboxSpec::Settings(settings)) => settings.network.as_ref(),
            _ => None,
        }
    }

    /// The host rules of the setting `spec`, when its `network:` is an allow-list.
    pub fn network_rules(spec: Option<&SandboxSpec>) -> Option<&NetworkRules> {
        match SandboxSpec::network(spec) {
            Some(NetworkSpec::Rules(rules)) => Some(rules),
            _ => None,
        }
    }

    /// The `network:` of a setup step, check, hook or MCP stdio server whose own
    /// `sandbox:` is `own`, in a task whose `sandbox:` is `task`: its own when it writes
    /// one; else the task's when that is an allow-list (inherited); else None, the
    /// command's default (setup steps the whole network, the others none). The task's
    /// `true` is not inherited: the whole network is chosen for each command apart. A
    /// command with `sandbox: off` has the whole network (nothing confines it).
    pub fn command_network<'a>(
        own: Option<&'a SandboxSpec>,
        task: Option<&'a SandboxSpec>,
    ) -> Option<&'a NetworkSpec> {
        static WHOLE: NetworkSpec = NetworkSpec::All;
        if !SandboxSpec::is_on(own) {
            return Some(&WHOLE);
        }
        SandboxSpec::network(own).or_else(|| match SandboxSpec::network(task) {
            rules @ Some(NetworkSpec::Rules(_)) => rules,
            _ => None,
        })
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxSettings {
    /// What commands may reach: `false`, `true` (the whole network) or rules naming
    /// hosts. None when not written: the task's commands then have no network, and a
    /// check, setup step, hook or MCP server inherits the task's allow-list (see
    /// [`SandboxSpec::command_network`]).
    #[serde(default)]
    pub network: Option<NetworkSpec>,
    /// Resource limits of every sandboxed command (defaults apply to what is left out).
    #[serde(default)]
    pub limits: super::limits::LimitsSpec,
    /// More directories commands may write in, besides the workspace and the task's
    /// `TMPDIR`: absolute, or `~/…` in the home directory (`~/.cargo/registry`).
    #[serde(default)]
    pub writable: Vec<String>,
}
