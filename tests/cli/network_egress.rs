//! Network by name, end to end (docs/sandbox.md, "Network by name"): a task whose
//! `sandbox.network` names hosts runs its Bash commands with drover's egress proxy as
//! the only way out. Loopback HTTP servers stand in for hosts, reached through explicit
//! rules (`localhost:PORT` names that port only). Each test runs as an unprivileged
//! user (nobody through `setpriv` when the test is root: every GitHub-hosted runner)
//! and, in its `_as_root` twin, as root (self-hosted runners, containers), since the
//! sandbox confines the two differently.
//!
//! What a user relies on: an allowed host is reached and accounted for byte by byte; a
//! denied one is refused with a 403 that names the policy, recorded, counted in
//! summary.json and named in the Bash result (so the model does not take it for a
//! broken registry); nothing reaches the network around the proxy — no direct TCP,
//! no UDP, no raw socket — and every such attempt is recorded too.

use crate::common::{self, events, transcript, write_spec};
use crate::users::{User, drover_as, unprivileged};

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

/// A host on 127.0.0.1: every connection gets the same response (its body known, so
/// the bytes a `network` event counts can be checked exactly); the request lines it was
/// sent are kept, and the connections it accepted counted.
pub(crate) struct Host {
    pub(crate) port: u16,
    response: Arc<Vec<u8>>,
    requests: Arc<Mutex<Vec<String>>>,
    accepted: Arc<AtomicUsize>,
}

impl Host {
    /// A host answering every request `200 OK` with `body`.
    pub(crate) fn start(body: &str) -> Host {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let response = Arc::new(
            format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
            .into_bytes(),
        );
        let requests = Arc::new(Mutex::new(Vec::new()));
        let accepted = Arc::new(AtomicUsize::new(0));
        let host = Host {
            port,
            response: Arc::clone(&response),
            requests: Arc::clone(&requests),
            accepted: Arc::clone(&accepted),
        };
        // The thread lives as long as the test binary: a test's host is never stopped.
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                accepted.fetch_add(1, Ordering::SeqCst);
                let (response, requests) = (Arc::clone(&response), Arc::clone(&requests));
                std::thread::spawn(move || serve(stream, &response, &requests));
            }
        });
        host
    }

    /// The bytes of its response: what a connection to it receives, exactly.
    pub(crate) fn response_len(&self) -> u64 {
        self.response.len() as u64
    }

    /// The request lines it was sent (`GET /path HTTP/1.1`), in order.
    pub(crate) fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }

    /// How many connections it accepted (a request sent or not).
    pub(crate) fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
}

/// Read one request head from `stream`, keep its first line, answer `response`.
fn serve(mut stream: TcpStream, response: &[u8], requests: &Mutex<Vec<String>>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(20)));
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 65536 {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    if head.is_empty() {
        return;
    }
    let text = String::from_utf8_lossy(&head);
    let line = text.lines().next().unwrap_or_default().to_string();
    requests.lock().unwrap().push(line);
    let _ = stream.write_all(response);
    let _ = stream.shutdown(std::net::Shutdown::Write);
}

/// The name of every test task.
pub(crate) const TASK: &str = "net";

/// A scratch directory with an empty workspace `ws/`.
pub(crate) fn scratch() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    dir
}

/// Write the spec of a task whose scripted model runs each of `commands` as its own
/// Bash call, then stops, under `sandbox.network: NETWORK` (YAML); `extra` is appended
/// as more top-level lines.
pub(crate) fn bash_spec(dir: &Path, network: &str, commands: &[String], extra: &str) -> PathBuf {
    let mut turns = String::new();
    for command in commands {
        let call = json!([{ "name": "Bash", "input": { "command": command } }]);
        turns.push_str(&format!("    - tool_calls: {call}\n"));
    }
    write_spec(
        dir,
        "task.yaml",
        &format!(
            "version: 1\nname: {TASK}\nprompt: p\nworkspace: ws\nmodel:\n  provider: script\n  script:\n{turns}    - text: done\npermissions:\n  allow: [Bash]\nsandbox:\n  network: {network}\n{extra}"
        ),
    )
}

/// A finished run: its output, transcript and summary.json.
pub(crate) struct Run {
    pub(crate) output: Output,
    pub(crate) lines: Vec<Value>,
    pub(crate) summary: Value,
}

impl Run {
    /// Assert drover exited with `code`, its stderr shown if not.
    pub(crate) fn exited(&self, code: i32) -> &Run {
        common::assert_exit(&self.output, code);
        self
    }

    /// The Bash (or MCP) results, in order.
    pub(crate) fn results(&self) -> Vec<String> {
        events(&self.lines, "tool_result")
            .iter()
            .map(|r| r["content"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    /// The id of the `n`th tool call's result.
    pub(crate) fn tool_use_id(&self, n: usize) -> String {
        events(&self.lines, "tool_result")[n]["tool_use_id"]
            .as_str()
            .unwrap()
            .to_string()
    }

    /// The `network` events, in order.
    pub(crate) fn network(&self) -> Vec<&Value> {
        events(&self.lines, "network")
    }

    /// The task's `network` in summary.json.
    pub(crate) fn tally(&self) -> &Value {
        &self.summary["tasks"][0]["network"]
    }
}

/// `drover run SPEC` as `user`, with a plain PATH (so nobody finds the system's curl and
/// python3), HOME in `dir`, no proxy of the machine's, artifacts in `dir/out`.
pub(crate) fn run_as(user: User, dir: &Path, spec: &Path) -> Run {
    let mut command = drover_as(user, dir);
    for var in [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "NO_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
        "no_proxy",
        "GITHUB_ACTIONS",
    ] {
        command.env_remove(var);
    }
    let artifacts = dir.join("out");
    let output = command
        .arg("run")
        .arg(spec)
        .arg("--artifacts")
        .arg(&artifacts)
        .env("HOME", dir)
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .output()
        .unwrap();
    let path = artifacts.join(TASK).join("transcript.jsonl");
    assert!(
        path.is_file(),
        "no transcript: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Run {
        lines: transcript(&path),
        summary: common::summary(&artifacts),
        output,
    }
}

/// What every test here needs: the sandbox and curl.
pub(crate) fn require() {
    common::require_sandbox();
    common::require_program("curl");
}

/// `curl` through the proxy the sandbox gives (`HTTP_PROXY`), showing the response head.
pub(crate) fn curl(url: &str) -> String {
    format!("curl -sS -i --max-time 20 {url}")
}

/// The transcript's `network` event for a proxied request, as the assertions compare:
/// everything but the byte counts, the timing and the address.
pub(crate) fn decision(event: &Value) -> Value {
    json!({
        "source": event["source"],
        "tool_use_id": event["tool_use_id"],
        "host": event["host"],
        "port": event["port"],
        "protocol": event["protocol"],
        "decision": event["decision"],
        "rule": event["rule"],
        "reason": event["reason"],
    })
}

#[test]
#[cfg_attr(
    not(all(drover_has_sandbox, drover_has_curl)),
    ignore = "needs curl and drover's sandbox (Landlock ABI 3+)"
)]
fn an_allowed_host_is_reached_through_the_proxy_and_accounted_for() {
    require();
    allowed_host(unprivileged());
}

#[test]
#[cfg_attr(
    not(all(drover_has_sandbox, drover_has_curl, drover_has_root)),
    ignore = "needs root, curl and drover's sandbox (Landlock ABI 3+)"
)]
fn an_allowed_host_is_reached_through_the_proxy_and_accounted_for_as_root() {
    require();
    common::require_root();
    allowed_host(User::Own);
}

/// `localhost:PORT` allowed: curl reaches it as a plain HTTP request and through a
/// CONNECT tunnel (`-p`); each is one `network` event naming the rule, the address and
/// exactly the bytes the host sent; summary.json counts them; the commands find the
/// proxy in the usual variables, with nothing exempt from it.
fn allowed_host(user: User) {
    let body = "hello from the allowed host\n";
    let host = Host::start(body);
    let port = host.port;
    let dir = scratch();
    let commands = [
        curl(&format!("http://localhost:{port}/plain")),
        curl(&format!("-p http://localhost:{port}/tunnel")),
        "env | grep -i -E '^(https?|all|no)_proxy=' | sort".to_string(),
    ];
    let spec = bash_spec(
        dir.path(),
        &format!("{{ allow: [\"localhost:{port}\"] }}"),
        &commands,
        "",
    );
    let run = run_as(user, dir.path(), &spec);
    run.exited(0);
    let results = run.results();
    for result in &results[..2] {
        assert!(
            result.contains("HTTP/1.1 200 OK"),
            "{user:?}: {result}\n{}",
            String::from_utf8_lossy(&run.output.stderr)
        );
        assert!(result.contains(body.trim()), "{user:?}: {result}");
        assert!(!result.contains("network policy blocked"), "{result}");
    }
    assert_eq!(
        host.requests(),
        ["GET /plain HTTP/1.1", "GET /tunnel HTTP/1.1"],
        "{user:?}"
    );
    let env = &results[2];
    let proxy = env
        .lines()
        .find_map(|line| line.strip_prefix("HTTPS_PROXY="))
        .unwrap_or_else(|| panic!("{user:?}: no HTTPS_PROXY: {env}"));
    assert!(proxy.starts_with("http://127.0.0.1:"), "{env}");
    for var in ["HTTP_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"] {
        assert!(env.contains(&format!("{var}={proxy}\n")), "{var}: {env}");
    }
    for var in ["NO_PROXY", "no_proxy"] {
        assert!(
            env.lines().any(|line| line == format!("{var}=")),
            "{var}: {env}"
        );
    }

    let network = run.network();
    assert_eq!(network.len(), 2, "{user:?}: {network:#?}");
    for (event, protocol, call) in [(network[0], "http", 0), (network[1], "connect", 1)] {
        assert_eq!(
            decision(event),
            json!({
                "source": "bash",
                "tool_use_id": run.tool_use_id(call),
                "host": "localhost",
                "port": port,
                "protocol": protocol,
                "decision": "allowed",
                "rule": format!("localhost:{port}"),
                "reason": null,
            }),
            "{user:?}"
        );
        assert_eq!(event["address"], "127.0.0.1", "{event}");
        assert_eq!(event["bytes_down"], host.response_len(), "{event}");
        assert!(event["bytes_up"].as_u64().unwrap() > 0, "{event}");
    }
    let bytes: u64 = network
        .iter()
        .map(|e| e["bytes_up"].as_u64().unwrap() + e["bytes_down"].as_u64().unwrap())
        .sum();
    assert_eq!(
        run.tally(),
        &json!({"allowed": 2, "denied": 0, "bytes": bytes}),
        "{user:?}"
    );
}

#[test]
#[cfg_attr(
    not(all(drover_has_sandbox, drover_has_curl)),
    ignore = "needs curl and drover's sandbox (Landlock ABI 3+)"
)]
fn a_denied_host_is_refused_recorded_named_in_the_result_and_counted() {
    require();
    denied_host(unprivileged());
}

#[test]
#[cfg_attr(
    not(all(drover_has_sandbox, drover_has_curl, drover_has_root)),
    ignore = "needs root, curl and drover's sandbox (Landlock ABI 3+)"
)]
fn a_denied_host_is_refused_recorded_named_in_the_result_and_counted_as_root() {
    require();
    common::require_root();
    denied_host(User::Own);
}

/// A name no rule covers, and one a deny entry names although an allow entry names it
/// too: each refused by the proxy with a 403 whose `X-Drover-Denied` header says the
/// task's policy blocked it (never resolved, never reached), one `denied` event each
/// naming the rule and the reason, the Bash result's note naming both, and summary.json
/// counting them with the first denied targets. The task still passes: a refused
/// connection is the command's to handle.
fn denied_host(user: User) {
    let host = Host::start("fine\n");
    let port = host.port;
    let dir = scratch();
    let commands = [
        format!(
            "{}; {}; {}; echo end",
            curl("http://nowhere.invalid/"),
            curl("http://blocked.invalid/page"),
            curl("-p http://blocked.invalid/tunnel"),
        ),
        curl(&format!("http://localhost:{port}/ok")),
    ];
    let spec = bash_spec(
        dir.path(),
        &format!("{{ allow: [\"localhost:{port}\", blocked.invalid], deny: [blocked.invalid] }}"),
        &commands,
        "",
    );
    let run = run_as(user, dir.path(), &spec);
    run.exited(0);
    let results = run.results();
    let refused = &results[0];
    assert_eq!(
        refused.matches("HTTP/1.1 403 Forbidden").count(),
        3,
        "{user:?}: {refused}"
    );
    for denial in [
        "nowhere.invalid:80 no allow rule",
        "blocked.invalid:80 denied by blocked.invalid",
    ] {
        assert!(
            refused.contains(&format!(
                "X-Drover-Denied: blocked by the task's network policy: {denial}"
            )),
            "{user:?}: {denial}: {refused}"
        );
    }
    assert!(
        refused.contains(
            "drover: the task's network policy blocked nowhere.invalid:80 (no allow rule); blocked.invalid:80 (denied by blocked.invalid). These hosts are not broken or down"
        ),
        "{user:?}: {refused}"
    );
    assert!(refused.contains("end"), "{refused}");
    assert!(results[1].contains("HTTP/1.1 200 OK"), "{}", results[1]);
    assert!(
        !results[1].contains("network policy blocked"),
        "{}",
        results[1]
    );
    assert_eq!(host.requests(), ["GET /ok HTTP/1.1"], "{user:?}");

    let network = run.network();
    let id = run.tool_use_id(0);
    let denied = |host: &str, protocol: &str, rule: Value, reason: &str| {
        json!({
            "source": "bash",
            "tool_use_id": id,
            "host": host,
            "port": 80,
            "protocol": protocol,
            "decision": "denied",
            "rule": rule,
            "reason": reason,
        })
    };
    assert_eq!(
        network.iter().map(|e| decision(e)).collect::<Vec<_>>(),
        [
            denied("nowhere.invalid", "http", Value::Null, "no allow rule"),
            denied(
                "blocked.invalid",
                "http",
                json!("blocked.invalid"),
                "denied by blocked.invalid"
            ),
            denied(
                "blocked.invalid",
                "connect",
                json!("blocked.invalid"),
                "denied by blocked.invalid"
            ),
            json!({
                "source": "bash",
                "tool_use_id": run.tool_use_id(1),
                "host": "localhost",
                "port": port,
                "protocol": "http",
                "decision": "allowed",
                "rule": format!("localhost:{port}"),
                "reason": null,
            }),
        ],
        "{user:?}"
    );
    for event in &network[..3] {
        assert_eq!(event["address"], Value::Null, "never resolved: {event}");
        assert_eq!(event["bytes_down"], 0, "{event}");
    }
    let allowed = network[3];
    let bytes = allowed["bytes_up"].as_u64().unwrap() + allowed["bytes_down"].as_u64().unwrap();
    assert_eq!(
        run.tally(),
        &json!({
            "allowed": 1,
            "denied": 3,
            "bytes": bytes,
            "first_denied": ["nowhere.invalid:80", "blocked.invalid:80"],
        }),
        "{user:?}"
    );
}
