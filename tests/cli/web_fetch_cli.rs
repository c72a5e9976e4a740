//! WebFetch end to end: `drover run` with a scripted model fetching from mock servers on
//! 127.0.0.1 (never the internet), under the task's rules.

use serde_json::Value;

use crate::common::{drover_without_proxy, events, transcript, write_spec};
use crate::mock_server::{MockServer, Reply};

/// Run a spec whose model makes `calls` (one WebFetch input per turn) under
/// `permissions`, plus `extra` YAML; the transcript's tool results, in order, and its
/// permission events.
fn run(calls: &[String], permissions: &str, extra: &str) -> (Vec<Value>, Vec<Value>) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    let mut script = String::new();
    for url in calls {
        script.push_str(&format!(
            "    - tool_calls: [{{ name: WebFetch, input: {{ url: \"{url}\", prompt: \"What does it say?\" }} }}]\n"
        ));
    }
    script.push_str("    - text: Done.\n");
    let spec = format!(
        "version: 1\nname: web\nprompt: Fetch.\nworkspace: ws\nmodel:\n  provider: script\n  script:\n{script}permissions:\n{permissions}{extra}"
    );
    let lines = run_task(dir.path(), &spec, 0);
    let results = events(&lines, "tool_result").into_iter().cloned().collect();
    let permissions = events(&lines, "permission").into_iter().cloned().collect();
    (results, permissions)
}

/// Run the task `spec` (its workspace `ws` under `dir`), expecting exit `code`; the
/// transcript's lines.
fn run_task(dir: &std::path::Path, spec: &str, code: i32) -> Vec<Value> {
    let spec = write_spec(dir, "web.yaml", spec);
    let artifacts = dir.join("out");
    let output = drover_without_proxy()
        .args(["run", spec.to_str().unwrap(), "--artifacts"])
        .arg(&artifacts)
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(code),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    transcript(&artifacts.join("web/transcript.jsonl"))
}

fn html(body: &str) -> Reply {
    Reply::status(200, body).with_header("Content-Type", "text/html; charset=utf-8")
}

#[test]
fn web_fetch_allowed_page_redirect_out_oversized_and_denied_host() {
    let server = MockServer::start(vec![
        html(
            "<html><head><title>t</title></head><body><h1>Release notes</h1><p>Version <b>2.0</b> is out.</p><script>steal()</script></body></html>",
        ),
        Reply::status(302, "").with_header("Location", "http://localhost:1/secret"),
        Reply::status(200, &"x".repeat(11 * 1024 * 1024)).with_header("Content-Type", "text/plain"),
    ]);
    let base = &server.base_url;
    let calls = [
        format!("{base}/notes"),
        format!("{base}/moved"),
        format!("{base}/huge"),
        "https://example.org/".to_string(),
        // The first page again: from the run's cache, no request.
        format!("{base}/notes"),
    ];
    let (results, permissions) = run(&calls, "  allow: [\"WebFetch(domain:127.0.0.1)\"]\n", "");
    assert_eq!(results.len(), 5, "{results:#?}");

    let page = &results[0];
    let text = page["content"].as_str().unwrap();
    assert_eq!(page["is_error"], false, "{text}");
    assert!(text.contains("# Release notes"), "{text}");
    assert!(text.contains("Version **2.0** is out."), "{text}");
    assert!(text.contains("Prompt: What does it say?"), "{text}");
    assert!(!text.contains("steal"), "{text}");

    let redirect = results[1]["content"].as_str().unwrap();
    assert!(redirect.contains("REDIRECT DETECTED"), "{redirect}");
    assert!(
        redirect.contains("Redirect URL: http://localhost:1/secret"),
        "{redirect}"
    );

    let huge = results[2]["content"].as_str().unwrap();
    assert!(
        huge.contains("only its first 10 MiB were read"),
        "{}",
        &huge[huge.len() - 400..]
    );
    assert!(
        huge.contains("[Content truncated: showing the first 100000 of"),
        "{}",
        &huge[huge.len() - 400..]
    );
    assert!(huge.chars().count() < 101_000);

    assert_eq!(results[3]["is_error"], true);
    let denied = &permissions[3];
    assert_eq!(denied["decision"], "deny", "{permissions:#?}");
    assert!(
        denied["reason"]
            .as_str()
            .unwrap()
            .contains("WebFetch(domain:example.org)")
    );

    let cached = results[4]["content"].as_str().unwrap();
    assert!(cached.contains("from this run's cache"), "{cached}");
    // The redirect was not followed, the denied host never asked, the cached page fetched once.
    assert_eq!(server.requests().len(), 3);
}

#[test]
fn web_fetch_outright_does_not_open_loopback_or_cloud_metadata() {
    let server = MockServer::start(vec![html("<p>internal</p>")]);
    let calls = [
        format!("{}/admin", server.base_url),
        "http://169.254.169.254/latest/meta-data/".to_string(),
        "http://[::ffff:127.0.0.1]:1/".to_string(),
    ];
    let (results, permissions) = run(&calls, "  allow: [WebFetch]\n", "");
    for (result, permission) in results.iter().zip(&permissions) {
        assert_eq!(result["is_error"], true, "{result}");
        assert_eq!(permission["decision"], "deny");
        let reason = permission["reason"].as_str().unwrap();
        assert!(reason.contains("names exactly this host"), "{reason}");
    }
    assert!(
        permissions[1]["reason"]
            .as_str()
            .unwrap()
            .contains("link-local")
    );
    assert!(server.requests().is_empty());
}

#[test]
fn web_fetch_without_a_rule_is_denied() {
    let server = MockServer::start(vec![html("<p>x</p>")]);
    let (results, permissions) = run(&[format!("{}/", server.base_url)], "  allow: [Read]\n", "");
    assert_eq!(results[0]["is_error"], true);
    assert_eq!(permissions[0]["decision"], "deny");
    assert!(server.requests().is_empty());
}

#[test]
fn web_fetch_page_model_answers_the_prompt() {
    let server = MockServer::start(vec![html("<p>The answer is 42.</p>")]);
    let extra = "tools:\n  web_fetch:\n    model:\n      provider: script\n      script:\n        - text: \"The page says the answer is 42.\"\n";
    let (results, _) = run(
        &[format!("{}/", server.base_url)],
        "  allow: [\"WebFetch(domain:127.0.0.1)\"]\n",
        extra,
    );
    assert_eq!(results[0]["is_error"], false);
    assert_eq!(results[0]["content"], "The page says the answer is 42.");
}

#[test]
fn web_fetch_settings_are_checked_at_their_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write_spec(
        dir.path(),
        "bad.yaml",
        "version: 1\nname: t\nprompt: p\nmodel: { provider: script, script: [{ text: hi }] }\ntools:\n  web_fetch:\n    modle: { provider: script }\n",
    );
    let output = drover_without_proxy()
        .args(["validate", spec.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("bad.yaml:7:5"), "{stderr}");
    assert!(stderr.contains("modle"), "{stderr}");

    let spec = write_spec(
        dir.path(),
        "bad2.yaml",
        "version: 1\nname: t\nprompt: p\nmodel: { provider: script, script: [{ text: hi }] }\ntools:\n  web_fetch:\n    model: { provider: script }\n",
    );
    let output = drover_without_proxy()
        .args(["validate", spec.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("tools.web_fetch.model: provider script needs `script:`"),
        "{stderr}"
    );
}

#[test]
fn a_replay_answers_web_fetch_from_the_recording_without_fetching() {
    let server = MockServer::start(vec![html("<p>recorded page</p>")]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    let spec = format!(
        "version: 1\nname: web\nprompt: Fetch.\nworkspace: ws\nmodel:\n  provider: script\n  script:\n    - tool_calls: [{{ name: WebFetch, input: {{ url: \"{}/\" }} }}]\n    - text: Done.\npermissions:\n  allow: [\"WebFetch(domain:127.0.0.1)\"]\n",
        server.base_url
    );
    let spec = write_spec(dir.path(), "web.yaml", &spec);
    let artifacts = dir.path().join("out");
    drover_without_proxy()
        .args(["run", spec.to_str().unwrap(), "--artifacts"])
        .arg(&artifacts)
        .assert()
        .code(0);
    assert_eq!(server.requests().len(), 1);
    let replayed = dir.path().join("replayed");
    let output = drover_without_proxy()
        .current_dir(dir.path())
        .arg("replay")
        .arg(artifacts.join("web/transcript.jsonl"))
        .arg("--strict")
        .arg("--artifacts")
        .arg(&replayed)
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let lines = transcript(&replayed.join("web/transcript.jsonl"));
    let result = events(&lines, "tool_result")[0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(result.contains("recorded page"), "{result}");
    // The replay fetched nothing (the server would have answered a 500).
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn web_fetch_sends_no_secret_and_uses_no_proxy_from_the_environment() {
    let server = MockServer::start(vec![html("<p>plain</p>")]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    let spec = format!(
        "version: 1\nname: web\nprompt: Fetch.\nworkspace: ws\nmodel:\n  provider: script\n  script:\n    - tool_calls: [{{ name: WebFetch, input: {{ url: \"{}/\" }} }}]\n    - text: Done.\npermissions:\n  allow: [\"WebFetch(domain:127.0.0.1)\"]\n",
        server.base_url
    );
    let spec = write_spec(dir.path(), "web.yaml", &spec);
    let artifacts = dir.path().join("out");
    // A proxy that would refuse every connection, with credentials: were it used, the
    // fetch would fail (and the credentials would travel).
    let dead_proxy = "http://proxyuser:proxy-secret-123@127.0.0.1:9";
    crate::common::drover()
        .env("HTTP_PROXY", dead_proxy)
        .env("HTTPS_PROXY", dead_proxy)
        .env("ALL_PROXY", dead_proxy)
        .env("http_proxy", dead_proxy)
        .env("NO_PROXY", "")
        .env("ANTHROPIC_API_KEY", "sk-ant-web-fetch-secret-456")
        .env("GITHUB_TOKEN", "ghp_webfetchsecret789")
        .args(["run", spec.to_str().unwrap(), "--artifacts"])
        .arg(&artifacts)
        .assert()
        .code(0);
    let lines = transcript(&artifacts.join("web/transcript.jsonl"));
    let result = events(&lines, "tool_result")[0];
    assert_eq!(result["is_error"], false, "{result}");
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let head = requests[0].headers.to_ascii_lowercase();
    for secret in [
        "proxy-secret-123",
        "sk-ant-web-fetch-secret-456",
        "ghp_webfetchsecret789",
    ] {
        assert!(!head.contains(secret), "{head}");
    }
    for header in ["authorization", "proxy-authorization", "cookie", "referer"] {
        assert!(requests[0].header(header).is_none(), "{head}");
    }
}

#[test]
fn a_remote_page_model_gets_the_page_and_prompt_and_its_key_stays_secret() {
    let page = MockServer::start(vec![html("<h2>Changelog</h2><p>Fixed the parser.</p>")]);
    let model = MockServer::start(vec![Reply::sse(&crate::providers::anthropic_final_turn())]);
    let key = "page-model-key-0123456789abcdef";
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    let spec = format!(
        "version: 1\nname: web\nprompt: Fetch.\nworkspace: ws\nmodel:\n  provider: script\n  script:\n    - tool_calls: [{{ name: WebFetch, input: {{ url: \"{}/log\", prompt: \"What was fixed?\" }} }}]\n    - text: Done.\npermissions:\n  allow: [\"WebFetch(domain:127.0.0.1)\"]\ntools:\n  web_fetch:\n    model: {{ provider: anthropic, name: claude-haiku-4-5, base_url: \"{}\", api_key_env: WEB_FETCH_TEST_KEY }}\n",
        page.base_url, model.base_url
    );
    let spec = write_spec(dir.path(), "web.yaml", &spec);
    let artifacts = dir.path().join("out");
    let output = drover_without_proxy()
        .env("WEB_FETCH_TEST_KEY", key)
        .args(["run", spec.to_str().unwrap(), "--artifacts"])
        .arg(&artifacts)
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let lines = transcript(&artifacts.join("web/transcript.jsonl"));
    let result = events(&lines, "tool_result")[0];
    assert_eq!(
        result["content"], "Done: the notes say h\u{e9}llo.",
        "{result}"
    );
    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].header("x-api-key").as_deref(), Some(key));
    let body = requests[0].json();
    assert_eq!(body["model"], "claude-haiku-4-5");
    let asked = body["messages"][0]["content"].to_string();
    assert!(asked.contains("## Changelog"), "{asked}");
    assert!(asked.contains("What was fixed?"), "{asked}");
    let recorded = std::fs::read_to_string(artifacts.join("web/transcript.jsonl")).unwrap();
    assert!(!recorded.contains(key));
}

#[test]
fn the_page_models_tokens_count_toward_the_tasks_budget() {
    let server = MockServer::start(vec![html("<p>The answer is 42.</p>")]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    let spec = format!(
        "version: 1\nname: web\nprompt: Fetch.\nworkspace: ws\nmodel:\n  provider: script\n  script:\n    - tool_calls: [{{ name: WebFetch, input: {{ url: \"{}/\", prompt: \"What?\" }} }}]\n    - tool_calls: [{{ name: TodoWrite, input: {{ todos: [] }} }}]\n    - text: Done.\npermissions:\n  allow: [\"WebFetch(domain:127.0.0.1)\"]\nlimits:\n  max_tokens: 300\ntools:\n  web_fetch:\n    model:\n      provider: script\n      script:\n        - text: \"42\"\n          usage: {{ input_tokens: 400, output_tokens: 10 }}\n",
        server.base_url
    );
    let lines = run_task(dir.path(), &spec, 1);
    let end = lines.last().unwrap();
    assert_eq!(end["reason"], "budget", "{end}");
    assert_eq!(end["usage"]["input_tokens"], 400, "{end}");
    assert_eq!(
        events(&lines, "model_response").len(),
        1,
        "no request after the budget"
    );
}
