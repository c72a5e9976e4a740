//! A replay of a recording whose commands ran under rules naming hosts: it never opens
//! the network, but its commands run proxied all the same, with a proxy that refuses
//! every connection. So each replayed command's attempts are known, and compared with
//! the recorded ones like tool results: a command that now tries other hosts (or in
//! another order) than it did is a `replay_drift` (tool `network`).

use std::collections::BTreeMap;

use crate::record::Event;
use crate::record::network::{NetworkAttempt, NetworkOrigin};

/// Why every connection of a replay is refused.
pub(crate) const REPLAY_REASON: &str = "a replay never opens the network";

/// The distinct targets a command tries that are compared at most.
pub(crate) const MAX_COMPARED: usize = 100;

/// The recorded attempts, by command: the distinct `host:port` targets each tried, in
/// the order first tried.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RecordedNetwork {
    by_origin: BTreeMap<String, Vec<String>>,
}

/// The key a command's attempts are compared under: what started it and its id or name.
pub(crate) fn origin_key(origin: &NetworkOrigin) -> String {
    let which = origin
        .tool_use_id
        .as_deref()
        .or(origin.name.as_deref())
        .unwrap_or("");
    format!("{} {which}", origin.source)
}

/// Add `target` to `targets` if it is new, up to [`MAX_COMPARED`].
pub(crate) fn note_target(targets: &mut Vec<String>, target: String) {
    if targets.len() < MAX_COMPARED && !targets.contains(&target) {
        targets.push(target);
    }
}

impl RecordedNetwork {
    /// The recording's attempts, or None when its commands had no rules naming hosts
    /// (no `network` event, and `run_start` recorded no proxied sandbox).
    pub(crate) fn of(events: &[Event]) -> Option<RecordedNetwork> {
        let mut proxied = false;
        let mut recorded = RecordedNetwork::default();
        for event in events {
            match event {
                Event::RunStart { sandbox, .. } => {
                    proxied |= sandbox.get("proxied") == Some(&serde_json::Value::Bool(true))
                        || sandbox
                            .get("network")
                            .is_some_and(serde_json::Value::is_object);
                }
                Event::Network(attempt) => {
                    proxied = true;
                    recorded.add(attempt);
                }
                _ => {}
            }
        }
        proxied.then_some(recorded)
    }

    fn add(&mut self, attempt: &NetworkAttempt) {
        let targets = self
            .by_origin
            .entry(origin_key(&attempt.origin))
            .or_default();
        note_target(targets, attempt.target());
    }

    /// What the recording's command of `origin` tried.
    pub(crate) fn tried_by(&self, origin: &NetworkOrigin) -> &[String] {
        self.by_origin
            .get(&origin_key(origin))
            .map_or(&[][..], Vec::as_slice)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attempt(id: &str, host: &str) -> Event {
        Event::Network(Box::new(NetworkAttempt {
            origin: NetworkOrigin {
                source: "bash".into(),
                tool_use_id: Some(id.into()),
                name: None,
            },
            host: host.into(),
            port: 443,
            protocol: "connect".into(),
            decision: "allowed".into(),
            rule: None,
            reason: None,
            address: None,
            bytes_up: 0,
            bytes_down: 0,
            duration_ms: 0,
        }))
    }

    #[test]
    fn each_commands_distinct_targets_are_kept_in_order() {
        let events = [
            attempt("a", "x.example"),
            attempt("a", "y.example"),
            attempt("a", "x.example"),
            attempt("b", "z.example"),
        ];
        let recorded = RecordedNetwork::of(&events).unwrap();
        let origin = |id: &str| NetworkOrigin {
            source: "bash".into(),
            tool_use_id: Some(id.into()),
            name: None,
        };
        assert_eq!(
            recorded.tried_by(&origin("a")),
            ["x.example:443", "y.example:443"]
        );
        assert_eq!(recorded.tried_by(&origin("b")), ["z.example:443"]);
        assert!(recorded.tried_by(&origin("c")).is_empty());
        assert_eq!(
            RecordedNetwork::of(&[]),
            None,
            "no rules, nothing to compare"
        );
    }
}
