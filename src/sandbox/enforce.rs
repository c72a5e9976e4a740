//! Applying a [`SandboxPolicy`] to the current process with Landlock, and with the
//! network off a socket filter (and a private network namespace when it can be had).
//! Only ever called in the launcher, a fresh single-threaded process that starts the
//! command right after.

use super::SandboxError;
use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, LandlockStatus, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope, path_beneath_rules,
};

use super::SandboxPolicy;
use super::read_grants::read_grants;
use super::socket_filter::{self, Sockets};

/// The newest ABI this drover knows: rights of newer kernels are handled when present.
const BEST_ABI: ABI = ABI::V9;
/// Below this ABI a write-confinement would have holes (V3 adds truncation).
const MIN_FS_ABI: ABI = ABI::V3;
/// The ABI that scopes signals and abstract Unix sockets to the sandbox.
const SCOPE_ABI: ABI = ABI::V6;

/// Terminal devices: writable as files, but never with ioctl (no `TIOCSTI` keystrokes
/// pushed into a terminal, no new pseudo-terminal).
const TERMINALS: &[&str] = &["/dev/tty", "/dev/ptmx", "/dev/pts"];

/// What was enforced, for the probe to report.
#[derive(Debug)]
pub(super) struct Enforced {
    pub abi: String,
    pub private_network: bool,
    /// Which sockets can be created, when a filter says (the network is not whole).
    pub socket_filter: Option<Sockets>,
    /// Signals and abstract Unix sockets cannot reach outside the sandbox (ABI 6+).
    pub scoped: bool,
    /// Every mount is read-only and `nosuid` but the writable paths (root only).
    pub mounts: super::read_only_mounts::Mounts,
}

/// Restrict the current thread (and what it `exec`s) to `policy`, or say why not. On
/// error the process may be partly restricted and must not run the command.
/// `proxy_port`: where drover's proxy listens, for a proxied policy.
/// `report`: the channel to drover, over which the proxy's listener is handed when the
/// proxied command gets a network namespace (as root).
pub(super) fn enforce(
    policy: &SandboxPolicy,
    proxy_port: Option<u16>,
    report: Option<&std::fs::File>,
) -> Result<Enforced, SandboxError> {
    // Before Landlock, which forbids changing mounts once in force.
    let mounts = super::read_only_mounts::read_only_but(&policy.writable)?;
    let private_network = match (policy.network, proxy_port, report) {
        (true, _, _) => false,
        (false, Some(port), Some(report)) => super::proxied::namespace::enter(port, report)?,
        // The probe of a proxied policy: whether a namespace could be made.
        (false, None, _) if policy.proxied => private_network_namespace(),
        (false, _, _) => !policy.proxied && private_network_namespace(),
    };
    let read = AccessFs::from_read(BEST_ABI);
    let write = AccessFs::from_write(BEST_ABI);
    let mut ruleset = Ruleset::default()
        .handle_access(AccessFs::from_all(BEST_ABI))
        .and_then(|r| r.scope(Scope::from_all(BEST_ABI)))
        .map_err(|e| SandboxError::failed("set up the Landlock ruleset", e))?;
    if !policy.network {
        let tcp: BitFlags<AccessNet> = AccessNet::BindTcp | AccessNet::ConnectTcp;
        ruleset = ruleset
            .handle_access(tcp)
            .map_err(|e| SandboxError::failed("set up the Landlock network rules", e))?;
    }
    let mut created = ruleset
        .create()
        .map_err(|e| SandboxError::failed("create the Landlock ruleset", e))?;
    // Listing directories is allowed everywhere; reading and executing files everywhere
    // but beneath the denied paths.
    let (terminals, writable): (Vec<_>, Vec<_>) = policy
        .writable
        .iter()
        .partition(|path| TERMINALS.iter().any(|t| path.starts_with(t)));
    created = created
        .add_rules(path_beneath_rules(["/"], AccessFs::ReadDir))
        .and_then(|r| r.add_rules(path_beneath_rules(read_grants(&policy.read_denied), read)))
        .and_then(|r| r.add_rules(path_beneath_rules(&writable, read | write)))
        .and_then(|r| {
            r.add_rules(path_beneath_rules(
                &terminals,
                (read | write) & !AccessFs::IoctlDev,
            ))
        })
        .map_err(|e| SandboxError::failed("add the Landlock rules", e))?;
    if let (false, Some(port)) = (policy.network, proxy_port) {
        // Connecting to the proxy's port only, binding no port at all.
        created = created
            .add_rule(landlock::NetPort::new(port, AccessNet::ConnectTcp))
            .map_err(|e| SandboxError::failed("add the Landlock rule for the proxy", e))?;
    }
    let status = created
        .restrict_self()
        .map_err(|e| SandboxError::failed("apply the Landlock ruleset", e))?;
    let abi = enforced_abi(&status)?;
    // The filter cuts every socket but Unix ones (and, proxied, TCP ones), root or not,
    // whatever the Landlock ABI; Landlock's TCP rules (ABI 4+) and the namespace (root)
    // stay as further layers.
    let socket_filter = match (policy.network, policy.proxied) {
        (true, _) => None,
        (false, true) => Some(Sockets::UnixAndTcp),
        (false, false) => Some(Sockets::UnixOnly),
    };
    if let Some(sockets) = socket_filter {
        socket_filter::install(sockets)?;
    }
    Ok(Enforced {
        abi: abi.to_string(),
        private_network,
        socket_filter,
        scoped: abi >= SCOPE_ABI,
        mounts,
    })
}

/// The ABI Landlock enforced `status` with, or why it cannot confine a command.
fn enforced_abi(status: &landlock::RestrictionStatus) -> Result<ABI, SandboxError> {
    let abi = match status.landlock {
        LandlockStatus::Available { effective_abi, .. } => effective_abi,
        LandlockStatus::NotEnabled => {
            return Err(SandboxError::Unenforceable(
                "Landlock is not enabled in this kernel (boot with lsm=…,landlock)".to_string(),
            ));
        }
        LandlockStatus::NotImplemented => {
            return Err(SandboxError::Unenforceable("this kernel has no Landlock support (Linux 5.13+ built with CONFIG_SECURITY_LANDLOCK)".to_string()));
        }
    };
    if status.ruleset == RulesetStatus::NotEnforced || !status.no_new_privs {
        return Err(SandboxError::Unenforceable(
            "the Landlock ruleset could not be enforced".to_string(),
        ));
    }
    if abi < MIN_FS_ABI {
        return Err(SandboxError::Unenforceable(format!(
            "the kernel's Landlock ABI {abi} is too old to confine writes (ABI {MIN_FS_ABI}, Linux 6.2, is needed)"
        )));
    }
    Ok(abi)
}

/// Restrict the calling thread's filesystem access to what `policy` grants a command
/// (reads everywhere but the denied paths, writes only beneath the writable ones), and
/// nothing else: no network rules, no scopes. For drover's confined file thread (see
/// `workspace::confined`); the thread must be dedicated to it, as the restriction cannot
/// be lifted.
pub(crate) fn enforce_files(policy: &SandboxPolicy) -> Result<(), SandboxError> {
    let read = AccessFs::from_read(BEST_ABI);
    let write = AccessFs::from_write(BEST_ABI);
    let status = Ruleset::default()
        .handle_access(AccessFs::from_all(BEST_ABI))
        .and_then(|r| r.create())
        .and_then(|r| r.add_rules(path_beneath_rules(["/"], AccessFs::ReadDir)))
        .and_then(|r| r.add_rules(path_beneath_rules(read_grants(&policy.read_denied), read)))
        .and_then(|r| r.add_rules(path_beneath_rules(&policy.writable, read | write)))
        .and_then(|r| r.restrict_self())
        .map_err(|e| SandboxError::failed("confine drover's file tools with Landlock", e))?;
    let abi = match status.landlock {
        LandlockStatus::Available { effective_abi, .. } => effective_abi,
        LandlockStatus::NotEnabled | LandlockStatus::NotImplemented => {
            return Err(SandboxError::Unenforceable(
                "Landlock is not available to confine drover's file tools".to_string(),
            ));
        }
    };
    if status.ruleset == RulesetStatus::NotEnforced || abi < MIN_FS_ABI {
        return Err(SandboxError::Unenforceable(format!(
            "drover's file tools cannot be confined: the kernel's Landlock ABI {abi} is too old (ABI {MIN_FS_ABI}, Linux 6.2, is needed)"
        )));
    }
    Ok(())
}

/// Move into a new, empty network namespace (no interface up, not even loopback): cuts
/// abstract Unix sockets too. Needs CAP_SYS_ADMIN, so it usually works only when drover
/// runs as root; the socket filter cuts the network without it.
fn private_network_namespace() -> bool {
    // SAFETY: the launcher is single-threaded and NEWNET does not touch file descriptor
    // tables, which is what makes unshare unsafe in general.
    unsafe { rustix::thread::unshare_unsafe(rustix::thread::UnshareFlags::NEWNET) }.is_ok()
}
