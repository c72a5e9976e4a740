//! `drover resume` of a `repo:` task: the spec (which the user vouches for) names the
//! repository, the recording only the commit the task started from; the resumed task
//! clones that commit again, whatever the ref names by now, and goes on. A commit the
//! repository no longer holds ends the resume `repo_refused`.

use std::path::Path;
use std::process::Command;

use crate::common::{events, resume_with, run_spec_with, transcript, write_spec};
use crate::repo::{git, result, served_repo};

/// A task cloning `url` whose scripted agent appends to `app.txt`, stopped by
/// `max_turns: 1` before its answer.
fn stopped_task(dir: &Path, url: &str) -> std::path::PathBuf {
    let spec = write_spec(
        dir,
        "task.yaml",
        &format!(
            "version: 1\nname: t\nprompt: p\nrepo:\n  url: {url}\nsandbox: off\nlimits: {{ max_turns: 1 }}\nmodel:\n  provider: script\n  script:\n    - tool_calls: [ {{ name: Bash, input: {{ command: 'echo resumed >> app.txt' }} }} ]\n    - text: done\npermissions:\n  allow: [Bash]\n"
        ),
    );
    let output = run_spec_with(&spec, &dir.join("out"), &[]);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    assert_eq!(result(&dir.join("out"), "t")["reason"], "max_turns");
    dir.join("out/t")
}

#[test]
fn a_resumed_repo_task_clones_the_recorded_commit_not_the_refs_new_head() {
    let dir = tempfile::tempdir().unwrap();
    let (bare, _, second) = served_repo(dir.path(), "service-a");
    let url = format!("file://{}", bare.display());
    let task = stopped_task(dir.path(), &url);
    // The branch moves on before the resume.
    let work = dir.path().join("service-a-work");
    std::fs::write(work.join("app.txt"), "version three\n").unwrap();
    git(&work, &["commit", "--quiet", "-am", "three"]);
    git(&work, &["push", "--quiet", &bare.to_string_lossy(), "main"]);
    assert_ne!(git(&bare, &["rev-parse", "main"]), second);

    let output = resume_with(&task, &["--max-turns", "3"]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let lines = transcript(&task.join("transcript.jsonl"));
    assert_eq!(events(&lines, "resume").len(), 1);
    let ended = result(&dir.path().join("out"), "t");
    assert_eq!(ended["status"], "passed", "{ended}");
    assert_eq!(ended["start"]["commit"], second.as_str());
    assert_eq!(ended["start"]["repository"]["url"], url.as_str());
    // The diff applies to a clone of the recorded commit.
    let fresh = dir.path().join("fresh");
    let cloned = Command::new("git")
        .args(["clone", "--quiet"])
        .arg(&bare)
        .arg(&fresh)
        .output()
        .unwrap();
    assert!(cloned.status.success(), "{cloned:?}");
    git(&fresh, &["checkout", "--quiet", "--detach", &second]);
    let patch = task.join("diff.patch");
    git(&fresh, &["apply", &patch.to_string_lossy()]);
    assert_eq!(
        std::fs::read_to_string(fresh.join("app.txt")).unwrap(),
        "version two\nresumed\n"
    );
}

#[test]
fn a_recorded_commit_the_repository_no_longer_holds_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (bare, _, second) = served_repo(dir.path(), "service-a");
    let url = format!("file://{}", bare.display());
    let task = stopped_task(dir.path(), &url);
    // The repository is made again with another history.
    std::fs::remove_dir_all(&bare).unwrap();
    std::fs::remove_dir_all(dir.path().join("service-a-work")).unwrap();
    let other = dir.path().join("other");
    std::fs::create_dir(&other).unwrap();
    // Commits made in the same second with the same content are the same commits: the
    // new history starts a second later.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let (remade, _, head) = served_repo(&other, "service-a");
    assert_ne!(head, second);
    std::fs::rename(&remade, &bare).unwrap();

    let output = resume_with(&task, &["--max-turns", "3"]);
    assert_eq!(output.status.code(), Some(3), "{output:?}");
    let ended = result(&dir.path().join("out"), "t");
    assert_eq!(ended["reason"], "repo_refused", "{ended}");
    let message = ended["message"].as_str().unwrap();
    assert!(
        message.contains(&second) && message.contains(&url),
        "{message}"
    );
}
