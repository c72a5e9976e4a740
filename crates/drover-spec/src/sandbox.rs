//! `sandbox:`: off, on, or settings (the network, resource limits, more writable
//! directories), for a task, a check, a hook or an MCP server.

use serde::Deserialize;

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

    /// Whether commands under the `sandbox:` setting `spec` (absent: on) have the network.
    pub fn has_network(spec: Option<&SandboxSpec>) -> bool {
        match spec {
            None | Some(SandboxSpec::Switch(Switch::On)) => false,
            Some(SandboxSpec::Switch(Switch::Off)) => true,
            Some(SandboxSpec::Settings(settings)) => settings.network,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxSettings {
    /// Let commands use the network (default: off).
    #[serde(default)]
    pub network: bool,
    /// Resource limits of every sandboxed command (defaults apply to what is left out).
    #[serde(default)]
    pub limits: super::limits::LimitsSpec,
    /// More directories commands may write in, besides the workspace and the task's
    /// `TMPDIR`: absolute, or `~/…` in the home directory (`~/.cargo/registry`).
    #[serde(default)]
    pub writable: Vec<String>,
}
