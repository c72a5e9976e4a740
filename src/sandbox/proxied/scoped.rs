//! A proxied command must not reach its own launcher, which answers its `connect()`
//! calls: a command that could stop it, trace it or take its descriptors (the seccomp
//! listener) could answer its own calls and connect anywhere. As an unprivileged user
//! the two run as the same user, in the same Landlock domain, with no PID namespace
//! between them, so two things keep the command away:
//!
//! - the launcher is not dumpable ([`make_launcher_undumpable`]): a process of the same
//!   user without CAP_SYS_PTRACE can neither trace it, read its memory, take its
//!   descriptors (`pidfd_getfd`) nor open them through `/proc/<launcher>/fd`;
//! - the command runs in a Landlock domain nested in the launcher's that scopes signals
//!   and abstract Unix sockets ([`nest_scoped_domain`], ABI 6): it cannot signal
//!   (stop, kill) the launcher, which is outside its domain.

use std::io;

/// `LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL`.
const SCOPES: u64 = 0b11;

/// `struct landlock_ruleset_attr` (ABI 6): no access right handled, scopes only.
#[repr(C)]
struct RulesetAttr {
    handled_access_fs: u64,
    handled_access_net: u64,
    scoped: u64,
}

/// Make the launcher undumpable (see the module docs). Its children are dumpable again
/// once they `exec`, so the launcher can still read their calls' arguments.
pub(crate) fn make_launcher_undumpable() -> io::Result<()> {
    rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)
        .map_err(io::Error::from)
}

/// Put the calling process in a new Landlock domain, nested in its current one, that
/// scopes signals and abstract Unix sockets. Called in the command's process between
/// `fork` and `exec`: raw system calls on stack memory only. Needs Landlock ABI 6; the
/// launcher calls it only where the kernel has it.
pub(crate) fn nest_scoped_domain() -> io::Result<()> {
    let attr = RulesetAttr {
        handled_access_fs: 0,
        handled_access_net: 0,
        scoped: SCOPES,
    };
    // SAFETY: landlock_create_ruleset(2) reads `size` bytes of `attr`, which lives here.
    let ruleset = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            &attr as *const RulesetAttr,
            size_of::<RulesetAttr>(),
            0u32,
        )
    };
    if ruleset < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the ruleset descriptor was just returned; no_new_privs is set (the
    // launcher's Landlock domain set it, and it is inherited).
    let restricted = unsafe { libc::syscall(libc::SYS_landlock_restrict_self, ruleset, 0u32) };
    let error = io::Error::last_os_error();
    // SAFETY: closing the descriptor landlock_create_ruleset returned.
    unsafe { libc::close(ruleset as i32) };
    if restricted != 0 {
        return Err(error);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel's Landlock ABI version (0 without Landlock).
    fn landlock_abi() -> i64 {
        // SAFETY: landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)
        // reads nothing and returns the ABI version.
        let abi = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<u8>(),
                0usize,
                1u32,
            )
        };
        abi.max(0)
    }

    #[test]
    #[cfg_attr(not(drover_has_sandbox), ignore = "needs Landlock (ABI 3+, Linux 6.2)")]
    fn a_nested_scoped_domain_cannot_signal_outside_it() {
        let mut outside = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = rustix::process::Pid::from_child(&outside);
        let (nested, signal) = std::thread::spawn(move || {
            // Landlock needs no_new_privs to restrict a thread without CAP_SYS_ADMIN.
            rustix::thread::set_no_new_privs(true).unwrap();
            let nested = nest_scoped_domain();
            (
                nested.is_ok(),
                rustix::process::test_kill_process(pid).err(),
            )
        })
        .join()
        .unwrap();
        outside.kill().unwrap();
        outside.wait().unwrap();
        // Where the kernel scopes signals the domain must be made and must hold; where
        // it does not, the launcher never asks for one (and the call fails).
        if landlock_abi() >= 6 {
            assert!(
                nested,
                "a scoped domain could not be made on Landlock ABI 6+"
            );
            assert_eq!(signal, Some(rustix::io::Errno::PERM));
        } else {
            assert!(!nested);
        }
    }
}
