// Test-only module: its parent includes it under #[cfg(test)].
use super::*;
use std::os::unix::fs::PermissionsExt;

fn setup() -> (tempfile::TempDir, PathBuf, tempfile::TempDir, PathBuf) {
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path().canonicalize().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let outside_root = outside.path().canonicalize().unwrap();
    std::fs::write(outside_root.join("secret"), "outside").unwrap();
    (ws, root, outside, outside_root)
}

#[test]
fn reads_and_writes_beneath_the_root() {
    let (_ws, root, _o, _or) = setup();
    let roots = Roots::new(std::slice::from_ref(&root));
    let file = root.join("a/b/new.txt");
    roots.write_atomic(&file, b"one").unwrap();
    assert_eq!(roots.read(&file).unwrap(), b"one");
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o644);
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
    roots.write_atomic(&file, b"two").unwrap();
    assert_eq!(std::fs::read(&file).unwrap(), b"two");
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o755, "the old permission bits are kept");
    // No temp file is left behind.
    assert_eq!(std::fs::read_dir(root.join("a/b")).unwrap().count(), 1);
    assert!(roots.metadata(&root.join("a")).unwrap().is_dir());
}

#[test]
fn a_symlink_on_the_path_is_never_followed() {
    let (_ws, root, _o, outside) = setup();
    let roots = Roots::new(std::slice::from_ref(&root));
    std::os::unix::fs::symlink(&outside, root.join("link")).unwrap();
    std::os::unix::fs::symlink("../../", root.join("rel")).unwrap();
    for path in [
        root.join("link/secret"),
        root.join("rel/secret"),
        root.join("link"),
    ] {
        let error = roots.read(&path).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("changed while drover acted on it"),
            "{path:?}: {error}"
        );
    }
    let error = roots
        .write_atomic(&root.join("link/planted"), b"x")
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("changed while drover acted on it")
    );
    assert!(!outside.join("planted").exists());
    // A write onto a name that became a symlink is refused, the link's target untouched.
    std::os::unix::fs::symlink(outside.join("secret"), root.join("file")).unwrap();
    assert!(roots.write_atomic(&root.join("file"), b"x").is_err());
    assert_eq!(
        std::fs::read_to_string(outside.join("secret")).unwrap(),
        "outside"
    );
    // The link itself can be looked at.
    assert!(
        roots
            .symlink_metadata(&root.join("link"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[test]
fn fifos_and_directories_are_refused_without_blocking() {
    let (_ws, root, _o, _or) = setup();
    let roots = Roots::new(std::slice::from_ref(&root));
    let fifo = root.join("pipe");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    let error = roots.read(&fifo).unwrap_err();
    assert!(error.to_string().contains("not a regular file"), "{error}");
    assert_eq!(
        roots.read(&root).unwrap_err().kind(),
        io::ErrorKind::IsADirectory
    );
    assert_eq!(
        roots.write_atomic(&root, b"x").unwrap_err().kind(),
        io::ErrorKind::IsADirectory
    );
}

#[test]
fn paths_outside_every_root_resolve_beneath_slash_without_symlinks() {
    let (_ws, root, _o, outside) = setup();
    let roots = Roots::new(std::slice::from_ref(&root));
    assert_eq!(roots.read(&outside.join("secret")).unwrap(), b"outside");
    std::os::unix::fs::symlink(outside.join("secret"), outside.join("alias")).unwrap();
    assert!(roots.read(&outside.join("alias")).is_err());
    assert!(roots.read(Path::new("relative")).is_err());
    assert!(roots.read(&root.join("a/../b")).is_err());
}

#[test]
fn the_walk_gives_the_same_answers_as_openat2() {
    let (_ws, root, _o, outside) = setup();
    std::fs::create_dir(root.join("d")).unwrap();
    std::fs::write(root.join("d/f"), "in").unwrap();
    std::os::unix::fs::symlink(&outside, root.join("link")).unwrap();
    let handle = open_root(&root).unwrap();
    let read = OFlags::RDONLY | OFlags::CLOEXEC;
    assert!(open_by_walking(handle.as_fd(), Path::new("d/f"), read, Mode::empty()).is_ok());
    assert!(open_by_walking(handle.as_fd(), Path::new("."), read, Mode::empty()).is_ok());
    for escaping in ["link/secret", "link"] {
        assert!(open_by_walking(handle.as_fd(), Path::new(escaping), read, Mode::empty()).is_err());
        assert!(
            open_by_walking(
                handle.as_fd(),
                Path::new(escaping),
                OFlags::PATH,
                Mode::empty()
            )
            .is_err()
        );
    }
}

#[test]
fn an_unopenable_root_fails_every_operation_under_it() {
    let (_ws, root, _o, _or) = setup();
    let gone = root.join("gone");
    let roots = Roots::new(std::slice::from_ref(&gone));
    std::fs::create_dir(&gone).unwrap();
    let error = roots.read(&gone.join("x")).unwrap_err();
    assert!(error.to_string().contains("cannot be opened"), "{error}");
}

#[test]
#[cfg_attr(
    not(drover_has_sandbox),
    ignore = "needs Landlock ABI 3+ (Linux 6.2), which confines the thread"
)]
fn a_confined_thread_stops_what_the_path_logic_lets_through() {
    use crate::sandbox::{SandboxPolicy, enforce_files};
    use crate::workspace::confined::ConfinedThread;
    let (_ws, root, _o, outside) = setup();
    let denied = tempfile::tempdir().unwrap();
    let denied_root = denied.path().canonicalize().unwrap();
    std::fs::write(denied_root.join("key"), "secret").unwrap();
    let policy = SandboxPolicy {
        writable: vec![root.clone()],
        read_denied: vec![denied_root.clone()],
        network: true,
        proxied: false,
        limits: Default::default(),
    };
    let thread = ConfinedThread::start(move || enforce_files(&policy))
        .unwrap_or_else(|reason| panic!("drover_has_sandbox is set (the build found Landlock ABI 3+, or CI=true runs every test): {reason}"));
    let roots = Roots::new(std::slice::from_ref(&root)).confined_to(thread);
    assert!(roots.is_confined());
    // Inside: as usual.
    roots.write_atomic(&root.join("in.txt"), b"ok").unwrap();
    assert_eq!(roots.read(&root.join("in.txt")).unwrap(), b"ok");
    // Outside every root the path logic would go ahead (beneath `/`); the kernel does not.
    let error = roots
        .write_atomic(&outside.join("planted"), b"x")
        .unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::PermissionDenied, "{error}");
    assert!(!outside.join("planted").exists());
    assert!(roots.read(&denied_root.join("key")).is_err());
    assert_eq!(roots.read(&outside.join("secret")).unwrap(), b"outside");
    // drover's own threads are not restricted.
    std::fs::write(outside.join("drover-may"), "x").unwrap();
}
