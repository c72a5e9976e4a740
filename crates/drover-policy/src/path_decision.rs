//! Deciding calls that name a path (or nothing): Read, Write, Edit, Glob, Grep, LS, and
//! tools that touch only the run's own state. Shell commands reuse the same path checks
//! for their arguments and redirections.

use std::path::PathBuf;

use drover_paths as paths;

use super::path_pattern::PathPattern;
use super::{Decision, Policy, Rule, Specifier, ToolFacts};

/// A path from a tool input, resolved as the tool will see it.
pub(super) struct PathTarget {
    /// Absolute, with `..` removed and symlinks resolved (for a new file, its parent's).
    pub absolute: PathBuf,
    /// Relative to the workspace, when inside it.
    pub relative: Option<String>,
    /// Inside the workspace or an additional directory.
    pub confined: bool,
}

impl PathTarget {
    /// How decisions name the path: relative inside the workspace, else absolute.
    pub(super) fn shown(&self) -> String {
        match &self.relative {
            Some(rel) if rel.is_empty() => ".".to_string(),
            Some(rel) => rel.clone(),
            None => self.absolute.display().to_string(),
        }
    }

    /// Inside the workspace's `.git/`: git's own state, which an agent rewriting would
    /// corrupt history or plant hooks with.
    pub(super) fn in_git_internals(&self) -> bool {
        self.relative
            .as_deref()
            .is_some_and(|rel| rel.split('/').any(|part| part == ".git"))
    }
}

/// A path the policy will not judge, so every call naming it is denied.
#[derive(Debug, thiserror::Error)]
pub(super) enum Unjudgeable {
    /// Empty, NUL bytes, or not resolvable.
    #[error(transparent)]
    Invalid(#[from] paths::PathError),
    #[error(
        "{raw} goes through /proc or /dev/fd, whose meaning depends on the process that opens it; drover does not judge such paths"
    )]
    ThroughProcess { raw: String },
}

impl Policy {
    /// Resolve a path as written in a tool input (relative to the workspace, or absolute).
    pub(super) fn resolve_path(&self, raw: &str) -> Result<PathTarget, Unjudgeable> {
        self.resolve_path_from(&self.workspace, raw)
    }

    /// Resolve a path relative to `base` (a shell's working directory), or absolute.
    pub(super) fn resolve_path_from(
        &self,
        base: &std::path::Path,
        raw: &str,
    ) -> Result<PathTarget, Unjudgeable> {
        // Resolved as the kernel will: symlinks followed, `..` taken after them, so a
        // link inside the workspace cannot point a rule check at one file and the tool
        // at another.
        let physical = paths::resolve_physical(base, raw)?;
        if physical.through_process {
            return Err(Unjudgeable::ThroughProcess {
                raw: raw.to_string(),
            });
        }
        let absolute = physical.path;
        let relative = paths::relative_to(&self.workspace, &absolute);
        let confined =
            relative.is_some() || self.additional.iter().any(|dir| absolute.starts_with(dir));
        Ok(PathTarget {
            absolute,
            relative,
            confined,
        })
    }

    /// Decide a call of tool `name` on `raw` (None: the call names no path).
    /// The decision carries the path it judged, for the tool to act on.
    pub(super) fn decide_path(&self, tool: &ToolFacts, raw: Option<&str>) -> Decision {
        let target = match raw.map(|raw| self.resolve_path(raw)).transpose() {
            Ok(target) => target,
            Err(reason) => return Decision::deny(None, reason.to_string()),
        };
        self.judge_path(tool, target.as_ref())
            .on(target.map(|t| t.absolute))
    }

    fn judge_path(&self, tool: &ToolFacts, target: Option<&PathTarget>) -> Decision {
        let (name, read_only) = (tool.name.as_str(), tool.read_only);
        let described = match target {
            Some(target) => format!("{name}({})", target.shown()),
            None => name.to_string(),
        };
        let denied = match target {
            Some(target) => self.path_denied_by(tool, target),
            None => self.deny.iter().find(|rule| rule.covers_whole(tool)),
        };
        if let Some(rule) = denied {
            return Decision::deny(Some(rule), format!("{described} is denied by rule {rule}"));
        }
        if !read_only && let Some(protected) = target.and_then(|t| self.protected_by(&t.absolute)) {
            return Decision::deny(
                None,
                format!(
                    "{described} would write into {}, which drover keeps off limits to every tool (its artifacts, or a worktree's .git file)",
                    protected.display()
                ),
            );
        }
        let allowed = match target {
            Some(target) => self.path_allowed_by(tool, target),
            None => self.allow.iter().find(|rule| rule.covers_whole(tool)),
        };
        if let Some(rule) = allowed {
            return Decision::allow(Some(rule), format!("{described} is allowed by rule {rule}"));
        }
        if tool.run_state {
            return Decision::allow(
                None,
                format!("{described}: acts only on this run's own state (default)"),
            );
        }
        if read_only && target.is_none_or(|t| t.confined) {
            return Decision::allow(
                None,
                format!("{described}: read-only tool inside the workspace (default)"),
            );
        }
        let hint = match target {
            Some(t) if !read_only && t.in_git_internals() => "; writes into .git/ need an allow rule that names .git explicitly, e.g. Edit(.git/hooks/**)".to_string(),
            Some(t) if !t.confined => format!(
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

    /// A filter saying which files a search tool walking directories (Grep, Glob, LS)
    /// must skip: those a `Read(…)` deny rule covers, for every search tool, and those a
    /// deny rule naming the search tool itself covers (`Grep(secrets/**)`), for it. So a
    /// search of a directory cannot read or list around a deny rule on a path.
    pub fn hidden_filter(&self) -> std::sync::Arc<super::SearchFilter> {
        let rules: Vec<Rule> = self
            .deny
            .iter()
            .filter(|rule| matches!(rule.specifier(), Some(Specifier::Path(_))))
            .cloned()
            .collect();
        let workspace = self.workspace.clone();
        std::sync::Arc::new(move |tool: &str, path: &std::path::Path| {
            let relative = paths::relative_to(&workspace, path);
            rules
                .iter()
                .filter(|rule| rule.tool() == "Read" || rule.tool() == tool)
                .any(|rule| match rule.specifier() {
                    Some(Specifier::Path(pattern)) => pattern.matches(path, relative.as_deref()),
                    _ => false,
                })
        })
    }

    /// The first deny rule governing `tool` that covers the path.
    pub(super) fn path_denied_by(&self, tool: &ToolFacts, target: &PathTarget) -> Option<&Rule> {
        self.deny
            .iter()
            .filter(|rule| rule.denies_tool(tool))
            .find(|rule| match rule.specifier() {
                None => rule.governs_tool(tool),
                Some(Specifier::Path(pattern)) => {
                    pattern.matches(&target.absolute, target.relative.as_deref())
                        || covers_contents(pattern, target)
                }
                Some(_) => false,
            })
    }

    /// The first allow rule governing `tool` that covers the path. A bare rule does not
    /// carry writes out of the workspace, and writes into `.git/` need a rule naming it.
    pub(super) fn path_allowed_by(&self, tool: &ToolFacts, target: &PathTarget) -> Option<&Rule> {
        let git_internals = !tool.read_only && target.in_git_internals();
        self.allow
            .iter()
            .filter(|rule| rule.governs_tool(tool))
            .filter(|rule| !git_internals || (names_git_dir(rule) && !rule.is_borrowed()))
            .find(|rule| match rule.specifier() {
                // A bare rule is not explicit about paths: it never reaches outside (a
                // settings file's, not even into additional directories).
                None if rule.is_borrowed() => target.relative.is_some(),
                None => target.confined,
                Some(Specifier::Path(pattern)) => {
                    pattern.matches(&target.absolute, target.relative.as_deref())
                }
                Some(_) => false,
            })
    }
}

/// Does the pattern cover everything inside the target directory (`secrets/**` for a
/// search of `secrets`)? Then searching or listing it is denied outright; partial
/// coverage is handled by the tools skipping hidden files.
fn covers_contents(pattern: &PathPattern, target: &PathTarget) -> bool {
    if !target.absolute.is_dir() {
        return false;
    }
    let probe = "drover-probe.any";
    let absolute = target.absolute.join(probe);
    let relative = target.relative.as_deref().map(|rel| {
        if rel.is_empty() {
            probe.to_string()
        } else {
            format!("{rel}/{probe}")
        }
    });
    pattern.matches(&absolute, relative.as_deref())
}

/// An allow rule that names `.git` in its pattern: the user meant it.
fn names_git_dir(rule: &Rule) -> bool {
    matches!(rule.specifier(), Some(Specifier::Path(pattern)) if pattern.as_str().contains(".git"))
}
