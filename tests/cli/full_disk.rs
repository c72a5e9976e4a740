//! A disk that fills during a run: the task ends `internal_error` saying what failed,
//! and its line still says how many turns it ran.

use std::process::Command;

use crate::common::write_spec;

/// A mount namespace with a tmpfs can be made here (root with CAP_SYS_ADMIN), as the
/// build found (`drover_has_mount_namespace`): if not, the test fails.
fn require_small_disk() {
    let probe = Command::new("unshare")
        .args(["-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"])
        .output();
    assert!(
        probe.is_ok_and(|o| o.status.success()),
        "drover_has_mount_namespace is set (the build mounted a tmpfs in a mount namespace, or CI=true runs every test), but this test cannot mount one"
    );
}

#[test]
#[cfg_attr(
    not(drover_has_mount_namespace),
    ignore = "needs root in a mount namespace, to mount a small tmpfs as the disk that fills"
)]
fn a_disk_that_fills_mid_run_still_reports_the_turns_that_ran() {
    require_small_disk();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    // Each turn's result is 8 KB of text: a 48 KiB disk fills after a few turns.
    let turn = "    - tool_calls: [{ name: Bash, input: { command: \"head -c 8000 /dev/zero | tr '\\\\0' a\" } }]\n";
    let spec = write_spec(
        dir.path(),
        "fill.yaml",
        &format!(
            "version: 1\nname: fill\nprompt: p\nworkspace: ws\nmodel:\n  provider: script\n  script:\n{}    - text: done\npermissions:\n  allow: [Bash]\n",
            turn.repeat(20)
        ),
    );
    let artifacts = dir.path().join("out");
    std::fs::create_dir_all(&artifacts).unwrap();
    let drover = env!("CARGO_BIN_EXE_drover");
    let script = format!(
        "mount -t tmpfs -o size=48k tmpfs {out} && {drover} run {spec} --artifacts {out}",
        out = artifacts.display(),
        spec = spec.display()
    );
    let output = Command::new("unshare")
        .args(["-m", "sh", "-c", &script])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stdout}\n{stderr}");
    let line = stdout
        .lines()
        .chain(stderr.lines())
        .find(|line| line.contains("fill") && line.contains("turn"))
        .unwrap_or_else(|| panic!("no task line:\n{stdout}\n{stderr}"));
    assert!(!line.contains(" 0 turns"), "{line}");
    assert!(
        stdout.contains("No space left") || stderr.contains("No space left"),
        "{stdout}\n{stderr}"
    );
}
