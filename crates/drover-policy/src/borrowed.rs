//! Rules borrowed from a Claude Code settings file (`permissions_from:`).
//!
//! Such a file usually lives in the repository under test, which a pull request can
//! change, so it is not trusted as the spec is. What only narrows the policy is taken
//! whole: its `deny` rules, and its `ask` rules as deny rules (headless, nobody can be
//! asked). What widens it is taken only where the OS sandbox and the workspace still
//! bound it: an allow rule reaching outside the workspace (`//abs`, `~/`) or into
//! `.git/`, letting drover's own process reach the network (WebFetch, WebSearch),
//! choosing MCP tools (whose servers hold what the spec gave them), or running commands
//! while the sandbox is off, is left out with a note, as is a rule that does not parse.
//! What is applied is marked borrowed, so the policy keeps even a bare `Edit` from a
//! file inside the workspace and out of `.git/` ([`Rule::is_borrowed`]). A deny or ask rule that does not parse is
//! refused: leaving it out would protect less than the file says.

use super::Specifier;
use super::rule::{InvalidRule, KNOWN_TOOLS, MCP_RESOURCE_TOOLS, Rule, RuleSet};

/// Which list of a settings file a rule was written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettingsList {
    Allow,
    Deny,
    Ask,
}

impl SettingsList {
    pub fn as_str(self) -> &'static str {
        match self {
            SettingsList::Allow => "allow",
            SettingsList::Deny => "deny",
            SettingsList::Ask => "ask",
        }
    }
}

/// What becomes of one rule of a settings file.
#[derive(Debug)]
pub enum Borrowed {
    /// It joins the task's rules: an allow rule as allow, a deny or ask rule as deny.
    Applied(Box<Rule>),
    /// It is left out, and this says why and what to do instead.
    LeftOut(String),
}

/// Decide what the rule `text`, written in `list` of a settings file, becomes, for a task
/// whose commands run `sandboxed` (or not); an error is a deny or ask rule that cannot
/// be applied as written.
pub fn borrow_rule(
    list: SettingsList,
    text: &str,
    sandboxed: bool,
) -> Result<Borrowed, InvalidRule> {
    let tool = rule_tool(text);
    if is_plain_name(tool) && !tool.starts_with("mcp__") && !KNOWN_TOOLS.contains(&tool) {
        return Ok(Borrowed::LeftOut(format!(
            "drover has no tool {tool}, so the rule has nothing to {}",
            if list == SettingsList::Allow {
                "allow"
            } else {
                "deny"
            }
        )));
    }
    let rule = match (Rule::try_from(text.to_string()), list) {
        (Ok(rule), _) => rule,
        (Err(invalid), SettingsList::Allow) => return Ok(Borrowed::LeftOut(invalid.message)),
        (Err(invalid), _) => return Err(invalid),
    };
    Ok(match list {
        SettingsList::Deny => Borrowed::Applied(Box::new(rule)),
        SettingsList::Ask => Borrowed::Applied(Box::new(rule.asked())),
        SettingsList::Allow => match widening(&rule, sandboxed) {
            Some(why) => Borrowed::LeftOut(why),
            None => Borrowed::Applied(Box::new(rule.borrowed())),
        },
    })
}

/// Why an allow rule from a settings file may not apply, if it may not.
fn widening(rule: &Rule, sandboxed: bool) -> Option<String> {
    if rule.tool() == "WebFetch" || rule.tool() == "WebSearch" {
        return Some(format!(
            "{} reaches the network from drover's own process, outside the sandbox; a file the repository controls does not choose where (write the rule in the spec's permissions.allow if the task needs it)",
            rule.tool()
        ));
    }
    if rule.tool().starts_with("mcp__") || MCP_RESOURCE_TOOLS.contains(&rule.tool()) {
        return Some(
            "MCP servers run with what the spec gives them (credentials, their own sandbox); a file the repository controls does not choose which of their tools run (allow them in the spec's permissions.allow)".to_string(),
        );
    }
    if rule.tool() == "Bash" && !sandboxed {
        return Some(
            "the task's sandbox is off, so its commands would run unconfined; a file the repository controls only allows commands inside the sandbox (write the rule in the spec's permissions.allow if the task needs it)".to_string(),
        );
    }
    match rule.specifier() {
        Some(Specifier::Path(pattern)) if pattern.reaches_outside_workspace() => Some(
            "it names paths outside the workspace; a file the repository controls only allows inside it (write the rule in the spec's permissions.allow if the task needs it)".to_string(),
        ),
        Some(Specifier::Path(pattern)) if pattern.as_str().split('/').any(|part| part == ".git") => Some(
            "it names .git, whose hooks and config run outside the sandbox; a file the repository controls never opens it (write the rule in the spec's permissions.allow if the task needs it)".to_string(),
        ),
        _ => None,
    }
}

/// The tool name a rule's text starts with (before any specifier).
fn rule_tool(text: &str) -> &str {
    let trimmed = text.trim();
    trimmed.find('(').map_or(trimmed, |open| &trimmed[..open])
}

/// A name as tools are named (so a malformed rule is reported as malformed, not as a
/// tool drover lacks).
fn is_plain_name(tool: &str) -> bool {
    !tool.is_empty()
        && tool
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

impl RuleSet {
    /// Add a rule [`borrow_rule`] applied: deny and ask rules deny, allow rules allow.
    pub fn add_borrowed(&mut self, rule: Rule, list: SettingsList) {
        match list {
            SettingsList::Allow => self.allow.push(rule),
            SettingsList::Deny | SettingsList::Ask => self.deny.push(rule),
        }
    }
}

#[cfg(test)]
#[path = "borrowed_tests.rs"]
mod tests;
