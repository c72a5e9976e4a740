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

    /// What a setup step (`setup`), check, hook or MCP stdio server may reach, whose
    /// own `sandbox:` is `own`, in a task whose `sandbox:` is `task`:
    /// - `own` is `off`: the whole network (nothing confines the command);
    /// - `own` writes `network:`: that;
    /// - the task's `network:` is an allow-list: that list (inherited);
    /// - else, when it writes no `sandbox:` at all: a setup step the whole network
    ///   (fetching is what setup is for), another command the task's sandbox as it is,
    ///   its `true` included (a check is confined like the agent);
    /// - else none: a command with a `sandbox:` of its own chooses the whole network
    ///   itself.
    pub fn command_network(
        own: Option<&SandboxSpec>,
        task: Option<&SandboxSpec>,
        setup: bool,
    ) -> NetworkSpec {
        if !SandboxSpec::is_on(own) {
            return NetworkSpec::All;
        }
        if let Some(network) = SandboxSpec::network(own) {
            return network.clone();
        }
        match SandboxSpec::network(task) {
            Some(rules @ NetworkSpec::Rules(_)) => rules.clone(),
            _ if setup && own.is_none() => NetworkSpec::All,
            Some(NetworkSpec::All) if own.is_none() => NetworkSpec::All,
            _ => NetworkSpec::Off,
        }
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
