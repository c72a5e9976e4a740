//! The permission policy: every tool call is allowed or denied by the task's rules,
//! never by asking a person.
//!
//! Deny beats allow whatever the order. No matching allow rule means deny, except that
//! read-only tools are allowed on paths inside the workspace. Writes outside the
//! workspace need an allow rule with an absolute pattern.

pub mod command;
mod expand;
pub mod guardrails;
mod path_pattern;
mod rule;
pub mod sandbox;
pub mod shell;

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

pub use rule::{KNOWN_TOOLS, Rule, Specifier};

use crate::spec::{PermissionMode, Permissions};
use crate::tools::{Subject, Tool};
use crate::workspace::paths;

/// Tools that only touch the run's own state (its plan, the shells it started), allowed
/// unless a rule denies them.
const RUN_STATE_TOOLS: &[&str] = &["TodoWrite", "BashOutput", "KillShell"];

/// A decision with its grounds, as recorded in the transcript and told to the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Decision {
    pub allowed: bool,
    /// The rule that decided, or None for a default.
    pub rule: Option<String>,
    pub reason: String,
}

impl Decision {
    fn allow(rule: Option<&Rule>, reason: impl Into<String>) -> Self {
        Decision {
            allowed: true,
            rule: rule.map(|r| r.text().to_string()),
            reason: reason.into(),
        }
    }

    fn deny(rule: Option<&Rule>, reason: impl Into<String>) -> Self {
        Decision {
            allowed: false,
            rule: rule.map(|r| r.text().to_string()),
            reason: reason.into(),
        }
    }
}

/// The rules of one task, bound to its workspace.
pub struct Policy {
    allow: Vec<Rule>,
    deny: Vec<Rule>,
    workspace: PathBuf,
    /// Canonical directories outside the workspace that tools may also touch.
    additional: Vec<PathBuf>,
    mode: PermissionMode,
}

/// A call's subject once resolved against the workspace.
enum Target {
    None,
    Path {
        absolute: PathBuf,
        /// Relative to the workspace, when inside it.
        relative: Option<String>,
        /// Inside the workspace or an additional directory.
        confined: bool,
    },
    Command(String),
}

impl Policy {
    /// `workspace` and `additional` should be canonical; paths are compared after
    /// resolving symlinks.
    pub fn new(permissions: &Permissions, workspace: &Path, additional: &[PathBuf]) -> Self {
        Policy {
            allow: permissions.allow.clone(),
            deny: permissions.deny.clone(),
            workspace: workspace.to_path_buf(),
            additional: additional.to_vec(),
            mode: permissions.mode,
        }
    }

    /// Why `tool` is not offered to the model at all, or None when it is: a tool denied
    /// outright (`deny: [Bash]`), or a tool that is not read-only in plan mode.
    pub fn withholds(&self, tool: &dyn Tool) -> Option<Decision> {
        let name = tool.name();
        if let Some(rule) = self.deny.iter().find(|rule| rule.covers_whole_tool(name)) {
            return Some(Decision::deny(
                Some(rule),
                format!("{name} is denied outright by rule {rule} and not offered to the model"),
            ));
        }
        if self.mode == PermissionMode::Plan && !tool.is_read_only() {
            return Some(Decision::deny(
                None,
                format!("{name} is not read-only, and permissions.mode is plan: it is not offered"),
            ));
        }
        None
    }

    /// Decide one call. `input` has already passed the tool's schema.
    pub fn decide(&self, tool: &dyn Tool, input: &Value) -> Decision {
        let name = tool.name();
        let target = match self.resolve(tool.subject(input)) {
            Ok(target) => target,
            Err(reason) => return Decision::deny(None, reason),
        };
        let described = describe(name, &target);

        for rule in self.deny.iter().filter(|rule| rule.governs(name)) {
            if let Some(why) = self.deny_matches(rule, &target) {
                return Decision::deny(
                    Some(rule),
                    format!("{described} is denied by rule {rule}{why}"),
                );
            }
        }
        let git_internals = !tool.is_read_only() && touches_git_internals(&target);
        for rule in self.allow.iter().filter(|rule| rule.governs(name)) {
            if git_internals && !names_git_dir(rule) {
                continue;
            }
            if self.allow_matches(rule, tool, &target) {
                return Decision::allow(
                    Some(rule),
                    format!("{described} is allowed by rule {rule}"),
                );
            }
        }
        let inside = match &target {
            Target::Path { confined, .. } => *confined,
            Target::None => true,
            Target::Command(_) => false,
        };
        if RUN_STATE_TOOLS.contains(&name) {
            return Decision::allow(
                None,
                format!("{described}: acts only on this run's own state (default)"),
            );
        }
        if tool.is_read_only() && inside {
            return Decision::allow(
                None,
                format!("{described}: read-only tool inside the workspace (default)"),
            );
        }
        let hint = match &target {
            _ if git_internals => "; writes into .git/ need an allow rule that names .git explicitly, e.g. Edit(.git/hooks/**)".to_string(),
            Target::Path {
                confined: false, ..
            } => format!(
                "; the path is outside the workspace {} (and permissions.additional_directories)",
                self.workspace.display()
            ),
            _ => format!(
                "; add a rule such as {name} or {name}(…) to permissions.allow if the task needs it"
            ),
        };
        Decision::deny(
            None,
            format!("{described} matches no allow rule (default deny){hint}"),
        )
    }

    fn resolve(&self, subject: Subject) -> Result<Target, String> {
        Ok(match subject {
            Subject::None => Target::None,
            Subject::Command(command) => Target::Command(command),
            Subject::Path(raw) => {
                let lexical = paths::resolve(&self.workspace, &raw).map_err(|e| e.to_string())?;
                // Resolve symlinks so a link inside the workspace cannot point a rule
                // check at one file and the tool at another.
                let absolute = paths::canonicalize_for_write(&lexical).unwrap_or(lexical);
                let relative = paths::relative_to(&self.workspace, &absolute);
                let confined = relative.is_some()
                    || self.additional.iter().any(|dir| absolute.starts_with(dir));
                Target::Path {
                    absolute,
                    relative,
                    confined,
                }
            }
        })
    }

    /// Some(explanation) when a deny rule applies to the target.
    fn deny_matches(&self, rule: &Rule, target: &Target) -> Option<String> {
        match (rule.specifier(), target) {
            (None, _) => Some(String::new()),
            (Some(Specifier::Command(pattern)), Target::Command(command)) => {
                if !command::is_plain(command) {
                    Some(" (the command uses shell syntax, so drover cannot rule out that a part of it matches; split it into plain commands)".into())
                } else if command::matches(pattern, command) {
                    Some(String::new())
                } else {
                    None
                }
            }
            (
                Some(Specifier::Path(pattern)),
                Target::Path {
                    absolute, relative, ..
                },
            ) => path_pattern::matches(pattern, absolute, relative.as_deref()).then(String::new),
            _ => None,
        }
    }

    fn allow_matches(&self, rule: &Rule, tool: &dyn Tool, target: &Target) -> bool {
        match (rule.specifier(), target) {
            // A bare allow rule does not carry writes out of the workspace.
            (
                None,
                Target::Path {
                    confined: false, ..
                },
            ) => tool.is_read_only(),
            (None, _) => true,
            (Some(Specifier::Command(pattern)), Target::Command(command)) => {
                command::is_plain(command) && command::matches(pattern, command)
            }
            (
                Some(Specifier::Path(pattern)),
                Target::Path {
                    absolute, relative, ..
                },
            ) => path_pattern::matches(pattern, absolute, relative.as_deref()),
            _ => false,
        }
    }
}

/// A path inside the workspace's `.git/` directory: git's own state, which an agent
/// rewriting would corrupt history or plant hooks.
fn touches_git_internals(target: &Target) -> bool {
    matches!(target, Target::Path { relative: Some(rel), .. }
        if rel == ".git" || rel.starts_with(".git/"))
}

/// An allow rule that names `.git` in its pattern: the user meant it.
fn names_git_dir(rule: &Rule) -> bool {
    matches!(rule.specifier(), Some(Specifier::Path(pattern)) if pattern.contains(".git"))
}

fn describe(tool: &str, target: &Target) -> String {
    match target {
        Target::None => tool.to_string(),
        Target::Path {
            absolute, relative, ..
        } => match relative {
            Some(rel) if rel.is_empty() => format!("{tool}(.)"),
            Some(rel) => format!("{tool}({rel})"),
            None => format!("{tool}({})", absolute.display()),
        },
        Target::Command(command) => format!("{tool}({command})"),
    }
}

#[cfg(test)]
mod tests;
