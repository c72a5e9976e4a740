//! `install.sh`, the users' way to drover without a Rust toolchain, run as they run it
//! against a release mirror on 127.0.0.1: a binary is installed only with the SHA-256 its
//! release's SHA256SUMS lists, atomically, and every failure says why with its own exit
//! code and leaves nothing behind.

use crate::common;
use crate::mock_server::{MockServer, Reply};

use std::path::Path;

const BINARY: &str = "#!/bin/sh\necho drover 9.9.9\n";

fn sha256_hex(text: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn sums(sum: &str) -> String {
    format!("{sum}  drover-x86_64-unknown-linux-musl\n{sum}  drover-aarch64-unknown-linux-musl\n")
}

/// Run install.sh with `args` and the mirror `server`; its exit code and what it said.
fn install(server: &MockServer, args: &[&str]) -> (Option<i32>, String) {
    let output = std::process::Command::new("bash")
        .arg(common::repo().join("install.sh"))
        .args(args)
        .env("DROVER_RELEASES_URL", &server.base_url)
        .env_remove("DROVER_REPO")
        .env_remove("GITHUB_ACTIONS")
        .env_remove("http_proxy")
        .env_remove("HTTP_PROXY")
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.code(), said)
}

/// The entries of `dir`, names only, sorted.
fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|read| {
            read.map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn the_latest_release_is_installed_with_its_listed_checksum() {
    let dir = tempfile::tempdir().unwrap();
    let to = dir.path().join("bin");
    let server = MockServer::start(vec![
        Reply::status(200, &sums(&sha256_hex(BINARY))),
        Reply::status(200, BINARY),
    ]);
    let to_arg = to.display().to_string();
    let (code, said) = install(
        &server,
        &["--to", &to_arg, "--target", "x86_64-unknown-linux-musl"],
    );
    assert_eq!(code, Some(0), "{said}");
    assert!(
        said.contains("installed drover-x86_64-unknown-linux-musl of the latest release"),
        "{said}"
    );
    let installed = to.join("drover");
    assert_eq!(std::fs::read_to_string(&installed).unwrap(), BINARY);
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&installed).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o755);
    assert_eq!(entries(&to), ["drover"], "no download left beside it");
    let requests = server.requests();
    assert!(
        requests[0].line.contains("/latest/SHA256SUMS"),
        "{}",
        requests[0].line
    );
    assert!(
        requests[1]
            .line
            .contains("/latest/drover-x86_64-unknown-linux-musl"),
        "{}",
        requests[1].line
    );
}

#[test]
fn a_named_release_and_target_are_fetched_and_a_pin_must_match_too() {
    let dir = tempfile::tempdir().unwrap();
    let to = dir.path().display().to_string();
    let sum = sha256_hex(BINARY);
    let server = MockServer::start(vec![
        Reply::status(200, &sums(&sum)),
        Reply::status(200, BINARY),
    ]);
    let (code, said) = install(
        &server,
        &[
            "--version",
            "v9.9.9",
            "--target",
            "aarch64-unknown-linux-musl",
            "--to",
            &to,
            "--sha256",
            &sum.to_uppercase(),
        ],
    );
    assert_eq!(code, Some(0), "{said}");
    let requests = server.requests();
    assert!(requests[0].line.contains("/v9.9.9/SHA256SUMS"));
    assert!(
        requests[1]
            .line
            .contains("/v9.9.9/drover-aarch64-unknown-linux-musl")
    );

    // Listed in SHA256SUMS, but not the pinned binary: refused.
    let server = MockServer::start(vec![
        Reply::status(200, &sums(&sum)),
        Reply::status(200, BINARY),
    ]);
    let other = tempfile::tempdir().unwrap();
    let other_to = other.path().display().to_string();
    let (code, said) = install(
        &server,
        &[
            "--version",
            "v9.9.9",
            "--target",
            "x86_64-unknown-linux-musl",
            "--to",
            &other_to,
            "--sha256",
            &"2".repeat(64),
        ],
    );
    assert_eq!(code, Some(2), "{said}");
    assert!(said.contains("pinned SHA-256"), "{said}");
    assert!(
        entries(other.path()).is_empty(),
        "{:?}",
        entries(other.path())
    );
}

#[test]
fn a_binary_that_is_not_the_listed_one_is_refused_and_the_installed_one_kept() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("drover"), "the old drover").unwrap();
    let to = dir.path().display().to_string();
    let server = MockServer::start(vec![
        Reply::status(200, &sums(&"1".repeat(64))),
        Reply::status(200, BINARY),
    ]);
    let (code, said) = install(
        &server,
        &[
            "--version",
            "v9.9.9",
            "--target",
            "x86_64-unknown-linux-musl",
            "--to",
            &to,
        ],
    );
    assert_eq!(code, Some(2), "{said}");
    assert!(said.contains("refusing to run it"), "{said}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("drover")).unwrap(),
        "the old drover"
    );
    assert_eq!(entries(dir.path()), ["drover"]);
}

#[test]
fn no_such_release_is_exit_4_and_bad_usage_exit_2_before_any_download() {
    let dir = tempfile::tempdir().unwrap();
    let to = dir.path().display().to_string();
    let server = MockServer::start(vec![Reply::status(404, "Not Found")]);
    let (code, said) = install(
        &server,
        &[
            "--version",
            "v9.9.9",
            "--target",
            "x86_64-unknown-linux-musl",
            "--to",
            &to,
        ],
    );
    assert_eq!(code, Some(4), "{said}");
    assert!(said.contains("no SHA256SUMS for v9.9.9"), "{said}");
    assert!(entries(dir.path()).is_empty());

    let server = MockServer::start(Vec::new());
    for args in [
        vec!["--version", "latest"],
        vec!["--version", "v1.2.3;rm"],
        vec!["--sha256", "abc"],
        vec!["--repo", "owner/name/../x"],
        vec!["--url", "http://127.0.0.1:1/drover"],
        vec!["--frobnicate", "1"],
    ] {
        let mut all = args.clone();
        all.extend(["--to", &to]);
        let (code, said) = install(&server, &all);
        assert_eq!(code, Some(2), "{args:?}: {said}");
    }
    assert!(server.requests().is_empty());
}

#[test]
fn a_binary_by_url_is_installed_only_with_its_sha256() {
    let dir = tempfile::tempdir().unwrap();
    let to = dir.path().display().to_string();
    let server = MockServer::start(vec![Reply::status(200, BINARY), Reply::status(200, BINARY)]);
    let url = format!("{}/my/drover", server.base_url);
    let (code, said) = install(
        &server,
        &["--url", &url, "--sha256", &"3".repeat(64), "--to", &to],
    );
    assert_eq!(code, Some(2), "{said}");
    assert!(entries(dir.path()).is_empty());
    let (code, said) = install(
        &server,
        &["--url", &url, "--sha256", &sha256_hex(BINARY), "--to", &to],
    );
    assert_eq!(code, Some(0), "{said}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("drover")).unwrap(),
        BINARY
    );
}

/// `cargo binstall` reads `[package.metadata.binstall]`: its URL must name the assets the
/// release workflow publishes, for both targets it builds.
#[test]
fn binstall_metadata_names_the_release_assets() {
    let manifest = std::fs::read_to_string(common::repo().join("Cargo.toml")).unwrap();
    let release =
        std::fs::read_to_string(common::repo().join("examples/workflows/release.yml")).unwrap();
    let line = manifest
        .lines()
        .find(|line| line.starts_with("pkg-url = "))
        .expect("Cargo.toml has binstall's pkg-url");
    assert_eq!(
        line,
        r#"pkg-url = "{ repo }/releases/download/v{ version }/drover-{ target }""#
    );
    assert!(manifest.contains("\npkg-fmt = \"bin\"\n"));
    assert!(manifest.contains("\nrepository = \"https://"));
    // The workflow publishes drover-<target> for these targets, on tags vX.Y.Z.
    for target in ["x86_64-unknown-linux-musl", "aarch64-unknown-linux-musl"] {
        assert!(release.contains(&format!("- target: {target}")), "{target}");
    }
    assert!(release.contains("cp \"target/$TARGET/release/drover\" \"drover-$TARGET\""));
    assert!(release.contains(r#"tags: ["v[0-9]+.[0-9]+.[0-9]+"]"#));
}
