//! Deciding shell commands. The command line is parsed (tree-sitter-bash) into the simple
//! commands it would run; every one must be allowed and none denied. Guardrails come
//! first and no rule lifts them. Redirections are writes; arguments that name files are
//! checked against the Read (and, for commands that change files, Edit) deny rules; `cd`
//! may not leave the workspace. What cannot be analysed statically is denied unless the
//! policy allows `Bash` outright.

use std::path::Path;

use super::expand::{expand_home, home_dir};
use super::guardrails::{self, GuardContext};
use super::shell::{self, Analysis, Opaque, SimpleCommand};
use super::{Decision, Policy, Rule, Specifier, words};
use crate::spec::Switch;

impl Policy {
    /// Decide a `Bash` call (`name` is the tool, for messages) on `line`.
    pub(super) fn decide_command(&self, name: &str, line: &str, cwd: &Path) -> Decision {
        let mut analysis = shell::analyse(line);
        if let Some(why) = super::hidden_code::hidden_code(line, &analysis.commands) {
            analysis.opaque.push(Opaque::Eval(why));
        }
        let argvs: Vec<Vec<String>> = analysis.commands.iter().map(|c| c.argv.clone()).collect();
        if self.guardrails == Switch::On {
            let home = home_dir();
            let ctx = GuardContext {
                workspace: &self.workspace,
                cwd,
                home: home.as_deref(),
            };
            if let Some(why) = guardrails::check(&argvs, line, &ctx) {
                return Decision::deny(
                    None,
                    format!(
                        "{name}({line}) trips a guardrail: {why}. No allow rule lifts the guardrails (permissions.guardrails: off does)"
                    ),
                );
            }
        }
        if let Some(denial) = self.command_denial(name, line, &analysis, cwd) {
            return denial;
        }
        if let Some(write) = analysis
            .opaque
            .iter()
            .find(|o| matches!(o, Opaque::DynamicWrite(_)))
        {
            return Decision::deny(
                None,
                format!(
                    "{name}({line}) writes to a file whose name is not known before it runs ({write}); redirections must name their file"
                ),
            );
        }
        let outright = self.allows_outright(name);
        if !analysis.opaque.is_empty() && outright.is_none() {
            let why: Vec<String> = analysis.opaque.iter().map(|o| o.to_string()).collect();
            return Decision::deny(
                None,
                format!(
                    "{name}({line}) cannot be analysed before it runs ({}); only a policy that allows Bash outright permits that. Write the command without it",
                    why.join("; ")
                ),
            );
        }
        let mut rules: Vec<&Rule> = Vec::new();
        for command in &analysis.commands {
            if is_cd(command) {
                // cd inside the workspace changes nothing; command_denial refused the rest.
                continue;
            }
            // `Bash(cargo test *)` vouches for cargo test, not for an option that makes
            // cargo run any program (`--config 'target.x.runner=…'`): the rule must name it.
            let risky = words::code_running_option(&command.argv);
            let rule = outright.or_else(|| {
                self.allow.iter().find(|rule| {
                    rule.governs(name)
                        && matches!(rule.specifier(), Some(Specifier::Command(p))
                            if p.matches(&command.text)
                                && risky.is_none_or(|option| p.as_str().contains(option)))
                })
            });
            match rule {
                Some(rule) => rules.push(rule),
                None => {
                    return Decision::deny(
                        None,
                        match risky {
                            Some(option) => format!(
                                "`{}` (in {name}({line})) uses {option}, which can make it run any program; no allow rule names that option",
                                command.source
                            ),
                            None => format!(
                                "`{}` (in {name}({line})) matches no allow rule (default deny); every command in a command line must be allowed, e.g. by {name}({} *)",
                                command.source,
                                command.argv.first().map(String::as_str).unwrap_or_default()
                            ),
                        },
                    );
                }
            }
        }
        for write in &analysis.writes {
            for dir in self.possible_dirs(&analysis, cwd) {
                match self.redirect_decision(name, write, outright, &dir) {
                    Ok(Some(rule)) => rules.push(rule),
                    Ok(None) => {}
                    Err(denial) => return denial,
                }
            }
        }
        if let Some(rule) = outright
            && !analysis.opaque.is_empty()
        {
            rules.push(rule);
        }
        rules.sort_by(|a, b| a.text().cmp(b.text()));
        rules.dedup_by(|a, b| a.text() == b.text());
        let names: Vec<&str> = rules.iter().map(|r| r.text()).collect();
        let rule = (!names.is_empty()).then(|| names.join(", "));
        Decision {
            allowed: true,
            rule: rule.clone(),
            reason: match rule {
                Some(rule) => format!("{name}({line}) is allowed by {rule}"),
                None => format!("{name}({line}) runs nothing that needs permission"),
            },
        }
    }

    /// A bare `Bash` allow rule.
    fn allows_outright(&self, name: &str) -> Option<&Rule> {
        self.allow.iter().find(|rule| rule.covers_whole_tool(name))
    }

    /// The first part of the command line a deny rule, the Read/Edit deny rules or the
    /// workspace boundary forbids.
    fn command_denial(
        &self,
        name: &str,
        line: &str,
        analysis: &Analysis,
        cwd: &Path,
    ) -> Option<Decision> {
        for command in &analysis.commands {
            let forms = words::deny_forms(&command.argv);
            let program = command
                .argv
                .first()
                .map_or("", |p| p.rsplit('/').next().unwrap_or(p));
            for rule in self.deny.iter().filter(|rule| rule.governs(name)) {
                let Some(Specifier::Command(pattern)) = rule.specifier() else {
                    continue;
                };
                if forms.iter().any(|form| pattern.matches(form)) {
                    return Some(Decision::deny(
                        Some(rule),
                        format!("`{}` is denied by rule {rule}", command.source),
                    ));
                }
                // `git -c alias.p=push p`: an option that runs other code could be what
                // the rule forbids.
                if let Some(option) = words::code_running_option(&command.argv)
                    && pattern.as_str().split_whitespace().next() == Some(program)
                {
                    return Some(Decision::deny(
                        Some(rule),
                        format!(
                            "`{}` uses {option}, which can make {program} run anything, so drover cannot rule out what rule {rule} forbids",
                            command.source
                        ),
                    ));
                }
            }
        }
        // A part drover cannot see might be what a deny rule forbids: deny rather than
        // guess, whatever else the line holds (even when it lists no command at all).
        if let Some(hidden) = analysis.opaque.iter().find(|o| hides_commands(o))
            && self.has_command_deny_rules(name)
        {
            let rules: Vec<&str> = self
                .deny
                .iter()
                .filter(|rule| {
                    rule.governs(name) && matches!(rule.specifier(), Some(Specifier::Command(_)))
                })
                .map(Rule::text)
                .collect();
            return Some(Decision::deny(
                None,
                format!(
                    "the command line holds a part drover cannot analyse ({hidden}), so it cannot rule out what the deny rules {} forbid; write the command without it",
                    rules.join(", ")
                ),
            ));
        }
        let dirs = self.possible_dirs(analysis, cwd);
        let path_rules = self.has_path_deny_rules();
        for command in &analysis.commands {
            if is_cd(command) {
                let target = cd_target(command);
                let unknown = target.contains(['*', '?', '[', '{']) || words::is_dynamic(target);
                if unknown || !self.cd_stays_inside(target, cwd) {
                    return Some(Decision::deny(
                        None,
                        format!(
                            "`{}` leaves the workspace, or goes where drover cannot tell before it runs; commands run inside the workspace",
                            command.source
                        ),
                    ));
                }
                continue;
            }
            let program = command
                .argv
                .first()
                .map_or("", |p| p.rsplit('/').next().unwrap_or(p));
            // Builtins that print their arguments never open them as files.
            let prints_only = matches!(program, "echo" | "printf" | "true" | "false" | ":");
            for arg in command.argv.iter().skip(1) {
                for candidate in words::path_candidates(arg) {
                    if path_rules
                        && !prints_only
                        && words::is_dynamic(&candidate)
                        && self.unresolved(&candidate, cwd)
                    {
                        return Some(Decision::deny(
                            None,
                            format!(
                                "`{}` names a file through {candidate}, which drover cannot resolve before it runs, while Read/Edit deny rules are in force",
                                command.source
                            ),
                        ));
                    }
                    if let Some(denial) = self.path_arg_denial(command, &candidate, &dirs) {
                        return Some(denial);
                    }
                }
            }
        }
        for input in words::input_redirections(line) {
            if path_rules && words::is_dynamic(&input) && self.unresolved(&input, cwd) {
                return Some(Decision::deny(
                    None,
                    format!(
                        "the command reads {input}, which drover cannot resolve before it runs, while Read deny rules are in force"
                    ),
                ));
            }
            for target in self.arg_targets(&input, &dirs) {
                if let Some(rule) = self.path_denied_by("Read", &target) {
                    return Some(Decision::deny(
                        Some(rule),
                        format!(
                            "the command reads {} (< {input}), which rule {rule} denies",
                            target.shown()
                        ),
                    ));
                }
            }
        }
        None
    }

    /// A Read deny rule on a file the argument names, or an Edit deny rule on it: a deny
    /// rule on a path keeps the shell's hands off that path, whatever the program.
    fn path_arg_denial(
        &self,
        command: &SimpleCommand,
        candidate: &str,
        dirs: &[std::path::PathBuf],
    ) -> Option<Decision> {
        for target in self.arg_targets(candidate, dirs) {
            if let Some(rule) = self.path_denied_by("Read", &target) {
                return Some(Decision::deny(
                    Some(rule),
                    format!(
                        "`{}` names {}, which rule {rule} denies reading",
                        command.source,
                        target.shown()
                    ),
                ));
            }
            if let Some(rule) = self.path_denied_by("Edit", &target) {
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
    fn has_path_deny_rules(&self) -> bool {
        self.deny.iter().any(|rule| {
            matches!(rule.specifier(), Some(Specifier::Path(p)) if !p.starts_with("//") && !p.starts_with("~/"))
                && (rule.governs("Read") || rule.governs("Edit"))
        })
    }

    /// A word with an expansion the policy cannot resolve (`$HOME` and `$PWD` it can).
    fn unresolved(&self, word: &str, cwd: &Path) -> bool {
        self.static_path(word, cwd).is_none()
    }

    /// Every directory a command of this line may run in: where the shell is, and each
    /// static `cd` target in the line (a `cd` that is not static is refused on its own).
    /// Relative paths are judged from all of them, so `cd secrets && echo x > key` is
    /// judged as a write to `secrets/key`.
    fn possible_dirs(&self, analysis: &Analysis, cwd: &Path) -> Vec<std::path::PathBuf> {
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
    fn arg_targets(
        &self,
        arg: &str,
        dirs: &[std::path::PathBuf],
    ) -> Vec<super::path_decision::PathTarget> {
        let mut targets = Vec::new();
        for dir in dirs {
            if arg.contains(['*', '?', '[']) {
                let normalized = crate::workspace::paths::normalize(Path::new(arg));
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

    fn has_command_deny_rules(&self, name: &str) -> bool {
        self.deny.iter().any(|rule| {
            rule.governs(name) && matches!(rule.specifier(), Some(Specifier::Command(_)))
        })
    }

    /// A redirection target is a write: confined to the workspace, subject to Edit deny
    /// rules, and allowed by an Edit allow rule or by `Bash` allowed outright.
    fn redirect_decision<'a>(
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
        if let Some(rule) = self.path_denied_by("Edit", &target) {
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
        if let Some(rule) = self.path_allowed_by("Edit", false, &target) {
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
    fn cd_stays_inside(&self, target: &str, cwd: &Path) -> bool {
        if target == "-" {
            return false;
        }
        self.static_path(target, cwd).is_some_and(|t| t.confined)
    }

    /// An argument resolved as a path, when it can be known before the command runs.
    fn static_path(&self, word: &str, cwd: &Path) -> Option<super::path_decision::PathTarget> {
        let home = home_dir();
        let cwd_text = cwd.to_string_lossy();
        let mut word = word.to_string();
        for prefix in ["$PWD", "${PWD}", "~+", "/proc/self/cwd", "/dev/fd/../cwd"] {
            if let Some(rest) = word.strip_prefix(prefix)
                && (rest.is_empty() || rest.starts_with('/'))
            {
                word = format!("{cwd_text}{rest}");
                break;
            }
        }
        let expanded = expand_home(&word, home.as_deref())?;
        self.resolve_path_from(cwd, &expanded.to_string_lossy())
            .ok()
    }
}

/// Opaque parts that may run commands the analysis could not list. (The commands inside
/// `$(…)` and `<(…)` are listed, so deny rules still see them.)
fn hides_commands(opaque: &Opaque) -> bool {
    !matches!(
        opaque,
        Opaque::CommandSubstitution(_) | Opaque::ProcessSubstitution(_) | Opaque::DynamicWrite(_)
    )
}

/// Expand a shell glob relative to `dir` as the shell would (hidden files only when the
/// pattern names them), bounded so a huge tree cannot stall the decision.
fn expand_glob(pattern: &str, dir: &Path) -> Vec<std::path::PathBuf> {
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
fn cd_target(command: &SimpleCommand) -> &str {
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

fn is_cd(command: &SimpleCommand) -> bool {
    command
        .argv
        .first()
        .is_some_and(|p| p == "cd" || p == "pushd")
}
