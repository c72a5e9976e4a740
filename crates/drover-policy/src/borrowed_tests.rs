// Test-only module: its parent includes it under #[cfg(test)].
use std::path::Path;

use super::*;
use crate::{CallFacts, Policy, Subject, ToolFacts};

fn applied(list: SettingsList, text: &str) -> Rule {
    match borrow_rule(list, text, true) {
        Ok(Borrowed::Applied(rule)) => *rule,
        other => panic!("{text} in {list:?}: {other:?}"),
    }
}

fn left_out(list: SettingsList, text: &str) -> String {
    match borrow_rule(list, text, true) {
        Ok(Borrowed::LeftOut(why)) => why,
        other => panic!("{text} in {list:?}: {other:?}"),
    }
}

#[test]
fn deny_and_ask_rules_are_taken_whole_wherever_they_reach() {
    for text in [
        "Read(./.env)",
        "Read(//etc/shadow)",
        "Read(~/.aws/**)",
        "Bash(curl:*)",
        "WebFetch(domain:evil.example)",
        "WebFetch",
        "mcp__*",
        "Edit",
    ] {
        assert!(!applied(SettingsList::Deny, text).is_asked(), "{text}");
        assert!(applied(SettingsList::Ask, text).is_asked(), "{text}");
    }
}

#[test]
fn allow_rules_that_would_reach_past_the_workspace_or_the_sandbox_are_left_out() {
    for text in [
        "Read(//etc/**)",
        "Edit(~/.bashrc)",
        "Write(//tmp/x)",
        "Edit(.git/hooks/**)",
        "Write(./.git/config)",
        "WebFetch(domain:example.com)",
        "WebFetch",
        "WebSearch",
        "mcp__*",
        "mcp__github",
        "mcp__github__*",
        "mcp__github__get_*",
        "ReadMcpResource",
        "ListMcpResources",
    ] {
        let why = left_out(SettingsList::Allow, text);
        assert!(why.contains("spec"), "{text}: {why}");
    }
    for text in [
        "Read",
        "Edit(./src/**)",
        "Edit(/docs/**)",
        "Write(*.md)",
        "Edit(.github/workflows/**)",
        "Edit(.gitignore)",
        "Edit(src/*)",
        // Applies, but cannot open .git: no rule from a file may write there.
        "Edit(**/.gi?/hooks/*)",
        "Edit({.git/config,x})",
        "Bash(npm run test:*)",
        "Bash(./mvnw test:*)",
        "Task(reviewer)",
    ] {
        assert!(applied(SettingsList::Allow, text).is_borrowed(), "{text}");
    }
}

#[test]
fn a_rule_that_does_not_parse_is_left_out_when_it_allows_and_refused_when_it_denies() {
    for text in ["Read(../x)", "Bash(", "Read(~other/x)"] {
        assert!(!left_out(SettingsList::Allow, text).is_empty(), "{text}");
        for list in [SettingsList::Deny, SettingsList::Ask] {
            assert!(borrow_rule(list, text, true).is_err(), "{text} in {list:?}");
        }
    }
}

#[test]
fn a_rule_naming_a_tool_drover_lacks_is_left_out_from_every_list() {
    for list in [SettingsList::Allow, SettingsList::Deny, SettingsList::Ask] {
        let why = left_out(list, "SlashCommand(/deploy)");
        assert!(why.contains("no tool SlashCommand"), "{why}");
        left_out(list, "ExitPlanMode");
    }
}

fn bash(command: &str) -> CallFacts {
    CallFacts {
        tool: ToolFacts {
            name: "Bash".into(),
            read_only: false,
            governed_by: "Bash".into(),
            run_state: false,
            path_family: None,
        },
        subject: Subject::Command(command.into()),
    }
}

#[test]
fn an_ask_rule_denies_and_says_nobody_could_be_asked() {
    let mut rules = RuleSet {
        allow: vec![Rule::try_from("Bash(git:*)".to_string()).unwrap()],
        ..RuleSet::default()
    };
    rules.add_borrowed(
        applied(SettingsList::Ask, "Bash(git push:*)"),
        SettingsList::Ask,
    );
    let policy = Policy::new(&rules, Path::new("/ws"), &[]);
    assert!(policy.decide(&bash("git status")).allowed());
    let denied = policy.decide(&bash("git push origin main"));
    assert!(!denied.allowed());
    assert_eq!(denied.rule(), Some("Bash(git push:*)"));
    assert!(
        denied.reason().contains("ask rule") && denied.reason().contains("headless"),
        "{}",
        denied.reason()
    );
}

#[test]
fn with_the_sandbox_off_a_settings_file_allows_no_command() {
    match borrow_rule(SettingsList::Allow, "Bash(npm test)", false) {
        Ok(Borrowed::LeftOut(why)) => assert!(why.contains("sandbox is off"), "{why}"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        borrow_rule(SettingsList::Allow, "Edit(src/**)", false),
        Ok(Borrowed::Applied(_))
    ));
    assert!(matches!(
        borrow_rule(SettingsList::Deny, "Bash(rm:*)", false),
        Ok(Borrowed::Applied(_))
    ));
}

fn write(path: &str) -> CallFacts {
    CallFacts {
        tool: ToolFacts {
            name: "Write".into(),
            read_only: false,
            governed_by: "Write".into(),
            run_state: false,
            path_family: Some("Edit".into()),
        },
        subject: Subject::Path(path.into()),
    }
}

/// Whatever its pattern, an allow rule from a settings file writes neither into `.git/`
/// nor outside the workspace (additional directories included), where the same rule in
/// the spec may.
#[test]
fn a_borrowed_allow_rule_never_opens_git_or_an_additional_directory() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let extra = dir.path().join("extra");
    std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
    std::fs::create_dir_all(&extra).unwrap();
    let ws = ws.canonicalize().unwrap();
    let extra = extra.canonicalize().unwrap();
    let targets = [
        ".git/config".to_string(),
        ".git/hooks/pre-commit".to_string(),
        extra.join("x").display().to_string(),
    ];
    for text in ["Edit", "Edit({.git/config,x})", "Write(.git[/]hooks/*)"] {
        let own = Rule::try_from(text.to_string()).unwrap();
        let borrowed = applied(SettingsList::Allow, text);
        for target in &targets {
            let decide = |rule: Rule| {
                let rules = RuleSet {
                    allow: vec![rule],
                    ..RuleSet::default()
                };
                Policy::new(&rules, &ws, std::slice::from_ref(&extra)).decide(&write(target))
            };
            assert!(
                !decide(borrowed.clone()).allowed(),
                "{text} from a file: {target}"
            );
            let _ = decide(own.clone());
        }
    }
    // The spec's own bare rule reaches the additional directory; the file's does not.
    let own = RuleSet {
        allow: vec![Rule::try_from("Edit".to_string()).unwrap()],
        ..RuleSet::default()
    };
    let policy = Policy::new(&own, &ws, std::slice::from_ref(&extra));
    assert!(policy.decide(&write(&targets[2])).allowed());
    assert!(policy.decide(&write("src.rs")).allowed());
    let file = RuleSet {
        allow: vec![applied(SettingsList::Allow, "Edit")],
        ..RuleSet::default()
    };
    assert!(
        Policy::new(&file, &ws, std::slice::from_ref(&extra))
            .decide(&write("src.rs"))
            .allowed()
    );
}
