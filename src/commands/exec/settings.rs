//! From `drover exec`'s flags to the task it runs. The flags give [`ExecSettings`], every
//! setting optional; [`ExecSettings::task`] is the one place drover's defaults fill what
//! no flag gave, and where files and the environment are read. The defaults file of the
//! workspace (`drover.yaml`, docs/defaults.md) is not merged here: a setting it writes
//! and no flag set is left out of the task's spec ([`ExecSettings::inheriting`]), and
//! the file is merged into that spec as into a spec file, by the same rules (the flags
//! are the spec's own values, and win).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::cli::{ExecArgs, ExecProvider, IsolationArg, SwitchArg};
use crate::policy::Rule;
use crate::run::plan::{ReferencedFileError, beside_spec_unlinked, read_referenced};
use crate::spec::{
    Defaults, ExecInherits, ExecTask, HostPattern, Isolation, Provider, Registry, TimeoutLimit,
    model_alias,
};

use super::claude_flags::{Refused, plan_mode};
use super::rule_list::split_rules;

/// The model when `--model` names none.
const DEFAULT_ANTHROPIC_MODEL: &str = "claude-sonnet-4-5";
const DEFAULT_OPENAI_MODEL: &str = "gpt-5";

/// A rule and the flag that gave it, for an error that names both.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct FlagRule {
    flag: &'static str,
    rule: String,
}

/// Where the prompt comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum PromptSource {
    Text(String),
    File(PathBuf),
}

/// What `drover exec` runs with, as given: `None` (or empty) where nothing was.
#[derive(Debug, Clone, Default)]
pub(super) struct ExecSettings {
    pub prompt: Option<PromptSource>,
    pub allow: Vec<FlagRule>,
    pub deny: Vec<FlagRule>,
    pub workspace: Option<PathBuf>,
    pub isolation: Option<Isolation>,
    pub sandbox: Option<bool>,
    pub network: Option<bool>,
    /// `--allow-host`: the hosts sandboxed commands may reach (through the proxy).
    pub allow_hosts: Vec<HostPattern>,
    /// `--registry`: package registries, by name, as `allow_hosts`.
    pub registries: Vec<Registry>,
    pub add_dirs: Vec<PathBuf>,
    pub max_turns: Option<u32>,
    pub timeout: Option<TimeoutLimit>,
    pub max_cost_usd: Option<f64>,
    pub max_tokens: Option<u64>,
    pub checks: Vec<String>,
    pub output_schema: Option<PathBuf>,
    pub system: Option<String>,
    pub plan_mode: Option<bool>,
    pub provider: Option<Provider>,
    pub model: Option<String>,
    pub base_url: Option<String>,
    pub api_key_env: Option<String>,
    pub name: Option<String>,
    /// What the workspace's defaults file gives and no flag set.
    pub inherits: ExecInherits,
}

/// Why the flags make no task; every message names the flag and says what to write.
#[derive(Debug, thiserror::Error)]
pub(super) enum ExecError {
    #[error(transparent)]
    Refused(#[from] Refused),
    #[error("{flag} {rule:?} is not a rule: {message}")]
    Rule {
        flag: &'static str,
        rule: String,
        message: String,
    },
    #[error(
        "drover exec needs a model: set ANTHROPIC_API_KEY (provider anthropic) or OPENAI_API_KEY (provider openai), or pass --provider anthropic|openai (with --base-url and --api-key-env for another server, --api-key-env none for one that needs no key)"
    )]
    NoProvider,
    #[error(
        "the prompt is empty: say what the agent is to do, as the argument or in --prompt-file"
    )]
    EmptyPrompt,
    #[error("{flag}: {source}")]
    File {
        flag: &'static str,
        source: ReferencedFileError,
    },
    #[error("{flag} {}: {what}", path.display())]
    Path {
        flag: &'static str,
        path: PathBuf,
        what: String,
    },
    #[error("--output-schema {}: {what}", path.display())]
    Schema { path: PathBuf, what: String },
    #[error("--check {0:?} is given twice; give each check once")]
    CheckTwice(String),
    #[error(
        "{flag} needs the sandbox: its hosts are enforced around sandboxed commands, and --sandbox off confines none; drop --sandbox off, or {flag}"
    )]
    HostsWithoutSandbox { flag: &'static str },
}

impl ExecSettings {
    /// The settings the flags give.
    pub(super) fn from_args(args: &ExecArgs) -> Result<ExecSettings, Refused> {
        let prompt = match (&args.prompt, &args.prompt_file) {
            (_, Some(file)) => Some(PromptSource::File(file.clone())),
            (Some(text), None) => Some(PromptSource::Text(text.clone())),
            (None, None) => None,
        };
        let rules = |flag: &'static str, values: &[String], at_blanks: bool| {
            values
                .iter()
                .flat_map(|value| split_rules(value, at_blanks))
                .map(|rule| FlagRule { flag, rule })
                .collect::<Vec<_>>()
        };
        let mut allow = rules("--allow", &args.allow, false);
        allow.extend(rules("--allowedTools", &args.allowed_tools, true));
        let mut deny = rules("--deny", &args.deny, false);
        deny.extend(rules("--disallowedTools", &args.disallowed_tools, true));
        let plan = plan_mode(args.claude.permission_mode.as_deref())?;
        Ok(ExecSettings {
            prompt,
            allow,
            deny,
            workspace: args.workspace.clone(),
            isolation: args.isolation.map(|isolation| match isolation {
                IsolationArg::None => Isolation::None,
                IsolationArg::Copy => Isolation::Copy,
                IsolationArg::Worktree => Isolation::Worktree,
            }),
            sandbox: args.sandbox.map(|switch| switch == SwitchArg::On),
            network: args.network.then_some(true),
            allow_hosts: args.allow_hosts.clone(),
            registries: args.registries.clone(),
            add_dirs: args.add_dirs.clone(),
            max_turns: args.max_turns,
            timeout: args.timeout,
            max_cost_usd: args.max_cost_usd,
            max_tokens: args.max_tokens,
            checks: args.checks.clone(),
            output_schema: args.output_schema.clone(),
            system: args.append_system_prompt.clone(),
            plan_mode: plan.then_some(true),
            provider: args.provider.map(|provider| match provider {
                ExecProvider::Anthropic => Provider::Anthropic,
                ExecProvider::Openai => Provider::Openai,
            }),
            model: args.model.clone(),
            base_url: args.base_url.clone(),
            api_key_env: args.api_key_env.clone(),
            name: args.name.clone(),
            inherits: ExecInherits::default(),
        })
    }

    /// These settings with what `defaults` writes and no flag set left to it: the
    /// model (taken whole, as a spec's: no model flag), the isolation, the allow list
    /// (a flag's list is the spec's own, and the default's is then not added) and the
    /// sandbox. The rest needs nothing here: the spec writes limits only when a flag
    /// sets them (and they merge key by key), deny lists join, and a list only a flag
    /// writes (`--add-dir`) is the spec's.
    pub(super) fn inheriting(mut self, defaults: &Defaults) -> ExecSettings {
        let model_flag = self.provider.is_some()
            || self.model.is_some()
            || self.base_url.is_some()
            || self.api_key_env.is_some();
        self.inherits = ExecInherits {
            model: !model_flag && defaults.writes(&["model"]),
            isolation: self.isolation.is_none() && defaults.writes(&["isolation"]),
            allow: self.allow.is_empty() && defaults.writes(&["permissions", "allow"]),
            sandbox: self.sandbox.is_none()
                && self.network.is_none()
                && self.allow_hosts.is_empty()
                && self.registries.is_empty()
                && defaults.writes(&["sandbox"]),
        };
        self
    }

    /// The task: defaults where nothing was given, files read, rules checked, paths
    /// made absolute. `env` reads the environment (the provider's key variables).
    pub(super) fn task(self, env: impl Fn(&str) -> Option<String>) -> Result<ExecTask, ExecError> {
        let allow = checked_rules(self.allow)?;
        let deny = checked_rules(self.deny)?;
        let provider = match self.provider {
            Some(provider) => provider,
            // Not written: the defaults file's model is the task's.
            None if self.inherits.model => Provider::Anthropic,
            None => provider_of_env(&env)?,
        };
        let prompt = match self.prompt {
            Some(PromptSource::Text(text)) => text,
            Some(PromptSource::File(path)) => read_file("--prompt-file", &path)?,
            None => String::new(),
        };
        if prompt.trim().is_empty() {
            return Err(ExecError::EmptyPrompt);
        }
        let sandbox = self.sandbox.unwrap_or(true);
        if !sandbox {
            let named = [
                ("--allow-host", self.allow_hosts.is_empty()),
                ("--registry", self.registries.is_empty()),
            ];
            if let Some((flag, _)) = named.into_iter().find(|(_, empty)| !empty) {
                return Err(ExecError::HostsWithoutSandbox { flag });
            }
        }
        let workspace = self.workspace.unwrap_or_else(|| PathBuf::from("."));
        let additional_directories = self
            .add_dirs
            .iter()
            .map(|dir| directory("--add-dir", dir))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ExecTask {
            name: self.name.unwrap_or_else(|| "exec".to_string()),
            prompt,
            system: self.system,
            workspace: directory("--workspace", &workspace)?,
            isolation: self.isolation.unwrap_or_default(),
            model: model_name(provider, self.model),
            provider,
            base_url: self.base_url,
            api_key_env: self.api_key_env,
            allow,
            deny,
            plan_mode: self.plan_mode.unwrap_or(false),
            additional_directories,
            sandbox,
            network: self.network.unwrap_or(false),
            allow_hosts: self.allow_hosts,
            registries: self.registries,
            max_turns: self.max_turns,
            timeout: self.timeout.map(|limit| TimeoutLimit::spelled(Some(limit))),
            max_cost_usd: self.max_cost_usd,
            max_tokens: self.max_tokens,
            checks: unique_checks(self.checks)?,
            output_schema: self.output_schema.map(|path| schema(&path)).transpose()?,
            inherits: self.inherits,
        })
    }
}

/// The rules as written, each checked as a spec's rule is, the first bad one an error
/// naming its flag.
fn checked_rules(rules: Vec<FlagRule>) -> Result<Vec<String>, ExecError> {
    rules
        .into_iter()
        .map(
            |FlagRule { flag, rule }| match Rule::try_from(rule.clone()) {
                Ok(_) => Ok(rule),
                Err(invalid) => Err(ExecError::Rule {
                    flag,
                    rule,
                    message: invalid.message,
                }),
            },
        )
        .collect()
}

/// The provider whose key the environment holds, as `claude` and `codex` find theirs.
fn provider_of_env(env: &impl Fn(&str) -> Option<String>) -> Result<Provider, ExecError> {
    let set = |name: &str| env(name).is_some_and(|value| !value.trim().is_empty());
    if set("ANTHROPIC_API_KEY") {
        Ok(Provider::Anthropic)
    } else if set("OPENAI_API_KEY") {
        Ok(Provider::Openai)
    } else {
        Err(ExecError::NoProvider)
    }
}

/// `--model`, Claude Code's aliases (`sonnet`) understood for Anthropic, or the
/// provider's default model.
fn model_name(provider: Provider, model: Option<String>) -> String {
    match (provider, model) {
        (Provider::Anthropic, Some(name)) => model_alias(&name).map_or(name, ToString::to_string),
        (_, Some(name)) => name,
        (Provider::Openai, None) => DEFAULT_OPENAI_MODEL.to_string(),
        (_, None) => DEFAULT_ANTHROPIC_MODEL.to_string(),
    }
}

/// `dir` made absolute (symbolic links resolved), when it is a directory.
fn directory(flag: &'static str, dir: &Path) -> Result<String, ExecError> {
    let problem = |what: String| ExecError::Path {
        flag,
        path: dir.to_path_buf(),
        what,
    };
    let real = dir
        .canonicalize()
        .map_err(|error| problem(format!("cannot be used: {error}")))?;
    if !real.is_dir() {
        return Err(problem("is not a directory".to_string()));
    }
    real.to_str()
        .map(str::to_string)
        .ok_or_else(|| problem("is not a UTF-8 path; give the directory another name".into()))
}

/// The text of the file `path` names (as a file a spec names: a regular file reached
/// through no symbolic link below the current directory, at most 1 MiB).
fn read_file(flag: &'static str, path: &Path) -> Result<String, ExecError> {
    let named = path.to_str().ok_or_else(|| ExecError::Path {
        flag,
        path: path.to_path_buf(),
        what: "is not a UTF-8 path".to_string(),
    })?;
    beside_spec_unlinked(Path::new("."), named)
        .and_then(|path| read_referenced(&path))
        .map_err(|source| ExecError::File { flag, source })
}

/// The JSON Schema in `path`: an object, or `true`/`false`.
fn schema(path: &Path) -> Result<Value, ExecError> {
    let text = read_file("--output-schema", path)?;
    let schema: Value = serde_json::from_str(&text).map_err(|error| ExecError::Schema {
        path: path.to_path_buf(),
        what: format!("not JSON: {error}"),
    })?;
    if schema.is_object() || schema.is_boolean() {
        Ok(schema)
    } else {
        Err(ExecError::Schema {
            path: path.to_path_buf(),
            what: "a JSON Schema is an object (or true/false)".to_string(),
        })
    }
}

/// The checks, each named by its command, so each must be given once.
fn unique_checks(checks: Vec<String>) -> Result<Vec<String>, ExecError> {
    for (index, check) in checks.iter().enumerate() {
        if checks[..index].contains(check) {
            return Err(ExecError::CheckTwice(check.clone()));
        }
    }
    Ok(checks)
}

#[cfg(test)]
#[path = "settings_tests.rs"]
mod tests;
