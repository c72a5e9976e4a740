//! Permission rules in Claude Code's syntax: `Tool` or `Tool(specifier)`.
//!
//! Rules are parsed and checked when the spec is loaded (drover's
//! `run::plan::spec_checks`), so a typo in a deny rule is a spec error at its line and
//! column, never a rule that silently matches nothing.

use std::fmt;

use drover_spec::{PermissionMode, Permissions, Switch};
use serde_saphyr::Spanned;

use super::ToolFacts;

/// Tools a rule may name (drover's built-ins and the Claude Code tools specs bring over).
pub const KNOWN_TOOLS: &[&str] = &[
    "Read",
    "Write",
    "Edit",
    "MultiEdit",
    "Glob",
    "Grep",
    "LS",
    "Bash",
    "BashOutput",
    "KillShell",
    "TodoWrite",
    "WebFetch",
    "WebSearch",
    "NotebookEdit",
    "ListMcpResources",
    "ReadMcpResource",
    "Agent",
    "Task",
    "Skill",
];

/// The tool that starts sub-agents, and Claude Code's former name of it, which calls,
/// rules and hook matchers accept as the same tool.
pub const AGENT_TOOL: &str = "Agent";
pub const AGENT_TOOL_ALIAS: &str = "Task";

/// The tool that returns a skill's instructions (`Skill(name)` rules name one skill).
pub const SKILL_TOOL: &str = "Skill";

/// Tools whose rules take a path pattern as specifier (`Edit(src/**)`). Which tools a
/// `Read` or `Edit` rule governs besides its own is the tools' to say
/// ([`ToolFacts::path_family`]). Public so drover can check it against the tools' own
/// facts.
pub fn takes_path_specifier(rule_tool: &str) -> bool {
    matches!(
        rule_tool,
        "Read" | "Edit" | "Write" | "MultiEdit" | "Glob" | "Grep" | "LS" | "NotebookEdit"
    )
}

/// Tools whose rules take a name as specifier: which sub-agent (`Agent(Explore)`, as in
/// Claude Code, which also spells it `Task(Explore)`).
pub fn takes_name_specifier(rule_tool: &str) -> bool {
    rule_tool == AGENT_TOOL || rule_tool == AGENT_TOOL_ALIAS
}

/// What a rule's parenthesised part means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Specifier {
    /// `Bash(cargo test *)`: a command pattern, compiled.
    Command(super::command::CommandPattern),
    /// `Edit(src/**)`: a gitignore-style path pattern, compiled.
    Path(super::path_pattern::PathPattern),
    /// `WebFetch(domain:example.com)`: the host normalised as URLs' hosts are
    /// (lowercase, punycode, no trailing dot); `*.example.com` for its subdomains.
    Domain(String),
    /// `Agent(reviewer)`: one named thing the tool starts (a sub-agent's type), exactly.
    Name(String),
    /// `Skill(commit)`, `Skill(review-pr *)`: one skill, by name, whatever its arguments.
    Skill(String),
}

/// A task's permissions with its rules parsed: what the policy judges by. The spec holds
/// the rules as text; [`RuleSet::from_spec`] is where they become rules.
#[derive(Debug, Clone, Default)]
pub struct RuleSet {
    pub allow: Vec<Rule>,
    pub deny: Vec<Rule>,
    pub mode: PermissionMode,
    pub guardrails: Switch,
}

/// A rule of a spec that does not parse: which list, which entry, why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("permissions.{list}[{index}]: {source}")]
pub struct RuleError {
    /// `allow` or `deny`.
    pub list: &'static str,
    pub index: usize,
    pub source: InvalidRule,
}

/// A permission rule that does not parse; the message says what to write instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct InvalidRule {
    /// The rule as written.
    pub rule: String,
    pub message: String,
}

impl RuleSet {
    /// Parse the rules of `permissions`; every rule that does not parse is an error (in
    /// list order, allow's first), so a spec's author fixes them in one pass.
    pub fn from_spec(permissions: &Permissions) -> Result<RuleSet, Vec<RuleError>> {
        let mut errors = Vec::new();
        let mut parse = |list: &'static str, texts: &[Spanned<String>]| {
            let mut rules = Vec::new();
            for (index, text) in texts.iter().enumerate() {
                match Rule::try_from(text.value.clone()) {
                    // `mcp__*` would allow every server, one added later too.
                    Ok(rule) if list == "allow" && rule.tool == EVERY_MCP_TOOL => {
                        errors.push(RuleError {
                            list,
                            index,
                            source: InvalidRule {
                                rule: rule.text,
                                message: format!(
                                    "{EVERY_MCP_TOOL} is for deny: only; allow each server by name (mcp__<server>, or mcp__<server>__<tool>) so a server added later is not allowed unseen"
                                ),
                            },
                        });
                    }
                    Ok(rule) => rules.push(rule),
                    Err(source) => errors.push(RuleError {
                        list,
                        index,
                        source,
                    }),
                }
            }
            rules
        };
        let allow = parse("allow", &permissions.allow);
        let deny = parse("deny", &permissions.deny);
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(RuleSet {
            allow,
            deny,
            mode: permissions.mode,
            guardrails: permissions.guardrails,
        })
    }
}

/// One permission rule, as written and as understood.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    text: String,
    tool: String,
    specifier: Option<Specifier>,
    /// Written as an `ask` rule (a settings file's): it denies, and says why.
    asked: bool,
    /// Taken from a settings file the repository controls (`permissions_from:`): an
    /// allow rule that never reaches past the workspace, nor into `.git/`.
    borrowed: bool,
    /// `mcp__server__get_*`: the server's tools whose names the pattern matches.
    tool_names: Option<McpToolNames>,
}

/// `mcp__server__prefix*` (Claude Code's form): `*` in the tool's part of an MCP rule
/// matches any characters, compiled once when the rule is parsed. The server's part is
/// always a name, so a rule never reaches another server.
#[derive(Debug, Clone)]
struct McpToolNames {
    server_prefix: String,
    tool: regex::Regex,
}

impl PartialEq for McpToolNames {
    fn eq(&self, other: &Self) -> bool {
        self.server_prefix == other.server_prefix && self.tool.as_str() == other.tool.as_str()
    }
}

impl Eq for McpToolNames {}

impl McpToolNames {
    /// The pattern of `rule_tool` when it is `mcp__<server>__<part with *>`; None for
    /// any other name (`mcp__server__*` included: it is every tool of the server).
    fn of(rule_tool: &str) -> Option<McpToolNames> {
        let rest = rule_tool.strip_prefix("mcp__")?;
        let (server, tool) = rest.split_once("__")?;
        if server.is_empty() || server.contains('*') || !tool.contains('*') || tool == "*" {
            return None;
        }
        let pattern = tool
            .split('*')
            .map(regex::escape)
            .collect::<Vec<_>>()
            .join(".*");
        let tool = regex::Regex::new(&format!("^{pattern}$")).ok()?;
        Some(McpToolNames {
            server_prefix: format!("mcp__{server}__"),
            tool,
        })
    }

    fn matches(&self, tool_name: &str) -> bool {
        tool_name
            .strip_prefix(&self.server_prefix)
            .is_some_and(|tool| self.tool.is_match(tool))
    }
}

impl Rule {
    /// The rule exactly as the user wrote it (reported in decisions).
    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn tool(&self) -> &str {
        &self.tool
    }

    pub fn specifier(&self) -> Option<&Specifier> {
        self.specifier.as_ref()
    }

    /// The same rule, written in an `ask` list: headless, it is a deny rule whose
    /// denials say that nobody could be asked.
    pub fn asked(mut self) -> Rule {
        self.asked = true;
        self
    }

    /// Was it written as an `ask` rule?
    pub fn is_asked(&self) -> bool {
        self.asked
    }

    /// The same rule, taken from a settings file (see [`Rule::is_borrowed`]).
    pub(crate) fn borrowed(mut self) -> Rule {
        self.borrowed = true;
        self
    }

    /// Was it taken from a settings file? Then, as an allow rule, it reaches only paths
    /// inside the workspace (not `additional_directories`) and never opens `.git/`,
    /// whatever its pattern: the repository does not lift drover's limits for itself.
    pub fn is_borrowed(&self) -> bool {
        self.borrowed
    }

    /// Does this rule name `tool_name` itself (an `mcp__server` rule: any tool of the
    /// server), before looking at the specifier?
    pub fn governs(&self, tool_name: &str) -> bool {
        if self.tool == tool_name {
            return true;
        }
        if self.tool == EVERY_MCP_TOOL {
            return tool_name.starts_with("mcp__") || MCP_RESOURCE_TOOLS.contains(&tool_name);
        }
        if let Some(names) = &self.tool_names {
            return names.matches(tool_name);
        }
        self.tool.starts_with("mcp__") && mcp_matches(&self.tool, tool_name)
    }

    /// A rule without specifier naming this tool: it covers every call.
    pub fn covers_whole_tool(&self, tool_name: &str) -> bool {
        self.specifier.is_none() && self.governs(tool_name)
    }

    /// Does this rule concern calls of `tool` (before looking at the specifier)? It
    /// names the tool or the tool it serves, or (bare or with a path) the rule family
    /// the tool says governs its paths: `Read` rules govern Glob, Grep and LS too.
    pub fn governs_tool(&self, tool: &ToolFacts) -> bool {
        self.governs(&tool.name)
            || self.governs(&tool.governed_by)
            || (matches!(self.specifier, None | Some(Specifier::Path(_)))
                && tool.path_family.as_deref() == Some(self.tool.as_str()))
    }

    /// Does this deny rule concern calls of `tool`? As [`Rule::governs_tool`], and a
    /// `Write(path)` rule stops every file-editing tool on its path too (Edit, MultiEdit,
    /// NotebookEdit), as in Claude Code: a path Write may not touch must not be edited
    /// either.
    pub fn denies_tool(&self, tool: &ToolFacts) -> bool {
        self.governs_tool(tool)
            || (self.tool == "Write"
                && matches!(self.specifier, Some(Specifier::Path(_)))
                && (tool.name == "Edit" || tool.path_family.as_deref() == Some("Edit")))
    }

    /// A rule without specifier that governs `tool`: it covers every call.
    pub fn covers_whole(&self, tool: &ToolFacts) -> bool {
        self.specifier.is_none() && self.governs_tool(tool)
    }
}

/// The deny rule for every MCP tool of every server, and the resource tools that read
/// from them.
pub(crate) const EVERY_MCP_TOOL: &str = "mcp__*";

/// The tools that reach MCP servers without an `mcp__` name.
pub const MCP_RESOURCE_TOOLS: &[&str] = &["ListMcpResources", "ReadMcpResource"];

/// `mcp__server` covers every tool of the server; `mcp__server__*` too. A rule naming
/// one tool (`mcp__server__tool`) covers that tool only: not `mcp__server__tool__x`, a
/// name the server chose to ride on the rule.
fn mcp_matches(rule: &str, tool: &str) -> bool {
    if let Some(server) = rule.strip_suffix("__*") {
        return tool
            .strip_prefix(server)
            .is_some_and(|rest| rest.starts_with("__"));
    }
    let names_a_tool = rule
        .strip_prefix("mcp__")
        .is_some_and(|rest| rest.contains("__"));
    tool == rule
        || (!names_a_tool
            && tool
                .strip_prefix(rule)
                .is_some_and(|rest| rest.starts_with("__")))
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl TryFrom<String> for Rule {
    type Error = InvalidRule;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        let invalid = |message: String| InvalidRule {
            rule: text.clone(),
            message,
        };
        let trimmed = text.trim();
        let (tool, specifier) = match trimmed.find('(') {
            None => (trimmed, None),
            Some(open) => {
                let Some(inner) = trimmed[open + 1..].strip_suffix(')') else {
                    return Err(invalid(format!(
                        "malformed permission rule {text:?}: a specifier must end with ')', as in Bash(cargo test *)"
                    )));
                };
                (&trimmed[..open], Some(inner.trim()))
            }
        };
        if tool.is_empty()
            || !tool
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '*')
        {
            return Err(invalid(format!(
                "malformed permission rule {text:?}: expected Tool or Tool(specifier)"
            )));
        }
        let tool_names = McpToolNames::of(tool);
        let wildcard_ok = tool == EVERY_MCP_TOOL
            || tool_names.is_some()
            || tool
                .strip_suffix("__*")
                .is_some_and(|server| !server.contains('*'));
        if tool.contains('*') && !wildcard_ok {
            return Err(invalid(format!(
                "malformed permission rule {text:?}: * stands for a whole name (mcp__* for deny only), or for part of an MCP tool's name after its server (mcp__github__get_*); it cannot stand in a server's name"
            )));
        }
        if let Some(rest) = tool.strip_prefix("mcp__")
            && tool != EVERY_MCP_TOOL
        {
            let server = rest.split("__").next().unwrap_or_default();
            if server.is_empty() || server == "*" {
                return Err(invalid(format!(
                    "malformed permission rule {text:?}: name the MCP server, as in mcp__github or mcp__github__create_issue"
                )));
            }
        }
        if !tool.starts_with("mcp__") && !KNOWN_TOOLS.contains(&tool) {
            return Err(invalid(format!(
                "unknown tool {tool:?} in permission rule {text:?}; known tools: {}, or mcp__server[__tool]",
                KNOWN_TOOLS.join(", ")
            )));
        }
        let specifier = match specifier {
            None => None,
            Some("") => {
                return Err(invalid(format!(
                    "empty specifier in permission rule {text:?}: write {tool} to match every call"
                )));
            }
            Some(inner) => Some(parse_specifier(tool, inner, &text)?),
        };
        let tool = if tool == AGENT_TOOL_ALIAS {
            AGENT_TOOL
        } else {
            tool
        };
        Ok(Rule {
            text: trimmed.to_string(),
            tool: tool.to_string(),
            specifier,
            asked: false,
            borrowed: false,
            tool_names,
        })
    }
}

/// The specifier of a `tool` rule written as `text`.
fn parse_specifier(tool: &str, inner: &str, text: &str) -> Result<Specifier, InvalidRule> {
    let invalid = |message: String| InvalidRule {
        rule: text.to_string(),
        message,
    };
    if tool == "Bash" {
        return super::command::CommandPattern::new(inner)
            .map(Specifier::Command)
            .map_err(|e| {
                invalid(format!(
                    "permission rule {text:?}: invalid command pattern: {e}"
                ))
            });
    }
    if tool == "WebFetch" || tool == "WebSearch" {
        return match inner.strip_prefix("domain:") {
            Some(domain) if !domain.is_empty() => super::web::rule_domain(domain)
                .map(Specifier::Domain)
                .map_err(|e| invalid(format!("permission rule {text:?}: {e}"))),
            _ => Err(invalid(format!(
                "malformed permission rule {text:?}: {tool} takes domain:HOST, as in {tool}(domain:example.com)"
            ))),
        };
    }
    if takes_name_specifier(tool) {
        if inner.contains(['*', '?', '[']) || inner.chars().any(char::is_whitespace) {
            return Err(invalid(format!(
                "permission rule {text:?}: {tool}(…) takes one name, exactly (no patterns), as in {tool}(reviewer); write {tool} alone for every one"
            )));
        }
        return Ok(Specifier::Name(inner.to_string()));
    }
    if tool == SKILL_TOOL {
        return super::skill::skill_specifier(inner)
            .map(Specifier::Skill)
            .ok_or_else(|| {
                invalid(format!(
                    "permission rule {text:?}: Skill takes a skill's name, as in Skill(commit) or Skill(review-pr *) (that skill with any arguments); write just Skill for every skill"
                ))
            });
    }
    if takes_path_specifier(tool) {
        return super::path_pattern::PathPattern::new(inner)
            .map(Specifier::Path)
            .map_err(|error| {
                invalid(format!(
                    "invalid path pattern in permission rule {text:?}: {error}"
                ))
            });
    }
    Err(invalid(format!(
        "permission rule {text:?}: {tool} takes no specifier; write just {tool}"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(text: &str) -> Result<Rule, String> {
        Rule::try_from(text.to_string()).map_err(|e| e.to_string())
    }

    #[test]
    fn a_task_rule_names_the_agent_tool() {
        let task = rule("Task").unwrap();
        assert_eq!(task.tool(), "Agent");
        assert_eq!(task.text(), "Task");
        for text in ["Agent(Explore)", "Task(Explore)"] {
            let named = rule(text).unwrap();
            assert_eq!(named.tool(), "Agent");
            assert_eq!(named.specifier(), Some(&Specifier::Name("Explore".into())));
        }
        for text in ["Agent(code-*)", "Agent(a b)", "Task(?)"] {
            assert!(rule(text).is_err(), "{text}: a name is exact");
        }
    }

    #[test]
    fn parses_tool_and_specifier_kinds() {
        assert_eq!(rule("Read").unwrap().specifier(), None);
        match rule("Bash(cargo test *)").unwrap().specifier() {
            Some(Specifier::Command(pattern)) => assert_eq!(pattern.as_str(), "cargo test *"),
            other => panic!("{other:?}"),
        }
        match rule("Edit(src/**)").unwrap().specifier() {
            Some(Specifier::Path(pattern)) => assert_eq!(pattern.as_str(), "src/**"),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            rule("WebFetch(domain:example.com)").unwrap().specifier(),
            Some(&Specifier::Domain("example.com".into()))
        );
        assert!(rule("mcp__github__create_issue").is_ok());
    }

    #[test]
    fn malformed_rules_are_errors_that_say_what_to_write() {
        assert!(rule("Bash(ls").unwrap_err().contains("must end with ')'"));
        assert!(rule("Reed").unwrap_err().contains("unknown tool"));
        assert!(rule("Bash()").unwrap_err().contains("empty specifier"));
        assert!(
            rule("WebFetch(example.com)")
                .unwrap_err()
                .contains("domain:")
        );
        assert!(
            rule("TodoWrite(x)")
                .unwrap_err()
                .contains("takes no specifier")
        );
        assert!(
            rule("Edit(src/[)")
                .unwrap_err()
                .contains("invalid path pattern")
        );
    }

    /// A tool named `name` whose paths `family`'s rules govern too.
    fn tool(name: &str, family: Option<&str>) -> ToolFacts {
        ToolFacts {
            name: name.to_string(),
            read_only: false,
            governed_by: name.to_string(),
            run_state: false,
            path_family: family.map(str::to_string),
        }
    }

    #[test]
    fn path_rules_govern_the_tools_that_name_their_family() {
        let (grep, glob) = (tool("Grep", Some("Read")), tool("Glob", Some("Read")));
        let (write, multi_edit) = (tool("Write", Some("Edit")), tool("MultiEdit", Some("Edit")));
        let read = rule("Read(secrets/**)").unwrap();
        assert!(read.governs_tool(&grep) && read.governs_tool(&glob));
        assert!(!read.governs_tool(&tool("Edit", None)));
        let edit = rule("Edit(src/**)").unwrap();
        assert!(edit.governs_tool(&write) && edit.governs_tool(&multi_edit));
        let bare = rule("Edit").unwrap();
        assert!(bare.governs_tool(&write) && bare.covers_whole(&multi_edit));
        assert!(!rule("Write").unwrap().governs_tool(&tool("Edit", None)));
        // A command rule never governs a tool through a path family.
        assert!(!rule("Glob").unwrap().governs_tool(&grep));
    }

    #[test]
    fn a_rule_naming_one_mcp_tool_covers_that_tool_only() {
        let one = rule("mcp__srv__read").unwrap();
        assert!(one.covers_whole_tool("mcp__srv__read"));
        assert!(!one.covers_whole_tool("mcp__srv__read__all"));
        assert!(!one.covers_whole_tool("mcp__srv__readx"));
        let server = rule("mcp__srv").unwrap();
        assert!(server.covers_whole_tool("mcp__srv__read__all"));
        assert!(!server.covers_whole_tool("mcp__srvx__read"));
    }

    #[test]
    fn mcp_rules_cover_server_tools() {
        let every = rule("mcp__*").unwrap();
        assert!(every.covers_whole_tool("mcp__github__create_issue"));
        assert!(every.covers_whole_tool("ReadMcpResource"));
        assert!(every.covers_whole_tool("ListMcpResources"));
        assert!(!every.covers_whole_tool("Read"));
        assert!(rule("mcp__*(x)").is_err());
        for silent in ["mcp__**", "mcp__gith*", "mcp__*__x", "Re*d"] {
            let error = rule(silent).unwrap_err();
            assert!(
                error.contains("it cannot stand in a server's name")
                    || error.contains("stands for a whole name"),
                "{silent}: {error}"
            );
        }
        let server = rule("mcp__github").unwrap();
        assert!(server.covers_whole_tool("mcp__github__create_issue"));
        assert!(!server.covers_whole_tool("mcp__githubx__a"));
        assert!(
            rule("mcp__github__*")
                .unwrap()
                .covers_whole_tool("mcp__github__x")
        );
    }

    /// Claude Code's `mcp__github__get_*`: part of a tool's name, never another server.
    #[test]
    fn a_star_in_an_mcp_tool_name_matches_that_servers_tools_by_name() {
        let get = rule("mcp__github__get_*").unwrap();
        assert!(get.covers_whole_tool("mcp__github__get_issue"));
        assert!(get.covers_whole_tool("mcp__github__get_"));
        assert!(!get.covers_whole_tool("mcp__github__list_issues"));
        assert!(!get.covers_whole_tool("mcp__githubx__get_issue"));
        assert!(!get.covers_whole_tool("mcp__gh__github__get_x"));
        let middle = rule("mcp__fs__read_*_file").unwrap();
        assert!(middle.covers_whole_tool("mcp__fs__read_text_file"));
        assert!(!middle.covers_whole_tool("mcp__fs__read_text_files"));
        // Names hold no regex syntax: the rest of the name is literal.
        let dashed = rule("mcp__fs__a-b*").unwrap();
        assert!(dashed.covers_whole_tool("mcp__fs__a-bc"));
        assert!(!dashed.covers_whole_tool("mcp__fs__abc"));
    }
}
