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
            "NotebookEdit",
            "Glob",
            "Grep",
            "LS",
            "Bash",
            "BashOutput",
            "KillShell",
            "TodoWrite",
            "WebFetch"
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
        (
            "NotebookEdit",
            json!({"notebook_path": "a.ipynb", "new_source": "x", "cell_type": "code", "edit_mode": "insert"}),
        ),
        (
            "NotebookEdit",
            json!({"notebook_path": "a.ipynb", "cell_id": "cell-0", "new_source": ""}),
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
        (
            "WebFetch",
            json!({"url": "https://example.com/", "prompt": "p"}),
        ),
        ("WebFetch", json!({"url": "https://example.com/"})),
    ];
    for (tool, input) in valid {
        assert!(registry.validate(tool, &input).is_ok(), "{tool} {input}");
        // What the schema accepts, the tool's typed input parses: they are one struct.
        if let Err(error) = registry.prepare(tool, input.clone()) {
            panic!("{tool} {input}: {error}");
        }
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
        ("NotebookEdit", json!({"notebook_path": "a.ipynb"})),
        (
            "NotebookEdit",
            json!({"notebook_path": "a.ipynb", "new_source": "x", "cell_type": "raw"}),
        ),
        (
            "NotebookEdit",
            json!({"notebook_path": "a.ipynb", "new_source": "x", "edit_mode": "append"}),
        ),
        (
            "NotebookEdit",
            json!({"notebook_path": "a.ipynb", "new_source": "x", "cell_number": 0}),
        ),
        ("LS", json!({})),
        ("LS", json!({"path": "a", "ignore": "*.log"})),
        ("BashOutput", json!({"bash_id": "bash_1", "filter": "x"})),
        ("BashOutput", json!({})),
        ("KillShell", json!({"bash_id": "bash_1"})),
        ("WebFetch", json!({"prompt": "p"})),
        (
            "WebFetch",
            json!({"url": "https://example.com/", "headers": {}}),
        ),
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
        assert!(
            registry.prepare(tool, input.clone()).is_err(),
            "{tool} {input}"
        );
    }
    for definition in registry.definitions() {
        assert!(definition.description.len() > 200, "{}", definition.name);
        assert_eq!(
            definition.input_schema["additionalProperties"],
            json!(false)
        );
    }
}

/// Every object in `schema`, however deeply nested.
fn objects(schema: &serde_json::Value, out: &mut Vec<serde_json::Value>) {
    match schema {
        serde_json::Value::Object(map) => {
            if map.get("type") == Some(&json!("object")) {
                out.push(schema.clone());
            }
            map.values().for_each(|v| objects(v, out));
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| objects(v, out)),
        _ => {}
    }
}

#[test]
fn offered_schemas_are_self_contained_strict_and_never_nullable() {
    let registry = Registry::builtin().unwrap();
    for definition in registry.definitions() {
        let text = definition.input_schema.to_string();
        let name = &definition.name;
        // Not every provider resolves references or knows the meta-schema keywords.
        for keyword in ["$ref", "$defs", "$schema", "\"title\"", "\"format\""] {
            assert!(!text.contains(keyword), "{name}: {keyword} in {text}");
        }
        // Optional fields are left out, never sent as null.
        assert!(!text.contains("\"null\""), "{name}: {text}");
        let mut nested = Vec::new();
        objects(&definition.input_schema, &mut nested);
        assert!(!nested.is_empty(), "{name}");
        for object in nested {
            assert_eq!(
                object["additionalProperties"],
                json!(false),
                "{name}: {object}"
            );
        }
    }
}

#[test]
fn an_unknown_tool_is_named_with_the_available_ones() {
    let registry = Registry::builtin().unwrap();
    let error = registry.prepare("Raed", json!({})).err().unwrap();
    assert_eq!(
        error,
        super::ToolError::Failed(format!(
            "No such tool: Raed. The available tools are: {}.",
            registry.names().join(", ")
        ))
    );
}

#[test]
fn a_hostile_pattern_in_a_server_schema_cannot_hang_validation() {
    // Catastrophic backtracking: exponential in the input's length without a limit
    // (2^40 steps: without the limit this test would not finish).
    let schema =
        json!({"type": "object", "properties": {"q": {"type": "string", "pattern": "^(a+)+$"}}});
    let validator = super::schema_validator(&schema).unwrap();
    let hostile = json!({"q": format!("{}b", "a".repeat(40))});
    assert!(!validator.is_valid(&hostile));
    assert!(validator.is_valid(&json!({"q": "aaaa"})));
    // Look-around, which servers' schemas use, still compiles.
    let lookahead = json!({"type": "string", "pattern": "^(?=.*[0-9]).+$"});
    let validator = super::schema_validator(&lookahead).unwrap();
    assert!(validator.is_valid(&json!("a1")));
    assert!(!validator.is_valid(&json!("ab")));
}
