// Test-only module: its parent includes it under #[cfg(test)].
use super::*;

fn problem(stdout: &str) -> OutputProblem {
    parse_headers(stdout).unwrap_err()
}

#[test]
fn a_json_object_of_strings_is_a_set_of_headers() {
    let headers =
        parse_headers("  {\"Authorization\": \"Bearer tok-123\", \"X-Tenant\": \"acme\"}\n")
            .unwrap();
    assert_eq!(headers.len(), 2);
    assert_eq!(headers["Authorization"], "Bearer tok-123");
    assert_eq!(headers["X-Tenant"], "acme");
    // No headers at all is an answer too.
    assert!(parse_headers("{}").unwrap().is_empty());
}

#[test]
fn anything_else_is_refused_without_quoting_a_value() {
    let secret = "s3cr3t-value-4e5f";
    let cases = [
        ("", OutputProblem::Empty),
        ("  \n", OutputProblem::Empty),
        ("[1, 2]", OutputProblem::NotObject("array")),
        ("\"just a string\"", OutputProblem::NotObject("string")),
        ("null", OutputProblem::NotObject("null")),
        (
            "{\"X-Count\": 5}",
            OutputProblem::NotString("X-Count".into(), "number"),
        ),
        (
            "{\"X-Nested\": {\"a\": \"b\"}}",
            OutputProblem::NotString("X-Nested".into(), "object"),
        ),
        ("{\"bad name\": \"v\"}", OutputProblem::BadName),
        ("{\"\": \"v\"}", OutputProblem::BadName),
        (
            "{\"Host\": \"elsewhere\"}",
            OutputProblem::Reserved("Host".into()),
        ),
        (
            "{\"mcp-session-id\": \"x\"}",
            OutputProblem::Reserved("mcp-session-id".into()),
        ),
        (
            "{\"X-Line\": \"a\\nb\"}",
            OutputProblem::BadValue("X-Line".into()),
        ),
        (
            "{\"X-A\": \"1\", \"x-a\": \"2\"}",
            OutputProblem::Twice("x-a".into()),
        ),
    ];
    for (stdout, expected) in cases {
        assert_eq!(problem(stdout), expected, "{stdout:?}");
    }
    // A syntax error names where, never what: the text may be a credential.
    for garbage in [
        format!("Bearer {secret}"),
        format!("{{\"Authorization\": \"{secret}"),
        format!("{{\"Authorization\": {secret}}}"),
    ] {
        let found = problem(&garbage);
        assert!(matches!(found, OutputProblem::NotJson(_)), "{found:?}");
        assert!(!found.to_string().contains("s3cr3t"), "{found}");
    }
    let long = format!("{{\"X-Big\": \"{}\"}}", "a".repeat(MAX_STDOUT));
    assert_eq!(problem(&long), OutputProblem::TooLong);
}

#[test]
fn credential_headers_are_named_by_their_names() {
    for name in [
        "Authorization",
        "proxy-authorization",
        "Cookie",
        "X-Api-Key",
        "X-Auth-Token",
    ] {
        assert!(credential_header(name), "{name}");
    }
    for name in ["X-Tenant", "Accept-Language", "X-Request-Id"] {
        assert!(!credential_header(name), "{name}");
    }
}

#[test]
fn commands_are_shown_on_one_short_line() {
    assert_eq!(
        shown("./get-token.sh  --org\n acme"),
        "./get-token.sh --org acme"
    );
    let long = "x".repeat(300);
    assert_eq!(shown(&long).chars().count(), 121);
    assert!(said("").is_empty());
    assert_eq!(said("a\n\nb\nc\nd\n"), "; its stderr ends: b | c | d");
}

/// The helper as a task runs it, without a sandbox: its headers, the variables it gets,
/// its stderr in the log (redacted of what it printed), and the reasons it fails.
#[tokio::test]
async fn a_helper_runs_in_the_workspace_with_its_server_named_and_its_values_registered() {
    let dir = tempfile::tempdir().unwrap();
    let env = CommandEnv::default();
    let redactor = Redactor::default();
    let log = dir.path().join("mcp-docs.log");
    let helper = |command: &'static str, limit: Duration| Helper {
        field: "headersHelper",
        server: "docs",
        url: "http://127.0.0.1:9/mcp",
        command,
        env: &env,
        extra_env: &[],
        workspace: dir.path(),
        log: log.clone(),
        limit,
        from_repository: false,
    };
    std::fs::write(dir.path().join("token"), "tok-from-file-5d6e7f").unwrap();
    let script = "echo \"said tok-from-file-5d6e7f\" >&2; \
                  printf '{\"Authorization\": \"Bearer %s\", \"X-Server\": \"%s %s\"}' \
                  \"$(cat token)\" \"$CLAUDE_CODE_MCP_SERVER_NAME\" \"$CLAUDE_CODE_MCP_SERVER_URL\"";
    let headers = run(&helper(script, HELPER_LIMIT), &redactor).await.unwrap();
    assert_eq!(headers["Authorization"], "Bearer tok-from-file-5d6e7f");
    assert_eq!(headers["X-Server"], "docs http://127.0.0.1:9/mcp");
    assert_eq!(
        redactor.redact("a tok-from-file-5d6e7f b"),
        "a [redacted] b"
    );
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "said [redacted]\n");

    let failed = run(&helper("echo nope >&2; exit 3", HELPER_LIMIT), &redactor)
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(
        failed,
        "its headersHelper (echo nope >&2; exit 3) failed (exit status 3); its stderr ends: nope"
    );
    let hung = run(&helper("sleep 30", Duration::from_millis(300)), &redactor)
        .await
        .unwrap_err()
        .to_string();
    assert!(hung.contains("did not finish within 300ms"), "{hung}");
    let garbage = run(
        &helper("printf not-json-%s 9f8e7d6c", HELPER_LIMIT),
        &redactor,
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(garbage.contains("text that is not JSON"), "{garbage}");
    assert!(!garbage.contains("not-json-9f8e7d6c"), "{garbage}");
}

/// A value printed by a helper whose output is refused is redacted all the same: a
/// `set -x` trace on stderr must not carry the token into the log or the reason.
#[tokio::test]
async fn a_refused_helpers_values_are_redacted_from_what_it_said() {
    let dir = tempfile::tempdir().unwrap();
    let env = CommandEnv::default();
    let redactor = Redactor::default();
    let helper = Helper {
        field: "headers_helper",
        server: "srv",
        url: "http://127.0.0.1:9/mcp",
        command: "set -x; T=tok-leaky-5566aabb; echo \"{\\\"Authorization\\\": \\\"Bearer $T\\\", \\\"Connection\\\": \\\"close\\\"}\"",
        env: &env,
        extra_env: &[],
        workspace: dir.path(),
        log: dir.path().join("mcp-srv.log"),
        limit: HELPER_LIMIT,
        from_repository: false,
    };
    let error = run(&helper, &redactor).await.unwrap_err().to_string();
    assert!(error.contains("Connection"), "{error}");
    assert!(!error.contains("tok-leaky-5566aabb"), "{error}");
    let log = std::fs::read_to_string(dir.path().join("mcp-srv.log")).unwrap();
    assert!(
        !log.contains("tok-leaky-5566aabb") && log.contains("[redacted]"),
        "{log}"
    );
}

/// A repository's helper cannot make drover redact anything of its choosing (a word,
/// a tool's name, the start of a real secret): what it prints is kept out of its own
/// log and messages only.
#[tokio::test]
async fn a_repository_helpers_values_are_kept_out_of_its_log_only() {
    let dir = tempfile::tempdir().unwrap();
    let env = CommandEnv::default();
    let redactor = Redactor::new(["sk-ant-api03-Zq8xWvT4kLmN9pQrS7".to_string()]);
    let helper = Helper {
        field: "headersHelper",
        server: "srv",
        url: "http://127.0.0.1:9/mcp",
        command: "echo 'said KEY=sk-ant-api03- and ghp_9a8b7c6d5e4f3a2b1c' >&2; printf '{\"Authorization\": \"KEY=sk-ant-api03-\", \"X-Api-Key\": \"ghp_9a8b7c6d5e4f3a2b1c\", \"Connection\": \"close\"}'",
        env: &env,
        extra_env: &[],
        workspace: dir.path(),
        log: dir.path().join("mcp-srv.log"),
        limit: HELPER_LIMIT,
        from_repository: true,
    };
    assert!(run(&helper, &redactor).await.is_err());
    let log = std::fs::read_to_string(dir.path().join("mcp-srv.log")).unwrap();
    assert!(
        !log.contains("ghp_9a8b7c6d5e4f3a2b1c") && !log.contains("KEY=sk-ant"),
        "{log}"
    );
    // The task's own secret is still found whole, and nothing of the file's is added.
    assert_eq!(
        redactor.redact("ANTHROPIC_API_KEY=sk-ant-api03-Zq8xWvT4kLmN9pQrS7 ghp_9a8b7c6d5e4f3a2b1c"),
        "ANTHROPIC_API_KEY=[redacted] ghp_9a8b7c6d5e4f3a2b1c"
    );
}
