//! `hooks:` — Claude Code's hook settings, as they are written in `.claude/settings.json`,
//! so users can bring theirs unchanged. Plain data; running them is `hooks`' job.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::SandboxSpec;
use super::referenced::{JsonError, NoSandbox};

/// The events drover raises, by Claude Code's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum HookEvent {
    SessionStart,
    UserPromptSubmit,
    PreToolUse,
    PostToolUse,
    PostToolUseFailure,
    Stop,
    SessionEnd,
    /// Before drover compacts the conversation (`limits.context`); matcher `auto`.
    PreCompact,
}

impl HookEvent {
    pub const ALL: [HookEvent; 8] = [
        HookEvent::SessionStart,
        HookEvent::UserPromptSubmit,
        HookEvent::PreToolUse,
        HookEvent::PostToolUse,
        HookEvent::PostToolUseFailure,
        HookEvent::Stop,
        HookEvent::SessionEnd,
        HookEvent::PreCompact,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::SessionStart => "SessionStart",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::PostToolUseFailure => "PostToolUseFailure",
            HookEvent::Stop => "Stop",
            HookEvent::SessionEnd => "SessionEnd",
            HookEvent::PreCompact => "PreCompact",
        }
    }

    pub fn parse(name: &str) -> Option<HookEvent> {
        HookEvent::ALL.into_iter().find(|e| e.as_str() == name)
    }
}

/// Claude Code events that have no meaning without a person or a UI; a settings file
/// that has them still loads (they are skipped, with a note).
pub(crate) const INTERACTIVE_ONLY_EVENTS: &[&str] = &[
    "Notification",
    "PermissionRequest",
    "SubagentStart",
    "SubagentStop",
];

/// The other events Claude Code documents, with no moment in a drover run (no install
/// phase, no settings reloaded mid-run, no teammates, no worktrees the
/// agent makes) or none drover raises (`InstructionsLoaded`: the instruction files are
/// read when a task starts, without a hook event; `PostCompact`: each compaction is a
/// transcript event instead): a settings file's hooks for them are skipped with a note, never a
/// reason to refuse the file's other hooks. A name on neither list is refused: it is a
/// typo of a guard as likely as a newer event.
const NO_EQUIVALENT_EVENTS: &[&str] = &[
    "Setup",
    "ConfigChange",
    "InstructionsLoaded",
    "UserPromptExpansion",
    "PostToolBatch",
    "PermissionDenied",
    "StopFailure",
    "TaskCreated",
    "TaskCompleted",
    "TeammateIdle",
    "FileChanged",
    "CwdChanged",
    "PostCompact",
    "WorktreeCreate",
    "WorktreeRemove",
    "Elicitation",
    "ElicitationResult",
];

/// The hooks of each event.
pub type HooksSpec = BTreeMap<HookEvent, Vec<HookMatcherSpec>>;

/// Hooks for the calls (or sources) a matcher selects.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookMatcherSpec {
    /// `*` or empty: everything; only letters, digits, `_`, `-`, spaces, `,` and `|`:
    /// exact names; anything else: a regular expression searched in the name.
    #[serde(default)]
    pub matcher: Option<String>,
    pub hooks: Vec<HookCommandSpec>,
}

/// One hook command.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookCommandSpec {
    /// Only `command` runs headless; other Claude Code hook types are refused by name.
    #[serde(rename = "type")]
    pub kind: String,
    pub command: String,
    /// Seconds (Claude Code's unit); default 600.
    #[serde(default)]
    pub timeout: Option<u64>,
    /// The hook's sandbox: by default the task's (the agent can write the files a hook
    /// runs); `off` runs it unsandboxed, `{ network: true }` lets it fetch.
    #[serde(default)]
    pub sandbox: Option<SandboxSpec>,
    /// Claude Code's spinner text: accepted from settings files, unused headless.
    #[serde(default, rename = "statusMessage")]
    pub status_message: Option<String>,
}

/// A hook's timeout when it sets none (Claude Code's default).
pub const DEFAULT_HOOK_TIMEOUT_SECS: u64 = 600;

/// What is wrong with `hooks`, if anything: a hook type that does not run headless, an
/// empty command, a zero timeout, a matcher that is not a valid regular expression.
pub fn hooks_problem(hooks: &HooksSpec) -> Option<String> {
    hooks_problems(hooks).into_iter().next()
}

/// Every problem of `hooks`, each naming its entry (`hooks.PreToolUse[0].matcher`).
pub fn hooks_problems(hooks: &HooksSpec) -> Vec<String> {
    let mut problems = Vec::new();
    for (event, matchers) in hooks {
        for (i, entry) in matchers.iter().enumerate() {
            let at = format!("hooks.{}[{i}]", event.as_str());
            if let Some(matcher) = &entry.matcher
                && let Err(error) = HookMatcher::new(matcher)
            {
                problems.push(format!("{at}.matcher: {error}"));
            }
            for (j, hook) in entry.hooks.iter().enumerate() {
                let at = format!("{at}.hooks[{j}]");
                if hook.kind != "command" {
                    problems.push(format!(
                        "{at}: hook type {:?} does not run headless; drover runs `type: command` hooks only (remove it or make it a command)",
                        hook.kind
                    ));
                } else if hook.command.trim().is_empty() {
                    problems.push(format!("{at}: the command is empty"));
                }
                if hook.timeout == Some(0) {
                    problems.push(format!("{at}: timeout must be at least 1 (seconds)"));
                }
            }
        }
    }
    problems
}

/// A compiled `matcher`.
#[derive(Debug, Clone)]
pub enum HookMatcher {
    All,
    Names(Vec<String>),
    Pattern(regex::Regex),
}

/// A matcher that is neither a list of names nor a regular expression.
#[derive(Debug, thiserror::Error)]
#[error("{matcher:?} is not a valid regular expression: {source}")]
pub struct InvalidMatcher {
    matcher: String,
    source: regex::Error,
}

impl HookMatcher {
    pub fn new(matcher: &str) -> Result<HookMatcher, InvalidMatcher> {
        let trimmed = matcher.trim();
        if trimmed.is_empty() || trimmed == "*" {
            return Ok(HookMatcher::All);
        }
        let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ' ' | ',' | '|');
        if trimmed.chars().all(plain) {
            let names = trimmed
                .split(['|', ','])
                .map(str::trim)
                .filter(|name| !name.is_empty())
                .map(str::to_string)
                .collect();
            return Ok(HookMatcher::Names(names));
        }
        regex::RegexBuilder::new(trimmed)
            .size_limit(1 << 20)
            .build()
            .map(HookMatcher::Pattern)
            .map_err(|source| InvalidMatcher {
                matcher: trimmed.to_string(),
                source,
            })
    }

    /// Whether the hook applies to `name` (a tool name, or the event's source/reason).
    pub fn matches(&self, name: &str) -> bool {
        match self {
            HookMatcher::All => true,
            HookMatcher::Names(names) => names.iter().any(|n| n == name),
            HookMatcher::Pattern(pattern) => pattern.is_match(name),
        }
    }
}

/// The hooks of a Claude Code settings file (its `hooks` key), with the notes about
/// what was skipped. An unknown event name is an error: it may be a typo of one that
/// guards something. The file may come from the repository under test, so its hooks run
/// in the task's sandbox: a `sandbox` key in it is refused (see `referenced`). Every
/// error is at the file's line and column.
pub fn hooks_of_claude_settings(text: &str) -> Result<(HooksSpec, Vec<String>), JsonError> {
    let settings: Settings = serde_json::from_str(text)?;
    Ok(settings
        .hooks
        .map(|hooks| (hooks.spec, hooks.notes))
        .unwrap_or_default())
}

/// A Claude Code settings file: only `hooks` is read.
#[derive(Deserialize)]
struct Settings {
    #[serde(default)]
    hooks: Option<SettingsHooks>,
}

/// The `hooks` of a settings file, by event, read event by event so an unknown one is
/// refused where it is written and one that does not happen headless is skipped whatever
/// it holds.
struct SettingsHooks {
    spec: HooksSpec,
    notes: Vec<String>,
}

impl<'de> Deserialize<'de> for SettingsHooks {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = SettingsHooks;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object of hook events")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<SettingsHooks, A::Error> {
                let mut hooks = SettingsHooks {
                    spec: HooksSpec::new(),
                    notes: Vec::new(),
                };
                while let Some(name) = map.next_key::<String>()? {
                    if let Some(event) = HookEvent::parse(&name) {
                        let entries: Vec<SettingsMatcher> = map.next_value()?;
                        for entry in &entries {
                            hooks
                                .notes
                                .extend(entry.unused_keys().into_iter().map(|key| {
                                    format!(
                                        "{name} hook: key {key:?} ignored: drover does not use it"
                                    )
                                }));
                        }
                        hooks
                            .spec
                            .insert(event, entries.into_iter().map(Into::into).collect());
                    } else if INTERACTIVE_ONLY_EVENTS.contains(&name.as_str())
                        || NO_EQUIVALENT_EVENTS.contains(&name.as_str())
                    {
                        map.next_value::<serde::de::IgnoredAny>()?;
                        let why = if INTERACTIVE_ONLY_EVENTS.contains(&name.as_str()) {
                            "the event does not happen headless"
                        } else {
                            "drover has no equivalent of this Claude Code event"
                        };
                        hooks.notes.push(format!("{name} hooks skipped: {why}"));
                    } else {
                        return Err(serde::de::Error::custom(format!(
                            "unknown hook event {name:?}; drover runs {} and skips the other events Claude Code documents",
                            HookEvent::ALL.map(HookEvent::as_str).join(", ")
                        )));
                    }
                }
                Ok(hooks)
            }
        }
        deserializer.deserialize_map(Visitor)
    }
}

/// One matcher's entry in a settings file. Keys drover does not use are named in a
/// note, never a reason to refuse the file (Claude Code adds keys over time).
#[derive(Deserialize)]
struct SettingsMatcher {
    #[serde(default)]
    matcher: Option<String>,
    hooks: Vec<SettingsHook>,
    /// What the entry is for, for people reading the file.
    #[serde(default, rename = "description")]
    _description: serde::de::IgnoredAny,
    #[serde(flatten)]
    other: std::collections::BTreeMap<String, serde::de::IgnoredAny>,
}

impl SettingsMatcher {
    /// The keys of the entry and its hooks that drover does not use.
    fn unused_keys(&self) -> Vec<&str> {
        self.other
            .keys()
            .chain(self.hooks.iter().flat_map(|hook| hook.other.keys()))
            .map(String::as_str)
            .collect()
    }
}

/// One hook in a settings file: a [`HookCommandSpec`] without a sandbox of its own.
#[derive(Deserialize)]
struct SettingsHook {
    #[serde(rename = "type")]
    kind: String,
    command: String,
    #[serde(default)]
    timeout: Option<u64>,
    #[serde(default, rename = "statusMessage")]
    status_message: Option<String>,
    /// drover runs a session once anyway.
    #[serde(default, rename = "once")]
    _once: serde::de::IgnoredAny,
    /// Run to completion: nothing is left running behind a task.
    #[serde(default, rename = "async")]
    _async: serde::de::IgnoredAny,
    /// What the hook is for (Claude Code files write it on hooks too).
    #[serde(default, rename = "description")]
    _description: serde::de::IgnoredAny,
    #[serde(default, rename = "sandbox")]
    _sandbox: NoSandbox,
    #[serde(flatten)]
    other: std::collections::BTreeMap<String, serde::de::IgnoredAny>,
}

impl From<SettingsMatcher> for HookMatcherSpec {
    fn from(entry: SettingsMatcher) -> Self {
        HookMatcherSpec {
            matcher: entry.matcher,
            hooks: entry
                .hooks
                .into_iter()
                .map(|hook| HookCommandSpec {
                    kind: hook.kind,
                    command: hook.command,
                    timeout: hook.timeout,
                    sandbox: None,
                    status_message: hook.status_message,
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matchers_are_exact_name_lists_or_searched_patterns() {
        let list = HookMatcher::new("Bash|Edit").unwrap();
        assert!(list.matches("Bash") && list.matches("Edit"));
        assert!(!list.matches("MultiEdit") && !list.matches("Bas"));
        let commas = HookMatcher::new("Write, Edit").unwrap();
        assert!(commas.matches("Edit") && commas.matches("Write"));
        assert!(HookMatcher::new("*").unwrap().matches("anything"));
        assert!(HookMatcher::new("").unwrap().matches("anything"));
        let pattern = HookMatcher::new("mcp__github__.*").unwrap();
        assert!(pattern.matches("mcp__github__create_issue"));
        assert!(!pattern.matches("mcp__gitlab__x"));
        let edit = HookMatcher::new("^(Edit|Write)$").unwrap();
        assert!(edit.matches("Edit") && !edit.matches("MultiEdit"));
        assert!(HookMatcher::new("(unclosed").is_err());
    }

    #[test]
    fn settings_files_load_with_interactive_events_skipped_and_typos_refused() {
        let text = r#"{"permissions": {}, "hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh", "timeout": 30}]}],
            "Notification": [{"hooks": [{"type": "command", "command": "notify-send hi"}]}]
        }}"#;
        let (spec, notes) = hooks_of_claude_settings(text).unwrap();
        assert_eq!(
            spec[&HookEvent::PreToolUse][0].hooks[0].command,
            "./guard.sh"
        );
        assert_eq!(spec[&HookEvent::PreToolUse][0].hooks[0].timeout, Some(30));
        assert_eq!(notes.len(), 1, "{notes:?}");
        let typo = r#"{"hooks": {"PreToolUsed": []}}"#;
        let error = hooks_of_claude_settings(typo).unwrap_err();
        assert!(error.message.contains("PreToolUsed"), "{error}");
        assert_eq!((error.line, error.column), (1, 24), "{error}");
        assert!(hooks_of_claude_settings("{}").unwrap().0.is_empty());
        let ignored = r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x", "async": true, "once": true}]}]}}"#;
        assert_eq!(hooks_of_claude_settings(ignored).unwrap().0.len(), 1);
    }

    #[test]
    fn claude_code_events_without_an_equivalent_are_named_not_refused() {
        let text = r#"{"hooks": {
            "Setup": [{"hooks": [{"type": "command", "command": "./install.sh"}]}],
            "ConfigChange": [{"hooks": [{"type": "command", "command": "./audit.sh"}]}],
            "InstructionsLoaded": [{"hooks": [{"type": "command", "command": "./log.sh"}]}],
            "PreToolUse": [{"matcher": "Bash", "description": "guard the shell",
                "hooks": [{"type": "command", "command": "./guard.sh"}]}]
        }}"#;
        let (spec, notes) = hooks_of_claude_settings(text).unwrap();
        assert_eq!(spec.len(), 1, "{spec:?}");
        assert_eq!(
            spec[&HookEvent::PreToolUse][0].hooks[0].command,
            "./guard.sh"
        );
        assert_eq!(notes.len(), 3, "{notes:?}");
        for event in ["Setup", "ConfigChange", "InstructionsLoaded"] {
            assert!(
                notes.iter().any(|note| note.starts_with(event)),
                "{notes:?}"
            );
        }
    }

    #[test]
    fn a_settings_file_chooses_no_sandbox() {
        let text = "{\"hooks\": {\"PostToolUse\": [{\"hooks\": [\n  {\"type\": \"command\", \"command\": \"./x.sh\", \"sandbox\": \"off\"}\n]}]}}";
        let error = hooks_of_claude_settings(text).unwrap_err();
        assert!(error.is_sandbox(), "{error}");
        assert_eq!(error.line, 2, "{error}");
        // Any other key is named, and grants nothing.
        let unknown = r#"{"hooks": {"Stop": [{"description": "d", "shell": "zsh", "hooks": [{"type": "command", "command": "x", "network": true, "description": "d"}]}]}}"#;
        let (spec, notes) = hooks_of_claude_settings(unknown).unwrap();
        assert_eq!(spec[&HookEvent::Stop][0].hooks[0].sandbox, None);
        assert_eq!(
            notes,
            vec![
                "Stop hook: key \"shell\" ignored: drover does not use it",
                "Stop hook: key \"network\" ignored: drover does not use it"
            ]
        );
    }

    #[test]
    fn hook_types_that_need_a_person_or_a_model_are_refused() {
        let text = r#"{"hooks": {"Stop": [{"hooks": [{"type": "prompt", "command": "x"}]}]}}"#;
        let (spec, _) = hooks_of_claude_settings(text).unwrap();
        assert!(
            hooks_problem(&spec)
                .unwrap()
                .contains("does not run headless")
        );
    }
}
