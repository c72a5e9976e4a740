//! The reference setups for fleet runs in examples/ are loaded by the tools of their
//! engines, strictly: the Kubernetes manifests by `kubernetes-validate --strict` (the
//! API server's schemas, unknown fields refused) and the Argo WorkflowTemplate by the
//! argo-workflows SDK's models (tests/cli/fixtures/check_argo_template.py). Both are
//! pinned and installed into .ci/venv by .ci/run; the GitHub workflows are linted by
//! actionlint there too. Each check is also shown to refuse a broken copy, so a
//! validator that accepts anything cannot pass for one that checks.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn examples(folder: &str, extension: &str) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(common::repo().join("examples").join(folder))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == extension))
        .collect();
    found.sort();
    assert!(!found.is_empty(), "no examples/{folder}/*.{extension}");
    found
}

/// Run `program` from .ci/venv/bin on `file`: its exit status and what it printed.
fn venv_tool(program: &str, args: &[&str], file: &Path) -> (bool, String) {
    let program = common::require_installed(&format!(".ci/venv/bin/{program}"));
    let output = Command::new(program).args(args).arg(file).output().unwrap();
    (
        output.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
    )
}

fn kubernetes_validate(file: &Path) -> (bool, String) {
    venv_tool("kubernetes-validate", &["--strict"], file)
}

fn argo_check(file: &Path) -> (bool, String) {
    let script = common::repo().join("tests/cli/fixtures/check_argo_template.py");
    venv_tool("python", &[script.to_str().unwrap()], file)
}

#[test]
#[cfg_attr(
    not(drover_has_fleet_validators),
    ignore = "needs kubernetes-validate and the argo-workflows SDK in .ci/venv: .ci/run installs them"
)]
fn the_kubernetes_examples_pass_strict_validation() {
    for file in examples("kubernetes", "yaml") {
        let (ok, printed) = kubernetes_validate(&file);
        assert!(ok, "{}: {printed}", file.display());
        assert!(printed.contains("passed"), "{printed}");
    }
    // The fleet Job retries only what result.json calls retryable, per index.
    let fleet = common::repo().join("examples/kubernetes/fleet.yaml");
    let text = std::fs::read_to_string(&fleet).unwrap();
    for needed in [
        "completionMode: Indexed",
        "backoffLimitPerIndex",
        "--task-index auto",
        "--repo-cache",
        "\"retryable\": true",
    ] {
        assert!(text.contains(needed), "fleet.yaml lacks {needed}");
    }
    // Strict means strict: an unknown field is refused.
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken.yaml");
    std::fs::write(
        &broken,
        text.replace("  parallelism: 4\n", "  parallelism: 4\n  paralelism: 4\n"),
    )
    .unwrap();
    let (ok, printed) = kubernetes_validate(&broken);
    assert!(!ok, "{printed}");
    assert!(printed.contains("paralelism"), "{printed}");
}

#[test]
#[cfg_attr(
    not(drover_has_fleet_validators),
    ignore = "needs kubernetes-validate and the argo-workflows SDK in .ci/venv: .ci/run installs them"
)]
fn the_argo_workflow_template_loads_with_the_sdk_models() {
    for file in examples("argo", "yaml") {
        let (ok, printed) = argo_check(&file);
        assert!(ok, "{}: {printed}", file.display());
    }
    let text = std::fs::read_to_string(common::repo().join("examples/argo/fleet.yaml")).unwrap();
    for needed in [
        "drover plan",
        "withParam",
        "--only",
        "drover report merge",
        "retryStrategy",
    ] {
        assert!(text.contains(needed), "argo/fleet.yaml lacks {needed}");
    }
    let dir = tempfile::tempdir().unwrap();
    // A misspelt key, and a value of the wrong type, are refused.
    let misspelt = dir.path().join("misspelt.yaml");
    std::fs::write(&misspelt, text.replace("withParam:", "withParams:")).unwrap();
    let (ok, printed) = argo_check(&misspelt);
    assert!(!ok, "{printed}");
    assert!(
        printed.contains("withParams") || printed.contains("with_params"),
        "{printed}"
    );
    let mistyped = dir.path().join("mistyped.yaml");
    std::fs::write(
        &mistyped,
        text.replace("entrypoint: fleet", "entrypoint: [fleet]"),
    )
    .unwrap();
    let (ok, printed) = argo_check(&mistyped);
    assert!(!ok, "{printed}");
}

#[test]
fn the_example_fleet_spec_validates_and_plans_one_task_per_service() {
    let spec = common::repo().join("examples/fleet/bump-serde.yaml");
    let output = common::drover()
        .arg("validate")
        .arg(&spec)
        .env("ANTHROPIC_API_KEY", "sk-ant-test-only-for-validate")
        .env("FLEET_TOKEN", "test-only-token")
        .output()
        .unwrap();
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(output.status.code(), Some(0), "{printed}");
    // The plan needs neither key nor token: a planning job holds no secret.
    let output = common::drover()
        .arg("plan")
        .arg(&spec)
        .arg("--json")
        .env_remove("FLEET_TOKEN")
        .env_remove("ANTHROPIC_API_KEY")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let plan: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        plan["names"],
        serde_json::json!([
            "bump-serde-billing",
            "bump-serde-ledger",
            "bump-serde-search"
        ])
    );
    assert_eq!(plan["tasks"][0]["matrix"]["service"], "billing");
}
