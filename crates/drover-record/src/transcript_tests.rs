// Test-only module: its parent includes it under #[cfg(test)].
//! Tests of the transcript writer and reader.

use super::*;

#[test]
fn every_line_carries_type_and_ts_and_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    let mut writer = TranscriptWriter::create(&path).unwrap();
    let event = Event::ToolCall {
        id: "toolu_1".into(),
        name: "Read".into(),
        input: serde_json::json!({"file_path": "a"}),
    };
    writer.write(event.clone()).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let value: Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(value["type"], "tool_call");
    assert!(value["ts"].as_str().unwrap().ends_with('Z'));
    assert_eq!(TranscriptReader::read(&path).unwrap(), vec![event]);
}

#[test]
fn a_sub_agents_lines_share_the_chain_and_read_back_with_their_scope() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    let mut main = TranscriptWriter::create(&path).unwrap();
    let scope = AgentScope {
        agent_id: "reviewer@toolu_1".into(),
        parent_tool_use_id: "toolu_1".into(),
    };
    let mut sub = main.scoped(scope.clone());
    let event = |text: &str| Event::UserMessage {
        source: "test".into(),
        text: text.into(),
    };
    main.write(event("one")).unwrap();
    sub.write(event("two")).unwrap();
    main.write(event("three")).unwrap();
    let verified = crate::chain::verify_file(&path);
    assert!(
        matches!(verified, Err(crate::chain::ChainError::NoRunEnd)),
        "the chain holds up to its (missing) end: {verified:?}"
    );
    let scoped = TranscriptReader::read_scoped(&path).unwrap();
    let scopes: Vec<Option<AgentScope>> = scoped.iter().map(|s| s.scope.clone()).collect();
    assert_eq!(scopes, vec![None, Some(scope), None]);
    assert_eq!(
        TranscriptReader::read(&path).unwrap(),
        vec![event("one"), event("three")]
    );
}

#[test]
fn the_tap_gets_every_line_as_the_file_holds_it_redacted_and_chained() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    let mut main = TranscriptWriter::create(&path).unwrap();
    main.redact_with(Arc::new(Redactor::new(["sk-test-0123456789".to_string()])));
    let tapped = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = Arc::clone(&tapped);
    main.tap(Box::new(move |line| {
        log.lock().unwrap().push(line.to_string())
    }));
    let mut sub = main.scoped(AgentScope {
        agent_id: "a@t".into(),
        parent_tool_use_id: "t".into(),
    });
    let event = |text: &str| Event::UserMessage {
        source: "test".into(),
        text: text.into(),
    };
    main.write(event("key sk-test-0123456789")).unwrap();
    sub.write(event("two")).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<String> = text.lines().map(str::to_string).collect();
    assert_eq!(
        *tapped.lock().unwrap(),
        lines,
        "the tap sees the file's lines"
    );
    assert!(!text.contains("sk-test-0123456789"), "{text}");
    assert!(
        lines.iter().all(|line| line.starts_with("{\"prev\":")),
        "{text}"
    );
}

#[test]
fn a_bad_line_names_its_number() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    std::fs::write(&path, "{\"type\":\"nope\",\"ts\":\"x\"}\n").unwrap();
    let error = TranscriptReader::read(&path).unwrap_err().to_string();
    assert!(error.contains("t.jsonl:1:"), "{error}");
}

#[test]
fn every_line_is_redacted_before_it_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    let mut writer = TranscriptWriter::create(&path).unwrap();
    let secret = "sk-test-0123456789";
    let escaped_secret = "tab\there\\and\"quote\"";
    writer.redact_with(Arc::new(Redactor::new([
        secret.to_string(),
        escaped_secret.to_string(),
    ])));
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    writer.observe(Box::new(move |event| {
        log.lock().unwrap().push(event.clone())
    }));
    writer
        .write(Event::ToolCall {
            id: "toolu_1".into(),
            name: "Bash".into(),
            input: serde_json::json!({"command": format!("echo {secret}")}),
        })
        .unwrap();
    writer
        .write(Event::RunEnd {
            status: crate::Status::Failed,
            reason: crate::EndReason::ChecksFailed,
            message: format!("saw {escaped_secret} and {secret}"),
            turns: 1,
            redacted: 0,
            agent_turns: 0,
            usage: Usage::default(),
            cost_usd: None,
            todos: Vec::new(),
        })
        .unwrap();
    // A value that only matches across a JSON escape: redacted without breaking JSON.
    let mut tricky = TranscriptWriter::create(&dir.path().join("u.jsonl")).unwrap();
    tricky.redact_with(Arc::new(Redactor::new(["nabcdefgh".to_string()])));
    tricky
        .write(Event::ToolCall {
            id: "t".into(),
            name: "Bash".into(),
            input: serde_json::json!({"command": "x\nabcdefgh", "nabcdefgh": "nabcdefgh"}),
        })
        .unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains(secret), "{text}");
    assert!(!text.contains("tab\\there"), "{text}");
    let events = TranscriptReader::read(&path).unwrap();
    let Event::ToolCall { input, .. } = &events[0] else {
        panic!("{events:?}")
    };
    assert_eq!(input["command"], "echo [redacted]");
    let Event::RunEnd { message, .. } = &events[1] else {
        panic!("{events:?}")
    };
    assert_eq!(message, "saw [redacted] and [redacted]");
    assert_eq!(
        *seen.lock().unwrap(),
        events,
        "the observer sees redacted events"
    );
    let events = TranscriptReader::read(&dir.path().join("u.jsonl")).unwrap();
    let Event::ToolCall { input, .. } = &events[0] else {
        panic!("{events:?}")
    };
    assert_eq!(
        input["command"], "x\nabcdefgh",
        "a newline and abcdefgh: no secret"
    );
    assert_eq!(input["[redacted]"], "[redacted]");
}

#[test]
fn a_resumed_transcript_continues_the_chain_and_leaves_out_the_replayed_events() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    let mut first = TranscriptWriter::create(&path).unwrap();
    let call = |id: &str| Event::ToolCall {
        id: id.into(),
        name: "LS".into(),
        input: serde_json::json!({"path": "."}),
    };
    first.write(call("toolu_1")).unwrap();
    first.write(call("toolu_2")).unwrap();
    drop(first);
    let text = std::fs::read_to_string(&path).unwrap();
    let kept: Vec<String> = text.lines().take(1).map(str::to_string).collect();

    let mut resumed = TranscriptWriter::resume(&path, &kept, true).unwrap();
    // While the recorded turns replay, only drift (and the end) is written.
    resumed.write(call("toolu_1")).unwrap();
    resumed
        .write(Event::ReplayDrift {
            tool_use_id: "toolu_1".into(),
            expected: "a".into(),
            actual: "b".into(),
            call: 1,
            tool: "LS".into(),
            diff: String::new(),
        })
        .unwrap();
    resumed.go_live();
    resumed.write(call("toolu_3")).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let types: Vec<String> = text
        .lines()
        .map(|line| {
            serde_json::from_str::<Value>(line).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(types, ["tool_call", "replay_drift", "tool_call"]);
    assert!(text.starts_with(&kept[0]), "the kept line is as it was");
    assert!(!text.contains("toolu_2"), "the dropped line is gone");
    let bytes = text.as_bytes();
    assert_eq!(
        crate::chain::verify(bytes),
        Err(crate::chain::ChainError::NoRunEnd),
        "the chain holds across the resume"
    );
}

/// A secret value that happens to be an event's name or a field's (a header value a
/// repository's helper chose) is redacted where it is a value, and the line stays an
/// event a replay reads.
#[test]
fn a_secret_spelled_like_drovers_own_names_leaves_the_event_readable() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    let mut writer = TranscriptWriter::create(&path).unwrap();
    writer.redact_with(Arc::new(Redactor::new([
        "tool_call".to_string(),
        "tool_use_id_x".to_string(),
    ])));
    writer
        .write(Event::ToolCall {
            id: "tool_use_id_x".into(),
            name: "Bash".into(),
            input: serde_json::json!({"command": "echo tool_call", "tool_call": 1}),
        })
        .unwrap();
    let events = TranscriptReader::read(&path).unwrap();
    let Event::ToolCall { id, input, .. } = &events[0] else {
        panic!("{events:?}");
    };
    assert_eq!(id, "[redacted]");
    assert_eq!(input["command"], "echo [redacted]");
    assert!(input.get("tool_call").is_none(), "{input}");
}

/// A `run_start` as a drover before `start` wrote it: no `start` field.
const OLD_RUN_START: &str = r#"{"type":"run_start","ts":"2026-01-01T00:00:00Z","drover_version":"0.1.0","task":"t","spec_sha256":"x","provider":"script","model":"m","tools":[],"spec_path":"t.yaml","spec_yaml":"","workspace":"/w","workspace_sha256":"f","max_turns":null}"#;

#[test]
fn run_start_reads_without_start_and_writes_it_when_known() {
    let Event::RunStart { settings, .. } =
        TranscriptReader::parse_line(OLD_RUN_START).unwrap().event
    else {
        panic!("not a run_start");
    };
    assert_eq!(settings.start, None, "older transcripts have none");
    let mut value: Value = serde_json::from_str(OLD_RUN_START).unwrap();
    value["start"] = serde_json::json!({"commit": "a".repeat(40), "dirty": true});
    let Event::RunStart { settings, .. } = TranscriptReader::parse_line(&value.to_string())
        .unwrap()
        .event
    else {
        panic!("not a run_start");
    };
    let start = settings.start.unwrap();
    assert_eq!(start.commit, "a".repeat(40));
    assert!(start.dirty);
}
