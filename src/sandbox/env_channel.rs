//! A command's environment, carried past the launcher. The launcher is drover's own
//! binary, and the dynamic loader, the C library and Rust's runtime act on its
//! environment before its `main` runs (`LD_PRELOAD`, `LD_AUDIT`, `LD_LIBRARY_PATH`,
//! `GLIBC_TUNABLES`, …): a variable meant for the command — an MCP server's `env:` from a
//! repository's `.mcp.json` — would run code in the launcher before it confines anything.
//! No list of such names is complete, so none is kept: the launcher starts with an empty
//! environment, and the command's travels in an anonymous file whose descriptor the
//! launcher inherits (`--env-fd N`). The launcher reads it, closes it, and gives it to
//! the command when it starts it, after the sandbox is in force.
//!
//! The file holds `NAME=VALUE` entries, each ended by a NUL byte, as in
//! `/proc/<pid>/environ`; a later entry of a name wins, as with `Command::env`.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};

use super::SandboxError;

/// The largest environment the launcher reads: far above what `execve` takes.
const MAX_BYTES: u64 = 64 << 20;

/// `vars` written to a fresh anonymous file (close-on-exec, positioned at its start).
pub(super) fn write(vars: &[(OsString, OsString)]) -> std::io::Result<File> {
    let mut file = match rustix::fs::memfd_create("drover-env", rustix::fs::MemfdFlags::CLOEXEC) {
        Ok(fd) => File::from(fd),
        // Kernels before 3.17, or a seccomp profile without memfd: an unlinked file.
        Err(_) => tempfile::tempfile()?,
    };
    file.write_all(&encode(vars))?;
    file.seek(SeekFrom::Start(0))?;
    Ok(file)
}

/// The bytes of `vars` in the channel's format. A name holding `=` or NUL, or a value
/// holding NUL, cannot be in an environment and is left out (as `execve` would cut it).
fn encode(vars: &[(OsString, OsString)]) -> Vec<u8> {
    let mut bytes = Vec::new();
    for (name, value) in vars {
        let (name, value) = (name.as_bytes(), value.as_bytes());
        if name.is_empty() || name.contains(&b'=') || name.contains(&0) || value.contains(&0) {
            continue;
        }
        bytes.extend_from_slice(name);
        bytes.push(b'=');
        bytes.extend_from_slice(value);
        bytes.push(0);
    }
    bytes
}

/// The variables in `bytes`, in order.
fn decode(bytes: &[u8]) -> Vec<(OsString, OsString)> {
    bytes
        .split(|b| *b == 0)
        .filter_map(|entry| {
            let at = entry.iter().position(|b| *b == b'=')?;
            (at > 0).then(|| {
                (
                    OsStr::from_bytes(&entry[..at]).to_os_string(),
                    OsString::from_vec(entry[at + 1..].to_vec()),
                )
            })
        })
        .collect()
}

/// Let the child about to be executed inherit `fd` (it stays close-on-exec in drover,
/// so no other command started meanwhile gets it). For `pre_exec`: one system call,
/// no allocation.
pub(super) fn inherit_in_child(fd: RawFd) -> std::io::Result<()> {
    // SAFETY: fcntl(F_SETFD) on a descriptor number changes only that descriptor's
    // flags in this (forked) process's table.
    if unsafe { libc::fcntl(fd, libc::F_SETFD, 0) } == -1 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// In the launcher: read the environment from descriptor `fd`, which drover passed and
/// which nothing else in the launcher uses, and close it so the command does not
/// inherit it.
pub(super) fn read(fd: RawFd) -> Result<Vec<(OsString, OsString)>, SandboxError> {
    let failed = |e: std::io::Error| SandboxError::failed("read the command's environment", e);
    if fd <= 2 {
        return Err(failed(std::io::Error::other(format!(
            "descriptor {fd} is a standard stream, not an environment"
        ))));
    }
    // SAFETY: drover opened `fd` for the launcher and the launcher opens nothing before
    // this; fstat proves it is open and a file before it is owned and read.
    let stat = rustix::fs::fstat(unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) })
        .map_err(|e| failed(e.into()))?;
    if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::RegularFile {
        return Err(failed(std::io::Error::other(format!(
            "descriptor {fd} is not the environment file"
        ))));
    }
    // SAFETY: as above: open, and owned by nothing else in this process.
    let mut file = File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    let mut bytes = Vec::new();
    file.seek(SeekFrom::Start(0))
        .and_then(|_| (&mut file).take(MAX_BYTES).read_to_end(&mut bytes))
        .map_err(failed)?;
    Ok(decode(&bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect()
    }

    #[test]
    fn an_environment_goes_through_the_file_unchanged() {
        let sent = vars(&[
            ("PATH", "/bin"),
            ("EMPTY", ""),
            ("EQ", "a=b"),
            ("PATH", "/x"),
        ]);
        let file = write(&sent).unwrap();
        let fd = std::os::fd::IntoRawFd::into_raw_fd(file);
        let before = identity(fd).expect("the file is open before it is read");
        assert_eq!(read(fd).unwrap(), sent);
        // read closed it: the command does not inherit it. A test running beside this one
        // may have opened another file under the same number since, so the number either
        // names nothing now or another file.
        assert_ne!(identity(fd), Some(before));
    }

    /// The device and inode of the file `fd` names, if it names one.
    fn identity(fd: i32) -> Option<(u64, u64)> {
        // SAFETY: fstat writes only into the zeroed struct it is given.
        let mut stat: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: fstat only asks about the descriptor number; a closed one is EBADF.
        let found = unsafe { libc::fstat(fd, &mut stat) } == 0;
        found.then_some((stat.st_dev, stat.st_ino))
    }

    #[test]
    fn what_no_environment_can_hold_is_left_out() {
        let sent = vec![
            (OsString::from("A=B"), OsString::from("1")),
            (OsString::from(""), OsString::from("2")),
            (OsString::from("NUL"), OsString::from_vec(b"x\0y".to_vec())),
            (OsString::from("OK"), OsString::from_vec(vec![0xff, b'='])),
        ];
        assert_eq!(
            decode(&encode(&sent)),
            vec![(OsString::from("OK"), OsString::from_vec(vec![0xff, b'=']))]
        );
    }

    #[test]
    fn standard_streams_and_pipes_are_not_read_as_an_environment() {
        assert!(read(0).is_err());
        let (reader, _writer) = std::io::pipe().unwrap();
        let error = read(std::os::fd::IntoRawFd::into_raw_fd(reader)).unwrap_err();
        assert!(
            error.to_string().contains("not the environment file"),
            "{error}"
        );
    }
}
