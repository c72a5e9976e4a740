//! `sandbox.network` by name (docs/sandbox.md, "Network by name"): `drover validate`
//! takes allow/deny/registries rules wherever a spec writes a `sandbox:` — the task, a
//! setup step, a check, a hook, an MCP server — and refuses a bad entry at its
//! `file:line:column` with exit 2; `drover exec --allow-host`/`--registry` write the
//! same rules into the task's spec.

use std::path::Path;
use std::process::Output;

use crate::common::{drover, write_spec};

const HEAD: &str = "version: 1\nname: net\nprompt: p\nworkspace: ws\nmodel: { provider: script, script: [{ text: done }] }\n";

/// A spec with rules in every place a `sandbox:` may be written.
const EVERYWHERE: &str = "\
sandbox:
  network:
    allow: [api.example.org, \"*.githubusercontent.com\", \"localhost:8080\", \"[::1]:9000\"]
    deny: [metadata.example.org]
    registries: [npm, crates]
setup:
  - name: deps
    run: npm ci
    sandbox: { network: { registries: [npm, pypi, go, maven] } }
checks:
  - name: tests
    run: cargo test
    sandbox: { network: { allow: [\"127.0.0.1:5432\"], deny: [\"*.ads.example\"] } }
hooks:
  PostToolUse:
    - matcher: Edit
      hooks: [{ type: command, command: ./fmt.sh, sandbox: { network: { allow: [\"fmt.example:8443\"] } } }]
mcp:
  servers:
    docs:
      command: docs-server
      sandbox: { network: { allow: [docs.example.org], registries: [pypi] } }
";

fn validate(dir: &Path, body: &str) -> Output {
    std::fs::create_dir_all(dir.join("ws")).unwrap();
    let spec = write_spec(dir, "spec.yaml", &format!("{HEAD}{body}"));
    drover().arg("validate").arg(&spec).output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn validate_takes_network_rules_in_every_sandbox_of_a_spec() {
    let dir = tempfile::tempdir().unwrap();
    let output = validate(dir.path(), EVERYWHERE);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(
        text(&output.stdout).contains("ok: "),
        "{}",
        text(&output.stdout)
    );
    assert!(
        !text(&output.stderr).contains("allows no host"),
        "{}",
        text(&output.stderr)
    );
}

#[test]
fn validate_refuses_a_bad_entry_at_its_line_and_column_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.yaml").display().to_string();
    for (body, at, says) in [
        (
            "sandbox:\n  network:\n    allow:\n      - api.example.org\n      - https://x.invalid\n",
            "10:9",
            "sandbox.network.allow[1]: \"https://x.invalid\" must be a host name, not a URL: write \"x.invalid\"",
        ),
        (
            "checks:\n  - name: t\n    run: \"true\"\n    sandbox: { network: { deny: [a.example, \"*\"] } }\n",
            "9:45",
            "sandbox.network.deny[1]: \"*\" would allow every host",
        ),
        (
            "setup:\n  - name: s\n    run: \"true\"\n    sandbox:\n      network:\n        registries: [npm, rubygems]\n",
            "11:27",
            "sandbox.network.registries[1]: \"rubygems\" is not a registry drover knows; write one of npm, pypi, crates, go, maven",
        ),
        (
            "hooks:\n  Stop:\n    - hooks: [{ type: command, command: x, sandbox: { network: { allow: [\"x.example:0\"] } } }]\n",
            "8:74",
            "sandbox.network.allow[0]: \"x.example:0\": port 0 names no port",
        ),
        (
            "mcp:\n  servers:\n    docs:\n      command: d\n      sandbox: { network: { allow: [\"::1\"] } }\n",
            "10:37",
            "sandbox.network.allow[0]: \"::1\": an IPv6 address is written in brackets: [::1]",
        ),
        (
            "sandbox:\n  network:\n    allow:\n      - *.example.org\n",
            "9:9",
            "*.example.org is read as a YAML alias",
        ),
    ] {
        let output = validate(dir.path(), body);
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{body}\n{stderr}");
        assert!(
            stderr.contains(&format!("{spec}:{at}: {says}")),
            "{body}\nwanted {spec}:{at}: {says}\n{stderr}"
        );
        assert!(text(&output.stdout).is_empty(), "{}", text(&output.stdout));
    }
}

#[test]
fn validate_notes_a_network_that_allows_no_host() {
    let dir = tempfile::tempdir().unwrap();
    let output = validate(
        dir.path(),
        "sandbox: { network: { deny: [a.example] } }\nchecks:\n  - name: t\n    run: \"true\"\n    sandbox: { network: {} }\n",
    );
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    for at in ["sandbox", "checks[0].sandbox"] {
        assert!(
            stderr.contains(&format!(
                "drover: note: net: {at}.network allows no host: every connection its commands make is refused"
            )),
            "{at}: {stderr}"
        );
    }
}

fn exec(dir: &Path, args: &[&str]) -> Output {
    std::fs::create_dir_all(dir.join("ws")).unwrap();
    drover()
        .current_dir(dir)
        .args(["exec", "p", "--workspace", "ws", "--print-spec"])
        .args(args)
        .env("ANTHROPIC_API_KEY", "sk-ant-network-spec-0123456789")
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap()
}

#[test]
fn exec_allow_host_and_registry_write_the_rules_into_the_spec() {
    let dir = tempfile::tempdir().unwrap();
    let output = exec(
        dir.path(),
        &[
            "--allow-host",
            "API.example.org",
            "--allow-host",
            "[::1]:8080",
            "--registry",
            "npm",
            "--registry",
            "crates",
        ],
    );
    let printed = text(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(
        printed.contains(
            "sandbox: { network: { allow: [\"api.example.org\", \"[::1]:8080\"], registries: [\"npm\", \"crates\"] } }\n"
        ),
        "{printed}"
    );
    // The printed spec is a spec `drover validate` takes as it is.
    let spec = write_spec(dir.path(), "printed.yaml", &printed);
    let validated = drover()
        .arg("validate")
        .arg(&spec)
        .env("ANTHROPIC_API_KEY", "sk-ant-network-spec-0123456789")
        .output()
        .unwrap();
    assert_eq!(
        validated.status.code(),
        Some(0),
        "{}",
        text(&validated.stderr)
    );

    let only_registry = text(&exec(dir.path(), &["--registry", "go"]).stdout);
    assert!(
        only_registry.contains("sandbox: { network: { registries: [\"go\"] } }\n"),
        "{only_registry}"
    );
    let whole = text(&exec(dir.path(), &["--network"]).stdout);
    assert!(whole.contains("sandbox: { network: true }\n"), "{whole}");
}

#[test]
fn exec_refuses_a_bad_host_or_registry_and_hosts_without_the_sandbox_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    for (args, says) in [
        (
            &["--allow-host", "https://x.invalid"][..],
            "\"https://x.invalid\" must be a host name, not a URL: write \"x.invalid\"",
        ),
        (&["--allow-host", "x.org:0"][..], "port 0 names no port"),
        (
            &["--registry", "rubygems"][..],
            "\"rubygems\" is not a registry drover knows; write one of npm, pypi, crates, go, maven",
        ),
        (&["--allow-host", "x.org", "--network"][..], "--network"),
        (&["--registry", "npm", "--network"][..], "--network"),
        (
            &["--allow-host", "x.org", "--sandbox", "off"][..],
            "--allow-host needs the sandbox",
        ),
        (
            &["--registry", "npm", "--sandbox", "off"][..],
            "--registry needs the sandbox",
        ),
    ] {
        let output = exec(dir.path(), args);
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(text(&output.stdout).is_empty(), "{args:?}");
    }
}
