// Test-only module: its parent includes it under #[cfg(test)].
use super::*;

fn at(rule: &Spanned<String>) -> (String, u64, u64) {
    (
        rule.value.clone(),
        rule.referenced.line(),
        rule.referenced.column(),
    )
}

#[test]
fn every_list_is_read_with_each_rules_line_and_column() {
    let text = "{\n\t\"permissions\": {\n\t\t\"allow\": [\"Bash(npm run test:*)\",\n\t\t\t\"Read(./docs/**)\"],\n  \"deny\": [\"Read(./.env)\"],\n  \"ask\": [\"Bash(git push:*)\"],\n  \"additionalDirectories\": [\"../shared\"],\n  \"defaultMode\": \"acceptEdits\",\n  \"disableBypassPermissionsMode\": \"disable\"\n },\n \"hooks\": {}, \"env\": {\"A\": \"b: c\"}, \"sandbox\": {\"enabled\": true}\n}";
    let permissions = permissions_of_claude_settings(text).unwrap();
    assert_eq!(
        permissions.allow.iter().map(at).collect::<Vec<_>>(),
        vec![
            ("Bash(npm run test:*)".to_string(), 3, 13),
            ("Read(./docs/**)".to_string(), 4, 4),
        ]
    );
    assert_eq!(at(&permissions.deny[0]), ("Read(./.env)".into(), 5, 12));
    assert_eq!(at(&permissions.ask[0]), ("Bash(git push:*)".into(), 6, 11));
    assert_eq!(permissions.additional_directories[0].value, "../shared");
    assert_eq!(
        permissions.default_mode.map(|mode| mode.value).as_deref(),
        Some("acceptEdits")
    );
    assert_eq!(permissions.other_keys, vec!["disableBypassPermissionsMode"]);
    assert!(permissions.has_sandbox);
}

#[test]
fn compact_json_with_escapes_keeps_the_rules_text_and_columns() {
    let text = r#"{"permissions":{"deny":["Bash(echo \"a\\b\")","Read(\u002e/x)"]}}"#;
    let permissions = permissions_of_claude_settings(text).unwrap();
    assert_eq!(
        permissions.deny.iter().map(at).collect::<Vec<_>>(),
        vec![
            ("Bash(echo \"a\\b\")".to_string(), 1, 25),
            ("Read(./x)".to_string(), 1, 47),
        ]
    );
}

#[test]
fn a_file_without_permissions_has_no_rules() {
    let permissions = permissions_of_claude_settings(r#"{"hooks": {"Stop": []}}"#).unwrap();
    assert!(permissions.allow.is_empty() && permissions.deny.is_empty());
    assert!(!permissions.has_sandbox);
}

#[test]
fn what_is_not_json_or_not_a_settings_shape_is_refused_at_its_place() {
    // YAML would read this; a settings file is JSON.
    let error = permissions_of_claude_settings("permissions:\n  deny: [x]\n").unwrap_err();
    assert_eq!(error.line, 1, "{error}");
    let error =
        permissions_of_claude_settings("{\n \"permissions\": {\n  \"deny\": \"Read(.env)\"\n }\n}")
            .unwrap_err();
    assert_eq!(error.line, 3, "{error}");
    let error = permissions_of_claude_settings("{\"permissions\": {\"deny\": [1]}}").unwrap_err();
    assert_eq!(error.line, 1, "{error}");
}

#[derive(Debug, Deserialize)]
struct Holder {
    permissions_from: PermissionsFrom,
}

fn from(yaml: &str) -> Result<PermissionsFrom, serde_saphyr::Error> {
    serde_saphyr::from_str::<Holder>(yaml).map(|holder| holder.permissions_from)
}

#[test]
fn permissions_from_takes_a_path_a_file_with_its_trust_or_a_list() {
    let source = |file: &str, allow| SettingsSource {
        file: file.into(),
        allow,
    };
    assert_eq!(
        from("permissions_from: .claude/settings.json").unwrap().0,
        vec![source(".claude/settings.json", true)]
    );
    assert_eq!(
        from("permissions_from: {file: s.json, allow: false}")
            .unwrap()
            .0,
        vec![source("s.json", false)]
    );
    assert_eq!(
        from("permissions_from:\n  - a.json\n  - {file: b.json, allow: false}\n")
            .unwrap()
            .0,
        vec![source("a.json", true), source("b.json", false)]
    );
    assert!(from("permissions_from: []").is_err());
    assert!(from("permissions_from: {file: a.json, deny: false}").is_err());
    assert!(from("permissions_from: {allow: false}").is_err());
}
