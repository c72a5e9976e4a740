//! The attacker answers at (or sits in front of) a model API or MCP server the user
//! named, and redirects. Credentials go only where the user sent them: no model request
//! and no MCP request follows a redirect, so no key, header or conversation reaches the
//! place a `Location` names, and the run says where it was sent instead.

use std::path::Path;

use serde_json::Value;

use crate::common::{drover_without_proxy, events, transcript, write_spec};
use crate::mock_server::{MockServer, Reply};
use crate::providers::{KEY, anthropic_final_turn, openai_final_turn, run, task};

/// What `server` was sent, for a failure message: each request's line and the
/// credentials it carried.
fn seen(server: &MockServer) -> Vec<String> {
    server
        .requests()
        .iter()
        .map(|request| {
            let credentials: Vec<String> = ["x-api-key", "authorization", "x-team-token"]
                .iter()
                .filter_map(|name| request.header(name).map(|value| format!("{name}: {value}")))
                .collect();
            format!("{} {credentials:?}", request.line)
        })
        .collect()
}

fn last(lines: &[Value]) -> &Value {
    let last = lines.last().unwrap();
    assert_eq!(last["type"], "run_end", "the transcript is complete");
    last
}

#[test]
fn a_model_api_redirect_is_not_followed_and_the_key_stays_with_the_api() {
    let cases = [
        ("anthropic", 307, "/v1/messages"),
        ("anthropic", 303, "/v1/messages"),
        ("openai", 308, "/v1/chat/completions"),
        ("openai", 302, "/v1/chat/completions"),
        // Not one a client follows: the answer itself is the error.
        ("openai", 300, "/v1/chat/completions"),
    ];
    for (provider, status, path) in cases {
        let answer = match provider {
            "anthropic" => anthropic_final_turn(),
            _ => openai_final_turn(),
        };
        // Another port is another origin: it answers as the API would.
        let elsewhere = MockServer::start(vec![Reply::sse(&answer), Reply::sse(&answer)]);
        let location = format!("{}{path}", elsewhere.base_url);
        let api = MockServer::start(vec![
            Reply::status(status, "").with_header("location", &location),
        ]);
        let (dir, spec) = task(provider, &api.base_url, "");
        let artifacts = dir.path().join("out");
        let output = run(&spec, &artifacts, Some(KEY));
        let case = format!("{provider} {status}");
        assert!(
            elsewhere.requests().is_empty(),
            "{case}: the redirect was followed: {:?}",
            seen(&elsewhere)
        );
        assert_eq!(
            output.status.code(),
            Some(3),
            "{case}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let lines = transcript(&artifacts.join("t/transcript.jsonl"));
        let end = last(&lines);
        assert_eq!(end["reason"], "provider_error", "{case}: {end}");
        let message = end["message"].as_str().unwrap();
        assert!(message.contains(&location), "{case}: {message}");
        assert!(message.contains("base_url"), "{case}: {message}");
        // Asking again would only be redirected again.
        assert!(events(&lines, "retry").is_empty(), "{case}");
        assert_eq!(api.requests().len(), 1, "{case}");
        // The outcome line names it too.
        let said = String::from_utf8_lossy(&output.stdout);
        assert!(said.contains(&location), "{case}: {said}");
    }
}

#[test]
fn a_redirect_within_the_api_is_not_followed_either() {
    // Same host and port, another path: still a place the user did not name.
    let api = MockServer::start(vec![
        Reply::status(308, "").with_header("location", "/elsewhere/v1/messages"),
        Reply::sse(&anthropic_final_turn()),
    ]);
    let (dir, spec) = task("anthropic", &api.base_url, "");
    let artifacts = dir.path().join("out");
    let output = run(&spec, &artifacts, Some(KEY));
    assert_eq!(output.status.code(), Some(3));
    let lines = transcript(&artifacts.join("t/transcript.jsonl"));
    let message = last(&lines)["message"].as_str().unwrap().to_string();
    let resolved = format!("{}/elsewhere/v1/messages", api.base_url);
    assert!(message.contains(&resolved), "{message}");
    assert_eq!(api.requests().len(), 1, "{:?}", seen(&api));
}

#[test]
fn the_web_fetch_page_models_key_does_not_follow_a_redirect() {
    let page = MockServer::start(vec![
        Reply::status(200, "<p>Fixed the parser.</p>")
            .with_header("Content-Type", "text/html; charset=utf-8"),
    ]);
    let elsewhere = MockServer::start(vec![Reply::sse(&anthropic_final_turn())]);
    let location = format!("{}/v1/messages", elsewhere.base_url);
    let model = MockServer::start(vec![
        Reply::status(307, "").with_header("location", &location),
    ]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    let spec = format!(
        "version: 1\nname: web\nprompt: Fetch.\nworkspace: ws\nmodel:\n  provider: script\n  script:\n    - tool_calls: [{{ name: WebFetch, input: {{ url: \"{}/log\", prompt: \"What was fixed?\" }} }}]\n    - text: Done.\npermissions:\n  allow: [\"WebFetch(domain:127.0.0.1)\"]\ntools:\n  web_fetch:\n    model: {{ provider: anthropic, name: claude-haiku-4-5, base_url: \"{}\", api_key_env: WEB_FETCH_TEST_KEY, retry: {{ max_retries: 2, initial_backoff: 10ms, max_backoff: 20ms }} }}\n",
        page.base_url, model.base_url
    );
    let spec = write_spec(dir.path(), "web.yaml", &spec);
    let artifacts = dir.path().join("out");
    let output = drover_without_proxy()
        .env("WEB_FETCH_TEST_KEY", KEY)
        .args(["run", spec.to_str().unwrap(), "--artifacts"])
        .arg(&artifacts)
        .output()
        .unwrap();
    assert!(
        elsewhere.requests().is_empty(),
        "the page model followed the redirect: {:?}",
        seen(&elsewhere)
    );
    assert_eq!(model.requests().len(), 1, "not retried");
    let lines = transcript(&artifacts.join("web/transcript.jsonl"));
    // WebFetch gives the page itself, saying why the page model did not answer.
    let result = events(&lines, "tool_result")[0];
    let content = result["content"].as_str().unwrap();
    assert!(content.contains(&location), "{result}");
    assert!(content.contains("Fixed the parser."), "{result}");
    assert_eq!(output.status.code(), Some(0));
}

#[test]
fn an_mcp_server_redirect_is_not_followed_and_its_headers_stay_home() {
    let elsewhere = MockServer::start(vec![]);
    let location = format!("{}/mcp", elsewhere.base_url);
    let redirect = || Reply::status(307, "").with_header("location", &location);
    let server = MockServer::start(vec![redirect(), redirect(), redirect()]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    let spec = format!(
        "version: 1\nname: t\nprompt: p\nworkspace: ws\nmodel:\n  provider: script\n  script:\n    - text: done\nmcp:\n  timeouts: {{ startup: 20s }}\n  servers:\n    docs:\n      url: {}/mcp\n      headers: {{ X-Team-Token: \"${{MCP_REDIRECT_TOKEN}}\" }}\n",
        server.base_url
    );
    let spec = write_spec(dir.path(), "task.yaml", &spec);
    let output = drover_without_proxy()
        .env("MCP_REDIRECT_TOKEN", "team-token-5f0e2b7d91c4")
        .arg("run")
        .arg(&spec)
        .arg("--artifacts")
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    assert!(
        elsewhere.requests().is_empty(),
        "the MCP request followed the redirect: {:?}",
        seen(&elsewhere)
    );
    assert_eq!(output.status.code(), Some(3));
    let lines = transcript(&dir.path().join("out/t/transcript.jsonl"));
    assert_eq!(last(&lines)["reason"], "mcp_unavailable");
    let failed = events(&lines, "mcp_server")[0];
    let message = failed["message"].as_str().unwrap();
    assert!(message.contains(&location), "{message}");
    assert!(Path::new(&dir.path().join("out")).is_dir());
}
