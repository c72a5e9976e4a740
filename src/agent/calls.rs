//! The steps of a tool call, which the dispatcher (`dispatch`) strings together: registry
//! lookup and schema validation (`parse`), the policy (`judge`), then execution.
//! Consecutive read-only calls run concurrently; a call that writes or executes runs
//! alone, after everything before it and before everything after it. Results come back
//! in call order whatever order they finished in.

use serde_json::Value;

use crate::policy::{Decision, Grounds, Policy};
use crate::record::Denial;
use crate::tools::{InternalFault, Registry, ToolCall, ToolContext, ToolOutput, run_call};

/// One tool call as the model made it.
#[derive(Debug, Clone)]
pub(crate) struct Call {
    pub id: String,
    pub name: String,
    pub input: Value,
}

/// What happened before execution: the call is ready to run, or already has its
/// (error) result.
pub(super) enum Prepared {
    /// Run the parsed call on the path the policy judged (if the call names one).
    Run(Box<dyn ToolCall>, Option<std::path::PathBuf>),
    Done(ToolOutput),
}

/// Look the call up and validate its input: the parsed call, or the error result the
/// model gets instead.
pub(super) fn parse(call: &Call, registry: &Registry) -> Result<Box<dyn ToolCall>, ToolOutput> {
    // A provider keeps tool input JSON it could not parse as a string (see
    // model::anthropic_stream::tool_input): tell the model, which can send it again.
    if let (Some(_), Value::String(raw)) = (registry.facts(&call.name), &call.input) {
        let shown: String = raw.chars().take(2000).collect();
        return Err(ToolOutput::error(format!(
            "InputValidationError: the input to {} was not valid JSON (it may have been cut off): {shown}\nCall {} again with its input as one JSON object.",
            call.name, call.name
        )));
    }
    registry
        .prepare(&call.name, call.input.clone())
        .map_err(|error| ToolOutput::error(error.to_string()))
}

/// Ask the policy about a parsed call: what to run (on the path the policy judged) or
/// the denial the model reads, and the decision itself, to be recorded.
pub(super) fn judge(
    parsed: Box<dyn ToolCall>,
    policy: &Policy,
    cwd: &std::path::Path,
) -> (Prepared, Decision) {
    let decision = policy.decide_in(&parsed.facts(), cwd);
    let prepared = match &decision {
        Decision::Allow(grounds) => Prepared::Run(parsed, grounds.target.clone()),
        Decision::Deny(grounds) => {
            let rule = grounds
                .rule
                .as_deref()
                .map_or("the default policy".to_string(), |r| format!("rule {r}"));
            let message = format!(
                "Permission denied by {rule}: {}. This task's policy does not allow this call; do not retry it unchanged, choose another way.",
                grounds.reason
            );
            Prepared::Done(ToolOutput::error(message))
        }
    };
    (prepared, decision)
}

/// How many sub-agents of one turn run at the same time, at most.
pub(super) const MAX_PARALLEL_AGENTS: usize = 4;

/// Split calls into batches: runs of read-only calls, and every other call alone. An
/// `Agent` call reads only when its sub-agent's tools all do.
pub(super) fn batches(
    calls: &[Call],
    registry: &Registry,
    subagents: Option<&super::SubAgents>,
) -> Vec<std::ops::Range<usize>> {
    let is_agent = |call: &Call| registry.is_agent(&call.name);
    let read_only = |call: &Call| {
        if is_agent(call) {
            return subagents.is_some_and(|agents| agents.reads_only(&call.input));
        }
        registry
            .facts(&call.name)
            .is_some_and(|facts| facts.read_only)
    };
    let mut out = Vec::new();
    let mut start = 0;
    while start < calls.len() {
        let mut end = start + 1;
        if read_only(&calls[start]) {
            // Sub-agents at once are capped: each spends the task's budget before it
            // can see what the others spent.
            let mut agents = usize::from(is_agent(&calls[start]));
            while end < calls.len() && read_only(&calls[end]) {
                if is_agent(&calls[end]) {
                    if agents == MAX_PARALLEL_AGENTS {
                        break;
                    }
                    agents += 1;
                }
                end += 1;
            }
        }
        out.push(start..end);
        start = end;
    }
    out
}

/// A call's result and how long the tool took (zero when it never ran).
pub(super) struct Executed {
    pub call: Call,
    pub output: ToolOutput,
    pub duration: std::time::Duration,
    /// drover failed while running the call: the task ends as an internal error.
    pub fault: Option<InternalFault>,
}

/// Execute a batch's prepared calls concurrently; results in call order. `Agent` calls
/// run their sub-agent through `launcher`.
pub(super) async fn execute<'a>(
    prepared: Vec<(Call, Prepared)>,
    ctx: &ToolContext,
    registry: &Registry,
    launcher: Option<&super::subagent::Launcher<'a>>,
) -> Vec<Executed> {
    let beside_others = prepared.len() > 1;
    let futures = prepared.into_iter().map(|(call, prepared)| async move {
        let started = std::time::Instant::now();
        let (output, fault) = match prepared {
            Prepared::Done(output) => (output, None),
            Prepared::Run(_, _) if registry.is_agent(&call.name) => {
                let outcome = match launcher {
                    Some(launcher) => {
                        launcher
                            .launch(call.id.clone(), call.input.clone(), beside_others)
                            .await
                    }
                    None => Ok(ToolOutput::error(
                        "This task has no sub-agents (agents: in the spec).",
                    )),
                };
                match outcome {
                    Ok(output) => (output, None),
                    Err(fault) => (ToolOutput::error(fault.to_string()), Some(fault)),
                }
            }
            Prepared::Run(parsed, target) => {
                match run_call(&call.name, parsed, &ctx.for_call(&call.id, target)).await {
                    Ok(output) => (output, None),
                    // The transcript still gets a result for the call: the fault itself.
                    Err(fault) => (ToolOutput::error(fault.to_string()), Some(fault)),
                }
            }
        };
        Executed {
            call,
            output,
            duration: started.elapsed(),
            fault,
        }
    });
    futures::future::join_all(futures).await
}

/// The denial record for the summary and JUnit.
pub(super) fn denial(call: &Call, grounds: &Grounds) -> Denial {
    Denial {
        tool_use_id: call.id.clone(),
        tool: call.name.clone(),
        input: call.input.clone(),
        rule: grounds.rule.clone(),
        reason: grounds.reason.clone(),
    }
}
