use std::path::Path;

use super::*;
use crate::{CallFacts, Policy, Subject, ToolFacts};

fn applied(list: SettingsList, text: &str) -> Rule {
    match borrow_rule(list, text) {
        Ok(Borrowed::Applied(rule)) => *rule,
        other => panic!("{text} in {list:?}: {other:?}"),
    }
}

fn left_out(list: SettingsList, text: &str) -> String {
    match borrow_rule(list, text) {
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
        "Edit(.g*/hooks/.github)",
        "WebFetch(domain:example.com)",
        "WebFetch",
        "WebSearch",
        "mcp__*",
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
        // Applies, but cannot open .git: only a rule whose text names .git may write there.
        "Edit(**/.gi?/hooks/*)",
        "Bash(npm run test:*)",
        "Bash(./mvnw test:*)",
        "mcp__github",
        "Task(reviewer)",
    ] {
        applied(SettingsList::Allow, text);
    }
}

#[test]
fn a_rule_that_does_not_parse_is_left_out_when_it_allows_and_refused_when_it_denies() {
    for text in ["Read(../x)", "Bash(", "Read(~other/x)"] {
        assert!(!left_out(SettingsList::Allow, text).is_empty(), "{text}");
        for list in [SettingsList::Deny, SettingsList::Ask] {
            assert!(borrow_rule(list, text).is_err(), "{text} in {list:?}");
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
