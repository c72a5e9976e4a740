//! One task's progress: its view of its own transcript events, as a live line on a
//! terminal or timestamped log lines.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use indicatif::ProgressBar;
use serde_json::Value;

use super::{Progress, lock};
use crate::message::ContentBlock;
use crate::output::counted;
use crate::record::Event;
use crate::record::transcript::Decision;

/// One task's view of its own events.
pub(super) struct TaskProgress {
    progress: Arc<Progress>,
    name: String,
    turn: u32,
    tokens: u64,
    cost: Option<f64>,
    /// Tool names by tool_use id, so a denial can name its tool.
    tools: HashMap<String, String>,
    /// Calls started and not finished: (id, what is running).
    running: Vec<(String, String)>,
    /// Calls the policy denied (their error result is the denial, already shown).
    denied: HashSet<String>,
    /// The check running now: `checks: 1/3 tests` on the live line.
    phase: Option<String>,
    /// The turn's last failed or denied call, shown on the live line until the next turn.
    failed: Option<String>,
    bar: Option<ProgressBar>,
}

impl TaskProgress {
    pub(super) fn new(progress: Arc<Progress>, name: &str) -> TaskProgress {
        TaskProgress {
            progress,
            name: name.to_string(),
            turn: 0,
            tokens: 0,
            cost: None,
            tools: HashMap::new(),
            running: Vec::new(),
            denied: HashSet::new(),
            phase: None,
            failed: None,
            bar: None,
        }
    }

    pub(super) fn observe(&mut self, event: &Event) {
        // The agent is back at work (another round after failed checks): the live line
        // follows its turns again.
        if self.phase.is_some()
            && matches!(event, Event::ModelResponse { .. } | Event::ToolCall { .. })
        {
            self.phase = None;
            if let (Some(bar), Some(bars)) = (&self.bar, &self.progress.bars) {
                bar.set_style(bars.task_style.clone());
            }
        }
        match event {
            Event::RunStart {
                provider, model, ..
            } => {
                self.start_bar();
                self.say(&format!("started ({provider}/{model})"));
            }
            // A resumed run writes no run_start of its own (the recorded one stands).
            Event::Resume { .. } => self.on_resume(event),
            Event::ModelResponse { .. } => self.on_model_response(event),
            Event::ToolCall { id, name, input } => {
                self.tools.insert(id.clone(), name.clone());
                self.running.push((id.clone(), brief(name, input)));
                self.refresh();
            }
            Event::Permission {
                decision: Decision::Deny,
                ..
            } => self.on_permission(event),
            Event::ToolResult { .. } => self.on_tool_result(event),
            Event::Retry { .. } => self.on_retry(event),
            Event::CheckStart { .. } => self.on_check_start(event),
            Event::Check {
                expectation: true, ..
            } => self.on_expectation(event),
            Event::Check { .. } => self.on_check(event),
            Event::ReplayDrift { .. } => self.on_replay_drift(event),
            Event::Network(attempt) if attempt.denied() => self.on_network_denied(attempt),
            Event::Compaction(compaction) => self.on_compaction(compaction),
            Event::WrapUp { message, .. } => {
                self.say(&format!(
                    "wrap-up: {message}; the model gets one last turn, without tools"
                ));
            }
            Event::AgentStart {
                agent_type, depth, ..
            } => {
                self.say(&format!("agent {agent_type} started (depth {depth})"));
            }
            Event::AgentEnd { .. } => self.on_agent_end(event),
            Event::RunEnd {
                cost_usd: Some(cost),
                ..
            } => self.cost = Some(*cost),
            _ => {}
        }
    }

    fn on_resume(&mut self, event: &Event) {
        let Event::Resume {
            replayed_turns,
            provider,
            model,
            ..
        } = event
        else {
            return;
        };
        self.start_bar();
        self.turn = *replayed_turns;
        self.say(&format!(
            "resumed ({provider}/{model}): replaying {} without the model",
            counted(*replayed_turns, "recorded turn", "recorded turns")
        ));
    }

    fn on_model_response(&mut self, event: &Event) {
        let Event::ModelResponse {
            turn,
            content,
            usage,
            ..
        } = event
        else {
            return;
        };
        self.turn = *turn;
        self.failed = None;
        self.tokens = self.tokens.saturating_add(usage.total());
        if let Some(cost) = event_cost(event) {
            *self.cost.get_or_insert(0.0) += cost;
        }
        let tools: Vec<&str> = content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::ToolUse { name, .. } => Some(name.as_str()),
                _ => None,
            })
            .collect();
        let calls = if tools.is_empty() {
            "no tool calls".to_string()
        } else {
            tools.join(", ")
        };
        self.say(&format!("turn {turn}: {calls} · {}", self.figures()));
    }

    fn on_permission(&mut self, event: &Event) {
        let Event::Permission {
            tool_use_id,
            decision: Decision::Deny,
            reason,
            ..
        } = event
        else {
            return;
        };
        self.denied.insert(tool_use_id.clone());
        let tool = self.tools.get(tool_use_id).map_or("a tool", String::as_str);
        let text = format!("✗ denied {tool}: {reason}");
        self.progress.line(&self.name, &text);
        self.failed = Some(format!("✗ denied {tool}"));
        self.refresh();
    }

    /// A connection the task's network rules refused: shown at once, so a blocked
    /// install is seen as the policy's doing while the task still runs.
    fn on_network_denied(&mut self, attempt: &crate::record::network::NetworkAttempt) {
        let by = match (&attempt.origin.name, &attempt.origin.tool_use_id) {
            (Some(name), _) => format!("{} {name}", attempt.origin.source),
            (None, Some(id)) => self
                .tools
                .get(id)
                .map_or_else(|| attempt.origin.source.clone(), Clone::clone),
            (None, None) => attempt.origin.source.clone(),
        };
        let why = attempt.reason.as_deref().unwrap_or("denied");
        let text = format!("✗ network: {} blocked ({by}): {why}", attempt.target());
        self.progress.line(&self.name, &text);
        self.refresh();
    }

    fn on_tool_result(&mut self, event: &Event) {
        let Event::ToolResult {
            tool_use_id,
            is_error,
            content,
            ..
        } = event
        else {
            return;
        };
        let call = self
            .running
            .iter()
            .find(|(id, _)| id == tool_use_id)
            .map(|(_, call)| call.clone());
        self.running.retain(|(id, _)| id != tool_use_id);
        // An error result the model gets (an unknown tool, an Edit that does not
        // match, a failing command) is shown as such, not as a success.
        if *is_error && !self.denied.contains(tool_use_id) {
            let call = call.unwrap_or_else(|| "a tool".to_string());
            let first = content.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            let first: String = first.chars().take(160).collect();
            self.progress
                .line(&self.name, &format!("✗ {call}: {first}"));
            self.failed = Some(format!("✗ {call}"));
        }
        self.refresh();
    }

    fn on_retry(&mut self, event: &Event) {
        let Event::Retry {
            attempt,
            reason,
            status,
            delay_ms,
        } = event
        else {
            return;
        };
        let status = status.map_or_else(String::new, |code| format!(" (HTTP {code})"));
        let text = format!(
            "model request failed{status}: {reason}; trying again (attempt {}) in {:.1}s",
            attempt + 1,
            *delay_ms as f64 / 1000.0
        );
        self.progress.line(&self.name, &text);
    }

    fn on_check_start(&mut self, event: &Event) {
        let Event::CheckStart {
            name,
            command,
            number,
            of,
        } = event
        else {
            return;
        };
        self.phase = Some(format!("checks: {number}/{of} {name}"));
        if let (Some(bar), Some(bars)) = (&self.bar, &self.progress.bars) {
            bar.set_style(bars.check_style.clone());
            bar.reset_elapsed();
        }
        self.say(&format!("check {number}/{of} {name:?} started: {command}"));
    }

    fn on_expectation(&mut self, event: &Event) {
        let Event::Check {
            name,
            command,
            passed,
            expectation: true,
            found,
            ..
        } = event
        else {
            return;
        };
        let name = name.strip_prefix("expect: ").unwrap_or(name);
        let text = if *passed {
            format!("expectation {name} met")
        } else {
            format!(
                "expectation {name} NOT MET: expected {command}, but {}",
                found.as_deref().unwrap_or("it was not")
            )
        };
        self.say(&text);
    }

    fn on_check(&mut self, event: &Event) {
        let Event::Check {
            name,
            passed,
            exit_code,
            timed_out,
            ..
        } = event
        else {
            return;
        };
        let outcome = match (passed, timed_out, exit_code) {
            (true, _, _) => "passed".to_string(),
            (false, true, _) => "FAILED (timed out)".to_string(),
            (false, false, Some(code)) => format!("FAILED (exit code {code})"),
            (false, false, None) => "FAILED".to_string(),
        };
        self.say(&format!("check {name:?} {outcome}"));
    }

    fn on_replay_drift(&mut self, event: &Event) {
        let Event::ReplayDrift {
            call,
            tool,
            tool_use_id,
            diff,
            ..
        } = event
        else {
            return;
        };
        let text = format!(
            "drift at call {call} ({tool} {tool_use_id}): the result differs from the recording"
        );
        self.progress.line(&self.name, &text);
        for line in diff.lines() {
            self.progress.line(&self.name, &format!("  {line}"));
        }
    }

    fn on_compaction(&mut self, compaction: &crate::record::context::Compaction) {
        self.tokens = self.tokens.saturating_add(compaction.usage.total());
        if let Some(cost) = compaction.cost_usd {
            *self.cost.get_or_insert(0.0) += cost;
        }
        let mut what = Vec::new();
        if compaction.summary.is_some() {
            what.push("summarized".to_string());
        }
        if compaction.cleared_results > 0 {
            what.push(counted(
                compaction.cleared_results,
                "result cleared",
                "results cleared",
            ));
        }
        if compaction.removed_turns > 0 && compaction.summary.is_none() {
            what.push(counted(
                compaction.removed_turns,
                "old turn removed",
                "old turns removed",
            ));
        }
        let why = if compaction.trigger == "refused" {
            " after the API refused the request as too long"
        } else {
            ""
        };
        self.say(&format!(
            "compacted before turn {}{why}: ~{} → ~{} tokens of a {} window ({}: {})",
            compaction.turn + 1,
            compaction.tokens_before,
            compaction.tokens_after,
            compaction.window,
            compaction.strategy,
            what.join(", ")
        ));
    }

    fn on_agent_end(&mut self, event: &Event) {
        let Event::AgentEnd {
            agent_type,
            reason,
            turns,
            usage,
            cost_usd,
            ..
        } = event
        else {
            return;
        };
        self.tokens = self.tokens.saturating_add(usage.total());
        if let Some(cost) = cost_usd {
            *self.cost.get_or_insert(0.0) += cost;
        }
        self.say(&format!(
            "agent {agent_type} ended: {} after {} · {}",
            reason.as_str(),
            counted(*turns, "turn", "turns"),
            self.figures()
        ));
    }

    fn start_bar(&mut self) {
        if let Some(bars) = &self.progress.bars {
            let bar = bars
                .multi
                .insert_before(&bars.overall, ProgressBar::new_spinner());
            bar.set_style(bars.task_style.clone());
            bar.set_prefix(self.name.clone());
            bar.enable_steady_tick(Duration::from_millis(120));
            lock(&bars.running).insert(self.name.clone(), bar.clone());
            self.bar = Some(bar);
        }
    }

    /// A line in the log; on a terminal the task's live line says it instead.
    fn say(&self, text: &str) {
        match &self.bar {
            Some(_) => self.refresh(),
            None => self.progress.line(&self.name, text),
        }
    }

    fn refresh(&self) {
        if let Some(bar) = &self.bar {
            if let Some(phase) = &self.phase {
                // The check's time runs on in the style's `{elapsed}`.
                bar.set_message(crate::output::one_line(phase).into_owned());
                return;
            }
            let now = match (self.running.last(), &self.failed) {
                (Some((_, running)), _) => format!(" · {running}"),
                (None, Some(failed)) => format!(" · {failed}"),
                (None, None) => String::new(),
            };
            bar.set_message(
                crate::output::one_line(&format!("turn {} · {}{now}", self.turn, self.figures()))
                    .into_owned(),
            );
        }
    }

    fn figures(&self) -> String {
        let cost = self
            .cost
            .map_or_else(String::new, |c| format!(" · ${c:.4}"));
        format!("{} tokens{cost}", compact(self.tokens))
    }
}

/// The per-turn `cost_usd` of a model_response, when the transcript carries one (read by
/// name: the field belongs to the pricing work and may be absent).
fn event_cost(event: &Event) -> Option<f64> {
    serde_json::to_value(event)
        .ok()?
        .get("cost_usd")
        .and_then(Value::as_f64)
}

/// What a tool call is doing, in a few words: `Bash: cargo test`, `Edit: src/lib.rs`.
fn brief(name: &str, input: &Value) -> String {
    let detail = ["command", "file_path", "pattern", "path", "url"]
        .iter()
        .find_map(|key| input.get(key).and_then(Value::as_str))
        .unwrap_or("");
    let detail: String = detail
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(48)
        .collect();
    if detail.is_empty() {
        name.to_string()
    } else {
        format!("{name}: {detail}")
    }
}

/// 950, 12.3k, 4.5M.
fn compact(count: u64) -> String {
    match count {
        0..1_000 => count.to_string(),
        1_000..1_000_000 => format!("{:.1}k", count as f64 / 1_000.0),
        _ => format!("{:.1}M", count as f64 / 1_000_000.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn briefs_and_counts_read_well() {
        assert_eq!(
            brief("Bash", &json!({"command": "cargo test\nmore"})),
            "Bash: cargo test"
        );
        assert_eq!(brief("Edit", &json!({"file_path": "a.rs"})), "Edit: a.rs");
        assert_eq!(brief("TodoWrite", &json!({"todos": []})), "TodoWrite");
        assert_eq!(compact(950), "950");
        assert_eq!(compact(12_345), "12.3k");
        assert_eq!(compact(4_500_000), "4.5M");
    }
}
