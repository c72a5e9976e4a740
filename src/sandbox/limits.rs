//! Resource limits (rlimits) applied by the launcher before the command starts, so a fork
//! bomb, a disk filler or a runaway allocation ends as a failed call, not a dead runner.

use super::SandboxError;
use rustix::process::{Resource, Rlimit, setrlimit};
use serde::{Deserialize, Serialize};

use crate::spec::LimitsSpec;

/// Default: processes of the user. The kernel does not apply RLIMIT_NPROC to root; a
/// PID namespace then still makes the whole tree die with the command.
pub(crate) const DEFAULT_PROCESSES: u64 = 4096;
/// Default: the largest file a command may write.
pub(crate) const DEFAULT_FILE_SIZE: u64 = 8 << 30;
/// Default: virtual memory per process. Generous, since JVMs and V8 reserve far more
/// address space than they use; it stops a runaway allocation, not a big build.
pub(crate) const DEFAULT_ADDRESS_SPACE: u64 = 64 << 30;
/// Default: open files per process.
pub(crate) const DEFAULT_OPEN_FILES: u64 = 8192;

/// The limits in force; None is unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ResourceLimits {
    pub processes: Option<u64>,
    pub file_size: Option<u64>,
    pub address_space: Option<u64>,
    pub open_files: Option<u64>,
}

impl Default for ResourceLimits {
    fn default() -> Self {
        ResourceLimits {
            processes: Some(DEFAULT_PROCESSES),
            file_size: Some(DEFAULT_FILE_SIZE),
            address_space: Some(DEFAULT_ADDRESS_SPACE),
            open_files: Some(DEFAULT_OPEN_FILES),
        }
    }
}

impl ResourceLimits {
    /// The spec's limits over the defaults.
    pub(crate) fn from_spec(spec: &LimitsSpec) -> Self {
        let defaults = ResourceLimits::default();
        ResourceLimits {
            processes: spec.processes.map_or(defaults.processes, |v| v.0),
            file_size: spec.file_size.map_or(defaults.file_size, |v| v.0),
            address_space: spec.address_space.map_or(defaults.address_space, |v| v.0),
            open_files: spec.open_files.map_or(defaults.open_files, |v| v.0),
        }
    }

    /// Apply to this process (and so to everything it starts). A limit is never raised
    /// above the one already in force: drover's own limits stay a ceiling.
    pub(crate) fn apply(&self) -> Result<(), SandboxError> {
        for (resource, value, name) in [
            (Resource::Nproc, self.processes, "processes"),
            (Resource::Fsize, self.file_size, "file_size"),
            (Resource::As, self.address_space, "address_space"),
            (Resource::Nofile, self.open_files, "open_files"),
        ] {
            let Some(value) = value else { continue };
            let current = rustix::process::getrlimit(resource);
            let cap = |limit: Option<u64>| Some(limit.map_or(value, |l| l.min(value)));
            let new = Rlimit {
                current: cap(current.current),
                maximum: cap(current.maximum),
            };
            setrlimit(resource, new)
                .map_err(|e| SandboxError::failed(format!("set the {name} limit to {value}"), e))?;
        }
        Ok(())
    }
}
