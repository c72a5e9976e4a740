//! The task spec, version 1, as typed structs. Field names are the YAML keys.
//!
//! Values that need checking beyond their type (names, rules, durations) are newtypes
//! deserialized with `try_from`, so a bad value is reported at its own line and column.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_saphyr::Spanned;

use super::Pricing;
use super::sandbox::SandboxSpec;
use super::script::ScriptTurn;
use super::values::{InvalidValue, SpecDuration, Switch, TaskName};

/// A task spec. `M` is its model: a loaded spec always has one (`TaskSpec`), a spec file
/// as written may leave it to its directory's defaults ([`WrittenSpec`]).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskSpec<M = Spanned<ModelSpec>> {
    /// Required and checked when parsed: [`SpecVersion`] accepts only known versions.
    pub version: SpecVersion,
    /// With `matrix:`, a template of names (`bump-${{ matrix.service }}`) until the spec
    /// is expanded; each task's name is checked again then.
    #[serde(deserialize_with = "super::values::task_name_template")]
    pub name: Spanned<TaskName>,
    pub prompt: String,
    #[serde(default)]
    pub system: Option<String>,
    /// Relative to the spec file; default: the current directory.
    #[serde(default)]
    pub workspace: Option<Spanned<String>>,
    /// A git repository cloned (or fetched) as the workspace, instead of `workspace:`.
    #[serde(default)]
    pub repo: Option<Spanned<super::RepoSpec>>,
    /// How the workspace is isolated ([`TaskSpec::isolation`]); where it is written, for
    /// an isolation the workspace cannot have.
    #[serde(default, rename = "isolation")]
    pub isolation_spec: Option<Spanned<Isolation>>,
    /// Required, in the spec or in the defaults file of its directory.
    #[serde(default)]
    pub model: M,
    #[serde(default)]
    pub permissions: Permissions,
    /// Claude Code settings files (relative to the spec file) whose `permissions` join
    /// these: their deny and ask rules always, their allow rules as far as a file the
    /// repository controls may widen the policy (docs/claude-code.md).
    #[serde(default)]
    pub permissions_from: Option<Spanned<super::PermissionsFrom>>,
    #[serde(default)]
    pub limits: Limits,
    /// The OS sandbox around shell commands: `off`, or settings.
    #[serde(default)]
    pub sandbox: Option<SandboxSpec>,
    /// What of drover's environment reaches the commands the agent runs.
    #[serde(default)]
    pub env: EnvSpec,
    /// Commands run after isolation and before the loop (`cargo fetch`, `npm ci`), in the
    /// sandbox with the network on unless an entry's `sandbox:` says otherwise. Their
    /// effects are the starting state, not the agent's diff.
    #[serde(default)]
    pub setup: Vec<CheckSpec>,
    #[serde(default)]
    pub checks: Vec<CheckSpec>,
    /// What the result must look like (files changed), checked after the checks.
    #[serde(default)]
    pub expect: Option<super::expect::Expectations>,
    /// Paths left out of the diff, `files_changed` and the expectations (named in the
    /// reports): `{ exclude: [glob, ...] }`.
    #[serde(default)]
    pub diff: Option<Spanned<super::DiffSpec>>,
    /// MCP servers whose tools join the built-in ones.
    #[serde(default)]
    pub mcp: Option<Spanned<super::mcp::McpSpec>>,
    /// Failed checks sent back to the agent: `{ max_attempts: N }`.
    #[serde(default)]
    pub retry: Option<Spanned<super::output::AttemptsSpec>>,
    /// The final answer as a JSON value valid against a schema.
    #[serde(default)]
    pub output: Option<Spanned<super::output::OutputSpec>>,
    /// Claude Code-compatible hooks.
    #[serde(default)]
    pub hooks: Option<Spanned<super::hooks::HooksSpec>>,
    /// A Claude Code settings file (relative to the spec file) whose `hooks` join these.
    #[serde(default)]
    pub hooks_from: Option<Spanned<String>>,
    /// How replays of this task compare results: `{ ignore: [regex, ...] }`.
    #[serde(default)]
    pub replay: Option<Spanned<super::ReplaySpec>>,
    /// Sub-agents the model may start with the `Agent` tool.
    #[serde(default)]
    pub agents: Option<Spanned<super::agents::AgentsSpec>>,
    /// A directory of Claude Code agent files (relative to the spec file) whose agents
    /// join these.
    #[serde(default)]
    pub agents_from: Option<Spanned<String>>,
    /// Settings of built-in tools (`web_fetch: { model: … }`).
    #[serde(default)]
    pub tools: Option<Spanned<super::ToolsSpec>>,
    /// The workspace's files the model gets as project instructions; absent: the
    /// default files (`CLAUDE.md`, `.claude/CLAUDE.md`, `AGENTS.md`), `none`: no file.
    #[serde(default)]
    pub instructions: Option<Spanned<super::InstructionsSpec>>,
    /// Directories of Agent Skills (`<name>/SKILL.md`, relative to the spec file) the
    /// model loads on demand with the `Skill` tool.
    #[serde(default)]
    pub skills_from: Option<Spanned<super::SkillsFrom>>,
    /// One task per entry, its values substituted into the fields that reference them
    /// (`${{ matrix.KEY }}`; see `matrix`).
    #[serde(default)]
    pub matrix: Option<Spanned<super::MatrixSpec>>,
}

/// A spec file as written: its `model:` may be left to its directory's defaults file.
pub type WrittenSpec = TaskSpec<Option<Spanned<ModelSpec>>>;

impl<M> TaskSpec<M> {
    /// This spec with `model` as its model. Every field is named, so a field added later
    /// cannot be dropped on the way from the file to the spec that runs.
    pub(crate) fn with_model<N>(self, model: N) -> TaskSpec<N> {
        let TaskSpec {
            version,
            name,
            prompt,
            system,
            workspace,
            repo,
            isolation_spec,
            model: _,
            permissions,
            permissions_from,
            limits,
            sandbox,
            env,
            setup,
            checks,
            expect,
            diff,
            mcp,
            retry,
            output,
            hooks,
            hooks_from,
            replay,
            agents,
            agents_from,
            tools,
            instructions,
            skills_from,
            matrix,
        } = self;
        TaskSpec {
            version,
            name,
            prompt,
            system,
            workspace,
            repo,
            isolation_spec,
            model,
            permissions,
            permissions_from,
            limits,
            sandbox,
            env,
            setup,
            checks,
            expect,
            diff,
            mcp,
            retry,
            output,
            hooks,
            hooks_from,
            replay,
            agents,
            agents_from,
            tools,
            instructions,
            skills_from,
            matrix,
        }
    }
}

impl TaskSpec {
    /// How the workspace is isolated: as written, else edited in place.
    pub fn isolation(&self) -> Isolation {
        self.isolation_spec
            .as_ref()
            .map_or_else(Isolation::default, |isolation| isolation.value)
    }

    /// Every `sandbox:` the spec writes, each with where it is (`sandbox`,
    /// `setup[0].sandbox`, `hooks.Stop[0].hooks[1].sandbox`, `mcp.servers.docs.sandbox`).
    pub fn sandboxes(&self) -> Vec<(String, &SandboxSpec)> {
        let mut found: Vec<(String, &SandboxSpec)> = Vec::new();
        found.extend(self.sandbox.as_ref().map(|s| ("sandbox".to_string(), s)));
        for (list, steps) in [("setup", &self.setup), ("checks", &self.checks)] {
            for (i, step) in steps.iter().enumerate() {
                found.extend(
                    step.sandbox
                        .as_ref()
                        .map(|s| (format!("{list}[{i}].sandbox"), s)),
                );
            }
        }
        for (event, matchers) in self.hooks.iter().flat_map(|hooks| &hooks.value) {
            for (i, matcher) in matchers.iter().enumerate() {
                for (j, hook) in matcher.hooks.iter().enumerate() {
                    let at = format!("hooks.{}[{i}].hooks[{j}].sandbox", event.as_str());
                    found.extend(hook.sandbox.as_ref().map(|s| (at, s)));
                }
            }
        }
        for (name, server) in self.mcp.iter().flat_map(|mcp| &mcp.value.servers) {
            let at = format!("mcp.servers.{name}.sandbox");
            found.extend(server.sandbox.as_ref().map(|s| (at, s)));
        }
        found
    }

    /// A note for each `sandbox.network` that allows no host (`{}`, `{allow: []}`, only
    /// `deny:`): legal, and every connection is refused, but more likely a list left
    /// empty by mistake than a way to write `network: false`.
    pub fn network_notes(&self) -> Vec<String> {
        self.sandboxes()
            .into_iter()
            .filter(|(_, sandbox)| {
                SandboxSpec::network_rules(Some(sandbox)).is_some_and(|r| r.allows_nothing())
            })
            .map(|(at, _)| {
                format!(
                    "{at}.network allows no host: every connection its commands make is refused; name hosts in allow: or registries:, or write network: false"
                )
            })
            .collect()
    }
}

/// Only version 1 exists; anything else is refused rather than half-understood.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "u32")]
pub struct SpecVersion;

impl TryFrom<u32> for SpecVersion {
    type Error = InvalidValue;
    fn try_from(value: u32) -> Result<Self, Self::Error> {
        if value == 1 {
            Ok(SpecVersion)
        } else {
            Err(InvalidValue(format!(
                "unsupported spec version {value}: this drover reads version 1"
            )))
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Isolation {
    /// Edit the workspace in place.
    #[default]
    None,
    /// Work in a scratch copy of the workspace (tracked and untracked, not ignored, files).
    Copy,
    /// Work in a detached `git worktree` at HEAD.
    Worktree,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Provider {
    Anthropic,
    Openai,
    Script,
    Replay,
}

impl Provider {
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Anthropic => "anthropic",
            Provider::Openai => "openai",
            Provider::Script => "script",
            Provider::Replay => "replay",
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    pub provider: Provider,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub base_url: Option<String>,
    #[serde(default)]
    pub api_key_env: Option<String>,
    #[serde(default)]
    pub max_tokens: Option<u32>,
    #[serde(default)]
    pub temperature: Option<f64>,
    /// anthropic/openai: the endpoint path under `base_url` (default `/v1/messages`,
    /// `/v1/chat/completions`), for gateways that mount the API elsewhere.
    #[serde(default)]
    pub path: Option<String>,
    /// anthropic/openai: retries with backoff (see docs/providers.md).
    #[serde(default)]
    pub retry: Option<super::RetrySpec>,
    /// anthropic/openai: connect, first-byte and idle timeouts.
    #[serde(default)]
    pub timeouts: Option<super::TimeoutsSpec>,
    /// provider: script — one entry per assistant turn.
    #[serde(default)]
    pub script: Option<Vec<ScriptTurn>>,
    /// provider: replay — a recorded transcript, relative to the spec file.
    #[serde(default)]
    pub transcript: Option<String>,
    /// USD per million tokens, overriding the built-in table (required with
    /// `limits.max_cost_usd` for a model the table does not know).
    #[serde(default)]
    pub pricing: Option<Pricing>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Permissions {
    /// Rules as written (`Bash(cargo test *)`), each with its position; the policy parses
    /// them (see `policy::RuleSet`).
    #[serde(default)]
    pub allow: Vec<Spanned<String>>,
    #[serde(default)]
    pub deny: Vec<Spanned<String>>,
    /// `plan` offers only read-only tools: the model can look but not touch.
    #[serde(default)]
    pub mode: PermissionMode,
    /// Directories outside the workspace that tools may touch (relative to the spec
    /// file, or absolute).
    #[serde(default)]
    pub additional_directories: Vec<String>,
    /// The guardrails (deleting `/`, `sudo`, fork bombs, …) that no allow rule lifts.
    /// Only an explicit `off` disables them.
    #[serde(default)]
    pub guardrails: Switch,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PermissionMode {
    #[default]
    Default,
    Plan,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Spanned so that a zero is reported at its place.
    #[serde(default)]
    pub max_turns: Option<Spanned<u32>>,
    /// The agent loop's wall-clock limit; [`DEFAULT_TASK_TIMEOUT`] when absent.
    #[serde(default)]
    pub timeout: Option<TimeoutLimit>,
    /// Spanned so that a budget the runner cannot price is reported at its place.
    #[serde(default)]
    pub max_cost_usd: Option<Spanned<f64>>,
    /// Total tokens of the run (input, output, cache writes and cache reads). Spanned
    /// so that a zero is reported at its place.
    #[serde(default)]
    pub max_tokens: Option<Spanned<u64>>,
    /// How deep sub-agents may nest (1: sub-agents start none of their own); default 2.
    #[serde(default)]
    pub max_agent_depth: Option<Spanned<u32>>,
    /// How the conversation is kept inside the model's window (default: old tool
    /// results cleared at 70% of it).
    #[serde(default)]
    pub context: Option<super::ContextSpec>,
    /// The same call with the same result this many times in a row is a loop (default
    /// 5; `off`).
    #[serde(default)]
    pub max_identical_calls: Option<super::IdenticalCalls>,
    /// A limit about to end the run gives the model one last turn, without tools, to
    /// say where the work stands.
    #[serde(default)]
    pub wrap_up: bool,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnvSpec {
    /// Variables passed to commands even though they look like secrets.
    #[serde(default)]
    pub pass: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckSpec {
    pub name: String,
    pub run: String,
    #[serde(default)]
    pub timeout: Option<SpecDuration>,
    /// The check's sandbox: by default the task's (a check runs code the agent wrote);
    /// `{ network: true }` lets it fetch, `off` runs it unsandboxed.
    #[serde(default)]
    pub sandbox: Option<SandboxSpec>,
}

/// The agent loop's wall-clock limit when the spec sets none: a task never runs for ever.
pub const DEFAULT_TASK_TIMEOUT: Duration = Duration::from_secs(60 * 60);

/// `limits.timeout`: a duration (`30m`), or `none` for no limit at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub enum TimeoutLimit {
    Unlimited,
    After(Duration),
}

impl TimeoutLimit {
    /// The limit in force spelled as a spec writes it (`1h`, `20m 30s`, `none`).
    pub fn spelled(limit: Option<TimeoutLimit>) -> String {
        match TimeoutLimit::effective(limit) {
            Some(duration) => humantime::format_duration(duration).to_string(),
            None => "none".to_string(),
        }
    }

    /// The limit in force, the default when the spec says nothing.
    pub fn effective(limit: Option<TimeoutLimit>) -> Option<Duration> {
        match limit {
            None => Some(DEFAULT_TASK_TIMEOUT),
            Some(TimeoutLimit::Unlimited) => None,
            Some(TimeoutLimit::After(duration)) => Some(duration),
        }
    }
}

impl TryFrom<String> for TimeoutLimit {
    type Error = InvalidValue;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        if value.trim() == "none" {
            return Ok(TimeoutLimit::Unlimited);
        }
        SpecDuration::try_from(value)
            .map(|d| TimeoutLimit::After(d.0))
            .map_err(|e| InvalidValue(format!("{e}, or none for no limit")))
    }
}
