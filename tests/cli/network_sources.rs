//! Network by name beyond the agent's Bash (docs/sandbox.md, "Which commands"): setup
//! steps, checks, hooks and MCP stdio servers that write no `network:` of their own
//! inherit the task's allow-list, reach the allowed host through a proxy of their own
//! and are recorded under their own source and name; one that says `network: false`
//! gets none; a setup step under a task without rules keeps the whole network, as
//! before. `drover exec --allow-host` writes the same rules. Each spec run as an
//! unprivileged user and, in the `_as_root` twin, as root.

use crate::common::{self, events, transcript};
use crate::exec_cli::{answer_turn, calls_turn, exec_in, stderr};
use crate::mock_server::{MockServer, Reply};
use crate::network_egress::{Host, TASK, curl, require, run_as, scratch};
use crate::users::{User, unprivileged};

use serde_json::{Value, json};

/// Each network event as `[source, name, host, port, decision]`, sorted (the commands
/// of setup, the agent, hooks and checks record while they run, in their order).
fn who(network: &[&Value]) -> Vec<Value> {
    let mut rows: Vec<Value> = network
        .iter()
        .map(|e| json!([e["source"], e["name"], e["host"], e["port"], e["decision"]]))
        .collect();
    rows.sort_by_key(|row| row.to_string());
    rows
}

#[test]
#[cfg_attr(
    not(all(drover_has_sandbox, drover_has_curl)),
    ignore = "needs curl and drover's sandbox (Landlock ABI 3+)"
)]
fn setup_checks_and_hooks_inherit_the_tasks_allow_list() {
    require();
    inherited(unprivileged());
}

#[test]
#[cfg_attr(
    not(all(drover_has_sandbox, drover_has_curl, drover_has_root)),
    ignore = "needs root, curl and drover's sandbox (Landlock ABI 3+)"
)]
fn setup_checks_and_hooks_inherit_the_tasks_allow_list_as_root() {
    require();
    common::require_root();
    inherited(User::Own);
}

/// Under `allow: [localhost:A]`, a setup step, a check and a Stop hook without a
/// `network:` of their own reach A (what the setup fetched is there for the agent), each
/// recorded as allowed under `setup`/`check`/`hook` and its name; a check with
/// `sandbox: {network: false}` reaches nothing and is recorded nowhere.
fn inherited(user: User) {
    let body = "fetched by setup\n";
    let host = Host::start(body);
    let a = host.port;
    let dir = scratch();
    let call = json!([{ "name": "Bash", "input": { "command": "cat fetched.txt" } }]);
    let spec = common::write_spec(
        dir.path(),
        "task.yaml",
        &format!(
            "version: 1
name: {TASK}
prompt: p
workspace: ws
model:
  provider: script
  script:
    - tool_calls: {call}
    - text: done
permissions:
  allow: [Bash]
sandbox:
  network: {{ allow: [\"localhost:{a}\"] }}
setup:
  - name: fetch
    run: curl -sS --max-time 20 -o fetched.txt http://localhost:{a}/setup
checks:
  - name: reach
    run: curl -sS --max-time 20 http://localhost:{a}/check
  - name: offline
    run: \"! curl -sS --max-time 5 http://localhost:{a}/offline\"
    sandbox: {{ network: false }}
hooks:
  Stop:
    - hooks: [{{ type: command, command: \"curl -sS --max-time 20 -o /dev/null http://localhost:{a}/hook\" }}]
"
        ),
    );
    let run = run_as(user, dir.path(), &spec);
    run.exited(0);
    assert_eq!(
        run.results(),
        [body.trim_end()],
        "{user:?}: the setup step fetched it"
    );
    let mut requests = host.requests();
    requests.sort();
    assert_eq!(
        requests,
        [
            "GET /check HTTP/1.1",
            "GET /hook HTTP/1.1",
            "GET /setup HTTP/1.1"
        ],
        "{user:?}"
    );
    let network = run.network();
    assert_eq!(
        who(&network),
        [
            json!(["check", "reach", "localhost", a, "allowed"]),
            json!(["hook", "Stop", "localhost", a, "allowed"]),
            json!(["setup", "fetch", "localhost", a, "allowed"]),
        ],
        "{user:?}"
    );
    for event in &network {
        assert_eq!(event["rule"], format!("localhost:{a}"), "{event}");
        assert_eq!(event["bytes_down"], host.response_len(), "{event}");
        assert_eq!(event.get("tool_use_id"), None, "{event}");
    }
    let checks = events(&run.lines, "check");
    assert_eq!(checks.len(), 2, "{checks:?}");
    assert!(
        checks.iter().all(|c| c["passed"] == true),
        "{user:?}: the offline check's curl must fail: {checks:?}"
    );
    assert_eq!(run.tally()["allowed"], 3, "{user:?}");
    assert_eq!(run.tally()["denied"], 0, "{user:?}");
}

#[test]
#[cfg_attr(
    not(all(drover_has_sandbox, drover_has_curl)),
    ignore = "needs curl and drover's sandbox (Landlock ABI 3+)"
)]
fn a_setup_step_keeps_the_whole_network_under_a_task_without_rules() {
    require();
    whole_network_for_setup(unprivileged());
}

#[test]
#[cfg_attr(
    not(all(drover_has_sandbox, drover_has_curl, drover_has_root)),
    ignore = "needs root, curl and drover's sandbox (Landlock ABI 3+)"
)]
fn a_setup_step_keeps_the_whole_network_under_a_task_without_rules_as_root() {
    require();
    common::require_root();
    whole_network_for_setup(User::Own);
}

/// A task whose network is off (no `sandbox:` key): its setup step without a
/// `sandbox:` still reaches any host directly, unproxied and unrecorded, as before
/// network rules existed; the agent's Bash reaches nothing.
fn whole_network_for_setup(user: User) {
    let body = "the whole network\n";
    let host = Host::start(body);
    let a = host.port;
    let dir = scratch();
    let call = json!([{ "name": "Bash", "input": { "command": format!(
        "cat whole.txt; curl -sS --max-time 5 http://127.0.0.1:{a}/bash; echo \"curl exit $?\""
    ) } }]);
    let spec = common::write_spec(
        dir.path(),
        "task.yaml",
        &format!(
            "version: 1
name: {TASK}
prompt: p
workspace: ws
model:
  provider: script
  script:
    - tool_calls: {call}
    - text: done
permissions:
  allow: [Bash]
setup:
  - name: whole
    run: env | grep -i '_proxy=' && exit 9; curl -sS --max-time 20 -o whole.txt http://127.0.0.1:{a}/whole
"
        ),
    );
    let run = run_as(user, dir.path(), &spec);
    run.exited(0);
    let result = &run.results()[0];
    assert!(result.starts_with(body), "{user:?}: {result}");
    assert!(result.contains("curl exit 7"), "{user:?}: {result}");
    assert_eq!(host.requests(), ["GET /whole HTTP/1.1"], "{user:?}");
    assert!(run.network().is_empty(), "{:#?}", run.network());
    assert_eq!(run.tally(), &Value::Null, "{user:?}: no rules, no tally");
}

#[test]
#[cfg_attr(
    not(all(drover_has_sandbox, drover_has_python3)),
    ignore = "needs python3, which runs the MCP server, and drover's sandbox (Landlock ABI 3+)"
)]
fn an_mcp_servers_connections_are_governed_and_recorded_as_its_own() {
    common::require_sandbox();
    common::require_program("python3");
    mcp_server(unprivileged());
}

#[test]
#[cfg_attr(
    not(all(drover_has_sandbox, drover_has_python3, drover_has_root)),
    ignore = "needs root, python3 and drover's sandbox (Landlock ABI 3+)"
)]
fn an_mcp_servers_connections_are_governed_and_recorded_as_its_own_as_root() {
    common::require_sandbox();
    common::require_program("python3");
    common::require_root();
    mcp_server(User::Own);
}

/// An MCP stdio server under the task's `allow: [localhost:A]`: its fetch of A through
/// the proxy works and its direct connection to port B is refused, both recorded with
/// source `mcp` and the server's name, and counted in summary.json.
fn mcp_server(user: User) {
    let body = "for the server\n";
    let host = Host::start(body);
    let other = Host::start("other\n");
    let (a, b) = (host.port, other.port);
    let dir = scratch();
    let server = dir.path().join("network_server.py");
    std::fs::copy(
        common::repo().join("tests/cli/fixtures/network_server.py"),
        &server,
    )
    .unwrap();
    let calls = [
        json!([{ "name": "mcp__net__fetch", "input": { "url": format!("http://localhost:{a}/mcp") } }]),
        json!([{ "name": "mcp__net__dial", "input": { "port": b } }]),
    ];
    let spec = common::write_spec(
        dir.path(),
        "task.yaml",
        &format!(
            "version: 1
name: {TASK}
prompt: p
workspace: ws
model:
  provider: script
  script:
    - tool_calls: {}
    - tool_calls: {}
    - text: done
permissions:
  allow: [mcp__net]
sandbox:
  network: {{ allow: [\"localhost:{a}\"] }}
mcp:
  timeouts: {{ startup: 60s, call: 30s }}
  servers:
    net:
      command: python3
      args: [{}]
",
            calls[0],
            calls[1],
            serde_json::to_string(&server.display().to_string()).unwrap()
        ),
    );
    let run = run_as(user, dir.path(), &spec);
    run.exited(0);
    assert_eq!(
        run.results(),
        [format!("fetched: {body}"), "refused 13".to_string()],
        "{user:?}"
    );
    assert_eq!(host.requests(), ["GET /mcp HTTP/1.1"], "{user:?}");
    assert_eq!(other.accepted(), 0, "{user:?}");
    let network = run.network();
    assert_eq!(
        who(&network),
        [
            json!(["mcp", "net", "127.0.0.1", b, "denied"]),
            json!(["mcp", "net", "localhost", a, "allowed"]),
        ],
        "{user:?}"
    );
    let fetched = network.iter().find(|e| e["decision"] == "allowed").unwrap();
    assert_eq!(fetched["protocol"], "http");
    assert_eq!(fetched["bytes_down"], host.response_len());
    let dialled = network.iter().find(|e| e["decision"] == "denied").unwrap();
    assert_eq!(dialled["protocol"], "direct");
    assert_eq!(run.tally()["allowed"], 1, "{user:?}");
    assert_eq!(run.tally()["denied"], 1, "{user:?}");
    assert_eq!(
        run.tally()["first_denied"],
        json!([format!("127.0.0.1:{b}")])
    );
}

/// `drover exec --allow-host localhost:A`: the agent's Bash reaches A through the proxy,
/// and the run records it as a spec's run does.
#[test]
#[cfg_attr(
    not(all(drover_has_sandbox, drover_has_curl)),
    ignore = "needs curl and drover's sandbox (Landlock ABI 3+)"
)]
fn exec_allow_host_reaches_that_host() {
    require();
    let body = "reached by exec\n";
    let host = Host::start(body);
    let a = host.port;
    let model = MockServer::start(vec![
        Reply::sse(&calls_turn(&[(
            "toolu_1",
            "Bash",
            json!({"command": curl(&format!("http://localhost:{a}/exec"))}),
        )])),
        Reply::sse(&answer_turn("fetched")),
    ]);
    let dir = scratch();
    let allow = format!("localhost:{a}");
    let output = exec_in(
        dir.path(),
        &model.base_url,
        &[
            "fetch the page",
            "--allow",
            "Bash",
            "--allow-host",
            &allow,
            "--workspace",
            "ws",
            "--artifacts",
            "out",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines = transcript(&dir.path().join("out/exec/transcript.jsonl"));
    let result = events(&lines, "tool_result")[0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(result.contains("HTTP/1.1 200 OK"), "{result}");
    assert!(result.contains(body.trim()), "{result}");
    assert_eq!(host.requests(), ["GET /exec HTTP/1.1"]);
    let network = events(&lines, "network");
    assert_eq!(network.len(), 1, "{network:?}");
    assert_eq!(
        crate::network_egress::decision(network[0]),
        json!({
            "source": "bash",
            "tool_use_id": "toolu_1",
            "host": "localhost",
            "port": a,
            "protocol": "http",
            "decision": "allowed",
            "rule": allow,
            "reason": null,
        })
    );
    let summary = common::summary(&dir.path().join("out"));
    assert_eq!(summary["tasks"][0]["network"]["allowed"], 1);
}
