//! `drover __egress-proxy-bench`: the proxy of `bench --proxy` in a process of its own,
//! so its memory is measured apart from the bench's. It prints `port N`, then each
//! connection's event as a JSON line, and serves until its stdin closes.

use drover_policy::EgressRules;
use drover_proxy::Proxy;

use crate::exit;

/// Serve the proxy allowing `allow` (`host:port` entries) until stdin closes.
pub(crate) async fn serve(allow: &[String]) -> i32 {
    let mut entries = Vec::new();
    for entry in allow {
        let Some((host, port)) = entry.rsplit_once(':') else {
            crate::esay!("drover: --allow {entry}: write host:port");
            return exit::BAD_INPUT;
        };
        let Ok(port) = port.parse::<u16>() else {
            crate::esay!("drover: --allow {entry}: the port is no number from 1 to 65535");
            return exit::BAD_INPUT;
        };
        entries.push((host.to_string(), Some(port)));
    }
    let rules = match EgressRules::new(&entries, &[]) {
        Ok(rules) => rules,
        Err(error) => {
            crate::esay!("drover: {error}");
            return exit::BAD_INPUT;
        }
    };
    let sink = |event: drover_proxy::ConnectionEvent| {
        if let Ok(json) = serde_json::to_string(&event) {
            crate::output::say_json(&json);
        }
    };
    let (port, handle) = match Proxy::new(rules, sink).bind_loopback() {
        Ok(bound) => bound,
        Err(error) => {
            crate::esay!("drover: cannot listen on 127.0.0.1: {error}");
            return exit::RUNNER_ERROR;
        }
    };
    crate::say!("port {port}");
    // The bench closes stdin when it is done (or dies): then stop.
    let _ = tokio::task::spawn_blocking(|| {
        std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink())
    })
    .await;
    handle.shutdown().await;
    exit::PASSED
}
