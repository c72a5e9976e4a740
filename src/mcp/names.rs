//! The names MCP tools are offered under: `mcp__<server>__<tool>`, as Claude Code names
//! them, made safe for every provider. A name keeps only `[A-Za-z0-9_-]` (anything else
//! becomes `_`) and at most 64 characters (the Anthropic API's limit; longer names end in
//! a hash of the original instead). Two tools that come out the same are told apart the
//! same way every run: the first in (server, tool) order keeps the name, the others get
//! the hash suffix.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;

use sha2::{Digest, Sha256};

/// The longest tool name the providers accept.
pub(crate) const MAX_NAME: usize = 64;

/// Hex digits of the hash that tells a shortened or colliding name apart.
const HASH_DIGITS: usize = 8;

/// One tool of one server and the name the model calls it by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OfferedName {
    /// The server's name in the spec.
    pub server: String,
    /// The tool's name as the server lists it.
    pub tool: String,
    /// The name offered to the model.
    pub name: String,
    /// Why `name` is not simply `mcp__<server>__<tool>`, when it is not.
    pub changed: Option<NameChange>,
}

/// Why an offered name differs from `mcp__<server>__<tool>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NameChange {
    /// Characters outside `[A-Za-z0-9_-]` were replaced.
    Sanitized,
    /// The name was longer than [`MAX_NAME`] and was shortened.
    Shortened,
    /// Another tool came out with the same name first.
    Collided,
}

impl NameChange {
    /// The word the transcript records.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            NameChange::Sanitized => "sanitized",
            NameChange::Shortened => "shortened",
            NameChange::Collided => "collided",
        }
    }
}

/// Name every `(server, tool)` pair; the result is in (server, tool) order whatever the
/// order given, so the names do not depend on the order servers answered in. A pair
/// given twice is named once.
pub(crate) fn offered_names(tools: &[(String, String)]) -> Vec<OfferedName> {
    let mut pairs: Vec<&(String, String)> = tools.iter().collect();
    pairs.sort();
    pairs.dedup();
    let mut taken: BTreeMap<String, ()> = BTreeMap::new();
    let mut out = Vec::with_capacity(pairs.len());
    for (server, tool) in pairs {
        let plain = format!("mcp__{server}__{tool}");
        let safe = sanitize(&plain);
        let (mut name, mut changed) = if safe.len() > MAX_NAME {
            (with_hash(&safe, &plain), Some(NameChange::Shortened))
        } else if safe != plain {
            (safe.clone(), Some(NameChange::Sanitized))
        } else {
            (safe.clone(), None)
        };
        // A collision keeps the hash of the original pair, then counts up (a hash
        // collision on top of a name collision is not expected, but stays deterministic).
        let mut attempt = 0u32;
        loop {
            match taken.entry(name.clone()) {
                Entry::Vacant(slot) => {
                    slot.insert(());
                    break;
                }
                Entry::Occupied(_) => {
                    attempt += 1;
                    let seed = format!("{plain}#{attempt}");
                    name = with_hash(&safe, &seed);
                    changed = Some(NameChange::Collided);
                }
            }
        }
        out.push(OfferedName {
            server: server.clone(),
            tool: tool.clone(),
            name,
            changed,
        });
    }
    out
}

/// `name` with every character outside `[A-Za-z0-9_-]` replaced by `_`.
fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// `safe` cut so that `_` and the hash of `seed` fit within [`MAX_NAME`], then both.
fn with_hash(safe: &str, seed: &str) -> String {
    let digest = Sha256::digest(seed.as_bytes());
    let hash: String = crate::digest::hex(&digest)
        .chars()
        .take(HASH_DIGITS)
        .collect();
    // `safe` is ASCII, so any byte index is a character boundary.
    let keep = safe.len().min(MAX_NAME - HASH_DIGITS - 1);
    format!("{}_{hash}", &safe[..keep])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(s, t)| (s.to_string(), t.to_string()))
            .collect()
    }

    #[test]
    fn plain_names_are_claude_codes() {
        let named = offered_names(&pairs(&[("everything", "echo"), ("docs", "get-sum")]));
        let names: Vec<&str> = named.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["mcp__docs__get-sum", "mcp__everything__echo"]);
        assert!(named.iter().all(|n| n.changed.is_none()));
    }

    #[test]
    fn other_characters_become_underscores() {
        let named = offered_names(&pairs(&[("fs", "read.file"), ("fs", "ünï code")]));
        assert_eq!(named[0].name, "mcp__fs__read_file");
        assert_eq!(named[0].changed, Some(NameChange::Sanitized));
        assert_eq!(named[1].name, "mcp__fs___n__code");
        assert!(named.iter().all(|n| n.name.is_ascii()));
    }

    #[test]
    fn long_names_are_shortened_to_64_with_a_stable_hash() {
        let long = "a".repeat(100);
        let first = offered_names(&pairs(&[("server", &long)]));
        let again = offered_names(&pairs(&[("server", &long)]));
        assert_eq!(first, again, "the same name every run");
        assert_eq!(first[0].name.len(), MAX_NAME);
        assert!(first[0].name.starts_with("mcp__server__aaaa"));
        assert_eq!(first[0].changed, Some(NameChange::Shortened));
        // Two long names sharing their first 64 characters stay apart.
        let other = format!("{long}b");
        let both = offered_names(&pairs(&[("server", &long), ("server", &other)]));
        assert_ne!(both[0].name, both[1].name);
        assert!(both.iter().all(|n| n.name.len() <= MAX_NAME));
    }

    #[test]
    fn collisions_are_resolved_the_same_way_whatever_the_order() {
        let forward = offered_names(&pairs(&[("fs", "a.b"), ("fs", "a_b"), ("fs", "a/b")]));
        let backward = offered_names(&pairs(&[("fs", "a/b"), ("fs", "a_b"), ("fs", "a.b")]));
        assert_eq!(forward, backward);
        let names: Vec<&str> = forward.iter().map(|n| n.name.as_str()).collect();
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), 3, "{names:?}");
        // The first in (server, tool) order keeps the plain name.
        assert_eq!(forward[0].tool, "a.b");
        assert_eq!(forward[0].name, "mcp__fs__a_b");
        assert_eq!(
            forward
                .iter()
                .filter(|n| n.changed == Some(NameChange::Collided))
                .count(),
            2
        );
    }

    #[test]
    fn a_tool_whose_name_looks_like_another_servers_is_kept_apart() {
        // `mcp__a__b__c` could be server a, tool b__c or server a__b, tool c.
        let named = offered_names(&pairs(&[("a", "b__c"), ("a__b", "c")]));
        assert_ne!(named[0].name, named[1].name);
    }
}
