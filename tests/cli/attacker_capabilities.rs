//! Attacker suite, capabilities: drover often runs as root, and a sandboxed command run
//! as root must keep no capability that reaches past Landlock and the socket filter —
//! no kernel memory, no kernel log, no immutable planted file, no device node — while
//! ordinary root work (chown in the workspace) still succeeds. As a user, a command
//! holds none and a setuid program grants none. A future change must keep every test
//! here green.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::write_spec;
use serde_json::json;

/// The capabilities a sandboxed command keeps (`src/sandbox/capabilities.rs`): CHOWN,
/// DAC_OVERRIDE, FOWNER, FSETID, KILL, SETGID, SETUID, SETPCAP, NET_BIND_SERVICE,
/// SYS_CHROOT, AUDIT_WRITE.
const KEPT: u64 =
    1 | 1 << 1 | 1 << 3 | 1 << 4 | 1 << 5 | 1 << 6 | 1 << 7 | 1 << 8 | 1 << 10 | 1 << 18 | 1 << 29;

/// The unprivileged user the tests run drover as when they run as root.
const NOBODY: u32 = 65534;

/// Sets and clears the immutable flag with `FS_IOC_SETFLAGS`, as `chattr +i` and `-i`
/// do (e2fsprogs may be missing; python3 is not).
const IMMUTABLE_PY: &str = r#"import fcntl, struct, sys
GET, SET, IMMUTABLE = 0x80086601, 0x40086602, 0x10
with open(sys.argv[2], "rb") as f:
    flags = struct.unpack("l", fcntl.ioctl(f, GET, b"\0" * 8))[0]
    flags = flags | IMMUTABLE if sys.argv[1] == "+i" else flags & ~IMMUTABLE
    fcntl.ioctl(f, SET, struct.pack("l", flags))
"#;

/// The attack, in a script so that only the sandbox (not the permission rules) stands
/// in the way. `$1` is a `/dev/mem` node (the machine's, or one the test made).
const ATTACK_SH: &str = r#"try() { # name command...
  local name=$1; shift
  if "$@" >/dev/null 2>&1; then echo "$name SUCCEEDED"; else echo "$name refused"; fi
}
if [ -e /proc/kcore ]; then try kcore head -c 16 /proc/kcore; else echo "kcore absent"; fi
try mem head -c 16 "$1"
try kmsg head -n 1 /dev/kmsg
touch planted
try immutable python3 immutable.py +i planted
try mknod mknod disk b 7 0
try unshare unshare --mount true
grep -E '^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs):' /proc/self/status
touch owned && chown 1:1 owned && stat -c 'owner %u:%g' owned
echo "uid $(id -u)"
"#;

/// A spec whose model runs `command` with Bash, then stops.
fn spec(dir: &Path, command: &str) -> PathBuf {
    let call = json!([{ "name": "Bash", "input": { "command": command } }]);
    write_spec(
        dir,
        "task.yaml",
        &format!(
            "version: 1\nname: attack\nprompt: p\nworkspace: ws\nmodel:\n  provider: script\n  script:\n    - tool_calls: {call}\n    - text: done\npermissions:\n  allow: [Bash]\n"
        ),
    )
}

/// `drover run SPEC` through `command` (drover itself, or setpriv in front of it), with
/// a plain PATH and HOME in `dir`; the Bash call's result.
fn run(command: Command, dir: &Path, spec: &Path) -> String {
    common::run_attack(command, dir, spec).swap_remove(0)
}

/// The hexadecimal value of `field` in a `/proc/self/status` dump.
fn status_field(status: &str, field: &str) -> u64 {
    let line = status
        .lines()
        .find_map(|line| line.strip_prefix(&format!("{field}:")))
        .unwrap_or_else(|| panic!("no {field} in {status}"));
    u64::from_str_radix(line.trim(), 16).unwrap()
}

/// Sets (`+i`) or clears (`-i`) the immutable flag of `file` with the test's own
/// capabilities; whether it could.
fn immutable(flag: &str, script: &Path, file: &Path) -> bool {
    Command::new("python3")
        .arg(script)
        .arg(flag)
        .arg(file)
        .status()
        .is_ok_and(|status| status.success())
}

/// As root, a sandboxed command reads no kernel memory (`/proc/kcore`, `/dev/mem`) and
/// no kernel log, makes no file immutable (which drover's artifact sweep could then
/// not remove), makes no device node, enters no namespace, and holds exactly the kept
/// capabilities, in its bounding set too; `chown` in the workspace still works, as uid 0.
#[test]
#[cfg_attr(
    not(all(drover_has_sandbox, drover_has_root, drover_has_python3)),
    ignore = "needs root (a user holds no capability to attack with), python3 and drover's sandbox (Landlock ABI 3+)"
)]
fn a_command_run_as_root_keeps_no_capability_that_reaches_past_the_sandbox() {
    common::require_sandbox();
    common::require_root();
    common::require_program("python3");
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    std::fs::write(ws.join("attack.sh"), ATTACK_SH).unwrap();
    std::fs::write(ws.join("immutable.py"), IMMUTABLE_PY).unwrap();
    // Where the machine has no /dev/mem, a node of it outside the workspace.
    let mem = if Path::new("/dev/mem").exists() {
        PathBuf::from("/dev/mem")
    } else {
        let node = dir.path().join("mem");
        let made = Command::new("mknod")
            .arg(&node)
            .args(["c", "1", "1"])
            .status()
            .unwrap();
        assert!(made.success(), "root cannot make a /dev/mem node");
        node
    };
    // Whether this file system has the immutable flag at all.
    let probe = dir.path().join("probe");
    std::fs::write(&probe, "").unwrap();
    let flag_supported = immutable("+i", &ws.join("immutable.py"), &probe);
    immutable("-i", &ws.join("immutable.py"), &probe);

    let spec = spec(dir.path(), &format!("bash attack.sh {}", mem.display()));
    let result = run(
        Command::new(env!("CARGO_BIN_EXE_drover")),
        dir.path(),
        &spec,
    );
    // Undo a successful attack, or the temporary directory cannot be removed.
    immutable("-i", &ws.join("immutable.py"), &ws.join("planted"));

    for attack in ["kcore", "mem", "kmsg", "mknod", "unshare"] {
        assert!(
            !result.contains(&format!("{attack} SUCCEEDED")),
            "{attack}: {result}"
        );
    }
    if flag_supported {
        assert!(result.contains("immutable refused"), "{result}");
    } else {
        eprintln!("part skipped: this file system has no immutable flag");
    }
    for set in ["CapEff", "CapPrm", "CapBnd"] {
        assert_eq!(
            status_field(&result, set),
            KEPT,
            "{set} is not the kept set: {result}"
        );
    }
    assert_eq!(status_field(&result, "CapInh"), 0, "{result}");
    assert_eq!(status_field(&result, "CapAmb"), 0, "{result}");
    // Ordinary root work still works.
    assert!(result.contains("owner 1:1"), "{result}");
    assert!(result.contains("uid 0"), "{result}");
}

/// The probe says what was dropped.
#[test]
#[cfg_attr(
    not(all(drover_has_sandbox, drover_has_root)),
    ignore = "needs root (a user holds no capability to attack with) and drover's sandbox (Landlock ABI 3+)"
)]
fn the_probe_says_capabilities_were_dropped() {
    common::require_sandbox();
    common::require_root();
    let probe = common::drover()
        .args([
            "__sandbox-exec",
            "--policy",
            r#"{"writable":["/tmp"],"read_denied":[],"network":false}"#,
            "--probe",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&probe.stdout);
    assert!(
        stdout.contains(", capabilities dropped but CHOWN, DAC_OVERRIDE, FOWNER, FSETID, KILL, SETGID, SETUID, SETPCAP, NET_BIND_SERVICE, SYS_CHROOT, AUDIT_WRITE)"),
        "{stdout}"
    );
}

fn setpriv() -> Command {
    let mut command = Command::new("setpriv");
    command.args([
        &format!("--reuid={NOBODY}"),
        &format!("--regid={NOBODY}"),
        "--clear-groups",
        "--",
    ]);
    command
}

/// As a user (nobody), a sandboxed command holds no capability, `no_new_privs` is set,
/// and a setuid-root program it runs grants nothing: it runs as nobody.
#[test]
#[cfg_attr(
    not(all(drover_has_sandbox, drover_has_root)),
    ignore = "needs root (a user holds no capability to attack with) and drover's sandbox (Landlock ABI 3+)"
)]
fn a_command_run_as_a_user_holds_none_and_a_setuid_program_grants_none() {
    common::require_sandbox();
    common::require_root();
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    // drover and a setuid-root `id`, where nobody can run them.
    let drover = dir.path().join("drover");
    std::fs::copy(env!("CARGO_BIN_EXE_drover"), &drover).unwrap();
    let id = dir.path().join("id");
    let spec = spec(
        dir.path(),
        &format!(
            "grep -E '^(CapEff|CapPrm|NoNewPrivs):' /proc/self/status; echo \"setuid $({} -u)\"",
            id.display()
        ),
    );
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    for entry in walkdir::WalkDir::new(dir.path()) {
        std::os::unix::fs::lchown(entry.unwrap().path(), Some(NOBODY), Some(NOBODY)).unwrap();
    }
    std::fs::copy("/usr/bin/id", &id).unwrap();
    std::fs::set_permissions(&id, std::fs::Permissions::from_mode(0o4755)).unwrap();
    // The setuid bit works here outside the sandbox (no nosuid mount).
    let outside = setpriv().arg(&id).arg("-u").output().unwrap();
    let setuid_works = String::from_utf8_lossy(&outside.stdout).trim() == "0";

    let mut command = setpriv();
    command.arg(&drover);
    let result = run(command, dir.path(), &spec);

    assert_eq!(status_field(&result, "CapEff"), 0, "{result}");
    assert_eq!(status_field(&result, "CapPrm"), 0, "{result}");
    assert!(result.contains("NoNewPrivs:\t1"), "{result}");
    if setuid_works {
        assert!(result.contains(&format!("setuid {NOBODY}")), "{result}");
    } else {
        eprintln!("part skipped: setuid programs do not run as root here (nosuid)");
    }
}

/// Landlock guards contents, not metadata, and root owns every root-owned file: as root
/// a sandboxed command could `chmod u+s`, `chown` or backdate any file on the machine.
/// The read-only mounts refuse it outside the writable paths; inside, it still works.
#[test]
#[cfg_attr(
    not(all(drover_has_sandbox, drover_has_root)),
    ignore = "needs root (a user holds no capability to attack with) and drover's sandbox (Landlock ABI 3+)"
)]
fn a_command_run_as_root_changes_no_metadata_outside_the_writable_paths() {
    common::require_sandbox();
    common::require_root();
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    std::fs::write(ws.join("tool.sh"), "echo hi\n").unwrap();
    let outside = dir.path().join("program");
    std::fs::write(&outside, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o755)).unwrap();
    let before = std::fs::metadata(&outside).unwrap();
    let target = outside.display();
    let spec = spec(
        dir.path(),
        &format!(
            "chmod 4755 {target} && echo 'chmod SUCCEEDED'; chown 1:1 {target} && echo 'chown SUCCEEDED'; touch -d 2000-01-01 {target} && echo 'touch SUCCEEDED'; chmod +x tool.sh && echo 'inside works'"
        ),
    );
    let result = run(
        Command::new(env!("CARGO_BIN_EXE_drover")),
        dir.path(),
        &spec,
    );
    for attack in ["chmod", "chown", "touch"] {
        assert!(
            !result.contains(&format!("{attack} SUCCEEDED")),
            "{attack}: {result}"
        );
    }
    assert!(result.contains("Read-only file system"), "{result}");
    assert!(result.contains("inside works"), "{result}");
    let after = std::fs::metadata(&outside).unwrap();
    assert_eq!(after.mode(), before.mode());
    assert_eq!((after.uid(), after.gid()), (before.uid(), before.gid()));
    assert_eq!(after.mtime(), before.mtime());
}
