// Test-only module: its parent includes it under #[cfg(test)].
//! The built-in tools' schemas compile and make the registry reject wrong inputs.

use serde_json::json;

use super::Registry;

#[test]
fn builtin_schemas_reject_unknown_fields_missing_fields_and_wrong_types() {
    let registry = Registry::builtin().unwrap();
    assert_eq!(
        registry.names(),
        [
            "Read",
            "Write",
            "Edit",
            "MultiEdit",
            "Glob",
            "Grep",
            "LS",
            "Bash",
            "BashOutput",
            "KillShell",
            "TodoWrite"
        ]
    );
    assert!(
        registry
            .validate("Read", &json!({"file_path": "a"}))
            .is_ok()
    );
    assert!(
        registry
            .validate("Read", &json!({"file_path": "a", "bogus": 1}))
            .is_err()
    );
    assert!(registry.validate("Read", &json!({"offset": 1})).is_err());
    assert!(
        registry
            .validate("Read", &json!({"file_path": "a", "limit": "5"}))
            .is_err()
    );
    assert!(registry
        .validate("Edit", &json!({"file_path": "a", "old_string": "x", "new_string": "y", "replace_all": true}))
        .is_ok());
    assert!(
        registry
            .validate(
                "Grep",
                &json!({"pattern": "x", "-i": true, "-C": 2, "output_mode": "content"})
            )
            .is_ok()
    );
    assert!(
        registry
            .validate("Grep", &json!({"pattern": "x", "output_mode": "lines"}))
            .is_err()
    );
    assert!(
        registry
            .validate("Bash", &json!({"command": "ls", "timeout": 1.5}))
            .is_err()
    );
    let valid = [
        (
            "MultiEdit",
            json!({"file_path": "a", "edits": [{"old_string": "x", "new_string": "y", "replace_all": true}]}),
        ),
        ("LS", json!({"path": "src", "ignore": ["*.log"]})),
        (
            "Bash",
            json!({"command": "npm start", "run_in_background": true}),
        ),
        ("BashOutput", json!({"bash_id": "bash_1"})),
        ("KillShell", json!({"shell_id": "bash_1"})),
        (
            "TodoWrite",
            json!({"todos": [{"content": "Fix", "status": "in_progress", "activeForm": "Fixing"}]}),
        ),
        ("TodoWrite", json!({"todos": []})),
    ];
    for (tool, input) in valid {
        assert!(registry.validate(tool, &input).is_ok(), "{tool} {input}");
    }
    let invalid = [
        ("MultiEdit", json!({"file_path": "a", "edits": []})),
        ("MultiEdit", json!({"file_path": "a"})),
        (
            "MultiEdit",
            json!({"file_path": "a", "edits": [{"old_string": "x"}]}),
        ),
        (
            "MultiEdit",
            json!({"file_path": "a", "edits": [{"old_string": "x", "new_string": "y", "bogus": 1}]}),
        ),
        ("LS", json!({})),
        ("LS", json!({"path": "a", "ignore": "*.log"})),
        ("BashOutput", json!({"bash_id": "bash_1", "filter": "x"})),
        ("BashOutput", json!({})),
        ("KillShell", json!({"bash_id": "bash_1"})),
        (
            "TodoWrite",
            json!({"todos": [{"content": "Fix", "status": "doing", "activeForm": "Fixing"}]}),
        ),
        (
            "TodoWrite",
            json!({"todos": [{"content": "Fix", "status": "pending"}]}),
        ),
        (
            "TodoWrite",
            json!({"todos": [{"content": "Fix", "status": "pending", "activeForm": "F", "id": "1"}]}),
        ),
    ];
    for (tool, input) in invalid {
        assert!(registry.validate(tool, &input).is_err(), "{tool} {input}");
    }
    for definition in registry.definitions() {
        assert!(definition.description.len() > 200, "{}", definition.name);
        assert_eq!(
            definition.input_schema["additionalProperties"],
            json!(false)
        );
    }
}
