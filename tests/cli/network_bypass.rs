//! Network by name, the ways around the rules (docs/sandbox.md, "Network by name"):
//! with an allow-list naming one loopback port, nothing else of the machine or the
//! network is reached — not another port, not the address by number, not a name that
//! resolves to loopback, not a direct connection around the proxy (TCP over IPv4 or
//! IPv6, even to the proxy's port by another address), not UDP, raw or packet sockets —
//! and every attempt is recorded, without a looping command flooding the transcript.
//! Each as an unprivileged user and, in the `_as_root` twin, as root (the flood only as
//! the unprivileged user: counting past the limit is drover's, the same for both).

use crate::common::{self, events};
use crate::network_egress::{Host, bash_spec, curl, require, run_as, scratch};
use crate::users::{User, unprivileged};

use std::time::Duration;

use serde_json::{Value, json};

#[test]
#[cfg_attr(
    not(all(drover_has_sandbox, drover_has_curl)),
    ignore = "needs curl and drover's sandbox (Landlock ABI 3+)"
)]
fn loopback_is_opened_only_by_an_entry_naming_it_with_its_port() {
    require();
    loopback_by_name(unprivileged());
}

#[test]
#[cfg_attr(
    not(all(drover_has_sandbox, drover_has_curl, drover_has_root)),
    ignore = "needs root, curl and drover's sandbox (Landlock ABI 3+)"
)]
fn loopback_is_opened_only_by_an_entry_naming_it_with_its_port_as_root() {
    require();
    common::require_root();
    loopback_by_name(User::Own);
}

/// `localhost:A` opens port A of the name localhost and nothing else of the machine:
/// not port B (another host listening there gets nothing), not 127.0.0.1:A (the
/// address is named by no entry). `*.localhost:B` opens no loopback either: it does not
/// cover `localhost` itself, and a name under it is either not resolved (502) or
/// resolves to a loopback address no entry names (403); host B is never reached.
fn loopback_by_name(user: User) {
    let a = Host::start("a\n");
    let b = Host::start("b\n");
    let (pa, pb) = (a.port, b.port);
    let dir = scratch();
    let commands = [
        curl(&format!("http://localhost:{pa}/a")),
        curl(&format!("http://localhost:{pb}/b")),
        curl(&format!("http://127.0.0.1:{pa}/by-address")),
        curl(&format!("http://app.localhost:{pb}/by-wildcard")),
    ];
    let spec = bash_spec(
        dir.path(),
        &format!("{{ allow: [\"localhost:{pa}\", \"*.localhost:{pb}\"] }}"),
        &commands,
        "",
    );
    let run = run_as(user, dir.path(), &spec);
    run.exited(0);
    let results = run.results();
    assert!(results[0].contains("HTTP/1.1 200 OK"), "{}", results[0]);
    assert!(
        results[1].contains(&format!(
            "X-Drover-Denied: blocked by the task's network policy: localhost:{pb} no allow rule for port {pb}; the entries for this host: localhost:{pa}"
        )),
        "{user:?}: {}",
        results[1]
    );
    assert!(
        results[2].contains(&format!(
            "X-Drover-Denied: blocked by the task's network policy: 127.0.0.1:{pa} no allow rule"
        )),
        "{user:?}: {}",
        results[2]
    );
    let wildcard = &results[3];
    assert!(
        wildcard.contains("HTTP/1.1 403 Forbidden") || wildcard.contains("HTTP/1.1 502 "),
        "{user:?}: {wildcard}"
    );
    assert!(!wildcard.contains("HTTP/1.1 200"), "{wildcard}");
    assert_eq!(a.requests(), ["GET /a HTTP/1.1"], "{user:?}");
    assert_eq!(b.accepted(), 0, "{user:?}: host B was reached");

    let network = run.network();
    assert_eq!(network.len(), 4, "{network:#?}");
    assert_eq!(network[0]["decision"], "allowed");
    assert_eq!(network[0]["address"], "127.0.0.1");
    for event in &network[1..] {
        assert_eq!(event["address"], Value::Null, "connected: {event}");
        assert_eq!(event["bytes_down"], 0, "{event}");
    }
    assert_eq!(
        (&network[1]["decision"], &network[2]["decision"]),
        (&json!("denied"), &json!("denied"))
    );
    if wildcard.contains("HTTP/1.1 403") {
        assert_eq!(network[3]["decision"], "denied", "{}", network[3]);
        assert!(
            network[3]["reason"]
                .as_str()
                .unwrap()
                .contains("a loopback address"),
            "{}",
            network[3]
        );
    } else {
        // Not resolved: the rule allowed the name, and the event says why nothing came of it.
        assert_eq!(network[3]["rule"], format!("*.localhost:{pb}"));
        assert!(
            network[3]["reason"]
                .as_str()
                .unwrap()
                .contains("cannot resolve app.localhost"),
            "{}",
            network[3]
        );
    }
}

/// What the direct-connection script tries, each line saying what came of it: a TCP
/// connection to another loopback port (argv[1]), to the proxy's own port over IPv6
/// `::1`, and to the proxy itself (the one door, which takes it and, sent nothing,
/// refuses it), UDP to a listener (argv[2]), raw and packet sockets.
const DIRECT: &str = r#"import os, socket, sys
other, udp = int(sys.argv[1]), int(sys.argv[2])
proxy = int(os.environ["HTTP_PROXY"].rsplit(":", 1)[1])
def tcp(name, family, address):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(10)
    try:
        s.connect(address)
        print(name, "connected")
    except OSError as e:
        print(name, "refused", e.errno)
    finally:
        s.close()
tcp("tcp-other", socket.AF_INET, ("127.0.0.1", other))
tcp("tcp6-proxy", socket.AF_INET6, ("::1", proxy))
tcp("tcp-proxy", socket.AF_INET, ("127.0.0.1", proxy))
try:
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.sendto(b"leaked-by-udp", ("127.0.0.1", udp))
    print("udp sent")
except OSError as e:
    print("udp refused", e.errno)
for name, family, kind in [("raw", socket.AF_INET, socket.SOCK_RAW), ("packet", socket.AF_PACKET, socket.SOCK_RAW)]:
    try:
        socket.socket(family, kind).close()
        print(name, "created")
    except OSError as e:
        print(name, "refused", e.errno)
"#;

#[test]
#[cfg_attr(
    not(all(drover_has_sandbox, drover_has_curl, drover_has_python3)),
    ignore = "needs curl, python3 and drover's sandbox (Landlock ABI 3+)"
)]
fn connections_around_the_proxy_are_refused_and_recorded() {
    require();
    common::require_program("python3");
    around_the_proxy(unprivileged());
}

#[test]
#[cfg_attr(
    not(all(
        drover_has_sandbox,
        drover_has_curl,
        drover_has_python3,
        drover_has_root
    )),
    ignore = "needs root, curl, python3 and drover's sandbox (Landlock ABI 3+)"
)]
fn connections_around_the_proxy_are_refused_and_recorded_as_root() {
    require();
    common::require_program("python3");
    common::require_root();
    around_the_proxy(User::Own);
}

/// With `localhost:A` allowed, nothing goes around the proxy: `curl --noproxy '*'` to
/// A itself, a socket to another loopback port and one to the proxy's port over IPv6
/// are refused (EACCES) and each recorded as a `direct` denied event naming the
/// address; UDP, raw and packet sockets cannot be created (EPERM) and the UDP
/// listener gets nothing; the Bash result's note names the direct targets.
fn around_the_proxy(user: User) {
    let a = Host::start("a\n");
    let other = Host::start("other\n");
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_nonblocking(true).unwrap();
    let udp_port = udp.local_addr().unwrap().port();
    let dir = scratch();
    std::fs::write(dir.path().join("ws/direct.py"), DIRECT).unwrap();
    let commands = [
        format!(
            "curl -sS --max-time 10 --noproxy '*' http://127.0.0.1:{}/direct; echo \"curl exit $?\"",
            a.port
        ),
        format!("python3 direct.py {} {udp_port}", other.port),
    ];
    let spec = bash_spec(
        dir.path(),
        &format!("{{ allow: [\"localhost:{}\"] }}", a.port),
        &commands,
        "",
    );
    let run = run_as(user, dir.path(), &spec);
    run.exited(0);
    let results = run.results();
    assert!(
        results[0].contains("curl exit 7"),
        "{user:?}: {}",
        results[0]
    );
    let probe = &results[1];
    for line in [
        "tcp-other refused 13\n",
        "tcp6-proxy refused 13\n",
        "tcp-proxy connected\n",
        "udp refused 1\n",
        "raw refused 1\n",
        "packet refused 1\n",
    ] {
        assert!(probe.contains(line), "{user:?}: {line:?} in {probe}");
    }
    std::thread::sleep(Duration::from_millis(200));
    let mut buf = [0u8; 64];
    assert!(udp.recv_from(&mut buf).is_err(), "{user:?}: UDP got out");
    assert_eq!(a.accepted(), 0, "{user:?}: A was reached directly");
    assert_eq!(other.accepted(), 0, "{user:?}: the other port was reached");

    let proxy_port = {
        let event = run
            .network()
            .into_iter()
            .find(|e| e["host"] == "[::1]")
            .cloned()
            .unwrap_or_else(|| panic!("{user:?}: no event for [::1]: {:#?}", run.network()));
        event["port"].as_u64().unwrap()
    };
    let direct: Vec<Value> = run
        .network()
        .iter()
        .filter(|e| e["protocol"] == "direct")
        .map(|e| {
            assert_eq!(e["decision"], "denied", "{e}");
            assert!(
                e["reason"]
                    .as_str()
                    .unwrap()
                    .contains("a direct connection around drover's proxy"),
                "{e}"
            );
            json!([e["tool_use_id"], e["host"], e["port"]])
        })
        .collect();
    assert_eq!(
        direct,
        [
            json!([run.tool_use_id(0), "127.0.0.1", a.port]),
            json!([run.tool_use_id(1), "127.0.0.1", other.port]),
            json!([run.tool_use_id(1), "[::1]", proxy_port]),
        ],
        "{user:?}"
    );
    // The connection to the proxy that sent nothing is an attempt too.
    let unknown: Vec<&Value> = run
        .network()
        .into_iter()
        .filter(|e| e["protocol"] == "unknown")
        .collect();
    assert_eq!(unknown.len(), 1, "{user:?}: {:#?}", run.network());
    assert_eq!(unknown[0]["decision"], "denied");
    assert!(
        results[0].contains(&format!(
            "drover: the task's network policy blocked 127.0.0.1:{} (a direct connection around drover's proxy",
            a.port
        )),
        "{user:?}: {}",
        results[0]
    );
    assert!(
        probe.contains(&format!("127.0.0.1:{} (a direct connection", other.port))
            && probe.contains(&format!("[::1]:{proxy_port} (a direct connection")),
        "{user:?}: {probe}"
    );
    assert_eq!(run.tally()["allowed"], 0, "{user:?}");
    assert_eq!(run.tally()["denied"], 4, "{user:?}");
}

/// Connect 600 times to a loopback port around the proxy.
const FLOOD: &str = r#"import socket, sys
port = int(sys.argv[1])
refused = 0
for _ in range(600):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.connect(("127.0.0.1", port))
    except OSError:
        refused += 1
    s.close()
print("refused", refused)
"#;

/// A command looping on a refused connection does not flood the transcript: its first
/// 500 attempts are `network` events, the rest one `network_omitted` event counting
/// them; summary.json still counts every attempt.
#[test]
#[cfg_attr(
    not(all(drover_has_sandbox, drover_has_python3)),
    ignore = "needs python3 and drover's sandbox (Landlock ABI 3+)"
)]
fn past_500_attempts_a_command_s_connections_are_counted_in_one_event() {
    common::require_sandbox();
    common::require_program("python3");
    let user = unprivileged();
    let target = Host::start("x\n");
    let dir = scratch();
    std::fs::write(dir.path().join("ws/flood.py"), FLOOD).unwrap();
    let spec = bash_spec(
        dir.path(),
        "{ allow: [\"localhost:1\"] }",
        &[
            format!("python3 flood.py {}", target.port),
            "echo second".to_string(),
        ],
        "",
    );
    let run = run_as(user, dir.path(), &spec);
    run.exited(0);
    let results = run.results();
    assert!(results[0].contains("refused 600"), "{}", results[0]);
    assert_eq!(target.accepted(), 0);
    let id = run.tool_use_id(0);
    let network = run.network();
    assert_eq!(network.len(), 500, "{user:?}");
    assert!(
        network
            .iter()
            .all(|e| e["tool_use_id"] == id.as_str() && e["protocol"] == "direct"),
        "{user:?}"
    );
    let omitted = events(&run.lines, "network_omitted");
    assert_eq!(omitted.len(), 1, "{omitted:?}");
    assert_eq!(
        omitted[0]
            .as_object()
            .unwrap()
            .iter()
            .filter(|(k, _)| !["prev", "ts", "seq"].contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect::<serde_json::Map<_, _>>(),
        json!({
            "type": "network_omitted",
            "source": "bash",
            "tool_use_id": id,
            "allowed": 0,
            "denied": 100,
            "bytes": 0,
        })
        .as_object()
        .unwrap()
        .clone(),
        "{user:?}"
    );
    // Written when the command ended, before its result.
    let at = |wanted: &Value| run.lines.iter().position(|l| l == wanted).unwrap();
    let result = events(&run.lines, "tool_result")[0];
    assert!(at(omitted[0]) < at(result), "{user:?}");
    assert_eq!(
        run.tally()["denied"],
        600,
        "{user:?}: every attempt counted"
    );
    assert!(
        results[0].contains(&format!("127.0.0.1:{} (a direct connection", target.port)),
        "{}",
        results[0]
    );
}
