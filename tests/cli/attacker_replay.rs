//! Attacker suite, transcripts: a replay never runs a transcript's checks unless asked,
//! and a transcript that was edited or cut short is detected and not replayed.

use crate::common;

use std::path::Path;

use common::{drover, write_spec};

fn recorded(dir: &Path) -> std::path::PathBuf {
    std::fs::create_dir_all(dir.join("ws")).unwrap();
    std::fs::write(dir.join("ws/a.txt"), "a\n").unwrap();
    let marker = dir.join("check-ran");
    let body = format!(
        "version: 1\nname: t\nprompt: p\nworkspace: ws\nmodel:\n  provider: script\n  script:\n    - tool_calls: [{{ name: Read, input: {{ file_path: a.txt }} }}]\n    - text: done\nchecks:\n  - name: marker\n    run: touch {}\n    sandbox: off\n",
        marker.display()
    );
    let spec = write_spec(dir, "task.yaml", &body);
    let output = drover()
        .arg("run")
        .arg(&spec)
        .arg("--artifacts")
        .arg(dir.join("out"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert!(marker.exists());
    std::fs::remove_file(&marker).unwrap();
    dir.join("out/t/transcript.jsonl")
}

#[test]
fn a_replay_runs_checks_only_when_asked_and_sandboxed() {
    let dir = tempfile::tempdir().unwrap();
    let transcript = recorded(dir.path());
    let marker = dir.path().join("check-ran");
    let output = drover()
        .current_dir(dir.path())
        .arg("replay")
        .arg(&transcript)
        .arg("--artifacts")
        .arg(dir.path().join("replayed"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("not running the 1 check recorded"),
        "{stderr}"
    );
    assert!(
        stderr.contains("touch "),
        "shows what it would run: {stderr}"
    );
    assert!(!marker.exists(), "a replay ran a check it was not asked to");
    // Asked: the check runs, and in the sandbox whatever the transcript says (the marker
    // is outside the workspace, so the sandboxed touch fails).
    let output = drover()
        .current_dir(dir.path())
        .arg("replay")
        .arg(&transcript)
        .arg("--checks")
        .arg("--artifacts")
        .arg(dir.path().join("replayed2"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("will run check marker"), "{stderr}");
    assert!(!marker.exists(), "the replayed check ran unsandboxed");
    assert_eq!(output.status.code(), Some(1), "{stderr}");
}

#[test]
fn edited_or_truncated_transcripts_are_detected() {
    let dir = tempfile::tempdir().unwrap();
    let transcript = recorded(dir.path());
    let verify = |path: &Path| {
        drover()
            .arg("transcript")
            .arg("verify")
            .arg(path)
            .output()
            .unwrap()
    };
    let intact = verify(&transcript);
    assert_eq!(intact.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&intact.stdout).contains("intact"));

    let text = std::fs::read_to_string(&transcript).unwrap();
    let edited = dir.path().join("edited.jsonl");
    std::fs::write(&edited, text.replacen("\"turn\":1,", "\"turn\":5,", 1)).unwrap();
    assert_ne!(std::fs::read_to_string(&edited).unwrap(), text);
    let output = verify(&edited);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("does not match"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let replay = drover()
        .current_dir(dir.path())
        .arg("replay")
        .arg(&edited)
        .arg("--artifacts")
        .arg(dir.path().join("r"))
        .output()
        .unwrap();
    assert_eq!(replay.status.code(), Some(2));

    let lines: Vec<&str> = text.lines().collect();
    let truncated = dir.path().join("truncated.jsonl");
    std::fs::write(
        &truncated,
        format!("{}\n", lines[..lines.len() - 1].join("\n")),
    )
    .unwrap();
    assert_eq!(verify(&truncated).status.code(), Some(1));
    let cut = dir.path().join("cut.jsonl");
    std::fs::write(&cut, &text[..text.len() - 10]).unwrap();
    assert_eq!(verify(&cut).status.code(), Some(1));
    assert_eq!(
        verify(&dir.path().join("missing.jsonl")).status.code(),
        Some(2)
    );
}
