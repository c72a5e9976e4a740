//! The registry: tool lookup, tool definitions for the model, and input validation.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use super::Tool;
use crate::message::ToolDefinition;

/// A tool with its compiled input validator.
struct Entry {
    tool: Arc<dyn Tool>,
    validator: jsonschema::Validator,
}

/// The tools offered in one run.
pub struct Registry {
    entries: BTreeMap<&'static str, Entry>,
    order: Vec<&'static str>,
}

/// Why a registry could not be built: a tool's own schema is broken (a drover bug).
#[derive(Debug, thiserror::Error)]
#[error("the input schema of tool {tool} is invalid: {message}")]
pub struct SchemaError {
    pub tool: String,
    pub message: String,
}

impl Registry {
    pub fn new(tools: Vec<Arc<dyn Tool>>) -> Result<Self, SchemaError> {
        let mut entries = BTreeMap::new();
        let mut order = Vec::new();
        for tool in tools {
            let validator =
                jsonschema::validator_for(&tool.input_schema()).map_err(|e| SchemaError {
                    tool: tool.name().to_string(),
                    message: e.to_string(),
                })?;
            order.push(tool.name());
            entries.insert(tool.name(), Entry { tool, validator });
        }
        Ok(Registry { entries, order })
    }

    /// Every built-in tool.
    pub fn builtin() -> Result<Self, SchemaError> {
        Self::new(super::builtin())
    }

    /// Keep only the tools for which `keep` says yes (e.g. drop tools denied outright).
    pub fn retain(&mut self, keep: impl Fn(&dyn Tool) -> bool) {
        self.entries.retain(|_, entry| keep(entry.tool.as_ref()));
        let entries = &self.entries;
        self.order.retain(|name| entries.contains_key(name));
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.entries.get(name).map(|entry| &entry.tool)
    }

    /// Tool names in offer order.
    pub fn names(&self) -> Vec<String> {
        self.order.iter().map(|name| name.to_string()).collect()
    }

    /// The definitions sent to the model, in offer order.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.order
            .iter()
            .filter_map(|name| self.entries.get(name))
            .map(|entry| ToolDefinition {
                name: entry.tool.name().to_string(),
                description: entry.tool.description().to_string(),
                input_schema: entry.tool.input_schema(),
            })
            .collect()
    }

    /// Check `input` against the tool's schema. The error text is written for the model:
    /// every problem, where it is in the input, and what the schema wanted.
    pub fn validate(&self, name: &str, input: &Value) -> Result<(), String> {
        let Some(entry) = self.entries.get(name) else {
            return Err(format!("unknown tool {name}"));
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
            Err(format!(
                "InputValidationError: the input to {name} does not match its schema:\n{}\nFix the input and call {name} again.",
                problems.join("\n")
            ))
        }
    }
}
