// Test-only module: its parent includes it under #[cfg(test)].
use super::*;
use crate::transcript::AgentScope;

fn main(event: Event) -> ScopedEvent {
    ScopedEvent { scope: None, event }
}

fn start() -> ScopedEvent {
    main(Event::UserMessage {
        source: "test".into(),
        text: "stands for run_start".into(),
    })
}

fn response(ids: &[&str], stop_reason: StopReason) -> ScopedEvent {
    let mut content = vec![ContentBlock::Text {
        text: "working".into(),
    }];
    content.extend(ids.iter().map(|id| ContentBlock::ToolUse {
        id: id.to_string(),
        name: "Bash".into(),
        input: serde_json::json!({"command": "true"}),
    }));
    main(Event::ModelResponse {
        turn: 0,
        content,
        stop_reason,
        usage: Usage::default(),
        cost_usd: None,
    })
}

fn result(id: &str, content: &str) -> ScopedEvent {
    main(Event::ToolResult {
        tool_use_id: id.into(),
        is_error: content.starts_with("Cancelled"),
        content: content.into(),
        images: Vec::new(),
        duration_ms: 1,
    })
}

fn run_end(reason: EndReason) -> ScopedEvent {
    main(Event::RunEnd {
        status: reason.status(),
        reason,
        message: "ended".into(),
        turns: 2,
        usage: Usage::default(),
        cost_usd: Some(0.5),
        todos: Vec::new(),
        redacted: 0,
        agent_turns: 0,
    })
}

#[test]
fn whole_turns_are_kept_and_the_end_is_dropped() {
    let events = vec![
        start(),
        response(&["a", "b"], StopReason::ToolUse),
        result("a", "one"),
        result("b", "two"),
        response(&["c"], StopReason::ToolUse),
        result("c", "three"),
        run_end(EndReason::MaxTurns),
    ];
    let point = resume_point(&events);
    assert_eq!(point.turns, 2);
    assert_eq!(point.kept, 6);
    let end = point.end.unwrap();
    assert_eq!(end.reason, EndReason::MaxTurns);
    assert_eq!(end.cost_usd, Some(0.5));
}

#[test]
fn a_turn_cut_short_by_a_kill_is_asked_again() {
    // killed while the second turn's tools ran: one result of two recorded.
    let events = vec![
        start(),
        response(&["a"], StopReason::ToolUse),
        result("a", "one"),
        response(&["b", "c"], StopReason::ToolUse),
        result("b", "two"),
    ];
    let point = resume_point(&events);
    assert_eq!(point.turns, 1);
    assert_eq!(point.kept, 3);
    assert_eq!(point.end, None);
}

#[test]
fn cancelled_calls_make_a_turn_incomplete() {
    let events = vec![
        start(),
        response(&["a"], StopReason::ToolUse),
        result(
            "a",
            &format!(
                "{}\n\n[PreToolUse hook] a note",
                cancelled_result(EndReason::Interrupted)
            ),
        ),
        run_end(EndReason::Interrupted),
    ];
    let point = resume_point(&events);
    assert_eq!(point.turns, 0);
    assert_eq!(point.kept, 1, "only run_start is kept");
}

#[test]
fn a_sub_agents_lines_belong_to_the_turn_that_launched_it() {
    let scoped = |event: Event| ScopedEvent {
        scope: Some(AgentScope {
            agent_id: "helper@a".into(),
            parent_tool_use_id: "a".into(),
        }),
        event,
    };
    let events = vec![
        start(),
        response(&["a"], StopReason::ToolUse),
        scoped(response(&["x"], StopReason::ToolUse).event),
        scoped(result("x", "sub").event),
        result("a", "agent's answer"),
        response(&["b"], StopReason::ToolUse),
        scoped(response(&[], StopReason::EndTurn).event),
    ];
    let point = resume_point(&events);
    assert_eq!(point.turns, 1);
    assert_eq!(point.kept, 5);
}

#[test]
fn a_turn_without_calls_is_whole_and_a_truncated_one_is_not() {
    let events = vec![
        start(),
        response(&[], StopReason::EndTurn),
        main(Event::UserMessage {
            source: "stop_hook".into(),
            text: "go on".into(),
        }),
        response(&["a"], StopReason::MaxTokens),
        run_end(EndReason::MaxTokens),
    ];
    let point = resume_point(&events);
    assert_eq!(point.turns, 1);
    assert_eq!(point.kept, 2);
}

#[test]
fn every_result_of_an_id_repeated_in_a_turn_is_kept() {
    let events = vec![
        start(),
        response(&["a", "a"], StopReason::ToolUse),
        result("a", "one"),
        result("a", "again"),
        run_end(EndReason::Interrupted),
    ];
    let point = resume_point(&events);
    assert_eq!(point.turns, 1);
    assert_eq!(point.kept, 4);
}

#[test]
fn a_resumed_run_goes_on_from_before_the_wrap_up_turn() {
    let events = vec![
        start(),
        response(&["a"], StopReason::ToolUse),
        result("a", "one"),
        response(&["b"], StopReason::ToolUse),
        result("b", "two"),
        main(Event::WrapUp {
            turn: 2,
            reason: EndReason::MaxTurns,
            message: "used 2 turns of max_turns 2".into(),
            prompt: "this is your last turn".into(),
        }),
        response(&[], StopReason::EndTurn),
        run_end(EndReason::MaxTurns),
    ];
    let point = resume_point(&events);
    assert_eq!(
        point.turns, 2,
        "the wrap-up turn is asked again as a working turn"
    );
    assert_eq!(point.kept, 5);
    assert_eq!(point.end.map(|end| end.reason), Some(EndReason::MaxTurns));
}
