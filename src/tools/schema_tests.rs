// Test-only module: its parent includes it under #[cfg(test)].
//! The built-in tools' schemas compile and make the registry reject wrong inputs.

use serde_json::json;

use super::Registry;

#[test]
fn builtin_schemas_reject_unknown_fields_missing_fields_and_wrong_types() {
    let registry = Registry::builtin().unwrap();
    assert_eq!(
        registry.names(),
        ["Read", "Write", "Edit", "Glob", "Grep", "Bash"]
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
    for definition in registry.definitions() {
        assert!(definition.description.len() > 200, "{}", definition.name);
        assert_eq!(
            definition.input_schema["additionalProperties"],
            json!(false)
        );
    }
}
