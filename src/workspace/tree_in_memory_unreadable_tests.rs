// Test-only module: its parent includes it under #[cfg(test)].
use super::*;

#[test]
#[cfg_attr(
    not(drover_has_sandbox),
    ignore = "needs Landlock ABI 3+ (Linux 6.2), whose read denial even root cannot pass"
)]
fn an_unreadable_file_is_named_and_the_rest_is_kept() {
    use crate::sandbox::{SandboxPolicy, enforce_files};
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("locked")).unwrap();
    std::fs::write(root.join("locked/secret.txt"), "s").unwrap();
    std::fs::write(root.join("new.txt"), "agent's work").unwrap();
    let before = TreeInMemory {
        files: BTreeMap::from([(
            RelPath::from("locked/secret.txt"),
            FileEntry {
                mode: MODE_FILE,
                content: b"s".to_vec(),
            },
        )]),
        unreadable: Vec::new(),
        leftovers: Vec::new(),
    };
    // Even root cannot read beneath a Landlock read denial: a thread restricted so.
    let policy = SandboxPolicy {
        writable: Vec::new(),
        read_denied: vec![root.join("locked")],
        network: true,
        proxied: false,
        limits: Default::default(),
    };
    let taken = std::thread::spawn(move || {
        enforce_files(&policy).map(|()| TreeInMemory::take_excluding(&root, &[]))
    })
    .join()
    .unwrap();
    let mut after = taken
        .unwrap_or_else(|reason| panic!("drover_has_sandbox is set (the build found Landlock ABI 3+, or CI=true runs every test): {reason}"))
        .unwrap();
    assert_eq!(after.unreadable.len(), 1, "{:?}", after.unreadable);
    assert_eq!(after.unreadable[0].0, "locked/secret.txt");
    assert!(after.files.contains_key(&RelPath::from("new.txt")));
    after.keep_unreadable_from(&before);
    assert_eq!(before.changed_paths(&after), ["new.txt"]);
}
