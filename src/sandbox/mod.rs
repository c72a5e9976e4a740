//! The OS sandbox around the commands the agent runs (Bash, foreground and background).
//!
//! Rules judge a command line before it runs; they cannot see what the program does
//! once it runs (a script opening `~/.ssh/id_rsa`). So every command, and everything it
//! starts, runs under Landlock: writes only beneath [`SandboxPolicy::writable`], reads
//! denied beneath [`SandboxPolicy::read_denied`], and unless [`SandboxPolicy::network`]
//! no socket but Unix ones (a seccomp filter; Landlock's TCP rules and, as root, a
//! private network namespace besides). A command run as root keeps only the
//! capabilities ordinary builds need (see [`capabilities`]).
//!
//! drover's own process is multi-threaded, and Landlock restricts one thread: so the
//! policy is applied by a fresh single-threaded drover (`drover __sandbox-exec`, see
//! [`launcher`]) that then `exec`s the command. When the kernel cannot enforce the
//! policy, the launcher refuses to run the command at all.
//!
//! What Landlock cannot express: it grants access to file hierarchies, so a read denial
//! can only name a fixed path. Deny rules with glob characters (`Read(**/*.pem)`) or
//! relative to the workspace (`Read(.env)`) stay enforced by the permission rules only,
//! for drover's own tools; a program run by Bash can still read those files.
//!
//! This module knows nothing of permission rules: the policy turns them into plain
//! facts (writable paths, denied paths, network) and the sandbox enforces those.

mod capabilities;
mod enforce;
pub(crate) mod env;
mod env_channel;
mod error;
pub(crate) mod exec;
pub(crate) mod launch_network;
pub(crate) mod launcher;
pub(crate) mod limits;
pub(crate) mod own_environ;
pub(crate) mod proxied;
pub(crate) mod proxy_env;
mod read_grants;
pub(super) mod read_only_mounts;
mod socket_filter;
pub(crate) mod supervise;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub(crate) use enforce::enforce_files;
pub(crate) use error::SandboxError;
pub(crate) use launcher::Launcher;
pub(crate) use limits::ResourceLimits;

/// Device files every program expects to open for writing (`> /dev/null`, terminals).
/// They are writable as files: nothing else under `/dev` is. The terminal devices get no
/// ioctl right, and `/dev/tty` is left out: commands have no controlling terminal.
pub(crate) const WRITABLE_DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/ptmx",
    "/dev/pts",
];

/// What a sandboxed command may do. Serialized as JSON on the launcher's command line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SandboxPolicy {
    /// Files and directories (with everything beneath) the command may write, create
    /// and delete in. Everything else is read-only.
    pub writable: Vec<PathBuf>,
    /// Files and directories (with everything beneath) the command may not read.
    pub read_denied: Vec<PathBuf>,
    /// Let the command use the whole network.
    pub network: bool,
    /// Let the command reach drover's egress proxy, and no other host (the network
    /// under a per-host policy, see [`proxied`]); the proxy's port is given per launch.
    #[serde(default)]
    pub proxied: bool,
    /// Resource limits applied before the command starts.
    #[serde(default)]
    pub limits: ResourceLimits,
}

/// The inputs of a task's sandbox policy.
pub(crate) struct TaskSandbox<'a> {
    /// The workspace the task works in (canonical).
    pub workspace: &'a Path,
    /// `permissions.additional_directories` (canonical).
    pub additional: &'a [PathBuf],
    /// The task's private temporary directory (`TMPDIR`).
    pub tmpdir: &'a Path,
    /// Absolute paths the policy wants unreadable (from Read deny rules that name a
    /// fixed path); those inside a writable directory are dropped (see below).
    pub read_denials: &'a [PathBuf],
    /// `sandbox.network`.
    pub network: bool,
    /// `sandbox.limits` over the defaults.
    pub limits: ResourceLimits,
}

impl SandboxPolicy {
    /// The policy of one task: writes in the workspace, the additional directories, the
    /// private temporary directory and the usual device files; reads denied at each of
    /// `read_denials` that is not inside a writable directory (a command could move a
    /// file out of a writable directory and read it there).
    pub(crate) fn for_task(task: &TaskSandbox<'_>) -> Self {
        let mut writable = vec![task.workspace.to_path_buf()];
        writable.extend(task.additional.iter().cloned());
        writable.push(canonical_prefix(task.tmpdir));
        writable.extend(WRITABLE_DEVICES.iter().map(PathBuf::from));
        let mut read_denied: Vec<PathBuf> = Vec::new();
        for path in task.read_denials {
            let path = canonical_prefix(path);
            let inside_writable = writable.iter().any(|dir| path.starts_with(dir));
            if path != Path::new("/") && !inside_writable && !read_denied.contains(&path) {
                read_denied.push(path);
            }
        }
        SandboxPolicy {
            writable,
            read_denied,
            network: task.network,
            proxied: false,
            limits: task.limits,
        }
    }

    /// What the `run_start` event records about the sandbox.
    pub(crate) fn summary(&self) -> serde_json::Value {
        serde_json::json!({
            "enabled": true,
            "network": self.network,
            "proxied": self.proxied,
            "writable": self.writable,
            "read_denied": self.read_denied,
            "limits": self.limits,
        })
    }
}

/// `path` with its longest existing prefix canonicalized (symlinks resolved), the rest
/// appended as written: a denial of a file that does not exist yet still lands in the
/// right directory.
pub(crate) fn canonical_prefix(path: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut current = path.to_path_buf();
    loop {
        if let Ok(real) = current.canonicalize() {
            let mut out = real;
            out.extend(rest.iter().rev());
            return out;
        }
        match (current.file_name(), current.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name.to_os_string());
                current = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}

#[cfg(test)]
mod tests {
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
}
