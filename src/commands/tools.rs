//! `drover tools`: the tools offered to models, built in or (with `--spec`) those a
//! task would offer, MCP servers' tools included.

use std::path::Path;

use serde_json::{Value, json};

use crate::exit;
use crate::mcp::ServerReport;
use crate::run::task::{ListedTool, ToolKind, list_builtin_tools, list_tools};
use crate::spec;

/// List the tools; with `spec`, start its MCP servers to list theirs. A required server
/// that does not start makes the listing incomplete: exit 3, as the task would.
pub(super) async fn tools_command(json: bool, spec_path: Option<&Path>) -> i32 {
    // Anthropic's web search is no definition of drover's: it is named apart.
    let (tools, failed_required, web_search) = match spec_path {
        None => match list_builtin_tools() {
            Ok(tools) => (tools, false, WebSearchNote::Unknown),
            Err(error) => {
                crate::esay!("drover: internal error: {error}");
                return exit::RUNNER_ERROR;
            }
        },
        Some(path) => match task_tools(path).await {
            Ok(listed) => listed,
            Err(code) => return code,
        },
    };
    if json {
        let mut definitions: Vec<Value> = tools.iter().map(definition_json).collect();
        if let WebSearchNote::Offered(search) = &web_search {
            definitions.push(crate::model::anthropic::web_search_tool(search));
        }
        match serde_json::to_string_pretty(&definitions) {
            Ok(text) => crate::output::say_json(&text),
            Err(error) => {
                crate::esay!("drover: internal error: {error}");
                return exit::RUNNER_ERROR;
            }
        }
    } else {
        print_table(&tools, &web_search);
    }
    if failed_required {
        exit::RUNNER_ERROR
    } else {
        exit::PASSED
    }
}

/// The tools the task of the spec at `path` would offer, whether a required MCP server
/// failed to start, and the web search note; or the exit code.
async fn task_tools(path: &Path) -> Result<(Vec<ListedTool>, bool, WebSearchNote), i32> {
    let loaded = spec::load(path).map_err(|error| {
        crate::esay!("drover: {error}");
        exit::BAD_INPUT
    })?;
    let listing = list_tools(&loaded).await.map_err(|error| {
        crate::esay!("drover: {error}");
        exit::BAD_INPUT
    })?;
    let failed_required = warn_of_servers(&listing.servers);
    let web_search = match listing.web_search {
        Some(search) => WebSearchNote::Offered(search),
        None => WebSearchNote::NotOffered,
    };
    Ok((listing.tools, failed_required, web_search))
}

/// Say which MCP tools are left out and which servers did not start; whether a required
/// one is among them.
fn warn_of_servers(servers: &[ServerReport]) -> bool {
    let mut failed_required = false;
    for report in servers {
        if let Ok(started) = &report.outcome {
            for left in &started.left_out {
                crate::esay!(
                    "drover: warning: MCP tool {:?} of server {} is not offered: {}",
                    left.tool,
                    report.server,
                    left.reason()
                );
            }
        }
        if let Err(why) = &report.outcome {
            let kind = if report.required {
                "required"
            } else {
                "optional"
            };
            crate::esay!(
                "drover: {kind} MCP server {} did not start: {why}",
                report.server
            );
            failed_required |= report.required;
        }
    }
    failed_required
}

/// One line per tool: its name, whether it only reads, the first line of its
/// description; then Anthropic's web search.
fn print_table(tools: &[ListedTool], web_search: &WebSearchNote) {
    let width = tools
        .iter()
        .map(|tool| tool.definition.name.len())
        .max()
        .unwrap_or(0);
    for tool in tools {
        let kind = match tool.kind {
            ToolKind::ReadOnly => "read-only",
            ToolKind::WritesOrExecutes => "writes/executes",
            ToolKind::FinalAnswer => "final answer",
        };
        let summary = tool
            .definition
            .description
            .lines()
            .next()
            .unwrap_or_default();
        crate::say!("{:<width$} {:<16} {summary}", tool.definition.name, kind);
    }
    let note = match web_search {
        WebSearchNote::Unknown => {
            "Anthropic's server-side web search: offered to anthropic models when a WebSearch rule allows it; never to openai, script or replay models"
        }
        WebSearchNote::Offered(_) => {
            "Anthropic's server-side web search: offered to this task's anthropic model, with the domains its WebSearch rules give"
        }
        WebSearchNote::NotOffered => {
            "not offered to this task (only to anthropic models, when a WebSearch rule allows it)"
        }
    };
    crate::say!("{:<width$} {:<16} {note}", "WebSearch", "server tool");
}

/// What the listing says of Anthropic's web search.
enum WebSearchNote {
    /// No task: it depends on a task's provider and rules.
    Unknown,
    Offered(crate::message::WebSearch),
    NotOffered,
}

/// A tool's Anthropic-format definition; an MCP tool's also names its server and its
/// own name there.
fn definition_json(tool: &ListedTool) -> Value {
    let mut value = json!({
        "name": tool.definition.name,
        "description": tool.definition.description,
        "input_schema": tool.definition.input_schema,
    });
    if let Some((server, name)) = &tool.mcp {
        value["mcp"] = json!({"server": server, "tool": name});
    }
    value
}
