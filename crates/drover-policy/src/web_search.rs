//! `WebSearch` rules: Anthropic's web search runs on Anthropic's servers, so drover
//! cannot judge each search; the rules decide whether the tool is offered at all and
//! which domains its results may come from, and the API enforces that.

use drover_message::WebSearch;

use super::{RuleSet, Specifier};

const WEB_SEARCH: &str = "WebSearch";

impl RuleSet {
    /// The web search the rules allow, or None when it is not offered: no allow rule
    /// names `WebSearch`, or `deny: [WebSearch]`. `WebSearch(domain:d)` allow rules
    /// restrict results to those domains (a bare `WebSearch` allows any); deny rules
    /// with a domain block it. The API takes allowed or blocked domains, not both: when
    /// both are given, a blocked domain is taken out of the allowed ones.
    pub fn web_search(&self, max_uses: Option<u32>) -> Option<WebSearch> {
        let names = |rule: &super::Rule| rule.tool() == WEB_SEARCH;
        let domain = |rule: &super::Rule| match rule.specifier() {
            Some(Specifier::Domain(domain)) => Some(search_domain(domain)),
            _ => None,
        };
        if self
            .deny
            .iter()
            .any(|r| names(r) && r.specifier().is_none())
        {
            return None;
        }
        let allows: Vec<&super::Rule> = self.allow.iter().filter(|r| names(r)).collect();
        if allows.is_empty() {
            return None;
        }
        let blocked: Vec<String> = self
            .deny
            .iter()
            .filter(|r| names(r))
            .filter_map(domain)
            .collect();
        let any_domain = allows.iter().any(|r| r.specifier().is_none());
        let mut allowed: Vec<String> = if any_domain {
            Vec::new()
        } else {
            allows.iter().filter_map(|r| domain(r)).collect()
        };
        if !allowed.is_empty() {
            allowed.retain(|d| !blocked.contains(d));
            allowed.sort();
            allowed.dedup();
            // Every allowed domain was blocked: nothing may be searched.
            if allowed.is_empty() {
                return None;
            }
            return Some(WebSearch {
                allowed_domains: allowed,
                blocked_domains: Vec::new(),
                max_uses,
            });
        }
        let mut blocked = blocked;
        blocked.sort();
        blocked.dedup();
        Some(WebSearch {
            allowed_domains: Vec::new(),
            blocked_domains: blocked,
            max_uses,
        })
    }
}

impl RuleSet {
    /// A `WebSearch(domain:…)` deny rule the API could not enforce: the search may only
    /// name allowed domains or blocked ones, and a blocked domain inside an allowed one
    /// (`deny evil.docs.rs`, `allow docs.rs`) cannot be said. The deny rule's index and
    /// what to write instead.
    pub fn web_search_conflict(&self) -> Option<(usize, String)> {
        let allowed: Vec<String> = self
            .allow
            .iter()
            .filter(|r| r.tool() == WEB_SEARCH)
            .filter_map(|r| match r.specifier() {
                Some(Specifier::Domain(domain)) => Some(search_domain(domain)),
                _ => None,
            })
            .collect();
        let any_domain = self
            .allow
            .iter()
            .any(|r| r.tool() == WEB_SEARCH && r.specifier().is_none());
        if any_domain {
            return None;
        }
        self.deny.iter().enumerate().find_map(|(index, rule)| {
            let Some(Specifier::Domain(domain)) = rule.specifier() else {
                return None;
            };
            if rule.tool() != WEB_SEARCH {
                return None;
            }
            let blocked = search_domain(domain);
            let inside = allowed
                .iter()
                .find(|a| **a != blocked && blocked.ends_with(&format!(".{a}")))?;
            Some((
                index,
                format!(
                    "{} blocks {blocked}, inside the allowed WebSearch(domain:{inside}); Anthropic's search takes allowed or blocked domains, not both, so this cannot be enforced: allow the subdomains you want instead of {inside}",
                    rule.text()
                ),
            ))
        })
    }
}

/// A rule's domain as the API takes it: `*.example.com` and `example.com` both mean the
/// domain with its subdomains there.
fn search_domain(domain: &str) -> String {
    domain
        .trim_start_matches("*.")
        .trim_end_matches('.')
        .to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Rule;

    fn rules(allow: &[&str], deny: &[&str]) -> RuleSet {
        let parse = |list: &[&str]| {
            list.iter()
                .map(|r| Rule::try_from(r.to_string()).unwrap())
                .collect()
        };
        RuleSet {
            allow: parse(allow),
            deny: parse(deny),
            ..RuleSet::default()
        }
    }

    #[test]
    fn web_search_is_offered_only_when_allowed() {
        assert_eq!(rules(&[], &[]).web_search(None), None);
        assert_eq!(rules(&["Read"], &[]).web_search(None), None);
        assert_eq!(rules(&["WebSearch"], &["WebSearch"]).web_search(None), None);
        let any = rules(&["WebSearch"], &[]).web_search(Some(3)).unwrap();
        assert!(any.allowed_domains.is_empty() && any.blocked_domains.is_empty());
        assert_eq!(any.max_uses, Some(3));
    }

    #[test]
    fn domain_rules_become_the_apis_domain_lists() {
        let only = rules(
            &[
                "WebSearch(domain:docs.rs)",
                "WebSearch(domain:*.Rust-Lang.org)",
            ],
            &["WebSearch(domain:docs.rs)"],
        )
        .web_search(None)
        .unwrap();
        assert_eq!(only.allowed_domains, vec!["rust-lang.org".to_string()]);
        assert!(only.blocked_domains.is_empty());
        let blocked = rules(&["WebSearch"], &["WebSearch(domain:evil.example)"])
            .web_search(None)
            .unwrap();
        assert_eq!(blocked.blocked_domains, vec!["evil.example".to_string()]);
        assert!(blocked.allowed_domains.is_empty());
        assert!(
            rules(
                &["WebSearch(domain:docs.rs)"],
                &["WebSearch(domain:evil.docs.rs)"]
            )
            .web_search_conflict()
            .is_some_and(|(index, message)| index == 0 && message.contains("evil.docs.rs"))
        );
        assert_eq!(
            rules(&["WebSearch"], &["WebSearch(domain:evil.docs.rs)"]).web_search_conflict(),
            None
        );
        // Every allowed domain blocked: not offered at all.
        assert_eq!(
            rules(
                &["WebSearch(domain:a.example)"],
                &["WebSearch(domain:a.example)"]
            )
            .web_search(None),
            None
        );
    }
}
