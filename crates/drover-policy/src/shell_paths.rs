//! The paths a shell command touches, as the policy judges them: where the command
//! runs (the shell's directory and every `cd` target in the line), the files its
//! arguments and redirections name (globs expanded, `$PWD` and `~+` resolved), and the
//! Read/Edit rules on those files.

use super::ToolFacts;
use std::path::Path;

use super::expand::expand_word;
use super::shell::{Analysis, SimpleCommand};
use super::{Decision, Policy, Rule, Specifier};

impl Policy {
    /// A Read deny rule on a file the argument names, or an Edit deny rule on it: a deny
    /// rule on a path keeps the shell's hands off that path, whatever the program.
    pub(super) fn path_arg_denial(
        &self,
        command: &SimpleCommand,
        candidate: &str,
        dirs: &[std::path::PathBuf],
    ) -> Option<Decision> {
        for target in self.arg_targets(candidate, dirs) {
            if let Some(protected) = self.protected_by(&target.absolute) {
                return Some(Decision::deny(
                    None,
                    format!(
                        "`{}` names {}, inside {}, which drover keeps off limits to commands (its artifacts, or a worktree's .git file)",
                        command.source,
                        target.shown(),
                        protected.display()
                    ),
                ));
            }
            if let Some(rule) = self.path_denied_by(&ToolFacts::reading_files(), &target) {
                return Some(Decision::deny(
                    Some(rule),
                    format!(
                        "`{}` names {}, which rule {rule} denies reading",
                        command.source,
                        target.shown()
                    ),
                ));
            }
            if let Some(rule) = self.path_denied_by(&ToolFacts::writing_files(), &target) {
                return Some(Decision::deny(
                    Some(rule),
                    format!(
                        "`{}` names {}, which rule {rule} keeps off limits",
                        command.source,
                        target.shown()
                    ),
                ));
            }
        }
        None
    }

    /// Deny rules of the Read or Edit family on paths inside the workspace (relative
    /// patterns): the OS sandbox cannot enforce those, so a file name the policy cannot
    /// resolve must be refused. (`//abs` and `~/` Read denials the sandbox enforces.)
    pub(super) fn has_path_deny_rules(&self) -> bool {
        self.deny.iter().any(|rule| {
            matches!(rule.specifier(), Some(Specifier::Path(p)) if !p.as_str().starts_with("//") && !p.as_str().starts_with("~/"))
                && matches!(rule.tool(), "Read" | "Edit")
        })
    }

    /// A word with an expansion the policy cannot resolve (`$HOME` and `$PWD` it can).
    pub(super) fn unresolved(&self, word: &str, cwd: &Path) -> bool {
        self.static_path(word, cwd).is_none()
    }

    /// Every directory a command of this line may run in: where the shell is, and each
    /// static `cd` target in the line (a `cd` that is not static is refused on its own).
    /// Relative paths are judged from all of them, so `cd secrets && echo x > key` is
    /// judged as a write to `secrets/key`.
    pub(super) fn possible_dirs(&self, analysis: &Analysis, cwd: &Path) -> Vec<std::path::PathBuf> {
        let mut dirs = vec![cwd.to_path_buf()];
        for command in analysis.commands.iter().filter(|c| is_cd(c)) {
            let target = cd_target(command);
            for base in dirs.clone() {
                if let Some(resolved) = self.static_path(target, &base)
                    && !dirs.contains(&resolved.absolute)
                {
                    dirs.push(resolved.absolute);
                }
            }
        }
        dirs
    }

    /// The files an argument may name, from each possible directory. A glob (`.e*`,
    /// `secrets/*`) is expanded against the file system, as the shell would.
    pub(super) fn arg_targets(
        &self,
        arg: &str,
        dirs: &[std::path::PathBuf],
    ) -> Vec<super::path_decision::PathTarget> {
        let mut targets = Vec::new();
        for dir in dirs {
            if arg.contains(['*', '?', '[']) {
                let normalized = drover_paths::normalize(Path::new(arg));
                for path in expand_glob(&normalized.to_string_lossy(), dir) {
                    if let Ok(target) = self.resolve_path_from(dir, &path.to_string_lossy()) {
                        targets.push(target);
                    }
                }
            }
            if let Some(target) = self.static_path(arg, dir) {
                targets.push(target);
            }
        }
        targets
    }

    /// A redirection target is a write: confined to the workspace, subject to Edit deny
    /// rules, and allowed by an Edit allow rule or by `Bash` allowed outright.
    pub(super) fn redirect_decision<'a>(
        &'a self,
        name: &str,
        write: &str,
        outright: Option<&'a Rule>,
        cwd: &Path,
    ) -> Result<Option<&'a Rule>, Decision> {
        let Some(target) = self.static_path(write, cwd) else {
            return Err(Decision::deny(
                None,
                format!(
                    "{name} would write to {write}, which cannot be resolved before the command runs"
                ),
            ));
        };
        if let Some(protected) = self.protected_by(&target.absolute) {
            return Err(Decision::deny(
                None,
                format!(
                    "{name} would write to {} (a redirection), inside {}, which drover keeps off limits",
                    target.shown(),
                    protected.display()
                ),
            ));
        }
        if let Some(rule) = self.path_denied_by(&ToolFacts::writing_files(), &target) {
            return Err(Decision::deny(
                Some(rule),
                format!(
                    "{name} would write to {} (a redirection), which rule {rule} denies",
                    target.shown()
                ),
            ));
        }
        if !target.confined {
            return Err(Decision::deny(
                None,
                format!(
                    "{name} would write to {} (a redirection), outside the workspace {}",
                    target.shown(),
                    self.workspace.display()
                ),
            ));
        }
        if let Some(rule) = self.path_allowed_by(&ToolFacts::writing_files(), &target) {
            return Ok(Some(rule));
        }
        if target.in_git_internals() {
            return Err(Decision::deny(
                None,
                format!(
                    "{name} would write into {} (a redirection); writes into .git/ need a rule that names .git",
                    target.shown()
                ),
            ));
        }
        match outright {
            Some(rule) => Ok(Some(rule)),
            None => Err(Decision::deny(
                None,
                format!(
                    "{name} would write to {} (a redirection), and no Edit rule allows it; add e.g. Edit({}) to permissions.allow",
                    target.shown(),
                    target.shown()
                ),
            )),
        }
    }

    /// `cd TARGET` ends inside the workspace (or an additional directory).
    pub(super) fn cd_stays_inside(&self, target: &str, cwd: &Path) -> bool {
        if target == "-" {
            return false;
        }
        self.static_path(target, cwd).is_some_and(|t| t.confined)
    }

    /// An argument resolved as a path, when it can be known before the command runs.
    pub(super) fn static_path(
        &self,
        word: &str,
        cwd: &Path,
    ) -> Option<super::path_decision::PathTarget> {
        let expanded = expand_word(word, self.home.as_deref(), cwd)?;
        self.resolve_path_from(cwd, &expanded.to_string_lossy())
            .ok()
    }
}

/// Expand a shell glob relative to `dir` as the shell would (hidden files only when the
/// pattern names them), bounded so a huge tree cannot stall the decision.
pub(super) fn expand_glob(pattern: &str, dir: &Path) -> Vec<std::path::PathBuf> {
    const MAX_ENTRIES: usize = 20_000;
    let Ok(glob) = globset::GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
    else {
        return Vec::new();
    };
    let matcher = glob.compile_matcher();
    let absolute = pattern.starts_with('/');
    let root = if absolute { Path::new("/") } else { dir };
    let depth = if pattern.contains("**") {
        usize::MAX
    } else {
        pattern.trim_start_matches('/').split('/').count()
    };
    let names_hidden = pattern.split('/').any(|part| part.starts_with('.'));
    let mut found = Vec::new();
    let walk = walkdir::WalkDir::new(root)
        .min_depth(1)
        .max_depth(depth)
        .follow_links(false);
    for entry in walk.into_iter().filter_map(Result::ok).take(MAX_ENTRIES) {
        let candidate = if absolute {
            entry.path().to_path_buf()
        } else {
            match entry.path().strip_prefix(dir) {
                Ok(rel) => rel.to_path_buf(),
                Err(_) => continue,
            }
        };
        let hidden = candidate
            .components()
            .any(|c| c.as_os_str().to_string_lossy().starts_with('.'));
        if hidden && !names_hidden {
            // The shell's `*` does not match dotfiles unless the pattern names them.
            continue;
        }
        if matcher.is_match(&candidate) {
            found.push(candidate);
        }
    }
    found
}

/// The directory a `cd`/`pushd` goes to: its first operand (`cd -P dir`, `cd -- dir`);
/// none means home.
pub(super) fn cd_target(command: &SimpleCommand) -> &str {
    let mut operands = command.argv.iter().skip(1);
    loop {
        match operands.next() {
            None => return "~",
            Some(word) if word == "--" => return operands.next().map_or("~", String::as_str),
            Some(word) if word.starts_with('-') && word != "-" => continue,
            Some(word) => return word,
        }
    }
}

/// `cd` or `pushd`: a command that moves the shell, judged by where it goes.
pub(super) fn is_cd(command: &SimpleCommand) -> bool {
    command
        .argv
        .first()
        .is_some_and(|p| p == "cd" || p == "pushd")
}
