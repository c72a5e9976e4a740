//! `ListMcpResources` and `ReadMcpResource`, Claude Code's tools for MCP resources,
//! offered when a started server has resources. Like every MCP tool they reach outside
//! the workspace, so drover states them as not read-only: a rule must allow them.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use rmcp::RoleClient;
use rmcp::model::ReadResourceRequestParams;
use rmcp::service::Peer;
use serde_json::{Value, json};

use super::content;
use crate::policy::{CallFacts, ToolFacts};
use crate::tools::{Tool, ToolCall, ToolContext, ToolError, ToolOutput};

pub(crate) const LIST: &str = "ListMcpResources";
pub(crate) const READ: &str = "ReadMcpResource";

/// The servers that have resources, by name, and the limits of a call.
pub(crate) struct ResourceServers {
    pub peers: BTreeMap<String, Peer<RoleClient>>,
    pub call_timeout: Duration,
    pub max_output: u64,
}

/// One of the two resource tools.
pub(crate) struct ResourceTool {
    name: &'static str,
    servers: Arc<ResourceServers>,
}

impl ResourceTool {
    /// Both tools over `servers`.
    pub(crate) fn both(servers: ResourceServers) -> [Arc<ResourceTool>; 2] {
        let servers = Arc::new(servers);
        [LIST, READ].map(|name| {
            Arc::new(ResourceTool {
                name,
                servers: Arc::clone(&servers),
            })
        })
    }
}

#[async_trait]
impl Tool for ResourceTool {
    fn name(&self) -> &str {
        self.name
    }

    fn description(&self) -> &str {
        if self.name == LIST {
            "Lists the resources (files, records, documents) the task's MCP servers offer: each line is the server, the resource's URI, and its name and type. Give server to list one server's only. Read one with ReadMcpResource."
        } else {
            "Reads one resource of an MCP server by its URI, as listed by ListMcpResources. Text is shown as it is; binary content is named, not shown."
        }
    }

    fn input_schema(&self) -> Value {
        let names: Vec<&String> = self.servers.peers.keys().collect();
        let server = json!({"type": "string", "enum": names, "description": "The MCP server's name in the spec."});
        if self.name == LIST {
            json!({"type": "object", "properties": {"server": server}, "additionalProperties": false})
        } else {
            json!({"type": "object",
                   "properties": {"server": server, "uri": {"type": "string", "description": "The resource's URI."}},
                   "required": ["server", "uri"], "additionalProperties": false})
        }
    }

    fn facts(&self) -> ToolFacts {
        super::facts_of(self.name)
    }

    fn prepare(self: Arc<Self>, input: Value) -> Result<Box<dyn ToolCall>, ToolError> {
        let field = |key: &str| input.get(key).and_then(Value::as_str).map(str::to_string);
        Ok(Box::new(ResourceCall {
            server: field("server"),
            uri: field("uri"),
            tool: self,
        }))
    }
}

struct ResourceCall {
    tool: Arc<ResourceTool>,
    server: Option<String>,
    uri: Option<String>,
}

#[async_trait]
impl ToolCall for ResourceCall {
    fn facts(&self) -> CallFacts {
        CallFacts::without_subject(self.tool.facts())
    }

    async fn run(self: Box<Self>, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let servers = &self.tool.servers;
        let work = async {
            if self.tool.name == LIST {
                list(servers, self.server.as_deref()).await
            } else {
                read(servers, self.server.as_deref(), self.uri.as_deref()).await
            }
        };
        match tokio::time::timeout(servers.call_timeout, work).await {
            Ok(result) => {
                result.map(|text| ToolOutput::ok(content::limit(text, servers.max_output)))
            }
            Err(_) => Err(ToolError::Failed(format!(
                "the MCP server did not answer within {:?} (mcp timeouts.call)",
                servers.call_timeout
            ))),
        }
    }
}

fn peer<'a>(servers: &'a ResourceServers, name: &str) -> Result<&'a Peer<RoleClient>, ToolError> {
    servers.peers.get(name).ok_or_else(|| {
        let known: Vec<&str> = servers.peers.keys().map(String::as_str).collect();
        ToolError::Failed(format!(
            "no MCP server {name:?} with resources; the servers with resources are: {}",
            known.join(", ")
        ))
    })
}

async fn list(servers: &ResourceServers, only: Option<&str>) -> Result<String, ToolError> {
    let names: Vec<&String> = match only {
        Some(name) => {
            peer(servers, name)?;
            servers.peers.keys().filter(|n| *n == name).collect()
        }
        None => servers.peers.keys().collect(),
    };
    let mut lines = Vec::new();
    for name in names {
        let peer = peer(servers, name)?;
        let resources = peer.list_all_resources().await.map_err(|e| {
            ToolError::Failed(format!(
                "MCP server {name} could not list its resources: {e}"
            ))
        })?;
        for resource in resources {
            let value = serde_json::to_value(&resource).unwrap_or(Value::Null);
            let field = |key: &str| value.get(key).and_then(Value::as_str).unwrap_or_default();
            lines.push(format!(
                "{name}\t{}\t{}\t{}",
                field("uri"),
                field("name"),
                field("mimeType")
            ));
        }
    }
    if lines.is_empty() {
        return Ok("No resources.".to_string());
    }
    Ok(lines.join("\n"))
}

async fn read(
    servers: &ResourceServers,
    server: Option<&str>,
    uri: Option<&str>,
) -> Result<String, ToolError> {
    let (Some(server), Some(uri)) = (server, uri) else {
        return Err(ToolError::Failed(
            "ReadMcpResource needs server and uri".to_string(),
        ));
    };
    let result = peer(servers, server)?
        .read_resource(ReadResourceRequestParams::new(uri))
        .await
        .map_err(|e| ToolError::Failed(format!("MCP server {server} could not read {uri}: {e}")))?;
    let blocks: Vec<Value> = result
        .contents
        .iter()
        .filter_map(|contents| serde_json::to_value(contents).ok())
        .map(|resource| json!({"type": "resource", "resource": resource}))
        .collect();
    // Embedded resources only: no image is attached, binary contents are named.
    Ok(content::render(&blocks).text)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_deny_of_every_mcp_tool_covers_the_resource_tools() {
        let named = crate::policy::MCP_RESOURCE_TOOLS;
        assert!(named.contains(&super::LIST) && named.contains(&super::READ));
    }
}
