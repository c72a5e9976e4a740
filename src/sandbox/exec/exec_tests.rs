// Test-only module: its parent includes it under #[cfg(test)].
use super::*;
use std::time::Instant;

async fn run(command: &str, timeout_ms: u64) -> ShellOutcome {
    let dir = std::env::temp_dir();
    run_shell(
        command,
        &dir,
        Duration::from_millis(timeout_ms),
        &CommandEnv::default(),
    )
    .await
    .unwrap()
}

/// The launcher process itself gets no variable of the command's environment (not
/// even PATH): a stand-in launcher records its own environment and the environment
/// file it was handed.
#[tokio::test]
async fn the_launcher_gets_the_environment_in_its_file_never_its_own() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let own = dir.path().join("own-env");
    let channel = dir.path().join("channel");
    let exe = dir.path().join("launcher");
    std::fs::write(
        &exe,
        format!(
            "#!/bin/sh\n/usr/bin/env > {own}\nwhile [ \"$1\" != --env-fd ]; do shift; done\n/usr/bin/tr '\\0' '\\n' < /proc/self/fd/$2 > {channel}\n",
            own = own.display(),
            channel = channel.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    let env = CommandEnv {
        sandbox: Some(Launcher::with_exe(exe, None).unwrap()),
        tmpdir: Some(dir.path().to_path_buf()),
        ..CommandEnv::default()
    };
    let preload = OsStr::new("/nonexistent/evil.so");
    let extra = [("LD_PRELOAD", preload)];
    let (cmd, _) = env.bash("true", &extra).unwrap();
    assert_eq!(cmd.as_std().get_envs().count(), 0, "{cmd:?}");
    let spawned = spawn_shell("true", dir.path(), &extra, &env).unwrap();
    run_spawned(spawned, Duration::from_secs(10)).await.unwrap();
    let own = std::fs::read_to_string(&own).unwrap();
    for name in ["LD_PRELOAD", "TMPDIR", "DROVER", "CI", "PATH"] {
        assert!(!own.contains(&format!("{name}=")), "{name} in {own}");
    }
    let channel = std::fs::read_to_string(&channel).unwrap();
    assert!(
        channel.contains("LD_PRELOAD=/nonexistent/evil.so\n"),
        "{channel}"
    );
    assert!(channel.contains("DROVER=1\n"), "{channel}");
    assert!(channel.contains(&format!("TMPDIR={}\n", dir.path().display())));
}

#[tokio::test]
async fn split_runs_read_stdin_from_the_file_and_keep_stderr_apart() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.json");
    std::fs::write(&input, "{\"a\":1}").unwrap();
    let out = run_shell_split(
        "cat; echo oops >&2; exit 2",
        dir.path(),
        Duration::from_secs(10),
        &[],
        &CommandEnv::default(),
        &input,
    )
    .await
    .unwrap();
    assert_eq!(out.exit_code, Some(2));
    assert_eq!(out.stdout, "{\"a\":1}");
    assert_eq!(out.stderr, "oops\n");
}

#[tokio::test]
async fn reports_exit_code_and_runs_in_cwd() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("marker"), "").unwrap();
    let out = run_shell(
        "ls; exit 3",
        dir.path(),
        Duration::from_secs(10),
        &CommandEnv::default(),
    )
    .await
    .unwrap();
    assert_eq!(out.exit_code, Some(3));
    assert!(!out.timed_out);
    assert_eq!(out.output, "marker\n");
    assert_eq!(run("true", 10_000).await.exit_code, Some(0));
    assert_eq!(run("echo $DROVER", 10_000).await.output, "1\n");
    assert_eq!(
        run("echo $CI $GIT_TERMINAL_PROMPT $PAGER $GIT_EDITOR", 10_000)
            .await
            .output,
        "true 0 cat true\n"
    );
}

#[tokio::test]
async fn the_environment_is_scrubbed_as_the_command_env_says() {
    // HOME stands in for the model key's variable: withheld whatever its name.
    let env = CommandEnv {
        withheld: vec!["HOME".to_string()],
        ..CommandEnv::default()
    };
    let dir = std::env::temp_dir();
    let out = run_shell("echo \"home=$HOME\"", &dir, Duration::from_secs(10), &env)
        .await
        .unwrap();
    assert_eq!(out.output, "home=\n");
}

#[tokio::test]
async fn stdout_and_stderr_are_merged_in_order() {
    let out = run("echo a; echo b >&2; echo c", 10_000).await;
    assert_eq!(out.output, "a\nb\nc\n");
}

#[tokio::test]
async fn timeout_kills_the_command_quickly() {
    let start = Instant::now();
    let out = run("echo started; sleep 30", 300).await;
    assert!(out.timed_out);
    assert_eq!(out.exit_code, None);
    assert_eq!(out.output, "started\n");
    assert!(start.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn timeout_kills_backgrounded_grandchildren() {
    let start = Instant::now();
    let out = run("sleep 30 & wait", 300).await;
    assert!(out.timed_out);
    assert!(start.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn leftover_background_children_do_not_hang() {
    let start = Instant::now();
    let out = run("sleep 30 & echo done", 20_000).await;
    assert!(!out.timed_out);
    assert_eq!(out.exit_code, Some(0));
    assert_eq!(out.output, "done\n");
    assert!(start.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn stdin_is_closed() {
    let start = Instant::now();
    let out = run("cat; echo after", 20_000).await;
    assert_eq!(out.exit_code, Some(0));
    assert_eq!(out.output, "after\n");
    assert!(start.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn huge_output_keeps_head_and_tail() {
    let out = run(
        "echo FIRST; head -c 5000000 /dev/zero | tr '\\0' x; echo; echo LAST",
        60_000,
    )
    .await;
    assert!(out.output.starts_with("FIRST\n"));
    assert!(out.output.ends_with("LAST\n"));
    assert!(out.output.contains("bytes of output omitted"));
    assert!(out.output.len() < 3 * 1024 * 1024);
}

#[test]
fn capture_counts_dropped_bytes() {
    let mut c = Capture::default();
    c.push(&vec![b'a'; KEEP_HEAD_BYTES + KEEP_TAIL_BYTES + 10]);
    assert_eq!(c.dropped, 10);
    assert!(c.render().contains("10 bytes of output omitted"));
    assert!(c.take().contains("10 bytes of output omitted"));
    assert_eq!(c.take(), "");
}

#[test]
fn take_returns_only_new_output_and_keeps_split_characters_whole() {
    let mut c = Capture::default();
    c.push(b"one\n");
    assert_eq!(c.take(), "one\n");
    let e_acute = "\u{e9}".as_bytes();
    c.push(&[b'a', e_acute[0]]);
    assert_eq!(c.take(), "a");
    c.push(&[e_acute[1], b'b']);
    assert_eq!(c.take(), "\u{e9}b");
}
