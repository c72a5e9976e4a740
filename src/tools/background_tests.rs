// Test-only module: its parent includes it under #[cfg(test)].
use std::time::Instant;

use serde_json::json;

use super::*;
use crate::tools::bash::BashTool;
use crate::tools::bash_output::BashOutputTool;
use crate::tools::kill_shell::KillShellTool;
use crate::tools::{CallJson, ToolContext, ToolOutput};

fn ctx(dir: &tempfile::TempDir) -> ToolContext {
    ToolContext::new(dir.path().canonicalize().unwrap())
}

async fn start(ctx: &ToolContext, command: &str) -> ToolOutput {
    BashTool
        .call(json!({"command": command, "run_in_background": true}), ctx)
        .await
}

async fn output(ctx: &ToolContext, id: &str) -> ToolOutput {
    BashOutputTool.call(json!({"bash_id": id}), ctx).await
}

/// Whether process `pid` is gone (a zombie waiting for a reaper counts as gone).
fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

async fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "timed out: {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Start `sleep 30` in the background behind a shell, and return the sleep's pid.
async fn sleeping(ctx: &ToolContext) -> (String, i32) {
    let out = start(ctx, "sleep 30 & echo $!; wait").await;
    assert!(!out.is_error, "{}", out.content);
    let id = ctx.background.ids().last().unwrap().clone();
    let mut seen = String::new();
    let start = Instant::now();
    while !seen.contains('\n') {
        assert!(start.elapsed() < Duration::from_secs(10));
        seen.push_str(&ctx.background.read(&id).unwrap().new_output);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let pid: i32 = seen.trim().parse().unwrap();
    assert!(!gone(pid));
    (id, pid)
}

#[tokio::test]
async fn output_is_read_incrementally_until_the_exit_status() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx(&dir);
    let out = start(&ctx, "for i in 1 2 3; do echo $i; sleep 0.2; done").await;
    assert!(out.content.contains("bash_1"), "{}", out.content);
    let mut pieces = Vec::new();
    let started = Instant::now();
    loop {
        let report = output(&ctx, "bash_1").await;
        assert!(!report.is_error, "{}", report.content);
        if let Some((_, new)) = report.content.split_once("New output:\n") {
            pieces.push(new.to_string());
        }
        if report.content.contains("exited with code 0") {
            break;
        }
        assert!(report.content.contains("is running"), "{}", report.content);
        assert!(started.elapsed() < Duration::from_secs(10));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Read while it ran: several pieces, each only new output, together all of it.
    assert!(pieces.len() >= 2, "{pieces:?}");
    assert_eq!(pieces.join("\n"), "1\n2\n3");
    let again = output(&ctx, "bash_1").await;
    assert!(again.content.contains("exited with code 0"));
    assert!(again.content.contains("no new output"), "{}", again.content);
}

#[tokio::test]
async fn two_reads_return_only_new_output() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx(&dir);
    start(&ctx, "echo first; sleep 0.5; echo second").await;
    wait_until("first", || {
        lock_capture(&ctx.background.lock().shells[&1].1.output)
            .render()
            .contains("first")
    })
    .await;
    let one = output(&ctx, "bash_1").await;
    assert!(one.content.contains("is running"), "{}", one.content);
    assert!(
        one.content.ends_with("New output:\nfirst"),
        "{}",
        one.content
    );
    let mut two = output(&ctx, "bash_1").await;
    let started = Instant::now();
    while !two.content.contains("exited") {
        assert!(started.elapsed() < Duration::from_secs(10));
        tokio::time::sleep(Duration::from_millis(50)).await;
        two = output(&ctx, "bash_1").await;
    }
    // Only what came after the first read (the command line itself names both words).
    assert_eq!(
        two.content.split_once("New output:\n").map(|(_, new)| new),
        Some("second"),
        "{}",
        two.content
    );
}

#[tokio::test]
async fn kill_shell_kills_the_whole_group() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx(&dir);
    let (id, pid) = sleeping(&ctx).await;
    let started = Instant::now();
    let out = KillShellTool.call(json!({"shell_id": id}), &ctx).await;
    assert_eq!(
        out,
        ToolOutput::ok("Killed shell bash_1 and every process it started.")
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    wait_until("the grandchild is gone", || gone(pid)).await;
    let report = output(&ctx, "bash_1").await;
    assert!(
        report.content.contains("bash_1 was killed"),
        "{}",
        report.content
    );
    let again = KillShellTool
        .call(json!({"shell_id": "bash_1"}), &ctx)
        .await;
    assert!(!again.is_error && again.content.contains("not running"));
}

#[tokio::test]
async fn unknown_ids_are_errors_naming_the_known_ones() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx(&dir);
    let out = output(&ctx, "bash_9").await;
    assert!(out.is_error && out.content.contains("none has been started"));
    start(&ctx, "true").await;
    let out = output(&ctx, "bash_9").await;
    assert_eq!(
        out,
        ToolOutput::error("No background shell with id bash_9. Known shells: bash_1.")
    );
    let out = KillShellTool.call(json!({"shell_id": "x"}), &ctx).await;
    assert!(out.is_error && out.content.contains("Known shells: bash_1"));
}

#[tokio::test]
async fn dropping_the_registry_kills_every_group() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx(&dir);
    let (_, pid) = sleeping(&ctx).await;
    drop(ctx);
    wait_until("the background sleep is gone", || gone(pid)).await;
}

#[tokio::test]
async fn shutdown_kills_and_refuses_new_shells() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx(&dir);
    let (id, pid) = sleeping(&ctx).await;
    ctx.shutdown();
    wait_until("the background sleep is gone", || gone(pid)).await;
    assert_eq!(
        ctx.background.read(&id).unwrap().status,
        ShellStatus::Killed
    );
    let out = start(&ctx, "true").await;
    assert!(
        out.is_error && out.content.contains("run is ending"),
        "{}",
        out.content
    );
}

#[test]
fn starting_outside_a_runtime_is_an_error_not_a_panic() {
    let shells = BackgroundShells::default();
    let err = shells
        .start("true", &std::env::temp_dir(), &Default::default())
        .unwrap_err();
    assert!(err.to_string().contains("runtime"), "{err}");
    assert!(shells.ids().is_empty());
}
