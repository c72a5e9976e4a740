//! What a run records about the network of its sandboxed commands under rules naming
//! hosts (`sandbox.network: {allow, …}`): every connection they tried, through drover's
//! egress proxy or around it, and a task's tally for its report.

use std::fmt::Write;

use serde::{Deserialize, Serialize};

/// What started the command that tried a connection.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetworkOrigin {
    /// `bash`, `setup`, `check`, `hook`, `mcp` (a server), or `command`.
    pub source: String,
    /// The Bash call's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
    /// The setup step's, check's, hook event's or MCP server's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// One connection attempt (the `network` transcript event).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetworkAttempt {
    #[serde(flatten)]
    pub origin: NetworkOrigin,
    /// The host asked for; an address for a direct connection.
    pub host: String,
    pub port: u16,
    /// `connect`, `http`, `socks5` (through the proxy), `unknown` (the proxy read no
    /// request), or `direct` (around the proxy: refused by the sandbox).
    pub protocol: String,
    /// `allowed` or `denied`.
    pub decision: String,
    /// The entry that decided, as written (`registry.npmjs.org (registries: npm)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// Why it was denied, or why an allowed connection failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The address connected to, for an allowed connection made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    #[serde(default)]
    pub bytes_up: u64,
    #[serde(default)]
    pub bytes_down: u64,
    #[serde(default)]
    pub duration_ms: u64,
}

impl NetworkAttempt {
    pub fn denied(&self) -> bool {
        self.decision == "denied"
    }

    /// `host:port`, IPv6 hosts in brackets as written.
    pub fn target(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }
}

/// The hosts a task's report names at most among its denied connections.
pub const FIRST_DENIED: usize = 10;

/// A task's connections in its report (`summary.json`'s `network`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetworkTally {
    pub allowed: u64,
    pub denied: u64,
    /// Bytes through the proxy, both ways together.
    #[serde(default)]
    pub bytes: u64,
    /// The first distinct `host:port` targets denied, in order (at most
    /// [`FIRST_DENIED`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub first_denied: Vec<String>,
}

impl NetworkTally {
    pub fn count(&mut self, attempt: &NetworkAttempt) {
        self.bytes += attempt.bytes_up + attempt.bytes_down;
        if !attempt.denied() {
            self.allowed += 1;
            return;
        }
        self.denied += 1;
        if attempt.host.is_empty() {
            // No host was named (a client that sent the proxy nothing readable, a
            // connection the launcher could not look at): no target to list.
            return;
        }
        let target = attempt.target();
        if self.first_denied.len() < FIRST_DENIED && !self.first_denied.contains(&target) {
            self.first_denied.push(target);
        }
    }
}

/// `summary.md`'s section of a task whose commands tried connections under rules
/// naming hosts: the counts, and the first hosts denied (in code spans: a host is the
/// model's choice).
pub(crate) fn summary_section(out: &mut String, task: &crate::TaskReport) {
    let Some(tally) = &task.network else {
        return;
    };
    let _ = write!(
        out,
        "\n### {}: network\n\n{} allowed, {} denied by the task's `sandbox.network` rules ({} through the proxy).\n",
        crate::markdown::code(&task.name),
        drover_output::counted(tally.allowed, "connection", "connections"),
        tally.denied,
        drover_output::counted(tally.bytes, "byte", "bytes"),
    );
    if !tally.first_denied.is_empty() {
        let hosts: Vec<String> = tally
            .first_denied
            .iter()
            .map(|target| crate::markdown::code(target))
            .collect();
        let _ = writeln!(out, "\nDenied: {}.", hosts.join(", "));
    }
}

/// The GitHub annotation text of a task's denied connections, when it had any.
pub(crate) fn denied_message(tally: &NetworkTally) -> Option<String> {
    (tally.denied > 0).then(|| {
        format!(
            "the task's sandbox.network rules denied {}: {}",
            drover_output::counted(tally.denied, "connection", "connections"),
            tally.first_denied.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attempt(host: &str, decision: &str) -> NetworkAttempt {
        NetworkAttempt {
            origin: NetworkOrigin {
                source: "bash".into(),
                tool_use_id: Some("toolu_1".into()),
                name: None,
            },
            host: host.into(),
            port: 443,
            protocol: "connect".into(),
            decision: decision.into(),
            rule: None,
            reason: None,
            address: None,
            bytes_up: 10,
            bytes_down: 20,
            duration_ms: 1,
        }
    }

    #[test]
    fn the_tally_counts_and_names_each_denied_target_once() {
        let mut tally = NetworkTally::default();
        for (host, decision) in [
            ("registry.npmjs.org", "allowed"),
            ("evil.example", "denied"),
            ("evil.example", "denied"),
            ("other.example", "denied"),
        ] {
            tally.count(&attempt(host, decision));
        }
        assert_eq!((tally.allowed, tally.denied, tally.bytes), (1, 3, 120));
        assert_eq!(
            tally.first_denied,
            ["evil.example:443", "other.example:443"]
        );
    }

    #[test]
    fn the_report_names_the_denied_hosts_in_code_spans() {
        let mut task = crate::junit::tests::task("t", "s.yaml", crate::EndReason::EndTurn, "m");
        let mut out = String::new();
        summary_section(&mut out, &task);
        assert!(out.is_empty(), "no rules, no section");
        let mut tally = NetworkTally::default();
        tally.count(&attempt("registry.npmjs.org", "allowed"));
        tally.count(&attempt("<b>evil</b>", "denied"));
        task.network = Some(tally.clone());
        summary_section(&mut out, &task);
        assert!(out.contains("1 connection allowed, 1 denied"), "{out}");
        assert!(out.contains("`<b>evil</b>:443`"), "{out}");
        assert_eq!(
            denied_message(&tally).unwrap(),
            "the task's sandbox.network rules denied 1 connection: <b>evil</b>:443"
        );
    }

    #[test]
    fn an_attempt_is_one_flat_event() {
        let event = crate::Event::Network(Box::new(attempt("evil.example", "denied")));
        let text = serde_json::to_string(&event).unwrap();
        assert!(
            text.starts_with(
                r#"{"type":"network","source":"bash","tool_use_id":"toolu_1","host":"evil.example""#
            ),
            "{text}"
        );
        let back: crate::Event = serde_json::from_str(&text).unwrap();
        assert_eq!(back, event);
    }
}
