//! Deciding `Skill` calls: which skill a call asks for, against `Skill` and
//! `Skill(name)` rules.
//!
//! A `Skill` call returns the instructions of a skill the spec itself loaded
//! (`skills_from:`); it touches no file, runs nothing and reaches nothing. So, like a
//! read inside the workspace, it is allowed unless a deny rule names the tool or the
//! skill. `Skill(name)` and `Skill(name *)` (Claude Code's exact and "with any
//! arguments" forms) both name the skill whatever its arguments: the arguments only fill
//! `$ARGUMENTS` in its text, so a deny rule of either form stops every call of it.

use super::{Decision, Policy, Rule, Specifier, ToolFacts};

/// The skill name a `Skill(…)` rule's specifier names: `name`, `name *` or `name:*`;
/// None when it names no skill.
pub(super) fn skill_specifier(inner: &str) -> Option<String> {
    let name = inner
        .strip_suffix(" *")
        .or_else(|| inner.strip_suffix(":*"))
        .unwrap_or(inner)
        .trim_end();
    let valid = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '.');
    (!name.is_empty() && name.chars().all(valid)).then(|| name.to_string())
}

/// Does `rule` (one governing the Skill tool) cover a call of the skill `name`?
fn covers(rule: &Rule, name: &str) -> bool {
    match rule.specifier() {
        None => true,
        Some(Specifier::Skill(skill)) => skill == name,
        Some(_) => false,
    }
}

impl Policy {
    /// Decide a call of `tool` asking for the skill `name`.
    pub(super) fn decide_skill(&self, tool: &ToolFacts, name: &str) -> Decision {
        let described = format!("{}({name})", tool.name);
        if let Some(rule) = self
            .deny
            .iter()
            .find(|rule| rule.governs_tool(tool) && covers(rule, name))
        {
            return Decision::deny(Some(rule), format!("{described} is denied by rule {rule}"));
        }
        if let Some(rule) = self
            .allow
            .iter()
            .find(|rule| rule.governs_tool(tool) && covers(rule, name))
        {
            return Decision::allow(Some(rule), format!("{described} is allowed by rule {rule}"));
        }
        if tool.read_only {
            return Decision::allow(
                None,
                format!(
                    "{described}: returns instructions the spec loaded and touches nothing (default)"
                ),
            );
        }
        Decision::deny(
            None,
            format!("{described} matches no allow rule (default deny)"),
        )
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::super::{CallFacts, RuleSet, Subject};
    use super::*;

    fn skill_tool() -> ToolFacts {
        ToolFacts {
            name: "Skill".into(),
            read_only: true,
            governed_by: "Skill".into(),
            run_state: false,
            path_family: None,
        }
    }

    fn policy(allow: &[&str], deny: &[&str]) -> Policy {
        let parse = |rules: &[&str]| {
            rules
                .iter()
                .map(|text| Rule::try_from(text.to_string()).unwrap())
                .collect()
        };
        let rules = RuleSet {
            allow: parse(allow),
            deny: parse(deny),
            ..RuleSet::default()
        };
        Policy::new(&rules, Path::new("/ws"), &[])
    }

    fn decide(policy: &Policy, name: &str) -> Decision {
        policy.decide(&CallFacts {
            tool: skill_tool(),
            subject: Subject::Skill(name.into()),
        })
    }

    #[test]
    fn every_documented_rule_form_parses_or_is_refused() {
        for (text, name) in [
            ("Skill(commit)", "commit"),
            ("Skill(review-pr *)", "review-pr"),
            ("Skill(review-pr:*)", "review-pr"),
            ("Skill(plugin:pdf)", "plugin:pdf"),
        ] {
            let rule = Rule::try_from(text.to_string()).unwrap();
            assert_eq!(
                rule.specifier(),
                Some(&Specifier::Skill(name.into())),
                "{text}"
            );
        }
        assert!(
            Rule::try_from("Skill".to_string())
                .unwrap()
                .specifier()
                .is_none()
        );
        for bad in ["Skill(*)", "Skill(de*ploy)", "Skill(a b)", "Skill( *)"] {
            let error = Rule::try_from(bad.to_string()).unwrap_err().to_string();
            assert!(
                error.contains("Skill takes a skill's name"),
                "{bad}: {error}"
            );
        }
    }

    #[test]
    fn skills_are_allowed_unless_a_rule_denies_them() {
        let open = policy(&[], &[]);
        let decision = decide(&open, "pdf");
        assert!(decision.allowed(), "{decision:?}");
        assert_eq!(decision.rule(), None);
        let some = policy(&[], &["Skill(deploy *)", "Skill(release)"]);
        for denied in ["deploy", "release"] {
            let decision = decide(&some, denied);
            assert!(!decision.allowed(), "{denied}");
            assert!(decision.reason().contains("is denied by rule"), "{denied}");
        }
        assert!(
            decide(&some, "deploy-docs").allowed(),
            "an exact name, not a prefix"
        );
        assert!(decide(&some, "pdf").allowed());
        let all = policy(&["Skill(pdf)"], &["Skill"]);
        assert!(!decide(&all, "pdf").allowed(), "deny beats allow");
        assert!(
            all.withholds(&skill_tool()).is_some(),
            "Skill is not offered"
        );
        let named = policy(&["Skill(pdf)"], &[]);
        assert_eq!(decide(&named, "pdf").rule(), Some("Skill(pdf)"));
    }
}
