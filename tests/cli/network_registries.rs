//! A real package install through drover's egress proxy (docs/sandbox.md, "Network by
//! name"): `npm ci` of a one-package lockfile and `pip install` of one small wheel, each
//! in a `setup:` step whose only network is a registry preset, download what they need
//! and leave the package in the workspace; every connection is recorded as allowed by
//! the preset's host.
//!
//! These reach the package registries (CI has them; the machine's proxy variables are
//! not passed on, drover's proxy connects directly). Which registry is read from the
//! client's own configuration when the test runs (`npm config get registry`;
//! `PIP_INDEX_URL`, else `pip config get global.index-url`, else pypi.org), never
//! written here: the preset's host is allowed by the preset, another (a mirror) by an
//! allow entry naming it. The caches are fresh (`--cache "$TMPDIR/npm-cache"`,
//! `--no-cache-dir`) and pip's local wheel sources are cleared in the command, so both
//! really download. Run as the test's own user (root in CI), with its own HOME and PATH,
//! so the install sees the configuration the test read; the sandbox's confinement of
//! an unprivileged user's connections is covered with loopback hosts elsewhere
//! (network_egress.rs, network_bypass.rs).

use crate::common::{self, assert_exit, drover_without_proxy, events, transcript, write_spec};

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

/// The one package the lockfile installs, and its integrity as the registry publishes it
/// (the tarball's digest: the same from any registry serving it).
const IS_NUMBER_INTEGRITY: &str = "sha512-41Cifkg6e8TylSpdtTpeLVMqvSBEVzTttHvERD741+pnZ8ANv0004MRL43QKPDlK9cGvNp6NZWZUBlbGXYxxng==";

/// The stdout of a client's config command, trimmed; None when it fails or says nothing.
fn config(program: &str, args: &[&str]) -> Option<String> {
    let output = Command::new(program).args(args).output().ok()?;
    let text = String::from_utf8_lossy(&output.stdout).trim().to_string();
    (output.status.success() && !text.is_empty() && text != "undefined").then_some(text)
}

/// The network rules for a registry at `url`: the preset when its host is one of the
/// preset's (on the default port), else an allow entry naming the host (and its port).
/// Also the rule a connection to that host is recorded with.
fn rules_for(url: &str, preset: &str, preset_hosts: &[&str]) -> (String, String, String) {
    let parsed = url::Url::parse(url).unwrap_or_else(|e| panic!("registry {url:?}: {e}"));
    let host = parsed.host_str().unwrap().to_ascii_lowercase();
    match parsed.port() {
        None if preset_hosts.contains(&host.as_str()) => (
            format!("{{ registries: [{preset}] }}"),
            host.clone(),
            format!("{host} (registries: {preset})"),
        ),
        None => (format!("{{ allow: [\"{host}\"] }}"), host.clone(), host),
        Some(port) => (
            format!("{{ allow: [\"{host}:{port}\"] }}"),
            host.clone(),
            format!("{host}:{port}"),
        ),
    }
}

/// A task whose only work is the setup step `deps` running `run` under `sandbox:
/// {network: NETWORK}`.
fn setup_task(dir: &Path, network: &str, run: &str) -> PathBuf {
    write_spec(
        dir,
        "task.yaml",
        &format!(
            "version: 1\nname: deps\nprompt: p\nworkspace: ws\nmodel:\n  provider: script\n  script:\n    - text: done\nsetup:\n  - name: deps\n    run: {}\n    timeout: 5m\n    sandbox: {{ network: {network} }}\n",
            serde_json::to_string(run).unwrap()
        ),
    )
}

/// Run the task; its transcript and summary.json.
fn run(dir: &Path, spec: &Path) -> (Vec<Value>, Value) {
    let output = drover_without_proxy()
        .arg("run")
        .arg(spec)
        .arg("--artifacts")
        .arg(dir.join("out"))
        .output()
        .unwrap();
    let lines = transcript(&dir.join("out/deps/transcript.jsonl"));
    let setup = events(&lines, "setup");
    assert_eq!(setup.len(), 1, "{setup:?}");
    assert_eq!(
        setup[0]["passed"],
        true,
        "{}\n{:#?}",
        setup[0]["output_tail"].as_str().unwrap_or_default(),
        events(&lines, "network")
    );
    assert_exit(&output, 0);
    (lines, common::summary(&dir.join("out")))
}

/// Every connection the setup step made: allowed, through the proxy, by one of `rules`
/// (host → rule); each host of `must` among them, with bytes downloaded from it.
fn assert_allowed(lines: &[Value], rules: &[(String, String)], must: &[&str]) {
    let network = events(lines, "network");
    assert!(!network.is_empty(), "no connection recorded");
    for event in &network {
        assert_eq!(
            (&event["source"], &event["name"]),
            (&json!("setup"), &json!("deps")),
            "{event}"
        );
        assert_eq!(event["decision"], "allowed", "{event}");
        assert_eq!(event["reason"], Value::Null, "{event}");
        let host = event["host"].as_str().unwrap();
        let rule = rules
            .iter()
            .find(|(h, _)| h == host)
            .map(|(_, rule)| rule.as_str());
        assert_eq!(event["rule"].as_str(), rule, "{event}");
        assert_eq!(
            event["protocol"], "connect",
            "TLS through a tunnel: {event}"
        );
    }
    for host in must {
        let reached: u64 = network
            .iter()
            .filter(|e| e["host"] == *host)
            .map(|e| e["bytes_down"].as_u64().unwrap())
            .sum();
        assert!(reached > 0, "nothing downloaded from {host}: {network:#?}");
    }
}

/// `npm ci` in a setup step with `registries: [npm]` (or the configured registry
/// allowed) installs is-number 7.0.0 from the registry through the proxy.
#[test]
#[cfg_attr(
    not(all(drover_has_sandbox, drover_has_npm)),
    ignore = "needs npm (and node) and drover's sandbox (Landlock ABI 3+)"
)]
fn npm_ci_installs_through_the_proxy_with_the_npm_preset() {
    common::require_sandbox();
    common::require_program("npm");
    let mut registry =
        config("npm", &["config", "get", "registry"]).expect("npm config get registry");
    if !registry.ends_with('/') {
        registry.push('/');
    }
    let (network, host, rule) = rules_for(
        &registry,
        "npm",
        &["registry.npmjs.org", "registry.yarnpkg.com"],
    );
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let package = json!({
        "name": "drover-npm-test",
        "version": "1.0.0",
        "dependencies": { "is-number": "7.0.0" },
    });
    std::fs::write(ws.join("package.json"), package.to_string()).unwrap();
    let lock = json!({
        "name": "drover-npm-test",
        "version": "1.0.0",
        "lockfileVersion": 3,
        "requires": true,
        "packages": {
            "": {
                "name": "drover-npm-test",
                "version": "1.0.0",
                "dependencies": { "is-number": "7.0.0" },
            },
            "node_modules/is-number": {
                "version": "7.0.0",
                "resolved": format!("{registry}is-number/-/is-number-7.0.0.tgz"),
                "integrity": IS_NUMBER_INTEGRITY,
                "engines": { "node": ">=0.12.0" },
            },
        },
    });
    std::fs::write(ws.join("package-lock.json"), lock.to_string()).unwrap();
    let spec = setup_task(
        dir.path(),
        &network,
        "npm ci --cache \"$TMPDIR/npm-cache\" --no-audit --no-fund --no-update-notifier",
    );
    let (lines, summary) = run(dir.path(), &spec);
    let installed: Value = serde_json::from_str(
        &std::fs::read_to_string(ws.join("node_modules/is-number/package.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(installed["version"], "7.0.0");
    assert!(ws.join("node_modules/is-number/index.js").is_file());
    assert_allowed(&lines, &[(host.clone(), rule)], &[&host]);
    let tally = &summary["tasks"][0]["network"];
    assert_eq!(tally["denied"], 0, "{tally}");
    assert!(tally["bytes"].as_u64().unwrap() > 0, "{tally}");
}

/// `pip install six==1.16.0 --target` in a setup step with `registries: [pypi]` (or the
/// configured index allowed) downloads the wheel from the index through the proxy.
#[test]
#[cfg_attr(
    not(all(drover_has_sandbox, drover_has_pip)),
    ignore = "needs python3 with pip (python3 -m pip) and drover's sandbox (Landlock ABI 3+)"
)]
fn pip_install_downloads_through_the_proxy_with_the_pypi_preset() {
    common::require_sandbox();
    // The interpreter itself, not a wrapper (pyenv's shim fails a command that installs,
    // rehashing where the sandbox lets it write nothing).
    let python =
        config("python3", &["-c", "import sys; print(sys.executable)"]).expect("python3 runs");
    assert!(
        config(&python, &["-m", "pip", "--version"]).is_some(),
        "drover_has_pip is set (the build found `python3 -m pip`, or CI=true runs every test), but it does not run; install pip (.ci/run does)"
    );
    let index = std::env::var("PIP_INDEX_URL")
        .ok()
        .filter(|url| !url.is_empty())
        .or_else(|| config(&python, &["-m", "pip", "config", "get", "global.index-url"]))
        .or_else(|| {
            // pip's own default index, as pip knows it.
            let default = "from pip._internal.models.index import PyPI; print(PyPI.simple_url)";
            config(&python, &["-c", default])
        })
        .expect("pip names its default index");
    let pypi = ["pypi.org", "files.pythonhosted.org"];
    let (network, host, rule) = rules_for(&index, "pypi", &pypi);
    let mut rules = vec![(host.clone(), rule)];
    let mut must = vec![host.as_str()];
    if host == "pypi.org" {
        // The index lists the files on the preset's other host.
        rules.push((
            "files.pythonhosted.org".to_string(),
            "files.pythonhosted.org (registries: pypi)".to_string(),
        ));
        must.push("files.pythonhosted.org");
    }
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let spec = setup_task(
        dir.path(),
        &network,
        &format!(
            "unset PIP_FIND_LINKS PIP_NO_INDEX && {} -m pip install --no-cache-dir --disable-pip-version-check --target site six==1.16.0",
            serde_json::to_string(&python).unwrap()
        ),
    );
    let (lines, summary) = run(dir.path(), &spec);
    assert!(ws.join("site/six.py").is_file());
    assert!(ws.join("site/six-1.16.0.dist-info").is_dir());
    assert_allowed(&lines, &rules, &must);
    let tally = &summary["tasks"][0]["network"];
    assert_eq!(tally["denied"], 0, "{tally}");
}
