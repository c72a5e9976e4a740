// Test-only module: its parent includes it under #[cfg(test)].
use std::os::unix::fs::symlink;

use super::*;

const SPEC: &str =
    "version: 1\nname: t\nprompt: p\nmodel: { provider: script, script: [{ text: hi }] }\n";

fn skill(dir: &Path, name: &str, text: &str) {
    std::fs::create_dir_all(dir.join(name)).unwrap();
    std::fs::write(dir.join(name).join("SKILL.md"), text).unwrap();
}

fn load(dir: &Path, extra: &str) -> LoadedSpec {
    let path = dir.join("task.yaml");
    std::fs::write(&path, format!("{SPEC}{extra}")).unwrap();
    crate::spec::load(&path).unwrap()
}

#[test]
fn skills_are_read_by_name_with_their_directory_inside_the_workspace() {
    let dir = tempfile::tempdir().unwrap();
    let skills = dir.path().join(".claude/skills");
    skill(
        &skills,
        "pdf",
        "---\nname: pdf\ndescription: Fills PDF forms.\nallowed-tools: Bash(python *)\n---\nRun scripts/fill.py.\n",
    );
    skill(
        &skills,
        "deploy",
        "---\nname: deploy\ndescription: Deploys.\ndisable-model-invocation: true\n---\nDeploy.\n",
    );
    std::fs::create_dir_all(skills.join("drafts")).unwrap();
    std::fs::write(skills.join("README.md"), "not a skill").unwrap();
    let loaded = load(dir.path(), "skills_from: .claude/skills\n");
    let (found, notes) = task_skills(&loaded, dir.path()).unwrap();
    assert_eq!(found.keys().collect::<Vec<_>>(), ["pdf"]);
    assert_eq!(found["pdf"].description, "Fills PDF forms.");
    assert_eq!(found["pdf"].body, "Run scripts/fill.py.");
    assert_eq!(found["pdf"].dir, ".claude/skills/pdf");
    let notes = notes.join("\n");
    assert!(notes.contains("`allowed-tools` ignored"), "{notes}");
    assert!(notes.contains("skill deploy left out"), "{notes}");
    assert!(notes.contains("drafts has no SKILL.md"), "{notes}");
    assert!(!notes.contains("README"), "{notes}");
    // Outside the workspace the directory is absolute.
    let elsewhere = tempfile::tempdir().unwrap();
    let (found, _) = task_skills(&loaded, elsewhere.path()).unwrap();
    assert!(found["pdf"].dir.starts_with('/'), "{}", found["pdf"].dir);
}

#[test]
fn a_broken_skill_is_left_out_and_a_link_or_a_duplicate_is_an_error_at_skills_from() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a");
    let b = dir.path().join("b");
    skill(&a, "x", "---\nname: x\ndescription: [unclosed\n---\nbody\n");
    skill(&a, "w", "---\nname: w\ndescription: W.\n---\nbody\n");
    let loaded = load(dir.path(), "skills_from: a\n");
    let (found, notes) = task_skills(&loaded, dir.path()).unwrap();
    assert_eq!(found.keys().collect::<Vec<_>>(), vec!["w"]);
    let notes = notes.join("\n");
    assert!(
        notes.contains("x/SKILL.md:3:") && notes.contains("(the skill is left out)"),
        "{notes}"
    );
    std::fs::remove_dir_all(a.join("w")).unwrap();
    skill(&a, "x", "---\nname: x\ndescription: X.\n---\nbody\n");
    skill(&b, "y", "---\nname: x\ndescription: Also x.\n---\nbody\n");
    let loaded = load(dir.path(), "skills_from: [a, b]\n");
    let error = task_skills(&loaded, dir.path()).unwrap_err().to_string();
    assert!(error.contains("both define the skill x"), "{error}");
    let outside = tempfile::tempdir().unwrap();
    skill(
        outside.path(),
        "z",
        "---\nname: z\ndescription: Z.\n---\nbody\n",
    );
    symlink(outside.path().join("z"), a.join("z")).unwrap();
    let loaded = load(dir.path(), "skills_from: a\n");
    let error = task_skills(&loaded, dir.path()).unwrap_err().to_string();
    assert!(error.contains("is a symbolic link"), "{error}");
    std::fs::remove_file(a.join("z")).unwrap();
    std::fs::create_dir(a.join("z")).unwrap();
    symlink(outside.path().join("z/SKILL.md"), a.join("z/SKILL.md")).unwrap();
    let error = task_skills(&loaded, dir.path()).unwrap_err().to_string();
    assert!(error.contains("not a regular file"), "{error}");
}

#[test]
fn instructions_default_off_or_named() {
    let dir = tempfile::tempdir().unwrap();
    let paths = |loaded: &LoadedSpec| -> Vec<(String, bool)> {
        wanted_instructions(loaded)
            .into_iter()
            .map(|w| (w.path, w.named_at.is_some()))
            .collect()
    };
    let default = load(dir.path(), "");
    assert_eq!(
        paths(&default),
        [
            ("CLAUDE.md".to_string(), false),
            (".claude/CLAUDE.md".to_string(), false),
            ("AGENTS.md".to_string(), false)
        ]
    );
    assert!(missing_instructions(&default, dir.path()).is_ok());
    assert!(paths(&load(dir.path(), "instructions: none\n")).is_empty());
    let named = load(dir.path(), "instructions:\n  - docs/agents.md\n");
    assert_eq!(paths(&named), [("docs/agents.md".to_string(), true)]);
    let error = missing_instructions(&named, dir.path())
        .unwrap_err()
        .to_string();
    assert!(error.contains("task.yaml:6:5"), "{error}");
    assert!(
        error.contains("docs/agents.md is not a file of the workspace"),
        "{error}"
    );
}
