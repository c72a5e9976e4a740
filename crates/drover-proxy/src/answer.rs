//! The proxy's own HTTP answers: a refusal says in a header and a short plain-text body
//! that the task's network policy blocked the host (so an agent reading a failed install
//! does not take it for a broken registry), the other errors say what went wrong.

/// The header that carries a policy refusal.
pub const DENIED_HEADER: &str = "X-Drover-Denied";

/// An answer the proxy gives instead of a connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Answer {
    /// The task's rules refused `target` (`host:port`).
    Denied {
        target: String,
        why: String,
    },
    BadRequest(String),
    /// The client did not send its request head in time.
    HeadTimeout(u64),
    HeadTooLarge(usize),
    /// The host could not be resolved or connected to.
    BadGateway(String),
    GatewayTimeout(String),
    /// The proxy's connection limit is reached.
    Busy(usize),
}

/// The text of a policy refusal, as the header and the event's consumers show it.
pub fn denial_text(target: &str, why: &str) -> String {
    format!("blocked by the task's network policy: {target} {why}")
}

impl Answer {
    fn status(&self) -> (u16, &'static str) {
        match self {
            Answer::Denied { .. } => (403, "Forbidden"),
            Answer::BadRequest(_) => (400, "Bad Request"),
            Answer::HeadTimeout(_) => (408, "Request Timeout"),
            Answer::HeadTooLarge(_) => (431, "Request Header Fields Too Large"),
            Answer::BadGateway(_) => (502, "Bad Gateway"),
            Answer::GatewayTimeout(_) => (504, "Gateway Timeout"),
            Answer::Busy(_) => (503, "Service Unavailable"),
        }
    }

    /// One line saying what happened.
    pub(crate) fn text(&self) -> String {
        match self {
            Answer::Denied { target, why } => denial_text(target, why),
            Answer::BadRequest(why) => {
                format!("drover's egress proxy cannot serve this request: {why}")
            }
            Answer::HeadTimeout(seconds) => {
                format!("drover's egress proxy: no complete request head within {seconds} s")
            }
            Answer::HeadTooLarge(max) => {
                format!("drover's egress proxy: the request head is larger than {max} bytes")
            }
            Answer::BadGateway(why) | Answer::GatewayTimeout(why) => {
                format!("drover's egress proxy: {why}")
            }
            Answer::Busy(limit) => format!(
                "drover's egress proxy already serves {limit} connections, its limit; try again when some have closed"
            ),
        }
    }

    /// The whole HTTP response; the connection closes after it.
    pub(crate) fn to_http(&self) -> Vec<u8> {
        let (code, reason) = self.status();
        let text = printable(&self.text());
        let denied = match self {
            Answer::Denied { .. } => format!("{DENIED_HEADER}: {text}\r\n"),
            _ => String::new(),
        };
        format!(
            "HTTP/1.1 {code} {reason}\r\n{denied}Content-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}\n",
            text.len() + 1
        )
        .into_bytes()
    }
}

/// `text` with everything but printable ASCII replaced, so no client-chosen byte can end
/// a header line or reach a terminal as a control sequence.
fn printable(text: &str) -> String {
    text.chars()
        .map(|c| if (' '..='~').contains(&c) { c } else { '?' })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_is_a_403_naming_the_policy_in_a_header_and_the_body() {
        let answer = Answer::Denied {
            target: "evil.com:443".to_string(),
            why: "no allow rule".to_string(),
        };
        let http = String::from_utf8(answer.to_http()).unwrap();
        let expected = "blocked by the task's network policy: evil.com:443 no allow rule";
        assert!(http.starts_with("HTTP/1.1 403 Forbidden\r\n"), "{http}");
        assert!(
            http.contains(&format!("\r\nX-Drover-Denied: {expected}\r\n")),
            "{http}"
        );
        assert!(http.ends_with(&format!("\r\n\r\n{expected}\n")), "{http}");
        assert!(http.contains(&format!("Content-Length: {}\r\n", expected.len() + 1)));
    }

    #[test]
    fn no_control_character_reaches_the_answer() {
        let answer = Answer::BadRequest("a\r\nX-Evil: 1\u{1b}[31m é".to_string());
        let http = String::from_utf8(answer.to_http()).unwrap();
        assert!(!http.contains("\r\nX-Evil"), "{http}");
        assert!(!http.contains('\u{1b}'), "{http}");
        assert!(http.starts_with("HTTP/1.1 400 Bad Request\r\n"));
    }
}
