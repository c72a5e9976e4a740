//! The registry: tool lookup, tool definitions for the model, input validation, and the
//! one place a call's JSON becomes the [`ToolCall`] the policy judges and the tool runs.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use super::{Tool, ToolCall, ToolError};
use crate::message::ToolDefinition;
use crate::policy::ToolFacts;

/// A tool with what the registry derives from it once: its definition for the model,
/// its facts for the policy and its compiled input validator.
struct Entry {
    tool: Arc<dyn Tool>,
    definition: ToolDefinition,
    facts: ToolFacts,
    validator: jsonschema::Validator,
}

/// The tools offered in one run.
pub(crate) struct Registry {
    entries: BTreeMap<String, Entry>,
    order: Vec<String>,
}

/// Why a registry could not be built: a tool's schema does not compile, or two tools
/// share a name.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RegistryError {
    #[error("the input schema of tool {tool} is invalid: {message}")]
    Schema { tool: String, message: String },
    #[error("two tools are named {0}")]
    Duplicate(String),
}

impl Registry {
    pub(crate) fn new(tools: Vec<Arc<dyn Tool>>) -> Result<Self, RegistryError> {
        let mut registry = Registry {
            entries: BTreeMap::new(),
            order: Vec::new(),
        };
        for tool in tools {
            registry.add(tool)?;
        }
        Ok(registry)
    }

    /// Every built-in tool.
    pub(crate) fn builtin() -> Result<Self, RegistryError> {
        Self::new(super::builtin())
    }

    /// Offer one more tool, after those already offered.
    pub(crate) fn add(&mut self, tool: Arc<dyn Tool>) -> Result<(), RegistryError> {
        let name = tool.name().to_string();
        if self.entries.contains_key(&name) {
            return Err(RegistryError::Duplicate(name));
        }
        let input_schema = tool.input_schema();
        let validator = schema_validator(&input_schema).map_err(|e| RegistryError::Schema {
            tool: name.clone(),
            message: e.to_string(),
        })?;
        let entry = Entry {
            definition: ToolDefinition {
                name: name.clone(),
                description: tool.description().to_string(),
                input_schema,
            },
            facts: tool.facts(),
            tool,
            validator,
        };
        self.order.push(name.clone());
        self.entries.insert(name, entry);
        Ok(())
    }

    /// Keep only the tools whose facts `keep` accepts (e.g. drop tools denied outright).
    pub(crate) fn retain(&mut self, keep: impl Fn(&ToolFacts) -> bool) {
        self.entries.retain(|_, entry| keep(&entry.facts));
        let entries = &self.entries;
        self.order.retain(|name| entries.contains_key(name));
    }

    /// A registry of the tools of this one that `keep` accepts (by name), in the same
    /// order: what a sub-agent limited to some of its parent's tools is offered.
    pub(crate) fn subset(&self, keep: impl Fn(&str) -> bool) -> Result<Registry, RegistryError> {
        let tools = self
            .order
            .iter()
            .filter(|name| keep(name))
            .filter_map(|name| self.entries.get(name))
            .map(|entry| Arc::clone(&entry.tool))
            .collect();
        Registry::new(tools)
    }

    /// The name a call of `name` reaches: `Task` is Claude Code's former name of `Agent`.
    pub(crate) fn resolve<'n>(&self, name: &'n str) -> &'n str {
        if name == super::agent::AGENT_ALIAS
            && !self.entries.contains_key(name)
            && self.entries.contains_key(super::agent::AGENT)
        {
            super::agent::AGENT
        } else {
            name
        }
    }

    /// Whether a call of `name` starts a sub-agent (the loop runs those itself).
    pub(crate) fn is_agent(&self, name: &str) -> bool {
        self.resolve(name) == super::agent::AGENT
    }

    /// What the policy knows of the tool called `name`, if there is one.
    pub(crate) fn facts(&self, name: &str) -> Option<&ToolFacts> {
        self.entries
            .get(self.resolve(name))
            .map(|entry| &entry.facts)
    }

    /// Tool names in offer order.
    pub(crate) fn names(&self) -> Vec<String> {
        self.order.clone()
    }

    /// The definitions sent to the model, in offer order.
    pub(crate) fn definitions(&self) -> Vec<ToolDefinition> {
        self.order
            .iter()
            .filter_map(|name| self.entries.get(name))
            .map(|entry| entry.definition.clone())
            .collect()
    }

    /// Validate `input` for the tool `name` and parse it into the call to judge and run.
    /// Every error is written for the model: an unknown tool names the available ones, and
    /// a schema error lists every problem, where it is in the input, and what was wanted.
    pub(crate) fn prepare(&self, name: &str, input: Value) -> Result<Box<dyn ToolCall>, ToolError> {
        let name = self.resolve(name);
        self.validate(name, &input)?;
        let entry = self
            .entries
            .get(name)
            .ok_or_else(|| ToolError::Failed(self.unknown(name)))?;
        Arc::clone(&entry.tool).prepare(input)
    }

    /// Check `input` against the tool's schema (see [`Registry::prepare`]).
    pub(crate) fn validate(&self, name: &str, input: &Value) -> Result<(), ToolError> {
        let name = self.resolve(name);
        let Some(entry) = self.entries.get(name) else {
            return Err(ToolError::Failed(self.unknown(name)));
        };
        let problems: Vec<String> = entry
            .validator
            .iter_errors(input)
            .map(|error| {
                let at = error.instance_path().to_string();
                if at.is_empty() {
                    format!("- {error}")
                } else {
                    format!("- at {at}: {error}")
                }
            })
            .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ToolError::Failed(format!(
                "InputValidationError: the input to {name} does not match its schema:\n{}\nFix the input and call {name} again.",
                problems.join("\n")
            )))
        }
    }

    fn unknown(&self, name: &str) -> String {
        format!(
            "No such tool: {name}. The available tools are: {}.",
            self.order.join(", ")
        )
    }
}
/// How far a `pattern` may backtrack before its match is given up (and the value counts
/// as invalid): schemas come from MCP servers too, and a hostile pattern must not hang a
/// call's validation.
const PATTERN_BACKTRACK_LIMIT: usize = 1_000_000;

/// A JSON Schema compiled for validating tool inputs and outputs, whoever wrote it:
/// look-around patterns are supported, their backtracking bounded.
pub(crate) fn schema_validator(
    schema: &serde_json::Value,
) -> Result<jsonschema::Validator, jsonschema::ValidationError<'static>> {
    jsonschema::options()
        .with_pattern_options(
            jsonschema::PatternOptions::fancy_regex().backtrack_limit(PATTERN_BACKTRACK_LIMIT),
        )
        .build(schema)
}
