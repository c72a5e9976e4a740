// Test-only module: its parent includes it under #[cfg(test)].
use std::os::unix::fs::symlink;
use std::path::Path;

use super::*;

/// A policy that denies no read.
fn allowed(_: &str) -> Option<String> {
    None
}

fn default_files() -> Vec<Wanted> {
    crate::spec::DEFAULT_INSTRUCTIONS
        .iter()
        .map(|path| Wanted {
            path: path.to_string(),
            named_at: None,
        })
        .collect()
}

fn named(path: &str) -> Wanted {
    Wanted {
        path: path.to_string(),
        named_at: Some(Position {
            path: "task.yaml".into(),
            line: 7,
            column: 5,
        }),
    }
}

fn write(dir: &Path, path: &str, text: &str) {
    let file = dir.join(path);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(file, text).unwrap();
}

fn paths(read: &Instructions) -> Vec<(&str, Option<&str>)> {
    read.files
        .iter()
        .map(|f| (f.path.as_str(), f.imported_by.as_deref()))
        .collect()
}

#[test]
fn the_default_files_are_read_in_order_and_missing_ones_skipped() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "AGENTS.md", "Run make test.\n");
    write(dir.path(), ".claude/CLAUDE.md", "Use tabs.\n");
    write(dir.path(), "CLAUDE.md", " \n\n");
    let read = read_instructions(dir.path(), &default_files(), &allowed).unwrap();
    assert_eq!(
        paths(&read),
        [(".claude/CLAUDE.md", None), ("AGENTS.md", None)]
    );
    assert_eq!(read.files[1].text, "Run make test.\n");
    assert!(read.notes.is_empty(), "{:?}", read.notes);
    let empty = tempfile::tempdir().unwrap();
    let read = read_instructions(empty.path(), &default_files(), &allowed).unwrap();
    assert!(read.files.is_empty() && read.notes.is_empty());
}

#[test]
fn a_file_the_spec_names_must_be_there() {
    let dir = tempfile::tempdir().unwrap();
    let error = read_instructions(dir.path(), &[named("docs/agents.md")], &allowed).unwrap_err();
    assert_eq!(
        error.to_string(),
        "task.yaml:7:5: instructions: docs/agents.md does not exist in the workspace"
    );
    std::fs::create_dir(dir.path().join("docs")).unwrap();
    std::fs::create_dir(dir.path().join("docs/agents.md")).unwrap();
    assert!(read_instructions(dir.path(), &[named("docs/agents.md")], &allowed).is_err());
}

#[test]
fn a_link_inside_the_workspace_is_read_once_and_a_link_out_of_it_never() {
    let outside = tempfile::tempdir().unwrap();
    write(outside.path(), "secret.md", "the deploy key is hunter2\n");
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "AGENTS.md", "Shared instructions.\n");
    symlink("AGENTS.md", dir.path().join("CLAUDE.md")).unwrap();
    std::fs::create_dir(dir.path().join(".claude")).unwrap();
    symlink(
        outside.path().join("secret.md"),
        dir.path().join(".claude/CLAUDE.md"),
    )
    .unwrap();
    let read = read_instructions(dir.path(), &default_files(), &allowed).unwrap();
    assert_eq!(paths(&read), [("CLAUDE.md", None)], "AGENTS.md only once");
    assert_eq!(read.files[0].text, "Shared instructions.\n");
    assert_eq!(read.notes.len(), 1, "{:?}", read.notes);
    assert!(
        read.notes[0].contains(
            ".claude/CLAUDE.md not read: it is a symbolic link that leads out of the workspace"
        ),
        "{:?}",
        read.notes
    );
    let all: String = read.files.iter().map(|f| f.text.as_str()).collect();
    assert!(!all.contains("hunter2"));
    // Named by the spec, the same link is an error, not a note.
    let error = read_instructions(dir.path(), &[named(".claude/CLAUDE.md")], &allowed).unwrap_err();
    assert!(
        error.to_string().contains("leads out of the workspace"),
        "{error}"
    );
    // A link to a directory out of the workspace is no way around it.
    symlink(outside.path(), dir.path().join("out")).unwrap();
    assert!(read_instructions(dir.path(), &[named("out/secret.md")], &allowed).is_err());
}

#[test]
fn a_hard_link_or_a_fifo_is_not_read() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "real.md", "text\n");
    std::fs::hard_link(dir.path().join("real.md"), dir.path().join("AGENTS.md")).unwrap();
    let read = read_instructions(dir.path(), &default_files(), &allowed).unwrap();
    assert!(read.files.is_empty());
    assert!(read.notes[0].contains("hard links"), "{:?}", read.notes);
    let fifo = dir.path().join("CLAUDE.md");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
    // Opening does not block on the FIFO; it is refused.
    let error = read_instructions(dir.path(), &[named("CLAUDE.md")], &allowed).unwrap_err();
    assert!(error.to_string().contains("cannot be read"), "{error}");
}

#[test]
fn large_files_are_cut_at_a_line_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let line = "x".repeat(99) + "\n";
    let big = line.repeat(1000);
    write(dir.path(), "CLAUDE.md", &big);
    let read = read_instructions(dir.path(), &default_files(), &allowed).unwrap();
    let file = &read.files[0];
    assert_eq!(file.cut_from, Some(100_000));
    assert!(file.text.len() as u64 <= MAX_FILE_BYTES);
    assert!(file.text.ends_with('\n'), "cut at a whole line");
    assert!(
        read.notes[0].contains("CLAUDE.md cut to its first"),
        "{:?}",
        read.notes
    );
    // All files together stay within the total.
    write(dir.path(), ".claude/CLAUDE.md", &big);
    write(dir.path(), "AGENTS.md", &big);
    let read = read_instructions(dir.path(), &default_files(), &allowed).unwrap();
    let total: usize = read.files.iter().map(|f| f.text.len()).sum();
    assert!(total <= MAX_TOTAL_BYTES, "{total}");
    assert_eq!(read.files.len(), 2, "the third is left out");
    assert!(
        read.notes
            .iter()
            .any(|n| n.contains("AGENTS.md not read: the instructions already reach")),
        "{:?}",
        read.notes
    );
}

#[test]
fn imports_are_read_relative_to_the_importing_file_and_stay_in_the_workspace() {
    let outside = tempfile::tempdir().unwrap();
    write(outside.path(), "mine.md", "private\n");
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "CLAUDE.md",
        "See @docs/style.md and @README.md.\nPersonal: @~/.claude/mine.md\nAlso @../escape.md and @nobody\n",
    );
    write(
        dir.path(),
        "docs/style.md",
        "Style: see @../README.md and @git.md\n",
    );
    write(
        dir.path(),
        "docs/git.md",
        "Rebase, never merge. Back to @../CLAUDE.md\n",
    );
    write(dir.path(), "README.md", "# Project\n");
    let read = read_instructions(dir.path(), &default_files(), &allowed).unwrap();
    assert_eq!(
        paths(&read),
        [
            ("CLAUDE.md", None),
            ("docs/style.md", Some("CLAUDE.md")),
            ("README.md", Some("docs/style.md")),
            ("docs/git.md", Some("docs/style.md")),
        ]
    );
    let notes = read.notes.join("\n");
    assert!(notes.contains("@~/.claude/mine.md not imported"), "{notes}");
    assert!(notes.contains("@../escape.md not imported"), "{notes}");
    assert!(
        !notes.contains("nobody"),
        "an @mention that is no file: {notes}"
    );
    assert!(!read.files.iter().any(|f| f.text.contains("private")));
}

#[test]
fn imports_stop_at_five_hops() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "CLAUDE.md", "@h1.md\n");
    for hop in 1..=6 {
        write(
            dir.path(),
            &format!("h{hop}.md"),
            &format!("hop {hop} @h{}.md\n", hop + 1),
        );
    }
    let read = read_instructions(dir.path(), &default_files(), &allowed).unwrap();
    let names: Vec<&str> = read.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(
        names,
        ["CLAUDE.md", "h1.md", "h2.md", "h3.md", "h4.md", "h5.md"]
    );
    assert!(
        read.notes
            .iter()
            .any(|n| n.contains("h5.md: @h6.md not imported: imports are followed 5 deep")),
        "{:?}",
        read.notes
    );
}

#[test]
fn import_targets_are_workspace_relative() {
    assert_eq!(
        import_target("CLAUDE.md", "docs/a.md").as_deref(),
        Some("docs/a.md")
    );
    assert_eq!(
        import_target("docs/x.md", "../a.md").as_deref(),
        Some("a.md")
    );
    assert_eq!(
        import_target("docs/x.md", "./b/c.md").as_deref(),
        Some("docs/b/c.md")
    );
    assert_eq!(import_target("CLAUDE.md", "../a.md"), None);
    assert_eq!(import_target("CLAUDE.md", "/etc/passwd"), None);
    assert_eq!(import_target("CLAUDE.md", "~/x.md"), None);
}

/// A file the task's policy would not let the agent Read is not given as instructions,
/// named or imported; nor is anything in git's own directory.
#[test]
fn a_file_the_policy_denies_or_gits_own_is_not_read() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".git")).unwrap();
    std::fs::write(
        dir.path().join(".git/config"),
        "extraheader = AUTHORIZATION: basic x\n",
    )
    .unwrap();
    std::fs::write(dir.path().join(".env"), "TOKEN=x\n").unwrap();
    std::fs::write(
        dir.path().join("AGENTS.md"),
        "Read @.git/config and @.env and @docs.md\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("docs.md"), "Docs.\n").unwrap();
    let deny_env =
        |relative: &str| (relative == ".env").then(|| "denied by Read(.env)".to_string());
    let read = read_instructions(dir.path(), &default_files(), &deny_env).unwrap();
    let paths: Vec<&str> = read.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, vec!["AGENTS.md", "docs.md"]);
    let notes = read.notes.join("\n");
    assert!(
        notes.contains("@.git/config not imported: it is in git's own directory"),
        "{notes}"
    );
    assert!(
        notes.contains("@.env not imported: denied by Read(.env)"),
        "{notes}"
    );
    let error = read_instructions(dir.path(), &[named(".env")], &deny_env).unwrap_err();
    assert!(
        error.to_string().contains("denied by Read(.env)"),
        "{error}"
    );
}
