//! The requests drover has sent a stdio server that await its answer, noted as they go
//! to the server's stdin (see [`super::stdin_pump`]). rmcp keeps its own table of them
//! and offers no way to fail one but an answer, so when a message that may have answered
//! any of them cannot be read (see [`super::relay`]), drover answers each of these ids
//! itself, with an error: the calls fail at once instead of at their `timeouts.call`,
//! and the server, still running, answers the next ones. (Closing the transport would
//! fail them too, but as a server gone: a required server's call would end the task, and
//! no later call could be made.) A request drover fails in the server's place has reached
//! the server, which may still be running it: the server is asked to cancel it, with a
//! `notifications/cancelled` that the stdin pump writes between rmcp's messages.

use std::collections::HashSet;
use std::sync::{Mutex, PoisonError};

use rmcp::model::RequestId;
use serde_json::{Value, json};
use tokio::sync::Notify;

/// The longest `reason` a cancellation gives the server.
const MAX_REASON: usize = 200;

/// The ids of the requests sent and not yet answered, and the cancellations to send.
#[derive(Default)]
pub(crate) struct Pending {
    table: Mutex<Table>,
    /// Woken when a request is sent.
    sent: Notify,
    /// Woken when a cancellation is queued.
    cancelled: Notify,
}

#[derive(Default)]
struct Table {
    /// Awaiting an answer, in the order sent.
    waiting: Vec<RequestId>,
    /// Every id ever sent: an answer naming none of them answers nothing drover asked.
    /// It grows by one id a request, as rmcp's own table does.
    sent: HashSet<RequestId>,
    /// `notifications/cancelled` lines not yet written to the server.
    cancels: Vec<Vec<u8>>,
}

/// What an answer's id names.
#[derive(Debug, PartialEq)]
pub(crate) enum Named {
    /// A request awaiting its answer, which no longer does (the id as rmcp sent it).
    Waiting(Value),
    /// A request sent and already answered or given up: a late answer.
    Settled,
    /// No request drover sent.
    Unknown,
}

impl Pending {
    /// rmcp wrote the request `id` to the server.
    pub(crate) fn note_sent(&self, id: &Value) {
        let Some(id) = request_id(id) else {
            return;
        };
        let mut table = self.table();
        table.sent.insert(id.clone());
        table.waiting.push(id);
        drop(table);
        self.sent.notify_one();
    }

    /// The server answered `id` (or drover did in its place, or rmcp gave up on it):
    /// what it named, and it awaits nothing more.
    pub(crate) fn answered(&self, id: &Value) -> Named {
        let Some(answer) = request_id(id) else {
            return Named::Unknown;
        };
        let mut table = self.table();
        // rmcp takes the string "7" as an answer to the request 7, so does this.
        let number = match &answer {
            RequestId::String(text) => text.parse::<i64>().ok().map(RequestId::Number),
            RequestId::Number(_) => None,
        };
        let matches = |sent: &RequestId| *sent == answer || Some(sent) == number.as_ref();
        if let Some(at) = table.waiting.iter().position(matches) {
            return Named::Waiting(table.waiting.remove(at).into_json_value());
        }
        if table.sent.iter().any(matches) {
            Named::Settled
        } else {
            Named::Unknown
        }
    }

    /// Every id still awaiting an answer, which no longer are.
    pub(crate) fn take_all(&self) -> Vec<Value> {
        std::mem::take(&mut self.table().waiting)
            .into_iter()
            .map(RequestId::into_json_value)
            .collect()
    }

    /// Ask the server to cancel the request `id`, for `reason` (cut at [`MAX_REASON`]).
    pub(crate) fn cancel(&self, id: &Value, reason: &str) {
        let mut end = reason.len().min(MAX_REASON);
        while !reason.is_char_boundary(end) {
            end -= 1;
        }
        let notification = json!({
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": id, "reason": &reason[..end]},
        });
        let mut line = notification.to_string().into_bytes();
        line.push(b'\n');
        self.table().cancels.push(line);
        self.cancelled.notify_one();
    }

    /// The cancellations queued, which are no longer.
    pub(crate) fn take_cancels(&self) -> Vec<Vec<u8>> {
        std::mem::take(&mut self.table().cancels)
    }

    /// Wait until a request is sent (at once if one was since the last wait).
    pub(crate) async fn next_sent(&self) {
        self.sent.notified().await;
    }

    /// Wait until a cancellation is queued (at once if one was since the last wait).
    pub(crate) async fn next_cancel(&self) {
        self.cancelled.notified().await;
    }

    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        // A panic while the table was held cannot leave it half changed in a way that
        // matters (at worst an id is both waiting and not yet in `sent`), so a
        // poisoned lock's table is used as it is.
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// `id` as rmcp reads a request id (`1.0` is the request 1), or None when rmcp would not
/// take it for one.
fn request_id(id: &Value) -> Option<RequestId> {
    serde_json::from_value(id.clone()).ok()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_answer_names_a_waiting_request_as_rmcp_matches_it() {
        let pending = Pending::default();
        for id in [json!(1), json!(2), json!("s-3"), json!(4)] {
            pending.note_sent(&id);
        }
        // The string "2" answers 2, and 4.0 answers 4, as rmcp takes them.
        assert_eq!(pending.answered(&json!("2")), Named::Waiting(json!(2)));
        assert_eq!(pending.answered(&json!(4.0)), Named::Waiting(json!(4)));
        assert_eq!(pending.answered(&json!(2)), Named::Settled);
        assert_eq!(pending.answered(&json!(99)), Named::Unknown);
        assert_eq!(pending.answered(&json!("s-4")), Named::Unknown);
        assert_eq!(pending.take_all(), vec![json!(1), json!("s-3")]);
        assert!(pending.take_all().is_empty());
        assert_eq!(pending.answered(&json!(1)), Named::Settled);
    }

    #[test]
    fn a_cancellation_is_one_line_with_its_reason_cut() {
        let pending = Pending::default();
        pending.cancel(&json!(7), &"é".repeat(150));
        let cancels = pending.take_cancels();
        assert_eq!(cancels.len(), 1);
        let line = &cancels[0];
        assert_eq!(line.iter().filter(|b| **b == b'\n').count(), 1);
        assert!(line.ends_with(b"\n"));
        let note: Value = serde_json::from_slice(line).unwrap();
        assert_eq!(note["method"], "notifications/cancelled");
        assert_eq!(note["params"]["requestId"], 7);
        assert_eq!(note["params"]["reason"], "é".repeat(100));
        assert!(pending.take_cancels().is_empty());
    }
}
