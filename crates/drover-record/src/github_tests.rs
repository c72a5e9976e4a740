// Test-only module: its parent includes it under #[cfg(test)].
use std::path::PathBuf;

use super::*;
use crate::junit::tests::sample_run;

#[test]
fn data_and_properties_are_escaped_per_githubs_rules() {
    assert_eq!(escape_data("50% done\r\nnext"), "50%25 done%0D%0Anext");
    assert_eq!(
        escape_data("%0A"),
        "%250A",
        "an encoded-looking text stays literal"
    );
    assert_eq!(escape_property("a: b, c%\nd"), "a%3A b%2C c%25%0Ad");
}

#[test]
fn failed_tasks_and_checks_become_errors_and_denials_warnings() {
    let lines = annotations(&sample_run(), None);
    assert_eq!(
        lines[0],
        "::error file=tasks/calc.yaml,title=drover%3A task refactor failed (max_turns)::max_turns: stopped after 3 turns (limit 3)%0A3 turns, 1545 tokens, cost n/a; transcript and diff: drover-artifacts/refactor"
    );
    assert_eq!(
        lines[1],
        "::warning file=tasks/calc.yaml,title=drover%3A task refactor%3A 1 tool call denied::Bash: denied by rule Bash(git push *)"
    );
    // Every line is one line: the messages' newlines are encoded.
    assert!(lines.iter().all(|line| !line.contains('\n')));
    let lint: Vec<&String> = lines
        .iter()
        .filter(|line| line.contains("file=tasks/lint.yaml"))
        .collect();
    assert_eq!(lint.len(), 4, "{lint:#?}");
    assert!(lint[0].starts_with(
        "::error file=tasks/lint.yaml,title=drover%3A task lint failed (checks_failed)::checks_failed: 2 of 3 checks failed%0A"
    ));
    assert!(lint[1].starts_with(
        "::error file=tasks/lint.yaml,title=drover%3A task lint%3A check clippy failed::$ run clippy%0Aexited with code 101%0A"
    ));
    assert!(lint[1].contains("unused variable%0Awhat ]]> is this"));
    assert!(lint[2].contains("check slow failed::$ run slow%0Atimed out%0Astill running"));
    assert!(lint[3].starts_with(
        "::error file=tasks/lint.yaml,title=drover%3A task offline could not run (provider_error)::provider_error: connection refused"
    ));
    assert!(
        !lines.iter().any(|line| line.contains("fix-add")),
        "a passed task without denials is not annotated"
    );
}

#[test]
fn annotation_paths_are_relative_to_the_checkout() {
    let mut run = sample_run();
    run.tasks.truncate(2);
    run.tasks[1].spec_path = PathBuf::from("/home/runner/work/repo/repo/tasks/x.yaml");
    let lines = annotations(&run, Some(Path::new("/home/runner/work/repo/repo")));
    assert!(
        lines.iter().all(|line| line.contains("file=tasks/")),
        "{lines:#?}"
    );
}

#[test]
fn outside_github_actions_nothing_happens() {
    let dir = tempfile::tempdir().unwrap();
    let summary = dir.path().join("summary");
    let env = GithubEnv {
        actions: false,
        step_summary: Some(summary.clone()),
        workspace: None,
    };
    let mut out = Vec::new();
    report_to_github(&sample_run(), &env, true, &mut out).unwrap();
    assert!(out.is_empty());
    assert!(!summary.exists());
}

#[test]
fn the_step_summary_is_appended_not_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let summary = dir.path().join("step_summary.md");
    std::fs::write(&summary, "# from an earlier step\n").unwrap();
    let env = GithubEnv {
        actions: true,
        step_summary: Some(summary.clone()),
        workspace: None,
    };
    let mut out = Vec::new();
    report_to_github(&sample_run(), &env, true, &mut out).unwrap();
    report_to_github(&RunReport::default(), &env, true, &mut out).unwrap();
    let text = std::fs::read_to_string(&summary).unwrap();
    assert!(text.starts_with("# from an earlier step\n## drover: 1 passed, 2 failed, 1 error\n"));
    assert!(text.ends_with("## drover: 0 passed, 0 failed, 0 errors\n\nNo tasks ran.\n"));
    let printed = String::from_utf8(out).unwrap();
    assert_eq!(printed.lines().count(), 6, "{printed}");
    assert!(printed.lines().all(|line| line.starts_with("::")));
}

#[test]
fn a_huge_summary_is_cut_at_githubs_limit() {
    let dir = tempfile::tempdir().unwrap();
    let summary = dir.path().join("step_summary.md");
    append_step_summary(&summary, &"é".repeat(STEP_SUMMARY_MAX)).unwrap();
    let text = std::fs::read_to_string(&summary).unwrap();
    assert!(text.len() < 1024 * 1024);
    assert!(text.ends_with("has all of it._\n"));
}

#[test]
fn a_cut_summary_splits_no_code_span_and_leaves_no_block_open() {
    use crate::markdown::{code, fenced, tests::live_text};
    let dir = tempfile::tempdir().unwrap();
    let item = format!("- {}\n", code("<h2>FORGED</h2> ## FORGED"));
    // The limit inside a code span; then inside a fenced block.
    let spans = item.repeat(STEP_SUMMARY_MAX / item.len() + 10);
    let mut block = item.repeat((STEP_SUMMARY_MAX - 100) / item.len());
    block.push_str(&fenced(&"## FORGED\n".repeat(100), "text", "  "));
    for (name, markdown) in [("spans.md", spans), ("block.md", block)] {
        let summary = dir.path().join(name);
        append_step_summary(&summary, &markdown).unwrap();
        let text = std::fs::read_to_string(&summary).unwrap();
        assert!(text.len() < 1024 * 1024);
        let live = live_text(&text);
        assert!(!live.contains("FORGED"), "{name}: {}", tail(&live, 500));
        assert!(
            live.trim_end().ends_with("has all of it._"),
            "{name}: {}",
            tail(&live, 500)
        );
    }
}

#[test]
fn terminal_escapes_and_control_characters_never_reach_an_annotation() {
    let mut run = sample_run();
    run.tasks.truncate(3);
    let lint = &mut run.tasks[2];
    lint.name = "li\u{1b}[1mnt".into();
    lint.message = "\u{1b}[31merror\u{1b}[0m: bad\u{7}\u{0}thing".into();
    for check in &mut lint.checks {
        check.name = format!("\u{1b}[33m{}\u{1b}[0m", check.name);
        check.output_tail = "\u{1b}[1;31merror[E0425]\u{1b}[0m: unused\u{8}\r\n".into();
    }
    let lines = annotations(&run, None);
    assert!(!lines.is_empty());
    for line in &lines {
        assert!(
            !line.chars().any(|c| c.is_control()),
            "a control character in {line:?}"
        );
        assert!(!line.contains("[31m") && !line.contains("[0m"), "{line}");
    }
    let task = lines
        .iter()
        .find(|line| line.contains("checks_failed"))
        .unwrap();
    assert!(task.contains("title=drover%3A task lint failed"), "{task}");
    assert!(task.contains("::error: bad"), "{task}");
    let check = lines
        .iter()
        .find(|line| line.contains("check clippy"))
        .unwrap();
    assert!(check.contains("error[E0425]: unused"), "{check}");
}

#[test]
fn without_annotate_only_the_step_summary_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let summary = dir.path().join("step_summary.md");
    let env = GithubEnv {
        actions: true,
        step_summary: Some(summary.clone()),
        workspace: None,
    };
    let mut out = Vec::new();
    report_to_github(&sample_run(), &env, false, &mut out).unwrap();
    assert!(out.is_empty(), "{}", String::from_utf8_lossy(&out));
    let text = std::fs::read_to_string(&summary).unwrap();
    assert!(text.starts_with("## drover: 1 passed, 2 failed, 1 error\n"));
}
