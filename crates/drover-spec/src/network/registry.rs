//! `sandbox.network.registries`: package registries by name, so a spec allows `npm ci`
//! or `cargo fetch` without its author knowing (or mistyping) the hosts behind them. The
//! list is short and fixed (docs/sandbox.md, "Network by name"): each name stands for
//! the hosts its client downloads from by default, nothing more.

use std::fmt;

use serde::{Serialize, Serializer};

/// A package registry a spec may allow by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Registry {
    Npm,
    Pypi,
    Crates,
    Go,
    Maven,
}

impl Registry {
    /// Every registry, in the order the docs list them.
    pub const ALL: [Registry; 5] = [
        Registry::Npm,
        Registry::Pypi,
        Registry::Crates,
        Registry::Go,
        Registry::Maven,
    ];

    /// The name a spec writes.
    pub fn name(self) -> &'static str {
        match self {
            Registry::Npm => "npm",
            Registry::Pypi => "pypi",
            Registry::Crates => "crates",
            Registry::Go => "go",
            Registry::Maven => "maven",
        }
    }

    /// The hosts the registry's client downloads from by default (ports 443 and 80, as
    /// an allowed host without a port).
    pub fn hosts(self) -> &'static [&'static str] {
        match self {
            Registry::Npm => &["registry.npmjs.org", "registry.yarnpkg.com"],
            Registry::Pypi => &["pypi.org", "files.pythonhosted.org"],
            Registry::Crates => &["crates.io", "index.crates.io", "static.crates.io"],
            Registry::Go => &["proxy.golang.org", "sum.golang.org"],
            Registry::Maven => &["repo.maven.apache.org", "repo1.maven.org"],
        }
    }
}

impl fmt::Display for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for Registry {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

/// A registry name drover does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{0:?} is not a registry drover knows; write one of {known}, or name its hosts in allow: (drover exec: --allow-host)",
    known = known_names()
)]
pub struct UnknownRegistry(pub String);

/// `npm, pypi, crates, go, maven`.
fn known_names() -> String {
    Registry::ALL.map(Registry::name).join(", ")
}

impl std::str::FromStr for Registry {
    type Err = UnknownRegistry;
    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Registry::ALL
            .into_iter()
            .find(|registry| registry.name() == name)
            .ok_or_else(|| UnknownRegistry(name.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::network::HostPattern;

    #[test]
    fn each_registry_is_named_and_stands_for_plain_hosts() {
        for registry in Registry::ALL {
            assert_eq!(registry.name().parse::<Registry>(), Ok(registry));
            assert_eq!(registry.to_string(), registry.name());
            assert_eq!(
                serde_json::to_value(registry).unwrap(),
                serde_json::json!(registry.name())
            );
            for host in registry.hosts() {
                let pattern: HostPattern = host.parse().unwrap();
                assert_eq!(pattern.to_string(), *host, "{host} is canonical");
                assert!(!pattern.is_wildcard() && pattern.port.is_none());
            }
        }
        assert_eq!(
            Registry::Crates.hosts(),
            ["crates.io", "index.crates.io", "static.crates.io"]
        );
    }

    #[test]
    fn an_unknown_name_lists_the_known_ones() {
        for name in ["npmm", "NPM", "pip", ""] {
            let error = name.parse::<Registry>().unwrap_err();
            assert_eq!(
                error.to_string(),
                format!(
                    "{name:?} is not a registry drover knows; write one of npm, pypi, crates, go, maven, or name its hosts in allow: (drover exec: --allow-host)"
                )
            );
        }
    }
}
