//! What the test machine has, for the end-to-end tests (tests/cli): each `drover_has_X`
//! cfg below is set when the build finds X (or under `CI=true`, where every test runs),
//! and a test that needs X is ignored, with the reason in cargo's output, where it is
//! not. See build/probes.rs for how and when it is found again; the README's "Tests"
//! section lists what the whole suite needs and how `.ci/run` provides it.

#[path = "build/probes.rs"]
mod probes;

use std::path::Path;

use probes::{Probes, exists, in_venv, program_runs, runs};

/// The Landlock ABI drover's sandbox needs to confine writes (see src/sandbox/enforce.rs).
const SANDBOX_ABI: i64 = 3;
/// The Landlock ABI that scopes signals to the sandbox.
const SCOPED_SIGNALS_ABI: i64 = 6;

fn main() {
    let mut probes = Probes::new(&["build.rs", "build/probes.rs"]);
    let abi = landlock_abi();
    probes.set("drover_has_sandbox", abi >= SANDBOX_ABI);
    probes.set("drover_has_scoped_signals", abi >= SCOPED_SIGNALS_ABI);
    let root = is_root();
    probes.set("drover_has_root", root);
    probes.set("drover_has_mount_namespace", root && small_disk());
    probes.set("drover_has_overlay", root && overlay());
    probes.set("drover_has_gcc", program_runs("gcc"));
    probes.set("drover_has_python3", program_runs("python3"));
    probes.set("drover_has_xmllint", program_runs("xmllint"));
    probes.set("drover_has_curl", program_runs("curl"));
    // `repo:`'s tests serve repositories with `git daemon` (tests/cli/repo.rs).
    probes.set("drover_has_git_daemon", git_program("git-daemon"));
    probes.set(
        "drover_has_git_http_backend",
        git_program("git-http-backend"),
    );
    let node = program_runs("node");
    probes.set("drover_has_node", node);
    // The package clients of the registry install tests (tests/cli/network_registries.rs).
    probes.set("drover_has_npm", node && program_runs("npm"));
    probes.set(
        "drover_has_pip",
        probes::program("python3").is_some_and(|python| runs(&python, &["-m", "pip", "--version"])),
    );
    let node_servers = ["server-everything", "server-filesystem", "server-memory"]
        .iter()
        .all(|package| {
            exists(
                &Path::new(".ci/node/node_modules/@modelcontextprotocol")
                    .join(package)
                    .join("dist/index.js"),
            )
        });
    probes.set("drover_has_node_servers", node && node_servers);
    let venv = Path::new(".ci/venv");
    let python = venv.join("bin/python");
    let venv_python = exists(&python) && runs(&python, &["--version"]);
    probes.set("drover_has_python_mcp", venv_python && in_venv(venv, "mcp"));
    let python_servers = ["mcp-server-git", "mcp-server-time"]
        .iter()
        .all(|server| exists(&venv.join("bin").join(server)));
    probes.set("drover_has_python_servers", venv_python && python_servers);
    let validators = ["kubernetes_validate", "argo_workflows", "yaml"]
        .iter()
        .all(|package| in_venv(venv, package));
    probes.set("drover_has_fleet_validators", venv_python && validators);
    probes.finish();
}

/// The kernel's Landlock ABI, 0 without Landlock (or where a seccomp profile refuses the
/// call, as the sandbox would find).
fn landlock_abi() -> i64 {
    const LANDLOCK_CREATE_RULESET_VERSION: u32 = 1;
    // SAFETY: with no attributes, size 0 and the VERSION flag the call creates nothing
    // and only returns the ABI version (or an error).
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    abi.max(0)
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Whether a mount namespace with a small tmpfs can be made here, as the full-disk test
/// makes one (root with CAP_SYS_ADMIN, not refused by a container's profile).
fn small_disk() -> bool {
    probes::program("unshare").is_some_and(|unshare| {
        runs(
            &unshare,
            &["-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"],
        )
    })
}

/// Whether an overlay can be mounted in the temp directory, as `--repo-cache` checkouts
/// are (root with CAP_SYS_ADMIN, overlayfs in the kernel, a temp directory overlayfs
/// can take as its layers). Tried in a mount namespace of its own, so nothing stays.
fn overlay() -> bool {
    let Ok(dir) = tempfile_dir() else {
        return false;
    };
    let script = format!(
        "cd '{}' && mkdir l u w m && mount -t overlay o -o lowerdir=l,upperdir=u,workdir=w m",
        dir.display()
    );
    let mounted = probes::program("unshare")
        .is_some_and(|unshare| runs(&unshare, &["-m", "sh", "-c", &script]));
    let _ = std::fs::remove_dir_all(&dir);
    mounted
}

/// A new empty directory in the temp directory.
fn tempfile_dir() -> std::io::Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!("drover-build-overlay-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir(&dir)?;
    Ok(dir)
}

/// Is `name` one of git's own programs (`git --exec-path`)?
fn git_program(name: &str) -> bool {
    let Ok(output) = std::process::Command::new("git")
        .arg("--exec-path")
        .output()
    else {
        return false;
    };
    let dir = String::from_utf8_lossy(&output.stdout).trim().to_string();
    output.status.success() && exists(&Path::new(&dir).join(name))
}
