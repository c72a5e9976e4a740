//! Attacker suite, text: what a model, a tool, a check, an MCP server or a shard's
//! `summary.json` wrote never becomes a line of its own in drover's output, a GitHub
//! workflow command (`::add-mask::`, `::stop-commands::`, `::error`, `##[…]`) or a
//! heading of the job summary; and `report merge` copies no link out of its inputs.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

use crate::common::{self, drover, drover_without_proxy, write_spec};

/// Line breaks of every kind: GitHub's runner splits at CR and LF, terminals and log
/// viewers may break at the others.
const BREAKS: [char; 7] = [
    '\n', '\r', '\u{b}', '\u{c}', '\u{85}', '\u{2028}', '\u{2029}',
];

/// Every hostile text: a workflow command after each kind of line break and one in the
/// middle of a line (the runner acts on `##[` anywhere), a heading, HTML.
const PAYLOAD: &str = "a\n::error title=FORGED::forged\r::add-mask::x\u{2028}::stop-commands::tok ##[error]FORGED\n## drover: 1 passed, 0 failed FORGED\n<h2>FORGED</h2>\u{85}::warning::FORGED";

/// The workflow commands GitHub's runner would act on in `text` that drover did not
/// write as annotations: a line (at any break) that starts with `::` after blanks, or
/// holds `##[`. drover's own annotations start a real line with `::error file=` or
/// `::warning file=`.
fn forged_commands(text: &str, annotations: bool) -> Vec<String> {
    let mut forged = Vec::new();
    for line in text.lines() {
        let own = annotations
            && (line.starts_with("::error file=") || line.starts_with("::warning file="));
        for (at, piece) in line.split(BREAKS).enumerate() {
            let command = piece.trim_start().starts_with("::") || piece.contains("##[");
            if command && !(own && at == 0 && !piece.contains("##[")) {
                forged.push(line.to_string());
            }
        }
    }
    forged
}

/// What a Markdown reader would take as Markdown: every line outside fenced blocks with
/// its code spans taken out. A line of a fenced block indented less than its fence
/// would fall out of the list item holding the block: it counts as Markdown.
fn live_markdown(markdown: &str) -> String {
    let mut live = String::new();
    let mut fence: Option<(usize, usize)> = None;
    for line in markdown
        .split("\r\n")
        .flat_map(|line| line.split(['\r', '\n']))
    {
        let text = line.trim_start_matches(' ');
        let indent = line.len() - text.len();
        let run = text.len() - text.trim_start_matches('`').len();
        match fence {
            Some((fence_indent, _)) if !line.is_empty() && indent < fence_indent => {
                fence = None;
                live.push_str(line);
                live.push('\n');
            }
            Some((_, length)) => {
                if run >= length && text[run..].trim().is_empty() {
                    fence = None;
                }
            }
            None if run >= 3 && !text[run..].contains('`') => fence = Some((indent, run)),
            None => {
                live.push_str(&without_code_spans(line));
                live.push('\n');
            }
        }
    }
    live
}

/// A line with its code spans (a run of backticks up to the next run of the same
/// length) taken out.
fn without_code_spans(line: &str) -> String {
    let chars: Vec<char> = line.chars().collect();
    let run_at = |at: usize| chars[at..].iter().take_while(|c| **c == '`').count();
    let mut out = String::new();
    let mut at = 0;
    while at < chars.len() {
        if chars[at] != '`' {
            out.push(chars[at]);
            at += 1;
            continue;
        }
        let open = run_at(at);
        let mut end = at + open;
        let mut closed = None;
        while end < chars.len() {
            let run = run_at(end);
            if run == open {
                closed = Some(end + run);
                break;
            }
            end += run.max(1);
        }
        match closed {
            Some(after) => at = after,
            None => {
                out.extend(&chars[at..at + open]);
                at += open;
            }
        }
    }
    out
}

/// The headings and HTML a reader of `markdown` would see that drover did not write.
fn forged_markdown(markdown: &str) -> Vec<String> {
    live_markdown(markdown)
        .lines()
        .filter(|line| {
            let heading = line.trim_start().starts_with('#')
                && !line.starts_with("## drover: ")
                && !line.starts_with("### ");
            heading || line.contains("FORGED") || line.contains('<')
        })
        .map(str::to_string)
        .collect()
}

/// `text` as a YAML double-quoted scalar: every character but printable ASCII escaped.
fn yaml(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            ' '..='~' => out.push(c),
            c => out.push_str(&format!("\\u{:04x}", u32::from(c))),
        }
    }
    out.push('"');
    out
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `drover ARGS` on GitHub Actions, its step summary in `dir`: the output and the step
/// summary.
fn on_github(dir: &Path, args: &[&std::ffi::OsStr]) -> (Output, String) {
    let step_summary = dir.join("step-summary.md");
    let output = drover_without_proxy()
        .args(args)
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_STEP_SUMMARY", &step_summary)
        .env("GITHUB_WORKSPACE", dir)
        .output()
        .unwrap();
    let summary = std::fs::read_to_string(&step_summary).unwrap_or_default();
    (output, summary)
}

#[test]
fn a_models_text_never_starts_a_log_line_a_workflow_command_or_a_heading() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    let command = format!("curl \"{PAYLOAD}\"");
    let tool = format!("Bash{PAYLOAD}");
    // A check whose output the model's code decides.
    let check = "printf 'x\\r## FORGED\\n::error::FORGED\\n##[error]FORGED\\n'; exit 1";
    let spec = write_spec(
        dir.path(),
        "task.yaml",
        &format!(
            "version: 1\nname: t\nprompt: p\nworkspace: ws\nmodel:\n  provider: script\n  script:\n    - tool_calls: [{{ name: Bash, input: {{ command: {} }} }}]\n    - tool_calls: [{{ name: {}, input: {{ command: {} }} }}]\n    - text: {}\npermissions:\n  allow: [\"Bash(echo *)\"]\nchecks:\n  - name: c\n    run: {}\n    sandbox: off\n",
            yaml(&command),
            yaml(&tool),
            yaml(PAYLOAD),
            yaml(PAYLOAD),
            yaml(check)
        ),
    );
    let artifacts = dir.path().join("out");
    let (output, step_summary) = on_github(
        dir.path(),
        &[
            "run".as_ref(),
            spec.as_os_str(),
            "--artifacts".as_ref(),
            artifacts.as_os_str(),
        ],
    );
    common::assert_exit(&output, 1);
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    // The payload was shown (the denial, the unknown tool), one line each.
    assert!(stderr.contains("denied Bash"), "{stderr}");
    assert!(stderr.contains("::stop-commands::tok"), "{stderr}");
    assert_eq!(
        forged_commands(&stderr, false),
        Vec::<String>::new(),
        "{stderr}"
    );
    assert_eq!(
        forged_commands(&stdout, true),
        Vec::<String>::new(),
        "{stdout}"
    );
    assert!(stdout.contains("::warning file=task.yaml,"), "{stdout}");
    // summary.md and the job summary: drover's headings only.
    let summary_md = std::fs::read_to_string(artifacts.join("summary.md")).unwrap();
    assert!(summary_md.contains("**Denied tool calls**"), "{summary_md}");
    assert!(summary_md.contains("**Failed checks**"), "{summary_md}");
    assert_eq!(
        forged_markdown(&summary_md),
        Vec::<String>::new(),
        "{summary_md}"
    );
    assert_eq!(step_summary, summary_md);
}

#[test]
#[cfg_attr(
    not(drover_has_python_mcp),
    ignore = "needs the Python MCP SDK in .ci/venv: .ci/run installs it"
)]
fn an_mcp_servers_error_never_starts_a_log_line_or_a_workflow_command() {
    let (python, _) = crate::mcp_modern::modern_server();
    let script = common::repo().join("tests/cli/fixtures/hostile_text_server.py");
    let server = format!(
        "    hostile:\n      command: {}\n      args: [{}]\n",
        serde_json::to_string(&python).unwrap(),
        serde_json::to_string(&script).unwrap()
    );
    let calls = format!(
        "{{ name: mcp__hostile__fail, input: {{ message: {} }} }}",
        yaml(&format!(
            "x ##[add-mask]s3cret\r::error::FORGED\u{2028}::stop-commands::tok{PAYLOAD}"
        ))
    );
    let (dir, spec) = crate::mcp::task(&server, "mcp__hostile", &calls);
    let artifacts = dir.path().join("out");
    let (output, _) = on_github(
        dir.path(),
        &[
            "run".as_ref(),
            spec.as_os_str(),
            "--artifacts".as_ref(),
            artifacts.as_os_str(),
        ],
    );
    let stderr = text(&output.stderr);
    common::assert_exit(&output, 0);
    assert!(stderr.contains("✗ mcp__hostile__fail: "), "{stderr}");
    assert!(stderr.contains("add-mask]s3cret"), "{stderr}");
    assert_eq!(
        forged_commands(&stderr, false),
        Vec::<String>::new(),
        "{stderr}"
    );
    assert_eq!(
        forged_commands(&text(&output.stdout), true),
        Vec::<String>::new()
    );
}

/// A finished run's artifacts directory in `dir/name` holding task `t` (no tool
/// calls, so no sandbox is needed).
fn artifacts(dir: &Path, name: &str) -> PathBuf {
    std::fs::create_dir_all(dir.join("ws")).unwrap();
    let spec = write_spec(
        dir,
        "plain.yaml",
        "version: 1\nname: t\nprompt: p\nworkspace: ws\nmodel:\n  provider: script\n  script:\n    - text: done\n",
    );
    let artifacts = dir.join(name);
    common::assert_exit(&common::run_spec(&spec, &artifacts), 0);
    artifacts
}

#[test]
fn a_hostile_summary_json_forges_no_heading_in_the_merged_summary() {
    let dir = tempfile::tempdir().unwrap();
    let shard = artifacts(dir.path(), "shard");
    let path = shard.join("summary.json");
    let mut summary: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let task = &mut summary["tasks"][0];
    task["status"] = "failed".into();
    task["reason"] = "checks_failed".into();
    task["message"] = PAYLOAD.into();
    task["files_changed"] = serde_json::json!([PAYLOAD]);
    task["denials"] = serde_json::json!([{
        "tool_use_id": PAYLOAD, "tool": PAYLOAD, "input": {}, "rule": PAYLOAD, "reason": PAYLOAD
    }]);
    task["checks"] = serde_json::json!([
        { "name": PAYLOAD, "command": PAYLOAD, "exit_code": 1, "passed": false,
          "timed_out": false, "duration_ms": 1, "output_tail": PAYLOAD },
        { "name": PAYLOAD, "command": PAYLOAD, "exit_code": null, "passed": false,
          "timed_out": false, "duration_ms": 1, "output_tail": PAYLOAD, "expectation": true }
    ]);
    task["todos"] =
        serde_json::json!([{ "content": PAYLOAD, "status": "pending", "activeForm": PAYLOAD }]);
    task["drift"] = serde_json::json!({ "count": 1, "call": 1, "tool": PAYLOAD, "tool_use_id": PAYLOAD, "diff": PAYLOAD });
    task["output"] = serde_json::json!({ "answer": PAYLOAD });
    std::fs::write(&path, summary.to_string()).unwrap();
    let out = dir.path().join("merged");
    let (output, step_summary) = on_github(
        dir.path(),
        &[
            "report".as_ref(),
            "merge".as_ref(),
            shard.as_os_str(),
            "--out".as_ref(),
            out.as_os_str(),
        ],
    );
    common::assert_exit(&output, 1);
    let merged = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(merged.contains("**Denied tool calls**"), "{merged}");
    assert_eq!(forged_markdown(&merged), Vec::<String>::new(), "{merged}");
    assert_eq!(step_summary, merged);
    assert_eq!(
        forged_commands(&text(&output.stdout), false),
        Vec::<String>::new()
    );
    assert_eq!(
        forged_commands(&text(&output.stderr), false),
        Vec::<String>::new()
    );
}

/// Every file under `dir` (following nothing), with its text.
fn files_under(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let kind = entry.file_type().unwrap();
        assert!(
            !kind.is_symlink(),
            "a link in --out: {}",
            entry.path().display()
        );
        if kind.is_dir() {
            found.extend(files_under(&entry.path()));
        } else {
            let bytes = std::fs::read(entry.path()).unwrap();
            found.push((entry.path(), text(&bytes)));
        }
    }
    found
}

#[test]
fn report_merge_copies_no_link_out_of_its_inputs() {
    use std::os::unix::fs::symlink;
    let dir = tempfile::tempdir().unwrap();
    let private = dir.path().join("private");
    std::fs::create_dir(&private).unwrap();
    std::fs::write(private.join("id_ed25519"), "SECRET-KEY-MATERIAL").unwrap();
    // The task folder a link to a private directory.
    let shard = artifacts(dir.path(), "shard");
    std::fs::remove_dir_all(shard.join("t")).unwrap();
    symlink(&private, shard.join("t")).unwrap();
    let out = dir.path().join("merged");
    let output = drover()
        .args(["report", "merge"])
        .arg(&shard)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    common::assert_exit(&output, 0);
    for (path, content) in files_under(&out) {
        assert!(
            !content.contains("SECRET-KEY-MATERIAL"),
            "{} holds the secret",
            path.display()
        );
    }
    assert!(
        text(&output.stderr).contains("is a symbolic link"),
        "{}",
        text(&output.stderr)
    );
    // A file in the task folder a link to the private file.
    let shard = artifacts(dir.path(), "shard2");
    std::fs::remove_file(shard.join("t/diff.patch")).unwrap();
    symlink(private.join("id_ed25519"), shard.join("t/diff.patch")).unwrap();
    let out = dir.path().join("merged2");
    let output = drover()
        .args(["report", "merge"])
        .arg(&shard)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    common::assert_exit(&output, 0);
    assert!(out.join("t/transcript.jsonl").is_file());
    for (path, content) in files_under(&out) {
        assert!(
            !content.contains("SECRET-KEY-MATERIAL"),
            "{} holds the secret",
            path.display()
        );
    }
    // summary.json a link: refused.
    let shard = artifacts(dir.path(), "shard3");
    std::fs::remove_file(shard.join("summary.json")).unwrap();
    symlink(
        dir.path().join("shard2/summary.json"),
        shard.join("summary.json"),
    )
    .unwrap();
    let output = drover()
        .args(["report", "merge"])
        .arg(&shard)
        .arg("--out")
        .arg(dir.path().join("merged3"))
        .output()
        .unwrap();
    common::assert_exit(&output, 2);
    assert!(
        text(&output.stderr).contains("summary.json is a symbolic link"),
        "{}",
        text(&output.stderr)
    );
}

#[test]
fn a_recordings_check_commands_are_shown_on_one_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    let check = format!("true {PAYLOAD}");
    let spec = write_spec(
        dir.path(),
        "task.yaml",
        &format!(
            "version: 1\nname: t\nprompt: p\nworkspace: ws\nmodel:\n  provider: script\n  script:\n    - text: done\nchecks:\n  - name: c\n    run: {}\n    sandbox: off\n",
            yaml(&check)
        ),
    );
    let recorded = dir.path().join("recorded");
    common::run_spec(&spec, &recorded);
    let transcript = recorded.join("t/transcript.jsonl");
    // Not running the recorded checks: each is named; running them: each is named too.
    for extra in [&[][..], &["--checks"][..]] {
        let replayed = dir.path().join(format!("replayed{}", extra.len()));
        let mut args = vec![
            "replay".as_ref(),
            transcript.as_os_str(),
            "--artifacts".as_ref(),
            replayed.as_os_str(),
        ];
        args.extend(extra.iter().map(std::ffi::OsStr::new));
        let (output, _) = on_github(dir.path(), &args);
        let stderr = text(&output.stderr);
        assert!(stderr.contains("::stop-commands::tok"), "{stderr}");
        assert_eq!(
            forged_commands(&stderr, false),
            Vec::<String>::new(),
            "{stderr}"
        );
    }
}
