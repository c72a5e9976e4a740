//! `sandbox.network`: what a sandboxed command may reach. `false` (no network), `true`
//! (the whole network), or rules naming hosts — `{allow: [...], deny: [...],
//! registries: [...]}` — that drover's egress proxy enforces (docs/sandbox.md, "Network
//! by name"). This is the spec's side: the syntax, parsed and normalised, with every bad
//! entry refused at its line and column, naming its list and index. The proxy judges
//! connections by these rules; nothing here decides one.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};

mod host;
mod registry;

pub use host::{HostError, HostPattern};
pub use registry::{Registry, UnknownRegistry};

/// `sandbox.network` as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NetworkSpec {
    /// `false` / `off`: no network.
    Off,
    /// `true` / `on`: the whole network, no proxy.
    All,
    /// Only the hosts the rules allow, through drover's proxy.
    Rules(NetworkRules),
}

/// `sandbox.network: {allow, deny, registries}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkRules {
    /// Hosts commands may reach: a host without a port on 443 and 80, `host:port` on
    /// that port only.
    #[serde(default, deserialize_with = "allow_entries")]
    pub allow: Vec<HostPattern>,
    /// Hosts refused whatever allows them (a host without a port: on every port).
    #[serde(default, deserialize_with = "deny_entries")]
    pub deny: Vec<HostPattern>,
    /// Package registries by name, each standing for its hosts ([`Registry::hosts`]).
    #[serde(default, deserialize_with = "registry_entries")]
    pub registries: Vec<Registry>,
}

impl NetworkRules {
    /// Every host the rules allow: the `allow:` entries, then the hosts of the
    /// `registries:` (ports 443 and 80), each once. `deny:` still wins over these.
    pub fn allowed(&self) -> Vec<HostPattern> {
        let mut allowed = self.allow.clone();
        let registry_hosts = self.registries.iter().flat_map(|registry| {
            registry.hosts().iter().map(|host| HostPattern {
                host: (*host).to_string(),
                port: None,
            })
        });
        for pattern in registry_hosts {
            if !allowed.contains(&pattern) {
                allowed.push(pattern);
            }
        }
        allowed
    }

    /// Whether no host is allowed (`{}`, `{allow: []}`, only `deny:`): legal, every
    /// connection is refused, but likely not what the author meant.
    pub fn allows_nothing(&self) -> bool {
        self.allow.is_empty() && self.registries.is_empty()
    }
}

impl<'de> Deserialize<'de> for NetworkSpec {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Setting;
        impl<'de> Visitor<'de> for Setting {
            type Value = NetworkSpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(
                    "false, true, or a mapping such as { allow: [example.org], registries: [npm] }",
                )
            }
            fn visit_bool<E: de::Error>(self, value: bool) -> Result<NetworkSpec, E> {
                Ok(if value {
                    NetworkSpec::All
                } else {
                    NetworkSpec::Off
                })
            }
            // YAML 1.1 readers turn on/off into booleans; accept both spellings.
            fn visit_str<E: de::Error>(self, value: &str) -> Result<NetworkSpec, E> {
                match value {
                    "on" | "true" => Ok(NetworkSpec::All),
                    "off" | "false" => Ok(NetworkSpec::Off),
                    other => Err(E::invalid_value(de::Unexpected::Str(other), &self)),
                }
            }
            fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<NetworkSpec, A::Error> {
                NetworkRules::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(NetworkSpec::Rules)
            }
        }
        deserializer.deserialize_any(Setting)
    }
}

/// Recorded as written: `false`, `true`, or the rules (hosts in their canonical text).
impl Serialize for NetworkSpec {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            NetworkSpec::Off => serializer.serialize_bool(false),
            NetworkSpec::All => serializer.serialize_bool(true),
            NetworkSpec::Rules(rules) => rules.serialize(serializer),
        }
    }
}

fn allow_entries<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<HostPattern>, D::Error> {
    d.deserialize_any(Entries {
        list: "allow",
        parse: host::parse,
    })
}

fn deny_entries<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<HostPattern>, D::Error> {
    d.deserialize_any(Entries {
        list: "deny",
        parse: host::parse,
    })
}

fn registry_entries<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Registry>, D::Error> {
    d.deserialize_any(Entries {
        list: "registries",
        parse: str::parse,
    })
}

/// A list of `sandbox.network` entries, each parsed by `parse`. Each entry is
/// deserialized on its own (an [`Entry`]), so the parser reports a bad one at its own
/// line and column, and the message names the list and the index.
struct Entries<T, E> {
    list: &'static str,
    parse: fn(&str) -> Result<T, E>,
}

impl<'de, T, E: fmt::Display> Visitor<'de> for Entries<T, E> {
    type Value = Vec<T>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let example = match self.list {
            "registries" => "registry names such as [npm, crates]",
            _ => "hosts such as [example.org, \"*.example.org:8443\"]",
        };
        write!(f, "sandbox.network.{} to be a list of {example}", self.list)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
        let mut entries = Vec::new();
        while let Some(entry) = seq.next_element_seed(Entry {
            list: self.list,
            index: entries.len(),
            parse: self.parse,
        })? {
            entries.push(entry);
        }
        Ok(entries)
    }
}

/// One entry of an [`Entries`] list: a string, parsed where the parser stands on it.
struct Entry<T, E> {
    list: &'static str,
    index: usize,
    parse: fn(&str) -> Result<T, E>,
}

impl<'de, T, E: fmt::Display> DeserializeSeed<'de> for Entry<T, E> {
    type Value = T;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<T, D::Error> {
        let at = format!("sandbox.network.{}[{}]: ", self.list, self.index);
        // Not a string (a mapping, a list): the parser's words, with the entry named
        // (and without the parser's own "at line …", which the error keeps anyway).
        deserializer.deserialize_str(self).map_err(|error| {
            let message = error.to_string();
            if message.starts_with(&at) {
                error
            } else {
                let words = message.split(" at line ").next().unwrap_or_default();
                de::Error::custom(format_args!("{at}{words}"))
            }
        })
    }
}

impl<'de, T, E: fmt::Display> Visitor<'de> for Entry<T, E> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "sandbox.network.{}[{}] as a string",
            self.list, self.index
        )
    }
    fn visit_str<Er: de::Error>(self, value: &str) -> Result<T, Er> {
        (self.parse)(value).map_err(|error| {
            Er::custom(format_args!(
                "sandbox.network.{}[{}]: {error}",
                self.list, self.index
            ))
        })
    }
}

#[cfg(test)]
#[path = "network_tests.rs"]
mod tests;
