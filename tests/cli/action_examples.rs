//! The Action knows which drover it is without `github.action_ref` (which GitHub does not
//! promise inside a composite action), and the example workflows do not trip over
//! themselves: a re-run never merges an earlier merged report with the shards, and a
//! pull request's second push does not pay for a second model run.

use crate::common;

use std::path::Path;

use serde_json::Value;

/// `action/version.sh` as the "Work out the drover build to use" step runs it: what it
/// printed on stdout (the version) and on stderr (its note).
fn version(action_path: &Path, action_ref: &str, explicit: &str) -> (String, String) {
    let output = std::process::Command::new("bash")
        .arg(common::repo().join("action/version.sh"))
        .env("GITHUB_ACTION_PATH", action_path)
        .env("ACTION_REF", action_ref)
        .env("EXPLICIT_VERSION", explicit)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    (
        String::from_utf8(output.stdout).unwrap().trim().to_string(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

/// An action checkout at `folder` (below a temp dir) whose Cargo.toml says `sources`.
fn checkout(root: &Path, folder: &str, sources: &str) -> std::path::PathBuf {
    let path = root.join(folder);
    std::fs::create_dir_all(&path).unwrap();
    std::fs::write(
        path.join("Cargo.toml"),
        format!(
            "[workspace]\nmembers = [\".\"]\n\n[package]\nname = \"drover\"\nversion = \"{sources}\"\n\n[dependencies]\nserde = {{ version = \"1\" }}\n"
        ),
    )
    .unwrap();
    path
}

#[test]
fn the_action_knows_its_release_from_where_the_runner_checked_it_out() {
    let temp = tempfile::tempdir().unwrap();
    let tag = checkout(temp.path(), "_actions/OWNER/drover/v9.9.9", "9.9.9");
    // No github.action_ref (a composite action): the checkout's folder names the tag.
    assert_eq!(version(&tag, "", "").0, "v9.9.9");
    // Used inside another composite action, action_ref names the outer one's ref.
    assert_eq!(version(&tag, "v1.0.0", "").0, "v9.9.9");
    // A `version:` input wins.
    assert_eq!(version(&tag, "", "v1.2.3").0, "v1.2.3");

    // A tag whose sources say another version: those sources are built, never another
    // release's binary.
    let stale = checkout(temp.path(), "_actions/OWNER/drover/v9.9.8", "9.9.7");
    let (chosen, note) = version(&stale, "", "");
    assert!(!chosen.starts_with('v'), "{chosen}");
    assert!(note.contains("sources are version 9.9.7"), "{note}");

    // A branch or a moving tag: built from source.
    let branch = checkout(temp.path(), "_actions/OWNER/drover/main", "9.9.9");
    assert_eq!(version(&branch, "", "").0, "main");
    let moving = checkout(temp.path(), "_actions/OWNER/drover/v9", "9.9.9");
    assert_eq!(version(&moving, "", "").0, "v9");

    // A local action (`uses: ./`): only action_ref can name a release, and only one
    // its sources agree with.
    let local = checkout(temp.path(), "work/repo/repo", "9.9.9");
    assert_eq!(version(&local, "", "").0, "");
    assert_eq!(version(&local, "v9.9.9", "").0, "v9.9.9");
    assert!(!version(&local, "v9.9.6", "").0.starts_with('v'));
}

#[test]
fn a_tag_whose_sources_disagree_builds_them_and_downloads_nothing() {
    use crate::mock_server::MockServer;
    let temp = tempfile::tempdir().unwrap();
    let stale = checkout(temp.path(), "_actions/OWNER/drover/v9.9.8", "9.9.7");
    let (chosen, _) = version(&stale, "", "");
    let server = MockServer::start(Vec::new());
    let output_file = temp.path().join("github_output");
    let output = std::process::Command::new("bash")
        .arg(common::repo().join("action/install.sh"))
        .env("ROOT", temp.path().join("root"))
        .env("GITHUB_OUTPUT", &output_file)
        .env("VERSION", &chosen)
        .env("REPO", "OWNER/drover")
        .env("RUNNER_OS", "Linux")
        .env("RUNNER_ARCH", "X64")
        .env("DROVER_RELEASES_URL", &server.base_url)
        .env_remove("BINARY_URL")
        .env_remove("BINARY_SHA256")
        .env_remove("EXPLICIT_VERSION")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let outputs = std::fs::read_to_string(&output_file).unwrap();
    assert!(outputs.contains("installed=false"), "{outputs}");
    assert!(server.requests().is_empty());
}

/// Every example workflow, parsed.
fn workflows() -> Vec<(String, Value)> {
    let dir = common::repo().join("examples/workflows");
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let workflow: Value =
            serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        found.push((path.display().to_string(), workflow));
    }
    assert!(found.len() >= 4, "{found:?}");
    found
}

/// The steps of every job of `workflow`.
fn steps(workflow: &Value) -> impl Iterator<Item = &Value> {
    workflow["jobs"]
        .as_object()
        .into_iter()
        .flat_map(|jobs| jobs.values())
        .flat_map(|job| job["steps"].as_array().into_iter().flatten())
}

/// An artifact name as it is once the expressions in it have a value.
fn expanded(name: &str) -> String {
    let mut out = String::new();
    let mut rest = name;
    while let Some(start) = rest.find("${{") {
        out.push_str(&rest[..start]);
        let end = start + rest[start..].find("}}").unwrap();
        out.push('1');
        rest = &rest[end + 2..];
    }
    out + rest
}

#[test]
fn no_example_downloads_its_own_merged_report_with_the_shards() {
    let mut patterns_seen = 0;
    for (file, workflow) in workflows() {
        // drover's Action uploads under `artifact-name`, upload-artifact under `name`.
        let uploaded: Vec<String> = steps(&workflow)
            .filter_map(|step| {
                let uses = step["uses"].as_str().unwrap_or_default();
                if uses.starts_with("actions/upload-artifact") {
                    step["with"]["name"].as_str()
                } else {
                    step["with"]["artifact-name"].as_str()
                }
            })
            .map(expanded)
            .collect();
        let merged: Vec<String> = steps(&workflow)
            .filter(|step| step["with"]["merge"].is_string())
            .map(|step| {
                expanded(
                    step["with"]["artifact-name"]
                        .as_str()
                        .unwrap_or("drover-artifacts-merged"),
                )
            })
            .collect();
        for step in steps(&workflow) {
            let Some(pattern) = step["with"]["pattern"].as_str() else {
                continue;
            };
            patterns_seen += 1;
            let glob = globset::Glob::new(pattern).unwrap().compile_matcher();
            assert!(
                uploaded.iter().any(|name| glob.is_match(name)),
                "{file}: the pattern {pattern} matches none of the uploads {uploaded:?}"
            );
            for name in &merged {
                assert!(
                    !glob.is_match(name),
                    "{file}: the pattern {pattern} also downloads the merged report {name}; a re-run would merge it with the shards"
                );
            }
        }
    }
    assert!(
        patterns_seen >= 2,
        "the sharded examples download by pattern"
    );
}

#[test]
fn pull_request_examples_cancel_the_run_of_a_superseded_push() {
    let mut pull_request_workflows = 0;
    for (file, workflow) in workflows() {
        if workflow["on"].get("pull_request").is_none() {
            continue;
        }
        pull_request_workflows += 1;
        let concurrency = &workflow["concurrency"];
        let group = concurrency["group"].as_str().unwrap_or_default();
        assert!(
            group.contains("github.event.pull_request.number"),
            "{file}: one concurrency group per pull request, not {concurrency}"
        );
        assert_eq!(concurrency["cancel-in-progress"], true, "{file}");
    }
    assert!(pull_request_workflows >= 1);
}
