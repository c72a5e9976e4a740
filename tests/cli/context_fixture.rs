//! What the tests of long runs share (`limits.context`, `max_identical_calls`,
//! `wrap_up`): a workspace of large files, scripted turns that read them, a task
//! spec around those turns, and the `compaction` events of a transcript.

use crate::common;

use std::path::{Path, PathBuf};

use crate::providers::{anthropic_end, anthropic_start, anthropic_text};
use common::write_spec;
use serde_json::Value;

/// `dir/ws/f<n>.txt` for each `n` in `numbers`, `lines` lines of 100 bytes each
/// (the Read tool gives a line about 105 bytes of JSON with its number).
pub(crate) fn large_files(dir: &Path, numbers: std::ops::RangeInclusive<usize>, lines: usize) {
    std::fs::create_dir_all(dir.join("ws")).unwrap();
    for n in numbers {
        let text: String = (0..lines)
            .map(|line| format!("f{n:02} line {line:05}: {}\n", "x".repeat(82)))
            .collect();
        std::fs::write(dir.join(format!("ws/f{n}.txt")), text).unwrap();
    }
}

/// Script lines: one turn reading `f<n>.txt` for each `n` in `numbers`.
pub(crate) fn read_turns(numbers: std::ops::RangeInclusive<usize>) -> String {
    numbers
        .map(|n| {
            format!("    - tool_calls: [{{ name: Read, input: {{ file_path: f{n}.txt }} }}]\n")
        })
        .collect()
}

/// A scripted turn that writes `file` with `content`.
pub(crate) fn write_turn(file: &str, content: &str) -> String {
    format!(
        "    - tool_calls: [{{ name: Write, input: {{ file_path: {file}, content: {content:?} }} }}]\n"
    )
}

/// `dir/NAME.yaml`: a task in a copy of `dir/ws` whose scripted model plays `script`
/// (lines of `script:` entries), allowed Read and Write, with `extra` top-level lines
/// (`limits:` …).
pub(crate) fn task(dir: &Path, name: &str, script: &str, extra: &str) -> PathBuf {
    std::fs::create_dir_all(dir.join("ws")).unwrap();
    write_spec(
        dir,
        &format!("{name}.yaml"),
        &format!(
            "version: 1\nname: {name}\nprompt: Read the files and write notes.\nworkspace: ws\nisolation: copy\nsandbox: off\nmodel:\n  provider: script\n  script:\n{script}permissions:\n  allow: [Read, Write]\n{extra}"
        ),
    )
}

/// The `compaction` events of a transcript, in order.
pub(crate) fn compactions(lines: &[Value]) -> Vec<&Value> {
    common::events(lines, "compaction")
}

/// A number of a JSON event, which must be there.
pub(crate) fn num(value: &Value, key: &str) -> u64 {
    value[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} is not a number in {value}"))
}

/// The text of a `model_response` event's text blocks.
pub(crate) fn response_text(response: &Value) -> String {
    response["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|block| block["type"] == "text")
        .map(|block| block["text"].as_str().unwrap())
        .collect()
}

/// Tool calls of a `model_response` event, by name.
pub(crate) fn called(response: &Value) -> Vec<String> {
    response["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|block| block["type"] == "tool_use")
        .map(|block| block["name"].as_str().unwrap().to_string())
        .collect()
}

/// An Anthropic stream of a turn that calls `name` with `input` (call id `id`), with
/// no token counts: drover then estimates request sizes at four bytes a token, as it
/// does before a server has counted one.
pub(crate) fn anthropic_call(id: &str, name: &str, input: &Value) -> String {
    crate::providers::anthropic_call_counted(0, id, name, input)
}

/// An Anthropic stream of a turn that only writes `text`.
pub(crate) fn anthropic_says(text: &str) -> String {
    anthropic_start(0, 0, 0) + &anthropic_text(0, text) + &anthropic_end("end_turn", 5)
}

/// The key the Anthropic specs of these tests read, and its variable.
pub(crate) const KEY_ENV: &str = "DROVER_TEST_CONTEXT_KEY";

/// `dir/NAME.yaml`: a task against the Anthropic API at `base_url` (model
/// `test-model`, no retries), allowed Read and Write, with `extra` top-level lines.
pub(crate) fn anthropic_task(dir: &Path, name: &str, base_url: &str, extra: &str) -> PathBuf {
    std::fs::create_dir_all(dir.join("ws")).unwrap();
    write_spec(
        dir,
        &format!("{name}.yaml"),
        &format!(
            "version: 1\nname: {name}\nprompt: Read the files and write notes.\nworkspace: ws\nisolation: copy\nsandbox: off\nmodel:\n  provider: anthropic\n  name: test-model\n  base_url: {base_url}\n  api_key_env: {KEY_ENV}\n  retry: {{ max_retries: 0 }}\npermissions:\n  allow: [Read, Write]\n{extra}"
        ),
    )
}

/// `drover run SPEC --artifacts DIR` with the key set (and no proxy: the model is on
/// 127.0.0.1).
pub(crate) fn run_keyed(spec: &Path, artifacts: &Path) -> std::process::Output {
    common::drover_without_proxy()
        .arg("run")
        .arg(spec)
        .arg("--artifacts")
        .arg(artifacts)
        .env(KEY_ENV, crate::providers::KEY)
        .env_remove("ANTHROPIC_BASE_URL")
        .output()
        .unwrap()
}

/// The text of every `tool_result` block of an Anthropic request's messages, in order,
/// by call id.
pub(crate) fn request_results(request: &Value) -> Vec<(String, String)> {
    let mut results = Vec::new();
    for message in request["messages"].as_array().unwrap() {
        let Some(blocks) = message["content"].as_array() else {
            continue;
        };
        for block in blocks.iter().filter(|b| b["type"] == "tool_result") {
            let text = match &block["content"] {
                Value::String(text) => text.clone(),
                Value::Array(parts) => parts
                    .iter()
                    .filter_map(|part| part["text"].as_str())
                    .collect(),
                other => other.to_string(),
            };
            results.push((block["tool_use_id"].as_str().unwrap().to_string(), text));
        }
    }
    results
}
