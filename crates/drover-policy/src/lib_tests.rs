// Test-only module: its parent includes it under #[cfg(test)].
use std::path::Path;

use serde_json::{Value, json};

use super::*;

/// What the policy judges for `tool` called with `input`.
fn facts(tool: &Fake, input: &Value) -> CallFacts {
    CallFacts {
        tool: tool.tool_facts(),
        subject: tool.subject(input),
    }
}

/// A stand-in tool: the policy only looks at name, read-only-ness and subject.
struct Fake {
    name: &'static str,
    read_only: bool,
}

impl Fake {
    fn tool_facts(&self) -> ToolFacts {
        ToolFacts {
            name: self.name.to_string(),
            read_only: self.read_only,
            governed_by: self.name.to_string(),
            run_state: false,
            // As the built-in tools state it.
            path_family: match self.name {
                "Glob" | "Grep" | "LS" => Some("Read".to_string()),
                "Write" | "MultiEdit" => Some("Edit".to_string()),
                _ => None,
            },
        }
    }

    fn subject(&self, input: &Value) -> Subject {
        if let Some(command) = input.get("command").and_then(Value::as_str) {
            Subject::Command(command.into())
        } else if let Some(path) = input.get("file_path").and_then(Value::as_str) {
            Subject::Path(path.into())
        } else {
            Subject::None
        }
    }
}

const READ: Fake = Fake {
    name: "Read",
    read_only: true,
};
const EDIT: Fake = Fake {
    name: "Edit",
    read_only: false,
};
const WRITE: Fake = Fake {
    name: "Write",
    read_only: false,
};
const BASH: Fake = Fake {
    name: "Bash",
    read_only: false,
};

fn policy(allow: &[&str], deny: &[&str]) -> Policy {
    let rules = |list: &[&str]| -> Vec<Rule> {
        list.iter()
            .map(|r| Rule::try_from(r.to_string()).unwrap())
            .collect()
    };
    let permissions = RuleSet {
        allow: rules(allow),
        deny: rules(deny),
        ..RuleSet::default()
    };
    Policy::new(&permissions, Path::new("/ws"), &[])
}

fn file(path: &str) -> Value {
    json!({ "file_path": path })
}

fn cmd(command: &str) -> Value {
    json!({ "command": command })
}

/// Every path-rule form Claude Code documents, for Read, Edit and Write and the Bash
/// path checks alike: each through a path it names and one it does not. A form that
/// parsed but never matched would be a deny rule that protects nothing.
#[test]
fn every_documented_path_rule_form_matches_what_it_names_and_nothing_else() {
    let home = super::expand::home_dir().expect("tests run with HOME set");
    let home = home.to_string_lossy();
    let forms: Vec<(String, String, String)> = vec![
        // (the rule's path, a path it names, a path it does not)
        (".env".into(), "/ws/config/.env".into(), "/ws/.envrc".into()),
        ("./.env".into(), "/ws/.env".into(), "/ws/config/.env".into()),
        (
            "./.env.*".into(),
            "/ws/.env.local".into(),
            "/ws/a/.env.local".into(),
        ),
        (
            "./secrets/**".into(),
            "/ws/secrets/a/k".into(),
            "/ws/x/secrets/k".into(),
        ),
        (
            "/secrets/**".into(),
            "/ws/secrets/k".into(),
            "/ws/x/secrets/k".into(),
        ),
        (
            "secrets/**".into(),
            "/ws/secrets/k".into(),
            "/ws/x/secrets/k".into(),
        ),
        (
            "**/.env".into(),
            "/ws/a/b/.env".into(),
            "/ws/a/b/env".into(),
        ),
        (
            "*.pem".into(),
            "/ws/a/key.pem".into(),
            "/ws/a/key.pem.txt".into(),
        ),
        (
            "secrets/".into(),
            "/ws/secrets/k".into(),
            "/ws/secretsx/k".into(),
        ),
        (
            "//ws/keys/**".into(),
            "/ws/keys/k".into(),
            "/ws/keysx".into(),
        ),
        (
            "~/.ssh/**".into(),
            format!("{home}/.ssh/id"),
            format!("{home}/.sshx"),
        ),
    ];
    for (pattern, named, other) in &forms {
        for tool in ["Read", "Edit", "Write"] {
            let rule = format!("{tool}({pattern})");
            let p = policy(&["Read", "Edit", "Write", "Bash(cat *)"], &[&rule]);
            for fake in [&READ, &EDIT, &WRITE] {
                let family = fake.name == "Read";
                if family != (tool == "Read") {
                    continue;
                }
                let hit = p.decide(&facts(fake, &file(named)));
                assert!(!hit.allowed(), "{rule} must deny {} on {named}", fake.name);
                assert_eq!(hit.rule(), Some(rule.as_str()), "{rule} on {named}");
                let miss = p.decide(&facts(fake, &file(other)));
                assert_ne!(miss.rule(), Some(rule.as_str()), "{rule} on {other}");
            }
            if tool == "Read" {
                let hit = p.decide(&facts(&BASH, &cmd(&format!("cat {named}"))));
                assert_eq!(hit.rule(), Some(rule.as_str()), "{rule} on cat {named}");
                let miss = p.decide(&facts(&BASH, &cmd(&format!("cat {other}"))));
                assert_ne!(miss.rule(), Some(rule.as_str()), "{rule} on cat {other}");
            }
        }
    }
}

#[test]
fn wrapper_scripts_are_allowed_as_the_rule_names_them_and_nothing_beside() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    std::fs::create_dir(ws.join("scripts")).unwrap();
    let permissions = RuleSet {
        allow: [
            "Bash(./mvnw test:*)",
            "Bash(./scripts/x.sh *)",
            r#"Bash(echo "Exit: $?")"#,
        ]
        .iter()
        .map(|r| Rule::try_from(r.to_string()).unwrap())
        .collect(),
        ..RuleSet::default()
    };
    let p = Policy::new(&permissions, &ws, &[]);
    let decide = |command: &str| p.decide_in(&facts(&BASH, &cmd(command)), &ws);
    for allowed in [
        "./mvnw test",
        "./mvnw test -q",
        "./scripts/x.sh a",
        r#"echo "Exit: $?""#,
    ] {
        assert!(
            decide(allowed).allowed(),
            "{allowed}: {}",
            decide(allowed).reason()
        );
    }
    for denied in [
        "./mvnw deploy",
        "./scripts/../mvnw test",
        "./scripts/x.sh a && rm -rf x",
        r#"echo "Exit: $?" > out"#,
        r#"echo "Exit: $?"; rm x"#,
    ] {
        assert!(!decide(denied).allowed(), "{denied}");
    }
}

#[test]
fn a_quoted_deny_rule_stops_every_spelling_of_its_command() {
    let p = policy(&["Bash(rm *)"], &[r#"Bash(rm "important file")"#]);
    for spelling in [
        r#"rm "important file""#,
        "rm 'important file'",
        r"rm important\ file",
        r#"echo ok && rm "important file""#,
    ] {
        let decision = p.decide(&facts(&BASH, &cmd(spelling)));
        assert!(!decision.allowed(), "{spelling}");
        assert_eq!(
            decision.rule(),
            Some(r#"Bash(rm "important file")"#),
            "{spelling}"
        );
    }
    assert!(p.decide(&facts(&BASH, &cmd("rm other"))).allowed());
}

#[test]
fn a_write_deny_stops_every_editing_tool_on_its_path() {
    let p = policy(&["Edit"], &["Write(config/**)"]);
    for fake in [&EDIT, &WRITE] {
        let decision = p.decide(&facts(fake, &file("config/app.toml")));
        assert!(!decision.allowed(), "{}", fake.name);
        assert_eq!(decision.rule(), Some("Write(config/**)"));
        assert!(p.decide(&facts(fake, &file("src/lib.rs"))).allowed());
    }
    // Bare, it names the Write tool only, as before.
    let bare = policy(&["Edit"], &["Write"]);
    assert!(bare.decide(&facts(&EDIT, &file("src/lib.rs"))).allowed());
}

#[test]
fn read_only_tools_are_allowed_inside_the_workspace_by_default() {
    let p = policy(&[], &[]);
    let decision = p.decide(&facts(&READ, &file("src/lib.rs")));
    assert!(decision.allowed());
    assert_eq!(decision.rule(), None);
    assert!(!p.decide(&facts(&READ, &file("/etc/passwd"))).allowed());
    assert!(!p.decide(&facts(&READ, &file("../outside.txt"))).allowed());
}

#[test]
fn writes_need_an_allow_rule() {
    let p = policy(&["Edit(src/**)"], &[]);
    let decision = p.decide(&facts(&EDIT, &file("src/lib.rs")));
    assert!(decision.allowed());
    assert_eq!(decision.rule(), Some("Edit(src/**)"));
    assert!(
        p.decide(&facts(&WRITE, &file("src/new.rs"))).allowed(),
        "Edit rules govern Write"
    );
    let outside = p.decide(&facts(&EDIT, &file("Cargo.toml")));
    assert!(!outside.allowed());
    assert!(
        outside.reason().contains("default deny"),
        "{}",
        outside.reason()
    );
}

#[test]
fn deny_beats_allow_whatever_the_order() {
    let p = policy(&["Read", "Edit"], &["Read(.env)", "Edit(**/*.lock)"]);
    let decision = p.decide(&facts(&READ, &file("config/.env")));
    assert!(!decision.allowed());
    assert_eq!(decision.rule(), Some("Read(.env)"));
    assert!(!p.decide(&facts(&EDIT, &file("Cargo.lock"))).allowed());
    assert!(p.decide(&facts(&EDIT, &file("src/a.rs"))).allowed());
}

#[test]
fn bare_edit_allow_does_not_reach_outside_the_workspace() {
    let p = policy(&["Edit"], &[]);
    assert!(!p.decide(&facts(&EDIT, &file("/etc/hosts"))).allowed());
    let p = policy(&["Edit(//tmp/drover-test/**)"], &[]);
    assert!(
        p.decide(&facts(&EDIT, &file("/tmp/drover-test/x")))
            .allowed()
    );
}

#[test]
fn bash_prefix_rules_never_let_a_chained_command_through() {
    let p = policy(&["Bash(cargo test *)"], &[]);
    assert!(
        p.decide(&facts(&BASH, &cmd("cargo test --quiet")))
            .allowed()
    );
    let chained = p.decide(&facts(&BASH, &cmd("cargo test && rm -rf /")));
    assert!(!chained.allowed());
    assert!(
        !p.decide(&facts(&BASH, &cmd("cargo test; curl x | sh")))
            .allowed()
    );
    assert!(!p.decide(&facts(&BASH, &cmd("cargo build"))).allowed());
}

#[test]
fn bash_deny_patterns_catch_commands_they_cannot_analyse() {
    let p = policy(&["Bash"], &["Bash(git push *)"]);
    assert!(p.decide(&facts(&BASH, &cmd("ls -la"))).allowed());
    assert!(
        !p.decide(&facts(&BASH, &cmd("git push origin main")))
            .allowed()
    );
    let hidden = p.decide(&facts(&BASH, &cmd("true && git push")));
    assert!(!hidden.allowed());
    assert_eq!(hidden.rule(), Some("Bash(git push *)"));
}

#[test]
fn tools_denied_outright_are_withheld() {
    let p = policy(&[], &["Bash", "Edit(src/**)"]);
    let withheld = p.withholds(&BASH.tool_facts()).unwrap();
    assert!(!withheld.allowed());
    assert_eq!(withheld.rule(), Some("Bash"));
    assert_eq!(p.withholds(&EDIT.tool_facts()), None);
}

#[test]
fn plan_mode_offers_only_read_only_tools() {
    let permissions = RuleSet {
        mode: PermissionMode::Plan,
        ..RuleSet::default()
    };
    let p = Policy::new(&permissions, Path::new("/ws"), &[]);
    assert_eq!(p.withholds(&READ.tool_facts()), None);
    assert!(
        p.withholds(&EDIT.tool_facts())
            .unwrap()
            .reason()
            .contains("plan")
    );
    assert!(p.withholds(&BASH.tool_facts()).is_some());
}

#[test]
fn tools_that_do_not_say_they_touch_run_state_get_no_default() {
    // The built-in run-state tools (TodoWrite, BashOutput, KillShell) are allowed by the
    // facts they state: drover's src/tools/policy_facts_tests.rs checks them.
    let other = Fake {
        name: "TodoWrite2",
        read_only: false,
    };
    assert!(
        !policy(&[], &[])
            .decide(&facts(&other, &json!({})))
            .allowed()
    );
}

#[test]
fn additional_directories_extend_the_read_only_default_and_bare_rules() {
    let permissions = RuleSet {
        allow: vec![Rule::try_from("Edit".to_string()).unwrap()],
        ..RuleSet::default()
    };
    let extra = [std::path::PathBuf::from("/shared/data")];
    let p = Policy::new(&permissions, Path::new("/ws"), &extra);
    assert!(
        p.decide(&facts(&READ, &file("/shared/data/a.csv")))
            .allowed()
    );
    assert!(
        p.decide(&facts(&EDIT, &file("/shared/data/a.csv")))
            .allowed()
    );
    assert!(
        !p.decide(&facts(&READ, &file("/shared/other.csv")))
            .allowed()
    );
}

#[test]
fn writes_into_git_internals_need_a_rule_that_names_them() {
    let p = policy(&["Edit", "Edit(**)"], &[]);
    let decision = p.decide(&facts(&WRITE, &file(".git/hooks/pre-commit")));
    assert!(!decision.allowed());
    assert!(decision.reason().contains(".git"), "{}", decision.reason());
    assert!(
        p.decide(&facts(&READ, &file(".git/config"))).allowed(),
        "reading is fine"
    );
    assert!(
        p.decide(&facts(&WRITE, &file(".github/workflows/ci.yml")))
            .allowed()
    );
    let p = policy(&["Edit(.git/hooks/**)"], &[]);
    assert!(
        p.decide(&facts(&WRITE, &file(".git/hooks/pre-commit")))
            .allowed()
    );
}

#[test]
fn symlinks_and_dot_dot_cannot_escape_the_workspace() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    std::fs::write(dir.path().join("secret.txt"), "s").unwrap();
    std::os::unix::fs::symlink(dir.path().join("secret.txt"), ws.join("link.txt")).unwrap();
    let ws = ws.canonicalize().unwrap();
    let permissions = RuleSet {
        allow: vec![Rule::try_from("Edit".to_string()).unwrap()],
        ..RuleSet::default()
    };
    let p = Policy::new(&permissions, &ws, &[]);
    assert!(
        !p.decide(&facts(&READ, &file("link.txt"))).allowed(),
        "a link pointing out is outside"
    );
    assert!(!p.decide(&facts(&EDIT, &file("link.txt"))).allowed());
    assert!(!p.decide(&facts(&READ, &file("../secret.txt"))).allowed());
    assert!(
        !p.decide(&facts(&EDIT, &file("sub/../../secret.txt")))
            .allowed()
    );
}

#[test]
fn a_bare_edit_rule_governs_write_and_multi_edit_too() {
    let p = policy(&["Write", "Edit(src/**)"], &["Edit"]);
    assert!(!p.decide(&facts(&WRITE, &file("src/a.rs"))).allowed());
    let multi = Fake {
        name: "MultiEdit",
        read_only: false,
    };
    assert!(
        p.withholds(&multi.tool_facts()).is_some(),
        "denied outright, so not offered"
    );
    assert!(p.withholds(&WRITE.tool_facts()).is_some());
    let p = policy(&["Edit"], &[]);
    assert!(p.decide(&facts(&WRITE, &file("new.txt"))).allowed());
}

#[test]
fn protected_paths_are_off_limits_to_writes_whatever_the_rules() {
    let p = policy(&["Edit", "Write", "Bash"], &[]).with_protected(vec![
        PathBuf::from("/ws/drover-artifacts"),
        PathBuf::from("/ws/.git"),
    ]);
    for path in [
        "drover-artifacts/t/transcript.jsonl",
        "/ws/drover-artifacts/summary.md",
        "./drover-artifacts",
        ".git",
    ] {
        let decision = p.decide(&facts(&WRITE, &file(path)));
        assert!(!decision.allowed(), "{path}");
        assert!(
            decision.reason().contains("off limits"),
            "{}",
            decision.reason()
        );
        assert!(!p.decide(&facts(&EDIT, &file(path))).allowed(), "{path}");
    }
    for command in [
        "echo x > drover-artifacts/t/transcript.jsonl",
        "echo x >> ./drover-artifacts/../drover-artifacts/t/x",
        "rm -rf drover-artifacts",
        "cp evil drover-artifacts/t/transcript.jsonl",
        "printf 'gitdir: /x' > .git",
    ] {
        let decision = p.decide(&facts(&BASH, &cmd(command)));
        assert!(!decision.allowed(), "{command}");
    }
    // Reading is fine, and neighbours are not protected.
    assert!(
        p.decide(&facts(&READ, &file("drover-artifacts/t/transcript.jsonl")))
            .allowed()
    );
    assert!(
        p.decide(&facts(&WRITE, &file("drover-artifacts-notes.md")))
            .allowed()
    );
    assert!(p.decide(&facts(&BASH, &cmd("echo x > notes.md"))).allowed());
}

#[test]
fn searches_skip_what_read_rules_hide_and_what_their_own_rules_deny() {
    let p = policy(&[], &["Read(.env)", "Grep(secrets/**)"]);
    let hidden = p.hidden_filter();
    let env = Path::new("/ws/.env");
    let key = Path::new("/ws/secrets/key");
    // A Read deny rule hides the file from every search tool.
    for tool in ["Grep", "Glob", "LS"] {
        assert!(hidden(tool, env), "{tool}");
    }
    // A rule naming one search tool hides the path from that tool only.
    assert!(hidden("Grep", key));
    assert!(!hidden("Glob", key) && !hidden("LS", key));
    assert!(!hidden("Grep", Path::new("/ws/src/lib.rs")));
}

fn agent_call(name: &str) -> CallFacts {
    CallFacts {
        tool: ToolFacts {
            name: "Agent".into(),
            read_only: false,
            governed_by: "Agent".into(),
            run_state: true,
            path_family: None,
        },
        subject: Subject::Name(name.into()),
    }
}

/// Claude Code turns one sub-agent off with `Agent(name)` (or `Task(name)`): the rule
/// stops that agent and no other.
#[test]
fn an_agent_rule_naming_one_sub_agent_decides_that_one_only() {
    let policy = policy(&[], &["Task(Explore)"]);
    let denied = policy.decide(&agent_call("Explore"));
    assert!(!denied.allowed());
    assert_eq!(denied.rule(), Some("Task(Explore)"));
    assert!(policy.decide(&agent_call("reviewer")).allowed());
    assert!(policy.decide(&agent_call("Explorer")).allowed());
    let policy = policy_denying_explore_allowing("reviewer");
    assert!(policy.decide(&agent_call("reviewer")).allowed());
    assert!(!policy.decide(&agent_call("Explore")).allowed());
}

fn policy_denying_explore_allowing(name: &str) -> Policy {
    let mut rules = RuleSet {
        deny: vec![Rule::try_from("Agent(Explore)".to_string()).unwrap()],
        ..RuleSet::default()
    };
    rules
        .allow
        .push(Rule::try_from(format!("Agent({name})")).unwrap());
    Policy::new(&rules, Path::new("/ws"), &[])
}
