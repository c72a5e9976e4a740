//! Deciding calls that start one named thing: an `Agent` call's sub-agent type, judged
//! by rules naming it (`Agent(reviewer)`, Claude Code's way to turn one sub-agent off)
//! and by the tool's own.

use super::{Decision, Policy, Rule, Specifier, ToolFacts};

impl Policy {
    /// Decide a call of `tool` starting `name`.
    pub(super) fn decide_named(&self, tool: &ToolFacts, name: &str) -> Decision {
        let covers = |rule: &&Rule| match rule.specifier() {
            None => true,
            Some(Specifier::Name(named)) => named == name,
            Some(_) => false,
        };
        let described = format!("{}({name})", tool.name);
        if let Some(rule) = self
            .deny
            .iter()
            .filter(|rule| rule.governs_tool(tool))
            .find(covers)
        {
            return Decision::deny(Some(rule), format!("{described} is denied by rule {rule}"));
        }
        if let Some(rule) = self
            .allow
            .iter()
            .filter(|rule| rule.governs_tool(tool))
            .find(covers)
        {
            return Decision::allow(Some(rule), format!("{described} is allowed by rule {rule}"));
        }
        if tool.run_state {
            return Decision::allow(
                None,
                format!("{described}: its own calls are judged one by one (default)"),
            );
        }
        Decision::deny(
            None,
            format!(
                "{described} matches no allow rule (default deny); add {} or {described} to permissions.allow if the task needs it",
                tool.name
            ),
        )
    }
}
