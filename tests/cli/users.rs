//! Running drover as another user: the tests that must hold for an unprivileged runner
//! (every GitHub-hosted one, which gets no private network namespace and keeps no
//! capability) run drover as nobody through `setpriv` when the test itself is root.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The unprivileged user the tests run drover as when they run as root.
pub(crate) const NOBODY: u32 = 65534;

/// Who drover runs as in a test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum User {
    /// The test's own user (root in CI).
    Own,
    /// nobody (65534), through `setpriv`, when the test runs as root.
    Nobody,
}

/// An unprivileged user: nobody when the test is root, else the test's own user. (Root
/// is covered by the `_as_root` tests, which need the test to be root.)
pub(crate) fn unprivileged() -> User {
    if rustix::process::geteuid().is_root() {
        User::Nobody
    } else {
        User::Own
    }
}

/// The drover binary where `user` can run it: where it was built, or hard-linked (else
/// copied) into `dir` when a directory on the way is closed to nobody.
pub(crate) fn binary_for(user: User, dir: &Path) -> PathBuf {
    let built = PathBuf::from(env!("CARGO_BIN_EXE_drover"));
    if user == User::Own || runs_as_nobody(&["test", "-x"], &built) {
        return built;
    }
    let linked = dir.join("drover");
    if std::fs::hard_link(&built, &linked).is_err() {
        std::fs::copy(&built, &linked).unwrap();
    }
    assert!(
        runs_as_nobody(&["test", "-x"], &linked),
        "nobody cannot run {}",
        linked.display()
    );
    linked
}

fn runs_as_nobody(command: &[&str], path: &Path) -> bool {
    setpriv()
        .args(command)
        .arg(path)
        .status()
        .is_ok_and(|status| status.success())
}

/// `setpriv` ready to run a program as nobody, with no supplementary group.
pub(crate) fn setpriv() -> Command {
    let mut command = Command::new("setpriv");
    command.args([
        &format!("--reuid={NOBODY}"),
        &format!("--regid={NOBODY}"),
        "--clear-groups",
        "--",
    ]);
    command
}

/// Hand `dir` and everything in it to `user`.
pub(crate) fn give(dir: &Path, user: User) {
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    if user == User::Nobody {
        for entry in walkdir::WalkDir::new(dir) {
            let entry = entry.unwrap();
            std::os::unix::fs::lchown(entry.path(), Some(NOBODY), Some(NOBODY)).unwrap();
        }
    }
}

/// The command that runs drover as `user`, `dir` handed to the user first (the binary
/// linked into it if nobody cannot reach the built one).
pub(crate) fn drover_as(user: User, dir: &Path) -> Command {
    let exe = binary_for(user, dir);
    give(dir, user);
    match user {
        User::Own => Command::new(&exe),
        User::Nobody => {
            let mut command = setpriv();
            command.arg(&exe);
            command
        }
    }
}
