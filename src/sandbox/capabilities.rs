//! The capabilities a sandboxed command keeps. drover often runs as root (containers,
//! self-hosted runners), and a command run as root holds every capability, which reaches
//! past Landlock and the socket filter: CAP_SYS_RAWIO reads kernel memory (`/proc/kcore`,
//! `/dev/mem`, drover's heap with the model key among it), CAP_SYS_MODULE loads kernel
//! code, CAP_LINUX_IMMUTABLE makes a planted file undeletable, CAP_SYSLOG reads the
//! kernel log, CAP_MKNOD makes a node for the raw disk, CAP_DAC_READ_SEARCH opens files
//! by handle, CAP_SYS_ADMIN, CAP_SYS_PTRACE, CAP_NET_ADMIN, CAP_BPF… So the launcher
//! keeps the short list below, which ordinary build tools need as root, and drops every
//! other capability — a list of what stays, not of what goes, so a capability a newer
//! kernel adds is dropped too.
//!
//! Dropped from the bounding set, so that exec as uid 0 cannot regain them, and from the
//! effective, permitted and inheritable sets; the ambient set is cleared. Dropping from
//! the bounding set needs CAP_SETPCAP: a process without it (drover not run as root)
//! holds no capability to drop, and `no_new_privs`, which Landlock sets, keeps exec of
//! a setuid or file-capability program from granting any.

use rustix::io::Errno;
use rustix::thread::{CapabilitySet, CapabilitySets};

use super::SandboxError;

/// What a sandboxed command may keep, and why each is harmless there:
///
/// - CHOWN, DAC_OVERRIDE, FOWNER, FSETID: root's ordinary file handling — a workspace
///   checked out by another user (`chmod +x`, writing its files), `tar` and package
///   managers restoring ownership and modes. Landlock still decides which files may be
///   opened or written (see docs/sandbox.md for the metadata it cannot see).
/// - KILL: signals to processes of other users — the command's own children after they
///   changed user, and the launcher's kill of every process the command left. Outside
///   processes are out of reach: Landlock scopes signals (ABI 6), and as root the
///   command runs in its own PID namespace.
/// - SETUID, SETGID: dropping to another user (`su builder -c make`, npm and apt's own
///   unprivileged users); the new user is as confined.
/// - SETPCAP: dropping capabilities further (a nested sandbox, `capsh --drop`); it can
///   only add to the inheritable set what the bounding set still holds.
/// - NET_BIND_SERVICE: a test server on port 80; only where the network is allowed.
/// - SYS_CHROOT: chroot builds (debootstrap, mock); Landlock's rules follow the files,
///   not their names, and `no_new_privs` keeps setuid programs in the chroot inert.
/// - AUDIT_WRITE: `su` and `sudo` log through it and fail without it; it only adds
///   records, marked with the sender.
///
/// Left out of Docker's default set: SETFCAP (file capabilities are extended
/// attributes, which Landlock does not control: `setcap` on `/usr/bin/python3` would
/// plant a privilege for whoever runs it later, outside the sandbox), MKNOD (a node for
/// the raw disk reads every file, denied ones included) and NET_RAW (raw packets where
/// the network is allowed).
pub(crate) const KEPT: CapabilitySet = CapabilitySet::CHOWN
    .union(CapabilitySet::DAC_OVERRIDE)
    .union(CapabilitySet::FOWNER)
    .union(CapabilitySet::FSETID)
    .union(CapabilitySet::KILL)
    .union(CapabilitySet::SETGID)
    .union(CapabilitySet::SETUID)
    .union(CapabilitySet::SETPCAP)
    .union(CapabilitySet::NET_BIND_SERVICE)
    .union(CapabilitySet::SYS_CHROOT)
    .union(CapabilitySet::AUDIT_WRITE);

/// The capability numbers a kernel can have: the sets are 64 bits wide.
const MAX_CAPABILITIES: u32 = 64;

/// What [`drop_capabilities`] did, for the probe to report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Dropped {
    /// Every capability but [`KEPT`] is gone from every set, the bounding set included
    /// (drover ran as root, or with CAP_SETPCAP).
    ToKept,
    /// The process could not change its bounding set and holds no capability outside
    /// [`KEPT`]; `no_new_privs` keeps exec from granting any (drover ran as a user).
    NoneHeld,
}

/// How the probe line says it: `capabilities dropped but CHOWN, …` or
/// `no capabilities held, no_new_privs`.
impl std::fmt::Display for Dropped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Dropped::ToKept => {
                let kept: Vec<&str> = KEPT.iter_names().map(|(name, _)| name).collect();
                write!(f, "capabilities dropped but {}", kept.join(", "))
            }
            Dropped::NoneHeld => f.write_str("no capabilities held, no_new_privs"),
        }
    }
}

/// Drop every capability but [`KEPT`] from this process, for good, or say why not. Call
/// in the launcher after the sandbox is enforced (Landlock, the network namespace and
/// the socket filter need capabilities root has) and before the command starts. On
/// error the process may hold fewer capabilities than before and must not run the
/// command.
pub(super) fn drop_capabilities() -> Result<Dropped, SandboxError> {
    let before = current()?;
    let can_bound = before.permitted.contains(CapabilitySet::SETPCAP);
    if can_bound {
        if !before.effective.contains(CapabilitySet::SETPCAP) {
            set(CapabilitySets {
                effective: before.effective | CapabilitySet::SETPCAP,
                ..before
            })?;
        }
        drop_from_bounding_set()?;
    }
    set(CapabilitySets {
        effective: before.effective & KEPT,
        permitted: before.permitted & KEPT,
        inheritable: before.inheritable & KEPT,
    })?;
    rustix::thread::clear_ambient_capability_set()
        .map_err(|e| SandboxError::failed("clear the ambient capabilities", e))?;
    verify(can_bound)
}

/// Check that the drop holds: no set holds more than [`KEPT`], nor the bounding set when
/// it was dropped from; else `no_new_privs` must be set, or exec could grant more.
fn verify(bounded: bool) -> Result<Dropped, SandboxError> {
    let after = current()?;
    let extra = (after.effective | after.permitted | after.inheritable) - KEPT;
    if !extra.is_empty() {
        return Err(still_held(extra));
    }
    if bounded {
        let extra = bounding_set()? - KEPT;
        if !extra.is_empty() {
            return Err(still_held(extra));
        }
        return Ok(Dropped::ToKept);
    }
    match rustix::thread::no_new_privs() {
        Ok(true) => Ok(Dropped::NoneHeld),
        Ok(false) => Err(SandboxError::Unenforceable(
            "no_new_privs is not set: running a setuid program could grant capabilities"
                .to_string(),
        )),
        Err(e) => Err(SandboxError::failed("read no_new_privs", e)),
    }
}

fn still_held(extra: CapabilitySet) -> SandboxError {
    SandboxError::Unenforceable(format!(
        "capabilities {:#x} are still held after dropping them",
        extra.bits()
    ))
}

/// Remove every capability but [`KEPT`] from the bounding set: every number the kernel
/// knows, not only those rustix names.
fn drop_from_bounding_set() -> Result<(), SandboxError> {
    for number in 0..MAX_CAPABILITIES {
        let capability = CapabilitySet::from_bits_retain(1 << number);
        if KEPT.contains(capability) {
            continue;
        }
        match rustix::thread::remove_capability_from_bounding_set(capability) {
            Ok(()) => {}
            // Past the kernel's last capability.
            Err(Errno::INVAL) => return Ok(()),
            Err(e) => {
                return Err(SandboxError::failed(
                    format!("drop capability {number} from the bounding set"),
                    e,
                ));
            }
        }
    }
    Ok(())
}

/// The bounding set, read capability by capability up to the kernel's last one.
fn bounding_set() -> Result<CapabilitySet, SandboxError> {
    let mut set = CapabilitySet::empty();
    for number in 0..MAX_CAPABILITIES {
        let capability = CapabilitySet::from_bits_retain(1 << number);
        match rustix::thread::capability_is_in_bounding_set(capability) {
            Ok(true) => set |= capability,
            Ok(false) => {}
            Err(Errno::INVAL) => break,
            Err(e) => return Err(SandboxError::failed("read the bounding set", e)),
        }
    }
    Ok(set)
}

fn current() -> Result<CapabilitySets, SandboxError> {
    rustix::thread::capabilities(None)
        .map_err(|e| SandboxError::failed("read the launcher's capabilities", e))
}

fn set(sets: CapabilitySets) -> Result<(), SandboxError> {
    rustix::thread::set_capabilities(None, sets)
        .map_err(|e| SandboxError::failed("drop the launcher's capabilities", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The drop runs on a thread of its own: capabilities are per thread, so the test
    /// process keeps its own.
    fn on_dropped_thread() -> (Result<Dropped, String>, CapabilitySets, CapabilitySet, bool) {
        std::thread::spawn(|| {
            let dropped = drop_capabilities().map_err(|e| e.to_string());
            let sets = rustix::thread::capabilities(None).unwrap();
            let bounding = bounding_set().unwrap();
            let nnp = rustix::thread::no_new_privs().unwrap();
            (dropped, sets, bounding, nnp)
        })
        .join()
        .unwrap()
    }

    #[test]
    fn what_stays_is_the_build_set_and_nothing_that_reaches_past_the_sandbox() {
        for reaching in [
            CapabilitySet::SYS_RAWIO,
            CapabilitySet::SYS_MODULE,
            CapabilitySet::SYS_ADMIN,
            CapabilitySet::SYS_PTRACE,
            CapabilitySet::LINUX_IMMUTABLE,
            CapabilitySet::DAC_READ_SEARCH,
            CapabilitySet::MKNOD,
            CapabilitySet::SETFCAP,
            CapabilitySet::NET_ADMIN,
            CapabilitySet::NET_RAW,
            CapabilitySet::SYSLOG,
            CapabilitySet::BPF,
            CapabilitySet::PERFMON,
            CapabilitySet::SYS_TIME,
            CapabilitySet::SYS_BOOT,
            CapabilitySet::MAC_ADMIN,
            CapabilitySet::MAC_OVERRIDE,
            CapabilitySet::AUDIT_CONTROL,
            CapabilitySet::AUDIT_READ,
        ] {
            assert!(!KEPT.contains(reaching), "{reaching:?} is kept");
        }
        assert_eq!(KEPT.bits().count_ones(), 11);
    }

    #[test]
    fn only_the_kept_capabilities_remain_in_every_set() {
        let root = rustix::thread::capabilities(None)
            .unwrap()
            .permitted
            .contains(CapabilitySet::SETPCAP);
        let (dropped, sets, bounding, nnp) = on_dropped_thread();
        if root {
            assert_eq!(dropped, Ok(Dropped::ToKept));
            assert_eq!(bounding, KEPT & bounding_set().unwrap());
            assert_eq!(sets.permitted, KEPT & sets.permitted);
            assert!(sets.effective.contains(CapabilitySet::CHOWN));
        } else if nnp {
            assert_eq!(dropped, Ok(Dropped::NoneHeld));
        } else {
            // A user without no_new_privs: the launcher would refuse to run the command
            // (Landlock sets it first there).
            assert!(dropped.is_err());
        }
        for set in [sets.effective, sets.permitted, sets.inheritable] {
            assert!((set - KEPT).is_empty(), "{set:?}");
        }
    }
}
