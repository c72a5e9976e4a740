// Test-only module: its parent includes it under #[cfg(test)].
use std::path::PathBuf;

use super::*;

#[test]
fn the_task_policy_lists_writable_places_and_denials() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let ws = root.join("ws");
    let extra = root.join("extra");
    let tmp = root.join("tmp");
    let secret = root.join("secret.txt");
    for d in [&ws, &extra, &tmp] {
        std::fs::create_dir(d).unwrap();
    }
    // What the policy derives from `Read(//…secret.txt)` and `Read(//…/ws/.env)`.
    let read_denials = [secret.clone(), ws.join(".env")];
    let policy = SandboxPolicy::for_task(&TaskSandbox {
        workspace: &ws,
        additional: std::slice::from_ref(&extra),
        tmpdir: &tmp,
        read_denials: &read_denials,
        network: false,
        limits: ResourceLimits::default(),
    });
    assert_eq!(&policy.writable[..3], &[ws.clone(), extra, tmp]);
    assert!(policy.writable.contains(&PathBuf::from("/dev/null")));
    // The denial inside the (writable) workspace cannot hold: a command could move the
    // file elsewhere and read it.
    assert_eq!(policy.read_denied, vec![secret]);
    assert!(!policy.network);
    let summary = policy.summary();
    assert_eq!(summary["enabled"], true);
    assert_eq!(summary["network"], false);
    assert_eq!(summary["limits"]["open_files"], limits::DEFAULT_OPEN_FILES);
    // Commands have no controlling terminal: /dev/tty is not granted.
    assert!(!policy.writable.contains(&PathBuf::from("/dev/tty")));
    let back: SandboxPolicy =
        serde_json::from_str(&serde_json::to_string(&policy).unwrap()).unwrap();
    assert_eq!(back, policy);
}

#[test]
fn canonical_prefix_keeps_the_missing_tail() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::os::unix::fs::symlink(&root, root.join("link")).unwrap();
    assert_eq!(
        canonical_prefix(&root.join("link/not/yet")),
        root.join("not/yet")
    );
}
