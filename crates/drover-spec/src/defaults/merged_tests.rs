// Test-only module: its parent includes it under #[cfg(test)].
use super::*;

fn tree(text: &str) -> Node {
    serde_saphyr::from_str(text).unwrap()
}

fn merged(spec: &str, defaults: &str) -> Merged {
    merge(&tree(spec), Some(&tree(defaults)))
}

const DEFAULTS: &str = "version: 1
model: { provider: anthropic, base_url: http://127.0.0.1:9 }
permissions: { allow: [Bash], deny: [\"Bash(rm *)\"] }
limits: { max_turns: 30, timeout: 20m }
sandbox: { network: true, limits: { processes: 9 } }
";

#[test]
fn a_key_only_one_file_writes_is_that_files() {
    let merged = merged("version: 1\nname: t\n", DEFAULTS);
    assert_eq!(merged.origin(&["name"]), Some(Source::Spec));
    assert_eq!(merged.origin(&["model"]), Some(Source::Defaults));
    assert_eq!(
        merged.origin(&["model", "base_url"]),
        Some(Source::Defaults)
    );
    assert_eq!(
        merged.origin(&["limits", "timeout"]),
        Some(Source::Defaults)
    );
    assert_eq!(merged.origin(&["env"]), None);
    assert_eq!(merged.origin(&["limits", "max_tokens"]), None);
    // The defaults' own version is not merged: the spec's is the spec's.
    assert_eq!(merged.origin(&["version"]), Some(Source::Spec));
}

#[test]
fn mappings_both_write_merge_key_by_key_at_every_depth() {
    let merged = merged(
        "limits: { max_turns: 5 }\nsandbox: { limits: { open_files: 3 } }\n",
        DEFAULTS,
    );
    assert_eq!(merged.origin(&["limits", "max_turns"]), Some(Source::Spec));
    assert_eq!(
        merged.origin(&["limits", "timeout"]),
        Some(Source::Defaults)
    );
    assert_eq!(
        merged.origin(&["sandbox", "network"]),
        Some(Source::Defaults)
    );
    assert_eq!(
        merged.origin(&["sandbox", "limits", "open_files"]),
        Some(Source::Spec)
    );
    assert_eq!(
        merged.origin(&["sandbox", "limits", "processes"]),
        Some(Source::Defaults)
    );
}

#[test]
fn anything_but_two_mappings_is_the_specs_and_model_is_taken_whole() {
    let merged = merged(
        "model: { provider: script, script: [] }\nsandbox: off\npermissions: { allow: [] }\n",
        DEFAULTS,
    );
    assert_eq!(merged.origin(&["model"]), Some(Source::Spec));
    // Not the default's base_url: the model block is the spec's whole.
    assert_eq!(merged.origin(&["model", "base_url"]), None);
    assert_eq!(merged.origin(&["sandbox", "network"]), Some(Source::Spec));
    assert_eq!(merged.origin(&["permissions", "allow"]), Some(Source::Spec));
    assert_eq!(
        merged.origin(&["permissions", "deny"]),
        Some(Source::Defaults)
    );
}

#[test]
fn deny_lists_are_joined_the_defaults_first() {
    let merged = merged("permissions: { deny: [\"Read(.env)\"] }\n", DEFAULTS);
    let MergedValue::Map(top) = &merged.value else {
        panic!("{merged:?}")
    };
    let (_, permissions) = top.iter().find(|(key, _)| key == "permissions").unwrap();
    let MergedValue::Map(keys) = &permissions.value else {
        panic!("{permissions:?}")
    };
    let (_, deny) = keys.iter().find(|(key, _)| key == "deny").unwrap();
    let MergedValue::Seq(items) = &deny.value else {
        panic!("{deny:?}")
    };
    let shown: Vec<(Source, &MergedValue)> = items
        .iter()
        .map(|item| (item.source, &item.value))
        .collect();
    assert_eq!(
        shown,
        vec![
            (
                Source::Defaults,
                &MergedValue::Scalar("Bash(rm *)".to_string())
            ),
            (Source::Spec, &MergedValue::Scalar("Read(.env)".to_string())),
        ]
    );
}

#[test]
fn without_defaults_everything_is_the_specs() {
    let merged = merge(&tree("version: 1\nlimits: { max_turns: 5 }\n"), None);
    assert_eq!(merged.origin(&["limits", "max_turns"]), Some(Source::Spec));
    assert_eq!(merged.origin(&["model"]), None);
}
