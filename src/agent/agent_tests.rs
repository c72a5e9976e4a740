// Test-only module: its parent includes it under #[cfg(test)].
//! The loop with stand-in tools whose timing we control.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::*;
use crate::model::script::ScriptModel;
use crate::policy::{CallFacts, RuleSet, Subject, ToolFacts};
use crate::spec::{ScriptToolCall, ScriptTurn};
use crate::tools::{Tool, ToolCall, ToolError};

/// A tool that logs when it starts and ends, sleeping `millis` from its input between.
struct Timed {
    name: &'static str,
    read_only: bool,
    log: Arc<Mutex<Vec<String>>>,
}

/// A tool whose schema is plain JSON, as a tool found at run time (MCP) has: it
/// implements [`Tool`] itself rather than through `TypedTool`.
#[async_trait]
impl Tool for Timed {
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "test tool"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"tag": {"type": "string"}, "millis": {"type": "integer"}, "fault": {"type": "boolean"}},
               "required": ["tag"], "additionalProperties": false})
    }
    fn facts(&self) -> ToolFacts {
        ToolFacts {
            name: self.name.to_string(),
            read_only: self.read_only,
            governed_by: self.name.to_string(),
            run_state: false,
            path_family: None,
        }
    }
    fn prepare(self: Arc<Self>, input: Value) -> Result<Box<dyn ToolCall>, ToolError> {
        Ok(Box::new(TimedCall { tool: self, input }))
    }
}

struct TimedCall {
    tool: Arc<Timed>,
    input: Value,
}

#[async_trait]
impl ToolCall for TimedCall {
    fn facts(&self) -> CallFacts {
        CallFacts {
            tool: self.tool.facts(),
            subject: Subject::None,
        }
    }
    async fn run(self: Box<Self>, _: &ToolContext) -> Result<ToolOutput, ToolError> {
        let tag = self.input["tag"].as_str().unwrap_or_default().to_string();
        self.tool.log.lock().unwrap().push(format!("start {tag}"));
        let millis = self.input["millis"].as_u64().unwrap_or(0);
        tokio::time::sleep(Duration::from_millis(millis)).await;
        self.tool.log.lock().unwrap().push(format!("end {tag}"));
        if self.input["fault"] == json!(true) {
            return Err(ToolError::Internal(format!("{tag} broke")));
        }
        Ok(ToolOutput::ok(format!("result {tag}")))
    }
}

fn call(name: &str, tag: &str, millis: u64) -> ScriptToolCall {
    ScriptToolCall {
        name: name.into(),
        input: json!({"tag": tag, "millis": millis}),
    }
}

async fn run_turn(calls: Vec<ScriptToolCall>, allow: &[&str]) -> (Vec<String>, Vec<Value>) {
    let (outcome, log, events) = run_turn_to_its_end(calls, allow).await;
    assert_eq!(outcome.reason, EndReason::EndTurn);
    (log, events)
}

/// One scripted turn of `calls`, then the end: how the loop ended, the tools' log and
/// the transcript's events.
async fn run_turn_to_its_end(
    calls: Vec<ScriptToolCall>,
    allow: &[&str],
) -> (LoopOutcome, Vec<String>, Vec<Value>) {
    let log = Arc::new(Mutex::new(Vec::new()));
    let tools: Vec<Arc<dyn Tool>> = vec![
        Arc::new(Timed {
            name: "Glob",
            read_only: true,
            log: log.clone(),
        }),
        Arc::new(Timed {
            name: "Write",
            read_only: false,
            log: log.clone(),
        }),
    ];
    let registry = Registry::new(tools).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let allow = allow
        .iter()
        .map(|r| crate::policy::Rule::try_from(r.to_string()).unwrap())
        .collect();
    let permissions = RuleSet {
        allow,
        ..RuleSet::default()
    };
    let policy = Policy::new(&permissions, dir.path(), &[]);
    let mut model = ScriptModel::new(
        None,
        vec![ScriptTurn {
            text: None,
            tool_calls: calls,
            usage: None,
        }],
    );
    let (outcome, events) = run_loop(&mut model, &registry, &policy, dir.path()).await;
    let log = log.lock().unwrap().clone();
    (outcome, log, events)
}

/// Run the loop with prompt "p" in `workspace`; how it ended and the transcript's events.
pub(super) async fn run_loop(
    model: &mut dyn Model,
    registry: &Registry,
    policy: &Policy,
    workspace: &std::path::Path,
) -> (LoopOutcome, Vec<Value>) {
    let path = workspace.join("t.jsonl");
    let mut transcript = TranscriptWriter::create(&path).unwrap();
    let redactor = Redactor::default();
    let hooks = crate::hooks::Hooks::none();
    let mut agent = Agent {
        model,
        registry,
        policy,
        ctx: ToolContext::new(workspace.to_path_buf()),
        transcript: &mut transcript,
        replay: None,
        redactor: &redactor,
        hooks: &hooks,
        subagents: None,
        depth: 0,
    };
    let config = AgentConfig {
        clock_from: None,
        prompt: "p".into(),
        ..AgentConfig::default()
    };
    let mut session = agent.begin(&config);
    let outcome = agent.run(&config, &mut session).await.unwrap();
    let events = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (outcome, events)
}

#[tokio::test]
async fn a_fault_of_drovers_ends_the_task_as_an_internal_error_not_a_model_failure() {
    let mut faulty = call("Write", "w", 0);
    faulty.input["fault"] = json!(true);
    let (outcome, log, events) =
        run_turn_to_its_end(vec![faulty, call("Write", "after", 0)], &["Write"]).await;
    assert_eq!(outcome.reason, EndReason::InternalError);
    assert!(outcome.message.contains("w broke"), "{}", outcome.message);
    // The call after the fault never started, and the model was not asked again.
    assert_eq!(log, vec!["start w", "end w"]);
    assert_eq!(outcome.turns, 1);
    // Every call still has its result in the transcript.
    let results: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "tool_result")
        .collect();
    assert_eq!(results.len(), 2);
    assert!(results.iter().all(|r| r["is_error"] == true));
    assert!(
        results[1]["content"]
            .as_str()
            .unwrap()
            .contains("internal error")
    );
}

#[tokio::test(start_paused = true)]
async fn consecutive_read_only_calls_overlap_and_results_keep_call_order() {
    let (log, events) = run_turn(vec![call("Glob", "a", 150), call("Glob", "b", 10)], &[]).await;
    // Both started before either ended: they ran concurrently; b finished first.
    assert_eq!(log, vec!["start a", "start b", "end b", "end a"]);
    let results: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "tool_result")
        .map(|e| e["content"].as_str().unwrap())
        .collect();
    assert_eq!(results, vec!["result a", "result b"]);
}

#[tokio::test(start_paused = true)]
async fn a_call_that_writes_runs_alone_in_order() {
    let (log, _) = run_turn(
        vec![
            call("Glob", "a", 50),
            call("Write", "w", 10),
            call("Glob", "b", 10),
        ],
        &["Write"],
    )
    .await;
    assert_eq!(
        log,
        vec!["start a", "end a", "start w", "end w", "start b", "end b"]
    );
}

#[tokio::test]
async fn writes_are_denied_without_a_rule_and_the_model_is_told_why() {
    let (log, events) = run_turn(vec![call("Write", "w", 0)], &[]).await;
    // Write is not read-only and no rule allows it: it never ran.
    assert!(log.is_empty(), "{log:?}");
    let permission = events.iter().find(|e| e["type"] == "permission").unwrap();
    assert_eq!(permission["decision"], "deny");
    let result = events.iter().find(|e| e["type"] == "tool_result").unwrap();
    assert_eq!(result["is_error"], true);
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .contains("Permission denied by the default policy")
    );
}
