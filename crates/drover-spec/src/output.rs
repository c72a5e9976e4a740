//! `output:` (the final answer as a JSON value valid against a schema) and `retry:`
//! (failed checks sent back to the agent). Plain data: the schema is compiled by the
//! runner's spec checks, which know the validator.

use serde::Deserialize;
use serde_json::Value;

/// `output:` — exactly one of `schema` and `schema_file`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputSpec {
    #[serde(default)]
    pub schema: Option<Value>,
    /// A JSON file, relative to the spec file.
    #[serde(default)]
    pub schema_file: Option<String>,
}

/// `retry:` — how many times the agent loop may run in all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttemptsSpec {
    /// Attempts in total, from 1 (the default: failed checks end the task).
    pub max_attempts: u32,
}

/// The most attempts a spec may ask for: each one re-runs every check.
pub const MAX_ATTEMPTS: u32 = 20;

/// What is wrong with `output`, if anything (the schema itself is compiled later).
pub fn output_problem(output: &OutputSpec) -> Option<String> {
    match (&output.schema, &output.schema_file) {
        (Some(_), Some(_)) => Some("output: give `schema` or `schema_file`, not both".into()),
        (None, None) => {
            Some("output: give `schema` (inline) or `schema_file` (a JSON file)".into())
        }
        (Some(schema), None) if !(schema.is_object() || schema.is_boolean()) => {
            Some("output.schema must be a JSON Schema: an object (or true/false)".into())
        }
        _ => None,
    }
}
