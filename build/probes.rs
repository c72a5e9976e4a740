//! What the test machine has, found when the tests are built, for the build scripts of
//! drover (`build.rs`) and drover-record (`crates/drover-record/build.rs`).
//!
//! A test that needs something beyond drover — a program (node, python3, gcc, xmllint),
//! the packages `.ci/run` installs into `.ci/node` and `.ci/venv`, root, a kernel feature
//! (Landlock, a mount namespace) — carries
//! `#[cfg_attr(not(drover_has_X), ignore = "needs …")]`: where the thing is missing,
//! cargo's own output says the test was not run and why (`test … ignored, needs …`),
//! rather than the test passing without testing. Where the build found it, the test
//! runs and fails if it is gone after all: a test never skips itself.
//!
//! Under `CI=true` (`.ci/run` exports it) every `drover_has_X` is set whatever was found,
//! so every test runs and a missing tool fails its tests (with a build warning naming
//! it), and `.ci/run` refuses a run in which any test was ignored.
//!
//! Each probe is cheap (a file's presence, `--version` with a time limit, one system
//! call) and none fails the build. The scripts are run again when what a probe looked at
//! changes: `CI` and `PATH`, a program found (or, when one was not, the directories of
//! `PATH`, where an install puts it), `.ci/node` and `.ci/venv` (or the nearest folder
//! that exists, where `.ci/run` creates them). A change the scripts cannot see (root, the
//! kernel) needs `touch build.rs` to be found.

use std::io::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long a probe's program may take before it counts as missing.
const PROBE_TIME: Duration = Duration::from_secs(10);

/// One instruction to cargo. A build script speaks to cargo on its stdout (clippy.toml's
/// rule against `println!` is about drover's own output, which goes through `say!`).
fn cargo(instruction: &str) {
    let _ = writeln!(std::io::stdout(), "cargo::{instruction}");
}

/// The probes of one build script, and what they found.
pub(crate) struct Probes {
    /// `CI=true`: every cfg is set, found or not.
    ci: bool,
    /// The cfgs whose thing was not found, to name under CI.
    missing: Vec<&'static str>,
}

impl Probes {
    /// Start probing; the script runs again when `CI` or `PATH` changes, or one of
    /// `sources` (the build script and this file).
    pub(crate) fn new(sources: &[&str]) -> Probes {
        cargo("rerun-if-env-changed=CI");
        cargo("rerun-if-env-changed=PATH");
        for source in sources {
            cargo(&format!("rerun-if-changed={source}"));
        }
        Probes {
            ci: std::env::var("CI").is_ok_and(|value| value == "true"),
            missing: Vec::new(),
        }
    }

    /// Declare the cfg `name` and set it when `found` (or under CI).
    pub(crate) fn set(&mut self, name: &'static str, found: bool) {
        cargo(&format!("rustc-check-cfg=cfg({name})"));
        if found || self.ci {
            cargo(&format!("rustc-cfg={name}"));
        }
        if !found {
            self.missing.push(name);
        }
    }

    /// Under CI, name what is missing: its tests run and fail.
    pub(crate) fn finish(self) {
        if self.ci && !self.missing.is_empty() {
            cargo(&format!(
                "warning=CI=true runs every test, but this machine lacks {}: their tests will fail (.ci/run installs what a test needs)",
                self.missing.join(", ")
            ));
        }
    }
}

/// The program `name` as `PATH` finds it. Found, the script runs again if it changes or
/// goes; not found, if a directory of `PATH` changes.
pub(crate) fn program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs: Vec<PathBuf> = std::env::split_paths(&path)
        .filter(|dir| dir.is_dir())
        .collect();
    let found = dirs.iter().map(|dir| dir.join(name)).find(|file| {
        std::fs::metadata(file)
            .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
    });
    match &found {
        Some(file) => cargo(&format!("rerun-if-changed={}", file.display())),
        None => {
            for dir in &dirs {
                cargo(&format!("rerun-if-changed={}", dir.display()));
            }
        }
    }
    found
}

/// Whether `program args…` exits 0 within the probe time (its output discarded).
pub(crate) fn runs(program: &Path, args: &[&str]) -> bool {
    let Ok(mut child) = Command::new(program)
        .args(args)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
    else {
        return false;
    };
    let deadline = Instant::now() + PROBE_TIME;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return status.success(),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return false;
            }
        }
    }
}

/// Whether the program `name` is on `PATH` and `name --version` runs.
pub(crate) fn program_runs(name: &str) -> bool {
    program(name).is_some_and(|path| runs(&path, &["--version"]))
}

/// Whether `path` (relative to the package) exists; the script runs again when it (or,
/// while it is missing, the nearest folder above it that exists) changes.
pub(crate) fn exists(path: &Path) -> bool {
    let mut watched = path;
    while !watched.exists() {
        match watched.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => watched = parent,
            _ => return false,
        }
    }
    cargo(&format!("rerun-if-changed={}", watched.display()));
    path.exists()
}

/// Whether the Python package `package` is installed in the virtualenv `venv` (its
/// `lib/python3.*/site-packages/<package>` folder), without importing it.
pub(crate) fn in_venv(venv: &Path, package: &str) -> bool {
    // Where the folder is missing, so is the venv's python, whose probe watches for it.
    let Ok(entries) = std::fs::read_dir(venv.join("lib")) else {
        return false;
    };
    entries.flatten().any(|entry| {
        let init = entry
            .path()
            .join("site-packages")
            .join(package)
            .join("__init__.py");
        exists(&init)
    })
}
