//! The GitHub Action's metadata (action.yml) has the inputs, outputs and steps users rely
//! on, keeps secrets out of command lines, and the docs show the example workflows exactly
//! as they are in examples/workflows/ (which .ci/run lints with actionlint).

use crate::common;

use std::collections::BTreeMap;

use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Action {
    name: String,
    description: String,
    #[allow(dead_code)]
    author: Option<String>,
    #[allow(dead_code)]
    branding: Option<BTreeMap<String, String>>,
    pub(crate) inputs: BTreeMap<String, Input>,
    outputs: BTreeMap<String, Output>,
    pub(crate) runs: Runs,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Input {
    description: String,
    required: Option<bool>,
    pub(crate) default: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Output {
    description: String,
    value: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Runs {
    using: String,
    pub(crate) steps: Vec<Step>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct Step {
    pub(crate) name: Option<String>,
    pub(crate) id: Option<String>,
    #[serde(rename = "if")]
    pub(crate) condition: Option<String>,
    pub(crate) uses: Option<String>,
    with: Option<BTreeMap<String, String>>,
    pub(crate) run: Option<String>,
    shell: Option<String>,
    pub(crate) env: Option<BTreeMap<String, String>>,
}

pub(crate) fn action() -> Action {
    let text = std::fs::read_to_string(common::repo().join("action.yml")).unwrap();
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("action.yml: {e}"))
}

#[test]
fn action_yml_has_the_documented_inputs_and_outputs() {
    let action = action();
    assert_eq!(action.name, "drover");
    assert!(!action.description.is_empty());
    let defaults = [
        ("tasks", Some("")),
        ("merge", Some("")),
        ("version", Some("")),
        ("binary-url", Some("")),
        ("binary-sha256", Some("")),
        ("anthropic-api-key", Some("")),
        ("openai-api-key", Some("")),
        ("model", Some("")),
        ("provider", Some("")),
        ("jobs", Some("1")),
        ("shard", Some("")),
        ("artifacts", Some("")),
        ("upload-artifacts", Some("true")),
        ("artifact-name", Some("")),
        ("fail-on-task-failure", Some("true")),
        ("args", Some("")),
        ("plan", Some("false")),
    ];
    for (name, default) in defaults {
        let input = action
            .inputs
            .get(name)
            .unwrap_or_else(|| panic!("input {name}"));
        assert!(!input.description.is_empty(), "{name}");
        assert_eq!(input.default.as_deref(), default, "{name}");
        assert_ne!(input.required, Some(true), "{name} has a default");
    }
    assert_eq!(
        action.inputs.len(),
        defaults.len(),
        "{:?}",
        action.inputs.keys()
    );
    for name in [
        "conclusion",
        "exit-code",
        "junit",
        "summary",
        "artifacts",
        "output",
        "plan",
    ] {
        let output = action
            .outputs
            .get(name)
            .unwrap_or_else(|| panic!("output {name}"));
        assert!(!output.description.is_empty());
        assert_eq!(output.value, format!("${{{{ steps.run.outputs.{name} }}}}"));
    }
}

#[test]
fn action_yml_is_a_composite_that_caches_runs_and_uploads() {
    let action = action();
    assert_eq!(action.runs.using, "composite");
    let steps = &action.runs.steps;
    for step in steps {
        assert!(step.name.is_some(), "every step is named: {step:?}");
        assert!(
            step.uses.is_some() != step.run.is_some(),
            "a step either uses an action or runs a script: {step:?}"
        );
        if step.run.is_some() {
            assert_eq!(step.shell.as_deref(), Some("bash"), "{step:?}");
        }
        assert!(step.with.is_none() || step.uses.is_some(), "{step:?}");
    }
    let uses = |prefix: &str| {
        steps
            .iter()
            .find(|s| s.uses.as_deref().is_some_and(|u| u.starts_with(prefix)))
            .unwrap_or_else(|| panic!("a step uses {prefix}"))
    };
    let cache = uses("actions/cache/restore@v4");
    assert_eq!(cache.id.as_deref(), Some("cache"));
    // Saved right after the install, so a job whose tasks fail still saves it.
    let save = uses("actions/cache/save@v4");
    assert_eq!(
        save.condition.as_deref(),
        Some("steps.cache.outputs.cache-hit != 'true'")
    );
    // Whatever the outcome, unless nothing ran (`plan: true` only lists the tasks).
    let upload = uses("actions/upload-artifact@v4");
    assert_eq!(
        upload.condition.as_deref(),
        Some("always() && inputs.upload-artifacts == 'true' && inputs.plan != 'true'")
    );
    let with = upload.with.as_ref().unwrap();
    // The directory the first step chose ($RUNNER_TEMP/drover-artifacts by default).
    assert_eq!(with["path"], "${{ steps.artifacts.outputs.dir }}");
    assert_eq!(steps[0].id.as_deref(), Some("artifacts"));
    let install = steps
        .iter()
        .find(|s| s.name.as_deref() == Some("Install drover"))
        .unwrap();
    assert_eq!(
        install.run.as_deref(),
        Some("bash \"$GITHUB_ACTION_PATH/action/install.sh\"")
    );
    assert_eq!(
        install.condition.as_deref(),
        Some("steps.cache.outputs.cache-hit != 'true'")
    );
    // Never the crates.io crate named drover (an unrelated project); a downloaded binary
    // only with its SHA-256 verified.
    let script = std::fs::read_to_string(common::repo().join("action/install.sh")).unwrap();
    assert!(!script.contains("cargo install"));
    // The download and its checks are the users' install.sh.
    assert!(script.contains("../install.sh"));
    let installer = std::fs::read_to_string(common::repo().join("install.sh")).unwrap();
    assert!(!installer.contains("cargo install drover"));
    assert!(installer.contains("sha256sum"));
    assert!(installer.contains("refusing to run it"));
    // Without a release binary, the action's own sources are built, their build cached.
    let build = steps
        .iter()
        .find(|s| s.name.as_deref() == Some("Build drover from the action's sources"))
        .unwrap();
    assert_eq!(
        build.condition.as_deref(),
        Some("steps.install.outputs.installed == 'false'")
    );
    assert!(build.run.as_ref().unwrap().contains(
        "cargo build --release --locked --manifest-path \"$GITHUB_ACTION_PATH/Cargo.toml\""
    ));
    let rust_cache = uses("Swatinem/rust-cache@v2");
    assert_eq!(
        rust_cache.condition.as_deref(),
        Some("steps.install.outputs.installed == 'false'")
    );
    let run = steps
        .iter()
        .find(|s| s.id.as_deref() == Some("run"))
        .unwrap();
    let script = run.run.as_ref().unwrap();
    for output in ["exit-code", "conclusion", "junit", "summary", "artifacts"] {
        assert!(script.contains(&format!("echo \"{output}=")), "{output}");
    }
    // `output` is drover's own line (see below).
    assert!(script.contains("echo \"$output\" >> \"$GITHUB_OUTPUT\""));
    // The step that runs drover never fails by itself: the upload must still happen.
    assert!(
        !script.contains("set -e"),
        "the run step must not stop on drover's exit code"
    );
    let last = steps.last().unwrap();
    assert!(last.run.as_ref().unwrap().contains("FAIL_ON_TASK_FAILURE"));
}

#[test]
fn secrets_reach_drover_through_the_environment_only() {
    let action = action();
    for step in &action.runs.steps {
        for text in step
            .run
            .iter()
            .chain(step.with.iter().flat_map(|w| w.values()))
        {
            assert!(
                !text.contains("api-key") && !text.contains("secrets."),
                "a key in a command line or action input: {step:?}"
            );
        }
    }
    let run = action
        .runs
        .steps
        .iter()
        .find(|s| s.id.as_deref() == Some("run"))
        .unwrap();
    let env = run.env.as_ref().unwrap();
    assert_eq!(
        env["INPUT_ANTHROPIC_API_KEY"],
        "${{ inputs.anthropic-api-key }}"
    );
    assert_eq!(env["INPUT_OPENAI_API_KEY"], "${{ inputs.openai-api-key }}");
    let script = run.run.as_ref().unwrap();
    assert!(script.contains("export ANTHROPIC_API_KEY=\"$INPUT_ANTHROPIC_API_KEY\""));
    assert!(script.contains("::add-mask::$INPUT_ANTHROPIC_API_KEY"));
    assert!(script.contains("unset INPUT_ANTHROPIC_API_KEY INPUT_OPENAI_API_KEY"));
    assert!(!script.contains("set -x"), "tracing would print the keys");
}

/// Each example workflow and Kubernetes manifest appears in its doc verbatim, inside a
/// ```yaml block.
#[test]
fn docs_include_the_example_workflows_verbatim() {
    let repo = common::repo();
    let cases = [
        ("docs/scaling.md", "examples/workflows/sharded.yml"),
        ("docs/github-action.md", "examples/workflows/release.yml"),
        (
            "docs/github-action.md",
            "examples/workflows/pull-request.yml",
        ),
        (
            "docs/github-action.md",
            "examples/workflows/nightly-refactor.yml",
        ),
        ("docs/scaling.md", "examples/kubernetes/shards.yaml"),
        ("docs/scaling.md", "examples/kubernetes/merge.yaml"),
        ("docs/scaling.md", "examples/workflows/fleet.yml"),
        ("docs/scaling.md", "examples/kubernetes/fleet.yaml"),
        ("docs/scaling.md", "examples/argo/fleet.yaml"),
    ];
    for (doc, example) in cases {
        let doc_text = std::fs::read_to_string(repo.join(doc)).unwrap();
        let workflow = std::fs::read_to_string(repo.join(example)).unwrap();
        assert!(
            doc_text.contains(&format!("```yaml\n{workflow}```\n")),
            "{doc} must contain {example} verbatim in a ```yaml block; copy the file's content into the doc"
        );
    }
}

/// The shard Job and the merge Job are separate files: applied together, the merge would
/// start before any shard had finished.
#[test]
fn the_kubernetes_merge_is_applied_after_the_shards() {
    let repo = common::repo();
    let shards = std::fs::read_to_string(repo.join("examples/kubernetes/shards.yaml")).unwrap();
    let merge = std::fs::read_to_string(repo.join("examples/kubernetes/merge.yaml")).unwrap();
    assert!(shards.contains("completionMode: Indexed"));
    assert!(shards.contains("--shard auto"));
    assert!(
        !shards.contains("report merge"),
        "the merge Job belongs in merge.yaml"
    );
    assert!(merge.contains("drover report merge"));
    assert!(!merge.contains("completionMode"));
    assert!(merge.contains("kubectl wait --for=condition=complete job/drover-shards"));
    let doc = std::fs::read_to_string(repo.join("docs/scaling.md")).unwrap();
    assert!(doc.contains("kubectl wait --for=condition=complete job/drover-shards"));
}

/// The `output` output comes from the summary.json drover wrote (`drover report
/// outputs`), never from files found in the artifacts directory; what it holds is
/// tested by running the step (action_steps.rs).
#[test]
fn the_output_output_is_read_from_drovers_summary_never_globbed() {
    let action = action();
    let run = action
        .runs
        .steps
        .iter()
        .find(|s| s.id.as_deref() == Some("run"))
        .unwrap();
    let script = run.run.as_ref().unwrap();
    assert!(
        script.contains("\"$ROOT/bin/drover\" report outputs \"$ARTIFACTS\""),
        "{script}"
    );
    assert!(
        !script.contains("\"$ARTIFACTS\"/") && !script.contains("output.json"),
        "the run step looks for files in the artifacts directory itself: {script}"
    );
}

/// `action/install.sh` run as the action runs it, its releases served from 127.0.0.1;
/// its exit code, `installed=` output and what it printed.
fn install(
    server: &crate::mock_server::MockServer,
    version: &str,
    pinned: &str,
) -> (Option<i32>, String, String, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let output_file = dir.path().join("github_output");
    let output = std::process::Command::new("bash")
        .arg(common::repo().join("action/install.sh"))
        .env("ROOT", dir.path().join("root"))
        .env("GITHUB_OUTPUT", &output_file)
        .env("VERSION", version)
        .env("REPO", "OWNER/drover")
        .env("RUNNER_OS", "Linux")
        .env("RUNNER_ARCH", "X64")
        .env("BINARY_SHA256", pinned)
        .env("DROVER_RELEASES_URL", &server.base_url)
        .env_remove("BINARY_URL")
        .env_remove("http_proxy")
        .env_remove("HTTP_PROXY")
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let outputs = std::fs::read_to_string(&output_file).unwrap_or_default();
    (output.status.code(), outputs, said, dir)
}

#[test]
fn a_release_binary_is_installed_only_with_its_listed_checksum() {
    use crate::mock_server::{MockServer, Reply};
    let binary = "#!/bin/sh\necho drover 9.9.9\n";
    let sum = {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(binary.as_bytes());
        digest
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    let sums = format!(
        "{sum}  drover-x86_64-unknown-linux-musl\n{}  drover-aarch64-unknown-linux-musl\n",
        "0".repeat(64)
    );
    let served =
        |sums: &str| MockServer::start(vec![Reply::status(200, sums), Reply::status(200, binary)]);

    // The release's binary, its sum as SHA256SUMS lists it: installed.
    let server = served(&sums);
    let (code, outputs, said, dir) = install(&server, "v9.9.9", "");
    assert_eq!(code, Some(0), "{said}");
    assert!(outputs.contains("installed=true"), "{outputs}");
    let installed = dir.path().join("root/bin/drover");
    assert_eq!(std::fs::read_to_string(&installed).unwrap(), binary);
    let requests = server.requests();
    assert!(
        requests[0].line.contains("/v9.9.9/SHA256SUMS"),
        "{}",
        requests[0].line
    );
    assert!(
        requests[1]
            .line
            .contains("/v9.9.9/drover-x86_64-unknown-linux-musl"),
        "{}",
        requests[1].line
    );

    // A binary that is not the one listed: refused, nothing installed.
    let server = served(&sums.replacen(&sum, &"1".repeat(64), 1));
    let (code, outputs, said, dir) = install(&server, "v9.9.9", "");
    assert_eq!(code, Some(2), "{said}");
    assert!(said.contains("refusing to run it"), "{said}");
    assert!(!outputs.contains("installed=true"));
    assert!(!dir.path().join("root/bin/drover").exists());

    // Listed, but not the binary pinned with binary-sha256: refused.
    let server = served(&sums);
    let (code, _, said, _) = install(&server, "v9.9.9", &"2".repeat(64));
    assert_eq!(code, Some(2), "{said}");
    assert!(said.contains("pinned SHA-256"), "{said}");

    // A branch: nothing downloaded, built from source.
    let server = served(&sums);
    let (code, outputs, said, _) = install(&server, "main", "");
    assert_eq!(code, Some(0), "{said}");
    assert!(outputs.contains("installed=false"), "{outputs}");
    assert!(server.requests().is_empty());

    // A pinned binary with no release to download: refused, never another build.
    let server = MockServer::start(Vec::new());
    let (code, outputs, said, _) = install(&server, "main", &sum);
    assert_eq!(code, Some(2), "{said}");
    assert!(!outputs.contains("installed="), "{outputs}");
}
