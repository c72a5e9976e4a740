//! Attacker suite, the network under rules naming hosts: a proxied command's launcher
//! answers its `connect()` calls, so the command must not be able to reach it (take its
//! seccomp listener, trace it, stop it) and answer its own calls; and every thread of
//! the command is answered, not only its main one. A future change must keep every test
//! here green.

use crate::common;
use crate::network_egress::{Host, bash_spec, require, run_as, scratch};
use crate::users::{User, unprivileged};

/// Python that finds its launcher (by its command line in `/proc`, which shows every
/// process of the machine: `--proxy-port` and the port in `HTTP_PROXY`) and tries what
/// would let it answer its own calls: take a descriptor of the launcher (pidfd_getfd),
/// trace it, stop it. Prints one line per try.
const REACH_LAUNCHER: &str = r#"
import ctypes, os, signal
libc = ctypes.CDLL(None, use_errno=True)
port = os.environ["HTTP_PROXY"].rsplit(":", 1)[1]
launcher = 0
for entry in os.listdir("/proc"):
    try:
        args = open(f"/proc/{entry}/cmdline", "rb").read().split(b"\0")
    except OSError:
        continue
    if b"--proxy-port" in args and args[args.index(b"--proxy-port") + 1] == port.encode():
        launcher = int(entry)
print("launcher", launcher)
if not launcher:
    raise SystemExit("launcher not found")
def tried(name, rc):
    print(name, "ok" if rc >= 0 else f"errno {ctypes.get_errno()}")
pidfd = libc.syscall(434, launcher, 0)
tried("pidfd_open", pidfd)
if pidfd >= 0:
    got = [libc.syscall(438, pidfd, fd, 0) for fd in range(3, 64)]
    print("pidfd_getfd", "ok" if any(g >= 0 for g in got) else "refused")
tried("ptrace", libc.ptrace(0x4206, launcher, 0, 0))
try:
    os.kill(launcher, 0)
    print("signal ok")
except OSError:
    print("signal refused")
"#;

#[test]
#[cfg_attr(
    not(all(drover_has_sandbox, drover_has_curl)),
    ignore = "needs curl and drover's sandbox (Landlock ABI 3+)"
)]
fn a_proxied_command_cannot_reach_its_launcher() {
    require();
    common::require_program("python3");
    reach_launcher(unprivileged());
}

#[test]
#[cfg_attr(
    not(all(drover_has_sandbox, drover_has_curl, drover_has_root)),
    ignore = "needs root, curl and drover's sandbox (Landlock ABI 3+)"
)]
fn a_proxied_command_cannot_reach_its_launcher_as_root() {
    require();
    common::require_root();
    common::require_program("python3");
    reach_launcher(User::Own);
}

fn reach_launcher(user: User) {
    let dir = scratch();
    std::fs::write(dir.path().join("ws/reach.py"), REACH_LAUNCHER).unwrap();
    let spec = bash_spec(
        dir.path(),
        "{ allow: [\"localhost:1\"] }",
        &["python3 reach.py".to_string()],
        "",
    );
    let run = run_as(user, dir.path(), &spec);
    run.exited(0);
    let result = &run.results()[0];
    // Its descriptors (the seccomp listener among them) and its memory stay out of
    // reach: the launcher is not dumpable (and, as root, in another PID namespace).
    assert!(!result.contains("pidfd_getfd ok"), "{user:?}: {result}");
    assert!(!result.contains("ptrace ok"), "{user:?}: {result}");
    // Where Landlock scopes signals (ABI 6), the command cannot stop its launcher either.
    if landlock_scopes_signals() {
        assert!(result.contains("signal refused"), "{user:?}: {result}");
    }
}

/// Whether this kernel's Landlock has ABI 6 (signal scoping).
fn landlock_scopes_signals() -> bool {
    // SAFETY: landlock_create_ruleset(NULL, 0, VERSION) only returns the ABI version.
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            1u32,
        )
    };
    abi >= 6
}

/// Python that fetches the same URL from its main thread and from a second thread.
const FROM_THREADS: &str = r#"
import sys, threading, urllib.request
def get(tag):
    try:
        print(tag, urllib.request.urlopen(sys.argv[1], timeout=10).status)
    except Exception as e:
        print(tag, "failed", e)
get("main")
worker = threading.Thread(target=get, args=("thread",))
worker.start()
worker.join()
"#;

#[test]
#[cfg_attr(
    not(all(drover_has_sandbox, drover_has_curl)),
    ignore = "needs curl and drover's sandbox (Landlock ABI 3+)"
)]
fn every_thread_of_a_proxied_command_can_connect() {
    require();
    common::require_program("python3");
    let target = Host::start("threads\n");
    let dir = scratch();
    std::fs::write(dir.path().join("ws/threads.py"), FROM_THREADS).unwrap();
    let url = format!("http://localhost:{}/", target.port);
    let spec = bash_spec(
        dir.path(),
        &format!("{{ allow: [\"localhost:{}\"] }}", target.port),
        &[format!("python3 threads.py {url}")],
        "",
    );
    let run = run_as(unprivileged(), dir.path(), &spec);
    run.exited(0);
    let result = &run.results()[0];
    assert!(result.contains("main 200"), "{result}");
    assert!(result.contains("thread 200"), "{result}");
    assert_eq!(target.accepted(), 2, "{result}");
}

/// Python that makes itself undumpable, so the launcher cannot read its calls, then
/// tries to connect somewhere.
const UNDUMPABLE: &str = r#"
import ctypes, socket
ctypes.CDLL(None).prctl(4, 0)  # PR_SET_DUMPABLE, 0
try:
    socket.create_connection(("10.1.2.3", 443), timeout=5)
    print("connected")
except OSError as e:
    print("refused", e.errno)
"#;

/// A process the launcher cannot look at gets no network, and its attempt is still
/// accounted for: a `direct` denied event, and a note in the command's result.
#[test]
#[cfg_attr(
    not(all(drover_has_sandbox, drover_has_curl)),
    ignore = "needs curl and drover's sandbox (Landlock ABI 3+)"
)]
fn an_undumpable_commands_connection_is_refused_and_accounted_for() {
    require();
    common::require_program("python3");
    let dir = scratch();
    std::fs::write(dir.path().join("ws/undump.py"), UNDUMPABLE).unwrap();
    let spec = bash_spec(
        dir.path(),
        "{ allow: [\"localhost:1\"] }",
        &["python3 undump.py".to_string()],
        "",
    );
    let run = run_as(unprivileged(), dir.path(), &spec);
    run.exited(0);
    let result = &run.results()[0];
    assert!(result.contains("refused 1"), "{result}");
    assert!(result.contains("undumpable"), "the note says why: {result}");
    let network = run.network();
    assert_eq!(network.len(), 1, "{network:?}");
    assert_eq!(network[0]["protocol"], "direct");
    assert_eq!(network[0]["decision"], "denied");
    assert!(
        network[0]["reason"]
            .as_str()
            .is_some_and(|reason| reason.contains("undumpable")),
        "{network:?}"
    );
    assert_eq!(run.tally()["denied"], 1);
}
