//! Read-only mounts around a root command. Landlock confines what a command does to file
//! *contents* and names, not their metadata: a command running as root may still
//! `chmod 4755`, `chown` or `touch` a root-owned file anywhere (it owns it, so no
//! capability is needed). A mount namespace in which every mount is read-only and
//! `nosuid` but the writable paths closes that: the kernel refuses any change there
//! (EROFS), whoever asks. Only root can make one (CAP_SYS_ADMIN, held until the
//! capabilities are dropped); a user cannot change another user's files' metadata anyway,
//! and its own files outside the writable paths keep only what DAC allows it.

use std::path::{Path, PathBuf};

use rustix::mount::{
    MountFlags, MountPropagationFlags, mount_bind_recursive, mount_change, mount_remount,
};

use super::SandboxError;

/// What the launcher made of the command's mounts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mounts {
    /// No mount namespace could be made (not root): the mounts are the machine's.
    Shared,
    /// Every mount read-only but the writable paths, except `kept` mounts the kernel
    /// would not let change (flags locked by an enclosing user namespace, as in a rootless
    /// container), which keep theirs.
    ReadOnly { kept: usize },
}

/// Make every mount of a new mount namespace read-only and `nosuid` but `writable`.
pub(super) fn read_only_but(writable: &[PathBuf]) -> Result<Mounts, SandboxError> {
    // SAFETY: the launcher is single-threaded here, and NEWNS touches no file descriptor
    // table, which is what makes unshare unsafe in general.
    if unsafe { rustix::thread::unshare_unsafe(rustix::thread::UnshareFlags::NEWNS) }.is_err() {
        return Ok(Mounts::Shared);
    }
    let mut locked = 0;
    let failed = |what: String, e: std::io::Error| SandboxError::failed(what, e);
    // Nothing done here reaches the mounts outside the namespace.
    mount_change(
        "/",
        MountPropagationFlags::REC | MountPropagationFlags::PRIVATE,
    )
    .map_err(|e| failed("make the sandbox's mounts private".into(), e.into()))?;
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| failed("read /proc/self/mountinfo".into(), e))?;
    for (point, kept) in mounts(&mountinfo) {
        let flags = MountFlags::BIND | MountFlags::RDONLY | MountFlags::NOSUID | kept;
        match mount_remount(point.as_path(), flags, "") {
            Ok(()) => {}
            // Gone since the table was read, or hidden beneath another mount.
            Err(rustix::io::Errno::NOENT) => {}
            // Locked by an enclosing user namespace: it keeps its flags (Landlock still
            // guards its contents).
            Err(rustix::io::Errno::PERM | rustix::io::Errno::ACCESS) => locked += 1,
            Err(e) => {
                return Err(failed(
                    format!("make the mount {} read-only", point.display()),
                    e.into(),
                ));
            }
        }
    }
    for path in writable {
        if !writable_mount_wanted(path) {
            continue;
        }
        mount_bind_recursive(path.as_path(), path.as_path())
            .and_then(|()| mount_remount(path.as_path(), MountFlags::BIND | MountFlags::NOSUID, ""))
            .map_err(|e| failed(format!("keep {} writable", path.display()), e.into()))?;
    }
    // The working directory was resolved before the writable mounts covered it: resolved
    // again, a command working in the workspace writes through its writable mount.
    let cwd =
        std::env::current_dir().map_err(|e| failed("find the working directory".into(), e))?;
    std::env::set_current_dir(&cwd)
        .map_err(|e| failed(format!("enter {} again", cwd.display()), e))?;
    Ok(Mounts::ReadOnly { kept: locked })
}

/// A writable path gets a writable mount of its own when it is a directory or a regular
/// file; device files (`/dev/null`, terminals) are written through a read-only mount too.
fn writable_mount_wanted(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|meta| meta.is_dir() || meta.is_file())
}

/// Every mount point of `/proc/self/mountinfo`, with the flags to keep when it is
/// remounted read-only (`nodev`, `noexec` and how access times are kept: a remount
/// clears what it does not name).
fn mounts(mountinfo: &str) -> Vec<(PathBuf, MountFlags)> {
    mountinfo
        .lines()
        .filter_map(|line| {
            let mut fields = line.split(' ');
            let point = fields.nth(4)?;
            let options = fields.next()?;
            let mut kept = MountFlags::empty();
            for option in options.split(',') {
                kept |= match option {
                    "nodev" => MountFlags::NODEV,
                    "noexec" => MountFlags::NOEXEC,
                    "noatime" => MountFlags::NOATIME,
                    "nodiratime" => MountFlags::NODIRATIME,
                    "relatime" => MountFlags::RELATIME,
                    _ => MountFlags::empty(),
                };
            }
            Some((PathBuf::from(unescape(point)), kept))
        })
        .collect()
}

/// A mountinfo path with its octal escapes (`\040` for a space) undone.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && let Some(code) = bytes
                .get(i + 1..i + 4)
                .and_then(|octal| std::str::from_utf8(octal).ok())
                .and_then(|octal| u8::from_str_radix(octal, 8).ok())
        {
            out.push(code);
            i += 4;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mount_points_and_the_flags_a_remount_keeps() {
        let info = "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n\
                    23 22 0:5 / /dev rw,nosuid,noexec,relatime shared:2 - devtmpfs udev rw\n\
                    24 22 0:6 / /mnt/a\\040b ro,nodev - tmpfs t rw\n";
        let mounts = mounts(info);
        assert_eq!(mounts[0], (PathBuf::from("/"), MountFlags::RELATIME));
        assert_eq!(
            mounts[1],
            (
                PathBuf::from("/dev"),
                MountFlags::NOEXEC | MountFlags::RELATIME
            )
        );
        assert_eq!(mounts[2], (PathBuf::from("/mnt/a b"), MountFlags::NODEV));
    }
}
