//! A task's permission rules: the spec's own, and those `permissions_from:` borrows from
//! Claude Code settings files (each applied as far as the policy lets a file the
//! repository controls; see `policy::borrow_rule`). Errors name the file, line and
//! column of the rule; what is left out is said in notes, recorded in `run_start`.

use std::path::Path;

use crate::policy::{Borrowed, RuleSet, SettingsList, Specifier, borrow_rule};
use crate::record::transcript::BorrowedRules;
use crate::spec::{
    Isolation, JsonError, LoadedSpec, PermissionsFrom, Position, SandboxSpec, SettingsPermissions,
    SettingsSource, SpecError, permissions_of_claude_settings,
};
use serde_saphyr::Spanned;

use super::referenced_file::{ReferencedFileError, read_referenced, unlinked_beside};

/// The most rules one settings file may hold: every rule is matched on every call, and
/// real files hold tens.
const MAX_SETTINGS_RULES: usize = 1000;

/// The rules a task runs by, what was left out of its settings files, and what they gave
/// (for `run_start`).
#[derive(Debug, Default)]
pub(crate) struct TaskRules {
    pub rules: RuleSet,
    pub notes: Vec<String>,
    pub borrowed: Vec<BorrowedRules>,
}

/// The spec's permission rules and its settings files' merged (deny wins whatever its
/// source); a rule that does not parse is an error at its line and column.
pub(crate) fn task_rules(loaded: &LoadedSpec) -> Result<TaskRules, SpecError> {
    let mut task = TaskRules {
        rules: own_rules(loaded)?,
        ..TaskRules::default()
    };
    let Some(from) = &loaded.spec.permissions_from else {
        return Ok(task);
    };
    let sandboxed = SandboxSpec::is_on(loaded.spec.sandbox.as_ref());
    for source in &from.value.0 {
        let path = loaded.beside_spec(&source.file);
        let permissions = read_settings(loaded, &source.file).map_err(|error| match error {
            SettingsError::Json(error) => SpecError::Invalid {
                position: Position {
                    path: path.clone(),
                    line: error.line as u64,
                    column: error.column as u64,
                },
                message: format!("permissions_from: {}", error.message),
            },
            other => SpecError::Invalid {
                position: Position::at(&loaded.path, Some(from.referenced)),
                message: other.to_string(),
            },
        })?;
        let rules = permissions.allow.len() + permissions.deny.len() + permissions.ask.len();
        if rules > MAX_SETTINGS_RULES {
            return Err(SpecError::Invalid {
                position: Position::at(&loaded.path, Some(from.referenced)),
                message: format!(
                    "permissions_from: {} holds {rules} rules, over the {MAX_SETTINGS_RULES} a settings file may hold",
                    path.display()
                ),
            });
        }
        borrow_file(&mut task, source, &path, &permissions, sandboxed)?;
        if loaded.spec.isolation() == Isolation::None && task_borrows_commands(&task) {
            task.notes.push(format!(
                "permissions_from {}: its Bash allow rules run programs that can write anywhere in the workspace, .git/ included; with isolation: none a hook planted there runs later, outside drover (use isolation: worktree or copy, or allow: false)",
                path.display()
            ));
        }
    }
    if let Some((_, message)) = task.rules.web_search_conflict() {
        return Err(SpecError::Invalid {
            position: Position::at(&loaded.path, Some(from.referenced)),
            message: format!("with the rules of permissions_from: {message}"),
        });
    }
    Ok(task)
}

/// Every problem of the task's rules: each of the spec's own rules that does not parse
/// (all of them, at their lines and columns), else the first problem of its settings
/// files. For `drover validate`, which reports every error at once.
pub(crate) fn rule_errors(loaded: &LoadedSpec) -> Vec<SpecError> {
    match own_rules_every(loaded) {
        Err(errors) => errors,
        Ok(_) => task_rules(loaded).err().into_iter().collect(),
    }
}

/// The spec's own rules, parsed; the first problem is the error.
fn own_rules(loaded: &LoadedSpec) -> Result<RuleSet, SpecError> {
    own_rules_every(loaded).map_err(|mut errors| errors.swap_remove(0))
}

/// The spec's own rules, parsed, or every problem of them (never an empty list).
fn own_rules_every(loaded: &LoadedSpec) -> Result<RuleSet, Vec<SpecError>> {
    let permissions = &loaded.spec.permissions;
    let at = |list: &str, index: usize| {
        let list = if list == "allow" {
            &permissions.allow
        } else {
            &permissions.deny
        };
        // The rule may be one the spec inherits from its defaults file.
        loaded.position(list.get(index).map(|rule| rule.referenced))
    };
    let rules = RuleSet::from_spec(permissions).map_err(|errors| {
        errors
            .into_iter()
            .map(|error| SpecError::Invalid {
                position: at(error.list, error.index),
                message: error.source.message,
            })
            .collect::<Vec<_>>()
    })?;
    if let Some((index, message)) = rules.web_search_conflict() {
        return Err(vec![SpecError::Invalid {
            position: at("deny", index),
            message,
        }]);
    }
    Ok(rules)
}

/// Whether any allow rule borrowed so far lets commands run.
fn task_borrows_commands(task: &TaskRules) -> bool {
    task.rules
        .allow
        .iter()
        .any(|rule| rule.is_borrowed() && rule.tool() == "Bash")
}

/// Why a settings file gave no rules.
#[derive(Debug, thiserror::Error)]
enum SettingsError {
    #[error("permissions_from: {0}")]
    File(#[from] ReferencedFileError),
    /// Not JSON, or not a settings file's shape: at its line and column.
    #[error("{0}")]
    Json(JsonError),
}

/// The `permissions` of the settings file `name` names (see `read_referenced`).
fn read_settings(loaded: &LoadedSpec, name: &str) -> Result<SettingsPermissions, SettingsError> {
    let text = read_referenced(&unlinked_beside(loaded, name)?)?;
    permissions_of_claude_settings(&text).map_err(SettingsError::Json)
}

/// Add the rules of one settings file to `task`, with notes on what was left out.
fn borrow_file(
    task: &mut TaskRules,
    source: &SettingsSource,
    path: &Path,
    permissions: &SettingsPermissions,
    sandboxed: bool,
) -> Result<(), SpecError> {
    let mut record = BorrowedRules {
        file: source.file.clone(),
        ..BorrowedRules::default()
    };
    let lists = [
        (SettingsList::Deny, &permissions.deny),
        (SettingsList::Ask, &permissions.ask),
        (SettingsList::Allow, &permissions.allow),
    ];
    for (list, rules) in lists {
        for rule in rules {
            let at = |message: String| SpecError::Invalid {
                position: Position::at(path, Some(rule.referenced)),
                message: format!("permissions.{}: {message}", list.as_str()),
            };
            let note = |why: &str| {
                format!(
                    "permissions_from {}:{}:{}: {} rule {} left out: {why}",
                    path.display(),
                    rule.referenced.line(),
                    rule.referenced.column(),
                    list.as_str(),
                    rule.value
                )
            };
            if list == SettingsList::Allow && !source.allow {
                continue;
            }
            match borrow_rule(list, &rule.value, sandboxed)
                .map_err(|invalid| at(invalid.message))?
            {
                Borrowed::Applied(applied) => {
                    task.rules.add_borrowed(*applied, list);
                    recorded_list(&mut record, list).push(rule.value.clone());
                }
                Borrowed::LeftOut(why) => task.notes.push(note(&why)),
            }
        }
    }
    task.notes.extend(file_notes(source, path, permissions));
    task.borrowed.push(record);
    Ok(())
}

fn recorded_list(record: &mut BorrowedRules, list: SettingsList) -> &mut Vec<String> {
    match list {
        SettingsList::Allow => &mut record.allow,
        SettingsList::Deny => &mut record.deny,
        SettingsList::Ask => &mut record.ask,
    }
}

/// What a settings file holds that does not apply headless, named once each.
fn file_notes(
    source: &SettingsSource,
    path: &Path,
    permissions: &SettingsPermissions,
) -> Vec<String> {
    let shown = path.display();
    let mut notes = Vec::new();
    if !permissions.ask.is_empty() {
        notes.push(format!(
            "permissions_from {shown}: its {} ask rule(s) deny: drover runs headless and nobody can be asked",
            permissions.ask.len()
        ));
    }
    if !source.allow && !permissions.allow.is_empty() {
        notes.push(format!(
            "permissions_from {shown}: its {} allow rule(s) are not used (allow: false)",
            permissions.allow.len()
        ));
    }
    if let Some(first) = permissions.additional_directories.first() {
        notes.push(located(
            path,
            first,
            "additionalDirectories is not used: a file the repository controls does not open directories outside the workspace (write permissions.additional_directories in the spec)",
        ));
    }
    if let Some(mode) = &permissions.default_mode {
        notes.push(located(
            path,
            mode,
            &format!(
                "defaultMode {:?} is not used: headless, every call is decided by the rules (write permissions.mode: plan in the spec for a read-only task)",
                mode.value
            ),
        ));
    }
    for key in &permissions.other_keys {
        notes.push(format!(
            "permissions_from {shown}: permissions.{key} is not used"
        ));
    }
    if permissions.has_sandbox {
        notes.push(format!(
            "permissions_from {shown}: its sandbox settings are not used: the spec's sandbox: decides"
        ));
    }
    notes
}

fn located(path: &Path, at: &Spanned<String>, message: &str) -> String {
    format!(
        "permissions_from {}:{}:{}: {message}",
        path.display(),
        at.referenced.line(),
        at.referenced.column()
    )
}

/// Notes for rules naming a sub-agent (`Agent(x)`) or a skill (`Skill(x)`) the task
/// does not have: names are exact (`Agent(Reviewer)` is not `reviewer`), so such a rule
/// matches nothing, which must not pass unsaid.
pub(crate) fn rules_naming_nothing(
    rules: &RuleSet,
    agents: &[&str],
    skills: &[&str],
) -> Vec<String> {
    let lists = [("allow", &rules.allow), ("deny", &rules.deny)];
    let mut notes = Vec::new();
    for (list, rules) in lists {
        for rule in rules {
            let (kind, known, name) = match rule.specifier() {
                Some(Specifier::Name(name)) => ("sub-agent", agents, name),
                Some(Specifier::Skill(name)) => ("skill", skills, name),
                _ => continue,
            };
            if !known.contains(&name.as_str()) {
                notes.push(format!(
                    "{list} rule {rule} names no {kind} of this task (names are exact; it has: {}), so it matches nothing",
                    if known.is_empty() { "none".to_string() } else { known.join(", ") }
                ));
            }
        }
    }
    notes
}

/// Add the rules a recorded run borrowed (its `run_start`) to a replay's rules, and say
/// which applied (for the replay's own `run_start`). The recording may come from anyone,
/// so each rule is borrowed again as from a file: an allow rule the policy would not take
/// from a file is left out, and a deny rule that does not parse refuses the replay.
pub(crate) fn add_recorded(
    rules: &mut RuleSet,
    recorded: &[BorrowedRules],
    sources: Option<&PermissionsFrom>,
) -> Result<Vec<BorrowedRules>, RecordedRuleError> {
    let mut applied = Vec::new();
    for file in recorded {
        // Only the files the spec names, and from each only what the spec takes: a
        // recording does not add rules its spec would not have read.
        let refused = |message: &str| RecordedRuleError {
            file: file.file.clone(),
            rule: file.allow.first().cloned().unwrap_or_default(),
            message: message.to_string(),
        };
        let Some(source) = sources.and_then(|from| from.0.iter().find(|s| s.file == file.file))
        else {
            return Err(refused(
                "the spec's permissions_from does not name this file",
            ));
        };
        if !source.allow && !file.allow.is_empty() {
            return Err(refused(
                "the spec takes no allow rule from this file (allow: false)",
            ));
        }
        let mut record = BorrowedRules {
            file: file.file.clone(),
            ..BorrowedRules::default()
        };
        let lists = [
            (SettingsList::Deny, &file.deny),
            (SettingsList::Ask, &file.ask),
            (SettingsList::Allow, &file.allow),
        ];
        for (list, texts) in lists {
            for text in texts {
                let borrowed =
                    borrow_rule(list, text, true).map_err(|invalid| RecordedRuleError {
                        file: file.file.clone(),
                        rule: text.clone(),
                        message: invalid.message,
                    })?;
                if let Borrowed::Applied(rule) = borrowed {
                    rules.add_borrowed(*rule, list);
                    recorded_list(&mut record, list).push(text.clone());
                }
            }
        }
        applied.push(record);
    }
    Ok(applied)
}

/// A recorded settings-file rule a replay cannot apply.
#[derive(Debug, thiserror::Error)]
#[error("the recording's permissions_from rule {rule:?} of {file}: {message}")]
pub(crate) struct RecordedRuleError {
    pub file: String,
    pub rule: String,
    pub message: String,
}
