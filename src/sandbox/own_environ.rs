//! drover's own environment, hidden from the processes it runs. `/proc/<pid>/environ`
//! shows the environment block a process was started with, and Landlock does not stop a
//! sandboxed command from reading another process's (it only scopes `ptrace` attach), so
//! a command could read every secret drover was given (`cat /proc/$DROVER/environ`).
//!
//! At start, before any thread exists, drover copies every variable to memory the C
//! library owns (re-setting it), then overwrites the original block with zeros through
//! `/proc/self/mem`: drover keeps its environment, `/proc/<pid>/environ` shows nothing.
//! It also marks itself non-dumpable, which makes its `/proc` files owned by root and
//! unreadable to other users' processes (and to non-root processes of its own user).

use super::SandboxError;
use std::io::{Read, Seek, SeekFrom, Write};

/// Hide the environment block; Err says what could not be done (drover then still runs:
/// redaction and the sandbox's scrubbed environment remain).
///
/// # Safety
/// Must be called before any other thread exists: it changes the process environment.
pub unsafe fn hide_own_environment() -> Result<(), SandboxError> {
    let vars: Vec<_> = std::env::vars_os().collect();
    for (name, value) in &vars {
        let bytes = name.as_encoded_bytes();
        if bytes.is_empty() || bytes.contains(&b'=') || bytes.contains(&0) {
            continue;
        }
        if value.as_encoded_bytes().contains(&0) {
            continue;
        }
        // SAFETY: the caller guarantees no other thread exists that could read the
        // environment concurrently.
        unsafe { std::env::set_var(name, value) };
    }
    let (start, end) = environ_bounds()?;
    let zeros = vec![0u8; end.saturating_sub(start) as usize];
    let mut mem = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/proc/self/mem")
        .map_err(|e| SandboxError::failed("open /proc/self/mem", e))?;
    mem.seek(SeekFrom::Start(start))
        .and_then(|_| mem.write_all(&zeros))
        .map_err(|e| SandboxError::failed("overwrite the environment block", e))?;
    // Read back: a kernel that refuses writes to /proc/self/mem must not go unnoticed.
    let mut check = vec![1u8; zeros.len()];
    mem.seek(SeekFrom::Start(start))
        .and_then(|_| mem.read_exact(&mut check))
        .map_err(|e| SandboxError::failed("read back the environment block", e))?;
    if check.iter().any(|b| *b != 0) {
        return Err(SandboxError::Unenforceable(
            "the environment block could not be overwritten".to_string(),
        ));
    }
    rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)
        .map_err(|e| SandboxError::failed("mark drover non-dumpable", e))?;
    Ok(())
}

/// `env_start` and `env_end` from `/proc/self/stat` (fields 50 and 51).
fn environ_bounds() -> Result<(u64, u64), SandboxError> {
    let stat = std::fs::read_to_string("/proc/self/stat")
        .map_err(|e| SandboxError::failed("read /proc/self/stat", e))?;
    let after_name = stat
        .rfind(')')
        .map(|i| &stat[i + 1..])
        .ok_or_else(|| SandboxError::Unenforceable("unexpected /proc/self/stat".to_string()))?;
    // Field 3 (state) is the first after the name; fields 50 and 51 follow.
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let field = |n: usize| -> Result<u64, SandboxError> {
        fields
            .get(n - 3)
            .and_then(|f| f.parse().ok())
            .ok_or_else(|| SandboxError::Unenforceable(format!("no field {n} in /proc/self/stat")))
    };
    let (start, end) = (field(50)?, field(51)?);
    if end < start || end - start > 64 << 20 {
        return Err(SandboxError::Unenforceable(
            "implausible environment bounds in /proc/self/stat".to_string(),
        ));
    }
    Ok((start, end))
}
