//! Built-in tools are typed: each states its input as a Rust struct, and both the JSON
//! Schema the model is shown and the value the tool runs come from that one struct, so the
//! schema cannot drift from what the tool accepts.

use std::sync::Arc;

use async_trait::async_trait;
use schemars::generate::SchemaSettings;
use schemars::transform::RecursiveTransform;
use schemars::{JsonSchema, Schema};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{Tool, ToolCall, ToolContext, ToolError};
use crate::policy::{CallFacts, Subject, ToolFacts};

/// A built-in tool with a typed input. Implementing it makes the type a [`Tool`].
#[async_trait]
pub trait TypedTool: Send + Sync + 'static {
    /// The input, deserialized once from the model's JSON. Its `JsonSchema` derive is the
    /// schema the model is shown: doc comments on fields are their descriptions, and
    /// `#[serde(deny_unknown_fields)]` makes unknown fields an error.
    type Input: DeserializeOwned + JsonSchema + Send + 'static;
    /// The name the model calls the tool by (Claude Code's names).
    const NAME: &'static str;
    /// Instructions for the model: what the tool does, its limits, mistakes to avoid.
    const DESCRIPTION: &'static str;
    /// Read-only calls may run concurrently with each other and are allowed by default
    /// inside the workspace; anything else runs alone and needs an allow rule.
    const READ_ONLY: bool;
    /// The tool whose permission rules govern this one.
    const GOVERNED_BY: &'static str = Self::NAME;
    /// Whether the tool acts only on the run's own state (its to-do list, its background
    /// shells), which the policy allows by default.
    const RUN_STATE: bool = false;

    /// What the policy judges of this input: the path or command it acts on.
    fn subject(&self, _input: &Self::Input) -> Subject {
        Subject::None
    }

    /// Run the call with the input the policy judged.
    async fn run(&self, input: Self::Input, ctx: &ToolContext) -> Result<String, ToolError>;
}

impl<T: TypedTool> Tool for T {
    fn name(&self) -> &str {
        T::NAME
    }

    fn description(&self) -> &str {
        T::DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        input_schema_for::<T::Input>()
    }

    fn facts(&self) -> ToolFacts {
        ToolFacts {
            name: T::NAME.to_string(),
            read_only: T::READ_ONLY,
            governed_by: T::GOVERNED_BY.to_string(),
            run_state: T::RUN_STATE,
        }
    }

    fn prepare(self: Arc<Self>, input: Value) -> Result<Box<dyn ToolCall>, ToolError> {
        // The registry validated the input against the schema derived from T::Input, so
        // this fails only if the two disagree; the model is told as for a schema error.
        let input = serde_json::from_value(input).map_err(|e| {
            ToolError::Failed(format!(
                "InputValidationError: the input to {name} is invalid: {e}\nFix the input and call {name} again.",
                name = T::NAME
            ))
        })?;
        Ok(Box::new(TypedCall { tool: self, input }))
    }
}

/// A typed tool with its parsed input.
struct TypedCall<T: TypedTool> {
    tool: Arc<T>,
    input: T::Input,
}

#[async_trait]
impl<T: TypedTool> ToolCall for TypedCall<T> {
    fn facts(&self) -> CallFacts {
        CallFacts {
            tool: self.tool.facts(),
            subject: self.tool.subject(&self.input),
        }
    }

    async fn run(self: Box<Self>, ctx: &ToolContext) -> Result<String, ToolError> {
        let TypedCall { tool, input } = *self;
        tool.run(input, ctx).await
    }
}

/// The JSON Schema of `T` as tools offer it: every subschema inline (no `$ref`, which not
/// every provider resolves), no meta-schema or title, and optional fields optional rather
/// than nullable, as Claude Code's tools state them.
pub fn input_schema_for<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|settings| {
            settings.inline_subschemas = true;
            settings.meta_schema = None;
        })
        .with_transform(RecursiveTransform(tighten))
        .into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    if let Some(root) = schema.as_object_mut() {
        // The tool's own description says what the struct's doc comment would.
        root.remove("title");
        root.remove("description");
    }
    schema
}

/// Drop what a derived schema says that an offered one should not: `null` as an allowed
/// value of an optional field (absent is how it is left out) and Rust's integer widths
/// (`format: uint64`, which `minimum` already says what matters of).
fn tighten(schema: &mut Schema) {
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    if let Some(Value::Array(types)) = object.get_mut("type") {
        types.retain(|t| t != "null");
        if let [only] = types.as_slice() {
            let only = only.clone();
            object.insert("type".into(), only);
        }
    }
    if let Some(Value::Array(values)) = object.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    let numeric = matches!(
        object.get("type").and_then(Value::as_str),
        Some("integer" | "number")
    );
    if numeric {
        object.remove("format");
    }
}

/// Calling a typed tool with JSON, as the dispatcher would but without the policy.
#[cfg(test)]
pub(crate) trait CallJson {
    /// Parse `input` and run the call; an internal fault fails the test.
    async fn call(&self, input: Value, ctx: &ToolContext) -> super::ToolOutput;
    /// What the policy would judge for `input` (which must parse).
    fn judged(&self, input: Value) -> CallFacts;
}

#[cfg(test)]
impl<T: TypedTool + Clone> CallJson for T {
    async fn call(&self, input: Value, ctx: &ToolContext) -> super::ToolOutput {
        let prepared = match Arc::new(self.clone()).prepare(input) {
            Ok(call) => call,
            Err(ToolError::Failed(message)) => return super::ToolOutput::error(message),
            Err(ToolError::Internal(message)) => panic!("internal fault: {message}"),
        };
        match super::run_call(T::NAME, prepared, ctx).await {
            Ok(output) => output,
            Err(fault) => panic!("{fault}"),
        }
    }

    fn judged(&self, input: Value) -> CallFacts {
        match Arc::new(self.clone()).prepare(input) {
            Ok(call) => call.facts(),
            Err(error) => panic!("{error}"),
        }
    }
}
