//! Deciding shell commands. The command line is parsed (tree-sitter-bash) into the simple
//! commands it would run; every one must be allowed and none denied. Guardrails come
//! first and no rule lifts them. Redirections are writes; arguments that name files are
//! checked against the Read (and, for commands that change files, Edit) deny rules; `cd`
//! may not leave the workspace. What cannot be analysed statically is denied unless the
//! policy allows `Bash` outright.

use super::ToolFacts;
use std::path::{Path, PathBuf};

use drover_spec::Switch;

use super::expand::basename;
use super::guardrails::{self, GuardContext};
use super::shell::{self, Analysis, Opaque};
use super::shell_paths::{cd_target, is_cd};
use super::{Decision, Grounds, Policy, Rule, Specifier, words};

impl Policy {
    /// Decide a `Bash` call (`name` is the tool, for messages) on `line`.
    pub(super) fn decide_command(&self, name: &str, line: &str, cwd: &Path) -> Decision {
        let mut analysis = shell::analyse(line);
        if let Some(why) = super::hidden_code::hidden_code(line, &analysis.commands) {
            analysis.opaque.push(Opaque::Eval(why));
        }
        if let Some(denial) = self.guardrail_denial(name, line, &analysis, cwd) {
            return denial;
        }
        let dirs = self.possible_dirs(&analysis, cwd);
        mark_process_paths(&mut analysis, &dirs);
        if let Some(denial) = self.command_denial(name, line, &analysis, cwd, &dirs) {
            return denial;
        }
        let outright = self.allows_outright(name);
        if let Some(denial) = opaque_denial(name, line, &analysis, outright) {
            return denial;
        }
        let mut rules = match self.command_rules(name, line, &analysis, cwd, outright) {
            Ok(rules) => rules,
            Err(denial) => return denial,
        };
        for write in &analysis.writes {
            for dir in &dirs {
                match self.redirect_decision(name, write, outright, dir) {
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
        let reason = match &rule {
            Some(rule) => format!("{name}({line}) is allowed by {rule}"),
            None => format!("{name}({line}) runs nothing that needs permission"),
        };
        Decision::Allow(Grounds::new(rule, reason))
    }

    /// The guardrail the command line trips, if any: no allow rule lifts them.
    fn guardrail_denial(
        &self,
        name: &str,
        line: &str,
        analysis: &Analysis,
        cwd: &Path,
    ) -> Option<Decision> {
        if self.guardrails != Switch::On {
            return None;
        }
        let argvs: Vec<Vec<String>> = analysis.commands.iter().map(|c| c.argv.clone()).collect();
        let ctx = GuardContext {
            workspace: &self.workspace,
            cwd,
            home: self.home.as_deref(),
        };
        let why = guardrails::check(&argvs, line, &ctx)?;
        Some(Decision::deny(
            None,
            format!(
                "{name}({line}) trips a guardrail: {why}. No allow rule lifts the guardrails (permissions.guardrails: off does)"
            ),
        ))
    }

    /// The allow rule of each simple command (a bare `Bash` rule covers them all), or the
    /// denial of the first that no rule allows.
    fn command_rules<'a>(
        &'a self,
        name: &str,
        line: &str,
        analysis: &Analysis,
        cwd: &Path,
        outright: Option<&'a Rule>,
    ) -> Result<Vec<&'a Rule>, Decision> {
        let mut rules: Vec<&Rule> = Vec::new();
        for command in &analysis.commands {
            if is_cd(command) {
                // cd inside the workspace changes nothing; command_denial refused the rest.
                continue;
            }
            // `Bash(cargo test *)` vouches for cargo test, not for an option that makes
            // cargo run any program (`--config 'target.x.runner=…'`): the rule must name it.
            let risky = words::code_running_option(&command.argv);
            // `Bash(python3 scripts/*)` must not vouch for `python3 scripts/../evil.py`:
            // the rule has to match the line with its paths resolved too.
            let resolved = resolved_text(&command.argv, cwd);
            let rule = outright.or_else(|| {
                self.allow.iter().find(|rule| {
                    rule.governs(name)
                        && matches!(rule.specifier(), Some(Specifier::Command(p))
                        if (p.matches(&command.text) || p.is_exactly(&command.source))
                            && resolved.as_ref().is_none_or(|text| p.matches(text))
                            && risky.is_none_or(|option| p.as_str().contains(option)))
                })
            });
            match rule {
                Some(rule) => rules.push(rule),
                None => {
                    return Err(Decision::deny(
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
                    ));
                }
            }
        }
        Ok(rules)
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
        dirs: &[PathBuf],
    ) -> Option<Decision> {
        self.deny_rule_denial(name, analysis)
            .or_else(|| self.hidden_part_denial(name, analysis))
            .or_else(|| self.argument_denial(analysis, cwd, dirs))
            .or_else(|| self.input_denial(line, cwd, dirs))
    }

    /// A simple command a `Bash(…)` deny rule matches, in any of its forms, or one that
    /// uses an option that runs other code of a program a deny rule names.
    fn deny_rule_denial(&self, name: &str, analysis: &Analysis) -> Option<Decision> {
        for command in &analysis.commands {
            let forms = words::deny_forms(&command.argv);
            let program = command.argv.first().map_or("", |p| basename(p));
            for rule in self.deny.iter().filter(|rule| rule.governs(name)) {
                let Some(Specifier::Command(pattern)) = rule.specifier() else {
                    continue;
                };
                if forms.iter().any(|form| pattern.denies(form))
                    || pattern.is_exactly(&command.source)
                {
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
        None
    }

    /// A part drover cannot see might be what a deny rule forbids: deny rather than
    /// guess, whatever else the line holds (even when it lists no command at all).
    fn hidden_part_denial(&self, name: &str, analysis: &Analysis) -> Option<Decision> {
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
        None
    }

    /// An argument that names a file the Read/Edit deny rules forbid (or one drover cannot
    /// resolve while they are in force), or a `cd` out of the workspace.
    fn argument_denial(
        &self,
        analysis: &Analysis,
        cwd: &Path,
        dirs: &[PathBuf],
    ) -> Option<Decision> {
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
            let program = command.argv.first().map_or("", |p| basename(p));
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
                    if let Some(denial) = self.path_arg_denial(command, &candidate, dirs) {
                        return Some(denial);
                    }
                }
            }
        }
        None
    }

    /// An input redirection (`< file`) from a file the Read deny rules forbid, or one
    /// drover cannot resolve while they are in force.
    fn input_denial(&self, line: &str, cwd: &Path, dirs: &[PathBuf]) -> Option<Decision> {
        let path_rules = self.has_path_deny_rules();
        for input in words::input_redirections(line) {
            if path_rules && words::is_dynamic(&input) && self.unresolved(&input, cwd) {
                return Some(Decision::deny(
                    None,
                    format!(
                        "the command reads {input}, which drover cannot resolve before it runs, while Read deny rules are in force"
                    ),
                ));
            }
            for target in self.arg_targets(&input, dirs) {
                if let Some(rule) = self.path_denied_by(&ToolFacts::reading_files(), &target) {
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

    fn has_command_deny_rules(&self, name: &str) -> bool {
        self.deny.iter().any(|rule| {
            rule.governs(name) && matches!(rule.specifier(), Some(Specifier::Command(_)))
        })
    }
}

/// Paths through /proc or /dev/fd mean the command's own process: such an argument makes
/// the command line opaque.
fn mark_process_paths(analysis: &mut Analysis, dirs: &[PathBuf]) {
    for command in &analysis.commands {
        let program = command.argv.first().map_or("", |p| basename(p));
        // Builtins that print their arguments never open them.
        if matches!(program, "echo" | "printf" | "true" | "false" | ":") {
            continue;
        }
        for arg in &command.argv {
            for candidate in words::path_candidates(arg) {
                let through = dirs.iter().any(|dir| {
                    drover_paths::resolve_physical(dir, &candidate).is_ok_and(|p| p.through_process)
                });
                if through {
                    let opaque = Opaque::ProcessPath(candidate);
                    if !analysis.opaque.contains(&opaque) {
                        analysis.opaque.push(opaque);
                    }
                }
            }
        }
    }
}

/// A write whose file is not known before it runs, or (without a bare `Bash` rule) any
/// part that cannot be analysed, is denied.
fn opaque_denial(
    name: &str,
    line: &str,
    analysis: &Analysis,
    outright: Option<&Rule>,
) -> Option<Decision> {
    if let Some(write) = analysis
        .opaque
        .iter()
        .find(|o| matches!(o, Opaque::DynamicWrite(_)))
    {
        return Some(Decision::deny(
            None,
            format!(
                "{name}({line}) writes to a file whose name is not known before it runs ({write}); redirections must name their file"
            ),
        ));
    }
    if !analysis.opaque.is_empty() && outright.is_none() {
        let why: Vec<String> = analysis.opaque.iter().map(|o| o.to_string()).collect();
        return Some(Decision::deny(
            None,
            format!(
                "{name}({line}) cannot be analysed before it runs ({}); only a policy that allows Bash outright permits that. Write the command without it",
                why.join("; ")
            ),
        ));
    }
    None
}

/// Opaque parts that may run commands the analysis could not list. (The commands inside
/// `$(…)` and `<(…)` are listed, so deny rules still see them.)
/// The command's words with every path that holds `.` or `..` components resolved as the
/// kernel would from `cwd` (relative to `cwd` when inside it), or None when no word has
/// such components.
fn resolved_text(argv: &[String], cwd: &Path) -> Option<String> {
    let mut changed = false;
    let words: Vec<String> = argv
        .iter()
        .map(|arg| {
            let has_dots = arg.split('/').any(|part| part == ".." || part == ".");
            if !arg.contains('/') || !has_dots {
                return arg.clone();
            }
            let Ok(physical) = drover_paths::resolve_physical(cwd, arg) else {
                return arg.clone();
            };
            changed = true;
            match physical.path.strip_prefix(cwd) {
                // `./mvnw` stays `./mvnw`: the rule names the wrapper as it is run.
                Ok(rel) if !rel.as_os_str().is_empty() && arg.starts_with("./") => {
                    format!("./{}", rel.to_string_lossy())
                }
                Ok(rel) if !rel.as_os_str().is_empty() => rel.to_string_lossy().into_owned(),
                _ => physical.path.to_string_lossy().into_owned(),
            }
        })
        .collect();
    changed.then(|| words.join(" "))
}

fn hides_commands(opaque: &Opaque) -> bool {
    !matches!(
        opaque,
        Opaque::CommandSubstitution(_)
            | Opaque::ProcessSubstitution(_)
            | Opaque::DynamicWrite(_)
            | Opaque::ProcessPath(_)
    )
}
