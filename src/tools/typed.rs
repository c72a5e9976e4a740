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

use super::{Tool, ToolCall, ToolContext, ToolError, ToolOutput};
use crate::policy::{CallFacts, Subject, ToolFacts};

/// A built-in tool's input: deserialized once from the model's JSON, and the source of
/// the schema the model is shown (its `JsonSchema` derive: doc comments on fields are
/// their descriptions, `#[serde(deny_unknown_fields)]` makes unknown fields an error).
pub(crate) trait ToolInput: DeserializeOwned + JsonSchema + Send + 'static {
    /// What the policy judges of this input: the path or command it acts on.
    fn subject(&self) -> Subject {
        Subject::None
    }
}

/// What a built-in tool is, whatever the call: the facts the policy and the dispatcher
/// need, and the text the model reads.
#[derive(Debug, Clone, Copy)]
pub(crate) struct About {
    /// The name the model calls the tool by (Claude Code's names).
    pub name: &'static str,
    /// Instructions for the model: what the tool does, its limits, mistakes to avoid.
    pub description: &'static str,
    /// Read-only calls may run concurrently with each other and are allowed by default
    /// inside the workspace; anything else runs alone and needs an allow rule.
    pub read_only: bool,
    /// The tool whose permission rules govern this one (itself when None).
    pub governed_by: Option<&'static str>,
    /// Whether the tool acts only on the run's own state (its to-do list, its background
    /// shells), which the policy allows by default.
    pub run_state: bool,
    /// The rule family (`Read`, `Edit`) whose path rules govern this tool's paths too.
    pub path_family: Option<&'static str>,
}

impl About {
    /// A tool that only reads.
    pub(crate) const fn reads(name: &'static str, description: &'static str) -> Self {
        About {
            name,
            description,
            read_only: true,
            governed_by: None,
            run_state: false,
            path_family: None,
        }
    }

    /// A tool that writes, executes or changes state: its calls run one at a time.
    pub(crate) const fn writes(name: &'static str, description: &'static str) -> Self {
        About {
            read_only: false,
            ..About::reads(name, description)
        }
    }

    /// The same tool, its paths governed by `family`'s path rules too (`Read` rules
    /// govern Glob's paths, `Edit` rules Write's).
    pub(crate) const fn paths_governed_by(self, family: &'static str) -> Self {
        About {
            path_family: Some(family),
            ..self
        }
    }

    /// The same tool, acting only on the run's own state, under `family`'s rules.
    pub(crate) const fn on_run_state_of(self, family: &'static str) -> Self {
        About {
            governed_by: Some(family),
            run_state: true,
            ..self
        }
    }
}

/// A built-in tool with a typed input. Implementing it makes the type a [`Tool`].
pub(crate) trait TypedTool: Send + Sync + 'static {
    type Input: ToolInput;
    const ABOUT: About;

    /// Run the call with the input the policy judged.
    fn run(
        &self,
        input: Self::Input,
        ctx: &ToolContext,
    ) -> impl Future<Output = Result<String, ToolError>> + Send;
}

impl<T: TypedTool> Tool for T {
    fn name(&self) -> &str {
        T::ABOUT.name
    }

    fn description(&self) -> &str {
        T::ABOUT.description
    }

    fn input_schema(&self) -> Value {
        input_schema_for::<T::Input>()
    }

    fn facts(&self) -> ToolFacts {
        let about = T::ABOUT;
        ToolFacts {
            name: about.name.to_string(),
            read_only: about.read_only,
            governed_by: about.governed_by.unwrap_or(about.name).to_string(),
            run_state: about.run_state,
            path_family: about.path_family.map(str::to_string),
        }
    }

    fn prepare(self: Arc<Self>, input: Value) -> Result<Box<dyn ToolCall>, ToolError> {
        // The registry validated the input against the schema derived from T::Input, so
        // this fails only if the two disagree; the model is told as for a schema error.
        let input = serde_json::from_value(input).map_err(|e| {
            ToolError::Failed(format!(
                "InputValidationError: the input to {name} is invalid: {e}\nFix the input and call {name} again.",
                name = T::ABOUT.name
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
            subject: self.input.subject(),
        }
    }

    async fn run(self: Box<Self>, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let TypedCall { tool, input } = *self;
        tool.run(input, ctx).await.map(ToolOutput::ok)
    }
}

/// The JSON Schema of `T` as tools offer it: every subschema inline (no `$ref`, which not
/// every provider resolves), no meta-schema or title, and optional fields optional rather
/// than nullable, as Claude Code's tools state them.
pub(super) fn input_schema_for<T: JsonSchema>() -> Value {
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
            Err(error) => panic!("the call ends the task: {error}"),
        };
        match super::run_call(T::ABOUT.name, prepared, ctx).await {
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
