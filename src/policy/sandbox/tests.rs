use std::path::{Path, PathBuf};

use super::*;

fn rules(texts: &[&str]) -> Vec<Rule> {
    texts
        .iter()
        .map(|t| Rule::try_from(t.to_string()).unwrap())
        .collect()
}

#[test]
fn only_fixed_absolute_read_denials_are_expressible() {
    let home = Path::new("/home/me");
    let denial = |text: &str| expressible_read_denial(&rules(&[text])[0], Some(home));
    assert_eq!(
        denial("Read(//etc/shadow)"),
        Some(PathBuf::from("/etc/shadow"))
    );
    assert_eq!(denial("Read(~/.ssh)"), Some(PathBuf::from("/home/me/.ssh")));
    assert_eq!(
        denial("Read(~/.aws/**)"),
        Some(PathBuf::from("/home/me/.aws"))
    );
    assert_eq!(
        denial("Read(//srv/keys/)"),
        Some(PathBuf::from("/srv/keys"))
    );
    for inexpressible in [
        "Read(.env)",
        "Read(secrets/**)",
        "Read(//etc/*.key)",
        "Read(~/.ssh/id_*)",
        "Read(//a/../b)",
        "Read",
        "Edit(//etc/passwd)",
        "Grep(//etc/shadow)",
        "Bash(cat *)",
    ] {
        assert_eq!(denial(inexpressible), None, "{inexpressible}");
    }
    assert_eq!(
        expressible_read_denial(&rules(&["Read(~/.ssh)"])[0], None),
        None
    );
}

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
    let deny = rules(&[
        &format!("Read(/{})", secret.display()),
        &format!("Read(/{}/.env)", ws.display()),
        "Read(.env)",
        "Bash(git push *)",
    ]);
    let policy = SandboxPolicy::for_task(&TaskSandbox {
        workspace: &ws,
        additional: std::slice::from_ref(&extra),
        tmpdir: &tmp,
        deny: &deny,
        network: false,
        home: None,
        limits: ResourceLimits::default(),
    });
    assert_eq!(&policy.writable[..3], &[ws.clone(), extra, tmp]);
    assert!(policy.writable.contains(&PathBuf::from("/dev/null")));
    // The denial inside the (writable) workspace cannot hold: a command could move the
    // file elsewhere and read it. The relative one is for the rules only.
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
