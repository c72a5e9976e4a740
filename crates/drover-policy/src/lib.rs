//! The permission policy: every tool call is allowed or denied by the task's rules,
//! never by asking a person.
//!
//! Deny beats allow whatever the order. No matching allow rule means deny, except that
//! read-only tools are allowed on paths inside the workspace. Writes outside the
//! workspace need an allow rule with an absolute pattern. Shell commands are parsed and
//! every command in them must be allowed (see `bash`); guardrails come before any rule.
//!
//! It judges facts (`CallFacts`), never a tool type, and uses only the spec's
//! permissions, the conversation's web search settings, path resolution and the shell
//! analysis: its own crate so the compiler keeps it from reaching into the tools, the
//! loop or the run (drover re-exports it as `crate::policy`).

mod bash;
mod borrowed;
pub mod command;
mod decision;
mod egress;
mod expand;
mod facts;
pub mod guardrails;
mod hidden_code;
mod named_decision;
mod path_decision;
mod path_pattern;
mod read_denials;
mod rule;
pub use drover_shell as shell;
mod shell_paths;
mod skill;
mod web;
mod web_search;
mod words;

use std::path::{Path, PathBuf};

use drover_spec::{PermissionMode, Switch};

pub use borrowed::{Borrowed, SettingsList, borrow_rule};
pub use decision::{Decision, Grounds};
pub use egress::{
    AddressRefused, DEFAULT_PORTS, EgressHost, EgressRuleError, EgressRules, EgressVerdict,
    EntryData, HostError,
};
pub use facts::{CallFacts, HiddenFilter, SearchFilter, Subject, ToolFacts};
pub use read_denials::read_denials;
pub use rule::{
    AGENT_TOOL, AGENT_TOOL_ALIAS, KNOWN_TOOLS, MCP_RESOURCE_TOOLS, Rule, RuleSet, SKILL_TOOL,
    Specifier, takes_name_specifier, takes_path_specifier,
};
pub use web::{AddressKind, HostGrant, UrlGrant, WebGrants, judge_url, restricted_ip};

/// The rules of one task, bound to its workspace.
pub struct Policy {
    allow: Vec<Rule>,
    deny: Vec<Rule>,
    workspace: PathBuf,
    /// Canonical directories outside the workspace that tools may also touch.
    additional: Vec<PathBuf>,
    mode: PermissionMode,
    guardrails: Switch,
    /// The home directory, for `~` and `$HOME` in commands (read once).
    home: Option<PathBuf>,
    /// Canonical paths no tool may write and no command may name, whatever the rules:
    /// drover's artifacts directory, a worktree's `.git` file.
    protected: Vec<PathBuf>,
}

impl Policy {
    /// `workspace` and `additional` should be canonical; paths are compared after
    /// resolving symlinks.
    pub fn new(rules: &RuleSet, workspace: &Path, additional: &[PathBuf]) -> Self {
        Policy {
            allow: rules.allow.clone(),
            deny: rules.deny.clone(),
            workspace: workspace.to_path_buf(),
            additional: additional.to_vec(),
            mode: rules.mode,
            guardrails: rules.guardrails,
            home: expand::home_dir(),
            protected: Vec::new(),
        }
    }

    /// The same policy with `protected` (canonical paths) off limits to every tool.
    pub fn with_protected(mut self, protected: Vec<PathBuf>) -> Self {
        self.protected = protected;
        self
    }

    /// The protected path `path` lies in, if any.
    fn protected_by(&self, path: &Path) -> Option<&Path> {
        self.protected
            .iter()
            .find(|protected| path.starts_with(protected))
            .map(PathBuf::as_path)
    }

    /// Why `tool` is not offered to the model at all, or None when it is: a tool denied
    /// outright (`deny: [Bash]`), or a tool that is not read-only in plan mode.
    pub fn withholds(&self, tool: &ToolFacts) -> Option<Decision> {
        let name = &tool.name;
        if let Some(rule) = self.deny.iter().find(|rule| rule.covers_whole(tool)) {
            return Some(Decision::deny(
                Some(rule),
                format!("{name} is denied outright by rule {rule} and not offered to the model"),
            ));
        }
        if self.mode == PermissionMode::Plan && !tool.read_only {
            return Some(Decision::deny(
                None,
                format!("{name} is not read-only, and permissions.mode is plan: it is not offered"),
            ));
        }
        None
    }

    /// Decide one call. `input` has already passed the tool's schema.
    pub fn decide(&self, call: &CallFacts) -> Decision {
        self.decide_in(call, &self.workspace.clone())
    }

    /// Decide one call whose shell command (if any) runs in `cwd`: a command's relative
    /// paths and `cd` targets are resolved where the command will really run.
    pub fn decide_in(&self, call: &CallFacts, cwd: &Path) -> Decision {
        let tool = &call.tool;
        match &call.subject {
            Subject::Command(line) => self.decide_command(&tool.name, line, cwd),
            Subject::Path(raw) => self.decide_path(tool, Some(raw)),
            Subject::Url(raw) => self.decide_url(tool, raw),
            Subject::Name(name) => self.decide_named(tool, name),
            Subject::Skill(name) => self.decide_skill(tool, name),
            Subject::None => self.decide_path(tool, None),
        }
    }
}

#[cfg(test)]
#[path = "lib_tests.rs"]
mod tests;
