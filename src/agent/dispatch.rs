//! Dispatching one turn's tool calls, in the loop: each recorded, parsed, shown to
//! PreToolUse hooks, judged by the policy, run (read-only batches together), shown to
//! PostToolUse hooks, redacted, recorded, and answered. The final answer's `StructuredOutput` call is
//! checked against the output schema instead of run.

use std::collections::HashSet;
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::calls::{self, Call, Prepared};
use super::end_turn::Verdict as AnswerVerdict;
use super::session::Session;
use super::{
    Agent, AgentConfig, Bounded, OutputSchema, STRUCTURED_OUTPUT, Stop, bounded, cancelled,
};
use crate::hooks::{Combined, Permission};
use crate::message::{ContentBlock, Message, Role};
use crate::model::OutputMode;
use crate::policy::{Decision, Grounds};
use crate::record::transcript::{self, TranscriptError};
use crate::record::{EndReason, Event};
use crate::spec::HookEvent;
use crate::tools::{InternalFault, ToolCall, ToolOutput};

/// A prepared call and what PreToolUse hooks want the model told with its result.
struct Ready {
    call: Call,
    outcome: Prepared,
    context: Vec<String>,
}

impl Agent<'_> {
    /// Run one turn's tool calls and append their results as the next user message.
    pub(super) async fn dispatch(
        &mut self,
        calls: &[Call],
        config: &AgentConfig,
        session: &mut Session,
    ) -> Result<Option<Stop>, TranscriptError> {
        let mut results: Vec<ContentBlock> = Vec::with_capacity(calls.len());
        let mut stop: Option<Stop> = None;
        for range in calls::batches(calls, self.registry, self.subagents) {
            let ready = self
                .prepare_batch(&calls[range], config, session, &mut stop)
                .await?;
            let ran: HashSet<String> = ready
                .iter()
                .filter(|r| matches!(r.outcome, Prepared::Run(..)))
                .map(|r| r.call.id.clone())
                .collect();
            let contexts: Vec<Vec<String>> = ready.iter().map(|r| r.context.clone()).collect();
            let batch: Vec<Call> = ready.iter().map(|r| r.call.clone()).collect();
            let prepared = ready.into_iter().map(|r| (r.call, r.outcome)).collect();
            let executed = match self.execute_batch(prepared, config, session).await {
                Ok(executed) => executed,
                Err(reason) => {
                    stop = Some((reason, String::new()));
                    batch
                        .into_iter()
                        .map(|call| calls::Executed {
                            call,
                            output: cancelled(reason),
                            duration: Duration::ZERO,
                            fault: None,
                        })
                        .collect()
                }
            };
            for (executed, context) in executed.into_iter().zip(contexts) {
                let result = self
                    .answer(executed, context, &ran, config, session, &mut stop)
                    .await?;
                results.push(result);
            }
        }
        session.messages.push(Message {
            role: Role::User,
            content: results,
        });
        Ok(stop)
    }

    /// Record each call of a batch and prepare it; once the run is stopping, the rest
    /// are answered as cancelled.
    async fn prepare_batch(
        &mut self,
        batch: &[Call],
        config: &AgentConfig,
        session: &mut Session,
        stop: &mut Option<Stop>,
    ) -> Result<Vec<Ready>, TranscriptError> {
        let mut ready = Vec::new();
        for call in batch {
            self.transcript.write(Event::ToolCall {
                id: call.id.clone(),
                name: call.name.clone(),
                input: call.input.clone(),
            })?;
            let prepared = match &*stop {
                Some((reason, _)) => Ready {
                    call: call.clone(),
                    outcome: Prepared::Done(cancelled(*reason)),
                    context: Vec::new(),
                },
                None => self.prepare(call, config, session, stop).await?,
            };
            ready.push(prepared);
        }
        Ok(ready)
    }

    /// Execute a batch's prepared calls within the run's deadline and interrupt; the
    /// reason the run ends instead when either comes first.
    // `&mut self`: a shared borrow held across the await would need the agent `Sync`.
    async fn execute_batch(
        &mut self,
        prepared: Vec<(Call, Prepared)>,
        config: &AgentConfig,
        session: &Session,
    ) -> Result<Vec<calls::Executed>, EndReason> {
        let launcher = self.subagents.map(|subagents| super::subagent::Launcher {
            subagents,
            registry: self.registry,
            policy: self.policy,
            redactor: self.redactor,
            hooks: self.hooks,
            transcript: self.transcript.share(),
            ctx: self.ctx.clone(),
            config: config.clone(),
            clock: session.clock,
            depth: self.depth,
        });
        let execution = calls::execute(prepared, &self.ctx, self.registry, launcher.as_ref());
        match bounded(session.clock.deadline, &config.interrupt, execution).await {
            Bounded::Done(executed) => Ok(executed),
            Bounded::TimedOut => Err(EndReason::Timeout),
            Bounded::Interrupted => Err(EndReason::Interrupted),
        }
    }

    /// The result block of one executed call: drover's faults end the run, PostToolUse
    /// hooks see a call that ran, PreToolUse notes are added, and the redacted result is
    /// recorded and checked against a replay's recording.
    async fn answer(
        &mut self,
        executed: calls::Executed,
        context: Vec<String>,
        ran: &HashSet<String>,
        config: &AgentConfig,
        session: &mut Session,
        stop: &mut Option<Stop>,
    ) -> Result<ContentBlock, TranscriptError> {
        let calls::Executed {
            call,
            mut output,
            duration,
            fault,
        } = executed;
        if let Some(fault) = fault {
            let reason = match fault {
                InternalFault::Drover { .. } => EndReason::InternalError,
                InternalFault::Unavailable { .. } => EndReason::McpUnavailable,
            };
            stop.get_or_insert((reason, fault.to_string()));
        }
        if stop.is_none() && ran.contains(&call.id) {
            output = self
                .after_call(&call, output, duration, config, session, stop)
                .await?;
        }
        for note in context {
            output
                .content
                .push_str(&format!("\n\n[PreToolUse hook] {note}"));
        }
        let output = self.redacted(output);
        self.transcript.write(Event::ToolResult {
            tool_use_id: call.id.clone(),
            is_error: output.is_error,
            content: output.content.clone(),
            images: output.images.clone(),
            duration_ms: u64::try_from(duration.as_millis()).unwrap_or(u64::MAX),
        })?;
        if let Some(drift) = self.check_replay(&call, &output, session)? {
            stop.get_or_insert(drift);
        }
        Ok(ContentBlock::ToolResult {
            tool_use_id: call.id,
            content: output.content,
            is_error: output.is_error,
            images: output.images,
        })
    }

    /// A command can print drover's own environment (`/proc/$PPID/environ`) or a key
    /// file: what the transcript records and the model reads is the same text, with
    /// every secret value replaced. An image holding a secret value (a file of secrets
    /// dressed as a GIF) is dropped whole: binary data cannot be redacted in place.
    fn redacted(&self, output: ToolOutput) -> ToolOutput {
        let mut content = self.redactor.redact_owned(output.content);
        let mut images = output.images;
        let before = images.len();
        images.retain(|image| {
            image
                .bytes()
                .is_some_and(|bytes| !self.redactor.finds_in(&bytes))
        });
        if images.len() < before {
            content.push_str(&format!(
                "\n\n[{} image(s) withheld: they hold a secret value]",
                before - images.len()
            ));
        }
        ToolOutput {
            content,
            images,
            ..output
        }
    }

    /// Parse the call, show it to PreToolUse hooks, and judge it (again, when a hook
    /// rewrote its input). `stop` is set when a hook or a limit ends the run.
    async fn prepare(
        &mut self,
        call: &Call,
        config: &AgentConfig,
        session: &mut Session,
        stop: &mut Option<Stop>,
    ) -> Result<Ready, TranscriptError> {
        let done = |call: &Call, output: ToolOutput| Ready {
            call: call.clone(),
            outcome: Prepared::Done(output),
            context: Vec::new(),
        };
        if call.name == STRUCTURED_OUTPUT
            && let Some(schema) = config.output.clone()
            && self.model.output_mode() == OutputMode::Tool
        {
            let output = self.final_answer(&schema, &call.input, session, stop)?;
            return Ok(done(call, output));
        }
        let parsed = match calls::parse(call, self.registry) {
            Ok(parsed) => parsed,
            Err(output) => return Ok(done(call, output)),
        };
        // Hooks match the tool, whichever of its names the model used (`Task`: `Agent`).
        let tool_name = self.registry.resolve(&call.name).to_string();
        let mut fields = Map::new();
        fields.insert("tool_name".into(), json!(tool_name));
        fields.insert(
            "tool_input".into(),
            hook_tool_input(&call.input, &self.ctx.workspace),
        );
        fields.insert("tool_use_id".into(), json!(call.id));
        let answer = self
            .raise(
                config,
                session,
                HookEvent::PreToolUse,
                &tool_name,
                Some(&call.id),
                fields,
            )
            .await?;
        let answer = match answer {
            Ok(answer) => answer,
            Err(halt) => {
                let output = cancelled(halt.0);
                *stop = Some(halt);
                return Ok(done(call, output));
            }
        };
        let context = answer.additional_context.clone();
        let (call, parsed, hook_denied) = self.hook_ruling(call, parsed, &answer);
        let (outcome, decision) = match hook_denied {
            Some(denied) => {
                let message = format!(
                    "Permission denied: {}. Do not retry this call unchanged.",
                    denied.reason()
                );
                (Prepared::Done(ToolOutput::error(message)), denied)
            }
            None => calls::judge(parsed, self.policy, &self.ctx.shell.current()),
        };
        self.record_decision(&call, &decision, session)?;
        Ok(Ready {
            call,
            outcome,
            context,
        })
    }

    /// The final answer given as the `StructuredOutput` call: accepted when valid against
    /// the output schema; else what the model is told (and `stop` set when the answer
    /// attempts are spent).
    fn final_answer(
        &mut self,
        schema: &OutputSchema,
        input: &Value,
        session: &mut Session,
        stop: &mut Option<Stop>,
    ) -> Result<ToolOutput, TranscriptError> {
        let value = schema.answer_in_input(input);
        let errors = schema.errors(&value);
        if errors.is_empty() {
            self.accept_answer(session, value)?;
            return Ok(ToolOutput::ok("Final answer recorded."));
        }
        let message = match self.invalid_answer(session, errors, OutputMode::Tool)? {
            Some(AnswerVerdict::Fail(failed)) => {
                let message = failed.1.clone();
                *stop = Some(failed);
                message
            }
            Some(AnswerVerdict::Again(message)) => message,
            None => String::new(),
        };
        Ok(ToolOutput::error(message))
    }

    /// What PreToolUse hooks ruled on a call: the call to run (rewritten input, validated
    /// again) and its parsed form, or a denial (a block, `deny`, `ask`, or a rewrite to
    /// invalid input).
    fn hook_ruling(
        &self,
        call: &Call,
        mut parsed: Box<dyn ToolCall>,
        answer: &Combined,
    ) -> (Call, Box<dyn ToolCall>, Option<Decision>) {
        let mut call = call.clone();
        let mut hook_denied: Option<Decision> = None;
        let hook_says = answer.permission.clone();
        if let Some(reason) = answer.block_reason() {
            hook_denied = Some(hook_denial(format!(
                "blocked by a PreToolUse hook: {reason}"
            )));
        } else if let Some((Permission::Deny | Permission::Ask, why)) = &hook_says {
            let kind = hook_says.as_ref().map_or("deny", |(p, _)| p.as_str());
            let why = why.as_deref().unwrap_or("no reason given");
            let what = if kind == "ask" {
                format!(
                    "a PreToolUse hook asked for a person's approval, and nobody can give it in a headless run: {why}"
                )
            } else {
                format!("denied by a PreToolUse hook: {why}")
            };
            hook_denied = Some(hook_denial(self.redactor.redact(&what).into_owned()));
        } else if let Some(updated) = answer.updated_input.clone() {
            // The rewritten input is a new call: validated and judged from scratch.
            let rewritten = Call {
                input: updated,
                ..call.clone()
            };
            match calls::parse(&rewritten, self.registry) {
                Ok(reparsed) => {
                    parsed = reparsed;
                    call = rewritten;
                }
                Err(error) => {
                    hook_denied = Some(hook_denial(format!(
                        "a PreToolUse hook rewrote the input to one that is not valid: {}",
                        error.content
                    )));
                }
            }
        }
        (call, parsed, hook_denied)
    }

    fn record_decision(
        &mut self,
        call: &Call,
        decision: &Decision,
        session: &mut Session,
    ) -> Result<(), TranscriptError> {
        let (recorded, grounds) = match decision {
            Decision::Allow(grounds) => (transcript::Decision::Allow, grounds),
            Decision::Deny(grounds) => (transcript::Decision::Deny, grounds),
        };
        self.transcript.write(Event::Permission {
            tool_use_id: call.id.clone(),
            decision: recorded,
            rule: grounds.rule.clone(),
            reason: grounds.reason.clone(),
        })?;
        match decision {
            Decision::Allow(_) => *session.calls.entry(call.name.clone()).or_default() += 1,
            Decision::Deny(grounds) => session.denials.push(calls::denial(call, grounds)),
        }
        Ok(())
    }

    /// PostToolUse (or PostToolUseFailure, for an error result) for a call that ran:
    /// hooks may replace what the model sees, add to it, or block with a reason the
    /// model reads.
    async fn after_call(
        &mut self,
        call: &Call,
        mut output: ToolOutput,
        duration: Duration,
        config: &AgentConfig,
        session: &mut Session,
        stop: &mut Option<Stop>,
    ) -> Result<ToolOutput, TranscriptError> {
        let event = if output.is_error {
            HookEvent::PostToolUseFailure
        } else {
            HookEvent::PostToolUse
        };
        let tool_name = self.registry.resolve(&call.name).to_string();
        let mut fields = Map::new();
        fields.insert("tool_name".into(), json!(tool_name));
        fields.insert(
            "tool_input".into(),
            hook_tool_input(&call.input, &self.ctx.workspace),
        );
        fields.insert("tool_use_id".into(), json!(call.id));
        fields.insert(
            "duration_ms".into(),
            json!(u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)),
        );
        // What the hook is shown is redacted like what the model is shown.
        let shown = self.redactor.redact(&output.content);
        if output.is_error {
            fields.insert("error".into(), json!(shown));
            fields.insert("is_interrupt".into(), json!(false));
        } else {
            fields.insert("tool_response".into(), json!({"content": shown}));
        }
        let answer = match self
            .raise(config, session, event, &tool_name, Some(&call.id), fields)
            .await?
        {
            Ok(answer) => answer,
            Err(halt) => {
                *stop = Some(halt);
                return Ok(output);
            }
        };
        let blocked = answer.block_reason();
        if let Some(updated) = answer.updated_tool_output {
            output.content = match updated {
                Value::String(text) => text,
                other => other.to_string(),
            };
            output.images.clear();
        }
        for note in answer.additional_context {
            output
                .content
                .push_str(&format!("\n\n[{} hook] {note}", event.as_str()));
        }
        if let Some(reason) = blocked {
            output
                .content
                .push_str(&format!("\n\n[{} hook blocked] {reason}", event.as_str()));
        }
        Ok(output)
    }
}

/// The call's input as a hook sees it: Claude Code's file tools take only absolute paths,
/// so hooks written for it compare against `$CLAUDE_PROJECT_DIR/...`. A relative
/// `file_path`, `notebook_path` or `path` is shown resolved against the workspace, as the
/// tool resolves it.
fn hook_tool_input(input: &Value, workspace: &std::path::Path) -> Value {
    let mut shown = input.clone();
    if let Some(object) = shown.as_object_mut() {
        for key in ["file_path", "notebook_path", "path"] {
            let Some(Value::String(raw)) = object.get(key) else {
                continue;
            };
            if let Ok(absolute) = crate::workspace::paths::resolve(workspace, raw) {
                object.insert(key.into(), json!(absolute.to_string_lossy()));
            }
        }
    }
    shown
}

/// A hook's refusal, recorded like a policy denial (rule `hook:PreToolUse`).
fn hook_denial(reason: String) -> Decision {
    Decision::Deny(Grounds::new(Some("hook:PreToolUse".to_string()), reason))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hooks_see_file_paths_absolute_as_claude_code_gives_them() {
        let ws = std::path::Path::new("/ws");
        let shown = hook_tool_input(
            &json!({"file_path": "src/../lib.rs", "old_string": "a", "new_string": "b"}),
            ws,
        );
        assert_eq!(shown["file_path"], "/ws/lib.rs");
        assert_eq!(shown["old_string"], "a");
        let absolute = hook_tool_input(&json!({"notebook_path": "/data/n.ipynb"}), ws);
        assert_eq!(absolute["notebook_path"], "/data/n.ipynb");
        let search = hook_tool_input(&json!({"pattern": "fn", "path": "src"}), ws);
        assert_eq!(search["path"], "/ws/src");
        assert_eq!(search["pattern"], "fn");
        let command = json!({"command": "cat a.txt"});
        assert_eq!(hook_tool_input(&command, ws), command);
    }
}
