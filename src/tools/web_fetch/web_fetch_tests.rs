// Test-only module: its parent includes it under #[cfg(test)].
//! WebFetch against servers on 127.0.0.1 (never the internet), under real policies.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use reqwest::dns::Resolve;
use serde_json::json;

use super::fetch::{GuardedResolver, kept_addresses};
use super::*;
use crate::policy::{Policy, Rule, RuleSet};
use crate::tools::{CallJson, Tool};

/// One canned response: status line, content type, body.
type Reply = (u16, Vec<(String, String)>, Vec<u8>);

/// A server on 127.0.0.1 answering every request with `reply(path)`; counts requests.
fn serve(reply: impl Fn(&str) -> Reply + Send + 'static) -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&count);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut request = Vec::new();
            let mut buf = [0u8; 1024];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => request.extend_from_slice(&buf[..n]),
                }
            }
            seen.fetch_add(1, Ordering::SeqCst);
            let text = String::from_utf8_lossy(&request);
            let path = text.split_whitespace().nth(1).unwrap_or("/").to_string();
            let (status, headers, body) = reply(&path);
            let mut head = format!(
                "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n",
                body.len()
            );
            for (name, value) in headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str("\r\n");
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&body);
        }
    });
    (port, count)
}

fn html(body: &str) -> Reply {
    (
        200,
        vec![("Content-Type".into(), "text/html; charset=utf-8".into())],
        body.as_bytes().to_vec(),
    )
}

fn ctx_with(
    dir: &tempfile::TempDir,
    allow: &[&str],
    answerer: Option<Arc<dyn PageAnswerer>>,
) -> ToolContext {
    let set = RuleSet {
        allow: allow
            .iter()
            .map(|t| Rule::try_from(t.to_string()).unwrap())
            .collect(),
        ..RuleSet::default()
    };
    let policy = Policy::new(&set, dir.path(), &[]);
    let grants = policy.web_grants(WebFetchTool.facts());
    ToolContext::in_temp(dir).with_web(WebAccess::new(grants, answerer))
}

#[tokio::test]
async fn html_from_an_exactly_allowed_loopback_host_comes_back_as_markdown() {
    let (port, count) =
        serve(|_| html("<h1>Hello</h1><p>A <a href=\"/x\">link</a>.</p><script>evil()</script>"));
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx_with(&dir, &["WebFetch(domain:127.0.0.1)"], None);
    let url = format!("http://127.0.0.1:{port}/page");
    let out = WebFetchTool
        .call(json!({"url": url, "prompt": "What is the title?"}), &ctx)
        .await;
    assert!(!out.is_error, "{}", out.content);
    assert!(out.content.contains("# Hello"), "{}", out.content);
    assert!(
        out.content.contains("Prompt: What is the title?"),
        "{}",
        out.content
    );
    assert!(!out.content.contains("evil"), "{}", out.content);
    // The same page again (its fragment is not sent): from the cache, no second request.
    let again = WebFetchTool
        .call(
            json!({"url": format!("{url}#part"), "prompt": "again"}),
            &ctx,
        )
        .await;
    assert!(
        again.content.contains("from this run's cache"),
        "{}",
        again.content
    );
    assert_eq!(count.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn nothing_is_fetched_without_grants_or_by_a_wildcard_for_loopback() {
    let (port, count) = serve(|_| html("<p>secret</p>"));
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{port}/");
    let bare = ToolContext::in_temp(&dir);
    let out = WebFetchTool.call(json!({"url": url}), &bare).await;
    assert!(
        out.is_error && out.content.contains("no allow rule"),
        "{}",
        out.content
    );
    let outright = ctx_with(&dir, &["WebFetch"], None);
    let out = WebFetchTool.call(json!({"url": url}), &outright).await;
    assert!(
        out.is_error && out.content.contains("loopback"),
        "{}",
        out.content
    );
    let localhost = format!("http://localhost:{port}/");
    let out = WebFetchTool
        .call(json!({"url": localhost}), &outright)
        .await;
    assert!(
        out.is_error && out.content.contains("loopback"),
        "{}",
        out.content
    );
    assert_eq!(count.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_redirect_to_another_host_is_reported_not_followed() {
    let (port, count) = serve(move |path| match path {
        "/out" => (
            302,
            vec![(
                "Location".into(),
                "http://169.254.169.254/latest/meta-data/".into(),
            )],
            Vec::new(),
        ),
        "/same" => (301, vec![("Location".into(), "/final".into())], Vec::new()),
        _ => html("<p>final page</p>"),
    });
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx_with(&dir, &["WebFetch(domain:127.0.0.1)", "WebFetch"], None);
    let out = WebFetchTool
        .call(json!({"url": format!("http://127.0.0.1:{port}/out")}), &ctx)
        .await;
    assert!(!out.is_error, "{}", out.content);
    assert!(out.content.contains("REDIRECT DETECTED"), "{}", out.content);
    assert!(
        out.content
            .contains("Redirect URL: http://169.254.169.254/latest/meta-data/"),
        "{}",
        out.content
    );
    assert_eq!(count.load(Ordering::SeqCst), 1);
    // Within the allowed host, redirects are followed.
    let out = WebFetchTool
        .call(
            json!({"url": format!("http://127.0.0.1:{port}/same")}),
            &ctx,
        )
        .await;
    assert!(out.content.contains("final page"), "{}", out.content);
    assert!(
        out.content
            .contains(&format!("URL: http://127.0.0.1:{port}/final")),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn oversized_bodies_and_binary_content() {
    let (port, _) = serve(|path| match path {
        "/big" => (
            200,
            vec![("Content-Type".into(), "text/plain".into())],
            vec![b'a'; MAX_BODY_BYTES + 4096],
        ),
        "/long" => (
            200,
            vec![("Content-Type".into(), "text/plain".into())],
            "é".repeat(MAX_CHARS + 10).into_bytes(),
        ),
        "/png" => (
            200,
            vec![("Content-Type".into(), "image/png".into())],
            b"\x89PNG\r\n\x1a\n".to_vec(),
        ),
        _ => (
            404,
            vec![("Content-Type".into(), "text/plain".into())],
            b"nope".to_vec(),
        ),
    });
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx_with(&dir, &["WebFetch(domain:127.0.0.1)"], None);
    let get = |path: &str| json!({"url": format!("http://127.0.0.1:{port}{path}")});
    let big = WebFetchTool.call(get("/big"), &ctx).await;
    assert!(
        big.content.contains("only its first 10 MiB were read"),
        "{}",
        &big.content[big.content.len() - 300..]
    );
    assert!(big.content.contains("Content truncated"));
    let long = WebFetchTool.call(get("/long"), &ctx).await;
    assert!(long.content.contains(&format!(
        "first {MAX_CHARS} of {} characters",
        MAX_CHARS + 10
    )));
    let png = WebFetchTool.call(get("/png"), &ctx).await;
    assert!(
        png.is_error && png.content.contains("binary"),
        "{}",
        png.content
    );
    let missing = WebFetchTool.call(get("/missing"), &ctx).await;
    assert!(
        missing.is_error && missing.content.contains("HTTP 404"),
        "{}",
        missing.content
    );
    assert!(missing.content.contains("nope"));
}

struct Echo;

#[async_trait]
impl PageAnswerer for Echo {
    async fn answer(
        &self,
        prompt: &str,
        url: &str,
        page: &str,
    ) -> Result<String, crate::tools::NoAnswer> {
        Ok(format!("answer to {prompt} from {url}: {}", page.len()))
    }
}

#[tokio::test]
async fn a_page_model_answers_the_prompt() {
    let (port, _) = serve(|_| html("<p>abc</p>"));
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx_with(&dir, &["WebFetch(domain:127.0.0.1)"], Some(Arc::new(Echo)));
    let url = format!("http://127.0.0.1:{port}/");
    let out = WebFetchTool
        .call(json!({"url": url, "prompt": "what?"}), &ctx)
        .await;
    assert_eq!(out.content, format!("answer to what? from {url}: 3"));
}

#[test]
fn urls_with_credentials_are_refused_and_the_subject_is_the_url() {
    let facts = WebFetchTool.judged(json!({"url": "https://a.invalid/", "prompt": "p"}));
    assert_eq!(facts.subject, Subject::Url("https://a.invalid/".into()));
    assert!(facts.tool.read_only);
}

#[tokio::test]
async fn the_resolver_keeps_only_the_addresses_rules_open() {
    let loopback: std::net::SocketAddr = "127.0.0.1:0".parse().unwrap();
    let public: std::net::SocketAddr = "93.184.216.34:0".parse().unwrap();
    assert_eq!(kept_addresses(&[loopback, public], false), vec![public]);
    assert_eq!(
        kept_addresses(&[loopback, public], true),
        vec![loopback, public]
    );
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx_with(&dir, &["WebFetch"], None);
    let resolver = GuardedResolver {
        grants: Arc::clone(&ctx.web.grants),
    };
    // A name a wildcard allows that resolves to loopback (as a rebinding name would).
    let refused = resolver.resolve("localhost".parse().unwrap()).await;
    let error = refused.err().unwrap().to_string();
    assert!(error.contains("names exactly this host"), "{error}");
    let exact = ctx_with(&dir, &["WebFetch(domain:localhost)"], None);
    let resolver = GuardedResolver {
        grants: Arc::clone(&exact.web.grants),
    };
    let kept: Vec<_> = resolver
        .resolve("localhost".parse().unwrap())
        .await
        .unwrap()
        .collect();
    assert!(kept.iter().all(|a| a.ip().is_loopback()) && !kept.is_empty());
}

#[tokio::test]
async fn a_page_nested_to_the_limit_converts_and_a_deeper_one_comes_back_as_text() {
    let depth = content::MAX_DEPTH - 20;
    let nested = format!(
        "{}<b>deep</b>{}",
        "<div>".repeat(depth),
        "</div>".repeat(depth)
    );
    let deeper = "<div>".repeat(300_000);
    let (port, _) = serve(move |path| match path {
        "/nested" => html(&nested),
        _ => html(&deeper),
    });
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx_with(&dir, &["WebFetch(domain:127.0.0.1)"], None);
    let get = |path: &str| json!({"url": format!("http://127.0.0.1:{port}{path}")});
    let out = WebFetchTool.call(get("/nested"), &ctx).await;
    assert!(out.content.contains("**deep**"), "{}", out.content);
    let out = WebFetchTool.call(get("/deeper"), &ctx).await;
    assert!(!out.is_error, "{}", out.content);
    assert!(
        out.content.contains("nests elements more than"),
        "{}",
        out.content
    );
}
