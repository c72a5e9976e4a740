//! `repo:` over HTTP with credentials: a server on 127.0.0.1 that answers only HTTP
//! Basic auth, in front of `git http-backend`. A clone passes with the token from
//! `credentials.env`, in the URL's password and from a `credentials.helper`; a wrong
//! token ends `repo_refused` without quoting it. The token is then nowhere: not under
//! the artifacts directory, not under the checkout's `.git/`, and not in anything the
//! agent's sandboxed commands can read (the environment, `/proc`, drover's own
//! `/proc/<pid>/environ` and `cmdline`, git's configuration, `git credential fill`).

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{
    drover_without_proxy, events, repo, require_program, require_sandbox, transcript, write_spec,
};
use crate::repo::{result, served_repo};

const USER: &str = "alice";

/// `tests/cli/fixtures/git_http_server.py` serving the repositories under `root` to
/// `USER:token` alone; killed when dropped.
struct HttpGit {
    child: Child,
    port: u16,
}

impl HttpGit {
    fn start(root: &Path, token: &str) -> HttpGit {
        let port_file = root.with_extension("port");
        let child = Command::new("python3")
            .arg(repo().join("tests/cli/fixtures/git_http_server.py"))
            .arg(root)
            .arg(&port_file)
            .args([USER, token])
            .spawn()
            .expect("python3 runs");
        let deadline = Instant::now() + Duration::from_secs(20);
        let port = loop {
            if let Ok(text) = std::fs::read_to_string(&port_file) {
                break text.trim().parse().unwrap();
            }
            assert!(
                Instant::now() < deadline,
                "the HTTP git server never listened"
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        HttpGit { child, port }
    }

    fn url(&self, name: &str) -> String {
        format!("http://127.0.0.1:{}/{name}.git", self.port)
    }

    fn url_with(&self, name: &str, token: &str) -> String {
        format!("http://{USER}:{token}@127.0.0.1:{}/{name}.git", self.port)
    }
}

impl Drop for HttpGit {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The commands a hostile agent runs to find the clone's token.
fn probes(port: u16, spec: &Path) -> Vec<String> {
    vec![
        "env".into(),
        "tr '\\0' '\\n' < /proc/self/environ".into(),
        "tr '\\0' '\\n' < /proc/$PPID/environ; tr '\\0' ' ' < /proc/$PPID/cmdline".into(),
        // drover's own process, wherever /proc shows it.
        "for p in /proc/[0-9]*; do c=$(tr '\\0' ' ' < $p/cmdline 2>/dev/null); case \"$c\" in *drover*) echo \"pid ${p#/proc/}: $c\"; tr '\\0' '\\n' < $p/environ 2>&1;; esac; done".into(),
        "git config -l --show-origin 2>&1".into(),
        format!(
            "printf 'protocol=http\\nhost=127.0.0.1:{port}\\n\\n' | GIT_TERMINAL_PROMPT=0 git credential fill 2>&1; echo exit $?"
        ),
        "cat .git/config; ls -la .git; cat .git/FETCH_HEAD 2>&1".into(),
        format!("cat {} 2>&1", spec.display()),
    ]
}

/// A task cloning with `repo` (the YAML of `repo:`'s body, indented by four) into
/// `checkout-<name>`, whose scripted agent runs `commands` with Bash, one call each.
fn spec_text(name: &str, repo: &str, commands: &[String]) -> String {
    let calls: Vec<Value> = commands
        .iter()
        .map(|command| serde_json::json!({ "name": "Bash", "input": { "command": command } }))
        .collect();
    format!(
        "version: 1\nname: {name}\nprompt: find the token\nrepo:\n{repo}    path: checkout-{name}\nmodel:\n  provider: script\n  script:\n    - tool_calls: {}\n    - text: done\npermissions:\n  allow: [Bash]\n",
        serde_json::Value::Array(calls)
    )
}

/// Every file below `dir` that holds `needle`.
fn files_holding(dir: &Path, needle: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        for entry in std::fs::read_dir(&next).unwrap().flatten() {
            let meta = std::fs::symlink_metadata(entry.path()).unwrap();
            if meta.is_dir() {
                pending.push(entry.path());
            } else if meta.is_file() {
                let bytes = std::fs::read(entry.path()).unwrap();
                if bytes.windows(needle.len()).any(|w| w == needle.as_bytes()) {
                    found.push(entry.path());
                }
            }
        }
    }
    found
}

#[test]
#[cfg_attr(
    not(all(drover_has_sandbox, drover_has_python3, drover_has_git_http_backend)),
    ignore = "needs the sandbox, python3 and git http-backend"
)]
fn a_token_from_the_environment_the_url_or_a_helper_clones_and_is_found_nowhere() {
    require_sandbox();
    require_program("python3");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let served = root.join("served");
    let (_, _, head) = served_repo(&served, "service-a");
    let token = "tok3n-51a7c0de-feed";
    let server = HttpGit::start(&served, token);
    let store = root.join("store");
    std::fs::write(
        &store,
        format!("http://{USER}:{token}@127.0.0.1:{}\n", server.port),
    )
    .unwrap();
    let cases = [
        (
            "env",
            format!(
                "    url: {}\n    credentials: {{ env: DROVER_TEST_REPO_TOKEN, username: {USER} }}\n",
                server.url("service-a")
            ),
        ),
        (
            "url",
            format!("    url: {}\n", server.url_with("service-a", token)),
        ),
        (
            "helper",
            format!(
                "    url: {}\n    credentials: {{ helper: \"store --file {}\" }}\n",
                server.url("service-a"),
                store.display()
            ),
        ),
    ];
    let mut specs = Vec::new();
    for (name, body) in &cases {
        let path = root.join(format!("{name}.yaml"));
        let text = spec_text(name, body, &probes(server.port, &path));
        specs.push(write_spec(&root, &format!("{name}.yaml"), &text));
    }
    let artifacts = root.join("out");
    let output = drover_without_proxy()
        .arg("run")
        .args(&specs)
        .arg("--artifacts")
        .arg(&artifacts)
        .env("DROVER_TEST_REPO_TOKEN", token)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    for (name, _) in &cases {
        let ended = result(&artifacts, name);
        assert_eq!(ended["status"], "passed", "{name}: {ended}");
        assert_eq!(ended["start"]["commit"], head.as_str(), "{name}");
        assert_eq!(
            ended["start"]["repository"]["url"],
            server.url("service-a"),
            "{name}: the recorded URL has no credential"
        );
        let checkout = root.join(format!("checkout-{name}"));
        assert_eq!(
            crate::repo::git(&checkout, &["remote", "get-url", "origin"]),
            server.url("service-a")
        );
        let lines = transcript(&artifacts.join(name).join("transcript.jsonl"));
        let results = events(&lines, "tool_result");
        assert_eq!(results.len(), probes(server.port, Path::new("x")).len());
        // The commands ran (and saw no token, not even one redaction took out: what
        // a command can read, it can also encode past the redaction).
        let said = |i: usize| results[i]["content"].as_str().unwrap_or_default();
        assert!(said(0).contains("PATH="), "{name}: {}", said(0));
        assert!(said(4).contains("remote.origin.url"), "{name}: {}", said(4));
        assert!(said(5).contains("exit 128"), "{name}: {}", said(5));
        for result in &results {
            let text = result.to_string();
            assert!(
                !text.contains(token) && !text.contains("[redacted]"),
                "{name}: a command read the token: {text}"
            );
        }
        let in_git = files_holding(&checkout.join(".git"), token);
        assert!(in_git.is_empty(), "{name}: the token is in {in_git:?}");
    }
    let in_artifacts = files_holding(&artifacts, token);
    assert!(in_artifacts.is_empty(), "the token is in {in_artifacts:?}");
    for report in ["summary.json", "summary.md", "junit.xml"] {
        assert!(artifacts.join(report).is_file(), "{report} was written");
    }
    let stdout_and_err = format!("{output:?}");
    assert!(!stdout_and_err.contains(token), "{stdout_and_err}");
}

#[test]
#[cfg_attr(
    not(all(drover_has_python3, drover_has_git_http_backend)),
    ignore = "needs python3 and git http-backend"
)]
fn a_wrong_token_is_refused_without_being_quoted() {
    require_program("python3");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let served = root.join("served");
    served_repo(&served, "service-a");
    let server = HttpGit::start(&served, "the-right-token");
    let wrong = "wr0ng-70ken-c0ffee";
    let cases = [
        (
            "env",
            format!(
                "    url: {}\n    credentials: {{ env: DROVER_TEST_REPO_TOKEN, username: {USER} }}\n",
                server.url("service-a")
            ),
        ),
        (
            "url",
            format!("    url: {}\n", server.url_with("service-a", wrong)),
        ),
        ("none", format!("    url: {}\n", server.url("service-a"))),
    ];
    let mut specs = Vec::new();
    for (name, body) in &cases {
        specs.push(write_spec(
            &root,
            &format!("{name}.yaml"),
            &spec_text(name, body, &["true".to_string()]),
        ));
    }
    let artifacts = root.join("out");
    let output = drover_without_proxy()
        .arg("run")
        .args(&specs)
        .arg("--artifacts")
        .arg(&artifacts)
        .env("DROVER_TEST_REPO_TOKEN", wrong)
        .env("HOME", &root)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(3), "{output:?}");
    for (name, _) in &cases {
        let ended = result(&artifacts, name);
        assert_eq!(ended["reason"], "repo_refused", "{name}: {ended}");
        assert_eq!(ended["retryable"], false, "{name}");
        let message = ended["message"].as_str().unwrap();
        assert!(
            message.contains(&server.url("service-a")) && message.contains("credentials"),
            "{name}: {message}"
        );
        assert!(!message.contains(wrong), "{name}: {message}");
        // The checkout was left empty, as found.
        let checkout = root.join(format!("checkout-{name}"));
        assert_eq!(std::fs::read_dir(&checkout).unwrap().count(), 0, "{name}");
    }
    let in_artifacts = files_holding(&artifacts, wrong);
    assert!(in_artifacts.is_empty(), "the token is in {in_artifacts:?}");
    assert!(!format!("{output:?}").contains(wrong));
}
