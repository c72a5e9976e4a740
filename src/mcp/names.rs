//! The names MCP tools are offered under: `mcp__<server>__<tool>`, as Claude Code names
//! them, made safe for every provider. A name keeps only `[A-Za-z0-9_-]` (anything else
//! becomes `_`) and at most 64 characters (the Anthropic API's limit; longer names end in
//! a hash of the original instead).
//!
//! A rule naming a tool must reach that tool and no other, so an offered name belongs to
//! one tool or to none: when two tools come out with the same name (`x.y` and `x_y`, or a
//! tool listed twice), every one of them is left out — keeping the first would hand the
//! rules written for one to another the server chose to name alike.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

/// The longest tool name the providers accept.
pub(crate) const MAX_NAME: usize = 64;

/// Hex digits of the hash that tells a shortened name apart.
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
}

impl NameChange {
    /// The word the transcript records.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            NameChange::Sanitized => "sanitized",
            NameChange::Shortened => "shortened",
        }
    }
}

/// A tool that is not offered because its name would not be its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LeftOutName {
    pub server: String,
    pub tool: String,
    /// The name it and the others come out as.
    pub name: String,
    /// The first few other tools under that name, as (server, tool).
    pub others: Vec<(String, String)>,
    /// How many more other tools there are (a server may list thousands).
    pub more: usize,
    /// Its server lists it more than once.
    pub listed_again: bool,
}

/// Other tools a reason names; the rest are counted.
const NAMED_OTHERS: usize = 3;

impl LeftOutName {
    /// Why the tool is not offered, for the transcript and stderr.
    pub(crate) fn reason(&self) -> String {
        let mut named: Vec<String> = self
            .others
            .iter()
            .map(|(server, tool)| {
                if *server == self.server {
                    format!("{tool:?}")
                } else {
                    format!("{tool:?} of server {server}")
                }
            })
            .collect();
        if self.more > 0 {
            named.push(format!("{} more", self.more));
        }
        let mut why = Vec::new();
        match named.as_slice() {
            [] => {}
            [other] => why.push(format!(
                "another tool, {other}, comes out as {} too: a rule naming it could reach a tool it was not written for",
                self.name
            )),
            _ => why.push(format!(
                "other tools ({}) come out as {} too: a rule naming it could reach a tool it was not written for",
                named.join(", "),
                self.name
            )),
        }
        if self.listed_again {
            why.push(
                "the server lists it more than once: which listing's description and input schema hold is not known"
                    .to_string(),
            );
        }
        format!(
            "{}; so no tool is offered under {}",
            why.join("; and "),
            self.name
        )
    }
}

/// The names of a task's MCP tools: those offered, and those left out.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Naming {
    /// In (server, tool) order.
    pub offered: Vec<OfferedName>,
    /// In (server, tool) order, each tool once.
    pub left_out: Vec<LeftOutName>,
}

impl Naming {
    /// The names of `server`'s tools: those offered and those left out.
    pub(crate) fn of_server(&self, server: &str) -> (Vec<OfferedName>, Vec<LeftOutName>) {
        let offered = self
            .offered
            .iter()
            .filter(|n| n.server == server)
            .cloned()
            .collect();
        let left_out = self
            .left_out
            .iter()
            .filter(|n| n.server == server)
            .cloned()
            .collect();
        (offered, left_out)
    }
}

/// Name every `(server, tool)` pair, as listed (a pair listed twice counts twice). The
/// result does not depend on the order given, so names do not depend on the order
/// servers answered in.
pub(crate) fn offered_names(tools: &[(String, String)]) -> Naming {
    let mut by_name: BTreeMap<String, Vec<&(String, String)>> = BTreeMap::new();
    for pair in tools {
        let (name, _) = name_of(&pair.0, &pair.1);
        by_name.entry(name).or_default().push(pair);
    }
    let mut naming = Naming::default();
    for (name, holders) in by_name {
        if let [(server, tool)] = holders.as_slice() {
            naming.offered.push(OfferedName {
                server: server.clone(),
                tool: tool.clone(),
                changed: name_of(server, tool).1,
                name,
            });
            continue;
        }
        // Each tool under the name once, with how many times it is listed.
        let mut listed: BTreeMap<&(String, String), usize> = BTreeMap::new();
        for pair in holders {
            *listed.entry(pair).or_default() += 1;
        }
        for (&pair, &times) in &listed {
            let others: Vec<(String, String)> = listed
                .keys()
                .filter(|other| **other != pair)
                .take(NAMED_OTHERS)
                .map(|other| (*other).clone())
                .collect();
            naming.left_out.push(LeftOutName {
                server: pair.0.clone(),
                tool: pair.1.clone(),
                name: name.clone(),
                more: listed.len() - 1 - others.len(),
                others,
                listed_again: times > 1,
            });
        }
    }
    naming
        .offered
        .sort_by(|a, b| (&a.server, &a.tool).cmp(&(&b.server, &b.tool)));
    naming
        .left_out
        .sort_by(|a, b| (&a.server, &a.tool).cmp(&(&b.server, &b.tool)));
    naming
}

/// The name `tool` of `server` comes out as, and why it is not the plain one.
fn name_of(server: &str, tool: &str) -> (String, Option<NameChange>) {
    let plain = format!("mcp__{server}__{tool}");
    let safe = sanitize(&plain);
    if safe.len() > MAX_NAME {
        (with_hash(&safe, &plain), Some(NameChange::Shortened))
    } else if safe != plain {
        (safe, Some(NameChange::Sanitized))
    } else {
        (safe, None)
    }
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

    fn offered(naming: &Naming) -> Vec<&str> {
        naming.offered.iter().map(|n| n.name.as_str()).collect()
    }

    fn left_out(naming: &Naming) -> Vec<(&str, &str)> {
        naming
            .left_out
            .iter()
            .map(|n| (n.tool.as_str(), n.name.as_str()))
            .collect()
    }

    #[test]
    fn plain_names_are_claude_codes() {
        let named = offered_names(&pairs(&[("everything", "echo"), ("docs", "get-sum")]));
        assert_eq!(
            offered(&named),
            ["mcp__docs__get-sum", "mcp__everything__echo"]
        );
        assert!(named.offered.iter().all(|n| n.changed.is_none()));
        assert!(named.left_out.is_empty());
    }

    #[test]
    fn other_characters_become_underscores() {
        let named = offered_names(&pairs(&[("fs", "read.file"), ("fs", "ünï code")]));
        assert_eq!(named.offered[0].name, "mcp__fs__read_file");
        assert_eq!(named.offered[0].changed, Some(NameChange::Sanitized));
        assert_eq!(named.offered[1].name, "mcp__fs___n__code");
        assert!(named.offered.iter().all(|n| n.name.is_ascii()));
    }

    #[test]
    fn long_names_are_shortened_to_64_with_a_stable_hash() {
        let long = "a".repeat(100);
        let first = offered_names(&pairs(&[("server", &long)]));
        let again = offered_names(&pairs(&[("server", &long)]));
        assert_eq!(first, again, "the same name every run");
        assert_eq!(first.offered[0].name.len(), MAX_NAME);
        assert!(first.offered[0].name.starts_with("mcp__server__aaaa"));
        assert_eq!(first.offered[0].changed, Some(NameChange::Shortened));
        // Two long names sharing their first 64 characters stay apart.
        let other = format!("{long}b");
        let both = offered_names(&pairs(&[("server", &long), ("server", &other)]));
        assert_eq!(both.offered.len(), 2);
        assert_ne!(both.offered[0].name, both.offered[1].name);
        assert!(both.offered.iter().all(|n| n.name.len() <= MAX_NAME));
    }

    #[test]
    fn tools_that_come_out_alike_are_all_left_out_whatever_the_order() {
        let forward = offered_names(&pairs(&[
            ("fs", "a.b"),
            ("fs", "a_b"),
            ("fs", "a/b"),
            ("fs", "ok"),
        ]));
        let backward = offered_names(&pairs(&[
            ("fs", "ok"),
            ("fs", "a/b"),
            ("fs", "a_b"),
            ("fs", "a.b"),
        ]));
        assert_eq!(forward, backward);
        // The plain a_b is not kept either: a rule for it could reach a.b otherwise.
        assert_eq!(offered(&forward), ["mcp__fs__ok"]);
        assert_eq!(
            left_out(&forward),
            [
                ("a.b", "mcp__fs__a_b"),
                ("a/b", "mcp__fs__a_b"),
                ("a_b", "mcp__fs__a_b")
            ]
        );
        let reason = forward.left_out[2].reason();
        assert!(reason.contains(r#"("a.b", "a/b")"#), "{reason}");
        assert!(reason.contains("mcp__fs__a_b"), "{reason}");
    }

    #[test]
    fn characters_other_than_ascii_that_come_out_alike_are_left_out() {
        // Each non-ASCII character is one `_`: é and è, or a space, read the same.
        let named = offered_names(&pairs(&[("fs", "é"), ("fs", "è"), ("fs", " ")]));
        assert!(named.offered.is_empty(), "{named:?}");
        assert_eq!(named.left_out.len(), 3);
        // Case is kept, and nothing compares names without it: x and X stay apart.
        let cased = offered_names(&pairs(&[("fs", "x"), ("fs", "X")]));
        assert_eq!(offered(&cased), ["mcp__fs__X", "mcp__fs__x"]);
    }

    #[test]
    fn thousands_of_tools_alike_are_left_out_with_short_reasons() {
        // Every CJK character is one `_`: all of them come out as mcp__s__x_.
        let many: Vec<(String, String)> = (0..2000u32)
            .filter_map(|i| char::from_u32(0x4e00 + i))
            .map(|c| ("s".to_string(), format!("x{c}")))
            .collect();
        let named = offered_names(&many);
        assert!(named.offered.is_empty());
        assert_eq!(named.left_out.len(), 2000);
        let reason = named.left_out[0].reason();
        assert!(reason.contains(", 1996 more)"), "{reason}");
        assert!(reason.len() < 400, "{reason}");
    }

    #[test]
    fn a_tool_listed_twice_is_left_out_once() {
        let named = offered_names(&pairs(&[("fs", "twice"), ("fs", "twice"), ("fs", "ok")]));
        assert_eq!(offered(&named), ["mcp__fs__ok"]);
        assert_eq!(left_out(&named), [("twice", "mcp__fs__twice")]);
        let reason = named.left_out[0].reason();
        assert!(reason.contains("more than once"), "{reason}");
        assert!(!reason.contains("another tool"), "{reason}");
    }

    #[test]
    fn a_shortened_name_that_another_tool_has_outright_is_left_out_with_it() {
        let long = "t".repeat(80);
        let shortened = offered_names(&pairs(&[("s", &long)])).offered[0]
            .name
            .clone();
        let tool = shortened.strip_prefix("mcp__s__").unwrap().to_string();
        let named = offered_names(&pairs(&[("s", &long), ("s", &tool)]));
        assert!(named.offered.is_empty(), "{named:?}");
        assert_eq!(named.left_out.len(), 2);
    }

    #[test]
    fn tools_of_two_servers_that_come_out_alike_are_both_left_out() {
        // `mcp__a__b__c` could be server a's tool b__c or server a__b's tool c. Server
        // names may not hold `__` (a spec error), but were one to, neither tool would
        // take the name.
        let named = offered_names(&pairs(&[("a", "b__c"), ("a__b", "c"), ("b", "x")]));
        assert_eq!(offered(&named), ["mcp__b__x"]);
        assert_eq!(
            left_out(&named),
            [("b__c", "mcp__a__b__c"), ("c", "mcp__a__b__c")]
        );
        let reason = named.left_out[0].reason();
        assert!(reason.contains(r#""c" of server a__b"#), "{reason}");
    }
}
