//! `drover tools --spec TASK`: the tools that task would offer the model — the built-in
//! ones and its MCP servers' (started for the listing, in their sandboxes, and stopped),
//! less what its policy withholds.

use std::path::Path;
use std::sync::Arc;

use crate::agent::OutputSchema;
use crate::mcp::{McpSession, OfferedName, ServerReport, Setup as McpSetup};
use crate::message::ToolDefinition;
use crate::model::replay::ReplayModel;
use crate::model::{Model as _, OutputMode};
use crate::policy::{Policy, ToolFacts};
use crate::run::recording::Recording;
use crate::spec::{LoadedSpec, Provider};
use crate::tools::Registry;

use super::commands::task_commands;
use super::error::TaskError;
use super::redaction::{mcp_credential_vars, redactor_with_mcp};
use crate::run::plan::spec_checks::{mcp_servers, rule_set};
use crate::spec::SpecError;

/// A tool as the task would offer it, with what it does.
pub(crate) struct ListedTool {
    pub definition: ToolDefinition,
    pub kind: ToolKind,
    /// The MCP server it comes from, and the tool's own name there.
    pub mcp: Option<(String, String)>,
}

/// What a listed tool does, as the listing says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ToolKind {
    /// Only reads (the policy's `read_only`).
    ReadOnly,
    WritesOrExecutes,
    /// `StructuredOutput`: the final answer of a task with `output:`, judged by no rule.
    FinalAnswer,
}

impl ToolKind {
    fn of(facts: &ToolFacts) -> ToolKind {
        if facts.read_only {
            ToolKind::ReadOnly
        } else {
            ToolKind::WritesOrExecutes
        }
    }
}

/// The registry's tools as listed; those in `offered` are MCP tools.
fn listed(registry: &Registry, offered: &[OfferedName]) -> Vec<ListedTool> {
    registry
        .definitions()
        .into_iter()
        .filter_map(|definition| {
            let kind = ToolKind::of(registry.facts(&definition.name)?);
            let mcp = offered
                .iter()
                .find(|name| name.name == definition.name)
                .map(|name| (name.server.clone(), name.tool.clone()));
            Some(ListedTool {
                definition,
                kind,
                mcp,
            })
        })
        .collect()
}

/// Searches per request when the spec does not say (Claude Code's figure).
const DEFAULT_WEB_SEARCH_USES: u32 = 8;

/// Anthropic's web search, when `rules` allow it and the provider is Anthropic's (no
/// other provider has the server tool).
pub(crate) fn offered_web_search(
    rules: &crate::policy::RuleSet,
    provider: &str,
    tools: Option<&crate::spec::ToolsSpec>,
) -> Option<crate::message::WebSearch> {
    if provider != "anthropic" {
        return None;
    }
    let max_uses = tools
        .and_then(|tools| tools.web_search.as_ref())
        .and_then(|search| search.max_uses.as_ref())
        .map_or(DEFAULT_WEB_SEARCH_USES, |max_uses| max_uses.value);
    rules.web_search(Some(max_uses))
}

/// The tools the spec's own definitions add: `Agent` for its sub-agents, `Skill` for its
/// skills.
fn add_spec_tools(
    loaded: &LoadedSpec,
    workspace: &Path,
    registry: &mut Registry,
) -> Result<(), ListingError> {
    let (agents, _) = crate::run::plan::spec_checks::task_agents(loaded)?;
    super::subagents::add_agent_tool(registry, &agents).map_err(TaskError::from)?;
    let (skills, _) = crate::run::plan::spec_checks::task_skills(loaded, workspace)?;
    if !skills.is_empty() {
        let tool = crate::tools::skill::SkillTool::new(skills);
        registry.add(Arc::new(tool)).map_err(TaskError::from)?;
    }
    Ok(())
}

/// `StructuredOutput`, which every request of a task with `output:` carries after the
/// registry's tools when its model takes the answer as a tool call (the agent loop adds
/// it the same way, from the same schema): not for an OpenAI-compatible model, which
/// answers in its final text under the provider's JSON response format.
fn final_answer_tool(loaded: &LoadedSpec) -> Result<Option<ListedTool>, ListingError> {
    let Some(schema) = crate::run::plan::spec_checks::output_schema(loaded)? else {
        return Ok(None);
    };
    if answer_mode(loaded) != OutputMode::Tool {
        return Ok(None);
    }
    // The schema compiled in `output_schema`; None only if it stopped compiling since.
    Ok(OutputSchema::new(schema).map(|schema| ListedTool {
        definition: schema.tool(),
        kind: ToolKind::FinalAnswer,
        mcp: None,
    }))
}

/// How the task's model gives its final answer: as the provider does, and for a replay
/// as the recorded provider did (a transcript that cannot be read: as a tool call, the
/// replay model's default; the run itself refuses it).
fn answer_mode(loaded: &LoadedSpec) -> OutputMode {
    let model = &loaded.spec.model.value;
    match model.provider {
        Provider::Openai => OutputMode::Text,
        Provider::Anthropic | Provider::Script => OutputMode::Tool,
        Provider::Replay => model
            .transcript
            .as_ref()
            .and_then(|transcript| Recording::read(&loaded.beside_spec(transcript)).ok())
            .map_or(OutputMode::Tool, |recording| {
                ReplayModel::from_events(&recording.events).output_mode()
            }),
    }
}

/// The built-in tools, as listed.
pub(crate) fn list_builtin_tools() -> Result<Vec<ListedTool>, crate::tools::RegistryError> {
    Ok(listed(&Registry::builtin()?, &[]))
}

/// The task's offered tools, and how starting each MCP server went.
pub(crate) struct ToolListing {
    pub tools: Vec<ListedTool>,
    pub servers: Vec<ServerReport>,
    /// Anthropic's web search, when the task offers it.
    pub web_search: Option<crate::message::WebSearch>,
}

/// Why the tools cannot be listed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ListingError {
    #[error(transparent)]
    Spec(#[from] SpecError),
    #[error("the workspace {} cannot be used: {source}", path.display())]
    Workspace {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Task(#[from] TaskError),
    #[error("the MCP servers cannot be started: {0}")]
    Sandbox(String),
}

/// List the tools `loaded` would offer. Its MCP servers start as they would for the
/// task (in the spec's workspace, not a copy: they are only asked for their tools).
pub(crate) async fn list_tools(loaded: &LoadedSpec) -> Result<ToolListing, ListingError> {
    let (servers, _) = mcp_servers(loaded)?;
    let rules = rule_set(loaded)?;
    let workspace =
        loaded
            .workspace_dir()
            .canonicalize()
            .map_err(|source| ListingError::Workspace {
                path: loaded.workspace_dir(),
                source,
            })?;
    let policy = Policy::new(&rules, &workspace, &loaded.additional_directories());
    let mut registry = Registry::builtin().map_err(TaskError::from)?;
    let mut session = McpSession::default();
    // Why a server did not start quotes its stderr, which may hold a secret; what a
    // headers helper prints is added to it.
    let redactor = redactor_with_mcp(
        None,
        &loaded.spec.env.pass,
        mcp_credential_vars(&servers),
        &servers,
    );
    if !servers.is_empty() {
        let mut commands = task_commands(loaded, &rules, &workspace, (&[], None), true).await?;
        if let Some(reason) = commands.unavailable.take() {
            return Err(ListingError::Sandbox(reason));
        }
        commands.env.withheld.extend(mcp_credential_vars(&servers));
        commands
            .env
            .withheld
            .extend(loaded.spec.model.value.api_key_env.iter().cloned());
        let limits = loaded
            .spec
            .mcp
            .as_ref()
            .map(|mcp| mcp.value.clone())
            .unwrap_or_default();
        let logs = tempfile::tempdir().map_err(TaskError::TempDir)?;
        // The servers' stderr is kept only for the listing's length.
        let env_for = |sandbox: Option<&crate::spec::SandboxSpec>| commands.for_sandbox(sandbox);
        let setup = McpSetup {
            spec_dir: loaded.path.parent().unwrap_or(Path::new(".")),
            workspace: &workspace,
            log_dir: logs.path(),
            vars: &crate::mcp::VarSource::Environment,
            redactor: &redactor,
            env_for: &env_for,
        };
        session = McpSession::start(&servers, &limits, &setup).await;
        for tool in &session.tools {
            if let Err(error) = registry.add(Arc::clone(tool)) {
                crate::esay!(
                    "drover: warning: MCP tool {} left out: {error}",
                    tool.name()
                );
            }
        }
    }
    add_spec_tools(loaded, &workspace, &mut registry)?;
    registry.retain(|facts| policy.withholds(facts).is_none());
    let mut tools = listed(&registry, &session.offered_names());
    tools.extend(final_answer_tool(loaded)?);
    let mut reports = session.reports.clone();
    for report in &mut reports {
        if let Err(why) = &mut report.outcome {
            why.0 = redactor.redact_owned(std::mem::take(&mut why.0));
        }
    }
    session.shutdown().await;
    Ok(ToolListing {
        tools,
        servers: reports,
        web_search: offered_web_search(
            &rules,
            loaded.spec.model.value.provider.as_str(),
            loaded.spec.tools.as_ref().map(|tools| &tools.value),
        ),
    })
}
